"""Run a workflow: steps in dependency order on the cluster, outputs to Zarr, a run record.

Every run has a directory ``runs/<workflow>/<run id>/`` holding the outputs, ``run.json`` (the
resolved config and its hash, versions, hardware, the cluster as it really ran, per-step wall
time, task counts, bytes written, output checksums and the status) and Dask's
``performance-report.html`` (unless switched off: rendering it costs 0.3-0.7 s here, 1.3 s
on a 2 GHz core).
``run.json`` is rewritten after every step and every checkpoint, so an interrupted or killed
run leaves a true record behind, and ``--resume`` continues it (with the parameters and
result-relevant config it was started with: :mod:`~openclaw_dask.workflows.resume`): steps
completed with the same op, arguments, inputs and result-relevant config are skipped, and an
iterative step restarts from its last complete checkpoint.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import inspect
import json
import logging
import os
import shutil
import site
import sys
import time
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import CancelledError
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from typing import Any

import dask
import numpy as np
import xarray as xr
from distributed import KilledWorker, futures_of
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from openclaw_dask.config import Config, ConfigError, detect_hardware, load_config
from openclaw_dask.config.arguments import check_overrides, check_path
from openclaw_dask.config.errors import Problem
from openclaw_dask.config.hardware import software_versions
from openclaw_dask.runtime import counter
from openclaw_dask.runtime.cluster import (
    ClusterLostError,
    attach_refusal,
    attached_dashboard,
    cluster_gone,
    cluster_up_beside,
    dashboard_note,
    on_running_cluster,
    running_cluster,
    start_cluster,
    with_address,
)
from openclaw_dask.runtime.inspect import inspect_workers
from openclaw_dask.runtime.mpi_launch import mpi_job_scheduler
from openclaw_dask.runtime.oom import PauseWatch, out_of_memory
from openclaw_dask.runtime.terminal import interrupts
from openclaw_dask.translate import ClusterPlan, plan_cluster
from openclaw_dask.workflows import lock as run_dir_lock
from openclaw_dask.workflows import strictjson, zarrio
from openclaw_dask.workflows.context import IterativeOp, StepContext
from openclaw_dask.workflows.progress import compute_with_progress, wait_checked
from openclaw_dask.workflows.recovery import (
    MAX_RECOVERIES,
    WorkersLostError,
    prepare_to_continue,
    worker_addresses,
)
from openclaw_dask.workflows.registry import ship_modules
from openclaw_dask.workflows.resume import (
    RUN_RECORD,
    carried_inputs,
    read_run,
    recorded_workflow,
    resume_problems,
    software_changes,
)
from openclaw_dask.workflows.spec import (
    StepSpec,
    Workflow,
    argument_problem,
    load_workflow,
    run_problems,
)

logger = logging.getLogger("openclaw_dask.workflows")

#: What a step fails with when its workers died under it (not an error of its own code).
LOST_WORK = (ClusterLostError, KilledWorker, CancelledError)

CHECKPOINTS = ".checkpoints"
PERFORMANCE_REPORT = "performance-report.html"


class StepFailedError(Exception):
    """A step's op raised: the run is marked failed (exit code 1)."""

    def __init__(self, step: str, op: str, error: BaseException, where: str | None = None) -> None:
        self.step, self.op, self.error = step, op, error
        #: the line of the user's op module that raised it (:func:`raised_in`), if one did
        self.where = where
        self.run_dir: Path | None = None  # set by run_workflow
        super().__init__(f"step {step!r} (op {op}) failed: {type(error).__name__}: {error}")


def split_overrides(overrides: Sequence[str] | None) -> tuple[list[str], dict[str, str]]:
    """``--set`` items: config ones, and ``params.x=value`` ones for the workflow."""
    config, params = [], {}
    for item in overrides or ():
        key, sep, value = item.partition("=")
        if sep and key.strip().startswith("params."):
            params[key.strip()[len("params.") :]] = value
        else:
            config.append(item)
    return config, params


def _sha256_file(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _load_config(
    workflow_config: str | None,
    config_arg: Config | str | None,
    overrides: Sequence[str] | None,
    params: Sequence[str] = (),
) -> Config:
    """The run's config: the argument, else the workflow's ``config:``, else the search order.

    ``params``: the workflow's parameter names, so that ``--set size=128`` suggests
    ``params.size``.
    """
    config_overrides, _ = split_overrides(overrides)
    if not isinstance(config_arg, Config):
        return load_config(config_arg or workflow_config, config_overrides, params=params)
    # read as load_config reads them: an item without '=' had become the key set to null
    return config_arg.with_overrides(config_overrides, params=params)


def step_fingerprint(
    step: StepSpec,
    record: Mapping[str, Any],
    config: Config,
    legacy: bool = False,
    as_written: bool = False,
) -> str:
    """What a completed step's result depends on: op, arguments, inputs, result config.

    The arguments are those that differ from the op's defaults (:func:`effective_args`): a
    ``with:`` line added or removed at the op's default value leaves the fingerprint as it
    was, and a workflow that writes none at its default has the fingerprint it always had.

    ``legacy``: the fingerprint runs recorded before the allocator and transport compression
    left the result config (:data:`~openclaw_dask.config.loader.RUN_ONLY_KEYS`).
    ``as_written``: the one recorded before the arguments at their defaults left it (every
    ``with:`` argument, as written).
    """
    inputs = {need: record["steps"].get(need, {}).get("checksums") for need in step.needs}
    fingerprint = config.fingerprint() if legacy else config.result_fingerprint()
    blob = json.dumps(
        {
            "op": step.op,
            "args": step.args if as_written else effective_args(step),
            "inputs": inputs,
            "config": fingerprint[0],
            "outputs": step.outputs,
        },
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def effective_args(step: StepSpec) -> dict[str, Any]:
    """``step``'s ``with:`` arguments less those equal to the op's default (:func:`same_value`):
    what the op receives that it would not have without them."""
    params = step.info.parameters
    kept = {}
    for name, value in step.args.items():
        default = getattr(params.get(name), "default", inspect.Parameter.empty)
        if default is inspect.Parameter.empty or not same_value(value, default):
            kept[name] = value
    return kept


def same_value(given: Any, default: Any) -> bool:
    """Whether an argument's value is its default, as the op would see it: equal in type and
    value as JSON writes them (``1`` is not ``1.0``, nor ``true``; ``-0.0`` is not ``0.0``: an
    op may tell them apart, and an output's attributes do), numpy scalars as Python's and a
    tuple as a list (a record keeps both so). A default JSON has no form for (an object of the
    op's own) is never equal: its text may change from one Python session to the next."""
    a, b = _plain(given), _plain(default)
    if a is _NOT_PLAIN or b is _NOT_PLAIN:
        return False
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


_NOT_PLAIN = object()


def _plain(value: Any) -> Any:
    """``value`` in the types JSON writes (numpy scalars unwrapped), or ``_NOT_PLAIN``."""
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple):
        items = [_plain(v) for v in value]
        return _NOT_PLAIN if any(v is _NOT_PLAIN for v in items) else items
    if isinstance(value, Mapping) and all(isinstance(k, str) for k in value):
        pairs = {k: _plain(v) for k, v in value.items()}
        return _NOT_PLAIN if any(v is _NOT_PLAIN for v in pairs.values()) else pairs
    return _NOT_PLAIN


def same_step(
    step: StepSpec,
    recorded: Mapping[str, Any],
    fingerprint: str,
    record: Mapping[str, Any],
    config: Config,
) -> bool:
    """Whether a step record or checkpoint is of this step (its ``fingerprint``).

    A run recorded before :data:`~openclaw_dask.config.loader.RUN_ONLY_KEYS` left the step
    fingerprint, or before the arguments at their defaults did, has an older one: accepted
    too, so its resume skips and continues as it did.
    """
    was = recorded.get("fingerprint")
    if was is None:
        return False
    if was == fingerprint:
        return True
    written = effective_args(step) != step.args  # else both ways are the same fingerprint
    return any(
        was == step_fingerprint(step, record, config, legacy, as_written)
        for legacy, as_written in ((True, False), (False, True), (True, True))
        if not as_written or written
    )


def done_before(
    step: StepSpec,
    recorded: Mapping[str, Any],
    fingerprint: str,
    record: Mapping[str, Any],
    config: Config,
    run_dir: Path,
) -> bool:
    """Whether a resume skips ``step``: completed as this step, by the same op code
    (:func:`code_changed`), and its outputs as it left them (:func:`output_damage`)."""
    return (
        recorded.get("status") == "completed"
        and same_step(step, recorded, fingerprint, record, config)
        and not code_changed(step, recorded)
        and output_damage(step, recorded, run_dir) is None
    )


def code_changed(step: StepSpec, recorded: Mapping[str, Any]) -> bool:
    """Whether the source of ``step``'s op changed since its record or checkpoint was made.

    A record without ``code`` (a built-in op's, or one made before the code was recorded)
    has nothing to compare: not changed. The code is compared apart from the step
    fingerprint so that a checkpoint of an edited op can still be continued from (the fix of
    a crash late in a long step), which its fingerprint would forbid.
    """
    was = recorded.get("code")
    return was is not None and was != step.info.code


def rerun_reason(step: StepSpec, recorded: Mapping[str, Any], same: bool, run_dir: Path) -> str:
    """Why a resume runs a completed step again (``same``: its fingerprint still matches)."""
    if not same:
        return "its op, arguments or inputs changed since"
    if code_changed(step, recorded):
        return "its op's code changed since"
    return output_damage(step, recorded, run_dir) or "its outputs changed"


def output_damage(step: StepSpec, recorded: Mapping[str, Any], run_dir: Path) -> str | None:
    """What is gone or changed of a completed step's outputs (``None``: nothing).

    Every file the step wrote is in its record (``files``, with sizes): a resume used to skip
    a completed step whose output had lost its ``zarr.json`` or a chunk (zarr reads a missing
    chunk as its fill value) and said "nothing to run" over the damaged result. A record from
    before ``files`` has only the outputs' presence to go by.
    """
    for output in step.outputs:
        if not (run_dir / output.rstrip("/")).exists():
            return f"{output.rstrip('/')} is missing"
    files = recorded.get("files")
    return zarrio.manifest_damage(run_dir, files) if isinstance(files, dict) else None


def completed_steps(record: Mapping[str, Any]) -> set[str]:
    """The steps a run's ``record`` says completed (none for a new run's empty record)."""
    steps = record.get("steps")
    if not isinstance(steps, Mapping):
        return set()
    return {
        name
        for name, step in steps.items()
        if isinstance(step, Mapping) and step.get("status") == "completed"
    }


def skipped_steps(
    workflow: Workflow, config: Config, record: Mapping[str, Any], run_dir: Path
) -> set[str]:
    """The steps a resume of the run in ``run_dir`` is sure to skip: :func:`done_before`, and
    every step they need skipped too (one that runs again may give them other inputs)."""
    skipped: set[str] = set()
    steps = record.get("steps", {})
    for name in workflow.order:  # (needs come first)
        step = workflow.steps[name]
        fingerprint = step_fingerprint(step, record, config)
        if all(need in skipped for need in step.needs) and done_before(
            step, steps.get(name, {}), fingerprint, record, config, run_dir
        ):
            skipped.add(name)
    return skipped


def checkpointed(run_dir: Path) -> set[str]:
    """The steps of the run in ``run_dir`` that have a committed checkpoint (of any arguments)."""
    return {
        ckpt.name for ckpt in (run_dir / CHECKPOINTS).glob("*") if read_checkpoint(ckpt) is not None
    }


def continued_steps(
    workflow: Workflow,
    config: Config,
    record: Mapping[str, Any],
    run_dir: Path,
    skipped: set[str],
) -> set[str]:
    """The steps a resume of the run in ``run_dir`` continues from their checkpoint: not
    completed, the checkpoint of this step (:func:`same_step`), every step they need
    ``skipped``. Their values were checked when the run started and are not asked again: a
    climate run started from another run's state went on from its checkpoint only while that
    state was there. A checkpoint found damaged when the step starts asks them then
    (:meth:`Run._check_start_over`)."""
    steps = record.get("steps", {})
    continued = set()
    for name in workflow.order:
        step, recorded = workflow.steps[name], steps.get(name, {})
        if name in skipped or recorded.get("status") == "completed":
            continue
        saved = read_checkpoint(run_dir / CHECKPOINTS / name)
        if saved is None or not all(need in skipped for need in step.needs):
            continue
        if same_step(step, saved, step_fingerprint(step, record, config), record, config):
            continued.add(name)
    return continued


def starting_over(
    problems: Sequence[Problem], record: Mapping[str, Any], run_dir: Path
) -> list[Problem]:
    """``problems`` of a resume's workflow, each one of a step that began in an earlier attempt
    saying that the resume runs it from its start: its values were accepted then, so what is
    refused now is what that needs (another run's state, deleted since), and continuing the
    step would not have needed it."""
    steps = record.get("steps", {})
    said = []
    for problem in problems:
        parts = problem.key.split(".")
        name = parts[1] if len(parts) > 2 and parts[0] == "steps" and parts[2] == "with" else ""
        began = steps.get(name)
        if isinstance(began, Mapping) and began.get("status"):
            if began.get("status") == "completed":
                why = "it completed, but runs again"
            elif (run_dir / CHECKPOINTS / name / "checkpoint.json").exists():
                why = "its checkpoint is not continued"
            else:
                why = "it has no checkpoint to continue from"
            note = f"; the resume runs step {name!r} from its start ({why}), which needs it"
            problem = replace(problem, message=problem.message + note)
        said.append(problem)
    return said


def nothing_left(
    workflow: Workflow, config: Config, record: Mapping[str, Any], run_dir: Path
) -> bool:
    """Whether a resume of the run in ``run_dir`` (its ``record``) has nothing to run: the run
    completed, and every step would be skipped (:func:`done_before`)."""
    return record.get("status") == "completed" and skipped_steps(
        workflow, config, record, run_dir
    ) == set(workflow.order)


def resume_plan(
    workflow: Workflow, config: Config, record: Mapping[str, Any], run_dir: Path
) -> dict[str, str]:
    """What a resume of the run in ``run_dir`` would do with each step, said for its dry run.

    As the run decides it (:func:`done_before`, the step's checkpoint); a checkpoint is
    checked for damage only when the step runs (its state must be read back on a cluster).
    A completed step after one that runs again is skipped only if that one's outputs come out
    as before (the run compares their checksums): the plan said "skip" where the run then ran
    it again.
    """
    plan = {}
    runs: set[str] = set()  # the steps that run, or may
    steps = record.get("steps", {})
    for name in workflow.order:
        step, recorded = workflow.steps[name], steps.get(name, {})
        fingerprint = step_fingerprint(step, record, config)
        same = same_step(step, recorded, fingerprint, record, config)
        if done_before(step, recorded, fingerprint, record, config, run_dir):
            before = [need for need in step.needs if need in runs]
            if before:
                runs.add(name)
                plan[name] = (
                    f"skip if the outputs of {', '.join(before)} come out as before, else run again"
                )
            else:
                plan[name] = "skip: completed in an earlier attempt"
            continue
        runs.add(name)
        if recorded.get("status") == "completed":
            plan[name] = f"run again: {rerun_reason(step, recorded, same, run_dir)}"
            continue
        saved = read_checkpoint(run_dir / CHECKPOINTS / name)
        if saved is not None and same_step(step, saved, fingerprint, record, config):
            edited = " (its op's code changed since)" if code_changed(step, saved) else ""
            plan[name] = f"continue from its checkpoint at step {int(saved['step']):,}{edited}"
        else:
            plan[name] = "run"
    return plan


def read_checkpoint(ckpt_dir: Path) -> dict[str, Any] | None:
    """A step's committed checkpoint (``checkpoint.json``) with its state store, or ``None``."""
    try:
        saved = json.loads((ckpt_dir / "checkpoint.json").read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(saved, dict) or not isinstance(saved.get("store"), str):
        return None
    return saved if (ckpt_dir / saved["store"]).exists() else None


class ProgressNews:
    """A line about an iterative step's progress at most every :attr:`every` seconds.

    Without a terminal (a batch job's log, ``nohup``) there is no progress bar, and a run at
    0.25° that takes days said nothing until it ended; these lines give the step, the rate and
    the time left, measured over this attempt.
    """

    #: seconds between two lines
    every = 60.0

    def __init__(self, name: str, start: int, total: int) -> None:
        self.name, self.start, self.total = name, start, total
        self.t0 = self.last = time.monotonic()

    def line(self, done: int) -> str | None:
        """The line for ``done`` steps, or None when the last one is recent."""
        now = time.monotonic()
        if now - self.last < self.every or done <= self.start:
            return None
        self.last = now
        per_second = (done - self.start) / max(now - self.t0, 1e-9)
        left = (self.total - done) / per_second
        return (
            f"{self.name}: step {done:,} of {self.total:,} ({100 * done / self.total:.1f} %), "
            f"{per_second * 60:,.0f} steps/min, about {_duration(left)} left"
        )


def _duration(seconds: float) -> str:
    """``45 s``, ``12 min``, ``3.5 h``, ``2.1 days``, ``3.4 years``, ``1,200 years``."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    if seconds < 48 * 3600:
        return f"{seconds / 3600:.1f} h"
    days = seconds / 86400
    if days < 2 * 365.25:
        return f"{days:.1f} days"
    years = days / 365.25  # a run far too long for this cluster: "524794290037100.2 days" said
    return f"{years:.1f} years" if years < 100 else f"{years:,.0f} years"


class Run:
    """One run of a workflow (a run directory and its record)."""

    def __init__(
        self,
        workflow: Workflow,
        config: Config,
        plan: ClusterPlan,
        run_dir: Path,
        record: dict[str, Any],
        show_progress: bool,
        announce: Callable[[str], None] | None = None,
    ) -> None:
        self.workflow, self.config, self.plan = workflow, config, plan
        self.run_dir, self.record = run_dir, record
        self.show_progress = show_progress
        self.announce = announce
        #: notices a cluster that cannot go on, and cancels what waits on it
        self.watch: PauseWatch | None = None

    @property
    def check(self) -> Callable[[], None] | None:
        """Raises when the cluster cannot go on (:meth:`PauseWatch.check`); for the waits."""
        return None if self.watch is None else self.watch.check

    # -- record ---------------------------------------------------------------------------
    def save(self) -> None:
        """Rewrite run.json (atomically), as strict JSON: a NaN or infinity becomes null."""
        zarrio.atomic_write_text(self.run_dir / RUN_RECORD, strictjson.dumps(self.record))

    def step_record(self, name: str) -> dict[str, Any]:
        return self.record["steps"].setdefault(name, {})

    # -- steps ----------------------------------------------------------------------------
    def _same(self, step: StepSpec, recorded: Mapping[str, Any], fingerprint: str) -> bool:
        """Whether a step record or checkpoint is of this step (:func:`same_step`)."""
        return same_step(step, recorded, fingerprint, self.record, self.config)

    def _op_files(self, step: StepSpec) -> list[str]:
        """The user's op modules: those beside the workflow, and the step's own op's file."""
        files = list(self.workflow.op_files)
        if step.info.code is not None:  # a user op (not a built-in one)
            with contextlib.suppress(TypeError, OSError):
                files.append(inspect.getsourcefile(step.info.target) or "")
        return [file for file in files if file]

    def _context(self, step: StepSpec, client: Any) -> StepContext:
        inputs = {}
        for need in step.needs:
            dep = self.workflow.steps[need]
            inputs[need] = {
                name: zarrio.open_output(self.run_dir / f"{name}.zarr") for name in dep.zarr_outputs
            }
        return StepContext(
            step.name,
            self.config,
            client,
            self.run_dir,
            dict(self.workflow.values),
            inputs,
            outputs=step.outputs,
        )

    def _finish_step(self, step: StepSpec, rec: dict[str, Any]) -> None:
        for name in step.zarr_outputs:
            zarrio.consolidate(self.run_dir / f"{name}.zarr")
        rec["checksums"] = {
            name: zarrio.checksums(self.run_dir / f"{name}.zarr") for name in step.zarr_outputs
        }
        rec["files"] = zarrio.manifest(
            self.run_dir, [self.run_dir / o.rstrip("/") for o in step.outputs]
        )
        rec["bytes_written"] = sum(rec["files"].values())
        rec["status"] = "completed"

    def run_map_step(
        self, step: StepSpec, ctx: StepContext, progress: Any, bar: Any, rec: dict[str, Any]
    ) -> None:
        result = step.info.target(ctx, **step.args)
        expected = sorted(step.zarr_outputs)
        if result is None and expected:
            raise TypeError(f"op returned None; the workflow expects outputs {expected}")
        # an op with folder outputs only may return nothing ("or {}" asked an array its truth)
        result = {} if result is None else result
        # a Dataset is a Mapping too (of its variables): "op returned ['T']" named no output
        as_dict = isinstance(result, Mapping) and not isinstance(result, xr.Dataset)
        if not as_dict or set(result) != set(expected):
            got = sorted(result) if as_dict else _type_name(result)
            returned = set(result) if as_dict else set()
            folders = sorted(returned & set(step.dir_outputs))
            hint = (
                f" (it returned a dataset for {', '.join(folders)}, listed as a folder: list "
                f"{', '.join(f + '.zarr' for f in folders)} instead)"
                if folders
                else ""
            )
            if not as_dict:
                hint = " as a dict of output name -> xarray.Dataset" + _return_hint(expected)
            raise TypeError(f"op returned {got}; the workflow expects outputs {expected}{hint}")
        for name, ds in result.items():
            _check_dataset("op", name, ds)
        writes = [
            zarrio.write(ds, self.run_dir / f"{name}.zarr", self.config)
            for name, ds in result.items()
        ]
        # no bar shown, no bar kept: listing the graph's keys (0.12 s a map step of
        # example.yaml at 256² in cProfile, 2-core VM) and asking the scheduler for them every
        # 0.25 s were paid by every run, shown or not
        shown = progress if self.show_progress else None
        compute_with_progress(ctx.client, writes, shown, bar, self.check)

    def run_iterative_step(
        self,
        step: StepSpec,
        ctx: StepContext,
        progress: Any,
        bar: Any,
        rec: dict[str, Any],
        fingerprint: str,
    ) -> None:
        """Run the windows of an iterative step; after a lost worker, continue from the last
        checkpoint (at most ``MAX_RECOVERIES`` times: :mod:`~openclaw_dask.workflows.recovery`)."""
        client = ctx.client
        ckpt_dir = self.run_dir / CHECKPOINTS / step.name
        recoveries: list[dict[str, Any]] = []
        while True:
            before = worker_addresses(client)
            try:
                self._iterate(step, ctx, progress, bar, rec, fingerprint)
                return
            except Exception as exc:
                if isinstance(exc, ConfigError) or cluster_gone(client):
                    raise
                lost = sorted(before - worker_addresses(client))
                if not lost:
                    raise
                saved = read_checkpoint(ckpt_dir)
                at = int(saved["step"]) if saved and self._same(step, saved, fingerprint) else 0
                if len(recoveries) >= MAX_RECOVERIES:
                    raise WorkersLostError(
                        f"workers were lost {len(recoveries) + 1} times during the step (the "
                        f"last: {', '.join(lost)}): killed, out of memory (memory.spill) or "
                        f"their host gone"
                    ) from exc
                recoveries.append(
                    {
                        "lost": lost,
                        "from_step": at,
                        "time": time.time(),
                        "error": f"{type(exc).__name__}: {exc}".splitlines()[0],
                    }
                )
                rec["recoveries"] = recoveries
                self.save()
                if self.announce:
                    self.announce(
                        f"{step.name}: lost worker {', '.join(lost)}; continuing from step "
                        f"{at:,}, the last checkpoint (recovery {len(recoveries)} of "
                        f"{MAX_RECOVERIES})"
                    )
                # the traceback's frames hold the lost window's futures: release them
                traceback.clear_frames(exc.__traceback__)
            prepare_to_continue(client, len(before))

    def _iterate(
        self,
        step: StepSpec,
        ctx: StepContext,
        progress: Any,
        bar: Any,
        rec: dict[str, Any],
        fingerprint: str,
    ) -> None:
        """The windows from the last checkpoint (or step 0) to the end."""
        op: IterativeOp = step.info.target(ctx, **step.args)
        client = ctx.client
        total = int(op.total_steps)
        interval = int(self.config["distributed.sync_interval"])
        ckpt_dir = self.run_dir / CHECKPOINTS / step.name
        start, state = self._resume_point(step, op, ckpt_dir, fingerprint, rec, client)
        code = step.info.code  # in each checkpoint: a resume says when it changed since
        rec.update(total_steps=total, sync_interval=interval)
        progress.update(bar, total=total, completed=start)
        pending: tuple[list[Any], dict[str, Any]] | None = None
        s = start
        news = ProgressNews(step.name, start, total) if not self.show_progress else None
        while s < total:
            n = min(interval, total - s)
            advanced = op.advance(state, s, n)
            if not (isinstance(advanced, tuple) and len(advanced) == 2):
                raise TypeError(
                    f"{type(op).__name__}.advance returned {type(advanced).__name__}; "
                    "expected (state, {output: records}), the records may be {}"
                )
            new_state, records = advanced
            records = _datasets(records, f"{type(op).__name__}.advance's records", step)
            for name, ds in records.items():
                # without it, one window's records made an output with no time at all, and
                # only a second window's append said so (in xarray's words)
                if op.append_dim not in ds.dims:
                    raise TypeError(
                        f"{type(op).__name__}.advance's records for {name!r} have no dimension "
                        f"{op.append_dim!r} (its append_dim, along which they are appended); "
                        f"they have {tuple(ds.dims) or 'none'}"
                    )
            # submit the window and go on: its writes run while the next window computes
            # on the run's client; the optimisation runs on the scheduler, so it is this flag
            # (not a dask.config.set around the call) that decides whether it happens
            new_state, records = dask.persist(new_state, records, optimize_graph=op.optimize_graphs)
            if pending:
                self._commit(ckpt_dir, op, step, rec, *pending)
                progress.update(bar, completed=pending[1]["step"])
                line = news.line(pending[1]["step"]) if news else None
                if line and self.announce:
                    self.announce(line)
            store = f"state-{s + n}.zarr"
            writes = [
                zarrio.write(
                    ds, self.run_dir / f"{name}.zarr", self.config, append_dim=op.append_dim
                )
                for name, ds in records.items()
            ]
            if s + n < total:  # the last window's state goes straight into the outputs
                writes.append(zarrio.write(new_state, ckpt_dir / store, self.config))
            else:
                store = None
            pending = (
                client.compute(writes),
                {"step": s + n, "store": store, "fingerprint": fingerprint, "code": code},
            )
            state, s = new_state, s + n
        if pending:
            self._commit(ckpt_dir, op, step, rec, *pending)
            progress.update(bar, completed=pending[1]["step"])
        final = _datasets(op.finish(state), f"{type(op).__name__}.finish", step)
        if final:
            writes = [
                zarrio.write(ds, self.run_dir / f"{name}.zarr", self.config)
                for name, ds in final.items()
            ]
            compute_with_progress(client, writes, check=self.check)
        # an output neither emitted nor finished failed later as "FileNotFoundError: file://"
        missing = [n for n in step.zarr_outputs if not (self.run_dir / f"{n}.zarr").exists()]
        if missing:
            raise TypeError(
                f"{type(op).__name__} wrote nothing to {', '.join(missing)}: neither "
                "advance's records nor finish returned it"
            )
        shutil.rmtree(ckpt_dir, ignore_errors=True)

    def _resume_point(
        self,
        step: StepSpec,
        op: IterativeOp,
        ckpt_dir: Path,
        fingerprint: str,
        rec: dict[str, Any],
        client: Any,
    ) -> tuple[int, Any]:
        """The step to start from and its state, persisted: the checkpoint's, or step 0's.

        A checkpoint is used only when its state store and the outputs it counted are as they
        were committed and the state reads back: zarr reads a missing chunk as its fill value,
        so a deleted chunk resumed into NaN fields that the run recorded as its result, and a
        deleted output lost the records before the checkpoint. A damaged one is said, and the
        step runs from step 0 (slower, never wrong).
        """
        saved = read_checkpoint(ckpt_dir)
        if saved and self._same(step, saved, fingerprint):
            damage = self._damage(saved, op.append_dim)
            state = None
            if damage is None:
                stored = zarrio.open_output(ckpt_dir / saved["store"])
                state = client.persist(op.resumed_state(stored))
                damage = _unreadable(state, self.check)
            if damage is None:
                for name, length in saved["extents"].items():
                    zarrio.truncate(self.run_dir / f"{name}.zarr", op.append_dim, length)
                rec["resumed_from_step"] = int(saved["step"])
                if self.announce:
                    # continued all the same: the fix of a crash late in a long step; a
                    # change of its numbers would need the step run again from step 0
                    edited = (
                        f" (its op's code changed since; delete {ckpt_dir} to run the step "
                        "from step 0)"
                        if code_changed(step, saved)
                        else ""
                    )
                    self.announce(
                        f"{step.name}: continuing from its checkpoint at step "
                        f"{int(saved['step']):,}{edited}"
                    )
                return int(saved["step"]), state
            rec["checkpoint_damaged"] = damage
            damaged = f"the checkpoint at step {int(saved['step']):,} is damaged ({damage})"
            # the resume did not check the values of a step it was to continue (another run's
            # state to start from may be gone): starting over needs them, checked before the
            # checkpoint and outputs go
            self._check_start_over(step, f"; {damaged}, so the step starts over, which needs it")
            if self.announce:
                self.announce(f"{step.name}: {damaged}; running the step from step 0")
        shutil.rmtree(ckpt_dir, ignore_errors=True)
        for name in step.zarr_outputs:
            shutil.rmtree(self.run_dir / f"{name}.zarr", ignore_errors=True)
        return 0, client.persist(op.initial_state())

    def _check_start_over(self, step: StepSpec, why: str) -> None:
        """Ask the op's own value check of ``step``, which a resume did not, as it was to
        continue the step from its checkpoint (:func:`continued_steps`).

        Raises
        ------
        ConfigError
            What it refuses, at the argument's line, with ``why`` the step needs it.
        """
        refused = dict(step.info.check(step.args)) if step.info.check is not None else {}
        if refused:
            problems = [argument_problem(self.workflow, step.name, *i) for i in refused.items()]
            raise ConfigError([replace(p, message=p.message + why) for p in problems])

    def _damage(self, saved: dict[str, Any], dim: str | None) -> str | None:
        """What is missing or changed since the checkpoint was committed, or ``None``."""
        # the state store is never written again; an output's chunk may be (appends)
        damage = zarrio.manifest_damage(
            self.run_dir, saved.get("files") or {}, lambda rel: rel.startswith(f"{CHECKPOINTS}/")
        )
        if damage is not None:
            return damage
        for name, length in saved["extents"].items():
            have = zarrio.extent(self.run_dir / f"{name}.zarr", dim) if dim else length
            if have < length:
                return f"{name}.zarr holds {have} of the {length} records it had"
        return None

    def _commit(
        self,
        ckpt_dir: Path,
        op: IterativeOp,
        step: StepSpec,
        rec: dict[str, Any],
        futures: list[Any],
        info: dict[str, Any],
    ) -> None:
        """Wait for a window's writes, then commit its checkpoint (and the record)."""
        wait_checked(futures, self.check)
        for future in futures:
            future.result()  # raise a failed write here
        info["extents"] = {
            name: zarrio.extent(self.run_dir / f"{name}.zarr", op.append_dim)
            for name in step.zarr_outputs
        }
        if info["store"] is not None:  # None: the last window, finished right after
            # every file the checkpoint stands on, so a resume can tell it is whole
            stores = [ckpt_dir / info["store"]]
            stores += [self.run_dir / f"{name}.zarr" for name in step.zarr_outputs]
            info["files"] = zarrio.manifest(self.run_dir, stores)
            self._write_checkpoint(ckpt_dir, info)
        rec["checkpoint_step"] = info["step"]
        self.save()

    @staticmethod
    def _write_checkpoint(ckpt_dir: Path, info: dict[str, Any]) -> None:
        """Commit a checkpoint: its state store is complete; then drop older ones."""
        zarrio.atomic_write_text(ckpt_dir / "checkpoint.json", json.dumps(info))
        for old in ckpt_dir.glob("state-*.zarr"):
            if old.name != info["store"]:
                shutil.rmtree(old, ignore_errors=True)

    def run_steps(self, client: Any) -> None:
        progress = Progress(
            TextColumn("{task.description:<24}"),
            BarColumn(),
            TextColumn("{task.completed}/{task.total}"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            disable=not self.show_progress,
            transient=False,
        )
        with progress:
            for name in self.workflow.order:
                step = self.workflow.steps[name]
                rec = self.step_record(name)
                fingerprint = step_fingerprint(step, self.record, self.config)
                bar = progress.add_task(name, total=None)
                if done_before(step, rec, fingerprint, self.record, self.config, self.run_dir):
                    rec["skipped"] = "completed in an earlier attempt (resume)"
                    if self.announce:
                        self.announce(f"{name}: completed in an earlier attempt, skipped")
                    progress.update(bar, total=1, completed=1, description=f"{name} (resumed)")
                    continue
                if rec.get("status") == "completed" and self.announce:
                    # a resume re-runs a step whose op, arguments, inputs or op code were
                    # edited since (the fix after a failure); its outputs are replaced: say so
                    same = self._same(step, rec, fingerprint)
                    why = rerun_reason(step, rec, same, self.run_dir)
                    self.announce(f"step {name!r} completed earlier, but {why}: running it again")
                rec.clear()
                rec.update(
                    op=step.op, status="running", fingerprint=fingerprint, started=time.time()
                )
                if step.info.code is not None:  # a user op's: a resume compares it
                    rec["code"] = step.info.code
                self.save()
                t0 = time.perf_counter()
                ctx = self._context(step, client)
                tasks0 = counter.submitted(client)
                try:
                    if step.info.iterative:
                        self.run_iterative_step(step, ctx, progress, bar, rec, fingerprint)
                    else:
                        self.run_map_step(step, ctx, progress, bar, rec)
                    rec["tasks"] = counter.submitted(client) - tasks0
                    self._finish_step(step, rec)
                    if ctx.metrics:
                        rec["metrics"] = ctx.metrics
                except (KeyboardInterrupt, ConfigError):
                    raise
                except (Exception, SystemExit) as exc:
                    # (an op that calls sys.exit fails its step: the run ended in silence,
                    # with run.json still saying "running")
                    # a stopped cluster cancels every task with reasons that name futures, and
                    # workers restarted for memory leave the cluster empty or tasks killed
                    gone = cluster_gone(client)
                    error: BaseException = ClusterLostError(gone) if gone else exc
                    if gone or isinstance(exc, LOST_WORK):
                        limit = self.plan.layout.get("memory_limit")
                        error = out_of_memory(client, rec["started"] - 1.0, limit) or error
                    if self.watch is not None and self.watch.error is not None:
                        # it cancelled the step's futures: whatever the op raised came of that
                        error = self.watch.error
                    rec.update(
                        status="failed",
                        error=f"{type(error).__name__}: {error}",
                        # with the worker's frames for an exception raised in a task
                        traceback="".join(traceback.format_exception(exc)),
                        wall_seconds=time.perf_counter() - t0,
                    )
                    where = None if error is not exc else raised_in(exc, self._op_files(step))
                    raise StepFailedError(name, step.op, error, where) from exc
                rec["wall_seconds"] = time.perf_counter() - t0
                self.save()


def raised_in(exc: BaseException, files: Sequence[str]) -> str | None:
    """``myops.py, line 17, in hot_square``: the innermost frame of ``exc``'s traceback that is
    in one of the user's op module ``files``, or ``None``.

    A frame matches by path, or by name outside the installed packages and Python's own
    library: a task's frames are in a worker's copy of the module (Dask's upload folder), and a
    user's ``utils.py`` must not match ``distributed/utils.py``. The failure said the op's
    message and that its traceback was in run.json; the user then opened run.json to find
    which line of their own module had raised it.
    """
    paths = {os.path.abspath(file) for file in files}
    names = {Path(file).name for file in files}
    installed = (sys.prefix, sys.base_prefix, *site.getsitepackages())
    libraries = tuple({os.path.abspath(p) + os.sep for p in installed})
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        path = os.path.abspath(frame.filename)
        if path in paths or (Path(path).name in names and not path.startswith(libraries)):
            return f"{Path(path).name}, line {frame.lineno}, in {frame.name}"
    return None


def _return_hint(expected: Sequence[str]) -> str:
    """``: return {'field': ds}`` for a single expected output, else nothing."""
    return f": return {{{expected[0]!r}: ds}}" if len(expected) == 1 else ""


def _datasets(value: Any, what: str, step: StepSpec) -> dict[str, xr.Dataset]:
    """``value`` (an iterative op's records or final outputs) as ``{output: Dataset}``.

    Raises
    ------
    TypeError
        Saying what ``what`` returned instead: not a dict (a Dataset is a Mapping of its
        variables, and was written as outputs named after them), a name that is not one of the
        step's Zarr outputs (it was written into the run directory all the same), or a value
        that is not a Dataset.
    """
    outputs = sorted(step.zarr_outputs)
    if value is None:
        return {}
    if not isinstance(value, Mapping) or isinstance(value, xr.Dataset):
        raise TypeError(
            f"{what} returned {_type_name(value)}; expected a dict of output name -> "
            f"xarray.Dataset (may be empty){_return_hint(outputs)}"
        )
    unknown = sorted(set(value) - set(outputs))
    if unknown:
        raise TypeError(f"{what} returned {unknown}, not outputs of the step {outputs}")
    for name, ds in value.items():
        _check_dataset(what, name, ds)
    return dict(value)


def _check_dataset(what: str, name: str, ds: Any) -> None:
    """Raise TypeError unless ``what``'s value ``ds`` for output ``name`` is a Dataset."""
    if not isinstance(ds, xr.Dataset):
        array = type(ds) is xr.DataArray
        hint = " (DataArray.to_dataset(name=...) makes one)" if array else ""
        raise TypeError(
            f"{what} returned {_type_name(ds)} for output {name!r}; expected an "
            f"xarray.Dataset{hint}"
        )


def _type_name(value: Any) -> str:
    """``xarray.DataArray``, ``numpy.ndarray``, ``list``: a returned value's type, as said."""
    kind = type(value)
    package = kind.__module__.partition(".")[0]
    return kind.__qualname__ if package == "builtins" else f"{package}.{kind.__name__}"


def _unreadable(state: Any, check: Any) -> str | None:
    """Why a persisted checkpoint state could not be read back, or ``None`` when it was."""
    futures = futures_of(state)
    wait_checked(futures, check)
    for future in futures:
        if future.status == "error":
            exc = future.exception()
            if isinstance(exc, KilledWorker):  # the cluster's trouble, not the checkpoint's
                raise exc
            return f"its state cannot be read: {type(exc).__name__}: {exc}"
    return None


def report_path(directory: Path, attempt: int) -> Path:
    """Where an attempt of the run in ``directory`` writes its performance report.

    ``performance-report.html``, unless an earlier attempt wrote that: then
    ``performance-report-<attempt>.html`` beside it (a resume had written over the report of
    the attempt that did most of the work with one of the steps it had left).
    """
    plain = (directory / PERFORMANCE_REPORT).resolve()
    if attempt <= 1 or not plain.exists():
        return plain
    return plain.with_name(f"{plain.stem}-{attempt}{plain.suffix}")


def _new_run_dir(workflow: Workflow, run_dir: str | Path | None) -> Path:
    if isinstance(run_dir, str) and not run_dir.strip():  # Path("") is the current folder
        raise ConfigError([Problem("expected a folder, got an empty path", origin="--run-dir")])
    if run_dir is not None:
        path = Path(run_dir)
        if path.exists() and not path.is_dir():
            raise ConfigError([Problem("is a file, not a folder", "", str(path))])
        using = run_dir_lock.holder(path) if path.is_dir() else None
        if using is not None:  # a run started there a moment ago: not one to resume
            raise run_dir_lock.in_use(path, using)
        if path.exists() and any(path.iterdir()):
            raise ConfigError(
                [
                    Problem(
                        "run directory exists and is not empty; pass --resume to continue that "
                        "run, or choose another --run-dir (nothing there is overwritten)",
                        "",
                        str(path),
                    )
                ]
            )
    else:
        stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
        base = Path("runs") / workflow.name
        path = base / stamp
        n = 1
        # claimed by making it: two runs started in the same second had both chosen the
        # first free name, and the second was refused as a run directory in use
        while not _claimed(path):
            n += 1
            path = base / f"{stamp}-{n}"
    probe = path / ".openclaw-write-test"
    try:  # write something, as root may not write everywhere os.access says it can
        path.mkdir(parents=True, exist_ok=True)
        probe.touch()
        probe.unlink()
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise ConfigError(
            [Problem(f"cannot write a run directory here: {reason}", "", str(path))]
        ) from None
    return path


def _discard(directory: Path, made: bool, outermost: Path | None = None) -> None:
    """Remove what a first run wrote in ``directory`` before it was refused, and ``directory``
    itself if the run ``made`` it, with the folders made for it up to ``outermost`` (a first
    run's ``runs/<workflow>``, and ``runs``; an empty ``runs/<workflow>/`` had stayed)."""
    for name in (RUN_RECORD, run_dir_lock.LOCK):
        (directory / name).unlink(missing_ok=True)
    if not made:
        return
    with contextlib.suppress(OSError):  # not empty after all (another run's): leave it
        for folder in (directory, *directory.parents):
            folder.rmdir()
            if outermost is None or folder == Path(outermost):
                break


def _outermost_missing(path: str | os.PathLike[str]) -> Path | None:
    """The outermost of ``path`` and its parents that does not exist yet (``None``: it exists)."""
    missing = None
    for folder in (Path(path), *Path(path).parents):
        if folder.exists():
            break
        missing = folder
    return missing


def _claimed(path: Path) -> bool:
    """Make ``path`` unless it exists (an error to make it is said by the write test after)."""
    try:
        path.mkdir(parents=True)
    except FileExistsError:
        return False
    except OSError:
        pass
    return True


def run_workflow(
    path: str | os.PathLike[str] | None,
    config: Config | str | os.PathLike[str] | None = None,
    overrides: Iterable[str] | None = None,
    *,
    address: str | None = None,
    backend: str | None = None,
    run_dir: str | os.PathLike[str] | None = None,
    resume: str | os.PathLike[str] | None = None,
    dry_run: bool = False,
    progress: bool = False,
    announce: Callable[[str], None] | None = None,
    report: bool | None = None,
) -> dict[str, Any]:
    """Run a workflow file and return its run record.

    Parameters
    ----------
    path
        The workflow YAML; ``None`` with ``resume``: the file the resumed run was started from.
    config
        A :class:`Config`, a config path, or ``None``: the workflow's ``config:``, else the
        usual search order.
    overrides
        ``["section.key=value", "params.name=value", ...]``.
    address
        Attach to this scheduler instead of starting a cluster.
    backend
        Force a backend.
    run_dir
        Where the run writes (default ``runs/<workflow>/<timestamp>``); must be new or empty.
    resume
        A run directory to continue: its ``--set`` values and config file come along, and a
        differing parameter or result-relevant config value is refused
        (:mod:`~openclaw_dask.workflows.resume`). A completed run with nothing left to run
        (:func:`nothing_left`) starts no cluster: its record comes back as it is.
    dry_run
        Validate and plan only: no cluster, nothing written.
    progress
        Show rich progress bars.
    announce
        Called with one-line news for the user (run directory, dashboard link).
    report
        Write Dask's ``performance-report.html`` into the run directory (a resumed attempt
        writes ``performance-report-<attempt>.html`` beside an earlier attempt's). Rendering
        it costs 0.3-0.7 s on the scheduler (bokeh); ``False`` skips it (``submit
        --no-report``) for short runs. ``None``: a new run writes one, a resume does as the
        run it continues did.

    Returns
    -------
    dict
        The run record (also in ``run_dir/run.json``): ``status`` ``completed``; ``dry-run``
        (the plan, nothing run) with ``dry_run``. A run that does not complete raises, and its
        ``run.json`` says ``failed``, ``interrupted`` or ``rejected``.

    Raises
    ------
    ConfigError
        Bad input (workflow, config, overrides, a resume that differs), or workers that do not
        honour the config; nothing has run.
    StepFailedError
        A step failed (:mod:`openclaw_dask.workflows.runner`): its ``error`` is what the op
        raised, a ``ClusterLostError`` (the cluster stopped under it) or a
        ``WorkersOutOfMemoryError`` (past the memory budget); ``run_dir`` is the run to
        resume.
    KeyboardInterrupt
        Ctrl-C, SIGTERM or a hangup; its ``run_dir`` attribute is the run to resume.
    """
    check_path("run_workflow", "path", path)
    check_overrides("run_workflow", overrides, mapping=False)
    check_path("run_workflow", "run_dir", run_dir)
    check_path("run_workflow", "resume", resume)
    if not isinstance(config, Config):
        check_path("run_workflow", "config (a Config or its file)", config)
    if overrides is not None:  # read more than once below: a generator would be used up
        overrides = list(overrides)
    given = list(overrides or ())
    previous: dict[str, Any] = {}
    if resume is not None:  # the same run: what it was started with comes along
        resume_path, previous = read_run(resume)
        if path is None:  # submit --resume DIR alone: the run's own workflow file
            path = recorded_workflow(previous, resume_path)
        config, overrides = carried_inputs(previous, resume_path, path, config, given)
        if report is None:  # a run started with --no-report stays without one
            report = previous.get("report", True) is not False
    elif path is None:
        raise TypeError("run_workflow needs a workflow path, or a run to resume")
    report = report is not False
    _, param_overrides = split_overrides(overrides)
    problems: list[Problem] = []
    workflow = cfg = None
    # the steps a resume skips or continues from their checkpoint: their values were checked
    # when the run started (see load_workflow's `settled`); first those recorded completed or
    # with a checkpoint, then those sure to be skipped or continued
    settled = completed_steps(previous)
    if resume is not None:
        settled |= checkpointed(resume_path)
    try:
        workflow = load_workflow(path, param_overrides, given=overrides, settled=settled)
    except ConfigError as exc:
        problems += exc.problems
        if resume is not None:  # of a step that began: it starts over (or runs again)
            problems = starting_over(problems, previous, resume_path)
    try:  # the config is checked even when the workflow is bad: every problem at once
        names = list(workflow.params) if workflow else []
        cfg = _load_config(workflow.config_path if workflow else None, config, overrides, names)
    except ConfigError as exc:
        problems += exc.problems
    if problems or workflow is None or cfg is None:
        raise ConfigError(problems)
    if resume is not None:
        # first: a changed value is the resume's mistake, whatever a step it changes now needs
        changed = split_overrides(given)[1]
        problems = resume_problems(previous, workflow, cfg, changed, run_dir=resume_path, path=path)
        if problems:
            raise ConfigError(problems)
        sure = skipped_steps(workflow, cfg, previous, resume_path)
        sure |= continued_steps(workflow, cfg, previous, resume_path, sure)
        if sure != settled:  # a completed step that runs again (changed, damaged, or after one
            settled = sure  # that runs), or one started over, has its values checked
            try:
                workflow = load_workflow(path, param_overrides, given=overrides, settled=settled)
            except ConfigError as exc:
                raise ConfigError(starting_over(exc.problems, previous, resume_path)) from None
    problems = run_problems(workflow, cfg, settled)  # the ops' checks that need the config too
    if problems:
        raise ConfigError(problems)
    if address:
        cfg = with_address(cfg, address)
    running = running_cluster(cfg, backend=backend)
    if running:  # decided here, so that the dry run, run.json and the run itself agree
        cfg = on_running_cluster(cfg, running)
        theirs = running.get("fingerprint") or {}
        if theirs.get("hash") not in (None, cfg.fingerprint()[0]):
            # what attaching would refuse (its workers' config), refused before a run
            # directory is made and in the dry run too
            raise ConfigError([attach_refusal(cfg, theirs["hash"], theirs.get("values"))])
    plan = plan_cluster(cfg, backend=backend)
    plan.unapplied += host_ops_note(workflow, plan)
    beside = None if running else cluster_up_beside(cfg, backend)
    if beside:
        plan.notes.append(beside)
    summary = {
        "workflow": workflow.name,
        "order": list(workflow.order),
        "params": dict(workflow.values),
        "param_sources": dict(workflow.param_sources),
        "plan": plan.to_dict(),
    }
    if resume is not None and not dry_run:
        with run_dir_lock.hold(resume_path):  # not while another run is using it
            if nothing_left(workflow, cfg, previous, resume_path):
                # no cluster to start (on ssh or mpi, nodes and ranks) to skip every step
                if announce:
                    announce(
                        f"nothing to run: every step of {resume_path} completed in an earlier "
                        "attempt; run.json is unchanged"
                    )
                return {**previous, "run_dir": str(resume_path.resolve())}  # if it moved
    if plan.backend == "mpi" and mpi_job_scheduler() is None:
        # this process launches mpirun; its rank 1 runs the workflow (see mpi_run.py)
        from openclaw_dask.workflows import mpi_run

        summary["mpirun"] = mpi_run.mpirun_line(plan, path, config, overrides, backend, report)
        if not dry_run:
            return mpi_run.run_under_mpirun(
                path,
                config,
                overrides,
                cfg,
                workflow,
                plan,
                backend=backend,
                run_dir=run_dir,
                resume=resume,
                announce=announce,
                report=report,
            )
    versions = software_versions()
    changed = software_changes(previous, versions) if resume is not None else []
    if dry_run:
        if resume is not None:
            summary["resume"] = resume_plan(workflow, cfg, previous, resume_path)
            summary["software_changed"] = changed
        return {"status": "dry-run", **summary}

    made = False  # whether this run made its directory (a --resume's, a user's empty one: not)
    outermost = None  # the outermost folder made for it (a first run's runs/<workflow>)
    if resume is not None:
        directory = resume_path
    else:
        made = run_dir is None or not Path(run_dir).exists()
        outermost = _outermost_missing(Path("runs") / workflow.name if run_dir is None else run_dir)
        directory = _new_run_dir(workflow, run_dir)
    record: dict[str, Any] = {
        "workflow": {
            "name": workflow.name,
            # as named (absolute, for a resume from elsewhere): workflows/example.yaml is a
            # link to the packaged example, whose path had stood here
            "file": os.path.abspath(path),
            "sha256": _sha256_file(str(path)),
            # the op modules beside it that the cluster was sent, as they were
            "op_modules": {file: _sha256_file(file) for file in workflow.op_files},
            "params": workflow.values,
            "param_sources": workflow.param_sources,
        },
        "run_dir": str(directory.resolve()),
        "config": {
            # absolute, so that --resume from another directory finds the same file
            "file": str(Path(cfg.file).resolve()) if cfg.file else None,
            "hash": cfg.config_hash(),
            "fingerprint": cfg.fingerprint()[0],
            "values": cfg.to_nested(),
            "sources": cfg.sources,
        },
        "versions": versions,
        # every attempt's changes (the versions above are the last attempt's alone)
        "software_changed": [
            *(earlier if isinstance(earlier := previous.get("software_changed"), list) else []),
            *(f"attempt {previous.get('attempts', 0) + 1}: {c}" for c in changed),
        ],
        "hardware": detect_hardware().to_dict(),
        "plan": {
            "backend": plan.backend,
            "layout": plan.layout,
            "notes": plan.notes,
            "unapplied": plan.unapplied,
        },
        "order": list(workflow.order),
        "steps": previous.get("steps", {}),
        "attempts": previous.get("attempts", 0) + 1,
        "report": report,
        "performance_report": None,
        "started": time.time(),
        "status": "running",
    }
    run = Run(workflow, cfg, plan, directory, record, progress, announce)
    # from before the first save to after the last: a SIGTERM or hangup in between had
    # ended the process where it stood, run.json still saying "running"
    with interrupts():
        held = run_dir_lock.hold(directory)  # before run.json is touched: it may be another run's
        t0 = time.perf_counter()
        try:
            run.save()
            if announce:  # before the cluster starts: an interrupted start can be resumed too
                announce(f"run directory: {directory}")
                if changed:
                    announce(
                        f"note: the software changed since the run's last attempt "
                        f"({', '.join(changed)}); the completed steps and the checkpoint are kept "
                        "as the earlier versions made them"
                    )
                if plan.backend != "attach":  # the attach line below lists its own
                    for note in plan.unapplied:  # set by the user and not done: say so now
                        announce(f"note: {note}")
                if beside:
                    announce(f"note: {beside}")
            with ExitStack() as stack:
                client = stack.enter_context(start_cluster(cfg, backend=backend))
                stack.enter_context(client.as_current())
                if report:
                    from distributed import performance_report

                    html = report_path(directory, record["attempts"])
                    stack.enter_context(performance_report(filename=str(html)))
                    record["performance_report"] = str(html)
                if plan.backend == "attach":  # its dashboard is where that cluster put it, if any
                    link = attached_dashboard(client)
                else:
                    link = client.dashboard_link if cfg["cluster.dashboard_address"] else None
                record["dashboard"] = link
                if announce:
                    if plan.backend == "attach":
                        announce(_attached_note(client, plan, cfg))
                    if link:
                        note = link if plan.backend == "attach" else dashboard_note(client, cfg)
                        announce(f"dashboard: {note}")
                record["cluster"] = _cluster_summary(client)
                counter.install(client)
                ship_modules(client, workflow.op_files)  # ops beside the workflow file
                run.watch = stack.enter_context(PauseWatch(client))
                run.save()
                run.run_steps(client)
            record["status"] = "completed"
        except ConfigError as exc:  # refused before any step ran (a bad node, a refused worker)
            record.update(status="rejected", error={"message": str(exc)})
            if resume is None and not record["steps"]:
                # a first run that nothing ran of leaves nothing behind: its run.json had made
                # the directory a run's, and the same --run-dir was then refused as not empty
                held.close()
                _discard(directory, made, outermost)
            raise
        except StepFailedError as exc:
            exc.run_dir = directory
            record.update(
                status="failed",
                error={
                    "step": exc.step,
                    "op": exc.op,
                    "message": f"{type(exc.error).__name__}: {exc.error}",
                },
            )
            raise
        except KeyboardInterrupt as exc:
            exc.run_dir = directory  # type: ignore[attr-defined]  # submit's resume hint
            record["status"] = "interrupted"
            for rec in record["steps"].values():
                if rec.get("status") == "running":
                    rec["status"] = "interrupted"
            raise
        except Exception as exc:  # outside any step (starting the cluster): not left "running"
            record.update(status="failed", error={"message": f"{type(exc).__name__}: {exc}"})
            raise
        finally:
            record["wall_seconds"] = time.perf_counter() - t0
            record["finished"] = time.time()
            try:
                if not held.closed:  # (closed: a rejected first run, discarded)
                    run.save()
            except OSError:
                # a full disk: when a step already failed (often of the same full disk), that error
                # is the one to report; run.json keeps its last save, which --resume reads
                if record["status"] not in ("failed", "interrupted", "rejected"):
                    raise
            finally:
                held.close()  # also when the record cannot be saved (a full disk)
    return record


def host_ops_note(workflow: Workflow, plan: ClusterPlan) -> list[str]:
    """What a CUDA cluster does to a workflow's built-in ops: they compute on the host.

    A CUDA cluster runs one worker per GPU with ``gpu.stream_count`` threads, so the built-in
    ops (the climate model's included) get that many CPU threads in all instead of every core,
    and nothing said so but the README. Said with the settings not applied (submit prints it).
    A user op's device is its own: not counted.
    """
    if plan.backend != "cuda":
        return []
    host = [name for name, step in workflow.steps.items() if step.info.builtin]
    if not host:
        return []
    layout = plan.layout
    threads = layout.get("processes", 0) * layout.get("threads_per_worker", 0)
    return [
        f"step(s) {', '.join(host)} compute on the CPU: this CUDA cluster runs them on its "
        f"{threads} worker thread(s) (gpu.stream_count per GPU), not on every core; leave "
        "gpu.devices empty (or --backend local) to give them all cores"
    ]


def _attached_note(client: Any, plan: ClusterPlan, cfg: Config) -> str:
    """Which running cluster the run went to, its workers, and what the config could not set."""
    threads = client.nthreads()
    origin = cfg.sources.get("cluster.scheduler_address", "default")
    line = (
        f"cluster: the running scheduler at {plan.address} ({origin}): "
        f"{len(threads)} workers, {sum(threads.values())} threads"
    )
    return "\n".join([line, *(f"  note: {n}" for n in plan.unapplied)])


def _cluster_summary(client: Any) -> dict[str, Any]:
    """The workers as they really run (threads, cores, allocator, memory, resources)."""
    facts = inspect_workers(client)
    keep = (
        "name",
        "host",
        "nthreads",
        "memory_limit",
        "resources",
        "affinity",
        "allocator",
        "config_hash",
        "clock_offset",
    )
    return {
        "scheduler": client.scheduler.address,
        "workers": {a: {k: f[k] for k in keep} for a, f in sorted(facts.items())},
    }
