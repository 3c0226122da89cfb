"""Run a workflow on an mpi cluster: this process launches ``mpirun``, rank 1 runs the workflow.

:func:`~openclaw_dask.workflows.runner.run_workflow` hands an ``mpi`` plan here when it is not
already inside an mpi launch. The run directory is chosen (or, for ``--resume``, found) here;
rank 1 runs ``openclaw-dask submit WORKFLOW --run-dir DIR`` with the same config file, ``--set``
items and ``--backend`` against the dask-mpi scheduler (``start_cluster`` attaches to it, see
:mod:`openclaw_dask.runtime.mpi_launch`), and writes ``run.json`` there as any run does. This
process then reads the record back, adds the ``mpirun`` line, and turns rank 1's exit code into
the same outcome a local run has: the record, :class:`StepFailedError`, :class:`ConfigError` or
``KeyboardInterrupt``.
"""

from __future__ import annotations

import builtins
import json
import os
import shlex
import signal
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml

from openclaw_dask.atomicfile import atomic_write_text
from openclaw_dask.config import Config, ConfigError
from openclaw_dask.config.errors import Problem
from openclaw_dask.config.loader import ENV_PREFIX, ENV_RESERVED
from openclaw_dask.exitcodes import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_INTERRUPTED
from openclaw_dask.runtime.cluster import ClusterLostError
from openclaw_dask.runtime.mpi_launch import (
    find_mpirun,
    format_command,
    launch_env,
    run_mpirun,
)
from openclaw_dask.runtime.oom import WorkersOutOfMemoryError
from openclaw_dask.runtime.terminal import interrupts
from openclaw_dask.translate import ClusterPlan
from openclaw_dask.workflows import strictjson
from openclaw_dask.workflows.recovery import WorkersLostError
from openclaw_dask.workflows.resume import RUN_RECORD, read_run
from openclaw_dask.workflows.run import StepFailedError
from openclaw_dask.workflows.rundir import _discard, _new_run_dir, _outermost_missing
from openclaw_dask.workflows.spec import Workflow


class MpiRunError(ClusterLostError):
    """``mpirun`` ended without a verdict from the workflow (a rank crashed, MPI failed).

    Open MPI ends every rank when one dies, so a lost worker rank takes the whole cluster with
    it; the checkpoints stay, and ``--resume`` launches ``mpirun`` again from the last one.
    """

    def __init__(self, returncode: int) -> None:
        self.returncode = returncode
        super().__init__(
            f"mpirun exited with code {returncode}{_signal_note(returncode)} before the "
            "workflow finished: Open MPI ends every rank when one dies (its message above "
            "names the rank)"
        )


def _signal_note(returncode: int) -> str:
    """`` (a rank ended on signal 9, SIGKILL: ...)`` for a code above 128, else ``""``."""
    if returncode <= 128:
        return ""
    try:
        name = signal.Signals(returncode - 128).name
    except ValueError:
        return ""
    why = {"SIGKILL": ": killed, or out of memory", "SIGSEGV": ": a crash"}.get(name, "")
    return f" (a rank ended on signal {returncode - 128}, {name}{why})"


def client_args(
    path: str | Path,
    config_file: str | os.PathLike[str] | None,
    overrides: Sequence[str] | None,
    backend: str | None,
    report: bool = True,
) -> list[str]:
    """The ``openclaw-dask submit`` command line rank 1 runs (without the run directory)."""
    args = ["submit", str(Path(path).resolve())]
    if config_file is not None:
        args += ["--config", str(Path(config_file).resolve())]
    for item in overrides or ():
        args += ["--set", item]
    if backend:
        args += ["--backend", backend]
    if not report:
        args.append("--no-report")
    return args


def mpirun_line(
    plan: ClusterPlan,
    path: str | Path,
    config: Config | str | os.PathLike[str] | None,
    overrides: Sequence[str] | None,
    backend: str | None,
    report: bool = True,
) -> str:
    """The line a dry run shows (plan file, run directory and a loaded config: placeholders)."""
    config_file = None if isinstance(config, Config) else config
    args = client_args(path, config_file, overrides, backend, report)
    if isinstance(config, Config):
        args[2:2] = ["--config", "CONFIG"]
    args += ["--run-dir", "RUN_DIR"]
    command = [*(plan.launch_command or []), "PLAN.json", "--", *args]
    return format_command(command, launch_env())


def _dump_config(config: Config, folder: Path) -> Path:
    """A loaded :class:`Config` as a file rank 1 can read (every key, resolved)."""
    target = folder / "openclaw.config"
    target.write_text(yaml.safe_dump(config.to_nested(), sort_keys=False))
    return target


def run_under_mpirun(
    path: str | Path,
    config: Config | str | os.PathLike[str] | None,
    overrides: Sequence[str] | None,
    cfg: Config,
    workflow: Workflow,
    plan: ClusterPlan,
    *,
    backend: str | None = None,
    run_dir: str | Path | None = None,
    resume: str | Path | None = None,
    announce: Callable[[str], None] | None = None,
    report: bool = True,
) -> dict[str, Any]:
    """Launch the workflow under ``mpirun`` and return the run record rank 1 wrote.

    Parameters
    ----------
    path, config, overrides, backend, run_dir, resume, announce, report
        As given to :func:`~openclaw_dask.workflows.runner.run_workflow`.
    cfg, workflow, plan
        The resolved config, the loaded workflow and its ``mpi`` plan.

    Returns
    -------
    dict
        The run record (``run.json``), with ``mpirun``: the command line that ran.

    Raises
    ------
    StepFailedError
        A step failed (rank 1 exited with 1).
    ConfigError
        ``mpirun`` is missing, or rank 1 refused its input (its message is shown above).
    KeyboardInterrupt
        Interrupted; ``mpirun`` and its ranks were stopped.
    MpiRunError
        ``mpirun`` failed before any step ran, without a record of the outcome.
    """
    if cfg["cluster.scheduler_address"]:
        raise ConfigError(
            [
                Problem(
                    "attaches to a running scheduler, but the mpi backend starts its own under "
                    "mpirun; drop one of them",
                    "cluster.scheduler_address",
                    origin="--address",
                )
            ]
        )
    find_mpirun(plan, cfg, backend)  # before a run directory is made
    made = None  # the outermost folder made for this run (not a --resume's, nor the user's)
    if resume is not None:
        directory = read_run(resume)[0]
    else:
        planned = Path("runs") / workflow.name if run_dir is None else Path(run_dir)
        outermost = _outermost_missing(planned)
        directory = _new_run_dir(workflow, run_dir)
        made = outermost or (directory if run_dir is None else None)
    env = dict(os.environ)
    with tempfile.TemporaryDirectory(prefix="openclaw-mpi-") as tmp:
        config_file = None if isinstance(config, Config) else config
        if isinstance(config, Config):  # the resolved config travels whole: env must not redo it
            config_file = _dump_config(cfg, Path(tmp))
            env = {
                k: v for k, v in env.items() if not k.startswith(ENV_PREFIX) or k in ENV_RESERVED
            }
        args = client_args(path, config_file, overrides, backend, report)
        args += ["--resume" if resume is not None else "--run-dir", str(directory.resolve())]
        lines: list[str] = []

        def tell(line: str) -> None:
            lines.append(line.removeprefix("mpirun: "))
            if announce:
                announce(line)

        try:
            with interrupts():
                code = run_mpirun(
                    plan, cfg, Path(tmp) / "plan.json", args, forced=backend, announce=tell, env=env
                )
        except KeyboardInterrupt as exc:
            _update_record(directory, lines[0] if lines else shlex.join(args), interrupted=True)
            raise _interrupted(exc, directory, made) from None
    return _outcome(directory, code, lines[0] if lines else shlex.join(args), made)


def _interrupted(exc: KeyboardInterrupt, directory: Path, made: Path | None) -> KeyboardInterrupt:
    """``exc`` with the run directory to resume, once rank 1 has written its record.

    A Ctrl-C while the ranks still import (the first seconds after the ``mpirun`` line) ends
    the launch before rank 1 wrote ``run.json``: there is nothing to resume, and submit said
    "run.json says so; continue with --resume DIR" of a directory that ``--resume`` then
    refused. That directory, made for this run and empty but for rank 1's lock, goes, and so
    do the folders made for it up to ``made`` (a first run's ``runs/<workflow>``).
    """
    if (directory / RUN_RECORD).exists():
        exc.run_dir = directory  # type: ignore[attr-defined]  # submit's resume hint
    elif made is not None:
        _discard(directory, made=True, outermost=made)  # (only rank 1's lock is in it)
    return exc


#: ``mpirun``'s exit codes when its ranks were asked to stop (rank 1's own, or a signal's).
INTERRUPT_CODES = (EXIT_INTERRUPTED, 128 + signal.SIGINT, 128 + signal.SIGTERM)


def _update_record(directory: Path, command: str, interrupted: bool = False) -> dict[str, Any]:
    """Add the ``mpirun`` line to rank 1's record; mark it interrupted if rank 1 could not.

    Open MPI kills the ranks soon after forwarding a SIGTERM, often before rank 1 has written
    its interrupted record; the checkpoints are intact, so ``--resume`` continues either way.
    """
    try:
        record: dict[str, Any] = json.loads((directory / RUN_RECORD).read_text())
    except (OSError, ValueError):
        return {}
    record["mpirun"] = command
    if interrupted and record.get("status") == "running":
        record["status"] = "interrupted"
        for step in record.get("steps", {}).values():
            if step.get("status") == "running":
                step["status"] = "interrupted"
    atomic_write_text(directory / RUN_RECORD, strictjson.dumps(record))
    return record


def _record_crash(directory: Path, record: dict[str, Any], crash: MpiRunError) -> str | None:
    """Mark the run and its unfinished step failed by ``crash``; return that step's name.

    When a worker rank dies, Open MPI stops rank 1 too, which then records ``interrupted`` (or
    nothing: ``running``); neither is what happened.
    """
    if not record or record.get("status") not in ("running", "interrupted"):
        return None
    message = f"{type(crash).__name__}: {crash}"
    record["status"] = "failed"
    failed = None
    for name, step in record.get("steps", {}).items():
        if step.get("status") in ("running", "interrupted"):
            step.update(status="failed", error=message)
            failed = name
            record["error"] = {"step": name, "op": step.get("op", "?"), "message": message}
    atomic_write_text(directory / RUN_RECORD, strictjson.dumps(record))
    return failed


def _outcome(directory: Path, code: int, command: str, made: Path | None = None) -> dict[str, Any]:
    """Rank 1's exit code and record -> the same result a local run gives.

    ``made``: the outermost folder made for this launch (see :func:`_interrupted`).
    """
    record = _update_record(directory, command, interrupted=code in INTERRUPT_CODES)
    if code == 0 and record.get("status") == "completed":
        return record
    if code == EXIT_FAILED and record.get("status") == "failed":
        error = record.get("error", {})
        raise _failed(directory, error.get("step", "?"), error.get("op", "?"), _error(error))
    if code == EXIT_BAD_INPUT:
        raise ConfigError(
            [
                Problem(
                    "the workflow was refused inside the mpi launch (the problems are listed "
                    "above)",
                    "cluster.backend",
                    origin="mpirun",
                )
            ]
        )
    if code in INTERRUPT_CODES:
        raise _interrupted(KeyboardInterrupt("mpirun interrupted"), directory, made)
    # a rank died (killed, out of memory, crashed) and mpirun ended the others
    crash = MpiRunError(code)
    step = _record_crash(directory, record, crash)
    if step is not None:
        raise _failed(directory, step, record["steps"][step].get("op", "?"), crash)
    raise crash


def _failed(directory: Path, step: str, op: str, error: Exception) -> StepFailedError:
    """The :class:`StepFailedError` a local run raises, with its run directory."""
    failed = StepFailedError(step, op, error)
    failed.run_dir = directory
    return failed


#: Our errors that the CLI words apart (the budget to raise, ``--resume``), by name.
OWN_ERRORS: dict[str, type[Exception]] = {
    kind.__name__: kind for kind in (WorkersOutOfMemoryError, WorkersLostError, ClusterLostError)
}


def _error(error: dict[str, Any]) -> Exception:
    """The step's exception as rank 1 recorded it (``"ValueError: message"``): a built-in or
    one of :data:`OWN_ERRORS`, else a ``RuntimeError`` with the whole message."""
    message = str(error.get("message", ""))
    name, sep, text = message.partition(": ")
    kind = OWN_ERRORS.get(name) or getattr(builtins, name, None)
    if sep and isinstance(kind, type) and issubclass(kind, Exception):
        try:
            return kind(text)
        except TypeError:  # an exception type with required arguments
            pass
    return RuntimeError(message)
