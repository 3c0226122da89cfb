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
