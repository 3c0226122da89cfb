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
from dataclasses import replace
from pathlib import Path
from typing import Any

from openclaw_dask.config import Config
from openclaw_dask.config.errors import Problem
from openclaw_dask.workflows import zarrio
from openclaw_dask.workflows.fingerprint import code_changed, same_step, step_fingerprint
from openclaw_dask.workflows.spec import StepSpec, Workflow

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
    (:meth:`~openclaw_dask.workflows.iterative.IterativeSteps._check_start_over`)."""
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
