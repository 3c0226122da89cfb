"""``params.land_mask``: a land mask of the user's, from a Zarr store on disk, through the
climate workflow on a real cluster."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import xarray as xr

from openclaw_dask.workflows.climate import EBMParams, LatLonGrid
from openclaw_dask.workflows.runner import run_workflow
from tests.conftest import ROOT
from tests.unit.test_land_mask_store import one_degree


def test_a_user_s_mask_is_the_run_s_land(tmp_path: Path) -> None:
    """An Arctic continent (north of 60°, on a 1° grid) is the 4° run's land: its heat
    capacity, its record of where the mask came from, and seasons far larger in the north,
    where the land is, than over the southern ocean at the same latitudes."""
    mask_store = one_degree(tmp_path)
    sets = [
        "cluster.dashboard_address=127.0.0.1:0",
        "params.resolution=4.0",
        "params.spinup_years=1",
        "params.years=1",
        f"params.land_mask={mask_store}",
    ]
    rec = run_workflow(ROOT / "workflows/climate.yaml", overrides=sets, run_dir=tmp_path / "run")
    assert rec["status"] == "completed"
    forcing = xr.open_zarr(tmp_path / "run/forcing.zarr")
    grid = LatLonGrid(4.0)
    land = forcing["land_mask"].values.astype(bool)
    assert np.array_equal(land.all(axis=1), grid.lat >= 60) and not land[grid.lat < 60].any()
    assert forcing["land_mask"].attrs["source"] == str(Path(mask_store).resolve())
    params = EBMParams()
    capacity = forcing["heat_capacity"].values
    assert np.all(capacity[land] == params.heat_capacity_land)
    assert np.all(capacity[~land] == params.heat_capacity_ocean)
    amplitude = xr.open_zarr(tmp_path / "run/seasonal_amplitude.zarr")["T"]
    north = float(amplitude.sel(lat=slice(62, 78)).mean())
    south = float(amplitude.sel(lat=slice(-78, -62)).mean())
    assert north > 2 * south, (north, south)
