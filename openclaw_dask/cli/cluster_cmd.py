"""``openclaw-dask cluster {up,down,status}`` and ``openclaw-dask memory compact``.

``status`` and ``compact`` talk to the scheduler of ``--address``, else to the cluster of the
state file (:mod:`openclaw_dask.runtime.state`); ``down`` signals only the daemon that the state
file names and that still runs (never a pid that now names another process). A malformed
``--address`` or a damaged state file is bad input (exit 2); no cluster to talk to is exit 1.
"""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, NoReturn

import click
import psutil
from rich.table import Table

from openclaw_dask.cli.args import given_address
from openclaw_dask.cli.config_cmd import SET_OPTION, SetCommand
from openclaw_dask.cli.output import err, out
from openclaw_dask.config import ConfigError
from openclaw_dask.config.errors import Problem
from openclaw_dask.config.hardware import format_cpu_list
from openclaw_dask.config.validate import ADDRESS_TRANSPORTS, locate, transport
from openclaw_dask.exitcodes import EXIT_FAILED
from openclaw_dask.runtime.processes import kill_tree, wait_gone
from openclaw_dask.runtime.state import (
    DAEMON_ROLE,
    UP_ROLE,
    address_problem,
    clear_state,
    daemon_process,
    ended_runs_file,
    hold_lock,
    load_state,
    lock_file,
    lock_holder,
    lock_owner,
    read_state,
    scheduler_refuses,
    state_dir,
    state_dir_error,
    state_file,
)
from openclaw_dask.runtime.terminal import signals_held
from openclaw_dask.translate import load_and_plan

if TYPE_CHECKING:
    from distributed import Client

UP_TIMEOUT = 120.0
#: Seconds `cluster down` gives the daemon to close its cluster before it kills it and the
#: processes under it, and a Ctrl-C on `cluster up` the daemon it was starting. `cluster down`
#: of a local cluster takes ~1.5 s here, and Dask's nannies kill a worker that does not close
#: within 4 s: 20 s leaves room (SSH workers' round trips) without waiting a minute on a
#: daemon that will never finish.
DOWN_GRACE = 20.0
#: Seconds `cluster down` gives a daemon whose scheduler refuses connections (nothing to close).
DEAD_SCHEDULER_TIMEOUT = 3.0
#: What `status` and `compact` say when they have no scheduler to talk to.
NO_CLUSTER_HINT = "start one with `openclaw-dask cluster up`, or pass --address"


@click.group("cluster")
def cluster_group() -> None:
    """Start, inspect and stop a long-lived cluster (local, cuda or ssh) for later commands."""


def _where(config: Any, key: str, message: str) -> Problem:
    """``message`` at the file and line (or variable, ``--set``) that set ``key``."""
    problem = locate(key, config.sources, message, config.line_of)
    if problem.file is None and problem.origin is None:
        return replace(problem, origin="cluster up")  # a default: the command is the context
    return problem


@cluster_group.command("up", cls=SetCommand)
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help="Config file.")
@SET_OPTION
def up_cmd(config_path: str | None, overrides: tuple[str, ...]) -> None:
    """Start the cluster in the background and print its address and dashboard."""
    # held until the daemon is up, and by the daemon after that: one cluster per state dir
    lock = hold_lock(UP_ROLE)
    try:
        _up(lock, config_path, overrides)
    finally:
        if lock is not None:
            lock.close()  # the daemon holds its own copy


def _up(lock: IO[str] | None, config_path: str | None, overrides: tuple[str, ...]) -> None:
    """``cluster up`` once the lock was tried (``lock`` is ``None`` when another holds it)."""
    state, elsewhere = load_state()
    if state or state_file().exists():  # stale files are gone: what is left runs, here or not
        message = (
            f"a cluster is already running at {state['address']} (pid {state['pid']}); "
            "stop it with `openclaw-dask cluster down` first"
            if state
            else f"{elsewhere}; or set OPENCLAW_STATE_DIR to a directory of this host's own"
        )
        raise ConfigError([Problem(message, origin="cluster up")])
    if lock is None:
        owner = lock_owner()
        if owner and owner[0] == DAEMON_ROLE:  # it was said to be a `cluster up` starting
            message = f"{_without_state(owner[1])}; stop it with `openclaw-dask cluster down` first"
        else:  # another `cluster up` is starting its cluster (its state file comes when it is up)
            message = (
                f"another `openclaw-dask cluster up` is starting a cluster with this state "
                f"directory: {lock_holder()} holds {lock_file()}; `openclaw-dask cluster "
                "status` shows it once it is up"
            )
        raise ConfigError([Problem(message, origin="cluster up")])
    config, plan = load_and_plan(config_path, overrides)  # bad input: exit 2, nothing started
    if plan.backend == "attach":
        # the plan attaches because a scheduler address is set: that key is the one to change
        key = "cluster.scheduler_address"
        message = (
            f"cluster up starts a new cluster; it cannot attach to {config[key]} "
            "(unset this key for cluster up)"
        )
        raise ConfigError([_where(config, key, message)])
    if plan.backend not in ("local", "cuda", "ssh"):
        message = f"cluster up starts local, cuda or ssh clusters, not {plan.backend}"
        raise ConfigError([_where(config, "cluster.backend", message)])
    log = state_dir() / "cluster.log"  # the lock made the directory and found it writable
    try:
        sink = open(log, "w")  # noqa: SIM115 (closed below, once the daemon has it)
    except OSError as exc:  # a folder named cluster.log: exit 1 and Python's IsADirectoryError
        raise state_dir_error(exc) from None
    # the daemon inherits the locked file and holds the lock for as long as it runs
    command = [sys.executable, "-m", "openclaw_dask.runtime.daemon"]
    command += ["--lock-fd", str(lock.fileno())]
    if config.file:
        command += ["--config", config.file]
    for item in overrides:
        command += ["--set", item]
    proc = None
    try:
        # a Ctrl-C inside Popen, once the daemon exists and before the call returns it, would
        # leave the daemon starting its cluster unseen: held, it is raised here once `proc` is
        with signals_held(), sink:
            proc = subprocess.Popen(
                command,
                stdout=sink,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                pass_fds=(lock.fileno(),),
            )
        _wait_up(proc, plan.backend, log, config["cluster.dashboard_address"])
        # what the backend does not apply, as config plan and submit say it: pinning asked of
        # an ssh cluster went unsaid here, and the user took the workers for pinned
        for note in plan.unapplied:
            out.print(f"  note: {note}", markup=False)
    except KeyboardInterrupt:
        # the cluster process has a session of its own (it outlives the terminal), so a Ctrl-C
        # reaches only this command: it went on starting, and a cluster the user had stopped
        # came up in the background
        if proc is not None:
            _stop_starting(proc)
        raise


def _stop_starting(proc: subprocess.Popen[bytes]) -> None:
    """Stop the cluster process ``cluster up`` started (it closes its cluster, if any).

    One stuck in its start (a scheduler or an SSH node that never answers) is killed after
    :data:`DOWN_GRACE`, with whatever it had started (:func:`kill_tree`): it had been given a
    minute, and then killed alone.
    """
    proc.terminate()
    try:
        proc.wait(timeout=DOWN_GRACE)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(psutil.NoSuchProcess):  # (it ended just now after all)
            kill_tree(psutil.Process(proc.pid))
        proc.wait()
        clear_state(proc.pid)  # a killed process cannot remove its own state file


def _ending(text: list[str], log: Path) -> str:
    """What a cluster process that exited last said: a traceback's exception line alone.

    The last three lines of a traceback were a file, a line of code and the exception, joined
    by slashes; the whole traceback stays in the log.
    """
    if any(line.startswith("Traceback (most recent call last)") for line in text):
        ending = [line for line in text if line.strip() and not line[0].isspace()]
        return f"{ending[-1]} (its traceback: {log})"
    return " / ".join(text[-3:])


def _wait_up(
    proc: subprocess.Popen[bytes], backend: str, log: Path, dashboard: str | None = None
) -> None:
    """Wait until the cluster process says its cluster is up; raise what stopped it.

    ``dashboard`` is the configured ``cluster.dashboard_address``: a link on another port
    (Dask takes a free one when that port is in use) says so, as ``submit`` does.
    """
    deadline = time.monotonic() + UP_TIMEOUT
    while time.monotonic() < deadline:
        state = read_state()
        if state and state.get("pid") == proc.pid:
            out.print(f"cluster up: {state['address']} ({backend}, pid {proc.pid})")
            link = state.get("dashboard")
            if link:
                # a tunnel or bookmark made for the configured port would reach another
                # program's page (or nothing) with no word that this cluster moved
                port = str(dashboard or "").rpartition(":")[2]
                if port.isdigit() and int(port) and f":{port}/" not in link:
                    link += f" (port {port} was taken: another cluster running?)"
                out.print(f"dashboard: {link}", markup=False)
            return
        if proc.poll() is not None:
            text = log.read_text().strip().splitlines()
            if not text and proc.returncode <= 0:
                # stopped from outside, so it said nothing (this said "exited: ", no more)
                how = (
                    f"killed ({signal.Signals(-proc.returncode).name})"
                    if proc.returncode
                    else "stopped (`cluster down`, or a SIGTERM)"
                )
                said = f"cluster up: the cluster process (pid {proc.pid}) was {how} as it started"
                err.print(said, markup=False)
                sys.exit(EXIT_FAILED)
            if not text:  # its error could not be written either (a full disk: seen)
                text = [f"code {proc.returncode}, and its log {log} is empty (is that disk full?)"]
            problems = [line.removeprefix("error: ") for line in text if line.startswith("error:")]
            raise ConfigError(
                [Problem(p, origin="cluster up") for p in problems]
                or [
                    Problem(
                        "the cluster process exited: " + _ending(text, log), origin="cluster up"
                    )
                ]
            )
        time.sleep(0.2)
    _stop_starting(proc)
    raise ConfigError(
        [
            Problem(
                f"the cluster did not start within {UP_TIMEOUT:g} s; see {log}", origin="cluster up"
            )
        ]
    )


ADDRESS_OPTION = click.option(
    "--address",
    callback=given_address,
    help="Scheduler address (default: the cluster of `cluster up`).",
)
CLIENT_CONFIG_OPTION = click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False),
    help="An openclaw.config whose transport settings (TLS files) the client uses "
    "(default: those of `cluster up`).",
)


def _without_state(daemon: psutil.Process) -> str:
    """What to call a daemon that holds the state directory's lock but has no state file."""
    return (
        f"a cluster daemon (pid {daemon.pid}) runs with this state directory, but its state "
        f"file {state_file()} is gone"
    )


def _no_cluster(stale: str | None, hint: str | None = None) -> NoReturn:
    """Say in one line that no cluster runs (and why a state file was removed); exit 1.

    A `cluster up` still starting one, or a daemon whose state file was removed, is said as
    such (both were "no cluster is running", and the cluster came up or ran on unseen).
    """
    owner = lock_owner()
    if owner and owner[0] == UP_ROLE:
        hint = f"{UP_ROLE} (pid {owner[1].pid}) is starting one; run this again once it is up"
    elif owner:
        hint = f"{_without_state(owner[1])}: `openclaw-dask cluster down` stops it"
    line = "no cluster is running"
    if stale:
        line += f" ({stale})"
    if hint:
        line += f"; {hint}"
    err.print(line, markup=False)
    sys.exit(EXIT_FAILED)


def _checked_address(address: str) -> str:
    """``--address``, refused at once when it is no scheduler address (Dask would hang on it)."""
    problem = address_problem(address)
    if problem:
        raise ConfigError([Problem(problem, origin="--address")])
    return address


def _check_scheme(address: str, config: Any, config_path: str) -> None:
    """Refuse an address whose scheme is not the transport of the ``--config`` client.

    A ``tcp://`` address with a TLS config waited 20 s, then ended in Dask's "encryption
    required" RuntimeError (exit 1) and a traceback from the client's finaliser; the reverse
    case is refused by :func:`connect`.
    """
    scheme = address.partition("://")[0]
    speaks, mine = ADDRESS_TRANSPORTS.get(scheme), transport(config.values)
    if speaks and speaks != mine and mine in ADDRESS_TRANSPORTS.values():
        message = (
            f"{address} is reached over {speaks}, but {config_path} sets "
            f"distributed.communication_backend: {mine}: give its {mine}:// address, or a "
            f"config of the {speaks} transport"
        )
        raise ConfigError([Problem(message, origin="--address")])


@contextmanager
def _connected(address: str | None, config_path: str | None) -> Iterator[tuple[str, Client, bool]]:
    """A client of the scheduler to talk to, its address, and whether it serves a dashboard.

    ``--address`` when given (the state file is then not read), else the `cluster up` cluster's;
    without either, say so and exit 1. The transport's settings (TLS files) come from
    ``--config`` when given, else from what `cluster up` recorded.
    """
    from openclaw_dask.runtime.cluster import client_settings, connect
    from openclaw_dask.runtime.openclaw_there import check_openclaw_there

    # bad input first: a --config that is missing or invalid, or an --address of '', had been
    # passed over without a word when no cluster ran ("no cluster is running", exit 1)
    loaded = load_and_plan(config_path, ()) if config_path else None
    if address is not None:
        address, where, settings, dashboard = _checked_address(address), None, {}, True
    else:
        state, stale = load_state()
        if not state:
            _no_cluster(stale, NO_CLUSTER_HINT)
        address, settings = state["address"], state.get("client") or {}
        dashboard = bool(state.get("dashboard"))
        where = Problem("", origin=f"cluster up (pid {state['pid']})")
    if loaded:
        config, plan = loaded
        settings = client_settings(plan.dask_config)
        _check_scheme(address, config, config_path)
    import dask  # (here: the commands that connect to nothing start without it, ~0.1 s sooner)

    with dask.config.set(settings), connect(address, where) as client:
        try:
            yield address, client, dashboard
        except ConfigError:
            raise
        except Exception as exc:
            # asked only after a failure: asked first, a stopped worker's bounded wait had
            # been waited twice (a cluster wired by hand failed in "ModuleNotFoundError")
            try:
                check_openclaw_there(client, where or Problem("", origin="--address"))
            except ConfigError:
                raise
            except Exception:  # the check could not tell (a scheduler gone meanwhile)
                raise exc from None
            raise


@cluster_group.command("down")
def down_cmd() -> None:
    """Stop the cluster started by `cluster up`."""
    state, stale = load_state()
    # looked up again right before the signal: the daemon may have exited since the file was read
    proc = daemon_process(state) if state else None
    address = state["address"] if state and proc else None
    if not address:
        owner = lock_owner()
        if not owner or owner[0] != DAEMON_ROLE:
            _no_cluster(stale)
        # its state file was removed (by hand, as a damaged one's message says): no address
        proc = owner[1]
    found: list[str] = []  # what was wrong with it, said on the one line
    timeout, closing = DOWN_GRACE, True
    try:
        proc.terminate()  # psutil refuses to signal a pid that now names another process
        if proc.status() in (psutil.STATUS_STOPPED, psutil.STATUS_TRACING_STOP):
            # SIGSTOP or Ctrl-Z: a stopped process acts on the SIGTERM only once continued
            # (it waited the whole grace, then was killed without closing its cluster)
            proc.resume()
            stopped = f"its daemon, pid {proc.pid}, was stopped (SIGSTOP or Ctrl-Z)"
            found.append(f"{stopped}: continued it to close")
        elif address and scheduler_refuses(address):
            # its scheduler is gone: a daemon that closes its cluster waits on it in vain
            timeout, closing = DEAD_SCHEDULER_TIMEOUT, False
            found.append("its scheduler was gone already (connection refused)")
        if wait_gone([proc], timeout):
            found.append(_kill_daemon(proc, timeout, closing))
            # a killed daemon cannot remove its own state file
            clear_state(proc.pid)
    except psutil.NoSuchProcess:
        pass  # it exited on its own meanwhile
    said = "".join(f"; {line}" for line in found)
    what = address or (
        f"the cluster of daemon pid {proc.pid} (it had no state file: still starting, or the "
        "file was removed)"
    )
    out.print(f"cluster down: {what} stopped{said}", markup=False)
    ended = _ended_runs()
    if ended:
        from openclaw_dask.workflows.cluster_runs import runs_text

        n = len(ended)
        out.print(
            f"  it ended {n} run{'s' if n != 1 else ''} (each continues with openclaw-dask "
            f"submit --resume DIR once a cluster runs): {runs_text(ended)}",
            markup=False,
        )


def _ended_runs() -> list[dict[str, Any]]:
    """The runs the daemon named as its close ended them (``runtime.daemon.note_ended_runs``),
    read once; none when it could not say (killed, its scheduler gone)."""
    path = ended_runs_file()
    try:
        runs = json.loads(path.read_text())
    except (OSError, ValueError):
        return []
    finally:
        path.unlink(missing_ok=True)
    return [r for r in runs if isinstance(r, dict)] if isinstance(runs, list) else []


def _kill_daemon(proc: psutil.Process, waited: float, closing: bool) -> str:
    """SIGKILL a daemon that did not exit on SIGTERM, and the processes under it; say so.

    A daemon hanging while it closes its cluster (a blocked event loop, a stuck plugin) never
    exits; killing it alone left its local workers to notice, which one stuck in a task that
    holds the GIL never does (it spun on, orphaned), nor does a process a task started.

    Parameters
    ----------
    proc : psutil.Process
        The daemon.
    waited : float
        Seconds it was given after SIGTERM.
    closing : bool
        Whether it had a cluster to close (``False``: its scheduler was gone already).

    Returns
    -------
    str
        What was done, for the command's one line.
    """
    under = kill_tree(proc)
    them = ""
    if under:
        pids = ", ".join(str(p.pid) for p in under)
        n = len(under)
        them = f" and the {n} process{'es' if n != 1 else ''} under it (pids {pids})"
    if not closing:
        return f"killed its daemon, pid {proc.pid}{them}, after {waited:g} s"
    log = state_dir() / "cluster.log"  # where the daemon's cluster logged what it was doing
    return (
        f"its daemon, pid {proc.pid}, had not closed its cluster after {waited:g} s "
        f"(its log: {log}): killed it{them}"
    )


#: The longest worker address kept on one line in `cluster status` (an IPv4 one is at most
#: 27 characters): a longer one (a host's full name) folds, or the columns beside it lose all.
ADDRESS_ON_ONE_LINE = 32


def workers_table(address: str, facts: dict[str, dict[str, Any]]) -> Table:
    """One row per worker: its address, threads, pinned cores, allocator and memory limit.

    A config hash that every worker shares goes in the title, a resources column shows only
    when a worker has one, and cores are a cpulist (``0-7``): on an 80-column terminal eight
    columns cut every worker's address and hash ("tcp://…", "dc0eb…"). Nothing is cut now: a
    hash and an address up to :data:`ADDRESS_ON_ONE_LINE` never break, the rest folds.
    """
    hashes = {f["config_hash"] for f in facts.values()}
    shared = hashes.pop() if len(hashes) == 1 else None
    resources = any(f["resources"] for f in facts.values())
    table = Table(title=f"cluster at {address}" + (f", config {shared}" if shared else ""))
    short = max(map(len, facts), default=0) <= ADDRESS_ON_ONE_LINE
    table.add_column("worker", no_wrap=short, overflow="fold")
    for column in ("threads", "cores", "allocator", "memory limit"):
        table.add_column(column, overflow="fold")
    if resources:
        table.add_column("resources", overflow="fold")
    if not shared:
        table.add_column("config hash", no_wrap=True)
    from dask.utils import format_bytes  # (as dask in _connected)

    for worker, f in sorted(facts.items()):
        limit = format_bytes(f["memory_limit"]) if f["memory_limit"] else "none"
        row = [worker, str(f["nthreads"]), format_cpu_list(f["affinity"]), f["allocator"], limit]
        if resources:
            row.append(",".join(f"{k}={v:g}" for k, v in f["resources"].items()) or "-")
        if not shared:
            row.append(f["config_hash"] or "-")
        table.add_row(*row)
    return table


@cluster_group.command("status")
@ADDRESS_OPTION
@CLIENT_CONFIG_OPTION
def status_cmd(address: str | None, config_path: str | None) -> None:
    """List the workers (threads, pinned cores, allocator, memory limit, config hash) and the
    runs on the cluster."""
    from openclaw_dask.runtime.cluster import attached_dashboard
    from openclaw_dask.runtime.inspect import ask_workers, refused_workers, worker_facts
    from openclaw_dask.runtime.runs import runs_on
    from openclaw_dask.workflows.cluster_runs import runs_text

    with _connected(address, config_path) as (address, client, dashboard):
        facts, silent = ask_workers(client, worker_facts)
        refused = refused_workers(client)
        runs = runs_on(client)  # the submits on it now: a `cluster down` would end them
        # Dask formats a link even for a scheduler that serves no dashboard: `cluster up`
        # recorded whether its own does; another scheduler (--address) is asked
        link = attached_dashboard(client) if dashboard else None
    if facts or silent:
        out.print(workers_table(address, facts))
    else:  # an empty table, exit 0, had said nothing of it
        err.print(f"the cluster at {address} has no workers", markup=False)
    for worker, reason in refused.items():
        err.print(f"refused {worker}: {reason}", markup=False)
    if link:
        out.print(f"dashboard: {link}")
    out.print(f"runs: {len(runs)}" + (f": {runs_text(runs)}" if runs else ""), markup=False)
    _say_silent(silent)
    if not facts:
        sys.exit(EXIT_FAILED)


def _say_silent(silent: list[str]) -> None:
    """Name the workers that did not answer (a line each), and exit 1 if there were any."""
    from openclaw_dask.runtime.inspect import ANSWER_TIMEOUT

    for worker in silent:
        err.print(
            f"worker {worker} did not answer within {ANSWER_TIMEOUT:g} s (stopped, or busy in "
            "a task that holds the GIL)",
            markup=False,
        )
    if silent:
        sys.exit(EXIT_FAILED)


@click.group("memory")
def memory_group() -> None:
    """Memory tools for running clusters."""


@memory_group.command("compact")
@ADDRESS_OPTION
@CLIENT_CONFIG_OPTION
def compact_cmd(address: str | None, config_path: str | None) -> None:
    """Return freed memory to the OS in every worker; print RSS before and after."""
    from dask.utils import format_bytes

    from openclaw_dask.runtime.inspect import ask_workers
    from openclaw_dask.runtime.memory import compact_worker

    with _connected(address, config_path) as (_, client, _):
        result, silent = ask_workers(client, compact_worker)
    for worker, r in sorted(result.items()):
        out.print(
            f"{worker}: {r['allocator']} {r['call']}: RSS "
            f"{format_bytes(r['rss_before'])} -> {format_bytes(r['rss_after'])}",
            markup=False,
        )
    _say_silent(silent)
