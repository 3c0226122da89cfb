"""A climate run whose initial state (another run's, ``params.initial``) was deleted under it:
``submit --resume`` continues from the checkpoint, and only a step that has to start over
needs the state; a resume given another value says the new run to start instead."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from pathlib import Path

import numpy as np
import xarray as xr

from openclaw_dask.workflows.climate.grid import LatLonGrid
from openclaw_dask.workflows.ops.climate import _coords
from tests.conftest import ROOT
from tests.integration.test_workflow_run import (
    QUIET,
    record_of,
    start_in_own_group,
    submit,
    wait_for_checkpoint,
)

CLIMATE = ROOT / "workflows/climate.yaml"


def _state_at(folder: Path) -> Path:
    """A climate state to start from: ``folder/final.zarr``, 12 degC over the sphere at 10°."""
    grid = LatLonGrid(10.0)
    field = (("lat", "lon"), np.full(grid.shape, 12.0), {"units": "degC"})
    store = folder / "final.zarr"
    xr.Dataset({"T": field}, coords=_coords(grid)).to_zarr(store, consolidated=False)
    return store


def test_a_run_whose_initial_state_was_deleted_continues_from_its_checkpoint(
    tmp_path: Path,
) -> None:
    start = _state_at(tmp_path / "start")
    run_dir = tmp_path / "run"
    sets = ["params.resolution=10", "params.years=2", "params.spinup_years=0"]
    sets += [f"params.initial={start.parent}", "distributed.sync_interval=20"]
    proc = start_in_own_group(
        run_dir,
        [*QUIET, "--no-report", "--set", *sets],
        CLIMATE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    seen = wait_for_checkpoint(proc, run_dir, 100, name="simulate")
    assert 100 <= seen < 730, f"the run should be mid-way, checkpoint at {seen}"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    killed_at = json.loads((run_dir / ".checkpoints/simulate/checkpoint.json").read_text())["step"]

    # a resume given another value: one line, saying how to start a new run from this one
    longer = submit("--resume", str(run_dir), "--set", "params.years=3")
    assert longer.returncode == 2, longer.stderr
    assert f"once finished (`openclaw-dask submit --resume {run_dir}`): `openclaw-dask " in (
        longer.stderr
    ), longer.stderr
    ends = f"params.years=3 params.initial={run_dir} params.spinup_years=0 distributed.sync"
    assert ends in longer.stderr and len(longer.stderr.splitlines()) == 2, longer.stderr

    without = shutil.copytree(run_dir, tmp_path / "without", symlinks=True)
    shutil.rmtree(without / ".checkpoints")
    damaged = shutil.copytree(run_dir, tmp_path / "damaged", symlinks=True)
    state = damaged / f".checkpoints/simulate/state-{killed_at}.zarr"
    next(p for p in sorted(state.rglob("c/*/*")) if p.is_file()).unlink()
    shutil.rmtree(start.parent)

    resumed = submit("--resume", str(run_dir), *QUIET, "--no-report")
    assert resumed.returncode == 0, resumed.stderr
    rec = record_of(run_dir)
    assert rec["status"] == "completed"
    assert rec["steps"]["simulate"]["resumed_from_step"] == killed_at
    for output in ("monthly.zarr", "final.zarr"):  # where it started, as the first attempt said
        assert xr.open_zarr(run_dir / output).attrs["initial_state"] == str(start), output

    # a step that has to start over needs the state: said in one line, nothing lost
    said = f"steps.simulate.with.initial: {start.parent}: no such Zarr store or run directory"
    for copy, why in (
        # run.json counts a checkpoint: one gone is said as damaged, as the run says it
        (without, "is damaged (.checkpoints/simulate is missing), so the resume runs step "),
        (damaged, f"the checkpoint at step {killed_at:,} is damaged ("),
    ):
        files = sorted(p for p in copy.rglob("*") if p.name != "run.json")
        step_before = record_of(copy)["steps"]["simulate"]
        again = submit("--resume", str(copy), *QUIET, "--no-report")
        assert again.returncode == 2, again.stderr
        [line] = [line for line in again.stderr.splitlines() if line.startswith("error:")]
        assert said in line and why in line, again.stderr
        assert "Traceback" not in again.stderr
        assert sorted(p for p in copy.rglob("*") if p.name != "run.json") == files
        # the refused step's record is as it was (its checkpoint step, its attempt): it had
        # been cleared for the new attempt and left "running" beside the run's "rejected"
        assert record_of(copy)["steps"]["simulate"] == step_before, copy

    # the finished run, given more years: refused, saying the run that goes on from its end
    longer = submit("--resume", str(run_dir), "--set", "params.years=3")
    assert longer.returncode == 2, longer.stderr
    assert f"; or one that starts where this run ended: `openclaw-dask submit {CLIMATE}" in (
        longer.stderr
    ), longer.stderr
