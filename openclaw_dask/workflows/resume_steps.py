"""What a resume does with each step of a run: skip it, continue it from its checkpoint, or run
it (again).

A completed step is skipped when it is the same step
(:mod:`~openclaw_dask.workflows.fingerprint`), by the same op code, with its outputs as it left
them, and every step it needs is skipped too; an iterative step that did not complete continues
from its committed checkpoint (``.checkpoints/<step>/checkpoint.json``). Said for a resume's dry
run (:func:`resume_plan`), and decided again by the run as each step comes
(:class:`~openclaw_dask.workflows.run.Run`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from openclaw_dask.config import Config
from openclaw_dask.config.errors import Problem
from openclaw_dask.workflows import zarrio
from openclaw_dask.workflows.fingerprint import code_changed, same_step, step_fingerprint
from openclaw_dask.workflows.spec import NAME_RE, StepSpec, Workflow
from openclaw_dask.workflows.strictjson import json_kind

CHECKPOINTS = ".checkpoints"


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


def checkpointed(run_dir: Path, record: Mapping[str, Any] | None = None) -> set[str]:
    """The steps of the run in ``run_dir`` that have a committed checkpoint (of any arguments),
    or whose record in its run.json (``record``) says they committed one, gone or damaged
    since: whether the resume continues it is known once the workflow is read
    (:func:`continued_steps`), and a step it starts over then says why
    (:func:`starting_over`)."""
    steps = (record or {}).get("steps")
    recorded = {
        name
        for name, step in (steps.items() if isinstance(steps, Mapping) else ())
        if isinstance(step, Mapping)
        and step.get("status") != "completed"
        and _committed(step) is not None
    }
    return recorded | {
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
    state was there. A damaged checkpoint (:func:`checkpoint_of`) is not continued, so its
    step's values are checked before anything starts; one whose state does not read back,
    found only when the step starts, asks them then
    (:meth:`~openclaw_dask.workflows.iterative.IterativeSteps._check_start_over`)."""
    steps = record.get("steps", {})
    continued = set()
    for name in workflow.order:
        step, recorded = workflow.steps[name], steps.get(name, {})
        if name in skipped or recorded.get("status") == "completed":
            continue
        if not all(need in skipped for need in step.needs):
            continue
        fingerprint = step_fingerprint(step, record, config)
        if checkpoint_of(step, recorded, fingerprint, record, config, run_dir).saved is not None:
            continued.add(name)
    return continued


def starting_over(
    problems: Sequence[Problem],
    record: Mapping[str, Any],
    run_dir: Path,
    workflow: Workflow | None = None,
    config: Config | None = None,
) -> list[Problem]:
    """``problems`` of a resume's workflow, each one of a step that began in an earlier attempt
    saying that the resume runs it from its start: its values were accepted then, so what is
    refused now is what that needs (another run's state, deleted since), and continuing the
    step would not have needed it. Given the ``workflow`` and its ``config``, a step whose
    checkpoint is damaged says so (:func:`checkpoint_of`), as the run would have."""
    steps = record.get("steps", {})
    said = []
    for problem in problems:
        parts = problem.key.split(".")
        name = parts[1] if len(parts) > 2 and parts[0] == "steps" and parts[2] == "with" else ""
        began = steps.get(name)
        if isinstance(began, Mapping) and began.get("status"):
            found = CheckpointFound()
            if workflow is not None and config is not None and name in workflow.steps:
                step = workflow.steps[name]
                fingerprint = step_fingerprint(step, record, config)
                found = checkpoint_of(step, began, fingerprint, record, config, run_dir)
            start = f"the resume runs step {name!r} from its start"
            if began.get("status") == "completed":
                note = f"{start} (it completed, but runs again)"
            elif found.damage is not None:
                note = f"{found.said}, so {start}"
            elif (run_dir / CHECKPOINTS / name / "checkpoint.json").exists():
                note = f"{start} (its checkpoint is not continued)"
            else:
                note = f"{start} (it has no checkpoint to continue from)"
            problem = replace(problem, message=f"{problem.message}; {note}, which needs it")
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

    As the run decides it (:func:`done_before`, :func:`checkpoint_of`): a checkpoint the run
    will find damaged is said here in the run's words, not promised as a continuation. Only
    reading its state back (a chunk garbled in place, at its recorded size) waits for the run,
    which needs a cluster for it.
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
        found = checkpoint_of(step, recorded, fingerprint, record, config, run_dir)
        if found.saved is not None:
            edited = " (its op's code changed since)" if code_changed(step, found.saved) else ""
            plan[name] = f"continue from its checkpoint at step {found.step:,}{edited}"
        elif found.damage is not None:
            plan[name] = f"{found.said}; running the step from step 0"
        elif found.edited:
            plan[name] = f"{found.passed_over}; running the step from step 0"
        else:
            plan[name] = "run"
    return plan


def read_checkpoint(ckpt_dir: Path) -> dict[str, Any] | None:
    """A step's committed checkpoint (``checkpoint.json``) with its state store, or ``None``.

    Read as a resume reads it (:func:`_load_checkpoint`): a worker's death in the step had
    continued from a file that the resume would refuse (a store named ``../x.zarr``, counts
    that are not numbers).
    """
    saved, _ = _load_checkpoint(ckpt_dir)
    return saved if saved is not None and (ckpt_dir / saved["store"]).exists() else None


@dataclass(frozen=True)
class CheckpointFound:
    """What a resume finds of a step's checkpoint (:func:`checkpoint_of`).

    Parameters
    ----------
    saved
        The checkpoint to continue from (``checkpoint.json``), whole as far as its files tell;
        ``None`` when there is none to continue from.
    damage
        Why the checkpoint the run committed cannot be used (``state-25000.zarr is
        missing``); ``None`` when it can, or when the run committed none of this step.
    step
        The step the checkpoint was committed at, when ``checkpoint.json`` or run.json tells.
    edited
        The checkpoint is whole but of the step before an edit (:func:`same_step` says no):
        not continued, and said, as a resume had run such a step from step 0 without a word.
    """

    saved: dict[str, Any] | None = None
    damage: str | None = None
    step: int | None = None
    edited: bool = False

    @property
    def said(self) -> str:
        """``the checkpoint at step 25,000 is damaged (<damage>)``: as the dry run and the run
        say it."""
        at = f"the checkpoint at step {self.step:,}" if self.step is not None else "its checkpoint"
        return f"{at} is damaged ({self.damage})"

    @property
    def passed_over(self) -> str:
        """Why an ``edited`` checkpoint is not continued, as the dry run and the run say it."""
        return (
            f"its checkpoint at step {self.step:,} is of the step before its op, arguments or "
            "inputs changed"
        )


def checkpoint_of(
    step: StepSpec,
    recorded: Mapping[str, Any],
    fingerprint: str,
    record: Mapping[str, Any],
    config: Config,
    run_dir: Path,
) -> CheckpointFound:
    """The checkpoint a resume continues ``step`` from, or why the one it committed is unusable.

    A checkpoint is continued when its ``checkpoint.json`` reads as one, it is of this step as
    it is now (:func:`same_step`), and its state store and the outputs it counted are as they
    were committed (:func:`checkpoint_damage`). One of another step (edited arguments) is
    passed over (``edited``, said by the dry run and the run): the step runs from step 0. A
    damaged one is said wherever the run committed one: the file is there, or the step's record in
    run.json (``recorded``, this step by its fingerprint, not completed) says one was
    (:func:`_committed`). A resume
    that found ``checkpoint.json`` cut short or its state store gone had run the step from
    step 0 and deleted the checkpoint and the step's outputs without a word, and its dry run
    had said "run", or promised to continue it.

    Parameters
    ----------
    step
        The step as the workflow is now.
    recorded
        The step's record in the run's run.json (the earlier attempt's).
    fingerprint, record, config
        As :func:`same_step` takes them.
    run_dir
        The run directory.
    """
    ckpt_dir = run_dir / CHECKPOINTS / step.name
    saved, why = _load_checkpoint(ckpt_dir)
    if saved is not None:
        at = int(saved["step"])
        if not same_step(step, saved, fingerprint, record, config):
            return CheckpointFound(step=at, edited=True)
        dim = getattr(step.info.target, "append_dim", None) if step.info.iterative else None
        damage = checkpoint_damage(run_dir, ckpt_dir, saved, dim)
        return CheckpointFound(None, damage, at) if damage else CheckpointFound(saved, None, at)
    unfinished = recorded.get("status") != "completed" and same_step(
        step, recorded, fingerprint, record, config
    )
    committed = _committed(recorded)
    if not unfinished or (committed is None and not (ckpt_dir / "checkpoint.json").exists()):
        return CheckpointFound()  # none committed, or one of another step: run from 0
    if not ckpt_dir.is_dir():
        why = f"{CHECKPOINTS}/{step.name} is missing"
    return CheckpointFound(None, why, committed)


def _committed(recorded: Mapping[str, Any]) -> int | None:
    """The step of the last checkpoint a step's record says was committed, or ``None``.

    ``checkpoint_committed``; a record from before it has ``checkpoint_step`` alone, the steps
    done, which is a committed checkpoint's while short of ``total_steps`` (the last window
    commits its records, not a checkpoint).
    """
    committed = recorded.get("checkpoint_committed")
    if _whole(committed):
        return committed
    done, total = recorded.get("checkpoint_step"), recorded.get("total_steps")
    return done if _whole(done) and _whole(total) and 0 < done < total else None


def checkpoint_damage(
    run_dir: Path, ckpt_dir: Path, saved: Mapping[str, Any], dim: str | None
) -> str | None:
    """What is missing or changed of a checkpoint's files since it was committed, or ``None``.

    Its state store, every file in its manifest (``files``; the state store's at their sizes:
    it is never written again, while an output's chunk may be, by an append), and the records
    each output held then (``extents`` along ``dim``, the op's ``append_dim``). Zarr reads a
    missing chunk as its fill value: a deleted chunk resumed into NaN fields that the run
    recorded as its result, and a deleted output lost the records before the checkpoint.
    """
    store = ckpt_dir / saved["store"]
    if not store.is_dir():
        return f"{store.relative_to(run_dir)} is missing"
    damage = zarrio.manifest_damage(
        run_dir, saved.get("files") or {}, lambda rel: rel.startswith(f"{CHECKPOINTS}/")
    )
    if damage is not None:
        return damage
    for name, length in saved["extents"].items():
        have = zarrio.extent(run_dir / f"{name}.zarr", dim) if dim else length
        if have < length:
            return f"{name}.zarr holds {have} of the {length} records it had"
    return None


def _whole(value: Any) -> bool:
    """Whether ``value`` is a count as run.json holds one (an int, not a bool)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _load_checkpoint(ckpt_dir: Path) -> tuple[dict[str, Any] | None, str]:
    """A step's ``checkpoint.json`` as a checkpoint, or ``None`` and what is wrong with it.

    The runner writes it whole (atomically), so a file that is not one was cut short or
    edited since: its state store is not trusted by name (``../..``) nor its counts by type.
    """
    file = ckpt_dir / "checkpoint.json"
    rel = f"{CHECKPOINTS}/{ckpt_dir.name}/checkpoint.json"
    try:
        saved = json.loads(file.read_text())
    except FileNotFoundError:
        return None, f"{rel} is missing"
    except OSError as exc:
        return None, f"{rel} cannot be read: {exc.strerror or exc}"
    except ValueError:  # (UnicodeDecodeError too)
        return None, f"{rel} is not JSON: cut short or overwritten"
    if not isinstance(saved, dict):
        return None, f"{rel} holds {json_kind(saved)}, not a checkpoint object"
    store, extents = saved.get("store"), saved.get("extents")
    if not _whole(saved.get("step")):
        return None, f"{rel} has no step count"
    if not (isinstance(store, str) and store == Path(store).name and store.endswith(".zarr")):
        return None, f"{rel} names no state store"
    if not isinstance(extents, dict) or not all(
        isinstance(name, str) and NAME_RE.match(name) and _whole(n) for name, n in extents.items()
    ):
        return None, f"{rel} has no record counts (extents)"
    if not isinstance(saved.get("files", {}), dict):
        return None, f"{rel} has no list of its files"
    return saved, ""
