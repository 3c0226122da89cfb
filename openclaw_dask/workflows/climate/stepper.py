"""Chunked Dask driver: latitude bands, K steps per halo exchange (communication-avoiding).

The state is a 2-D dask array ``(nlat, nlon)`` chunked in latitude bands only; every chunk
holds whole rows, because the zonal part of the step is a solve along each row and needs no
longitude neighbours. The explicit meridional stencil reaches one row north and south per
step, so a task that owns band ``[a, b)`` and also receives ``K`` rows of halo on each side can
take ``K`` steps on its own before the halos are stale: after step ``s`` the outer ``s`` rows
of the extended band are wrong and the band itself is still exact.

Graph of one batch
------------------
Each batch of ``K`` steps (steps ``s`` to ``s + K``) is one layer of step tasks and, where
halos move between workers, one of halo tasks, written by hand as a
:class:`~dask.highlevelgraph.HighLevelGraph`; band ``i`` has height ``h_i``::

    ebm-steps-{s}-{s+K} (i, 0)  (band i, its south halo, its north halo):
                                halos into the margins of band i's buffer -> K steps ->
                                a BandStep: the state and copies of its first and last rows
    ebm-halo-{s}-{s+K}  (i, 0)  the rows band i-1's last batch copied for band i, taken where
                                band i-1 is (only where its home is not band i's)
    ebm-halo-{s}-{s+K}  (i, 1)  the same from band i+1

A band's halo is the neighbour's previous step task itself where both bands have one home
worker (``workers``): the step task takes the copied rows out of it, and nothing moves. Where
the homes differ, or no homes are given, a halo task on the neighbour's worker picks the rows
out, so that only they travel, not the neighbour's state. A call's first batch takes its
halos from the input's blocks, by halo tasks that copy the rows.

Why by hand: built with :func:`dask.array.overlap.overlap` and ``map_blocks``, the critical
path of a batch is three dependent tasks (halo slice on the neighbour -> concatenation task ->
step task). On a distributed cluster every hop between dependent tasks costs scheduler round
trips (~7-10 ms of batched-send latency on a 2-core machine, against ~110 ms for a step task
at 0.25° with ``K = 16``), seen as 20-40 ms idle gaps between step tasks, and every task costs
the scheduler time: with many bands a batch's tasks, not its steps, set its pace. A batch
between bands on one worker is one hop and one task a band; between workers it is two hops.
Measured on the 2-core VM (2026-12-05, 0.5°, 16 bands, ``K = 4``, 64 batches) with halo tasks
for every neighbour, as before: 65 ms a batch on 1 worker x 2 threads and 52 ms on 2 x 1; with
the neighbour's step task taken on one worker: 32 and 28 ms (2 bands on 2 x 1, all halos
between workers: 15 ms either way). Only the ``K`` halo rows travel between workers, and a step
task's largest input by far (its band's state, below) is on the worker that computed it, so
the scheduler tends to keep a band on its worker; it does not always (work stealing, a fresh
state), which is why ``climate.ebm`` and the benchmark also give each band a home worker
(below).

Passing whole neighbour bands to the step task between workers too (one hop, no halo tasks)
was measured on the 2-core machine and not kept. At 0.25° (4 MB bands, ``K = 16``) it was
5-13 % faster, but it moves ``h/K`` times more data per batch (at 0.125° its gaps between step
tasks were 39 ms against 15 ms; worse between hosts or from a GPU), and fetching a neighbour's
whole band leaves a copy of it on the other worker: a later run from the same persisted
state (as the benchmark repeats) may then start a band on either worker, and in 2 of 5 such
runs both bands ended up mostly on one worker.

State, heat capacity and operators: between batches a band's block holds a :class:`BandState`:
a buffer holding the band plus ``K`` rows of margin on each inner side (``K`` the deepest batch
of the call), the band's :class:`~.physics.BandOperators` (filter coefficients or Fourier gains,
1/C, face coefficients) for those rows, and with ``accumulate`` the running sum. They are built
once per :func:`advance` call in the band's first step task, travel with the band and never
leave its worker; a batch takes the rows its halo depth needs
(:meth:`~.physics.BandOperators.rows`, views with the same bits). Rebuilding the operators in
every batch cost 3 % of a batch at 0.25° and 6 % at 0.125° (``K = 16``, the array step). A host
(numpy) capacity enters the graph once, each band's rows as a literal argument of that band's
first step task (which puts them on the state's device: numpy or cupy); a dask-array capacity
is aligned to the bands and its blocks are built by ``ebm-capacity`` tasks. The last batch
returns plain ``T`` blocks, so the result is an ordinary dask array chunked like the input.

The buffer is advanced in place: a batch writes its halos into the margins and steps the
buffer, so a band allocates one band-sized array per call instead of one per batch (a fresh
66 MB array per task, page-faulted while the other worker did the same, cost 10-30 % at
0.0625°). The first batch copies its input (a persisted block that others may read) and the
running sum it continues. That a task changes its input is safe here because nothing else
reads a state's buffer: the neighbours read only the rows the batch copied for them at its
end (a :class:`BandStep`), which the next batch does not touch. A state that has to be
recomputed (a lost worker) is recomputed from the call's input, through a fresh buffer.

With ``accumulate`` the state also holds the running sum and the last batch returns
``[T, sum]`` stacked on a new first axis; the sum adds no task and no hop. Every step adds its
temperatures to the running sum (which a call may continue from the last one's), so a monthly
sum has the same bits for any banding, ``batch_size`` or split of the month into calls.

At the poles there is nothing to exchange: the pole rows' outer faces carry no flux in the
kernel, so a band that starts at row 0 (or ends at the last row) gets no halo there and needs
none. A single band exchanges nothing: each batch is one task.

Each task is told the global row of its first row (from the band layout), so row coefficients
are slices of the same full-grid arrays the reference uses, and the season of every step comes
from the global step index ``step0 + s``. Together with the row-local zonal solve this makes the
chunked result bit-identical to :func:`~.reference.run_reference` for any band layout, any
``batch_size`` and any split of the run into calls (tested with ``numpy.array_equal``).

Home workers: given ``workers`` (one address per band, see :func:`band_homes`), every task of
band ``i`` (its step tasks and the halo slices of its rows) carries a loose restriction to band
``i``'s home. Without it, measured in the workflow at 0.5° on 2 workers, the bands of a fresh
state could start on one worker, and a step task that work stealing moved while its worker was
busy writing a checkpoint left both bands on one worker for the rest of the run (one core
busy, the other idle): the step tasks' inputs are then on that worker, and stealing one back
never pays for moving its band. With the restriction the next batch goes home (one transfer),
and because it is loose a lost worker only costs the move.

Choice for ``batch_size`` larger than a band: refused with a ValueError (a halo deeper than the
neighbouring band would need rows from two bands away, and silently rechunking would change the
caller's layout and memory plan). ``nsteps`` need not be a multiple of ``batch_size``: the last
batch is shorter.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import dask
import dask.array as da
import numpy as np
from dask.array.utils import meta_from_array
from dask.base import tokenize
from dask.highlevelgraph import HighLevelGraph, MaterializedLayer
from dask.sizeof import sizeof

from openclaw_dask.workflows.climate.grid import LatLonGrid
from openclaw_dask.workflows.climate.namespace import get_namespace
from openclaw_dask.workflows.climate.params import EBMParams, heat_capacity
from openclaw_dask.workflows.climate.physics import (
    BandOperators,
    advance_with,
    make_band_operators,
    radiative_energy,
)
from openclaw_dask.workflows.climate.reference import EnergyBudget

__all__ = [
    "BandState",
    "BandStep",
    "advance",
    "band_chunks",
    "band_homes",
    "energy_budget",
    "global_radiative_input",
    "global_storage_change",
    "place_bands",
    "quietest_worker",
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


def band_homes(nthreads: Mapping[str, int], nbands: int, first: str | None = None) -> list[str]:
    """A home worker per band: contiguous bands share a worker, in proportion to its threads.

    Parameters
    ----------
    nthreads : mapping of str to int
        Worker address to its number of threads (``Client.nthreads()``).
    nbands : int
    first : str, optional
        The worker of the first bands (:func:`quietest_worker`), the others following in
        address order; by default (or when it is gone) the first address.

    Examples
    --------
    >>> band_homes({"tcp://a": 2, "tcp://b": 2}, 4)
    ['tcp://a', 'tcp://a', 'tcp://b', 'tcp://b']
    >>> band_homes({"tcp://a": 1, "tcp://b": 1}, 3)
    ['tcp://a', 'tcp://a', 'tcp://b']
    >>> band_homes({"tcp://a": 1, "tcp://b": 1}, 1, first="tcp://b")
    ['tcp://b']
    """
    workers = sorted(nthreads)
    if first in nthreads:  # rotated whole workers: neighbouring bands stay together
        at = workers.index(first)
        workers = workers[at:] + workers[:at]
    slots = [w for w in workers for _ in range(nthreads[w])]
    if not slots or nbands < 1:
        raise ValueError(f"{nbands} bands on {len(slots)} worker threads")
    # neighbouring bands on one worker exchange their halos without a network hop
    return [slots[i * len(slots) // nbands] for i in range(nbands)]


def quietest_worker(client: Any) -> str | None:
    """The worker with the least work of the cluster's runs now (tasks processing there and
    results held), the first address on ties; ``None`` without workers.

    Where a run's first bands go (:func:`band_homes`): every run had put them on the first
    worker, so two one-band runs on a shared cluster (``cluster up``) computed on one worker
    while the other idled (each 38-45 s against 30 s alone, 2-core VM, session 49).
    """
    loads = client.run_on_scheduler(_worker_loads)
    return min(sorted(loads), key=loads.__getitem__) if loads else None


def _worker_loads(dask_scheduler: Any = None) -> dict[str, int]:
    """On the scheduler: per worker, the tasks processing there and the results it holds."""
    return {
        address: len(ws.processing) + len(ws.has_what)
        for address, ws in dask_scheduler.workers.items()
    }


def place_bands(client: Any, field: Any, homes: Sequence[str]) -> da.Array:
    """A host array persisted on the cluster in ``len(homes)`` bands, band ``i`` on ``homes[i]``.

    For a band's inputs that live across calls (the first state, the heat capacity): each is
    sent once, straight to the worker whose tasks read it, instead of travelling in every graph
    (a 0.125° capacity is 33 MB).

    Parameters
    ----------
    client : distributed.Client
    field : array, shape (nlat, nlon)
    homes : sequence of str
        A worker address per band (:func:`band_homes`).
    """
    from distributed import wait

    heights = band_chunks(field.shape[0], len(homes))
    # fresh keys (hash=False), not Dask's content hash: placing the same field again (the
    # second try after a worker death) gave the old placement's keys, and its release,
    # reaching the scheduler after the new scatter, forgot the new bands ("lost dependencies")
    edges = (*_row_starts(heights), field.shape[0])
    parts = [
        da.from_delayed(
            client.scatter(field[edges[i] : edges[i + 1]], workers=[home], hash=False),
            (heights[i], field.shape[1]),
            dtype=field.dtype,
        )
        for i, home in enumerate(homes)
    ]
    [placed] = client.persist([da.concatenate(parts)])
    wait(placed)
    return placed


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
    xp = get_namespace(T)  # a cupy state stays on its device (numpy's asarray refuses it)
    return da.from_array(xp.asarray(T, dtype=xp.float64), chunks=(rows, -1), asarray=False)


# -- heat capacity --------------------------------------------------------------------------
#: Minimum of each dask capacity seen, by array name (a dask name identifies its contents).
_CAPACITY_MIN: dict[str, float] = {}


def _capacity_field(
    capacity: Any, params: EBMParams, grid: LatLonGrid
) -> tuple[np.ndarray | da.Array, float]:
    """The capacity as a float64 host array or dask array, and its minimum (for ``dt``)."""
    if capacity is None:
        capacity = heat_capacity(params, grid)
    if isinstance(capacity, da.Array):
        field: np.ndarray | da.Array = capacity.astype(np.float64)
    else:
        field = np.asarray(capacity, dtype=np.float64)
    if field.shape != grid.shape:
        raise ValueError(f"capacity has shape {field.shape}, the grid is {grid.shape}")
    if not isinstance(field, da.Array):
        return field, float(field.min())
    # computed once per array: climate.ebm passes the same placed capacity to every call, and
    # this compute blocks the caller until a worker is free (on the 2° default it had waited
    # behind the running step in 104 calls: 6.5 s of the client's 9 s, starving the pipeline)
    if field.name not in _CAPACITY_MIN:
        if len(_CAPACITY_MIN) >= 64:
            _CAPACITY_MIN.clear()
        # the current scheduler: a capacity persisted on a cluster lives only there
        (c_min,) = dask.compute(field.min())
        _CAPACITY_MIN[field.name] = float(c_min)
    return field, _CAPACITY_MIN[field.name]


def _aligned_capacity(
    capacity: Any, params: EBMParams, grid: LatLonGrid, T: da.Array
) -> tuple[da.Array, float]:
    """The capacity as a dask array chunked like ``T``, and its minimum (for ``dt``)."""
    field, c_min = _capacity_field(capacity, params, grid)
    if isinstance(field, da.Array):
        return field.rechunk(T.chunks), c_min
    return da.from_array(field, chunks=T.chunks), c_min


@dataclass(eq=False)
class BandState:
    """A band between batches: its rows inside a buffer with halo margins, its operators and
    its running sum.

    The buffer is the band's own from its first batch on: each later batch writes the halos
    into the margins and advances the buffer in place (no new band-sized array per batch; see
    the module docstring for why that is safe).
    """

    buffer: Any  # (south + rows + north margin, nlon)
    south: int  # margin rows below the band
    rows: int
    ops: BandOperators  # for every row of the buffer
    total: Any  # the running sum of the band's rows, or None

    @property
    def band(self) -> Any:
        """The band's rows (a view)."""
        return self.buffer[self.south : self.south + self.rows]


@sizeof.register(BandState)
def _sizeof_state(state: BandState) -> int:
    parts = (state.buffer, state.ops, state.total)
    return sum(sizeof(p) for p in parts if p is not None)


@dataclass(eq=False)
class BandStep:
    """What a batch (not the call's last) returns for a band: its state, and copies of the
    rows its neighbours take as halos in the next batch (``None`` where there is no neighbour).

    The copies are made at the end of the batch, so the next batch may advance the state's
    buffer in place while a neighbour still reads them.
    """

    state: BandState
    south_rows: Any  # the band's first rows, the north halo of the band below
    north_rows: Any  # the band's last rows, the south halo of the band above


@sizeof.register(BandStep)
def _sizeof_step(step: BandStep) -> int:
    parts = (step.state, step.south_rows, step.north_rows)
    return sum(sizeof(p) for p in parts if p is not None)


def _halo_rows(block: Any, start: int, stop: int) -> Any:
    """A copy of rows ``start:stop`` of a block of the call's input (or of the capacity)."""
    return block[start:stop].copy()


def _edge_rows(step: BandStep, side: int) -> Any:
    """The rows a band's batch copied for its neighbour below (``side`` 0) or above (1)."""
    return step.north_rows if side == 0 else step.south_rows


def _capacity_block(*parts: Any) -> Any:
    """Concatenate a band's capacity rows (south halo, band, north halo; ``None`` skipped)."""
    rows = [p for p in parts if p is not None]
    return rows[0] if len(rows) == 1 else get_namespace(*rows).concatenate(rows)


def _extended_capacity(
    field: np.ndarray | da.Array, heights: tuple[int, ...], depth: int
) -> tuple[list[Any], HighLevelGraph | None, str]:
    """Each band's capacity extended by ``depth`` halo rows on its inner sides.

    Returns, per band, the block (a host array) or its key, the graph of those keys (``None``
    for a host field) and a token of the field.
    """
    n = len(heights)
    starts = _row_starts(heights)
    rows = [
        slice(
            starts[i] - (depth if i > 0 else 0),
            starts[i] + heights[i] + (depth if i < n - 1 else 0),
        )
        for i in range(n)
    ]
    if isinstance(field, np.ndarray):
        return [field[r] for r in rows], None, tokenize(field)
    aligned = field.rechunk((heights, -1))
    token = tokenize(aligned.name, depth)
    name, halo = f"ebm-capacity-{token}", f"ebm-capacity-halo-{token}"
    halos: dict[Hashable, Any] = {}
    for i in range(1, n):
        top = heights[i - 1]
        halos[(halo, i, 0)] = (_halo_rows, (aligned.name, i - 1, 0), top - depth, top)
    for i in range(n - 1):
        halos[(halo, i, 1)] = (_halo_rows, (aligned.name, i + 1, 0), 0, depth)
    blocks = {
        (name, i, 0): (
            _capacity_block,
            (halo, i, 0) if i > 0 else None,
            (aligned.name, i, 0),
            (halo, i, 1) if i < n - 1 else None,
        )
        for i in range(n)
    }
    source = set(aligned.__dask_layers__())
    layers: dict[str, Mapping[Hashable, Any]] = {name: blocks}
    dependencies = {name: set(source)}
    if halos:
        layers[halo], dependencies[halo] = halos, set(source)
        dependencies[name].add(halo)
    graph = aligned.__dask_graph__()
    graph = HighLevelGraph({**graph.layers, **layers}, {**graph.dependencies, **dependencies})
    return [(name, i, 0) for i in range(n)], graph, token


# -- time steps -----------------------------------------------------------------------------
def _batch_task(
    own: Any,
    south: Any,
    north: Any,
    capacity: Any,
    total_in: Any,
    start: int,
    capacity_below: int,
    edges: tuple[int, int] | None,
    *,
    params: EBMParams,
    grid: LatLonGrid,
    depth: int,
    step0: int,
    accumulate: bool,
) -> Any:
    """Advance band ``start : start + len(band)`` by ``depth`` steps, with its halos.

    Parameters
    ----------
    own : array or BandStep
        The band at step ``step0``: the input array in the first batch (copied, never
        changed), later the :class:`BandStep` returned by the previous batch (whose state is
        advanced in place).
    south, north : array, BandStep or None
        The ``depth`` rows below and above the band: a halo copy, or the neighbour's previous
        :class:`BandStep` (on the same worker), whose copied edge rows are taken (``None`` at a
        pole or for one band).
    capacity : array or None
        The band's capacity block in the first batch (``None`` later: its operators are in
        ``own``); its first ``capacity_below`` rows (and the operators') lie below the band.
    total_in : array or None
        With ``accumulate``, in the first batch: the band's running sum to continue (``None``:
        from zeros); later the sum travels in ``own``.
    start : int
        Global row of the band's first row.
    edges : (int, int) or None
        Rows to copy for the neighbours below and above (0: no neighbour there), the next
        batch's depth; ``None`` in the call's last batch, which returns the band (``[T, sum]``
        stacked on a new first axis with ``accumulate``) instead of a :class:`BandStep`.
    """
    if isinstance(south, BandStep):
        south = south.north_rows[-depth:]
    if isinstance(north, BandStep):
        north = north.south_rows[:depth]
    if isinstance(own, BandStep):
        state = own.state
    else:
        xp = get_namespace(own)
        # built once per band and call, then carried in the state (on the state's device)
        cap = xp.asarray(capacity, dtype=xp.float64)
        ops = make_band_operators(params, grid, cap, start - capacity_below)
        rows = own.shape[0]
        # the band in a buffer with margins for the deepest halos, the band's own from now on
        buffer = xp.empty((ops.nrows, own.shape[1]), dtype=xp.float64)
        buffer[capacity_below : capacity_below + rows] = own
        total = None
        if accumulate:
            total = xp.zeros_like(buffer[:rows]) if total_in is None else xp.array(total_in)
        state = BandState(buffer, capacity_below, rows, ops, total)
    rows = state.rows
    below = 0 if south is None else south.shape[0]
    above = 0 if north is None else north.shape[0]
    lo, hi = state.south - below, state.south + rows + above
    if below not in (0, depth) or above not in (0, depth) or lo < 0 or hi > state.ops.nrows:
        # guards the halo arithmetic of the graph
        raise RuntimeError(
            f"band at row {start}: halos of {below} and {above} rows for {depth} steps, "
            f"a buffer of {state.ops.nrows} rows with {state.south} below the band"
        )
    extended = state.buffer[lo:hi]  # a view: the steps advance the buffer
    if south is not None:
        extended[:below] = south
    if north is not None:
        extended[below + rows :] = north
    # the halo rows go stale from the outside in: a shrinking cone computes only what is valid
    kwargs = {"overwrite": True, "shrink": (below > 0, above > 0)}
    if accumulate:
        advance_with(
            extended,
            state.ops.rows(lo, hi),
            step0,
            depth,
            accumulate=True,
            total=state.total,
            total_rows=(below, below + rows),
            **kwargs,
        )
    else:
        advance_with(extended, state.ops.rows(lo, hi), step0, depth, **kwargs)
    band = state.band
    if edges is not None:
        below, above = edges
        return BandStep(
            state,
            band[:below].copy() if below else None,
            band[rows - above :].copy() if above else None,
        )
    xp = get_namespace(state.buffer)
    return xp.stack([band, state.total]) if accumulate else band


def advance(
    T: da.Array,
    params: EBMParams,
    grid: LatLonGrid,
    nsteps: int,
    batch_size: int,
    step0: int = 0,
    capacity: Any = None,
    accumulate: bool = False,
    workers: Sequence[str] | None = None,
    total: da.Array | None = None,
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
        Heat-capacity field; default :func:`~.params.heat_capacity` of ``params``. A host array
        enters the graph once (each band's rows in that band's first step task). Of a dask
        array (e.g. placed with :func:`place_bands`), the minimum that ``dt`` needs is computed
        in the first call and remembered by the array's name, which Dask takes to identify
        its contents.
    accumulate : bool, optional
        Also return the sum of the temperatures after each of the ``nsteps`` steps (the
        numerator of a time mean), computed in the same tasks. The sum adds one step at a
        time, so it has the same bits for any banding, ``batch_size`` and split into calls
        when each call continues the last one's sum (``total``).
    workers : sequence of str, optional
        A home worker address per band (:func:`band_homes`): band ``i``'s tasks are loosely
        restricted to ``workers[i]`` (see the module docstring). Default: no restrictions.
        Dask's low-level fusion drops them: persist with ``optimize_graph=False``.
    total : dask.array.Array, optional
        With ``accumulate``: the running sum to continue (shape ``grid.shape``); default zeros.

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
        T = T.rechunk({1: -1})  # rows must be whole: the zonal step solves along the row
    T = T.astype(np.float64)
    heights = T.chunks[0]
    if len(heights) > 1 and batch_size > min(heights):
        raise ValueError(
            f"batch_size={batch_size} is deeper than the smallest latitude band "
            f"({min(heights)} rows of {heights}); a task can only borrow halo rows from its "
            f"direct neighbours. Use batch_size <= {min(heights)} or fewer, taller bands "
            f"(e.g. to_bands(T, {max(1, grid.nlat // batch_size)}))."
        )
    field, c_min = _capacity_field(capacity, params, grid)
    params = params.resolved(grid, c_min)
    if total is not None:
        if not accumulate:
            raise ValueError("a running sum (total) needs accumulate=True")
        if tuple(total.shape) != grid.shape:
            raise ValueError(f"a running sum of shape {tuple(total.shape)}, the grid {grid.shape}")
        total = total.astype(np.float64).rechunk(T.chunks)
    if nsteps == 0:
        if not accumulate:
            return T
        return T, (da.zeros_like(T) if total is None else total)

    n = len(heights)
    if workers is not None and len(workers) != n:
        raise ValueError(f"{len(workers)} home workers for {n} bands")
    starts = _row_starts(heights)
    deepest = min(batch_size, nsteps) if n > 1 else 0
    capacity_blocks, capacity_graph, capacity_token = _extended_capacity(field, heights, deepest)
    graph = T.__dask_graph__()
    if capacity_graph is not None:
        graph = HighLevelGraph.merge(graph, capacity_graph)
    if total is not None:
        graph = HighLevelGraph.merge(graph, total.__dask_graph__())
    layers, dependencies = dict(graph.layers), dict(graph.dependencies)
    sum_name = None if total is None else total.name
    base = tokenize(capacity_token, heights, deepest, params, grid, accumulate, sum_name)
    src, src_layers = T.name, set(T.__dask_layers__())
    # the first batch also reads the capacity blocks, when they are keys
    first_layers = set() if capacity_graph is None else {capacity_blocks[0][0]}
    if total is not None:  # so does the running sum
        first_layers |= set(total.__dask_layers__())
    kind = "ebm-steps-sum" if accumulate else "ebm-steps"

    def beside(i: int, j: int) -> bool:
        """Whether bands ``i`` and ``j`` have one home worker (known only with ``workers``)."""
        return workers is not None and workers[i] == workers[j]

    done = 0
    while done < nsteps:
        depth = min(batch_size, nsteps - done)
        first, stop = step0 + done, step0 + done + depth
        last = done + depth == nsteps
        token = tokenize(base, src, first, depth, last)  # a last batch returns another type
        name, halo = f"{kind}-{first}-{stop}-{token}", f"ebm-halo-{first}-{stop}-{token}"
        halos: dict[Hashable, Any] = {}
        # each band's south (side 0) and north (side 1) halo: a halo task's key, or the
        # neighbour's previous step task itself where both bands have one home
        sources: list[list[Any]] = [[None, None] for _ in range(n)]
        for i in range(n):
            for side, j in ((0, i - 1), (1, i + 1)):
                if not 0 <= j < n:
                    continue
                if done and beside(i, j):
                    sources[i][side] = (src, j, 0)
                    continue
                if done == 0:  # a copy of the call's input rows
                    rows = (heights[j] - depth, heights[j]) if side == 0 else (0, depth)
                    halos[(halo, i, side)] = (_halo_rows, (src, j, 0), *rows)
                else:  # the rows band j's last batch copied, moved here
                    halos[(halo, i, side)] = (_edge_rows, (src, j, 0), side)
                sources[i][side] = (halo, i, side)
        task = functools.partial(
            _batch_task,
            params=params,
            grid=grid,
            depth=depth,
            step0=first,
            accumulate=accumulate,
        )
        following = min(batch_size, nsteps - done - depth)  # the next batch's depth
        steps = {
            ((name, 0, i, 0) if last and accumulate else (name, i, 0)): (
                task,
                (src, i, 0),
                *sources[i],
                capacity_blocks[i] if done == 0 else None,  # later: carried in the state
                (sum_name, i, 0) if done == 0 and sum_name is not None else None,
                starts[i],
                deepest if i > 0 else 0,
                None if last else (following * (i > 0), following * (i < n - 1)),
            )
            for i in range(n)
        }
        layers[name] = _homed(steps, workers, lambda key: key[-2])
        dependencies[name] = src_layers | (first_layers if done == 0 else set())
        if halos:
            # a halo task runs where the band it copies lives: (i, 0) band i-1, (i, 1) band i+1
            layers[halo] = _homed(halos, workers, lambda key: key[1] + 2 * key[2] - 1)
            dependencies[halo] = set(src_layers)
            dependencies[name].add(halo)
        src, src_layers = name, {name}
        done += depth

    graph = HighLevelGraph(layers, dependencies)
    if not accumulate:
        return da.Array(graph, src, T.chunks, meta=T._meta)  # numpy or cupy blocks, like T
    both = da.Array(graph, src, ((2,), *T.chunks), meta=meta_from_array(T._meta, ndim=3))
    return both[0], both[1]


def _homed(
    tasks: dict[Hashable, Any], workers: Sequence[str] | None, band: Callable[[Any], int]
) -> Mapping[Hashable, Any]:
    """``tasks`` as a graph layer, each task loosely restricted to the home of ``band(key)``."""
    if workers is None:
        return tasks
    homes = {key: [workers[band(key)]] for key in tasks}
    # the scheduler calls the annotation per key; a dict's bound method pickles
    annotations = {"workers": homes.__getitem__, "allow_other_workers": True}
    return MaterializedLayer(tasks, annotations=annotations)


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
