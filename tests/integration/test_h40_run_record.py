"""What a run writes, and when, on a real cluster: run.json during a step, the checkpoints an
iterative step keeps, the record of a step that failed and then completed, and a window whose
writes failed (mutation audit of the workflow engine's run path: each test names the mutants
that survived without it)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from openclaw_dask.workflows import zarrio
from openclaw_dask.workflows.runner import StepFailedError, run_workflow

#: ops beside the workflow: a map op that reads run.json while it runs and fills a folder, and
#: an iterative op whose records fail in a task from ``fail_at`` on and whose finish fails
#: while a file BROKEN lies beside it
OPS = """
import json
from pathlib import Path

import dask.array as da
import numpy as np
import xarray as xr

from openclaw_dask.workflows.context import IterativeOp


def look(ctx):
    record = json.loads((ctx.run_dir / "run.json").read_text())
    ctx.metrics.update({name: step.get("status") for name, step in record["steps"].items()})
    (ctx.output_dir("notes") / "seen.txt").write_text("looked\\n")


def _check(block, step0, fail_at):
    if step0 >= fail_at:
        raise RuntimeError(f"the records of step {step0} cannot be made")
    return block


class Count(IterativeOp):
    outputs = ("counted", "steps")
    total_steps = 6

    def __init__(self, ctx, *, steps: int = 6, fail_at: int = 99):
        super().__init__(ctx)
        self.total_steps, self.fail_at = steps, fail_at

    def initial_state(self):
        return self.ctx.input("field")

    def advance(self, state, step0, nsteps):
        made = da.arange(step0, step0 + nsteps, chunks=nsteps)
        made = made.map_blocks(_check, step0, self.fail_at, meta=np.array((), dtype=made.dtype))
        return state + nsteps, {"steps": xr.Dataset({"n": ("time", made)})}

    def finish(self, state):
        if Path(__file__).with_name("BROKEN").exists():
            raise RuntimeError("broken at the end")
        return {"counted": state}
"""

SETS = ["cluster.dashboard_address=127.0.0.1:0", "distributed.sync_interval=2"]


def _workflow(folder: Path, module: str, count_args: str) -> Path:
    """The field, ``look`` (a folder output only) and ``Count`` with ``count_args``."""
    (folder / f"{module}.py").write_text(OPS)
    wf = folder / "counting.yaml"
    wf.write_text(
        "name: counting\nsteps:\n"
        "  field:\n    op: example.field\n    with: {size: 16, chunk: 16}\n"
        "    outputs: [field.zarr]\n"
        f"  look:\n    op: {module}:look\n    needs: [field]\n    outputs: [notes/]\n"
        f"  count:\n    op: {module}:Count\n    needs: [field, look]\n"
        f"    with: {count_args}\n    outputs: [counted.zarr, steps.zarr]\n"
    )
    return wf


def _record(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / "run.json").read_text())


def test_run_json_during_a_step_and_a_failed_step_s_record_once_it_completes(
    tmp_path: Path,
) -> None:
    """While a step runs, run.json already says so (a kill then leaves a true record); an op
    with folder outputs only may return None; an iterative step keeps one state store, its
    newest; a failed step's record keeps its time; once a resume completes it, its record
    holds no error of the failed attempt (mutants: the save before a step dropped, None refused
    for folder outputs, older state stores kept, the failed step's wall time dropped, the step
    record not cleared before it runs again, all unseen)."""
    wf = _workflow(tmp_path, "openclaw_test_h40_look_ops", "{steps: 6}")
    (tmp_path / "BROKEN").touch()
    run_dir = tmp_path / "run"
    with pytest.raises(StepFailedError, match="broken at the end"):
        run_workflow(wf, overrides=SETS, run_dir=run_dir, report=False)
    rec = _record(run_dir)
    assert rec["steps"]["look"]["metrics"] == {"field": "completed", "look": "running"}
    assert (run_dir / "notes/seen.txt").read_text() == "looked\n"
    count = rec["steps"]["count"]
    assert count["status"] == "failed" and "broken at the end" in count["error"]
    assert count["wall_seconds"] > 0 and "broken at the end" in count["traceback"]
    checkpoints = run_dir / ".checkpoints/count"
    assert json.loads((checkpoints / "checkpoint.json").read_text())["step"] == 4
    assert sorted(p.name for p in checkpoints.glob("state-*")) == ["state-4.zarr"]
    (tmp_path / "BROKEN").unlink()
    again = run_workflow(wf, overrides=SETS, resume=run_dir, report=False)
    count = again["steps"]["count"]
    assert count["status"] == "completed" and count["resumed_from_step"] == 4
    assert not {"error", "traceback"} & set(count), count
    assert _record(run_dir)["steps"]["count"] == count
    assert zarrio.open_output(run_dir / "steps.zarr")["n"].values.tolist() == list(range(6))
    assert not checkpoints.exists()


def test_a_window_whose_records_fail_on_a_worker_fails_the_step_at_its_checkpoint(
    tmp_path: Path,
) -> None:
    """The records of the window from step 2 fail in a task: the step fails with their error
    and its checkpoint stays at step 2, the last window written whole (mutant: a window's
    failed writes not raised: the step went on past them, committed checkpoints over the
    hole and completed with records missing)."""
    wf = _workflow(tmp_path, "openclaw_test_h40_failing_records_ops", "{steps: 6, fail_at: 2}")
    run_dir = tmp_path / "run"
    with pytest.raises(StepFailedError, match="the records of step 2 cannot be made"):
        run_workflow(wf, overrides=SETS, run_dir=run_dir, report=False)
    rec = _record(run_dir)
    assert rec["status"] == "failed" and rec["steps"]["count"]["status"] == "failed"
    checkpoint = json.loads((run_dir / ".checkpoints/count/checkpoint.json").read_text())
    assert checkpoint["step"] == 2 and checkpoint["extents"] == {"counted": 0, "steps": 2}
