"""``params.initial`` naming the wrong thing inside a climate run: the message names the
run's ``final.zarr``, which the user meant."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from openclaw_dask.config import ConfigError
from openclaw_dask.workflows.climate import LatLonGrid
from openclaw_dask.workflows.spec import load_workflow
from tests.conftest import ROOT

CLIMATE = ROOT / "workflows/climate.yaml"


def _run(folder: Path) -> Path:
    """A climate run's folder with the stores a user may name: final, monthly, forcing."""
    grid = LatLonGrid(10.0)
    coords = {"lat": grid.lat, "lon": grid.lon}
    field = np.full(grid.shape, 10.0)
    degc = {"units": "degC"}
    xr.Dataset({"T": (("lat", "lon"), field, degc)}, coords=coords).to_zarr(
        folder / "final.zarr", consolidated=False
    )
    monthly = xr.Dataset({"T": (("time", "lat", "lon"), field[None], degc)}, coords=coords)
    monthly.to_zarr(folder / "monthly.zarr", consolidated=False)
    forcing = xr.Dataset({"heat_capacity": (("lat", "lon"), field)}, coords=coords)
    forcing.to_zarr(folder / "forcing.zarr", consolidated=False)
    return folder


def _refusal(given: Path | str) -> str:
    with pytest.raises(ConfigError) as info:
        load_workflow(CLIMATE, {"initial": str(given)})
    [problem] = [str(p) for p in info.value.problems]
    assert ": steps.simulate.with.initial: " in problem, problem
    return problem


def test_an_array_inside_final_zarr_is_said_to_be_an_array(tmp_path: Path) -> None:
    """``final.zarr/T`` was zarr's own "An array already exists in store ... at path ."."""
    run = _run(tmp_path)
    for given in (run / "final.zarr" / "T", f"{run / 'final.zarr' / 'T'}/"):
        problem = _refusal(given)
        assert "a Zarr array, not a store; expected a run's final.zarr" in problem, problem
        assert f"did you mean '{run / 'final.zarr'}'?" in problem, problem
        assert "already exists" not in problem, problem


def test_another_store_of_the_run_points_to_its_final_zarr(tmp_path: Path) -> None:
    """``monthly.zarr`` (T over time) and ``forcing.zarr`` (no T) said what they held, not that
    ``final.zarr`` stood beside them."""
    run = _run(tmp_path)
    monthly = _refusal(run / "monthly.zarr")
    assert "T has dimensions ('time', 'lat', 'lon'), expected (lat, lon)" in monthly, monthly
    forcing = _refusal(run / "forcing.zarr")
    assert "not a climate run's final state (T(lat, lon))" in forcing, forcing
    for problem in (monthly, forcing):
        assert f"; did you mean '{run / 'final.zarr'}'? (from params.initial" in problem, problem
    # the final state itself is taken
    assert load_workflow(CLIMATE, {"initial": str(run / "final.zarr")}).values["initial"]
