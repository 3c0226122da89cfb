"""The closed form with the ice-free P2 albedo of the defaults (annual sun, no ice, no land):
``north_analytic_solution`` had refused it (its albedo varies as P2), though the equilibrium
is still a sum of three Legendre modes. (The workflow's switches now give North's constant
albedo: tests/integration/test_climate_analytic_switches.py.)"""

from __future__ import annotations

import numpy as np
import pytest

from openclaw_dask.workflows.climate import (
    EBMParams,
    LatLonGrid,
    north_analytic_solution,
    run_reference,
    zonal_mean,
)
from openclaw_dask.workflows.climate.physics import equilibrium_relaxation_steps


def test_the_p2_albedo_case_reaches_the_closed_form() -> None:
    grid = LatLonGrid(4.0)
    unresolved = EBMParams(seasonal_cycle=False, ice_albedo=False, land=False)
    assert unresolved.albedo_p2 != 0.0  # the defaults' albedo, not North's constant 0.3
    params = unresolved.resolved(grid)
    steps = equilibrium_relaxation_steps(params, tolerance=1e-4)
    profile = zonal_mean(run_reference(params, grid, steps, np.zeros(grid.shape)))
    exact = north_analytic_solution(params, grid.sin_lat)
    assert np.abs(profile - exact).max() < 0.1  # the 4° grid's discretisation error: 0.046 K
    # the global mean is T0, 14.8 degC with the workflow's defaults
    global_mean = float(exact @ grid.area_weights) * grid.nlon  # weights of one cell
    assert global_mean == pytest.approx(
        float(profile @ grid.area_weights) * grid.nlon, abs=0.03
    )  # P2 at the rows: not exactly 0 in the mean
    assert 14.5 < global_mean < 15.0, global_mean


def test_north_s_constant_albedo_case_has_no_p4_mode() -> None:
    """With ``albedo_p2 = 0`` the closed form is North's two modes, as before."""
    params = EBMParams.north_analytic()
    x = np.linspace(-1.0, 1.0, 41)
    absorbed = params.Q * (1.0 - params.albedo_free)
    t0 = (absorbed - params.A) / params.B
    t2 = absorbed * params.s2 / (params.B + 6.0 * params.D)
    two_modes = t0 + t2 * (3.0 * x**2 - 1.0) / 2.0
    assert np.allclose(north_analytic_solution(params, x), two_modes, rtol=0, atol=1e-12)
