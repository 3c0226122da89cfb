"""Parameters that put the planet far outside the climate the linear outgoing radiation fits.

A typed-in ``olr_intercept: -203.3`` (the sign lost) ran, completed with exit 0 and a planet
near 200 °C; ``A = -1e6`` gave 235,878 °C. The dry run and the run's start now say so.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from dask.utils import format_bytes

from openclaw_dask.workflows.climate.params import EBMParams
from openclaw_dask.workflows.climate.physics import north_analytic_solution
from openclaw_dask.workflows.runner import run_workflow
from tests.unit.test_s46_step_sizes import CLIMATE, dry_sizes


def sphere_mean(params: EBMParams) -> float:
    """North's closed-form equilibrium averaged over the sphere (``x = sin φ`` uniform on
    [-1, 1]) by Gauss-Legendre quadrature: exact for its polynomial in x."""
    x, w = np.polynomial.legendre.leggauss(8)
    return float(np.sum(w * north_analytic_solution(params, x)) / 2.0)


@pytest.mark.parametrize("intercept", [203.3, -203.3, 150.0])
def test_the_limiting_planets_means_are_north_s_solution_s_means(intercept: float) -> None:
    """Ice-free: the P2 albedo of the defaults, annual sun; frozen: the ice albedo
    everywhere. Each is a planet North's solution holds for (no ice feedback), so its sphere
    mean is the estimate's exact value; diffusion moves heat and leaves the mean alone."""
    params = EBMParams(A=intercept, seasonal_cycle=False)
    free, frozen = params.global_equilibria()
    assert free == pytest.approx(sphere_mean(EBMParams(A=intercept, ice_albedo=False)), abs=1e-9)
    ice = EBMParams(A=intercept, ice_albedo=False, albedo_free=params.albedo_ice, albedo_p2=0.0)
    assert frozen == pytest.approx(sphere_mean(ice), abs=1e-9)
    # the defaults: about 15 °C without ice, a snowball near -36 °C
    if intercept == 203.3:
        assert (round(free, 1), round(frozen, 1)) == (14.8, -36.5)
    assert EBMParams(A=intercept, ice_albedo=False).global_equilibria()[1] is None


def test_a_lost_sign_in_olr_intercept_is_said_before_the_run(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "c").mkdir()
    plain = dry_sizes(monkeypatch, tmp_path / "a")["forcing"]
    assert "note:" not in plain
    lost = dry_sizes(monkeypatch, tmp_path / "b", "params.olr_intercept=-203.3")["forcing"]
    note = lost.splitlines()[-1]
    assert note.startswith("note: with A = -203.3, B = 2.09 and Q = 334.4")
    assert "209.3 °C ice-free (158.1 °C frozen over)" in note
    assert "outside -100 to 100 °C" in note and "olr_intercept" in note
    # a snowball experiment (a dimmer sun, 1200 W m-2: about -43 °C frozen over) is no typo
    dim = dry_sizes(monkeypatch, tmp_path / "c", "params.solar_constant=1200")["forcing"]
    assert "note:" not in dim


def test_the_analysis_says_what_it_reads_and_writes(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``climate.analyse`` had said no size: at 0.25° and 50 years it reads 4.63 GiB."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    plain = dry_sizes(monkeypatch, tmp_path / "a")["analyse"]
    # 2 recorded years of the 2° grid's 90 x 180 float64 cells: 24 x 16,200 x 8 bytes
    assert plain.startswith("reads monthly.zarr of step simulate once: 24 months of the 90 x 180")
    assert f"{format_bytes(24 * 90 * 180 * 8)} before compression" in plain
    assert "annual zonal means (2 x 90)" in plain and "ice edges (2 years x 2)" in plain
    fine = dry_sizes(monkeypatch, tmp_path / "b", "params.resolution=0.25", "params.years=50")
    read = format_bytes(600 * 720 * 1440 * 8)
    assert f"600 months of the 720 x 1,440 grid (0.25°, 1,036,800 cells), {read}" in fine["analyse"]
    assert format_bytes(600 * 720 * 1440 * 8) == "4.63 GiB"


@pytest.mark.parametrize(
    ("resolution", "batch", "bands", "said"),
    [
        # 2°: 90 rows, fewer than two bands of K = 64 each
        # a task a month of steps (8,932 a year at 2°): the dry run had said "a window a task"
        (
            2,
            64,
            0,
            "latitude bands: 1, for the planned 2 worker threads: one band exchanges no halo, "
            "so a task advances a month of steps (at most 745)",
        ),
        # 0.25°: 720 rows in two bands; 2 inner sides x (64 + 1) / 2 rows = 65 of 720 a step
        (
            0.25,
            64,
            0,
            "latitude bands: 2 of 360 rows, for the planned 2 worker threads: 64 steps a task "
            f"(distributed.batch_size); the halo cones add {65 / 720:.1%} to the cell-updates",
        ),
        # as given: 3 bands of 4°'s 45 rows at K = 8: 4 sides x 4.5 rows = 18 of 45
        (
            4,
            8,
            3,
            "latitude bands: 3 of 15 rows, as given (bands): 8 steps a task "
            f"(distributed.batch_size); the halo cones add {18 / 45:.1%} to the cell-updates",
        ),
    ],
)
def test_the_dry_run_says_the_bands_and_their_halo_work(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    resolution: float,
    batch: int,
    bands: int,
    said: str,
) -> None:
    """The decomposition was said nowhere before a run (and recorded nowhere after it)."""
    workflow = tmp_path / "climate.yaml"
    text = CLIMATE.read_text()
    if bands:
        text = text.replace("      years:", f"      bands: {bands}\n      years:")
    workflow.write_text(text)
    sets = [
        "parallel.thread_pool_size=2",
        "parallel.processes=2",
        f"params.resolution={resolution}",
        f"distributed.batch_size={batch}",
    ]
    monkeypatch.chdir(tmp_path)
    lines = run_workflow(workflow, overrides=sets, dry_run=True)["sizes"]["simulate"].splitlines()
    assert [line for line in lines if line.startswith("latitude bands:")] == [
        line for line in lines if line.startswith(said)
    ]
    assert any(line.startswith(said) for line in lines), lines


def test_a_scheduler_given_by_address_leaves_the_bands_to_its_threads(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    record = run_workflow(CLIMATE, address="tcp://127.0.0.1:9", dry_run=True)
    assert (
        "latitude bands: chosen from the cluster's worker threads when the step starts"
        in record["sizes"]["simulate"]
    )
