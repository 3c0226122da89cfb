"""An iterative step's run: its windows, checkpoints, resume point and recovery after lost
workers.

:class:`IterativeSteps` is the part of :class:`~openclaw_dask.workflows.run.Run` that runs an
:class:`~openclaw_dask.workflows.context.IterativeOp`: at most ``distributed.sync_interval``
steps a window, each window's writes running while the next window computes, a checkpoint
committed after every window (with the files it stands on, so that a resume can tell it is
whole), and after a lost worker the step continues from the last checkpoint
(:mod:`~openclaw_dask.workflows.recovery`).
"""

from __future__ import annotations

import contextlib
import json
import numbers
import shutil
import traceback
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import dask
import xarray as xr
from dask.graph_manipulation import clone
from distributed import KilledWorker, futures_of

from openclaw_dask.atomicfile import atomic_write_text
from openclaw_dask.config import Config, ConfigError
from openclaw_dask.runtime.groups import forget_finished_groups
from openclaw_dask.runtime.terminal import signals_held
from openclaw_dask.workflows import zarrio
from openclaw_dask.workflows.context import (
    IterativeOp,
    StepContext,
    _datasets,
    _same_state,
    _state,
    _type_name,
)
from openclaw_dask.workflows.fingerprint import code_changed
from openclaw_dask.workflows.progress import ProgressNews, compute_with_progress, wait_checked
from openclaw_dask.workflows.recovery import (
    MAX_RECOVERIES,
    WorkersLostError,
    cluster_goes_on,
    lost_workers,
    recovery_entry,
    worker_addresses,
)
from openclaw_dask.workflows.resume_steps import CHECKPOINTS, checkpoint_of, read_checkpoint
from openclaw_dask.workflows.spec import StepSpec, Workflow, argument_problem


class IterativeSteps:
    """The iterative steps of a :class:`~openclaw_dask.workflows.run.Run`, which it inherits.

    These use the run's directory, config, workflow and news (below), its record
    (``save``), its cluster watch (``check``) and its test of a checkpoint
    (``_same``: :func:`~openclaw_dask.workflows.fingerprint.same_step`).
    """

    workflow: Workflow
    config: Config
    run_dir: Path
    show_progress: bool
    announce: Callable[[str], None] | None
    check: Callable[[], None] | None
    save: Callable[[], None]
    _same: Callable[[StepSpec, Mapping[str, Any], str], bool]

    def run_iterative_step(
        self,
        step: StepSpec,
        ctx: StepContext,
        progress: Any,
        bar: Any,
        rec: dict[str, Any],
        fingerprint: str,
        earlier: Mapping[str, Any] | None = None,
    ) -> None:
        """Run the windows of an iterative step; after a lost worker, continue from the last
        checkpoint (at most ``MAX_RECOVERIES`` times from one checkpoint:
        :mod:`~openclaw_dask.workflows.recovery`).

        ``earlier``: the step's record of the run's earlier attempt (a resume's), which says
        whether it committed a checkpoint to continue from (:func:`checkpoint_of`).
        """
        client = ctx.client
        ckpt_dir = self.run_dir / CHECKPOINTS / step.name
        recoveries: list[dict[str, Any]] = []
        recorded: Mapping[str, Any] = earlier or {}
        while True:
            before = worker_addresses(client)
            try:
                self._iterate(step, ctx, progress, bar, rec, fingerprint, recorded)
                return
            except Exception as exc:
                lost = lost_workers(client, before, exc)
                if not lost:
                    raise
                saved = read_checkpoint(ckpt_dir)
                at = int(saved["step"]) if saved and self._same(step, saved, fingerprint) else 0
                # a run of days may lose a worker now and then and still go on; only losses
                # with no checkpoint between them (a worker killed again and again, say for
                # memory, in the same window) end the step
                stuck = sum(r["from_step"] == at for r in recoveries)
                if stuck >= MAX_RECOVERIES:
                    raise WorkersLostError(
                        f"workers were lost {stuck + 1} times with no checkpoint after step "
                        f"{at:,} (the last: {', '.join(lost)}): killed, out of memory "
                        f"(memory.spill) or their host gone"
                    ) from exc
                # the traceback's frames hold the lost window's futures: release them
                traceback.clear_frames(exc.__traceback__)
                failed = exc
            said = (
                f"{step.name}: lost worker {', '.join(lost)}; continuing from step {at:,}, the "
                f"last checkpoint (recovery {stuck + 1} of {MAX_RECOVERIES} from it)"
            )
            entry = recovery_entry(lost, failed, from_step=at)
            self.go_on_after_loss(client, len(before), failed, rec, recoveries, entry, said)
            del failed  # (it may name the lost window's futures)
            recorded = rec  # this attempt's checkpoint now, if any

    def go_on_after_loss(
        self,
        client: Any,
        workers: int,
        failed: BaseException,
        rec: dict[str, Any],
        recoveries: list[dict[str, Any]],
        entry: dict[str, Any],
        said: str,
    ) -> None:
        """After a step lost workers: wait until the cluster can go on (``failed`` is raised
        again where it went away meanwhile), then record the recovery ``entry`` in ``rec``'s
        ``recoveries`` and say ``said`` (:func:`~.recovery.cluster_goes_on`)."""
        if not cluster_goes_on(client, workers):
            raise failed
        recoveries.append(entry)
        rec["recoveries"] = recoveries
        self.save()
        if self.announce:
            self.announce(said)

    def _iterate(
        self,
        step: StepSpec,
        ctx: StepContext,
        progress: Any,
        bar: Any,
        rec: dict[str, Any],
        fingerprint: str,
        recorded: Mapping[str, Any],
    ) -> None:
        """The windows from the last checkpoint (or step 0) to the end."""
        op: IterativeOp = step.info.target(ctx, **step.args)
        client = ctx.client
        total = _total_steps(op)
        interval = int(self.config["distributed.sync_interval"])
        ckpt_dir = self.run_dir / CHECKPOINTS / step.name
        start, state = self._resume_point(step, op, ckpt_dir, fingerprint, rec, client, recorded)
        code = step.info.code  # in each checkpoint: a resume says when it changed since
        rec.update(total_steps=total, sync_interval=interval)
        progress.update(bar, total=total, completed=start)
        pending: tuple[list[Any], dict[str, Any]] | None = None
        s = start
        news = ProgressNews(step.name, start, total) if not self.show_progress else None
        chain = 0  # tasks computed since the state was last read from a store (see CHAIN_TASKS)

        def settle(done: tuple[list[Any], dict[str, Any]]) -> None:
            self._commit(ckpt_dir, op, step, rec, *done)
            # each window makes new task groups, which the scheduler would keep to the end
            forget_finished_groups(client)
            progress.update(bar, completed=done[1]["step"])
            line = news.line(done[1]["step"]) if news else None
            if line and self.announce:
                self.announce(line)

        while s < total:
            n = min(interval, total - s)
            try:
                new_state, records = self._window(op, step, state, s, n)
            except Exception:
                # the window before is whole: its writes (in flight) finish and its checkpoint
                # commits, so its records stay in the outputs and a resume starts after it
                # (they were cancelled half-written, the records' store left at fill values)
                if pending:
                    with contextlib.suppress(Exception):  # the op's error is the one to say
                        settle(pending)
                raise
            chain += len(new_state.__dask_graph__())
            # submit the window and go on: its writes run while the next window computes
            # on the run's client; the optimisation runs on the scheduler, so it is this flag
            # (not a dask.config.set around the call) that decides whether it happens
            new_state, records = dask.persist(new_state, records, optimize_graph=op.optimize_graphs)
            if pending:
                settle(pending)
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
            if store is not None and chain >= CHAIN_TASKS:
                # the workers forget the window's tasks only once the state that descends from
                # them is forgotten: read from its checkpoint, it descends from none
                settle(pending)
                pending, chain = None, 0
                new_state = self._reread(op, ckpt_dir / store, client)
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
        with contextlib.suppress(OSError):  # left empty in a completed run's directory
            ckpt_dir.parent.rmdir()  # (another step's checkpoint there keeps it: not empty)

    def _window(
        self, op: IterativeOp, step: StepSpec, state: xr.Dataset, s: int, n: int
    ) -> tuple[xr.Dataset, dict[str, xr.Dataset]]:
        """Steps ``s`` to ``s + n`` as ``op.advance`` returns them (lazy), checked: a new state
        like the old one, records that fit the outputs written so far."""
        advanced = op.advance(state, s, n)
        if not (isinstance(advanced, tuple) and len(advanced) == 2):
            raise TypeError(
                f"{type(op).__name__}.advance returned {type(advanced).__name__}; "
                "expected (state, {output: records}), the records may be {}"
            )
        new_state, records = advanced
        # a None state had failed only in finish, which was blamed for it
        if not isinstance(new_state, xr.Dataset):
            got = "None" if new_state is None else _type_name(new_state)
            raise TypeError(
                f"{type(op).__name__}.advance returned {got} as the new state; expected an "
                "xarray.Dataset: return (state, {output: records}), the records may be {}"
            )
        _same_state(state, new_state, f"{type(op).__name__}.advance(state, {s}, {n})")
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
            misfit = zarrio.append_problems(ds, self.run_dir / f"{name}.zarr", op.append_dim)
            if misfit:
                raise TypeError(
                    f"{type(op).__name__}.advance(state, {s}, {n})'s records for {name!r} "
                    f"do not fit those in {name}.zarr: {'; '.join(misfit)}; each window's "
                    f"records hold the same variables, with the same sizes besides "
                    f"{op.append_dim!r} and the dtypes of the first (a cast with a loss is "
                    "refused)"
                )
        return new_state, records

    def _resume_point(
        self,
        step: StepSpec,
        op: IterativeOp,
        ckpt_dir: Path,
        fingerprint: str,
        rec: dict[str, Any],
        client: Any,
        recorded: Mapping[str, Any],
    ) -> tuple[int, Any]:
        """The step to start from and its state, persisted: the checkpoint's, or step 0's.

        A checkpoint is used only when it is whole as its dry run checks it
        (:func:`~openclaw_dask.workflows.resume_steps.checkpoint_of`, with ``recorded``, the
        step's record that says whether one was committed) and its state reads back. A
        damaged one is said in the dry run's words, and the step runs from step 0 (slower,
        never wrong).
        """
        found = checkpoint_of(step, recorded, fingerprint, self.record, self.config, self.run_dir)
        saved, damage = found.saved, found.damage
        if saved is not None:
            stored = zarrio.open_output(ckpt_dir / saved["store"])
            resumed = _state(op.resumed_state(stored), f"{type(op).__name__}.resumed_state")
            state = client.persist(_fresh(resumed))
            damage = _unreadable(state, self.check)
            if damage is None:
                for name, length in saved["extents"].items():
                    zarrio.truncate(self.run_dir / f"{name}.zarr", op.append_dim, length)
                at = int(saved["step"])
                # the checkpoint is this attempt's to continue from until it commits its own:
                # one interrupted before that had left run.json without it
                rec.update(resumed_from_step=at, checkpoint_step=at, checkpoint_committed=at)
                self.save()
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
                        f"{step.name}: continuing from its checkpoint at step {at:,}{edited}"
                    )
                return at, state
            found = replace(found, damage=damage)
        if found.damage is not None:
            rec["checkpoint_damaged"] = found.damage
            # the resume did not check the values of a step it was to continue (another run's
            # state to start from may be gone): starting over needs them, checked before the
            # checkpoint and outputs go
            self._check_start_over(step, f"; {found.said}, so the step starts over, which needs it")
            if self.announce:
                self.announce(f"{step.name}: {found.said}; running the step from step 0")
        elif found.edited and self.announce:
            self.announce(f"{step.name}: {found.passed_over}; running the step from step 0")
        shutil.rmtree(ckpt_dir, ignore_errors=True)
        for name in step.zarr_outputs:
            shutil.rmtree(self.run_dir / f"{name}.zarr", ignore_errors=True)
        initial = _state(op.initial_state(), f"{type(op).__name__}.initial_state")
        return 0, client.persist(_fresh(initial))

    def _reread(self, op: IterativeOp, store: Path, client: Any) -> xr.Dataset:
        """The state a committed checkpoint ``store`` holds, read back and persisted (as a
        resume reads it: the same bits, a lossless store of the same values)."""
        state = client.persist(
            _state(
                op.resumed_state(zarrio.open_output(store)), f"{type(op).__name__}.resumed_state"
            )
        )
        damage = _unreadable(state, self.check)
        if damage is not None:
            raise RuntimeError(f"{store}: the state just written cannot be read back: {damage}")
        return state

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
            # the checkpoint and the record's word of it together: a Ctrl-C between them had
            # left run.json a checkpoint behind the one a resume then continued from (1 of 4
            # interrupts in an audit)
            with signals_held():
                atomic_write_text(ckpt_dir / "checkpoint.json", json.dumps(info))
                # what a resume expects to find (checkpoint_step also counts the last window's
                # records, committed without a checkpoint): one gone since is said, not passed
                # over
                rec["checkpoint_committed"] = info["step"]
                rec["checkpoint_step"] = info["step"]
            for old in ckpt_dir.glob("state-*.zarr"):  # the older states: no longer needed
                if old.name != info["store"]:
                    shutil.rmtree(old, ignore_errors=True)
        rec["checkpoint_step"] = info["step"]
        self.save()


#: Tasks a step computes before the next window starts from its state read back from the
#: checkpoint just committed, instead of from the persisted state. A worker keeps the record
#: of a released task (its spec: ~28 KB pickled for a climate band's step at 0.5°) for as
#: long as a task that depends on it is known there (distributed's worker state machine), and
#: each window's first tasks depend on the last window's: at 0.25° on two bands every worker
#: had kept ~163 more a 5000-step window, ~0.7 GB a model year, as long as the run went. Read
#: back, the state descends from no task, and the workers forget the chain before it. With
#: 2000, measured there: at most ~1500 tasks known per worker, one read every ~6-7 windows.
CHAIN_TASKS = 2000


def _fresh(state: xr.Dataset) -> xr.Dataset:
    """``state`` under keys of its own, and so every window computed from it.

    An attempt after a lost worker builds the same graph as the one that failed, and Dask
    answers a key it still holds as erred with the old error at once: the step then failed
    with no worker lost. A key is released only when no future of it is left, and one held by
    a reference cycle or by the op itself lives on (CI saw it one run in ten).
    """
    return clone(state)


def _total_steps(op: IterativeOp) -> int:
    """``op.total_steps``, checked: a whole number of steps, at least 1.

    10.5 had run 10 steps without a word; 0 or -3 ran none and failed on the outputs that were
    never written ("wrote nothing to rec"), the cause unnamed.

    Raises
    ------
    TypeError
        Not an int (a float, a bool, text).
    ValueError
        Below 1.
    """
    total = op.total_steps
    if isinstance(total, bool) or not isinstance(total, numbers.Integral):
        raise TypeError(
            f"{type(op).__name__}.total_steps is {total!r} (a {type(total).__name__}); "
            "expected the number of steps to run, an int of at least 1"
        )
    if total < 1:
        raise ValueError(
            f"{type(op).__name__}.total_steps is {total}; expected the number of steps to run, "
            "an int of at least 1"
        )
    return int(total)


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
