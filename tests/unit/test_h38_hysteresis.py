"""Budyko-Sellers hysteresis from ``workflows/climate.yaml`` alone: today's sun holds two
climates, the present one from a mild start and a snowball from a cold one. The workflow gave
no way to start cold (``initial_temperature`` was not a parameter, nor the solar constant), so
its users could not find the second climate without writing an op."""

from __future__ import annotations

from pathlib import Path

import dask
import numpy as np
import pytest

from openclaw_dask.config import ConfigError, load_config
from openclaw_dask.workflows.climate import global_mean
from openclaw_dask.workflows.context import StepContext
from openclaw_dask.workflows.ops.climate import EnergyBalanceModel, forcing
from openclaw_dask.workflows.spec import load_workflow
from tests.conftest import ROOT

CLIMATE = ROOT / "workflows/climate.yaml"


def test_the_workflow_takes_a_start_temperature_and_checks_it() -> None:
    wf = load_workflow(CLIMATE, {"initial_temperature": "-40"})
    assert wf.steps["simulate"].args["initial_temperature"] == -40.0
    assert load_workflow(CLIMATE).steps["simulate"].args["initial_temperature"] == 10.0
    with pytest.raises(ConfigError) as info:
        load_workflow(CLIMATE, {"initial_temperature": "-500"})
    [problem] = [str(p) for p in info.value.problems]
    assert ": steps.simulate.with.initial_temperature: expected a finite temperature" in problem
    assert problem.endswith("(from params.initial_temperature, set by --set)"), problem


def _equilibrium(tmp_path: Path, start: float) -> float:
    """The global mean (degC) of the last of 6 model years at 10° from a cold start of
    ``start``, as the workflow's forcing and simulate steps run it (no cluster)."""
    config = load_config(None, use_search_path=False)
    made = forcing(StepContext("forcing", config, None, tmp_path, {}), resolution=10.0)
    inputs = {"forcing": {"forcing": made["forcing"]}}
    ctx = StepContext("simulate", config, None, tmp_path, {}, inputs)
    model = EnergyBalanceModel(ctx, years=1, spinup_years=5, initial_temperature=start)
    _, records = model.advance(model.initial_state(), 0, model.total_steps)
    (records,) = dask.compute(records, scheduler="sync")
    monthly = records["monthly"]["T"].values
    assert monthly.shape[0] == 12 and np.isfinite(monthly).all()
    return float(global_mean(monthly.mean(axis=0), model.grid))


def test_todays_sun_holds_a_present_climate_and_a_snowball(tmp_path: Path) -> None:
    warm = _equilibrium(tmp_path, 10.0)
    cold = _equilibrium(tmp_path, -40.0)
    assert 12.0 < warm < 16.0, warm  # the present climate: ~14 degC
    assert cold < -25.0, cold  # ice to the equator: the ice-albedo feedback holds it there
