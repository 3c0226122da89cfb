"""Single-process numpy reference integrator: the whole globe as one band, same kernels.

This is the ground truth the chunked Dask driver must reproduce bit for bit, and the baseline of
the single-core throughput benchmark. It also provides the per-step global energy budget.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from openclaw_dask.workflows.climate.grid import LatLonGrid
from openclaw_dask.workflows.climate.namespace import get_namespace
from openclaw_dask.workflows.climate.params import EBMParams, heat_capacity
from openclaw_dask.workflows.climate.physics import (
    advance_band,
    make_band_operators,
    radiative_energy,
    step_band,
)

__all__ = ["EnergyBudget", "reference_energy_budget", "run_reference"]


def _capacity_for(params: EBMParams, grid: LatLonGrid, capacity: Any, like: Any) -> Any:
    xp = get_namespace(like)
    if capacity is None:
        capacity = heat_capacity(params, grid)
    cap = xp.asarray(capacity, dtype=xp.float64)
    if cap.shape != grid.shape:
        raise ValueError(f"capacity has shape {cap.shape}, the grid is {grid.shape}")
    return cap


def run_reference(
    params: EBMParams,
    grid: LatLonGrid,
    nsteps: int,
    T0: Any,
    step0: int = 0,
    capacity: Any = None,
) -> Any:
    """Integrate the model on one process with numpy (or cupy, if ``T0`` is a cupy array).

    Parameters
    ----------
    params : EBMParams
        Parameters; ``dt=None`` is resolved here for this grid and capacity.
    grid : LatLonGrid
    nsteps : int
        Number of steps.
    T0 : array, shape ``grid.shape``
        Initial temperatures (°C) at step ``step0``.
    step0 : int, optional
        Global index of the first step (sets the season).
    capacity : array, optional
        Heat-capacity field (J m⁻² K⁻¹); default :func:`~.params.heat_capacity`.

    Returns
    -------
    array
        Temperatures at step ``step0 + nsteps`` (a new array).
    """
    cap = _capacity_for(params, grid, capacity, T0)
    params = params.resolved(grid, _host_min(cap))
    if tuple(T0.shape) != grid.shape:
        raise ValueError(f"T0 has shape {tuple(T0.shape)}, the grid is {grid.shape}")
    return advance_band(T0, cap, params, grid, 0, step0, nsteps)


def _host_min(a: Any) -> float:
    # setup-time only (never inside a step): the capacity minimum picks dt
    return float(a.min())


@dataclass(frozen=True)
class EnergyBudget:
    """Per-step global energy budget, as area-weighted global means in J m⁻².

    Attributes
    ----------
    storage_change : numpy.ndarray
        ``Δ Σ C T w`` over each step (``w`` = area fraction).
    radiative_input : numpy.ndarray
        ``Σ dt (absorbed − emitted) w`` at the start of each step.
    gross_flux : numpy.ndarray
        ``Σ dt |absorbed − emitted| w``: the scale for relative errors.
    """

    storage_change: np.ndarray
    radiative_input: np.ndarray
    gross_flux: np.ndarray

    @property
    def residual(self) -> np.ndarray:
        """``storage_change − radiative_input`` (diffusion's net contribution + round-off)."""
        return self.storage_change - self.radiative_input

    @property
    def relative_error(self) -> np.ndarray:
        """``|residual| / gross_flux`` per step."""
        return np.abs(self.residual) / self.gross_flux


def reference_energy_budget(
    params: EBMParams,
    grid: LatLonGrid,
    nsteps: int,
    T0: Any,
    step0: int = 0,
    capacity: Any = None,
) -> tuple[Any, EnergyBudget]:
    """Run the reference and record the global energy budget of every step.

    Returns
    -------
    T : array
        Temperatures at step ``step0 + nsteps``.
    budget : EnergyBudget
    """
    xp = get_namespace(T0)
    cap = _capacity_for(params, grid, capacity, T0)
    params = params.resolved(grid, _host_min(cap))
    ops = make_band_operators(params, grid, cap, 0)
    w = xp.asarray(grid.area_weights[:, None])
    T = xp.array(T0, dtype=xp.float64, copy=True)
    stored = np.empty(nsteps)
    forced = np.empty(nsteps)
    gross = np.empty(nsteps)
    for k, n in enumerate(range(step0, step0 + nsteps)):
        rad = radiative_energy(T, ops, n)
        before = T.copy()
        step_band(T, ops, n)
        # difference per cell first: the sum of C T is ~1e5 times larger than its change
        # the host copies below are budget diagnostics, outside the time-step kernel
        stored[k] = float(xp.sum(cap * (T - before) * w))
        forced[k] = float(xp.sum(rad * w))
        gross[k] = float(xp.sum(xp.abs(rad) * w))
    return T, EnergyBudget(stored, forced, gross)
