"""Small analysis helpers: global, zonal, annual and monthly means, seasonal amplitude, ice edge.

The reductions are pure array expressions on the trailing ``(lat, lon)`` axes and a leading
time axis, so they work on numpy, cupy and dask arrays alike (lazy in, lazy out for dask).
:func:`ice_edge_latitude` is a host-side diagnostic on a zonal-mean profile.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from openclaw_dask.workflows.climate.grid import LatLonGrid
from openclaw_dask.workflows.climate.namespace import get_namespace, to_numpy
from openclaw_dask.workflows.reductions import sum_rows_first

__all__ = [
    "annual_mean",
    "global_mean",
    "ice_edge_latitude",
    "monthly_means",
    "seasonal_amplitude",
    "zonal_mean",
]


def global_mean(field: Any, grid: LatLonGrid) -> Any:
    """Area-weighted global mean over the trailing ``(lat, lon)`` axes.

    Summed row by row, then over the whole latitude column (:func:`sum_rows_first`), so the
    bits do not depend on how a dask ``field`` is chunked in latitude.

    Parameters
    ----------
    field : array, shape (..., nlat, nlon)
    grid : LatLonGrid

    Returns
    -------
    array, shape (...)
    """
    xp = get_namespace(field)  # numpy also for dask: the weights then broadcast lazily
    weights = xp.asarray(grid.area_weights[:, None])
    return sum_rows_first(field * weights)


def zonal_mean(field: Any) -> Any:
    """Mean along longitude (the last axis); rows have equal-area cells, so no weights."""
    return field.mean(axis=-1)


def _month_bounds(samples_per_year: int) -> list[tuple[int, int]]:
    # month m holds the samples k with floor(12 k / n) == m: 12 contiguous, near-equal runs
    n = samples_per_year
    starts = [-(-m * n // 12) for m in range(13)]
    return [(starts[m], starts[m + 1]) for m in range(12)]


def _complete_years(series: Any, samples_per_year: int) -> int:
    if samples_per_year < 12:
        raise ValueError(f"need at least 12 samples per year, got {samples_per_year}")
    years = series.shape[0] // samples_per_year
    if years < 1:
        raise ValueError(
            f"series has {series.shape[0]} samples, less than one year ({samples_per_year})"
        )
    return years


def annual_mean(series: Any, samples_per_year: int) -> Any:
    """Mean of each complete year of a time series (time on axis 0; a trailing partial year
    is dropped).

    Parameters
    ----------
    series : array, shape (ntime, ...)
        Equally spaced samples, the first at the start of a year.
    samples_per_year : int

    Returns
    -------
    array, shape (nyears, ...)
    """
    years = _complete_years(series, samples_per_year)
    whole = series[: years * samples_per_year]
    return whole.reshape((years, samples_per_year, *series.shape[1:])).mean(axis=1)


def monthly_means(series: Any, samples_per_year: int) -> Any:
    """Means over 12 equal "months" of each complete year.

    Returns
    -------
    array, shape (nyears, 12, ...)
    """
    xp = get_namespace(series)
    years = _complete_years(series, samples_per_year)
    per_year = []
    for y in range(years):
        base = y * samples_per_year
        months = [
            series[base + a : base + b].mean(axis=0) for a, b in _month_bounds(samples_per_year)
        ]
        per_year.append(_stack(months, xp, series))
    return _stack(per_year, xp, series)


def _stack(items: list[Any], xp: Any, like: Any) -> Any:
    if type(like).__module__.startswith("dask"):
        import dask.array as da

        return da.stack(items)
    return xp.stack(items)


def seasonal_amplitude(series: Any, samples_per_year: int) -> Any:
    """Max − min of the mean annual cycle of monthly means (averaged over complete years).

    Parameters
    ----------
    series : array, shape (ntime, ...)
    samples_per_year : int

    Returns
    -------
    array, shape (...)
    """
    cycle = monthly_means(series, samples_per_year).mean(axis=0)
    return cycle.max(axis=0) - cycle.min(axis=0)


def _edge_from_pole(profile: np.ndarray, lat: np.ndarray, threshold: float) -> float:
    """Edge of the ice cap around ``profile[0]`` (the pole row), moving equatorward."""
    ice = profile < threshold
    if not ice[0]:
        return float("nan")  # no cap at this pole
    open_rows = np.flatnonzero(~ice)
    if open_rows.size == 0:
        return 0.0  # ice all the way to the equator
    j = int(open_rows[0])
    t0, t1 = profile[j - 1], profile[j]
    return float(lat[j - 1] + (threshold - t0) * (lat[j] - lat[j - 1]) / (t1 - t0))


def ice_edge_latitude(T_zonal_mean: Any, lat: Any, threshold: float = -10.0) -> tuple[float, float]:
    """Latitude where the zonal-mean temperature crosses ``threshold``, per hemisphere.

    Starting at each pole and moving equatorward, the edge is the first crossing from
    ``T < threshold`` to ``T >= threshold``, linearly interpolated in latitude.

    Parameters
    ----------
    T_zonal_mean : array, shape (nlat,)
        Zonal (and usually annual) mean temperature, south to north, °C.
    lat : array, shape (nlat,)
        Latitudes in degrees, ascending.
    threshold : float
        Ice threshold (°C), North's −10 °C by default.

    Returns
    -------
    (south, north) : tuple of float
        Signed latitudes in degrees (the southern one negative). ``nan`` where the pole itself
        is warmer than the threshold (no ice cap); 0.0 where the cap reaches the equator.
    """
    profile = to_numpy(T_zonal_mean).astype(float)
    lat = to_numpy(lat).astype(float)
    n = profile.size
    south_rows = slice(0, n - n // 2)  # pole to equator (the middle row of an odd grid twice)
    north_rows = slice(n - 1, n // 2 - 1 if n // 2 > 0 else None, -1)
    south = _edge_from_pole(profile[south_rows], lat[south_rows], threshold)
    north = _edge_from_pole(profile[north_rows], lat[north_rows], threshold)
    return (south, north)
