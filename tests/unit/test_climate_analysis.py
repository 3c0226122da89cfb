"""Analysis helpers of the climate model, on numpy and on dask arrays."""

from __future__ import annotations

import math

import dask.array as da
import numpy as np
import pytest

from openclaw_dask.workflows.climate import (
    LatLonGrid,
    annual_mean,
    global_mean,
    ice_edge_latitude,
    monthly_means,
    seasonal_amplitude,
    zonal_mean,
)


def test_global_mean_integrates_exactly_and_lazily() -> None:
    grid = LatLonGrid(2.0)
    x = grid.sin_lat[:, None] * np.ones(grid.shape)
    assert global_mean(np.full(grid.shape, 3.5), grid) == pytest.approx(3.5, rel=1e-14)
    assert abs(global_mean(x, grid)) < 1e-15  # odd in latitude
    # midpoint quadrature of x² over each zone: error O(Δφ²)
    assert global_mean(x**2, grid) == pytest.approx(1.0 / 3.0, rel=2e-4)
    lazy = global_mean(da.from_array(x**2, chunks=(30, -1)), grid)
    assert isinstance(lazy, da.Array)
    assert lazy.compute() == pytest.approx(global_mean(x**2, grid), rel=1e-14)
    # a stack of fields -> one mean per field
    stack = np.stack([np.full(grid.shape, 1.0), np.full(grid.shape, 2.0)])
    assert np.allclose(global_mean(stack, grid), [1.0, 2.0])


def test_zonal_mean_averages_longitude() -> None:
    field = np.arange(12.0).reshape(3, 4)
    assert np.array_equal(zonal_mean(field), [1.5, 5.5, 9.5])


def _annual_cycle(samples_per_year: int, years: int, amplitude: np.ndarray) -> np.ndarray:
    # peaks in the middle of month 0: t = 1/24 year
    t = np.arange(years * samples_per_year) / samples_per_year
    cycle = np.cos(2 * math.pi * (t - 1.0 / 24.0))
    return 10.0 + t[:, None] + cycle[:, None] * amplitude[None, :]


def test_annual_and_monthly_means_and_amplitude() -> None:
    spy = 1200
    amplitude = np.array([0.0, 1.0, 5.0])
    series = _annual_cycle(spy, 3, amplitude)
    years = annual_mean(series, spy)
    assert years.shape == (3, 3)
    # the cycle averages out; the linear trend t leaves its mid-year value
    assert np.allclose(years, 10.0 + (np.arange(3) + 0.5 - 0.5 / spy)[:, None], atol=1e-12)
    months = monthly_means(series, spy)
    assert months.shape == (3, 12, 3)
    # a month-long mean of a cosine around its peak: sin(π/12) / (π/12)
    sinc = math.sin(math.pi / 12) / (math.pi / 12)
    trend = (np.arange(3 * spy) / spy)[:, None]
    amp = seasonal_amplitude(series - trend, spy)
    assert amp == pytest.approx(2 * sinc * amplitude, abs=1e-3)


def test_monthly_means_on_dask_stay_lazy() -> None:
    spy = 48
    series = _annual_cycle(spy, 2, np.array([2.0]))
    lazy = monthly_means(da.from_array(series, chunks=(16, 1)), spy)
    assert isinstance(lazy, da.Array)
    assert np.allclose(lazy.compute(), monthly_means(series, spy))
    with pytest.raises(ValueError, match="less than one year"):
        annual_mean(series[:10], spy)


def test_ice_edge_interpolates_per_hemisphere() -> None:
    lat = np.linspace(-89.0, 89.0, 90)
    # T = -10 exactly at |φ| = 60° and 50° in the south and north
    x = np.sin(np.deg2rad(lat))
    profile = np.where(
        lat > 0,
        20.0 - 30.0 * (x / math.sin(math.radians(50.0))) ** 2,
        20.0 - 30.0 * (x / math.sin(math.radians(60.0))) ** 2,
    )
    south, north = ice_edge_latitude(profile, lat)
    assert south == pytest.approx(-60.0, abs=0.05)  # linear interpolation between centres
    assert north == pytest.approx(50.0, abs=0.05)
    warm = ice_edge_latitude(np.full(90, 5.0), lat)
    assert math.isnan(warm[0]) and math.isnan(warm[1])
    assert ice_edge_latitude(np.full(90, -50.0), lat) == (0.0, 0.0)
    assert ice_edge_latitude(profile, lat, threshold=-100.0) == pytest.approx(
        (math.nan, math.nan), nan_ok=True
    )


@pytest.mark.parametrize("nlat", [90, 91])
def test_an_ice_edge_next_to_the_equator_is_found_in_either_hemisphere(nlat: int) -> None:
    """Ice everywhere but the rows at the equator (a nearly snowball climate): each hemisphere
    reads its own rows up to the equator, the middle row of an odd grid in both."""
    lat = np.linspace(-89.0, 89.0, nlat)
    near = np.abs(lat) < 1.5  # the row on each side of the equator (and the one on it)
    profile = np.where(near, 0.0, -20.0)
    south, north = ice_edge_latitude(profile, lat)
    edge = np.abs(lat[~near]).min()  # the last ice rows, then -10 halfway to the next row
    open_row = np.abs(lat[near]).max()
    assert 0.0 < north < edge and north == pytest.approx((edge + open_row) / 2)
    assert south == pytest.approx(-north, abs=1e-9)


def test_seasonal_amplitude_is_of_the_cycle_averaged_over_the_years() -> None:
    """Two years whose cycles have amplitudes of about 2 and 6 K: the mean cycle's is about
    4 K (the average of the years, not the last year's), computed here from a sine sampled 24
    times a year, whose monthly means (two samples each) are those of its own months."""
    per_year = 24
    phase = 2 * np.pi * (np.arange(per_year) + 0.5) / per_year
    cycle = np.sin(phase)
    series = np.concatenate([1.0 * cycle, 3.0 * cycle])[:, None]
    months = cycle.reshape(12, 2).mean(axis=1)
    expected = 2.0 * (months.max() - months.min())
    assert seasonal_amplitude(series, per_year)[0] == pytest.approx(expected, rel=1e-12)


def test_a_year_of_fewer_than_12_samples_is_refused() -> None:
    """Twelve months need twelve samples a year at least (a month of none has no mean)."""
    for analyse in (annual_mean, monthly_means, seasonal_amplitude):
        with pytest.raises(ValueError, match="need at least 12 samples per year, got 11"):
            analyse(np.zeros((22, 3)), 11)


def test_zonal_mean_averages_the_last_axis_of_a_time_series() -> None:
    """A (time, lat, lon) series of monthly fields is averaged along longitude, its last
    axis: each row's mean of ``lon``, whatever the time."""
    lon = np.arange(6.0)
    series = np.broadcast_to(lon, (2, 3, 6)) + np.arange(3.0)[None, :, None]
    means = zonal_mean(series)
    assert means.shape == (2, 3)
    assert np.array_equal(means, np.broadcast_to(2.5 + np.arange(3.0), (2, 3)))
    lazy = zonal_mean(da.from_array(series, chunks=(1, 3, 6)))
    assert np.array_equal(lazy.compute(), means)
