"""The sun's two workflow parameters: ``solar_constant`` (``Q = S0/4``) and ``obliquity``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import xarray as xr

from openclaw_dask.workflows.runner import run_workflow
from tests.conftest import ROOT
from tests.integration.test_climate_analytic_switches import SWITCHES_OFF
from tests.integration.test_climate_workflow import QUICK

CLIMATE = ROOT / "workflows/climate.yaml"


def test_a_fainter_sun_is_north_s_formula_of_its_q(tmp_path: Path) -> None:
    """The solar constant reaches the physics, not only the attributes: North's closed form in
    the recorded ``Q`` (1250/4) is the run's equilibrium, as for the default sun."""
    sets = [*SWITCHES_OFF, "params.solar_constant=1250"]
    rec = run_workflow(CLIMATE, overrides=sets, run_dir=tmp_path)
    assert rec["status"] == "completed"
    zonal = xr.open_zarr(tmp_path / "zonal_mean.zarr")
    a = zonal.attrs
    assert a["Q"] == 312.5 and a["solar_constant"] == 1250.0
    x = np.sin(np.deg2rad(zonal["lat"].values))
    absorbed = a["Q"] * (1.0 - a["alpha"])
    p2 = (3.0 * x**2 - 1.0) / 2.0
    north = (absorbed - a["A"]) / a["B"] + absorbed * a["s2"] * p2 / (a["B"] + 6.0 * a["D"])
    assert np.abs(zonal["T"].isel(year=-1).values - north).max() < 0.05
    # (the default sun's formula misses by 7.3 K: (334.4 - 312.5) x 0.7 / 2.09)
    default = north + (334.4 - a["Q"]) * (1.0 - a["alpha"]) * (
        1.0 / a["B"] + a["s2"] * p2 / (a["B"] + 6.0 * a["D"])
    )
    assert np.abs(zonal["T"].isel(year=-1).values - default).min() > 5.0


def test_no_tilt_is_no_seasons(tmp_path: Path) -> None:
    """``obliquity: 0``: the sun stands over the equator all year, the daily mean insolation
    is ``S0/π cos φ`` at every step, and the seasons are gone, over land too."""
    # ten spin-up years: a 10 °C cold start's drift is then below 0.05 K a year
    sets = [*QUICK, "params.spinup_years=10", "params.obliquity=0"]
    rec = run_workflow(CLIMATE, overrides=sets, run_dir=tmp_path)
    assert rec["status"] == "completed"
    forcing = xr.open_zarr(tmp_path / "forcing.zarr")
    assert forcing.attrs["obliquity"] == 0.0
    lat = np.deg2rad(forcing["lat"].values)
    expected = 1337.6 / np.pi * np.cos(lat)
    assert np.allclose(forcing["insolation"].values, expected, rtol=1e-12, atol=0)
    amplitude = xr.open_zarr(tmp_path / "seasonal_amplitude.zarr")["T"]
    # (with today's 23.44° the land at 62-78 N swings by ~20 K)
    assert float(amplitude.max()) < 0.1, float(amplitude.max())
