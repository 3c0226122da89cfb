"""Months of the climate model: which steps a monthly mean averages, whatever the windows.

A model year of ``n`` steps (365 at 10°, 2239 at 4°) rarely divides by 12: step ``k`` of a year
belongs to month ``floor(12 k / n)``. ``climate.ebm`` averages each month over exactly those
steps, however the runner cuts the run into ``distributed.sync_interval`` windows (a month's sum
travels in the state), and :func:`~openclaw_dask.workflows.climate.monthly_means` groups a
per-step series the same way.
"""

from __future__ import annotations

import math
from pathlib import Path

import dask
import numpy as np
import pytest

from openclaw_dask.config import load_config
from openclaw_dask.workflows.climate import advance_band, monthly_means
from openclaw_dask.workflows.context import StepContext
from openclaw_dask.workflows.ops.climate import EnergyBalanceModel, forcing


def _month_of(step: int, steps_per_year: int) -> int:
    return 12 * (step % steps_per_year) // steps_per_year


@pytest.mark.parametrize("steps_per_year", [13, 25, 365, 2239])
def test_monthly_means_group_the_steps_of_each_month(steps_per_year: int) -> None:
    n = steps_per_year
    steps = np.arange(2 * n, dtype=np.float64)
    months = monthly_means(steps[:, None], n)[..., 0]
    assert months.shape == (2, 12)
    for year in range(2):
        for month in range(12):
            own = [k for k in range(year * n, (year + 1) * n) if _month_of(k, n) == month]
            assert months[year, month] == np.mean(own), (year, month)


def _model(tmp_path: Path) -> tuple[EnergyBalanceModel, np.ndarray]:
    """``climate.ebm`` for one recorded year at 10° (366 steps, the automatic step's cap of a
    day; months of 30 and 31 steps),
    run without a cluster, and its forcing's heat capacity."""
    config = load_config(None, use_search_path=False)
    made = forcing(StepContext("forcing", config, None, tmp_path, {}), resolution=10.0)
    inputs = {"forcing": {"forcing": made["forcing"]}}
    ctx = StepContext("simulate", config, None, tmp_path, {}, inputs)
    model = EnergyBalanceModel(ctx, years=1, spinup_years=0)
    return model, np.asarray(made["forcing"]["heat_capacity"].values)


def _monthly(model: EnergyBalanceModel, window: int) -> np.ndarray:
    """The monthly means of a run cut into windows of ``window`` steps, as the runner cuts it
    (each window persisted before the next)."""
    state = model.initial_state()
    months, s = [], 0
    while s < model.total_steps:
        n = min(window, model.total_steps - s)
        state, records = model.advance(state, s, n)
        state, records = dask.persist(state, records, scheduler="sync")
        if records:
            months.append(records["monthly"]["T"].values)
        s += n
    return np.concatenate(months)


def test_monthly_means_are_the_months_steps_however_the_windows_cut_them(tmp_path: Path) -> None:
    model, capacity = _model(tmp_path)
    assert model.spy == 366 and model.total_steps == 366
    whole = _monthly(model, model.total_steps)
    assert whole.shape == (12, *model.grid.shape)
    # windows of 100 steps end inside months 3, 6 and 9: the month's sum carries over
    assert np.array_equal(_monthly(model, 100), whole)
    # each month is the mean of the temperatures after each of its own steps, no more, no less
    T = model.initial_state()["T"].values
    for month in range(12):
        first, stop = (math.ceil(m * model.spy / 12) for m in (month, month + 1))
        assert {_month_of(k, model.spy) for k in range(first, stop)} == {month}
        T, total = advance_band(
            T, capacity, model.params, model.grid, 0, first, stop - first, accumulate=True
        )
        assert np.array_equal(whole[month], total / (stop - first)), month


def test_each_monthly_mean_is_dated_at_the_middle_of_its_month(tmp_path: Path) -> None:
    """Month ``m`` of the first recorded year is dated ``(m + ½) · 365.25 / 12`` days after
    the spin-up: its own month's middle, not its start nor the next month's."""
    model, _ = _model(tmp_path)
    state, times = model.initial_state(), []
    for s in range(0, model.total_steps, 100):
        n = min(100, model.total_steps - s)
        state, records = model.advance(state, s, n)
        state, records = dask.persist(state, records, scheduler="sync")
        if records:
            times.extend(records["monthly"]["time"].values.tolist())
    expected = [(m + 0.5) * 365.25 / 12 for m in range(12)]
    np.testing.assert_allclose(times, expected, rtol=1e-12)


def test_the_forcing_records_the_years_mean_insolation_in_watts(tmp_path: Path) -> None:
    """The forcing's annual-mean insolation (W m⁻²) is ``S0/π (h0 sin φ sin δ + cos φ cos δ
    sin h0)`` averaged over the year's 365 steps at 10°, recomputed here from the circular
    orbit (declination ``asin(sin ε sin 2π (t − t_eq) / year)``); its global mean is ``Q``."""
    config = load_config(None, use_search_path=False)
    made = forcing(StepContext("forcing", config, None, tmp_path, {}), resolution=10.0)["forcing"]
    year, spy = made.attrs["year_length"], made.attrs["steps_per_year"]
    t = np.arange(spy) * (year / spy)
    sin_dec = math.sin(math.radians(made.attrs["obliquity"])) * np.sin(
        2 * np.pi * (t - made.attrs["vernal_equinox_day"] * 86400.0) / year
    )
    delta = np.arcsin(sin_dec)[:, None]
    phi = np.deg2rad(made["lat"].values)[None, :]
    h0 = np.arccos(np.clip(-np.tan(phi) * np.tan(delta), -1.0, 1.0))
    s0 = 4.0 * made.attrs["Q"]
    daily = (
        s0 / np.pi * (h0 * np.sin(phi) * np.sin(delta) + np.cos(phi) * np.cos(delta) * np.sin(h0))
    )
    np.testing.assert_allclose(made["insolation"].values, daily.mean(axis=0), rtol=1e-10)
    weights = made["area_weight"].values * made.sizes["lon"]
    assert float(made["insolation"].values @ weights) == pytest.approx(made.attrs["Q"], rel=2e-3)


# the blow-up itself: inf - inf in the albedo ramp, numpy's own warning of it
@pytest.mark.filterwarnings("ignore:invalid value encountered in subtract:RuntimeWarning")
def test_a_model_that_blew_up_fails_instead_of_writing_nan(tmp_path: Path) -> None:
    """``--set params.olr_intercept=-1e305`` completed with exit 0, its final state and monthly
    means NaN everywhere and ``global_mean_last_year: none`` (exploratory run, 2026-12-06): the
    planet absorbs 1e305 W m-2 from space, T overflows to inf, then NaN. ``finish`` now refuses
    a state that is not finite, so the run fails (exit 1) saying so."""
    config = load_config(None, use_search_path=False)
    made = forcing(
        StepContext("forcing", config, None, tmp_path, {}), resolution=10.0, olr_intercept=-1e305
    )
    inputs = {"forcing": {"forcing": made["forcing"]}}
    ctx = StepContext("simulate", config, None, tmp_path, {}, inputs)
    model = EnergyBalanceModel(ctx, years=1, spinup_years=0)
    state = model.initial_state()
    state, _ = model.advance(state, 0, model.total_steps)
    (state,) = dask.persist(state, scheduler="sync")
    with pytest.raises(ValueError) as caught:
        model.finish(state)
    assert str(caught.value) == (
        "the temperature is NaN or infinite in 648 of 648 cells after 366 steps: the model blew "
        "up (the monthly means already written hold it), so final.zarr is not written; its "
        "parameters (A = -1e+305, B = 2.09, D = 0.649, Q = 334.4) have no finite climate"
    )
    # a model that did not blow up finishes as before
    sane, _ = _model(tmp_path / "sane")
    start = sane.initial_state()
    assert np.isfinite(sane.finish(start)["final"]["T"].values).all()
