"""Time-step kernels of the energy-balance model, shared by the numpy reference and the Dask driver.

Discretisation
--------------
Finite volumes on the regular lat-lon grid of :class:`~.grid.LatLonGrid` (unit sphere). The
state is ``T`` (°C) at cell centres; the prognostic quantity is the column energy ``E = C T``
(J m⁻²), so every term below is an energy increment per unit area over one step ``dt``:

``ΔE = dt [Q s a(T) − A − B T] + ΔE_merid + ΔE_zonal``,   ``T ← T + ΔE / C``.

*Meridional diffusion*: explicit (forward Euler) 3-point flux form. The flux through the face
between rows ``j`` and ``j+1`` is ``D cos φ_{j+1/2} (T_{j+1} − T_j) / Δφ``; row ``j`` receives
(north flux − south flux) / ``dx_j`` with ``dx_j = sin φ_{j+1/2} − sin φ_{j−1/2}`` (cell area /
Δλ). The pole faces have ``cos φ = 0`` set exactly, so no energy crosses a pole, and the
area-weighted sum of the diffusion telescopes to zero (round-off only).

*Zonal diffusion*: ``D/cos²φ ∂²T/∂λ²`` with a 3-point stencil in λ, i.e. row ``j`` gets
``k_j (T_{i+1} − 2 T_i + T_{i−1})`` with ``k_j = D Δφ / (cos φ_j dx_j Δλ²)``. Near the poles
``k_j`` grows like ``1/cos²φ`` and an explicit step would need a ``dt`` ~1500 times smaller
than the meridional limit at 2° (2.4 s instead of 3533 s; ~24000 times at 0.5°). We therefore
use a Douglas–Dupont-type constant-coefficient preconditioner per latitude row, in energy
units::

    ΔE_zonal = (I + dt σ_j L)^{-1} [dt k_j δ²_λ Tⁿ],    σ_j = k_j / C_min,j

where ``L = −δ²_λ`` (periodic) and ``C_min,j`` is the smallest heat capacity in the row. ``L``
is circulant, so the solve is diagonal in Fourier space: ``ΔE_zonal = irfft(g_jk · rfft(Tⁿ))``
with ``g_jk = −dt k_j μ_k / (1 + dt σ_j μ_k)`` and ``μ_k = 4 sin²(π k / n_λ)``. Why this:

* *stable for any dt*: ``dt g`` acting on ``T`` through ``1/C`` has eigenvalues in
  ``[0, 4r/(1+4r)) ⊂ [0, 1)`` with ``r = dt k_j / C_min,j`` (the preconditioned operator is
  symmetric and commutes within a row, so the whole scheme is ``C^{-1}`` times a symmetric
  positive operator). We take ``σ_j`` twice the bare minimum ``k_j/(2 C_min,j)`` so the zonal
  part uses at most half of the forward-Euler budget of 2 and the explicit meridional +
  ``B T`` part gets the other half: :func:`~.params.max_stable_dt`.
* *exactly conservative*: ``g_j0 = 0``, so wavenumber 0 (the zonal mean, hence the row's energy)
  is untouched; only FFT round-off remains (the compiled filters remove the mean of their
  round-off instead: :mod:`.kernel`).
* *cheap and local*: one ``rfft``/``irfft`` pair per step, vectorised over whole rows
  (``xp.fft`` works for numpy and cupy). Rows stay whole in longitude, so the Dask driver only
  needs latitude halos and no communication in λ.

The cost is accuracy, not stability: zonal diffusion of mode ``k`` in row ``j`` is slowed by
``1/(1 + dt σ_j μ_k)``. This is negligible for large scales away from the poles, and for
zonally symmetric states (North's analytic case, annual-mean equilibria) it is zero; in polar
rows and at the grid scale the zonal contrast relaxes in about ``dt`` instead of the (much
shorter) physical time. Because the preconditioner acts on the zonal term only (not on the whole
increment, as in the textbook Douglas–Dupont form), this O(dt) slow-down also applies to forced
zonal structure in a steady or periodic state; the whole-increment form would keep steady
states exact, but with ``C`` varying along a row (land/ocean) it has no stability guarantee,
while the zonal-only form is provably stable (above).

*Two implementations*: on the host, :mod:`.kernel` computes the whole step in compiled loops,
with the zonal solve ``(I + dt σ_j L)^{-1}`` as two periodic first-order recursive filters
instead of the FFT (the same operator, O(n) per row, no transform); :func:`step_band` uses it
for numpy operators. The whole-array form below (``xp`` calls, the FFT) runs on cupy and is the
readable specification the kernel is tested against (agreement to ~10⁻¹² relative).

Bit-identity between the reference and any band decomposition
---------------------------------------------------------------
Every operation in a step is either elementwise (``+ − × /``, ``where``; numpy never contracts
them into FMAs, nor does numba without ``fastmath``), row-local (the zonal solve along λ) or a
two-row stencil in φ, and row coefficients are sliced from full-column arrays computed the same
way for every band. The insolation, which uses transcendental functions, is evaluated on the
full latitude column at every step and then sliced (``arccos``/``sin`` loops may round a value
differently in their SIMD body and their tail). ``numpy.fft.rfft`` on a subset of rows was
checked to give bit-identical rows (see ``tests/unit/test_climate_stepper.py``); the compiled
kernel's rows never mix (:mod:`.kernel`). A band may extend past its own rows by a halo; its
outermost rows (unless they are pole rows) are updated with a missing flux and are wrong, and
the error moves in by one row per step, which the driver trims.
"""

from __future__ import annotations

import dataclasses
import importlib
import math
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np
from dask.sizeof import sizeof

from openclaw_dask.workflows.climate.grid import LatLonGrid
from openclaw_dask.workflows.climate.insolation import (
    insolation_factor,
    insolation_steps,
    legendre_p2,
)
from openclaw_dask.workflows.climate.kernel import (
    advance_rows,
    capacity_classes,
    filter_coefficients,
)
from openclaw_dask.workflows.climate.namespace import get_namespace
from openclaw_dask.workflows.climate.params import EBMParams

#: Steps the compiled kernel takes per pass over a band's rows (:func:`.kernel.advance_rows`).
#: Measured on the 2-core VM, two threads each on half the globe: 0.125° ran at 1165, 1244,
#: 1439, 1417, 1395 Mcell/s with depths 1, 8, 16, 32, 64; 0.0625° at 1097, 1301, 1299, 1229
#: with 1, 16, 32, 64 (~8 + 2 x depth rows and the filters' 8 are in flight: 2.2 MB at 0.0625°).
WAVEFRONT_DEPTH = 16

__all__ = [
    "BandOperators",
    "advance_band",
    "advance_with",
    "make_band_operators",
    "north_analytic_solution",
    "radiative_energy",
    "step_band",
]


@dataclass(frozen=True, eq=False)
class BandOperators:
    """Everything one band needs for its time steps, on the band's device.

    Built once per band (per task) by :func:`make_band_operators`; the arrays hold the rows
    ``row0 : row0 + nrows`` of the global grid.
    """

    params: EBMParams
    row0: int
    nrows: int
    xp: ModuleType
    sin_lat: Any  # (nlat,) full column, for the insolation
    cos_lat: Any  # (nlat,)
    insolation: Any  # (nrows, 1) dt·Q·s for the annual-mean case, else None
    coalbedo_free: Any  # (nrows, 1)
    c_north: Any  # (nrows-1, 1) dt·D·cN_j for rows 0..n-2 of the band
    c_south: Any  # (nrows-1, 1) dt·D·cS_j for rows 1..n-1 of the band
    zonal_gain: Any  # (nrows, nlon//2+1) g_jk in J m-2 K-1; None for the compiled step
    inv_capacity: Any  # (nrows, nlon) 1/C for the array step; None for the compiled step
    filters: dict[str, Any] | None  # the compiled step's row arrays; None for the array step
    class_inv_capacity: Any  # (k,) 1/C of each capacity class (compiled step), else None

    def __reduce__(self) -> tuple[Any, ...]:
        # the array namespace travels by name: plain pickle refuses module objects, and a band's
        # state (which holds its operators) may be spilled to disk or moved to another worker
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        return (_rebuild_operators, (fields.pop("xp").__name__, fields))

    def rows(self, start: int, stop: int) -> BandOperators:
        """The operators of rows ``start:stop`` of this band (views, no copies).

        Every coefficient is computed row by row (or elementwise), so the slice holds the
        same bits as :func:`make_band_operators` would compute for those rows; the Dask driver
        builds a band's operators once per run and slices them for each batch's halo depth.
        The slice shares the work arrays: use one of them at a time.
        """
        if not 0 <= start < stop <= self.nrows:
            raise ValueError(f"rows {start}:{stop} are not inside a band of {self.nrows} rows")
        if (start, stop) == (0, self.nrows):
            return self
        inner = slice(start, stop - 1)  # faces between the slice's rows
        return dataclasses.replace(
            self,
            row0=self.row0 + start,
            nrows=stop - start,
            insolation=None if self.insolation is None else self.insolation[start:stop],
            coalbedo_free=self.coalbedo_free[start:stop],
            c_north=self.c_north[inner],
            c_south=self.c_south[inner],
            zonal_gain=None if self.zonal_gain is None else self.zonal_gain[start:stop],
            inv_capacity=None if self.inv_capacity is None else self.inv_capacity[start:stop],
            filters=None
            if self.filters is None
            else {name: a[start:stop] for name, a in self.filters.items()},
        )

    @property
    def compiled(self) -> bool:
        """Whether :func:`step_band` runs the compiled host kernel (:mod:`.kernel`)."""
        return self.filters is not None


def _rebuild_operators(namespace: str, fields: dict[str, Any]) -> BandOperators:
    return BandOperators(xp=importlib.import_module(namespace), **fields)


@sizeof.register(BandOperators)
def _sizeof_operators(ops: BandOperators) -> int:
    # the Dask driver keeps operators in a band's state: count their arrays in worker memory
    arrays = (ops.zonal_gain, ops.inv_capacity, ops.c_north, ops.c_south, ops.coalbedo_free)
    filters = () if ops.filters is None else tuple(ops.filters.values())
    return sum(sizeof(a) for a in (*arrays, *filters, ops.class_inv_capacity) if a is not None)


def make_band_operators(
    params: EBMParams, grid: LatLonGrid, capacity: Any, row0: int, compiled: bool | None = None
) -> BandOperators:
    """Precompute the coefficients for rows ``row0 : row0 + len(capacity)`` of ``grid``.

    Parameters
    ----------
    params : EBMParams
        Resolved parameters (``dt`` set).
    grid : LatLonGrid
    capacity : array, shape (nrows, nlon)
        Heat capacity of the band's rows; its namespace (numpy/cupy) is used for everything.
    row0 : int
        Global index of the band's first row.
    compiled : bool, optional
        Step with the compiled host kernel (:mod:`.kernel`: recursive filters instead of the
        FFT, the same operator to round-off) rather than whole-array calls of the array
        namespace. Default: compiled for numpy, the array namespace for cupy; the array path on
        numpy is the readable form the tests check the kernel against.

    Returns
    -------
    BandOperators
    """
    if params.dt is None:
        raise ValueError("params.dt is not set; call params.resolved(grid) first")
    xp = get_namespace(capacity)
    nrows, nlon = capacity.shape
    if nlon != grid.nlon or row0 < 0 or row0 + nrows > grid.nlat:
        raise ValueError(f"band rows {row0}:{row0 + nrows} x {nlon} do not fit grid {grid.shape}")
    if compiled is None:
        compiled = xp is np
    if compiled and xp is not np:
        raise ValueError("the compiled step runs on the host: pass numpy arrays or compiled=False")
    rows = slice(row0, row0 + nrows)
    dt, D = params.dt, params.D

    # meridional: coefficients of the faces inside the band (host numpy -> device once)
    cn, cs = grid.meridional_factors()
    c_north = xp.asarray((dt * D) * cn[rows][:-1, None])
    c_south = xp.asarray((dt * D) * cs[rows][1:, None])

    # zonal: r_j = dt k_j / C_min,j, the preconditioner's weight (see the module doc)
    k_row = D * grid.dlat / (grid.cos_lat[rows] * grid.dx[rows] * grid.dlon**2)
    c_min = xp.min(capacity, axis=1, keepdims=True)
    zonal_gain = filters = inv_capacity = class_inv_capacity = None
    if compiled:
        c_min_host = np.asarray(c_min[:, 0])
        classes, class_inv_capacity = capacity_classes(capacity)
        filters = filter_coefficients(dt * k_row / c_min_host, nlon) | {
            "c_min": c_min_host,
            "capacity_class": classes,
        }
    else:
        inv_capacity = 1.0 / capacity
        # g_jk = −dt k_j μ_k / (1 + dt k_j μ_k / C_min,j)
        wavenumber = np.arange(nlon // 2 + 1)
        mu = 4.0 * np.sin(np.pi * wavenumber / nlon) ** 2
        mu[0] = 0.0
        explicit = xp.asarray((dt * k_row)[:, None] * mu[None, :])  # dt k_j μ_k
        zonal_gain = -explicit / (1.0 + explicit / c_min)

    sin_lat = xp.asarray(grid.sin_lat)
    cos_lat = xp.asarray(grid.cos_lat)
    p2 = legendre_p2(grid.sin_lat[rows])
    coalbedo_free = xp.asarray((1.0 - (params.albedo_free + params.albedo_p2 * p2))[:, None])
    insolation = None
    if not params.seasonal_cycle:
        full = insolation_factor(params, sin_lat, cos_lat, 0, xp)
        insolation = (dt * params.Q) * full[rows][:, None]
    return BandOperators(
        params=params,
        row0=row0,
        nrows=nrows,
        xp=xp,
        sin_lat=sin_lat,
        cos_lat=cos_lat,
        insolation=insolation,
        coalbedo_free=coalbedo_free,
        c_north=c_north,
        c_south=c_south,
        zonal_gain=zonal_gain,
        inv_capacity=inv_capacity,
        filters=filters,
        class_inv_capacity=class_inv_capacity,
    )


def _insolation_rows(ops: BandOperators, step: int) -> Any:
    """``dt·Q·s`` for the band's rows at ``step``, shape (nrows, 1)."""
    if ops.insolation is not None:
        return ops.insolation
    p = ops.params
    full = insolation_factor(p, ops.sin_lat, ops.cos_lat, step, ops.xp)
    assert p.dt is not None
    return (p.dt * p.Q) * full[ops.row0 : ops.row0 + ops.nrows, None]


def radiative_energy(T: Any, ops: BandOperators, step: int, out: Any = None) -> Any:
    """Net radiative energy gained over one step, ``dt (Q s a(T) − A − B T)`` (J m⁻²).

    Parameters
    ----------
    T : array, shape (nrows, nlon)
        Band temperatures (°C) at the start of step ``step``.
    ops : BandOperators
    step : int
        Global step index (sets the season).
    out : array, optional
        Destination (same shape as ``T``, not ``T`` itself); a new array by default.

    Returns
    -------
    array
    """
    qs = _insolation_rows(ops, step)
    return _radiative_rows(T, qs, ops.coalbedo_free, ops, out)


def _radiative_rows(T: Any, qs: Any, coalbedo_free: Any, ops: BandOperators, out: Any) -> Any:
    """:func:`radiative_energy` for any block of rows, given their ``dt·Q·s`` and co-albedo."""
    xp, p = ops.xp, ops.params
    assert p.dt is not None
    absorbed_free = qs * coalbedo_free - p.dt * p.A  # (rows, 1), tiny
    out = xp.multiply(T, -(p.dt * p.B), out=out)
    if not p.ice_albedo:
        out += absorbed_free
        return out
    absorbed_ice = qs * (1.0 - p.albedo_ice) - p.dt * p.A
    if p.ice_ramp == 0.0:
        # North (1975a): sharp switch at the threshold
        out += xp.where(xp.less(T, p.ice_threshold), absorbed_ice, absorbed_free)
        return out
    # linear ramp from the ice value at Tf − w/2 to the ice-free value at Tf + w/2:
    # clip(absorbed_ice + (T − T_lo) · slope, absorbed_ice, absorbed_free), per-row bounds
    slope = (absorbed_free - absorbed_ice) / p.ice_ramp
    ramp = xp.multiply(T, slope)
    ramp += _ramp_offset(absorbed_ice, slope, p)
    xp.maximum(ramp, absorbed_ice, out=ramp)
    xp.minimum(ramp, absorbed_free, out=ramp)
    out += ramp
    return out


def _ramp_offset(absorbed_ice: Any, slope: Any, p: EBMParams) -> Any:
    """The ramp's ``T``-independent part, ``absorbed_ice − T_lo slope`` (shared by both steps)."""
    return absorbed_ice - (p.ice_threshold - 0.5 * p.ice_ramp) * slope


def step_band(T: Any, ops: BandOperators, step: int) -> None:
    """Advance the band by one step, in place.

    With compiled operators (numpy's default) the compiled kernel of :mod:`.kernel` takes the
    step; otherwise whole-array calls of the band's namespace (numpy or cupy) do, with the
    zonal solve as an FFT pair.

    Parameters
    ----------
    T : array, shape (nrows, nlon), float64, writable
        Band temperatures at step ``step``; overwritten with step ``step + 1``.
    ops : BandOperators
    step : int
        Global index of the step being taken.
    """
    if ops.filters is not None:
        _advance_compiled(T, ops, step, 1)
        return
    qs = _insolation_rows(ops, step)
    xp = ops.xp
    energy = _radiative_rows(T, qs, ops.coalbedo_free, ops, None)
    # meridional fluxes through the faces between the band's rows; the faces beyond the band
    # (pole faces, or halo edges whose rows the driver discards) carry none
    grad = T[1:] - T[:-1]  # across the north face of row j, the south face of row j+1
    energy[:-1] += ops.c_north * grad
    energy[1:] -= ops.c_south * grad
    # zonal diffusion, preconditioned per row in Fourier space (wavenumber 0 untouched)
    spectrum = xp.fft.rfft(T, axis=1)
    spectrum *= ops.zonal_gain
    energy += xp.fft.irfft(spectrum, n=T.shape[1], axis=1)
    energy *= ops.inv_capacity
    T += energy


def _advance_compiled(
    T: np.ndarray,
    ops: BandOperators,
    step0: int,
    nsteps: int,
    shrink: tuple[bool, bool] = (False, False),
    total: np.ndarray | None = None,
    total_row0: int = 0,
) -> None:
    """Steps ``step0 .. step0 + nsteps - 1`` by :func:`.kernel.advance_rows`, in place: the
    per-step, per-row radiation terms for all of them, then one kernel call."""
    p, filters = ops.params, ops.filters
    assert p.dt is not None and filters is not None
    # dt·Q·s of each step: each step's on the full column (compiled, all steps in one call:
    # a numpy call per step cost ~20 µs, a quarter of a 2° step), then the band's rows
    if ops.insolation is not None:
        qs = np.broadcast_to(ops.insolation[:, 0], (nsteps, ops.nrows))
    else:
        full = insolation_steps(p, ops.sin_lat, ops.cos_lat, step0, nsteps)
        qs = (p.dt * p.Q) * full[:, ops.row0 : ops.row0 + ops.nrows]
    free = qs * ops.coalbedo_free[:, 0] - p.dt * p.A
    ice = slope = offset = free
    mode = 0
    if p.ice_albedo:
        ice = qs * (1.0 - p.albedo_ice) - p.dt * p.A
        mode = 1 if p.ice_ramp == 0.0 else 2
        if mode == 2:
            slope = (free - ice) / p.ice_ramp
            offset = _ramp_offset(ice, slope, p)
    if total is None:
        total = np.empty((0, T.shape[1]))
    advance_rows(
        T,
        shrink[0],
        shrink[1],
        WAVEFRONT_DEPTH,
        filters["capacity_class"],
        ops.class_inv_capacity,
        ops.c_north[:, 0],
        ops.c_south[:, 0],
        -(p.dt * p.B),
        mode,
        p.ice_threshold,
        free,
        ice,
        slope,
        offset,
        filters["c_min"],
        filters["rho"],
        filters["inv_rho"],
        filters["scale"],
        filters["wrap"],
        filters["nterms"],
        filters["rho_nterms"],
        total,
        total_row0,
    )


def advance_band(
    T: Any,
    capacity: Any,
    params: EBMParams,
    grid: LatLonGrid,
    row0: int,
    step0: int,
    nsteps: int,
    accumulate: bool = False,
    overwrite: bool = False,
) -> Any:
    """Advance a band of whole rows by ``nsteps`` steps (returns a new array).

    Rows that touch the band's edge (other than the poles) lose one valid row per step; the
    caller passes a halo at least ``nsteps`` rows deep and keeps only the interior.

    Parameters
    ----------
    T, capacity : array, shape (nrows, nlon)
        Temperatures at step ``step0`` and heat capacities of rows ``row0 : row0 + nrows``.
    params : EBMParams
        Resolved parameters.
    grid : LatLonGrid
    row0 : int
        Global index of the first row.
    step0 : int
        Global index of the first step.
    nsteps : int
        Number of steps.
    accumulate : bool, optional
        Also return the sum of the temperatures after each step (for time means).
    overwrite : bool, optional
        Advance ``T`` itself when it is a C-contiguous float64 array (and return it), saving
        a copy; for callers that own ``T``, such as the Dask driver's concatenated band.

    Returns
    -------
    array, or (array, array) with ``accumulate``
        Temperatures at step ``step0 + nsteps`` (and the sum over the steps).
    """
    xp = get_namespace(T, capacity)
    ops = None
    if nsteps > 0:
        cap = xp.asarray(capacity, dtype=xp.float64)
        ops = make_band_operators(params, grid, cap, row0)
    return advance_with(T, ops, step0, nsteps, accumulate=accumulate, overwrite=overwrite)


def advance_with(
    T: Any,
    ops: BandOperators | None,
    step0: int,
    nsteps: int,
    accumulate: bool = False,
    overwrite: bool = False,
    shrink: tuple[bool, bool] = (False, False),
    total: Any = None,
    total_rows: tuple[int, int] | None = None,
) -> Any:
    """:func:`advance_band` with operators built beforehand (``ops.nrows`` rows like ``T``).

    Parameters
    ----------
    T : array, shape (ops.nrows, nlon)
        Temperatures at step ``step0``.
    ops : BandOperators or None
        The band's operators (see :meth:`BandOperators.rows`); ``None`` only for ``nsteps=0``.
    step0, nsteps, accumulate, overwrite
        As for :func:`advance_band`.
    shrink : (bool, bool), optional
        Whether the south and north ends are halo edges. Such an end loses one valid row per
        step, so step ``s`` (from 0) skips the ``s`` outermost rows there, which are already
        wrong: the valid rows get the same bits and the halo costs half the work (a shrinking
        cone instead of a rectangle). Skipped rows (and their sums) hold stale values.
    total : array, optional
        With ``accumulate``: a running sum to continue, added to in place and returned, instead
        of a new one from zeros. Each step's temperatures are added to it one step at a time,
        so a sum carried across calls has the same bits however the steps are split.
    total_rows : (int, int), optional
        The rows ``start, stop`` of ``T`` that the sum covers (default all); the Dask driver
        sums a band's own rows, not its halo.

    Returns
    -------
    array, or (array, array) with ``accumulate``
    """
    xp = get_namespace(T)
    if overwrite:
        out = xp.ascontiguousarray(T, dtype=xp.float64)
    else:
        out = xp.array(T, dtype=xp.float64, copy=True, order="C")
    first, stop = (0, out.shape[0]) if total_rows is None else total_rows
    if accumulate and total is None:
        total = xp.zeros_like(out[first:stop])
    if accumulate and total.shape != out[first:stop].shape:
        raise ValueError(f"a running sum of shape {total.shape} for rows {first}:{stop}")
    if nsteps > 0:
        if ops is None or ops.nrows != out.shape[0]:
            rows = None if ops is None else ops.nrows
            raise ValueError(f"operators for {rows} rows, the band has {out.shape[0]}")
        south, north = shrink
        rows = out.shape[0]
        # the rows still valid after the last step: a halo edge's outermost row misses a flux
        # at every step, so each step loses one more (the last step advances rows lo - 1 and
        # hi, which are then wrong)
        lo, hi = (nsteps if south else 0), (rows - nsteps if north else rows)
        if lo >= hi:
            raise ValueError(f"{nsteps} steps shrink a band of {rows} rows to nothing")
        if accumulate and not lo <= first < stop <= hi:
            raise ValueError(
                f"{nsteps} steps leave rows {lo}:{hi} valid, the sum needs {first}:{stop}"
            )
        if ops.compiled:
            _advance_compiled(out, ops, step0, nsteps, shrink, total, first)
            return (out, total) if accumulate else out
        for s, n in enumerate(range(step0, step0 + nsteps)):
            lo, hi = (s if south else 0), (rows - s if north else rows)
            step_band(out[lo:hi], ops.rows(lo, hi), n)
            if accumulate:
                total += out[first:stop]
    return (out, total) if accumulate else out


def north_analytic_solution(params: EBMParams, x: Any) -> Any:
    """North's (1975a) equilibrium without ice: ``T0 + T2 P2(x) + T4 P4(x)``.

    The absorbed sunlight ``Q (1 + s2 P2) (a0 + a2 P2)``, with the co-albedo ``a0 = 1 −
    albedo_free``, ``a2 = −albedo_p2``, is a sum of Legendre modes (``P2² = 1/5 + 2/7 P2 +
    18/35 P4``), and each mode ``n`` relaxes against ``B + n(n+1) D``::

        T0 = (Q (a0 + a2 s2/5) − A) / B
        T2 = Q (a2 + a0 s2 + 2/7 a2 s2) / (B + 6D)
        T4 = Q (18/35 a2 s2) / (B + 20D)

    With a constant albedo (``albedo_p2 = 0``: North's case, which ``workflows/climate.yaml``'s
    three switches off give) ``T4 = 0``; the P2 albedo of the defaults (a forcing of one's own
    with ``ice_albedo`` off but that albedo kept) adds the ``P4`` mode. Valid for annual-mean
    insolation and no ice-albedo feedback.

    Parameters
    ----------
    params : EBMParams
    x : array
        ``sin φ``.

    Returns
    -------
    array
        °C.
    """
    q, s2, b, d = params.Q, params.s2, params.B, params.D
    a0, a2 = 1.0 - params.albedo_free, -params.albedo_p2
    t0 = (q * (a0 + a2 * s2 / 5.0) - params.A) / b
    t2 = q * (a2 + a0 * s2 + 2.0 / 7.0 * a2 * s2) / (b + 6.0 * d)
    t4 = q * (18.0 / 35.0 * a2 * s2) / (b + 20.0 * d)
    p4 = (35.0 * x**4 - 30.0 * x**2 + 3.0) / 8.0
    return t0 + t2 * legendre_p2(x) + t4 * p4


def equilibrium_relaxation_steps(params: EBMParams, tolerance: float = 1e-3) -> int:
    """Steps for the slowest (global-mean) mode to decay by ``tolerance``: ``ln(1/tol) C/(B dt)``.

    Uses the largest heat capacity in play; a helper for spin-ups and tests.
    """
    assert params.dt is not None
    c_max = max(params.heat_capacity_ocean, params.heat_capacity_land if params.land else 0.0)
    return math.ceil(math.log(1.0 / tolerance) * c_max / (params.B * params.dt))
