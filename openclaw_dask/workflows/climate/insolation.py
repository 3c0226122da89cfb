"""Top-of-atmosphere insolation: orbital daily means through the year, or North's annual mean.

The model clock starts at step 0 = 1 January 00:00; time ``t = step · dt`` is computed from the
integer step index, so any split of a run (batches, checkpoints, restarts) sees exactly the same
forcing at the same step.

With a circular orbit the solar longitude advances uniformly, ``L = 2π (t − t_eq) / year``
(``t_eq`` the vernal equinox), the declination is ``sin δ = sin ε sin L`` and the daily-mean
insolation at latitude ``φ`` is (e.g. Hartmann 2016, *Global Physical Climatology*, eq. 2.15;
Berger 1978, J. Atmos. Sci. 35, 2362)::

    Q_day = (S0 / π) (h0 sin φ sin δ + cos φ cos δ sin h0),   cos h0 = −tan φ tan δ

with ``h0`` clipped to ``[0, π]`` (polar night, polar day). The model uses the normalised
distribution ``s = Q_day / Q`` with ``Q = S0/4``, whose global and annual mean is 1.

With ``seasonal_cycle`` off, ``s(x) = 1 + s2 P2(x)`` with ``x = sin φ`` and ``s2 = −0.482``
(North 1975a), the two-term Legendre fit of the annual mean.

The per-step functions work on an array namespace ``xp`` (numpy or cupy) and take host floats for
the orbital angles; nothing here copies device data to the host. :func:`insolation_steps` gives
many steps of host rows at once, compiled: the host's time step asks for a batch's steps in one
call, where a call per step cost ~20 µs of numpy overhead (a quarter of a 2° step).
"""

from __future__ import annotations

import math
from types import ModuleType
from typing import Any

import numba
import numpy as np

from openclaw_dask.workflows.climate.params import EBMParams

__all__ = [
    "annual_mean_insolation_factor",
    "daily_insolation_factor",
    "insolation_factor",
    "insolation_steps",
    "legendre_p2",
    "solar_declination",
    "step_time",
]


def legendre_p2(x: Any) -> Any:
    """Second Legendre polynomial ``P2(x) = (3x² − 1)/2`` (works on any array type)."""
    return 1.5 * x * x - 0.5


def step_time(params: EBMParams, step: int) -> float:
    """Model time in seconds at the start of step ``step`` (``step · dt``)."""
    if params.dt is None:
        raise ValueError("dt is not set; call params.resolved(grid) first")
    return step * params.dt


def solar_declination(params: EBMParams, t: float) -> float:
    """Solar declination (radians) at model time ``t`` seconds, circular orbit.

    Parameters
    ----------
    params : EBMParams
        Uses ``obliquity``, ``year_length`` and ``vernal_equinox_day``.
    t : float
        Seconds since 1 January 00:00 of year 0.

    Returns
    -------
    float
    """
    t_eq = params.vernal_equinox_day * 86400.0
    longitude = 2.0 * math.pi * ((t - t_eq) / params.year_length)
    return math.asin(math.sin(math.radians(params.obliquity)) * math.sin(longitude))


def daily_insolation_factor(
    sin_lat: Any, cos_lat: Any, declination: float, xp: ModuleType = np
) -> Any:
    """Daily-mean insolation divided by ``Q = S0/4`` at the given latitudes.

    Parameters
    ----------
    sin_lat, cos_lat : array
        ``sin φ`` and ``cos φ`` (cell centres, so ``cos φ > 0``).
    declination : float
        Solar declination in radians (a host float).
    xp : module
        Array namespace of ``sin_lat``.

    Returns
    -------
    array
        ``s = (4/π)(h0 sin φ sin δ + cos φ cos δ sin h0)``, same shape as ``sin_lat``.
    """
    sd, cd = math.sin(declination), math.cos(declination)
    a = sin_lat * sd
    b = cos_lat * cd
    # cos h0 = −tan φ tan δ, written without tan so it stays finite at any latitude
    h0 = xp.arccos(xp.clip(-a / b, -1.0, 1.0))
    return (4.0 / math.pi) * (h0 * a + b * xp.sin(h0))


def annual_mean_insolation_factor(sin_lat: Any, s2: float) -> Any:
    """North's annual-mean distribution ``1 + s2 P2(sin φ)``."""
    return 1.0 + s2 * legendre_p2(sin_lat)


def insolation_factor(
    params: EBMParams, sin_lat: Any, cos_lat: Any, step: int, xp: ModuleType = np
) -> Any:
    """Normalised insolation ``s(φ, t)`` at step ``step`` (annual mean if seasons are off).

    Always evaluate this on the full latitude column and slice afterwards: the value of a row
    then cannot depend on how rows were batched into bands (vectorised transcendental loops
    are not guaranteed to round the same in their main loop and their tail).
    """
    if not params.seasonal_cycle:
        return annual_mean_insolation_factor(sin_lat, params.s2)
    delta = solar_declination(params, step_time(params, step))
    return daily_insolation_factor(sin_lat, cos_lat, delta, xp)


def insolation_steps(
    params: EBMParams, sin_lat: np.ndarray, cos_lat: np.ndarray, step0: int, nsteps: int
) -> np.ndarray:
    """:func:`insolation_factor` of steps ``step0 .. step0 + nsteps - 1`` on the host, at once.

    Parameters
    ----------
    params : EBMParams
        Resolved parameters (``dt`` set).
    sin_lat, cos_lat : ndarray, shape (nlat,)
        The full latitude column (host arrays): a row's value then does not depend on how rows
        were batched into bands, nor a step's on how steps were batched into calls (each step
        is its own pass over the column).
    step0, nsteps : int
        The first step and how many.

    Returns
    -------
    ndarray, shape (nsteps, nlat)
        ``s(φ, t)`` of each step (read-only when ``seasonal_cycle`` is off: one row broadcast).
    """
    if not params.seasonal_cycle:
        mean = annual_mean_insolation_factor(np.asarray(sin_lat), params.s2)
        return np.broadcast_to(mean, (nsteps, mean.shape[0]))
    declinations = np.array(
        [solar_declination(params, step_time(params, n)) for n in range(step0, step0 + nsteps)]
    )
    return _daily_insolation_steps(
        np.ascontiguousarray(sin_lat, dtype=np.float64),
        np.ascontiguousarray(cos_lat, dtype=np.float64),
        declinations,
    )


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _daily_insolation_steps(
    sin_lat: np.ndarray, cos_lat: np.ndarray, declinations: np.ndarray
) -> np.ndarray:
    """:func:`daily_insolation_factor` for each declination, the same operations in the same
    order (libm's ``acos`` and ``sin`` for numpy's ``arccos`` and ``sin``)."""
    out = np.empty((declinations.shape[0], sin_lat.shape[0]))
    for s in range(declinations.shape[0]):
        sd, cd = math.sin(declinations[s]), math.cos(declinations[s])
        for j in range(sin_lat.shape[0]):
            a = sin_lat[j] * sd
            b = cos_lat[j] * cd
            h0 = math.acos(min(max(-a / b, -1.0), 1.0))
            out[s, j] = (4.0 / math.pi) * (h0 * a + b * math.sin(h0))
    return out
