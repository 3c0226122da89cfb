"""The analytic check as the issue states it, through the workflow: the three switches, the
outputs' attributes and North's closed form computed from them by hand."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import xarray as xr

from openclaw_dask.workflows.climate import EBMParams, north_analytic_solution
from openclaw_dask.workflows.runner import run_workflow
from tests.conftest import ROOT

SWITCHES_OFF = [
    "cluster.dashboard_address=127.0.0.1:0",
    "params.resolution=2.0",
    "params.seasonal_cycle=false",
    "params.ice_albedo=false",
    "params.land=false",
    # the default 20 spin-up years: the global mean relaxes in ~3.1 years, 0.006 K is left
    "params.years=1",
]


def test_the_three_switches_reach_north_s_formula_from_the_recorded_attributes(
    tmp_path: Path,
) -> None:
    rec = run_workflow(ROOT / "workflows/climate.yaml", overrides=SWITCHES_OFF, run_dir=tmp_path)
    assert rec["status"] == "completed"
    zonal = xr.open_zarr(tmp_path / "zonal_mean.zarr")
    a = zonal.attrs
    # constant albedo: alpha is recorded under its name, nothing varies with latitude
    assert a["albedo_p2"] == 0.0 and a["albedo_free"] == a["alpha"] == 0.30
    alpha = a["alpha"]
    x = np.sin(np.deg2rad(zonal["lat"].values))
    p2 = (3.0 * x**2 - 1.0) / 2.0
    absorbed = a["Q"] * (1.0 - alpha)
    north = (absorbed - a["A"]) / a["B"] + absorbed * a["s2"] * p2 / (a["B"] + 6.0 * a["D"])
    last_year = zonal["T"].isel(year=-1).values
    # the issue's bound at 2° is 0.25 K; measured 0.016 (the poles' discretisation and the
    # spin-up's last 0.006 K)
    assert np.abs(last_year - north).max() < 0.05
    # the same numbers give the library's closed form
    library = north_analytic_solution(EBMParams.from_attrs(a), x)
    assert np.allclose(library, north, rtol=0, atol=1e-12)


def test_other_a_b_and_d_are_north_s_formula_of_theirs(tmp_path: Path) -> None:
    """``olr_intercept``, ``olr_slope`` and ``diffusivity`` reach the physics, not only the
    attributes: the equilibrium is North's closed form in the A, B and D the run recorded."""
    sets = ["params.olr_intercept=210", "params.olr_slope=1.8", "params.diffusivity=0.3"]
    climate = ROOT / "workflows/climate.yaml"
    rec = run_workflow(climate, overrides=[*SWITCHES_OFF, *sets], run_dir=tmp_path)
    assert rec["status"] == "completed"
    zonal = xr.open_zarr(tmp_path / "zonal_mean.zarr")
    a = zonal.attrs
    assert (a["A"], a["B"], a["D"]) == (210.0, 1.8, 0.3)
    x = np.sin(np.deg2rad(zonal["lat"].values))
    ours = north_analytic_solution(EBMParams.from_attrs(a), x)
    last_year = zonal["T"].isel(year=-1).values
    # B = 1.8 relaxes in 3.6 years: the 21 years leave ~0.01 K of the cold start
    assert np.abs(last_year - ours).max() < 0.05
    # (the defaults' formula misses by up to 13 K: a smaller B + 6D, a deeper P2 profile)
    defaults = north_analytic_solution(EBMParams.north_analytic(), x)
    assert np.abs(last_year - defaults).max() > 5.0
