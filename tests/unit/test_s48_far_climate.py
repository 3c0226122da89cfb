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
from tests.unit.test_s46_step_sizes import dry_sizes


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
