"""One run of a workflow in its run directory: its steps in order, and its record.

:class:`Run` runs each step on the run's client (a map op's graph at once, an iterative op's
windows: :mod:`~openclaw_dask.workflows.iterative`), skips those a resume finds done
(:mod:`~openclaw_dask.workflows.resume_steps`), and rewrites ``run.json`` after every step and
checkpoint. A step whose op raised fails as :class:`StepFailedError`, naming the line of the
user's op module that raised it (:func:`raised_in`).
"""

from __future__ import annotations

import contextlib
import inspect
import os
import site
import sys
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import CancelledError
from pathlib import Path
from typing import Any

import xarray as xr
from distributed import KilledWorker

from openclaw_dask.atomicfile import atomic_write_text
from openclaw_dask.config import Config, ConfigError
from openclaw_dask.config.errors import did_you_mean
from openclaw_dask.runtime import counter, stall
from openclaw_dask.runtime.cluster import ClusterLostError, cluster_gone
from openclaw_dask.runtime.oom import (
    PauseWatch,
    WorkersOutOfMemoryError,
    memory_restarts,
    out_of_memory,
)
from openclaw_dask.runtime.stall import StallWatch
from openclaw_dask.translate import ClusterPlan
from openclaw_dask.workflows import strictjson, zarrio
from openclaw_dask.workflows.context import StepContext, _check_dataset, _return_hint, _type_name
from openclaw_dask.workflows.fingerprint import same_step, step_fingerprint
from openclaw_dask.workflows.iterative import IterativeSteps
from openclaw_dask.workflows.progress import compute_with_progress, step_progress
from openclaw_dask.workflows.recovery import (
    MAX_RECOVERIES,
    WorkersLostError,
    lost_workers,
    recovery_entry,
    worker_addresses,
)
from openclaw_dask.workflows.resume import RUN_RECORD
from openclaw_dask.workflows.resume_steps import done_before, rerun_reason
from openclaw_dask.workflows.spec import StepSpec, Workflow

#: What a step fails with when its workers died under it (not an error of its own code).
LOST_WORK = (ClusterLostError, KilledWorker, CancelledError)


def _earlier_attempts(before: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A step's record of the attempts before this one that did not complete it: theirs
    carried on, and the last one's status, error and times. A resume after an out-of-memory
    failure, with a larger budget, had cleared the step's error, and nothing said why the run
    took two attempts."""
    kept = before.get("earlier_attempts")
    earlier = list(kept) if isinstance(kept, list) else []
    if before.get("status") in ("failed", "interrupted", "rejected"):
        keys = ("status", "error", "started", "wall_seconds")
        earlier.append({key: before[key] for key in keys if key in before})
    return earlier


class StepFailedError(Exception):
    """A step's op raised: the run is marked failed (exit code 1)."""

    def __init__(self, step: str, op: str, error: BaseException, where: str | None = None) -> None:
        self.step, self.op, self.error = step, op, error
        #: the line of the user's op module that raised it (:func:`raised_in`), if one did
        self.where = where
        self.run_dir: Path | None = None  # set by run_workflow
        super().__init__(f"step {step!r} (op {op}) failed: {error_text(error)}")


def error_text(error: BaseException) -> str:
    """``TypeError: what it says``: how a step's error is said and recorded.

    Parameters
    ----------
    error
        What the step's op raised (or what it failed with).

    Returns
    -------
    str
        Its type's name and message. The message of an exception whose ``__str__`` itself
        raises is a placeholder that says so: that had escaped the step's failure handling as
        "error: RuntimeError: ...", exit 1, no step named and the step left "running".
    """
    try:
        message = str(error)
    except Exception as exc:  # (a KeyboardInterrupt still stops the run)
        message = f"<message unprintable: its __str__ raised {type(exc).__name__}>"
    return f"{type(error).__name__}: {message}"


class Run(IterativeSteps):
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
        #: notices tasks that run and none finishing: said, the run goes on
        self.stall: StallWatch | None = None
        #: the step running now (what a stall's note names)
        self.step_now: str | None = None

    @property
    def check(self) -> Callable[[], None] | None:
        """For the waits: says a stall's note (:class:`StallWatch`), and raises when the
        cluster cannot go on (:meth:`PauseWatch.check`)."""
        if self.watch is None and self.stall is None:
            return None
        return self._check

    def _check(self) -> None:
        if self.stall is not None and self.step_now is not None:
            stall.say(self.stall, self.announce, self.step_now, self.step_record(self.step_now))
        if self.watch is not None:
            self.watch.check()

    # -- record ---------------------------------------------------------------------------
    def save(self) -> None:
        """Rewrite run.json (atomically), as strict JSON: a NaN or infinity becomes null."""
        atomic_write_text(self.run_dir / RUN_RECORD, strictjson.dumps(self.record))

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
        for name in step.dir_outputs:
            # a folder the op had nothing to put in is still its output: without it the run
            # completed and every resume said "plots is missing" and ran the step again
            (self.run_dir / name).mkdir(exist_ok=True)
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
        """Run a map op's graph and write its outputs; after a lost worker whose results Dask
        could not compute again, run the step again from its start, at most
        ``MAX_RECOVERIES`` times (:mod:`~openclaw_dask.workflows.recovery`).

        A ``KilledWorker`` is not run again: Dask has already run that task again on other
        workers (``allowed-failures``), so the task itself kills them (out of memory, a crash
        in its code), and the step fails with that, as before. Nor is a step whose workers
        were restarted for memory, or whose task needs more than a worker's budget
        (``MemoryError``): the same chunks would need the same memory again (an audit's
        rechunk ran three times before failing as out of memory).
        """
        client = ctx.client
        recoveries: list[dict[str, Any]] = []
        while True:
            before, began = worker_addresses(client), time.time()
            try:
                self._map_once(step, ctx, progress, bar)
                return
            except Exception as exc:
                again = not isinstance(exc, KilledWorker | MemoryError)
                lost = lost_workers(client, before, exc) if again else []
                if not lost or memory_restarts(client, began - 1.0):
                    raise
                if len(recoveries) >= MAX_RECOVERIES:
                    raise WorkersLostError(
                        f"workers were lost {len(recoveries) + 1} times in the step (the last: "
                        f"{', '.join(lost)}): killed, out of memory (memory.spill) or their "
                        "host gone"
                    ) from exc
                traceback.clear_frames(exc.__traceback__)  # (the lost graph's futures)
                failed = exc
            said = (
                f"{step.name}: lost worker {', '.join(lost)}; running the step again from its "
                f"start (recovery {len(recoveries) + 1} of {MAX_RECOVERIES})"
            )
            entry = recovery_entry(lost, failed)
            self.go_on_after_loss(client, len(before), failed, rec, recoveries, entry, said)
            del failed

    def _map_once(self, step: StepSpec, ctx: StepContext, progress: Any, bar: Any) -> None:
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
            elif not folders:
                hint = _names_hint(
                    sorted(returned - set(expected)), sorted(set(expected) - returned)
                )
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

    def run_steps(self, client: Any) -> None:
        progress = step_progress(disable=not self.show_progress)
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
                before = dict(rec)
                rec.clear()
                rec.update(
                    op=step.op, status="running", fingerprint=fingerprint, started=time.time()
                )
                earlier = _earlier_attempts(before)
                if earlier:  # what the attempts before this one ended with (a resume's fix)
                    rec["earlier_attempts"] = earlier
                if step.info.code is not None:  # a user op's: a resume compares it
                    rec["code"] = step.info.code
                self.save()
                t0 = time.perf_counter()
                self.step_now = name
                ctx = self._context(step, client)
                tasks0 = counter.submitted(client)
                try:
                    if step.info.iterative:
                        self.run_iterative_step(step, ctx, progress, bar, rec, fingerprint, before)
                    else:
                        self.run_map_step(step, ctx, progress, bar, rec)
                    rec["tasks"] = counter.submitted(client) - tasks0
                    self._finish_step(step, rec)
                    if ctx.metrics:
                        rec["metrics"] = ctx.metrics
                except KeyboardInterrupt:
                    raise
                except ConfigError as exc:
                    # refused (a resume's step that must start over and needs what is gone):
                    # not left "running" beside the run's "rejected". An unfinished earlier
                    # attempt's record stays (its checkpoint is still there to continue from);
                    # a completed one's outputs may be half replaced, so that one is not kept
                    if before and before.get("status") != "completed":
                        rec.clear()
                        rec.update(before)
                    else:
                        rec.update(status="rejected", error=f"{type(exc).__name__}: {exc}")
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
                    elif isinstance(exc, MemoryError) and "memory_limit" in str(exc):
                        # the scheduler's refusal of a task whose inputs exceed a worker's
                        # budget: its figures are what to raise the budget to
                        error = WorkersOutOfMemoryError(
                            f"a task needs more memory than a worker's budget: {exc}"
                        )
                    if self.watch is not None and self.watch.error is not None:
                        # it cancelled the step's futures: whatever the op raised came of that
                        error = self.watch.error
                    rec.update(
                        status="failed",
                        error=error_text(error),
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


def _names_hint(extra: list[str], missing: list[str]) -> str:
    """`` (bonus is not among the step's outputs: ...; nothing for stats)``: which returned
    names the step does not list, and which listed ones came back empty, said apart (the two
    lists side by side left the user to compare them)."""
    said = []
    if extra:
        names = ", ".join(extra)
        stores = ", ".join(f"{e}.zarr" for e in extra)
        verb = "is" if len(extra) == 1 else "are"
        said.append(
            f"{names} {verb} not among the step's outputs: list {stores} there, or do not return it"
        )
    if missing:
        near = did_you_mean(extra[0], missing).removeprefix("; ") if len(extra) == 1 else ""
        said.append(f"nothing for {', '.join(missing)}" + (f"; {near}" if near else ""))
    return f" ({'; '.join(said)})" if said else ""
