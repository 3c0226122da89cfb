"""The process that owns the long-lived cluster of ``openclaw-dask cluster up``.

``python -m openclaw_dask.runtime.daemon [--config F] [--set K=V]...`` starts the cluster with
:func:`start_cluster`, writes the state file (address, backend, dashboard, pid) and waits;
SIGTERM or SIGINT (``cluster down``) shuts the cluster down and removes the state file,
first naming the runs still on it (:func:`note_ended_runs`), whom the close ends.
It holds the state directory's lock for its whole life (see :mod:`openclaw_dask.runtime.state`):
the one ``cluster up`` took and passed on as ``--lock-fd``, else its own.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from openclaw_dask.atomicfile import atomic_write_text
from openclaw_dask.config import ConfigError
from openclaw_dask.config.errors import Problem
from openclaw_dask.runtime.cluster import client_settings, dashboard_link, start_cluster
from openclaw_dask.runtime.runs import runs_on
from openclaw_dask.runtime.state import (
    DAEMON_ROLE,
    StateError,
    clear_state,
    ended_runs_file,
    hold_lock,
    lock_file,
    lock_holder,
    this_host,
    write_state,
)
from openclaw_dask.translate import load_and_plan, worker_shape


def main(argv: list[str] | None = None) -> int:
    """Run until signalled; exit 2 on bad input."""
    parser = argparse.ArgumentParser(prog="openclaw-dask-cluster-daemon")
    parser.add_argument("--config")
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    # the locked lock file of the `cluster up` that started this process
    parser.add_argument("--lock-fd", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    # `cluster up` spawns this process with Ctrl-C and hangups blocked (terminal.signals_held):
    # a SIGINT sent here (this process's own session has no terminal) stops it as SIGTERM does
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGHUP})
    try:
        if args.lock_fd is not None:
            # workers must not inherit it: one that outlived this process would keep the lock
            os.set_inheritable(args.lock_fd, False)
            # kept in this frame until the end: a collected file object would close the lock
            lock = hold_lock(DAEMON_ROLE, os.fdopen(args.lock_fd, "a+"))
        else:  # started by hand: one cluster per state directory all the same
            lock = hold_lock(DAEMON_ROLE)
            if lock is None:
                message = f"another cluster runs with this state directory ({lock_holder()})"
                raise StateError([Problem(message, origin=str(lock_file()))])
        ended_runs_file().unlink(missing_ok=True)  # an earlier cluster's
        config, plan = load_and_plan(args.config, args.overrides)
        # cluster up starts a cluster of its own, never attaches to one
        with start_cluster(config, attach_running=False) as client:
            if stop.is_set():  # stopped while it started (Ctrl-C on cluster up): never announced
                return 0
            served = config["cluster.dashboard_address"]  # Dask formats a link either way
            write_state(
                {
                    "address": client.scheduler.address,
                    # later commands run on it only when they plan this kind of cluster
                    "backend": plan.backend,
                    "dashboard": dashboard_link(client) if served else None,
                    "pid": os.getpid(),
                    # a home shared by several hosts shares this file: pids are per host
                    "host": this_host(),
                    "config": args.config,
                    "overrides": args.overrides,
                    # so that a submit (and its dry run) can refuse another config before it
                    # attaches, naming the keys that differ
                    "fingerprint": dict(zip(("hash", "values"), config.fingerprint(), strict=True)),
                    # its workers' shape: a submit's note names only the values that differ
                    "shape": worker_shape(config),
                    # what `cluster status` and `memory compact` need to reach it (TLS files)
                    "client": client_settings(plan.dask_config),
                    "started": time.time(),
                }
            )
            while not stop.wait(0.5):
                pass
            note_ended_runs(client)
    except OSError as exc:  # the state file could not be written: say where, in one line
        if exc.filename is None:
            raise
        sys.stderr.write(f"error: {exc.filename}: {exc.strerror or exc}\n")
        return 2
    except ConfigError as exc:
        for problem in exc.problems:
            sys.stderr.write(f"error: {problem}\n")
        return 2
    finally:
        clear_state(os.getpid())
    return 0


#: Seconds the daemon gives its scheduler to name the runs on it before it closes the cluster.
ENDED_RUNS_TIMEOUT = 5.0


def note_ended_runs(client: Any) -> None:
    """Write the runs still on the cluster to :func:`ended_runs_file`, for ``cluster down``.

    ``cluster down`` said only that the cluster stopped, and each run on it then failed in its
    own terminal. ``down`` itself never talks to the scheduler (a hung one would make it wait);
    the daemon asks its own client, :data:`ENDED_RUNS_TIMEOUT` seconds at most, and says
    nothing when it cannot tell (a scheduler gone already, one without openclaw-dask).
    """
    pool = ThreadPoolExecutor(1)
    try:
        runs = pool.submit(runs_on, client).result(timeout=ENDED_RUNS_TIMEOUT)
        if runs:
            atomic_write_text(ended_runs_file(), json.dumps(runs))
    except Exception:  # the close goes on: `cluster down` then names no runs
        return
    finally:
        pool.shutdown(wait=False)


if __name__ == "__main__":
    sys.exit(main())
