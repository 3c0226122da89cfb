"""A task that hangs while its worker answers: the run says so, with the line it is at."""

from __future__ import annotations

from pathlib import Path

import pytest

from openclaw_dask import run_workflow
from openclaw_dask.runtime import stall

#: A user op beside the workflow whose one task sleeps: a hang, as far as the run can tell.
SLOW_OPS = """
import time

import dask.array as da
import xarray as xr


def _nap(block):
    time.sleep(8)
    return block


def naps(ctx):
    field = da.zeros((4, 4), chunks=4).map_blocks(_nap, dtype=float)
    return {"napped": xr.Dataset({"t": (("y", "x"), field)})}
"""


def test_a_task_that_finishes_nothing_for_long_is_said_with_where_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Dask has no task timeout: a hung task had kept the run waiting for ever, the progress
    bar frozen and nothing said. After ``STALL_SECONDS`` (10 min; 2 s here) of tasks running
    and none finishing, the run says which tasks, on which workers and at which line of the
    user's code; the run goes on (a task may merely be long) and completes."""
    monkeypatch.setattr(stall, "STALL_SECONDS", 2.0)
    (tmp_path / "slow_ops.py").write_text(SLOW_OPS)
    wf = tmp_path / "slow.yaml"
    wf.write_text("name: slow\nsteps:\n  nap:\n    op: slow_ops:naps\n    outputs: [napped.zarr]\n")
    said: list[str] = []
    rec = run_workflow(
        wf,
        overrides=["cluster.dashboard_address=null", "parallel.processes=1"],
        run_dir=tmp_path / "run",
        report=False,
        announce=said.append,
    )
    assert rec["status"] == "completed"
    [note] = [line for line in said if "no task has finished" in line]
    assert note.startswith("note: step 'nap': no task has finished for "), note
    assert ", 1 running: " in note and " on tcp://127.0.0.1:" in note, note
    assert f", at {tmp_path / 'slow_ops.py'}, line 9, in _nap. A task may hang" in note, note
    assert note.endswith("Ctrl-C stops the run and `submit --resume` continues it"), note
    # and run.json keeps it, for a batch job's reader
    assert rec["steps"]["nap"]["stalls"] == [note.removeprefix("note: step 'nap': ")]
