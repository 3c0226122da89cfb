"""A scientist's own forcing op (another land mask, another sun) feeding ``climate.ebm``:
what it must hold is said by name, not as "KeyError: 'resolution'"."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from openclaw_dask.config import load_config
from openclaw_dask.workflows.climate import LatLonGrid
from openclaw_dask.workflows.context import StepContext
from openclaw_dask.workflows.ops.climate import TIME_ATTRS, EnergyBalanceModel, analyse, forcing


def _simulate(tmp_path: Path, made: dict) -> EnergyBalanceModel:
    config = load_config(None, use_search_path=False)
    ctx = StepContext("simulate", config, None, tmp_path, {}, {"grid": {"forcing": made}})
    return EnergyBalanceModel(ctx, years=1, spinup_years=0, source="grid")


def test_a_forcing_without_the_models_attributes_is_named(tmp_path: Path) -> None:
    config = load_config(None, use_search_path=False)
    made = forcing(StepContext("grid", config, None, tmp_path, {}), resolution=10.0)["forcing"]
    bare = made.drop_vars("heat_capacity")
    bare.attrs = {}
    with pytest.raises(ValueError) as info:
        _simulate(tmp_path, bare)
    said = str(info.value)
    assert said.startswith(
        "the output of step 'grid' lacks attribute 'resolution', attribute 'steps_per_year', "
        "attribute 'dt', variable 'heat_capacity' (lat, lon): climate.ebm reads the grid"
    ), said
    assert "keeping its attributes" in said
    # another sun in climate.forcing's dataset: taken, and the model runs under it
    sun = made.assign_attrs(Q=300.0, solar_constant=1200.0)
    assert _simulate(tmp_path, sun).params.Q == 300.0


def test_a_monthly_output_without_the_models_attributes_is_named(tmp_path: Path) -> None:
    """A user's own model op feeding ``climate.analyse``: "KeyError: 'resolution'" before."""
    config = load_config(None, use_search_path=False)
    grid = LatLonGrid(10.0)
    days = (np.arange(12) + 0.5) * 365.25 / 12
    field = np.full((12, *grid.shape), -20.0)  # ice everywhere: the edge at the equator
    coords = {"time": ("time", days, TIME_ATTRS), "lat": grid.lat, "lon": grid.lon}
    bare = xr.Dataset({"T": (("time", "lat", "lon"), field)}, coords=coords)
    for monthly, lacks in (
        (bare, "attribute 'resolution', attribute 'ice_threshold'"),
        (
            bare.rename(T="tas").assign_attrs(resolution=10.0, ice_threshold=-10.0),
            "variable 'T' (time, lat, lon), monthly means in degC",
        ),
    ):
        inputs = {"model": {"monthly": monthly}}
        ctx = StepContext("analyse", config, None, tmp_path, {}, inputs)
        with pytest.raises(ValueError) as info:
            analyse(ctx, source="model")
        said = str(info.value)
        assert said.startswith(f"the monthly output of step 'model' lacks {lacks}: "), said
    # with the attributes it is analysed
    fine = bare.assign_attrs(resolution=10.0, ice_threshold=-10.0)
    ctx = StepContext("analyse", config, None, tmp_path, {}, {"model": {"monthly": fine}})
    assert analyse(ctx, source="model")["ice_edge"]["north"].values.tolist() == [0.0]
