"""A scientist's own forcing op (another land mask, another sun) feeding ``climate.ebm``:
what it must hold is said by name, not as "KeyError: 'resolution'"."""

from __future__ import annotations

from pathlib import Path

import pytest

from openclaw_dask.config import load_config
from openclaw_dask.workflows.context import StepContext
from openclaw_dask.workflows.ops.climate import EnergyBalanceModel, forcing


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
