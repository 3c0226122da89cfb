"""Run an mpi plan under ``mpirun`` (the launching side of ``cluster.backend: mpi``).

An mpi cluster cannot be started from inside a running program: ``mpirun`` starts every rank,
and dask-mpi turns rank 0 into the scheduler, ranks 2.. into workers and lets rank 1 run the
client program. So the launching process writes the plan to a JSON file and runs::

    mpirun -np N ... python -m openclaw_dask.cli.mpi_entry PLAN.json -- CLIENT ARGS...

where ``CLIENT ARGS`` is an ``openclaw-dask`` command line (``submit WORKFLOW ...``). On rank 1,
:mod:`~openclaw_dask.cli.mpi_entry` puts the scheduler's address into
:data:`MPI_SCHEDULER_ENV` before running that command; :func:`mpi_job_scheduler` reads it, and
:func:`~openclaw_dask.runtime.start_cluster` attaches to that scheduler instead of launching
``mpirun`` again (which would recurse).

Open MPI refuses to run as root unless ``OMPI_ALLOW_RUN_AS_ROOT=1`` and
``OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1`` are set; when this process runs as root they are set for
the ``mpirun`` child only (and shown in the printed command line), never in this process.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import signal
import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import psutil

from openclaw_dask.config import Config, ConfigError
from openclaw_dask.config.errors import Problem
from openclaw_dask.config.validate import locate
from openclaw_dask.runtime.processes import running, wait_gone
from openclaw_dask.translate import ClusterPlan

#: Set by ``mpi_entry`` on rank 1 to the dask-mpi scheduler's address. Not ``OPENCLAW_``-prefixed,
#: so the config loader never takes it for an override of ``cluster.scheduler_address``.
MPI_SCHEDULER_ENV = "_OPENCLAW_MPI_SCHEDULER"
#: What Open MPI wants in the environment before it runs as root.
ROOT_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
#: Seconds ``mpirun`` gets to take its ranks down after an interrupt before it is killed.
STOP_GRACE = 30.0


#: Set by ``mpi_entry`` on rank 1 when a launching ``submit`` waits on ``mpirun`` and reports
#: the run itself (its plan file carries :data:`LAUNCHED_KEY`); unset under an ``mpirun`` line
#: a batch script wrote, where rank 1 is the only one left to say how the run ended.
MPI_LAUNCHER_ENV = "_OPENCLAW_MPI_LAUNCHER"
#: The key :func:`run_mpirun` adds to the plan file it writes (``config plan --json`` has none).
LAUNCHED_KEY = "_openclaw_launcher"


def exit_file(plan_file: str | os.PathLike[str]) -> Path:
    """Where rank 1 of a launch leaves its exit code, beside the plan (see :func:`run_mpirun`)."""
    return Path(plan_file).with_suffix(".exit")


def mpi_job_scheduler() -> str | None:
    """The dask-mpi scheduler address when this process is rank 1 of our mpi launch."""
    return os.environ.get(MPI_SCHEDULER_ENV) or None


def mpi_launcher_reports() -> bool:
    """Whether this is rank 1 of an ``mpirun`` that a launching ``submit`` waits on: that
    ``submit`` then says how the run ended (its summary, a failed step), and rank 1 does not."""
    return bool(mpi_job_scheduler() and os.environ.get(MPI_LAUNCHER_ENV))


def launch_env(uid: int | None = None) -> dict[str, str]:
    """Variables added to ``mpirun``'s environment: Open MPI's root permission as uid 0."""
    uid = os.getuid() if uid is None else uid
    return dict(ROOT_ENV) if uid == 0 else {}


def mpirun_command(
    plan: ClusterPlan, plan_file: str | Path, client_args: Sequence[str]
) -> list[str]:
    """The full command: the plan's ``launch_command``, the plan file, ``--``, the client."""
    if plan.backend != "mpi" or not plan.launch_command:
        raise ValueError(f"a {plan.backend} plan has no mpirun command")
    return [*plan.launch_command, str(plan_file), "--", *client_args]


def format_command(command: Sequence[str], env: Mapping[str, str] | None = None) -> str:
    """A shell line that reproduces ``command`` with the extra ``env`` (copy-pasteable)."""
    prefix = [f"{name}={shlex.quote(value)}" for name, value in (env or {}).items()]
    return " ".join([*prefix, shlex.join(command)])


def backend_problem(config: Config, forced: str | None, message: str) -> Problem:
    """A problem placed on ``cluster.backend`` (or on ``--backend`` when it was forced)."""
    if forced:
        return Problem(message, "cluster.backend", origin=f"--backend {forced}")
    return locate("cluster.backend", config.sources, message, config.line_of)


#: What Open MPI's mpirun sets in every process it starts, and refuses to start under ("mpirun
#: does not support recursive calls"): a command run as the ranks of a batch script's mpirun.
OPEN_MPI_RANK_ENV = "OMPI_UNIVERSE_SIZE"


def find_mpirun(plan: ClusterPlan, config: Config, forced: str | None = None) -> str:
    """Full path of the plan's ``mpirun``; a missing one is bad input naming the backend, and
    so is a launch from inside an ``mpirun`` (``mpirun -np 4 openclaw-dask submit ...``)."""
    if os.environ.get(OPEN_MPI_RANK_ENV):
        # each rank had started an mpirun of its own, and each printed Open MPI's banner
        # (exit 1); the batch script's form is in the README, section MPI
        raise ConfigError(
            [
                backend_problem(
                    config,
                    forced,
                    "mpi launches its own mpirun, but this process already runs under one "
                    f"({OPEN_MPI_RANK_ENV} is set), which Open MPI does not allow: run this "
                    "command outside mpirun, or let the batch script's mpirun start the plan's "
                    "ranks: `openclaw-dask config plan --backend mpi --json > plan.json`, then "
                    "`mpirun -np N python -m openclaw_dask.cli.mpi_entry plan.json -- submit "
                    "WORKFLOW`",
                )
            ]
        )
    name = (plan.launch_command or ["mpirun"])[0]
    found = shutil.which(name)
    if found is None:
        raise ConfigError(
            [
                backend_problem(
                    config,
                    forced,
                    f"mpi launches through {name!r}, which is not on PATH; install Open MPI "
                    "(Debian: apt-get install openmpi-bin) or choose another cluster.backend",
                )
            ]
        )
    other = other_mpi(found)
    if other:
        raise ConfigError(
            [
                backend_problem(
                    config,
                    forced,
                    f"mpi launches through Open MPI's mpirun (its -x, --bind-to and "
                    f"--oversubscribe options), but {found} is another MPI's ({other}): put "
                    "Open MPI's mpirun first on PATH (e.g. `module load openmpi`; Debian: "
                    "apt-get install openmpi-bin), or choose another cluster.backend",
                )
            ]
        )
    return found


#: What ``mpirun --version`` prints for the MPIs whose ``mpirun`` (Hydra) refuses Open MPI's
#: options. Only these are refused: a wrapper or a site script that says something else is
#: left to the launch.
OTHER_MPIS = ("HYDRA", "MPICH", "Intel(R) MPI", "MVAPICH")


def other_mpi(mpirun: str) -> str | None:
    """The first line of ``mpirun --version`` when it names another MPI than Open MPI.

    MPICH's and Intel MPI's ``mpirun`` (Hydra), often first on PATH after a ``module load``,
    refuse the plan's Open MPI options with a usage text of their own, after the run directory
    was made. A version query that fails, hangs or names neither is left to the launch.
    """
    try:
        done = subprocess.run(
            [mpirun, "--version"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    text = f"{done.stdout}\n{done.stderr}"
    if "Open MPI" in text or not any(mark in text for mark in OTHER_MPIS):
        return None
    first = next(line.strip() for line in text.splitlines() if line.strip())
    return repr(first[:80])


def run_mpirun(
    plan: ClusterPlan,
    config: Config,
    plan_file: Path,
    client_args: Sequence[str],
    *,
    forced: str | None = None,
    announce: Callable[[str], None] | None = None,
    env: Mapping[str, str] | None = None,
) -> int:
    """Write ``plan`` to ``plan_file``, run it under ``mpirun`` and return the exit code.

    Parameters
    ----------
    plan
        An ``mpi`` plan (:func:`~openclaw_dask.translate.plan_cluster`).
    config
        The config it was planned from (to place errors on ``cluster.backend``).
    plan_file
        Where the plan JSON goes; every rank reads it.
    client_args
        The ``openclaw-dask`` command line rank 1 runs against the cluster.
    forced
        The backend given with ``--backend``, if any (for error messages).
    announce
        Called with the command line before it runs.
    env
        The environment of ``mpirun`` and so of every rank (default: this process's).

    Returns
    -------
    int
        Rank 1's exit code when every rank ended (0 when the run succeeded), else ``mpirun``'s
        (a rank that died or was killed).

    Raises
    ------
    ConfigError
        ``mpirun`` is not installed.
    KeyboardInterrupt
        This process was interrupted; ``mpirun`` and its ranks were stopped first.
    """
    mpirun = find_mpirun(plan, config, forced)
    # marked as this launch's: rank 1 leaves the summary and a failure's lines to this process
    marked = {**json.loads(plan.to_json()), LAUNCHED_KEY: os.getpid()}
    plan_file.write_text(json.dumps(marked, indent=2))
    command = mpirun_command(plan, plan_file, client_args)
    extra = launch_env()
    if announce:
        announce("mpirun: " + format_command(command, extra))
    command[0] = mpirun
    proc = None
    try:
        # inside the try: a Ctrl-C right after the line above (the ranks' command is long to
        # read) once left mpirun running on its own, its ranks failing on the removed plan
        proc = subprocess.Popen(command, env={**(os.environ if env is None else env), **extra})
        code = proc.wait()
    except KeyboardInterrupt:
        stop(proc, plan_file)
        raise
    # rank 1 of this launch exits 0 and leaves its own code here: a non-zero rank made Open MPI
    # print two banners (10 lines, "Primary job terminated normally, but 1 process returned a
    # non-zero exit code") above the outcome this process reports anyway. They still come
    # when a rank dies or is killed, where they name the rank (mpirun's own code, non-zero).
    with contextlib.suppress(OSError, ValueError):
        if code == 0:
            code = int(exit_file(plan_file).read_text())
    return code


def stop(proc: subprocess.Popen[bytes] | None, plan_file: Path) -> None:
    """Ask ``mpirun`` to end its ranks (it forwards SIGTERM), then wait for every rank.

    On a Ctrl-C (the terminal's SIGINT reaches ``mpirun`` and the ranks alike) ``mpirun``
    exits at once, and the ranks, closing in order, outlived it by ~1 s: rank 1 then wrote
    ``run.json`` after this process had read it and gone. ``mpirun`` and the ranks are found
    by the plan file on their command lines (only this launch names it), also when the
    interrupt came inside ``Popen`` (``proc`` is ``None``); any left after the grace time are
    killed.
    """
    if proc is None:
        mine = [p for p in _naming(plan_file) if p.info["ppid"] == os.getpid()]
        pending = mine[0] if mine else None
    else:
        pending = psutil.Process(proc.pid) if proc.poll() is None else None
    if pending is not None:
        with contextlib.suppress(psutil.NoSuchProcess):
            pending.send_signal(signal.SIGTERM)
            try:
                pending.wait(timeout=STOP_GRACE)
            except psutil.TimeoutExpired:
                pending.kill()
                pending.wait()
    # mpirun is gone, so every rank it started is there to find (not this process's children)
    for rank in wait_gone(_naming(plan_file), STOP_GRACE):
        with contextlib.suppress(psutil.NoSuchProcess):
            rank.kill()


def _naming(plan_file: Path) -> list[psutil.Process]:
    """The running processes whose command line names ``plan_file`` (mpirun, the ranks)."""
    return [
        p
        for p in psutil.process_iter(["cmdline", "ppid"])
        if str(plan_file) in (p.info["cmdline"] or ()) and running(p)
    ]
