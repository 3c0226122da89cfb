"""The program every rank of an ``mpirun`` launch runs (the plan's ``launch_command``).

``python -m openclaw_dask.cli.mpi_entry PLAN.json -- COMMAND...``: every rank applies the
plan's dask config and calls ``dask_mpi.initialize`` with the plan's arguments. Rank 0 becomes
the scheduler and ranks 2.. workers (both block until the client finishes); rank 1 returns,
puts the scheduler address into ``_OPENCLAW_MPI_SCHEDULER`` and runs ``COMMAND`` (an
``openclaw-dask`` command line, e.g. ``submit WORKFLOW``) attached to that scheduler.

Then rank 1 shuts the cluster down (workers first, the scheduler once every worker rank has
reported its end) and every rank meets at an MPI barrier
before exiting, so rank 1's exit code (which becomes ``mpirun``'s) is only reported once the
scheduler and the workers have ended cleanly: Open MPI kills the whole job as soon as one rank
exits non-zero, and a scheduler that goes away under its workers makes them log heartbeat
errors. That is why the plan calls ``initialize`` with ``exit=False`` rather than relying on
dask-mpi's ``atexit`` shutdown.

Distributed's INFO logging is turned down to warnings on every rank, as ``LocalCluster`` does for
its workers (``OPENCLAW_DEBUG=1`` keeps it).
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
import warnings
from itertools import pairwise
from pathlib import Path
from typing import Any

from openclaw_dask.exitcodes import EXIT_BAD_INPUT

#: dask-mpi's layout: rank 0 the scheduler, rank 1 the client, the ranks from 2 on workers.
CLIENT_RANK, FIRST_WORKER_RANK = 1, 2
#: Tag of the message a worker rank sends the client rank once its event loop has ended.
WORKER_CLOSED = 7

USAGE = "usage: python -m openclaw_dask.cli.mpi_entry PLAN.json -- OPENCLAW-DASK ARGS...\n"


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the client command's exit code on rank 1."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) < 3 or args[1] != "--":
        sys.stderr.write(USAGE)
        return EXIT_BAD_INPUT
    try:
        plan = json.loads(Path(args[0]).read_text())
    except (OSError, ValueError) as exc:
        sys.stderr.write(f"mpi_entry: cannot read the plan {args[0]}: {exc}\n")
        return EXIT_BAD_INPUT
    command = args[2:]
    unset = missing_env(plan)
    if unset and not os.environ.get(REEXEC_ENV):
        # a batch script's own `mpirun` (or `srun`) line without the plan's `-x` variables:
        # LD_PRELOAD takes effect only at a process's start, so the rank starts again with
        # them, as the plan's launch line would have started it (the ranks' checks had then
        # refused every worker, blaming the allocator or the pinning); MPI is not yet
        # initialised here, so the rank is still the one mpirun started
        os.environ.update({**unset, REEXEC_ENV: "1"})
        os.execv(sys.executable, [sys.executable, "-m", "openclaw_dask.cli.mpi_entry", *args])

    import dask
    from dask_mpi import initialize

    from openclaw_dask.runtime.mpi_launch import (
        LAUNCHED_KEY,
        MPI_LAUNCHER_ENV,
        MPI_SCHEDULER_ENV,
        exit_file,
    )

    if not os.environ.get("OPENCLAW_DEBUG"):
        logging.getLogger("distributed").setLevel(logging.WARNING)
    # a taken dashboard port: the scheduler rank serves on another and warns with a source
    # line; the submit on rank 1 prints the link it really uses, as a local cluster does
    warnings.filterwarnings("ignore", r"Port \d+ is already in use", UserWarning)
    from mpi4py import MPI

    dask.config.set(plan["dask_config"])
    kwargs = {**plan["cluster_kwargs"], "exit": False}
    world = MPI.COMM_WORLD
    planned = planned_ranks(plan)
    said = world_size_problem(world.Get_size(), planned)
    if said:
        # too few: dask-mpi raised WorldTooSmallException on every rank (a traceback from
        # each), or the client waited 60 s for the plan's workers and failed (exit 1)
        refused = world.Get_size() < max(FIRST_WORKER_RANK + 1, planned or 0)
        if world.Get_rank() == 0:  # said once, not per rank
            sys.stderr.write(f"{'error' if refused else 'note'}: mpi_entry: {said}\n")
        if refused:
            return EXIT_BAD_INPUT
    if world.Get_rank() >= FIRST_WORKER_RANK:  # even an orderly close can lose a heartbeat
        from openclaw_dask.runtime.terminal import quiet_closing_heartbeat

        quiet_closing_heartbeat()
    elif world.Get_rank() == 0:  # the scheduler: a lost worker is the run's to say
        from openclaw_dask.runtime.terminal import quiet_lost_results

        quiet_lost_results()
    if not initialize(**kwargs):  # scheduler or worker rank: its event loop has ended
        if world.Get_rank() >= FIRST_WORKER_RANK:
            world.send(None, dest=CLIENT_RANK, tag=WORKER_CLOSED)
        world.Barrier()
        return 0
    address = dask.config.get("scheduler-address")
    os.environ[MPI_SCHEDULER_ENV] = address
    if plan.get(LAUNCHED_KEY):  # a launching submit reports the run; else rank 1 must
        os.environ[MPI_LAUNCHER_ENV] = str(plan[LAUNCHED_KEY])
    # Open MPI hands every rank a pseudo-terminal for stdout, also when mpirun's own output is
    # a batch job's log file: rich then coloured "completed" and "failed:" with escape codes
    # there. Rank 1 cannot tell where its lines end up, so it writes them plain.
    os.environ.setdefault("NO_COLOR", "1")
    code = 1  # (an exception out of the command: Python's own exit code for it)
    try:
        code = run_client(command)
    finally:
        shutdown(address, world)
        world.Barrier()
    if plan.get(LAUNCHED_KEY):
        # the launching submit reads the code there and reports the outcome: a non-zero exit
        # made Open MPI print two banners (10 lines) above it (mpi_launch.run_mpirun)
        exit_file(args[0]).write_text(str(code))
        return 0
    return code


#: Set in a rank that started again with the plan's environment (:func:`missing_env`).
REEXEC_ENV = "_OPENCLAW_MPI_REEXEC"


def missing_env(plan: dict[str, Any]) -> dict[str, str]:
    """The plan's worker environment (``worker_env``: the allocator's ``LD_PRELOAD``, BLAS
    threads, pinning) that this rank's environment lacks or holds otherwise; ``{}`` when the
    launch line passed it (the plan's own ``-x`` options)."""
    wanted = {str(k): str(v) for k, v in (plan.get("worker_env") or {}).items()}
    return {k: v for k, v in wanted.items() if os.environ.get(k) != v}


def planned_ranks(plan: dict[str, Any]) -> int | None:
    """The ranks the plan's own ``mpirun -np N`` starts, or ``None`` if it names none."""
    launch = plan.get("launch_command") or []
    for flag, value in pairwise(launch):
        if flag in ("-np", "-n") and str(value).isdigit():
            return int(value)
    return None


def world_size_problem(size: int, planned: int | None) -> str | None:
    """What is wrong with an ``mpirun`` of ``size`` ranks for a plan of ``planned``, if anything.

    A hand-written batch line (``mpirun -np 2``, ``srun -n 3``) may start another number of
    ranks than the plan's launch line: fewer than three cannot make a cluster (scheduler,
    client, one worker), and another count changes the worker ranks the plan was sized for.
    """
    wanted = f"; the plan's launch line starts {planned} (mpirun -np {planned})" if planned else ""
    if size < FIRST_WORKER_RANK + 1:
        return (
            f"{size} MPI rank(s), but a dask-mpi cluster needs at least 3 (rank 0 the "
            f"scheduler, rank 1 the client, ranks 2.. the workers){wanted}"
        )
    if planned and size != planned:
        workers, meant = size - FIRST_WORKER_RANK, planned - FIRST_WORKER_RANK
        return f"{size} MPI ranks make {workers} worker rank(s) where the plan has {meant}{wanted}"
    return None


def run_client(command: list[str]) -> int:
    """Run an ``openclaw-dask`` command line in this process; return its exit code."""
    import click

    from openclaw_dask.cli.main import cli, quiet_if_interrupted
    from openclaw_dask.runtime.terminal import quit_at_third_interrupt

    quit_at_third_interrupt()  # this rank's process ends after the command
    try:
        cli.main(args=command, prog_name="openclaw-dask", standalone_mode=False)
    except click.ClickException as exc:  # bad arguments: shown as click shows them
        exc.show()
        return exc.exit_code
    except SystemExit as exc:
        quiet_if_interrupted(exc.code)  # (this rank's process ends after the shutdown)
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return 0


def shutdown(address: str, world: Any, timeout: float = 30.0) -> None:
    """Close the workers, then the scheduler (what dask-mpi's ``send_close_signal`` does at once).

    Workers go first: a scheduler that closes under them breaks their heartbeat, which they log
    as an error with a traceback. The scheduler forgets a retired worker before the worker has
    closed, so the scheduler is shut down only once every worker rank has said (by an MPI
    message) that its event loop has ended.
    """
    from distributed import Client

    try:
        with Client(address, timeout="10s", set_as_default=False) as client:
            workers = list(client.scheduler_info(n_workers=-1)["workers"])
            if workers:
                client.retire_workers(workers, close_workers=True, remove=True)
            deadline = time.monotonic() + timeout
            waiting = set(range(FIRST_WORKER_RANK, world.Get_size()))
            while waiting and time.monotonic() < deadline:
                for rank in [r for r in waiting if world.Iprobe(source=r, tag=WORKER_CLOSED)]:
                    world.recv(source=rank, tag=WORKER_CLOSED)
                    waiting.discard(rank)
                time.sleep(0.02)
            client.shutdown()
    except (OSError, TimeoutError) as exc:  # already gone: the barrier still ends the job
        sys.stderr.write(f"mpi_entry: could not shut the cluster down: {exc}\n")


if __name__ == "__main__":
    sys.exit(main())
