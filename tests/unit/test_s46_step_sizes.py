"""The size of a run, said before it starts: the ops' ``describe`` hook in the dry run.

A user complained that ``submit workflows/climate.yaml --dry-run --set params.resolution=0.25
params.years=50`` said the params and the plan and nothing of the run's size; a larger ``D``
(``--set params.diffusivity=1e5``) silently meant ~1.4e9 steps a year at 2°, learnt only from
the progress bar.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from dask.utils import format_bytes

from openclaw_dask.workflows.runner import run_workflow
from tests.conftest import ROOT

CLIMATE = ROOT / "workflows/climate.yaml"
#: the documented constants (``climate/params.py``): B and D of North et al. (1981), 2 m of
#: water for land, 50 m of sea water for the ocean, the julian year, 0.9 of the limit, a day
B, D = 2.09, 0.649
C_LAND, C_OCEAN = 2.0 * 1000.0 * 4186.0, 50.0 * 1025.0 * 3985.0
YEAR = 365.25 * 86400.0


def steps_per_year(resolution: float, diffusivity: float = D, land: bool = True) -> int:
    """The stability-limited steps a year, from the formula ``max_stable_dt`` documents:
    ``dt <= C_min / (B + 2 D max_j (cN_j + cS_j))``, ``cN_j = cos φ_{j+1/2} / (Δφ dx_j)``,
    0.9 of it and a day at most, a whole number of steps a year. Computed here from the grid's
    geometry, not with the product's grid or parameters."""
    n = round(180 / resolution)
    edges = np.deg2rad(-90.0 + np.arange(n + 1) * resolution)
    cos_edges = np.cos(edges)
    cos_edges[[0, -1]] = 0.0  # no flux through the poles
    sin_edges = np.sin(edges)
    sin_edges[0], sin_edges[-1] = -1.0, 1.0
    factor = np.max((cos_edges[1:] + cos_edges[:-1]) / (np.pi / n * np.diff(sin_edges)))
    dt = min(0.9 * (C_LAND if land else C_OCEAN) / (B + 2 * diffusivity * factor), 86400.0)
    return math.ceil(YEAR / dt)


def dry_sizes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, *sets: str) -> dict[str, str]:
    monkeypatch.chdir(tmp_path)  # the dry run checks ./runs, as the run would
    record = run_workflow(CLIMATE, overrides=list(sets), dry_run=True)
    assert record["status"] == "dry-run"
    return record["sizes"]


def test_the_formula_here_gives_the_numbers_the_model_s_comments_name() -> None:
    """The test's own formula against the figures the product documents: 3533 s at 2°, and
    85988 s without land (``MAX_AUTO_DT``'s comment)."""
    assert YEAR / steps_per_year(2.0) == pytest.approx(3533.09, abs=0.01)
    assert YEAR / steps_per_year(2.0, land=False) == pytest.approx(85988, abs=1)


@pytest.mark.parametrize(("resolution", "rows"), [(4.0, 45), (2.0, 90)])
def test_the_dry_run_says_the_simulation_s_steps_and_cell_updates(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, resolution: float, rows: int
) -> None:
    """At 4° and at the default 2°: the grid, 22 model years (20 spin-up + 2), the steps a
    year, in all, and the cell-updates, exact."""
    sizes = dry_sizes(monkeypatch, tmp_path, f"params.resolution={resolution}")
    spy = steps_per_year(resolution)
    assert spy == {4.0: 2239, 2.0: 8932}[resolution]  # (the formula's, written down once)
    steps = 22 * spy
    said = sizes["simulate"].splitlines()[0]
    assert said.startswith(f"the {rows} x {2 * rows} grid ({resolution:g}°, {2 * rows * rows:,} ")
    assert "22 model years (20 spin-up + 2 recorded)" in said
    assert f"{spy:,} time steps a year" in said
    assert f": {steps:,} steps, {steps * 2 * rows * rows:,} (" in said
    assert sizes["forcing"].startswith(f"the {rows} x {2 * rows} grid")


def test_the_steps_follow_the_diffusivity_the_years_and_the_land(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """10 x D, about 10 x the steps; no land, the ocean's capacity sets the step; the years
    given count, the spin-up too."""
    sizes = dry_sizes(
        monkeypatch,
        tmp_path,
        "params.resolution=4",
        "params.diffusivity=6.49",
        "params.years=3",
        "params.spinup_years=1",
    )
    spy = steps_per_year(4.0, diffusivity=6.49)
    assert spy == 22_308 and 9.9 < spy / steps_per_year(4.0) < 10  # 10 x D: B keeps it under
    assert f"4 model years (1 spin-up + 3 recorded), {spy:,} time steps a year" in sizes["simulate"]
    assert f": {4 * spy:,} steps, {4 * spy * 45 * 90:,} (" in sizes["simulate"]
    ocean = dry_sizes(monkeypatch, tmp_path, "params.land=false")["simulate"]
    assert f"{steps_per_year(2.0, land=False):,} time steps a year" in ocean
    assert steps_per_year(2.0, land=False) == 367


def test_the_outputs_and_the_state_are_said_in_bytes_before_compression(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """monthly.zarr's T(time, lat, lon) float64 with its coordinates, final.zarr's T(lat, lon)
    and the state's T and month_sum (float64) and its month's step count."""
    sizes = dry_sizes(monkeypatch, tmp_path, "params.resolution=4", "params.years=3")
    cells, coords = 45 * 90, (45 + 90) * 8
    monthly = 36 * (cells * 8 + 8) + coords  # each month: T and its time
    final = cells * 8 + coords
    state = 2 * cells * 8 + 8
    said = sizes["simulate"]
    assert (
        f"monthly.zarr {format_bytes(monthly)} (T(time 36, lat 45, lon 90) float64), "
        f"final.zarr {format_bytes(final)} (T(lat, lon) float64)"
    ) in said
    assert f"a state (T, month_sum: float64) holds {format_bytes(state)}" in said
    assert "every 5,000 steps (distributed.sync_interval): 11 windows" in said  # 23 x 2239
    assert "note:" not in said
    assert "openclaw-dask benchmark" in said  # the time: measured, not guessed here
    forcing = cells * (1 + 8) + 8 * (3 * 45 + 90)  # int8 mask, float64 capacity; 2 rows, coords
    assert f"forcing.zarr {format_bytes(forcing)} before compression" in sizes["forcing"]


def test_windows_shorter_than_a_batch_are_counted_and_said_slow(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``distributed.sync_interval: 1`` (a checkpoint every step) made 196,504 windows of the
    default run, each a graph, a persist and a checkpoint write, and said nothing: measured at
    2°, 10-step windows ran a model year 16.5x slower than 5000-step ones. The dry run counts
    them and says why it is slow; a real run says the note as it starts."""
    one = dry_sizes(monkeypatch, tmp_path, "distributed.sync_interval=1")["simulate"]
    steps = 22 * steps_per_year(2.0)
    assert f"a checkpoint every step (distributed.sync_interval): {steps:,} windows" in one
    assert one.splitlines()[-1].startswith(
        "note: windows of 1 step, fewer than distributed.batch_size (64), are slow"
    )
    # at the batch size a window is a halo batch: counted, nothing more
    at_k = dry_sizes(monkeypatch, tmp_path, "distributed.sync_interval=64")["simulate"]
    assert f"every 64 steps (distributed.sync_interval): {math.ceil(steps / 64):,} windows" in at_k
    assert "note:" not in at_k
    said: list[str] = []
    sets = ["params.resolution=4", "params.years=1", "params.spinup_years=0"]
    overrides = [*sets, "distributed.sync_interval=60", "cluster.dashboard_address=127.0.0.1:0"]
    record = run_workflow(
        CLIMATE, overrides=overrides, run_dir=tmp_path / "run", report=False, announce=said.append
    )
    assert record["status"] == "completed"
    assert (
        "note: simulate: windows of 60 steps, fewer than distributed.batch_size (64), are slow: "
        "each is a Dask graph, a persist and a checkpoint write"
    ) in "\n".join(said)


#: the user's own --set: 0.25° for 50 recorded years
USER_SETS = ("--set", "params.resolution=0.25", "params.years=50")


def test_submit_dry_run_prints_the_sizes_under_the_plan(tmp_path: Path) -> None:
    """The user's own command: 0.25° for 50 years, in the real console entry point."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENCLAW_")}
    result = subprocess.run(
        [sys.executable, "-m", "openclaw_dask", "submit", str(CLIMATE), "--dry-run", *USER_SETS],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={**env, "PYTHONPATH": str(ROOT), "HOME": str(tmp_path)},
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    spy = steps_per_year(0.25)
    steps, cells = 70 * spy, 720 * 1440
    first = next(i for i, line in enumerate(lines) if line.startswith("size: simulate: "))
    assert lines[first] == (
        "size: simulate: the 720 x 1,440 grid (0.25°, 1,036,800 cells), 70 model years "
        f"(20 spin-up + 50 recorded), {spy:,} time steps a year (dt {YEAR / spy:.6g} s): "
        f"{steps:,} steps, {steps * cells:,} ({steps * cells:.2e}) cell-updates".replace(
            "e+13", "e13"
        )
    )
    monthly = format_bytes(600 * (cells * 8 + 8) + (720 + 1440) * 8)
    assert lines[first + 1].startswith(f"  outputs before compression: monthly.zarr {monthly} ")
    cluster = next(i for i, line in enumerate(lines) if line.startswith("cluster: "))
    forcing = lines.index(next(line for line in lines if line.startswith("size: forcing: ")))
    assert cluster < forcing < first < lines.index("dry run: nothing started, nothing written")


OP = """
from openclaw_dask.workflows.context import IterativeOp


class Counted(IterativeOp):
    outputs = ("out",)

    def __init__(self, ctx, *, steps: int = 7, width: int = 3):
        super().__init__(ctx)

    @staticmethod
    def describe(args, run):
        if args["width"] < 0:
            raise RuntimeError("no width")
        batch = run.config["distributed.batch_size"]
        return f"{args['steps']} steps of {args['width']} cells\\nbatch {batch}"

    total_steps = 7

    def initial_state(self):
        raise NotImplementedError

    def advance(self, state, step0, nsteps):
        raise NotImplementedError


class Silent(Counted):
    outputs = ("out2",)
    describe = staticmethod(lambda args, run: None)
"""

WORKFLOW = """
name: sized
steps:
  counted:
    op: sized_ops:Counted
    with: {width: WIDTH}
    outputs: [out.zarr]
  silent:
    op: sized_ops:Silent
    outputs: [out2.zarr]
"""


def test_a_user_op_s_describe_gets_its_defaults_and_the_config_and_may_break(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The hook is generic: a user's IterativeOp beside the workflow says its size from its
    arguments (the defaults of those left out) and the run's config; one that says nothing is
    left out, and one whose hook raises is said to have failed, the dry run going on."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sized_ops.py").write_text(textwrap.dedent(OP))
    wf = tmp_path / "sized.yaml"
    wf.write_text(WORKFLOW.replace("WIDTH", "5"))
    record = run_workflow(wf, overrides=["distributed.batch_size=16"], dry_run=True)
    assert record["sizes"] == {"counted": "7 steps of 5 cells\nbatch 16"}
    wf.write_text(WORKFLOW.replace("WIDTH", "-1"))
    record = run_workflow(wf, dry_run=True)
    assert record["sizes"] == {
        "counted": "op sized_ops:Counted's describe failed: RuntimeError: no width"
    }


def test_a_resume_whose_land_mask_is_gone_says_no_size_rather_than_a_failure(
    tmp_path: Path,
) -> None:
    """The forcing step completed, then its land mask was deleted: the resume reads
    forcing.zarr and runs, and its size line had said "op climate.ebm's describe failed:
    ValueError: ...: no such Zarr store" over it."""
    from openclaw_dask.config import load_config
    from openclaw_dask.workflows.spec import load_workflow, step_sizes

    gone = {"land_mask": str(tmp_path / "gone.zarr")}
    workflow = load_workflow(CLIMATE, gone, settled={"forcing"})
    sizes = step_sizes(workflow, load_config(None), {"forcing"})
    # the analysis reads only the model's months: it still says its size (session 48)
    assert list(sizes) == ["analyse"]
    assert "describe failed" not in sizes["analyse"]


def test_outputs_larger_than_the_free_disk_are_said_before_the_run(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`--dry-run --set params.resolution=0.1 params.years=292271` had printed 165.36 TiB of
    monthly.zarr beside 69 GB free without a word; the dry run (and the run's start) says so
    when the outputs and two checkpoints, before compression, exceed the run directory's
    disk's free space (its nearest existing folder's: ./runs does not exist yet)."""
    from openclaw_dask.workflows import runner

    monkeypatch.setattr(runner, "free_bytes", lambda where: 10**6)  # 24 2° months: 3.1 MB
    simulate = dry_sizes(monkeypatch, tmp_path)["simulate"]
    assert "note: its outputs and checkpoints take up to " in simulate, simulate
    assert f"more than the {format_bytes(10**6)} free on the run directory's disk" in simulate
    monkeypatch.setattr(runner, "free_bytes", lambda where: 10**15)
    assert "note: its outputs" not in dry_sizes(monkeypatch, tmp_path)["simulate"]
    from openclaw_dask.workflows.rundir import free_bytes

    assert free_bytes(tmp_path / "runs" / "x") == free_bytes(tmp_path) > 0
