"""Chunked Dask driver: latitude bands, K steps per halo exchange (communication-avoiding).

The state is a 2-D dask array ``(nlat, nlon)`` chunked in latitude bands only; every chunk
holds whole rows, because the zonal part of the step is an FFT along each row and needs no
longitude neighbours. The explicit meridional stencil reaches one row north and south per
step, so a task that owns band ``[a, b)`` and also receives ``K`` rows of halo on each side can
take ``K`` steps on its own before the halos are stale: after step ``s`` the outer ``s`` rows
of the extended band are wrong and the band itself is still exact. One *batch* is therefore::

    overlap(T, depth K, boundary none)  ->  advance_band(K steps)  ->  trim to [a, b)

built from :func:`dask.array.overlap.overlap` and :func:`dask.array.map_blocks`. At the poles
there is nothing to exchange: the pole rows' outer faces carry no flux in the kernel, so a band
that starts at row 0 (or ends at the last row) gets no halo there and needs none.

Each task is told the global row of its first row (from the chunk layout and ``block_id``), so
row coefficients are slices of the same full-grid arrays the reference uses, and the season of
every step comes from the global step index ``step0 + s``. Together with the row-local FFT this
makes the chunked result bit-identical to :func:`~.reference.run_reference` for any band layout,
any ``batch_size`` and any split of the run into calls (tested with ``numpy.array_equal``).

Choice for ``batch_size`` larger than a band: refused with a ValueError (a halo deeper than the
neighbouring band would need rows from two bands away; dask's overlap cannot express that, and
silently rechunking would change the caller's layout and memory plan). ``nsteps`` need not be
a multiple of ``batch_size``: the last batch is shorter.
"""

from __future__ import annotations

import functools
from typing import Any

import dask
import dask.array as da
import numpy as np

from openclaw_dask.workflows.climate.grid import LatLonGrid
from openclaw_dask.workflows.climate.namespace import get_namespace
from openclaw_dask.workflows.climate.params import EBMParams, heat_capacity
from openclaw_dask.workflows.climate.physics import (
    advance_band,
    make_band_operators,
    radiative_energy,
)
from openclaw_dask.workflows.climate.reference import EnergyBudget

__all__ = [
    "advance",
    "band_chunks",
    "energy_budget",
    "global_radiative_input",
    "global_storage_change",
    "to_bands",
]


def band_chunks(nlat: int, nbands: int) -> tuple[int, ...]:
    """Split ``nlat`` rows into ``nbands`` bands whose heights differ by at most one.

    Examples
    --------
    >>> band_chunks(10, 3)
    (4, 3, 3)
    """
    if not 1 <= nbands <= nlat:
        raise ValueError(f"nbands must be in [1, {nlat}], got {nbands}")
    base, extra = divmod(nlat, nbands)
    return tuple(base + 1 if i < extra else base for i in range(nbands))


def to_bands(T: Any, bands: int | tuple[int, ...]) -> da.Array:
    """Wrap a host (or dask) array as a state chunked in latitude bands with whole rows.

    Parameters
    ----------
    T : array-like or dask.array.Array, shape (nlat, nlon)
    bands : int or tuple of int
        Number of (near-equal) bands, or explicit band heights south to north.
    """
    nlat = T.shape[0]
    rows = band_chunks(nlat, bands) if isinstance(bands, int) else tuple(bands)
    if sum(rows) != nlat:
        raise ValueError(f"band heights {rows} do not add up to {nlat} rows")
    if isinstance(T, da.Array):
        return T.rechunk((rows, -1))
    return da.from_array(np.asarray(T, dtype=np.float64), chunks=(rows, -1))


def _aligned_capacity(
    capacity: Any, params: EBMParams, grid: LatLonGrid, T: da.Array
) -> tuple[da.Array, float]:
    """The capacity as a dask array chunked like ``T``, and its minimum (for ``dt``)."""
    if capacity is None:
        capacity = heat_capacity(params, grid)
    if isinstance(capacity, da.Array):
        cap = capacity.astype(np.float64).rechunk(T.chunks)
        (c_min,) = dask.compute(cap.min(), scheduler="sync")
    else:
        host = np.asarray(capacity, dtype=np.float64)
        cap = da.from_array(host, chunks=T.chunks)
        c_min = host.min()
    if cap.shape != grid.shape:
        raise ValueError(f"capacity has shape {cap.shape}, the grid is {grid.shape}")
    return cap, float(c_min)


def _batch_task(
    T_block: Any,
    C_block: Any,
    *,
    params: EBMParams,
    grid: LatLonGrid,
    starts: tuple[int, ...],
    heights: tuple[int, ...],
    depth: int,
    step0: int,
    accumulate: bool = False,
    block_id: tuple[int, int] | None = None,
) -> Any:
    """Advance one extended band by ``depth`` steps and trim it to the band it owns.

    With ``accumulate`` the block holds ``[T, sum of T over the steps]`` stacked on a new
    first axis (one task, two results).
    """
    assert block_id is not None
    i = block_id[-2]  # the row-band index (accumulate adds a leading axis)
    row0 = max(starts[i] - depth, 0)
    expected = min(starts[i] + heights[i] + depth, grid.nlat) - row0
    if T_block.shape[0] != expected:  # guards the halo arithmetic against dask changes
        raise RuntimeError(f"band {i}: got {T_block.shape[0]} rows, expected {expected}")
    lo = starts[i] - row0
    if accumulate:
        out, total = advance_band(
            T_block, C_block, params, grid, row0, step0, depth, accumulate=True
        )
        xp = get_namespace(out)
        return xp.stack([out[lo : lo + heights[i]], total[lo : lo + heights[i]]])
    out = advance_band(T_block, C_block, params, grid, row0, step0, depth)
    return out[lo : lo + heights[i]]


def _one_batch(
    T: da.Array,
    cap: da.Array,
    params: EBMParams,
    grid: LatLonGrid,
    depth: int,
    step0: int,
    accumulate: bool = False,
) -> Any:
    heights = T.chunks[0]
    starts = tuple(int(s) for s in np.cumsum((0, *heights[:-1])))
    if len(heights) == 1:  # one band: no neighbours, nothing to exchange

        def extend(x: da.Array) -> da.Array:
            return x

    else:
        extend = functools.partial(
            da.overlap.overlap, depth={0: depth, 1: 0}, boundary={0: "none", 1: "none"}
        )
    task = functools.partial(
        _batch_task,
        params=params,
        grid=grid,
        starts=starts,
        heights=heights,
        depth=depth,
        step0=step0,
        accumulate=accumulate,
    )
    if accumulate:
        both = da.map_blocks(
            task,
            extend(T),
            extend(cap),
            chunks=((2,), *T.chunks),
            new_axis=0,
            dtype=np.float64,
            meta=T._meta,
            token=f"ebm-steps-sum-{step0}-{step0 + depth}",
        )
        return both[0], both[1]
    return da.map_blocks(
        task,
        extend(T),
        extend(cap),
        chunks=T.chunks,
        dtype=np.float64,
        meta=T._meta,  # numpy or cupy blocks, whatever the state holds
        token=f"ebm-steps-{step0}-{step0 + depth}",  # readable prefix; dask appends a hash
    )


def advance(
    T: da.Array,
    params: EBMParams,
    grid: LatLonGrid,
    nsteps: int,
    batch_size: int,
    step0: int = 0,
    capacity: Any = None,
    accumulate: bool = False,
) -> Any:
    """Build the graph that advances the chunked state by ``nsteps`` steps.

    Parameters
    ----------
    T : dask.array.Array, shape ``grid.shape``
        Temperatures (°C) at step ``step0``, chunked in latitude bands (see :func:`to_bands`);
        longitude chunks are merged into whole rows if needed. Typically a persisted array.
    params : EBMParams
        ``dt=None`` is resolved for this grid and capacity (the same ``dt`` as the reference).
    grid : LatLonGrid
    nsteps : int
        Number of steps (any non-negative integer).
    batch_size : int
        ``K``: steps per halo exchange (``distributed.batch_size``); at most the smallest band
        height when there is more than one band.
    step0 : int, optional
        Global index of the first step, so a run continued from a checkpoint keeps its season.
    capacity : array or dask.array.Array, optional
        Heat-capacity field; default :func:`~.params.heat_capacity` of ``params``.
    accumulate : bool, optional
        Also return the sum of the temperatures after each of the ``nsteps`` steps (the
        numerator of a time mean), computed in the same tasks.

    Returns
    -------
    dask.array.Array, or (dask.array.Array, dask.array.Array) with ``accumulate``
        Lazy temperatures at step ``step0 + nsteps``, chunked like ``T`` (and their sum).

    Raises
    ------
    ValueError
        For a ``batch_size`` below 1 or deeper than the smallest band, or a wrong shape.
    """
    if tuple(T.shape) != grid.shape:
        raise ValueError(f"T has shape {tuple(T.shape)}, the grid is {grid.shape}")
    if nsteps < 0 or step0 < 0:
        raise ValueError(f"nsteps and step0 must be >= 0, got {nsteps}, {step0}")
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    if len(T.chunks[1]) != 1:
        T = T.rechunk({1: -1})  # rows must be whole: the zonal step is an FFT along the row
    T = T.astype(np.float64)
    heights = T.chunks[0]
    if len(heights) > 1 and batch_size > min(heights):
        raise ValueError(
            f"batch_size={batch_size} is deeper than the smallest latitude band "
            f"({min(heights)} rows of {heights}); a task can only borrow halo rows from its "
            f"direct neighbours. Use batch_size <= {min(heights)} or fewer, taller bands "
            f"(e.g. to_bands(T, {max(1, grid.nlat // batch_size)}))."
        )
    cap, c_min = _aligned_capacity(capacity, params, grid, T)
    params = params.resolved(grid, c_min)
    done = 0
    total = None
    while done < nsteps:
        depth = min(batch_size, nsteps - done)
        if accumulate:
            T, part = _one_batch(T, cap, params, grid, depth, step0 + done, accumulate=True)
            total = part if total is None else total + part
        else:
            T = _one_batch(T, cap, params, grid, depth, step0 + done)
        done += depth
    if accumulate:
        return T, (da.zeros_like(T) if total is None else total)
    return T


# -- global energy budget -----------------------------------------------------------------
def _weighted_rows(block: Any, grid: LatLonGrid, row0: int) -> Any:
    return block * grid.row_slice_weights(row0, row0 + block.shape[0])


def _row_starts(chunks: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(int(s) for s in np.cumsum((0, *chunks[:-1])))


def global_storage_change(
    T_before: da.Array, T_after: da.Array, capacity: da.Array, grid: LatLonGrid
) -> da.Array:
    """``Σ C (T_after − T_before) w`` (J m⁻², global mean; ``w`` = area fractions), lazily.

    The difference is taken per cell before summing: the stored energy is ~10⁵ times larger
    than its change over a step, so differencing two global sums would lose five digits.
    """
    starts = _row_starts(T_before.chunks[0])

    def weigh(a: Any, b: Any, c: Any, block_id: tuple[int, int] | None = None) -> Any:
        assert block_id is not None
        return _weighted_rows(c * (b - a), grid, starts[block_id[0]])

    cap = capacity.rechunk(T_before.chunks)
    after = T_after.rechunk(T_before.chunks)
    return da.map_blocks(weigh, T_before, after, cap, dtype=np.float64).sum()


def global_radiative_input(
    T: da.Array, params: EBMParams, grid: LatLonGrid, step: int, capacity: da.Array
) -> tuple[da.Array, da.Array]:
    """Net and gross radiative energy input over step ``step``, global means (J m⁻²).

    Returns ``(Σ dt (absorbed − emitted) w, Σ dt |absorbed − emitted| w)``, both lazy.
    ``params`` must be resolved (``dt`` set).
    """
    starts = _row_starts(T.chunks[0])

    def rad(t: Any, c: Any, block_id: tuple[int, int] | None = None) -> Any:
        assert block_id is not None
        row0 = starts[block_id[0]]
        ops = make_band_operators(params, grid, c, row0)
        return _weighted_rows(radiative_energy(t, ops, step), grid, row0)

    per_cell = da.map_blocks(rad, T, capacity.rechunk(T.chunks), dtype=np.float64)
    return per_cell.sum(), abs(per_cell).sum()


def energy_budget(
    T: da.Array,
    params: EBMParams,
    grid: LatLonGrid,
    nsteps: int,
    batch_size: int = 1,
    step0: int = 0,
    capacity: Any = None,
    scheduler: str | None = None,
) -> tuple[da.Array, EnergyBudget]:
    """Advance step by step with :func:`advance` and record the global energy budget.

    A diagnostic (one graph and one compute per step), not the production path.

    Parameters
    ----------
    T : dask.array.Array
        Chunked state at step ``step0``.
    params, grid, nsteps, step0, capacity
        As for :func:`advance`.
    batch_size : int
        Passed to :func:`advance` (only 1 step is taken per call).
    scheduler : str, optional
        Dask scheduler for the per-step computes (default: the current one).

    Returns
    -------
    T : dask.array.Array
        The (persisted) state at step ``step0 + nsteps``.
    budget : EnergyBudget
    """
    cap, c_min = _aligned_capacity(capacity, params, grid, T)
    params = params.resolved(grid, c_min)
    stored = np.empty(nsteps)
    forced = np.empty(nsteps)
    gross = np.empty(nsteps)
    for k in range(nsteps):
        n = step0 + k
        T_next = advance(T, params, grid, 1, batch_size, n, cap)
        net, total = global_radiative_input(T, params, grid, n, cap)
        change = global_storage_change(T, T_next, cap, grid)
        T_next, c, f, g = dask.persist(T_next, change, net, total, scheduler=scheduler)
        c, f, g = dask.compute(c, f, g, scheduler=scheduler)
        stored[k], forced[k], gross[k] = float(c), float(f), float(g)
        T = T_next
    return T, EnergyBudget(stored, forced, gross)
