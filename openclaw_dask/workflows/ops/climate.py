"""The ops of ``workflows/climate.yaml``: forcing, the energy-balance model run, its analysis.

``climate.forcing`` builds the grid, land mask, heat capacity and annual-mean insolation;
``climate.ebm`` spins the model up and runs it (iterative: persisted and checkpointed every
``distributed.sync_interval`` steps), emitting monthly-mean temperature ``T(time, lat, lon)``;
``climate.analyse`` computes annual zonal means, the global-mean series, the ice edge per
hemisphere, the seasonal-amplitude map and PNG plots. All model parameters travel in the
outputs' attributes, so anyone can recompute North's analytic solution from the files.

Bands: the state is chunked in latitude bands of whole rows. A halo of ``K = batch_size`` rows
costs redundant work (a shrinking cone of ``K`` rows on each inner side) and each batch of ``K``
steps costs Dask's round trips (:data:`BATCH_OVERHEAD_UPDATES`), so :func:`band_count` picks
the number of bands (at most one per worker thread) whose slowest band takes the least time a
model step. One band (on two threads, the 2° default and every grid coarser than 0.3° with
the default ``K = 64``) needs no halo exchange at all, so one task then advances a whole
segment (up to a month or a sync window) instead of ``K`` steps.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, NamedTuple

import dask
import dask.array as da
import numpy as np
import xarray as xr
from dask.utils import format_bytes

from openclaw_dask.config.errors import nearby
from openclaw_dask.workflows import zarrio
from openclaw_dask.workflows.climate import (
    EBMParams,
    LatLonGrid,
    advance,
    global_mean,
    heat_capacity,
    ice_edge_latitude,
    idealized_land_mask,
    insolation_steps,
    regrid,
)
from openclaw_dask.workflows.climate.stepper import (
    band_chunks,
    band_homes,
    place_bands,
    quietest_worker,
)
from openclaw_dask.workflows.context import IterativeOp, StepContext
from openclaw_dask.workflows.ops.fields import (
    bad_cells,
    coverage_problem,
    land_mask_field,
    land_mask_store,
    order_problem,
    read_land_mask,
    zarr_node,
)
from openclaw_dask.workflows.registry import RunFacts, register

DAYS_PER_YEAR = 365.25
#: The monthly means' ``time``: CF dates, so that ``xarray.open_zarr`` gives dates and
#: ``time.month`` / ``time.season`` groupings work. The model's year is 365.25 days in twelve
#: equal months from 1 January; the julian calendar's years average the same length, so each
#: month's mid-point keeps within 0.75 day of the date it is given, in its own month, for any
#: run length (a 365-day calendar would drift a day every four years).
TIME_ATTRS = {
    "units": "days since 0001-01-01 00:00:00",
    "calendar": "julian",
    "standard_name": "time",
    "long_name": "mid-month model time (year 1: the first after the spin-up)",
}
#: Most model years a run records (``years``), and most it spins up (``spinup_years``): the last
#: whose monthly dates xarray decodes. cftime counts microseconds from ``TIME_ATTRS``' origin in
#: an int64, which ends in the year 292,271 (``xr.open_zarr`` of a longer run, in the analysis
#: and for any reader, raises "unable to decode time units"). The spin-up records no dates; the
#: same bound keeps the run's step count, ``(spinup_years + years) * steps_per_year``, within
#: int64 on every grid that fits a memory (it would need ~1.6e13 steps a year, a grid finer than
#: 0.0001 degree), and is 15,000 times the default spin-up.
MAX_YEARS = int(((2**63 - 1) / 1e6 / 86400 / (DAYS_PER_YEAR / 12) + 0.5) // 12)
#: The analysis' ``year`` coordinate: the year of ``time``'s dates. "years" is no unit xarray
#: decodes as a time span (it would turn "days" into timedelta64).
YEAR_ATTRS = {"units": "years", "long_name": "model year (1: the first after the spin-up)"}
#: Dask's cost of one batch of band tasks (their round trips, the halo rows' transfers, the
#: wait for the slower neighbour), in cell-updates of the compiled step on one core, so that it
#: weighs against a band's rows whatever the core's speed. Fitted to 1 band against 2 on the
#: 2-core VM's default 2 workers x 1 thread (2026-12-05, Zen 2, interleaved on one cluster,
#: 1024-step graphs, each timed as the ``stencil`` suite times its Dask run; a batch of two
#: bands = its slower band's row-steps at the one-band rate + this): 0.25° K=64 15.7 M (646
#: against 826 Mcell/s), K=32 11.8 M (638 / 725), K=128 22 M (633 / 838), 0.3° K=64 13.7 M
#: (620 / 728), 0.4° K=64 11.8 M (634 / 616, one band faster). The 16-core Xeon's stencil run
#: (2026-12-04, 16 bands) leaves 9-18 M a batch at its per-thread rate (``benchmarks/README``).
BATCH_OVERHEAD_UPDATES = 15_000_000
#: The same where the cluster has one worker process: a band takes its neighbours' step tasks
#: as halos, so a batch has no halo task and no transfer. Fitted the same way on one worker of
#: two threads: 0.25° K=16 6.3 M (632 / 709), K=32 8.5 M (643 / 823), K=64 10.9 M
#: (647 / 912), 0.3° K=32 7.0 M (610 / 735), 0.4° K=64 7.8 M (613 / 701), 0.5° K=64 7.1 M
#: (602 / 590, one band faster).
ONE_PROCESS_BATCH_OVERHEAD_UPDATES = 7_500_000


def _coords(grid: LatLonGrid) -> dict[str, Any]:
    return {
        "lat": ("lat", grid.lat, {"units": "degrees_north", "long_name": "latitude"}),
        "lon": ("lon", grid.lon, {"units": "degrees_east", "long_name": "longitude"}),
    }


def choose_bands(grid: LatLonGrid, ctx: StepContext) -> int:
    """Latitude bands for ``ctx``'s cluster and config: :func:`band_count`."""
    return band_count(grid.shape, ctx.worker_threads, ctx.batch_size, ctx.worker_processes)


def one_band_segment(steps_per_year: int, sync_interval: int) -> int:
    """The most steps a task of one band advances: the model advances month by month (the
    monthly means are summed at each month's end), in windows of ``sync_interval`` steps.

    >>> one_band_segment(8932, 5000)  # 2°: a month is 744 or 745 steps
    745
    """
    return min(-(-steps_per_year // 12), sync_interval)


def steps_per_task(batch_size: int, bands: int) -> int:
    """``K``, or with one band (which exchanges no halo) a whole segment per task."""
    return batch_size if bands > 1 else 2**31


def band_count(shape: tuple[int, int], threads: int, batch_size: int, processes: int) -> int:
    """Latitude bands, at most one per thread, for the shortest time per model step.

    One band advances its rows and nothing else, a whole segment per task. ``n`` bands run at
    once, each at least ``K`` rows tall (its neighbours' halos), and a batch of ``K`` steps
    takes as long as the slowest band: its rows, a halo cone of ``(K + 1) / 2`` rows on
    average for each inner side, and Dask's cost of a batch (:data:`BATCH_OVERHEAD_UPDATES`,
    or :data:`ONE_PROCESS_BATCH_OVERHEAD_UPDATES` on one worker process). So more bands pay
    only where the rows they save outweigh the cones and the batches' overhead: on two threads
    the 2° default and grids coarser than 0.3° (0.45° on one worker process) run one band at
    the default ``K = 64``; from three bands on more is faster, so a many-core machine gets one
    band a thread once the bands are ``K`` tall (16 threads: 16 bands at 0.125° and 0.0625°).

    Deterministic mode needs no fixed count: the stepper, the monthly sums and the analysis
    give the same bits for any banding (each sums in an order the bands do not change).

    Parameters
    ----------
    shape : (int, int)
        The grid's rows and columns.
    threads : int
        The cluster's worker threads.
    batch_size : int
        ``K``, steps per halo exchange.
    processes : int
        The cluster's worker processes.

    Examples
    --------
    >>> band_count((90, 180), threads=2, batch_size=64, processes=2)  # 2°: 45 rows < K
    1
    >>> band_count((720, 1440), threads=2, batch_size=64, processes=2)  # 0.25°: 555 rows, not 720
    2
    """
    nlat, nlon = shape
    batch = BATCH_OVERHEAD_UPDATES if processes > 1 else ONE_PROCESS_BATCH_OVERHEAD_UPDATES
    overhead = batch / (nlon * batch_size)  # in rows a step
    best, fastest = 1, float(nlat)  # one band: its rows a step, no batches
    for n in range(2, min(threads, nlat // batch_size) + 1):
        sides = 1 if n == 2 else 2  # the slowest band's inner sides
        rows = -(-nlat // n) + sides * (batch_size + 1) / 2 + overhead
        if rows < fastest:
            best, fastest = n, rows
    return best


def _placed(
    client: Any, field: np.ndarray, bands: tuple[int, ...], first: str | None = None
) -> da.Array:
    """A host field as a dask array in ``bands``, sent to the bands' homes once when there is a
    cluster (:func:`place_bands`, from worker ``first``: :func:`band_homes`), not inside a
    graph: at 0.125° the capacity and the first state made Dask warn of 32-36 MiB graphs."""
    if client is None:
        return da.from_array(field, chunks=(bands, -1))
    placed = place_bands(client, field, band_homes(client.nthreads(), len(bands), first))
    assert placed.chunks[0] == bands, (placed.chunks[0], bands)  # both are band_chunks(nlat, n)
    return placed


#: Bytes a cell of the grid the forcing step surely holds at once, in the submitting process:
#: the land mask (bool) and the heat capacity (float64). A lower bound: its temporaries, the
#: model's state and the workers' copies come on top.
FORCING_BYTES_PER_CELL = 9


def _check_forcing(args: Mapping[str, Any]) -> dict[str, str]:
    """The grid must exist: a resolution that divides 180° (what :class:`LatLonGrid` checks),
    and its forcing fields fit this machine's memory (a workflow that writes ``resolution:``
    itself skips ``climate.yaml``'s ``min``: 0.001° failed in the forcing step, after the
    cluster started, "Unable to allocate 60.3 GiB"); a land mask of the user's must be one
    (:func:`~.fields.land_mask_field`), and of a run with land. A sun that shines
    (``solar_constant > 0``), a tilt of 0-90°, and only with the seasons it sets."""
    problem = _check_sun(args) or _check_energy(args)
    if problem:
        return problem
    if args.get("land_mask"):
        if not args.get("land", True):
            return {"land_mask": "a land mask for a run without land (land: false); leave one out"}
        try:
            land_mask_field(str(args["land_mask"]))
        except ValueError as exc:
            return {"land_mask": str(exc)}
    try:
        grid = LatLonGrid(float(args.get("resolution", 2.0)))
    except (TypeError, ValueError) as exc:
        return {"resolution": str(exc)}
    held = grid.size * FORCING_BYTES_PER_CELL
    if held > 2**30:  # only then ask the machine (0.1 s)
        from openclaw_dask.config.hardware import detect_hardware

        memory = detect_hardware().memory
        if held > memory:
            return {
                "resolution": f"the {grid.resolution:g}° grid has {grid.nlat:,} x "
                f"{grid.nlon:,} cells, whose land mask and heat capacity alone take "
                f"{held / 2**30:,.1f} GiB, more than this machine's {memory / 2**30:.1f} GiB; "
                "use a coarser grid"
            }
    return {}


#: ``S0`` of North, Cahalan & Coakley (1981)'s calibration, ``4 Q`` (W m⁻²).
DEFAULT_SOLAR_CONSTANT = 4.0 * EBMParams.Q


def _check_sun(args: Mapping[str, Any]) -> dict[str, str]:
    """``solar_constant`` and ``obliquity`` (a workflow of the user's skips climate.yaml's
    ranges; a tilt beside the annual-mean sun would be dropped without a word)."""
    # (both are floats here: the workflow checks arguments against the op's annotations first)
    s0 = args.get("solar_constant", DEFAULT_SOLAR_CONSTANT)
    if not 0 < s0 < math.inf:
        return {"solar_constant": f"{s0!r} is not a solar constant: a number of W m-2 above 0"}
    tilt = args.get("obliquity", EBMParams.obliquity)
    if not 0 <= tilt <= 90:
        return {"obliquity": f"{tilt!r} is not an obliquity: a number of degrees from 0 to 90"}
    if tilt != EBMParams.obliquity and not args.get("seasonal_cycle", True):
        return {
            "obliquity": f"{tilt:g}° sets the seasons' sun, and seasonal_cycle is false (the "
            f"annual-mean sun is North's 1 + s2 P2, of today's {EBMParams.obliquity:g}°); "
            "turn the seasons on or leave the obliquity at its default"
        }
    return {}


def _check_energy(args: Mapping[str, Any]) -> dict[str, str]:
    """``olr_intercept``, ``olr_slope`` and ``diffusivity``: ``A`` any number, ``B > 0`` (with
    ``B ≤ 0`` warming emits no more: no equilibrium, a runaway), ``A < 273.15 B`` (the
    planet stops emitting above absolute zero, which it then never cools past), ``D ≥ 0`` (a
    negative diffusion sharpens every contrast without bound)."""
    a = args.get("olr_intercept", EBMParams.A)
    if not math.isfinite(a):
        return {"olr_intercept": f"{a!r} is not an A of A + B T: a number of W m-2"}
    b = args.get("olr_slope", EBMParams.B)
    if not 0 < b < math.inf:
        return {
            "olr_slope": f"{b!r} is not a B of A + B T: a number of W m-2 K-1 above 0 (at 0 "
            "or below, a warmer planet emits no more and the run has no equilibrium)"
        }
    if -a / b <= ABSOLUTE_ZERO:
        # no cell cools below -A/B, where A + B T reaches 0, or below its start; past 273.15 B
        # an unlit cell kept cooling below absolute zero (A = 1000: a -412 degC mean, exit 0)
        return {
            "olr_intercept": f"{a!r} is not an A of A + B T with B = {b:g}: the outgoing "
            f"radiation falls to 0 at T = -A/B = {-a / b:.4g} degC, at or below absolute zero, and "
            f"an unlit planet cools past {ABSOLUTE_ZERO:g} degC; expected A below "
            f"{-ABSOLUTE_ZERO:g} B = {-ABSOLUTE_ZERO * b:.5g} W m-2"
        }
    d = args.get("diffusivity", EBMParams.D)
    if not 0 <= d < math.inf:
        return {"diffusivity": f"{d!r} is not a diffusivity: a number of W m-2 K-1, 0 or above"}
    return {}


class ForcingSetup(NamedTuple):
    """What ``climate.forcing`` computes its fields from (:func:`forcing_setup`)."""

    #: the model grid
    grid: LatLonGrid
    #: the model's parameters, ``dt`` the stable step (:meth:`EBMParams.resolved`)
    params: EBMParams
    #: land (True) or ocean, ``grid.shape``
    mask: np.ndarray
    #: whole time steps a model year (the forcing's ``steps_per_year``, which the model reads)
    steps_per_year: int


def forcing_setup(
    *,
    resolution: float,
    land: bool,
    seasonal_cycle: bool,
    ice_albedo: bool,
    land_mask: str,
    solar_constant: float,
    obliquity: float,
    olr_intercept: float,
    olr_slope: float,
    diffusivity: float,
) -> ForcingSetup:
    """The grid, parameters, land mask and steps a year of ``climate.forcing``'s arguments.

    The forcing op computes from these, and the steps' ``describe`` says their size from them,
    so the size said before a run is the run's: the stable step depends on ``D``, the grid and
    the smallest heat capacity, which the land mask decides (no land: the ocean's).

    Parameters
    ----------
    resolution, land, seasonal_cycle, ice_albedo, land_mask, solar_constant, obliquity, \
olr_intercept, olr_slope, diffusivity
        As :func:`forcing` takes them.

    Returns
    -------
    ForcingSetup
    """
    grid = LatLonGrid(resolution)
    params = EBMParams.from_switches(
        seasonal_cycle=seasonal_cycle,
        ice_albedo=ice_albedo,
        land=land,
        Q=solar_constant / 4.0,
        obliquity=obliquity,
        A=olr_intercept,
        B=olr_slope,
        D=diffusivity,
    )
    if not land:
        mask = np.zeros(grid.shape, dtype=bool)
    elif land_mask:
        mask = read_land_mask(land_mask, grid)
    else:
        mask = idealized_land_mask(grid)
    params = params.resolved(grid, float(heat_capacity(params, grid, mask).min()))
    return ForcingSetup(grid, params, mask, round(params.steps_per_year))


def _grid_text(grid: LatLonGrid) -> str:
    """``the 90 x 180 grid (2°, 16,200 cells)``."""
    return f"the {grid.nlat:,} x {grid.nlon:,} grid ({grid.resolution:g}°, {grid.size:,} cells)"


def _count_text(n: int) -> str:
    """``3,183,364,800 (3.18e9)``: a large count exact, and its size at a glance."""
    mantissa, exponent = f"{n:.2e}".split("e")
    return f"{n:,}" if n < 10**6 else f"{n:,} ({mantissa}e{int(exponent)})"


#: Where a step's size meets a time: this machine's measured rate, never an assumed one.
RATE_HINT = "this machine's cell-updates/s: `openclaw-dask benchmark --suite stencil` measures them"


def _layout_text(grid: LatLonGrid, bands: int, batch: int, run: RunFacts, segment: int) -> str:
    """How ``climate.ebm`` will lay the grid out: its bands (``bands``, or
    :func:`band_count` of the planned cluster's threads) and the halo cones' extra work.
    ``segment``: the most steps a task of one band advances (:func:`one_band_segment`)."""
    if not bands and (run.threads is None or run.processes is None):
        return (
            "latitude bands: chosen from the cluster's worker threads when the step starts "
            "(the cluster at the given address has its own)"
        )
    n = bands or band_count(grid.shape, run.threads or 1, batch, run.processes or 1)
    rows = band_chunks(grid.nlat, n)
    size = f"{rows[0]:,} rows" if len(set(rows)) == 1 else f"{min(rows):,}-{max(rows):,} rows"
    chosen = "as given (bands)" if bands else f"for the planned {run.threads} worker threads"
    if n == 1:
        return (
            f"latitude bands: 1, {chosen}: one band exchanges no halo, so a task advances a "
            f"month of steps (at most {segment:,})"
        )
    # each of the 2 (n - 1) inner sides recomputes a cone of (K + 1) / 2 rows a step on average
    extra = (n - 1) * (batch + 1) / grid.nlat
    return (
        f"latitude bands: {n} of {size}, {chosen}: {batch} steps a task "
        f"(distributed.batch_size); the halo cones add {extra:.1%} to the cell-updates"
    )


def _describe_forcing(args: Mapping[str, Any], run: RunFacts) -> str:
    """``climate.forcing``'s size: its grid, its store's bytes and the sun's time steps."""
    grid, params, _, spy = forcing_setup(**args)
    f8 = np.dtype(np.float64).itemsize
    # what forcing() writes: land_mask int8 and heat_capacity float64 a cell, insolation and
    # area_weight float64 a row, and the lat and lon coordinates
    stored = grid.size * (np.dtype(np.int8).itemsize + f8) + f8 * (3 * grid.nlat + grid.nlon)
    size = (
        f"{_grid_text(grid)}; forcing.zarr {format_bytes(stored)} before compression; the "
        f"annual-mean sun summed over {spy:,} time steps of {grid.nlat:,} rows"
    )
    far = _far_climate(params)
    return f"{size}\n{far}" if far else size


#: Global means (°C) beyond which the linear outgoing radiation is said to mean nothing: a
#: guard against typed-in values (``olr_intercept: -203.3``, the sign lost, puts the planet
#: near 209 °C), not a physical bound; a snowball (about -36 °C with the defaults) or a
#: hothouse tens of degrees warmer than today passes without a word.
PLAUSIBLE_MEAN = (-100.0, 100.0)


def _far_climate(params: EBMParams) -> str | None:
    """A ``note:`` where the parameters' limiting planets settle outside
    :data:`PLAUSIBLE_MEAN` (the run would go on and complete with such a climate, exit 0)."""
    free, frozen = params.global_equilibria()
    low, high = PLAUSIBLE_MEAN
    if all(low <= t <= high for t in (free, frozen) if t is not None):
        return None
    states = f"{free:,.1f} °C ice-free" + (
        "" if frozen is None else f" ({frozen:,.1f} °C frozen over)"
    )
    return (
        f"note: with A = {params.A:g}, B = {params.B:g} and Q = {params.Q:g} the planet's global "
        f"mean settles near {states}: the outgoing radiation A + B T is a fit to today's "
        f"climate and means nothing outside {low:g} to {high:g} °C; check "
        "olr_intercept, olr_slope and solar_constant"
    )


@register("climate.forcing", outputs=("forcing",), check=_check_forcing, describe=_describe_forcing)
def forcing(
    ctx: StepContext,
    *,
    resolution: float = 2.0,
    land: bool = True,
    seasonal_cycle: bool = True,
    ice_albedo: bool = True,
    land_mask: str = "",
    solar_constant: float = DEFAULT_SOLAR_CONSTANT,
    obliquity: float = EBMParams.obliquity,
    olr_intercept: float = EBMParams.A,
    olr_slope: float = EBMParams.B,
    diffusivity: float = EBMParams.D,
) -> dict[str, xr.Dataset]:
    """Grid, land mask, heat capacity and annual-mean insolation; the parameters as attrs.

    ``land_mask``: a Zarr store with ``land_mask(lat, lon)`` (1 land, 0 ocean, over the whole
    sphere; another run's ``forcing.zarr``, or its run directory), regridded; ``""``: the idealised
    continents. ``solar_constant``: ``S0`` in W m⁻² (``Q = S0/4``; Budyko and Sellers'
    experiment: the ice edge moves equatorward as it falls, to a snowball). ``obliquity``:
    the axial tilt in degrees, the seasons' strength (0: none); the ice-free albedo keeps
    today's latitude profile (North's fit to today's tilt), so at 90° the poles still reflect
    more than the equator and stay colder (no equatorial ice belt, unlike high-obliquity
    studies with their own albedo). ``olr_intercept``,
    ``olr_slope``: ``A`` and ``B`` of the outgoing long-wave radiation ``A + B T`` (``1/B`` is
    the equilibrium warming per W m⁻² of forcing); ``diffusivity``: ``D``, the meridional heat
    transport (the stable time step shrinks as ``1/D``).
    """
    grid, params, mask, spy = forcing_setup(
        resolution=resolution,
        land=land,
        seasonal_cycle=seasonal_cycle,
        ice_albedo=ice_albedo,
        land_mask=land_mask,
        solar_constant=solar_constant,
        obliquity=obliquity,
        olr_intercept=olr_intercept,
        olr_slope=olr_slope,
        diffusivity=diffusivity,
    )
    source = str(land_mask_store(land_mask)) if land and land_mask else "idealised"
    capacity = heat_capacity(params, grid, mask)
    # annual mean of the orbital insolation at every row (what the seasons average to), summed
    # step by step: a list of every step's column held spy x nlat floats (3.3 GB at 0.25°,
    # 26 GB at 0.125°); the running sum adds in the same order, so the bits are np.mean's
    s = np.zeros(grid.nlat)
    for k0 in range(0, spy, 1024):
        for row in insolation_steps(params, grid.sin_lat, grid.cos_lat, k0, min(1024, spy - k0)):
            s += row
    s /= spy
    rows = band_chunks(grid.nlat, choose_bands(grid, ctx))
    first = quietest_worker(ctx.client) if ctx.client is not None else None
    attrs = {**params.to_attrs(), "resolution": resolution, "steps_per_year": spy}
    ds = xr.Dataset(
        {
            "land_mask": (
                ("lat", "lon"),
                _placed(ctx.client, mask.astype(np.int8), rows, first),
                {
                    "long_name": "land (1) or ocean (0)",
                    "units": "1",
                    "flag_values": [0, 1],
                    "flag_meanings": "ocean land",
                    "source": source,
                },
            ),
            "heat_capacity": (
                ("lat", "lon"),
                _placed(ctx.client, capacity, rows, first),
                {"units": "J m-2 K-1", "long_name": "column heat capacity"},
            ),
            "insolation": (
                "lat",
                params.Q * s,
                {"units": "W m-2", "long_name": "annual-mean insolation"},
            ),
            "area_weight": (
                "lat",
                grid.area_weights,
                {"units": "1", "long_name": "cell area / sphere area"},
            ),
        },
        coords=_coords(grid),
        attrs=attrs,
    )
    return {"forcing": ds}


def _bands_problem(bands: int, nlat: int, batch_size: int, resolution: float) -> str | None:
    """Why the grid and ``distributed.batch_size`` refuse a ``bands:``, in workflow terms.

    Needs the grid (the forcing step's ``resolution``) and the config: ``climate.ebm``'s
    ``check_run`` asks before the run starts, and the op again when its step starts (a grid
    from another forcing op, or the op called from Python).
    """
    if bands > nlat:
        return f"{bands} is more than the {nlat} rows of the {resolution}° grid"
    lowest = min(band_chunks(nlat, bands))
    if bands > 1 and lowest < batch_size:
        return (
            f"{bands} cuts the {resolution}° grid's {nlat} rows into bands of {lowest}, "
            f"fewer than distributed.batch_size={batch_size} (a task borrows that many halo "
            f"rows from each neighbour); use fewer bands, batch_size <= {lowest}, or bands: 0 "
            "to let the step choose"
        )
    return None


def _check_bands(bands: int, nlat: int, batch_size: int, resolution: float) -> None:
    """:func:`_bands_problem` as a ``ValueError`` that names ``bands``."""
    problem = _bands_problem(bands, nlat, batch_size, resolution)
    if problem:
        raise ValueError(f"bands: {problem}")


#: Default spin-up: the global mean relaxes towards equilibrium with an e-folding time of ~2.2
#: model years (a 50 m ocean, 25 % land), so from the default start (10 °C, 4.2 K below the
#: 14.2 °C equilibrium) 3 years left it 0.8 K too cold and drifting 0.35 K a year; after 20 the
#: drift is below 0.001 K a year (measured at 2° and 4°).
SPINUP_YEARS = 20


#: 0 K in degC: the model's temperatures (an initial store's cells, ``initial_temperature``) must
#: lie above it.
ABSOLUTE_ZERO = -273.15


def start_profile(initial_temperature: float, sin_lat: np.ndarray) -> np.ndarray:
    """The cold start's temperature (degC) at latitudes ``sin_lat``: ``initial_temperature``
    as the global mean, warm at the equator and 20 K colder at the poles (the ice caps grow to
    their equilibrium edge in the spin-up)."""
    return initial_temperature + 20.0 * (1.0 / 3.0 - sin_lat**2)


#: The lowest ``initial_temperature``: its start profile's poles are at absolute zero.
COLDEST_START = ABSOLUTE_ZERO - float(start_profile(0.0, np.ones(1))[0])
#: ``initial_temperature``'s default: a cold start's global mean (°C), near today's climate.
COLD_START = 10.0


def initial_store(path: str) -> Path:
    """The absolute path of the ``final.zarr`` that ``path`` names (itself, or in a run
    directory); ``ValueError`` when there is none."""
    store = Path(path).expanduser().resolve()
    if (store / "final.zarr").is_dir():
        store = store / "final.zarr"
    expected = "expected a run's final.zarr, or the run directory that holds it"
    if store.exists() and not store.is_dir():  # run.json, or a file inside the store
        above = store.parent
        inside = above.name == "final.zarr" or (above / "final.zarr").is_dir()
        hint = f"; did you mean '{os.path.dirname(path)}'?" if inside else ""
        raise ValueError(f"{path}: a file, not a Zarr store or run directory; {expected}{hint}")
    if not store.is_dir():
        where = "" if Path(path).expanduser().is_absolute() else f" (here: {store})"
        raise ValueError(
            f"{path}: no such Zarr store or run directory{where}; {expected}"
            + nearby(path, folders=True)
        )
    if (store / ".zarray").is_file() or zarr_node(store) == "array":
        # zarr's own "An array already exists in store ... at path ." named no fix
        raise ValueError(
            f"{path}: a Zarr array, not a store; {expected}; did you mean "
            f"'{os.path.dirname(path.rstrip('/'))}'?"
        )
    if not (store / "zarr.json").is_file() and not (store / ".zgroup").is_file():
        # said in workflow terms: zarr's own "No group found in store" named neither the run
        # that had not finished nor the run of another workflow
        if store.name == "final.zarr":  # in a run directory, or named itself
            raise ValueError(
                f"{path}: {store.name} is not a Zarr store (no zarr.json: empty, or its writing "
                "did not finish); expected a climate run's final.zarr"
            )
        raise ValueError(f"{path}: {_not_a_state(store)}")
    return store


def _not_a_state(folder: Path) -> str:
    """Why ``folder``, a directory that is no Zarr store and holds no ``final.zarr``, is not a
    state to start from: a run that has not finished, another workflow's run, or neither."""
    import json

    expected = "expected a climate run's final.zarr, or the run directory that holds it"
    try:
        record = json.loads((folder / "run.json").read_text())
        name, status = str(record["workflow"]["name"]), str(record.get("status", "unknown"))
    except FileNotFoundError:
        return f"neither a run directory (no run.json) nor a Zarr store; {expected}"
    except (OSError, ValueError, KeyError, TypeError):
        return f"a run directory whose run.json cannot be read, and no final.zarr; {expected}"
    if status != "completed":
        return (
            f"a run of {name} that has not finished (status: {status}), so it has no "
            f"final.zarr yet; continue it with `openclaw-dask submit --resume {folder}`, or "
            "name a run that completed"
        )
    return f"a completed run of workflow {name!r}, which wrote no final.zarr; {expected}"


def initial_field(path: str) -> xr.DataArray:
    """The temperature ``T(lat, lon)`` (°C) of another run's ``final.zarr`` (or of the run
    directory that holds one), to start from; lazy, so that checking it reads no data.

    Raises
    ------
    ValueError
        The path holds no such field (the message says what was found).
    """
    store = initial_store(path)
    # another store of a climate run (monthly.zarr, forcing.zarr): its final.zarr is beside
    final = store.parent / "final.zarr"
    hint = f"; did you mean '{final}'?" if final.is_dir() and final != store else ""
    try:
        # not consolidated: a user's store may have no consolidated metadata (xarray then
        # warns on the terminal), and T, lat and lon are three small reads anyway
        T = xr.open_zarr(store, consolidated=False)["T"]
    except (KeyError, OSError, ValueError) as exc:
        raise ValueError(
            f"{store}: not a climate run's final state (T(lat, lon)): {exc}{hint}"
        ) from None
    lat, lon = (T[c].values if c in T.coords else None for c in ("lat", "lon"))
    if T.dims != ("lat", "lon") or lat is None or lon is None:
        raise ValueError(
            f"{store}: T has dimensions {T.dims}, expected (lat, lon), with coords{hint}"
        )
    problem = order_problem("T", lat, lon)
    if problem:
        raise ValueError(f"{store}: {problem}")
    if T.attrs.get("units", "degC") != "degC":
        raise ValueError(f"{store}: T is in {T.attrs['units']!r}, expected degC")
    return T


def check_initial(path: str) -> None:
    """:func:`initial_field`, then what its coordinates and values must be to start a run:
    over the whole sphere (:func:`regrid` would fill what is missing with the nearest row's or
    column's value) and finite, above absolute zero (one NaN cell spread over the globe and
    the run ended with NaN everywhere, exit 0). Reads the field: 52 MB at 0.1°.

    Raises
    ------
    ValueError
        Saying what the field holds and what was expected.
    """
    T = initial_field(path)
    store = initial_store(path)
    lat, lon = T["lat"].values, T["lon"].values
    problem = coverage_problem(store, "T", lat, lon)
    if problem:
        raise ValueError(problem)
    values = np.asarray(T.values, dtype=np.float64)
    for bad, what, expected in (
        (
            ~np.isfinite(values),
            "NaN or infinite",
            "a finite value in every cell (one NaN spreads over the globe)",
        ),
        (values <= ABSOLUTE_ZERO, "at or below absolute zero", f"degC above {ABSOLUTE_ZERO:g}"),
    ):
        if bad.any():
            raise ValueError(
                f"{store}: T is {what} {bad_cells(bad, values, lat, lon)}; expected {expected}"
            )


#: What ``climate.ebm`` reads of its source step's dataset, besides the model parameters (each
#: :class:`EBMParams` field that is missing takes its default).
FORCING_ATTRS = ("resolution", "steps_per_year", "dt")


def _check_forcing_dataset(ds: xr.Dataset, source: str) -> None:
    """``ds`` holds what ``climate.ebm`` reads: a user's own forcing op (another land mask,
    another sun) that returned a dataset without ``climate.forcing``'s attributes failed with
    "KeyError: 'resolution'", which named neither the step nor what it should have held.

    Raises
    ------
    ValueError
        Naming the step, what is missing and where it comes from.
    """
    missing = [f"attribute {a!r}" for a in FORCING_ATTRS if a not in ds.attrs]
    if "heat_capacity" not in ds.data_vars:
        missing.append("variable 'heat_capacity' (lat, lon)")
    if missing:
        raise ValueError(
            f"the output of step {source!r} lacks {', '.join(missing)}: climate.ebm reads the "
            "grid, the time step and the model's parameters from its source's dataset; start from "
            "climate.forcing's (call openclaw_dask.workflows.ops.climate.forcing in your op "
            "and change what you need, keeping its attributes)"
        )


def run_steps(spinup_years: int, years: int, steps_per_year: int) -> int:
    """Time steps of a ``climate.ebm`` run: the spin-up's and the recorded years'."""
    return (spinup_years + years) * steps_per_year


def state_dataset(
    grid: LatLonGrid, attrs: Mapping[str, Any], T: da.Array, total: da.Array, count: int
) -> xr.Dataset:
    """``climate.ebm``'s state: the temperature ``T``, the month's running sum ``total`` and
    its ``count`` of steps (a checkpoint restarts the month exactly)."""
    return xr.Dataset(
        {
            "T": (("lat", "lon"), T, {"units": "degC", "long_name": "surface temperature"}),
            "month_sum": (("lat", "lon"), total, {"units": "degC"}),
            "month_steps": ((), np.int64(count)),
        },
        coords=_coords(grid),
        attrs=attrs,
    )


def month_dataset(
    grid: LatLonGrid, attrs: Mapping[str, Any], mean: da.Array, month_index: int
) -> xr.Dataset:
    """One record of ``monthly``: the mean ``T`` of month ``month_index`` (0: the first after
    the spin-up), dated at the month's middle."""
    days = (month_index + 0.5) * DAYS_PER_YEAR / 12
    return xr.Dataset(
        {
            "T": (
                ("time", "lat", "lon"),
                mean[None],
                {
                    "units": "degC",
                    "long_name": "monthly-mean surface temperature",
                    "cell_methods": "time: mean",
                },
            )
        },
        coords={
            "time": ("time", [days], TIME_ATTRS),
            **_coords(grid),
        },
        attrs=attrs,
    )


@register("climate.ebm")
class EnergyBalanceModel(IterativeOp):
    """Spin up and run the 2-D energy-balance model; emit monthly means of T.

    The state holds the temperature and the running sum of the current month, so a checkpoint
    restarts the month exactly.
    """

    outputs = ("monthly", "final")
    step_args = ("source",)
    #: a run's final.zarr is in equilibrium: no spin-up again
    start_from_run: ClassVar[Mapping[str, Any]] = {"initial": "{run}", "spinup_years": 0}
    append_dim = "time"
    optimize_graphs = False  # keeps the bands' home-worker restrictions (see ``advance``)

    @staticmethod
    def check_args(args: Mapping[str, Any], store: bool = True) -> dict[str, str]:
        """Run lengths, the band count and the initial state, before the run starts (``store``:
        the initial store too, which :func:`check_initial` reads)."""
        # an argument left out: its default; bands has no upper bound here (the grid's rows,
        # checked when the step starts)
        limits = {"years": (1, MAX_YEARS), "spinup_years": (0, MAX_YEARS), "bands": (0, None)}
        problems = {}
        for name, (least, most) in limits.items():
            value = args.get(name, least)
            wrong = isinstance(value, bool) or not isinstance(value, int)
            if wrong or value < least or (most is not None and value > most):
                expected = f"from {least} to {most}" if most is not None else f">= {least}"
                problems[name] = f"expected an integer {expected}, got {value!r}"
                if name == "years" and not wrong and value > most:  # type: ignore[operator]
                    problems[name] += " (the last year whose dates xarray decodes)"
        start = args.get("initial_temperature", COLD_START)
        if isinstance(start, bool) or not isinstance(start, int | float):
            problems["initial_temperature"] = f"expected a number (degC), got {start!r}"
        elif not math.isfinite(start) or start <= COLDEST_START:
            # the same bounds as an initial store's cells (check_initial), at the poles
            problems["initial_temperature"] = (
                "expected a finite temperature whose start profile stays above absolute zero "
                f"(the poles start {COLDEST_START - ABSOLUTE_ZERO:.4g} K colder: above "
                f"{COLDEST_START:.6g} degC), got {start!r}"
            )
        if args.get("initial"):
            try:
                if store:
                    check_initial(str(args["initial"]))
            except ValueError as exc:
                problems["initial"] = str(exc)
            if "initial_temperature" not in problems and start != COLD_START:
                # a start from another run takes its temperatures: a cold start's mean given
                # beside it had been dropped without a word
                problems["initial_temperature"] = (
                    f"{start!r} is a cold start's global mean, but the run starts from "
                    f"{args['initial']} (initial): leave one of them out"
                )
        return problems

    @staticmethod
    def describe(args: Mapping[str, Any], run: RunFacts) -> str | None:
        """The run's size from the forcing step's arguments: its grid, model years, time steps
        and cell-updates, its outputs' bytes before compression and a state's.

        ``None`` where the source step is not ``climate.forcing`` (another op's grid and time
        step are known only from its output, when the step starts).
        """
        source = run.steps.get(args["source"])
        if source is None or source.info.target is not forcing:
            return None
        # the forcing op's own grid and stable step, from its arguments as it gets them
        setup = {name: source.arg(name) for name in source.info.parameters}
        try:
            grid, params, _, spy = forcing_setup(**setup)
        except ValueError:
            # a land mask gone since the forcing step completed (a fresh run refuses it
            # first): a resume reads forcing.zarr, not the mask, and runs; the size is known
            # only when the step starts (it had said "describe failed" over a sound resume)
            if setup["land"] and setup["land_mask"]:
                return None
            raise
        years, spinup = int(args["years"]), int(args["spinup_years"])
        steps = run_steps(spinup, years, spy)
        # lazy stand-ins of the float64 fields the kernel computes: nothing is allocated, and
        # the datasets are the ones the op builds, coordinates included
        field = da.zeros(grid.shape, dtype=np.float64)
        state = state_dataset(grid, {}, field, field, 0)
        month = month_dataset(grid, {}, field, 0)
        rows_cols = sum(month[c].nbytes for c in ("lat", "lon"))  # once a store, not a month
        monthly = 12 * years * (month.nbytes - rows_cols) + rows_cols
        kind = month["T"].dtype
        interval = int(run.config["distributed.sync_interval"])
        batch = int(run.config["distributed.batch_size"])
        windows = -(-steps // interval)
        plural = "" if spinup + years == 1 else "s"
        every = "every step" if interval == 1 else f"every {interval:,} steps"
        lines = [
            f"{_grid_text(grid)}, {spinup + years:,} model year{plural} ({spinup:,} spin-up + "
            f"{years:,} recorded), {spy:,} time steps a year (dt {params.dt:.6g} s): "
            f"{steps:,} steps, {_count_text(steps * grid.size)} cell-updates",
            f"outputs before compression: monthly.zarr {format_bytes(monthly)} (T(time "
            f"{12 * years:,}, lat {grid.nlat:,}, lon {grid.nlon:,}) {kind}), final.zarr "
            f"{format_bytes(state[['T']].nbytes)} (T(lat, lon) {kind})",
            f"a state (T, month_sum: {kind}) holds "
            f"{format_bytes(sum(v.nbytes for v in state.data_vars.values()))}; a checkpoint "
            f"{every} (distributed.sync_interval): {windows:,} window{'' if windows == 1 else 's'}",
            _layout_text(
                grid, int(args.get("bands", 0)), batch, run, one_band_segment(spy, interval)
            ),
            RATE_HINT,
        ]
        states = sum(v.nbytes for v in state.data_vars.values())
        need = monthly + state[["T"]].nbytes + 2 * states  # (two checkpoints at a time)
        if run.free_bytes is not None and need > run.free_bytes:
            lines.append(
                f"note: its outputs and checkpoints take up to {format_bytes(need)} before "
                f"compression, more than the {format_bytes(run.free_bytes)} free on the run "
                "directory's disk: a full disk stops the run (what it wrote is kept: free "
                "space, then --resume), or set fewer params.years or a coarser "
                "params.resolution"
            )
        if interval < batch and windows > 1:
            # each window is a graph submitted, persisted and checkpointed: at 2° on the 2-core
            # VM, 10-step windows ran a model year in 93 s against 5.6 s at 5000 (session 47)
            lines.append(
                f"note: windows of {interval:,} step{'' if interval == 1 else 's'}, fewer than "
                f"distributed.batch_size ({batch:,}), are slow: each is a Dask graph, a persist "
                "and a checkpoint write (at 2° on a 2-core machine, 10-step windows ran 16.5x "
                "slower than the default 5,000)"
            )
        return "\n".join(lines)

    @staticmethod
    def check_run(args: Mapping[str, Any], run: RunFacts) -> dict[str, str]:
        """A ``bands:`` that the grid of the forcing step this step reads, or
        ``distributed.batch_size``, refuses: said before the forcing step's work, not after."""
        bands = args.get("bands", 0)
        source = run.steps.get(args.get("source", "forcing"))
        if not bands or source is None or source.info.target is not forcing:
            return {}  # another op's grid is known only from its output, when the step starts
        resolution = float(source.arg("resolution"))
        batch_size = int(run.config["distributed.batch_size"])
        problem = _bands_problem(bands, LatLonGrid(resolution).nlat, batch_size, resolution)
        return {"bands": problem} if problem else {}

    def __init__(
        self,
        ctx: StepContext,
        *,
        years: int = 2,
        spinup_years: int = SPINUP_YEARS,
        initial_temperature: float = COLD_START,
        initial: str = "",
        bands: int = 0,
        source: str = "forcing",
    ) -> None:
        super().__init__(ctx)
        # the initial store is checked when it is read (initial_state): a resume continued
        # from a checkpoint needs it no more, and it may be gone
        refused = self.check_args(
            {
                "years": years,
                "spinup_years": spinup_years,
                "bands": bands,
                "initial": initial,
                "initial_temperature": initial_temperature,
            },
            store=False,
        )
        if refused:  # called from Python, not through a checked workflow
            raise ValueError("; ".join(f"{k}: {v}" for k, v in refused.items()))
        forcing_ds = ctx.input(source)
        _check_forcing_dataset(forcing_ds, source)
        self.attrs = dict(forcing_ds.attrs)
        self.grid = LatLonGrid(float(self.attrs["resolution"]))
        self.params = EBMParams.from_attrs(self.attrs)
        capacity = np.asarray(forcing_ds["heat_capacity"].values)
        self.spy = int(self.attrs["steps_per_year"])
        self.record_start = spinup_years * self.spy
        self.years, self.spinup_years = years, spinup_years
        self.initial_temperature = initial_temperature
        self.initial = initial
        # bands=0: choose from the grid, batch size and cluster (see the module docstring)
        nlat = self.grid.nlat
        if bands:
            _check_bands(bands, nlat, ctx.batch_size, float(self.attrs["resolution"]))
        self.bands = band_chunks(nlat, bands or choose_bands(self.grid, ctx))
        self.batch = steps_per_task(ctx.batch_size, len(self.bands))
        # how the grid was laid out on this cluster, for run.json: it had said nothing of it
        # (the band count follows the worker threads and K; the bits do not depend on it)
        ctx.metrics["decomposition"] = {
            "band_rows": list(self.bands),
            "steps_per_task": self.batch
            if len(self.bands) > 1
            else one_band_segment(self.spy, int(ctx.config["distributed.sync_interval"])),
            "worker_threads": ctx.worker_threads,
        }
        # the capacity goes to the bands' homes once, not into every window's graph (33 MB
        # at 0.125°, which Dask warned about as a large graph)
        client = ctx.client
        # the bands start on the worker with the least of other runs' work (a shared cluster)
        self.first = quietest_worker(client) if client is not None else None
        self.capacity = (
            capacity if client is None else _placed(client, capacity, self.bands, self.first)
        )

    @property
    def total_steps(self) -> int:
        return run_steps(self.spinup_years, self.years, self.spy)

    def month_end(self, step: int) -> int:
        """First month boundary after ``step`` (12 near-equal months per model year)."""
        year, within = divmod(step, self.spy)
        month = math.floor(12 * within / self.spy) + 1
        return year * self.spy + math.ceil(month * self.spy / 12)

    def initial_state(self) -> xr.Dataset:
        if self.initial:  # another run's state, on this grid
            check_initial(self.initial)  # (a workflow checked it; an op made in Python not)
            self.attrs["initial_state"] = str(initial_store(self.initial))  # where it started
            source = initial_field(self.initial)
            T0 = regrid(source.values, source["lat"].values, source["lon"].values, self.grid)
        else:
            profile = start_profile(self.initial_temperature, self.grid.sin_lat)
            T0 = np.repeat(profile[:, None], self.grid.nlon, axis=1)
        return self._state(
            _placed(self.ctx.client, T0, self.bands, self.first),
            da.zeros(self.grid.shape, chunks=(self.bands, -1)),
            0,
        )

    def resumed_state(self, stored: xr.Dataset) -> xr.Dataset:
        """The checkpoint's state in this attempt's bands. The initial store is not read (it
        may be gone since): the state holds where the run started."""
        if "initial_state" in stored.attrs:
            self.attrs["initial_state"] = stored.attrs["initial_state"]
        return stored.chunk({"lat": self.bands, "lon": -1})

    def _state(self, T: da.Array, total: da.Array, count: int) -> xr.Dataset:
        return state_dataset(self.grid, self.attrs, T, total, count)

    def _record(self, mean: da.Array, month_index: int) -> xr.Dataset:
        return month_dataset(self.grid, self.attrs, mean, month_index)

    def advance(
        self, state: xr.Dataset, step0: int, nsteps: int
    ) -> tuple[xr.Dataset, dict[str, xr.Dataset]]:
        # each band's tasks go to its home worker (the cluster may have changed since last time)
        client = self.ctx.client
        homes = (
            band_homes(client.nthreads(), len(self.bands), self.first)
            if client is not None
            else None
        )
        T = state["T"].data.rechunk((self.bands, -1))
        total = state["month_sum"].data.rechunk((self.bands, -1))
        count = int(state["month_steps"].values)
        records = []
        s, end = step0, step0 + nsteps
        while s < end:
            stop = min(end, self.month_end(s))
            if s < self.record_start:
                stop = min(stop, self.record_start)
                T = advance(
                    T, self.params, self.grid, stop - s, self.batch, s, self.capacity, workers=homes
                )
            else:
                # the month's sum continues step by step: its bits do not depend on the bands,
                # batch_size or where windows split the month
                T, total = advance(
                    T,
                    self.params,
                    self.grid,
                    stop - s,
                    self.batch,
                    s,
                    self.capacity,
                    accumulate=True,
                    workers=homes,
                    total=total if count else None,
                )
                count += stop - s
                if stop == self.month_end(stop - 1):  # the month is complete
                    month = (stop - 1 - self.record_start) * 12 // self.spy
                    records.append(self._record(total / count, month))
                    total, count = da.zeros_like(total), 0
            s = stop
        emitted = {"monthly": xr.concat(records, dim="time")} if records else {}
        return self._state(T, total, count), emitted

    def finish(self, state: xr.Dataset) -> dict[str, xr.Dataset]:
        """The last state as ``final``; refused (the run fails) where it is not finite."""
        # a model that blew up (olr_intercept=-1e305: inf, then NaN through the albedo ramp)
        # completed with exit 0 and NaN everywhere; the state is persisted, so this reads little
        bad = int((~np.isfinite(state["T"].data)).sum().compute())
        if bad:
            p = self.params
            raise ValueError(
                f"the temperature is NaN or infinite in {bad} of {state['T'].size} cells after "
                f"{self.total_steps} steps: the model blew up (the monthly means already written "
                f"hold it), so final.zarr is not written; its parameters (A = {p.A:g}, B = "
                f"{p.B:g}, D = {p.D:g}, Q = {p.Q:g}) have no finite climate"
            )
        final = state[["T"]].assign_attrs(self.attrs, steps=self.total_steps)
        return {"final": final}


def _days(time: np.ndarray) -> np.ndarray:
    """Monthly ``time`` values in :data:`TIME_ATTRS`' units: decoded dates encoded back,
    numbers (a store read without decoding) as they are."""
    if time.dtype.kind in "fiu":
        return time
    import cftime

    return np.asarray(cftime.date2num(time, TIME_ATTRS["units"], TIME_ATTRS["calendar"]))


def _edge(hemisphere: str) -> dict[str, str]:
    """An ice edge's attributes (units and long_name, for readers and xarray's plots)."""
    return {"units": "degrees_north", "long_name": f"{hemisphere} ice edge latitude"}


def freezing_centred() -> Any:
    """The temperature map's colour scale: the diverging map's white at 0 °C, its limits the
    same distance either side. Scaled to the field's range, white fell at its middle (7 °C for
    the present climate), where a reader looks for the freezing line."""
    from matplotlib.colors import CenteredNorm

    return CenteredNorm(vcenter=0.0)


def _plot(
    ctx: StepContext,
    global_series: np.ndarray,
    years: np.ndarray,
    annual_map: np.ndarray,
    zonal: np.ndarray,
    amplitude: np.ndarray,
    grid: LatLonGrid,
    annual_series: np.ndarray | None = None,
) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder = ctx.output_dir("plots")
    written = []
    fig, ax = plt.subplots(figsize=(7, 3.5))
    ax.plot(years, global_series, lw=0.6, color="0.6", label="monthly")
    if annual_series is not None and len(annual_series):
        # over a long run the seasonal swing (~2 K) fills the axes as one band; the annual
        # mean, at each year's middle, is what shows a drift or a jump
        ax.plot(
            np.arange(len(annual_series)) + 0.5,
            annual_series,
            color="C3",
            lw=1.5,
            marker="." if len(annual_series) <= 50 else None,
            label="annual mean",
        )
        ax.legend(loc="best", fontsize="small")
    ax.set(
        xlabel="years after spin-up",
        ylabel="global mean T (°C)",
        title="Global-mean surface temperature (monthly and annual mean)",
    )
    fig.tight_layout()
    fig.savefig(folder / "global_mean.png", dpi=100)
    plt.close(fig)
    written.append("global_mean.png")

    # the annual mean is nearly zonal (land changes the heat capacity, not the albedo); the
    # continents show in the seasonal swing, larger where the surface is less inert
    maps = {
        "annual_mean_map.png": (annual_map, "RdBu_r", "°C", "Final annual-mean temperature"),
        "seasonal_amplitude_map.png": (
            amplitude,
            "viridis",
            "K",
            "Seasonal amplitude (max − min of the monthly means, last year)",
        ),
    }
    for name, (field, cmap, unit, title) in maps.items():
        fig, ax = plt.subplots(figsize=(8, 4))
        norm = freezing_centred() if unit == "°C" else None
        mesh = ax.pcolormesh(grid.lon, grid.lat, field, cmap=cmap, norm=norm, shading="nearest")
        fig.colorbar(mesh, ax=ax, label=unit)
        ax.set(xlabel="longitude", ylabel="latitude", title=title)
        fig.tight_layout()
        fig.savefig(folder / name, dpi=100)
        plt.close(fig)
        written.append(name)

    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(grid.lat, zonal)
    ax.axhline(-10.0, color="0.5", lw=0.8, ls="--", label="ice threshold (−10 °C)")
    ax.set(xlabel="latitude", ylabel="T (°C)", title="Final annual zonal-mean temperature")
    ax.legend()
    fig.tight_layout()
    fig.savefig(folder / "zonal_mean.png", dpi=100)
    plt.close(fig)
    written.append("zonal_mean.png")
    return written


def _check_monthly_dataset(ds: xr.Dataset, source: str) -> None:
    """``ds`` holds what ``climate.analyse`` reads: a user's own model op's ``monthly`` without
    ``climate.ebm``'s attributes failed with "KeyError: 'resolution'".

    Raises
    ------
    ValueError
        Naming the step and what its ``monthly`` output lacks.
    """
    missing = [f"attribute {a!r}" for a in ("resolution", "ice_threshold") if a not in ds.attrs]
    if "T" not in ds.data_vars or ds["T"].dims != ("time", "lat", "lon"):
        missing.append("variable 'T' (time, lat, lon), monthly means in degC")
    if missing:
        raise ValueError(
            f"the monthly output of step {source!r} lacks {', '.join(missing)}: climate.analyse "
            "reads the grid and the ice threshold from its attributes (climate.ebm's carry "
            "climate.forcing's: keep them in an op of your own)"
        )


def _describe_analyse(args: Mapping[str, Any], run: RunFacts) -> str | None:
    """``climate.analyse``'s size: the monthly means it reads once, and what it writes.

    ``None`` unless its source is ``climate.ebm`` on ``climate.forcing`` (another model's
    months and grid are known only from its output).
    """
    model = run.steps.get(args["source"])
    if model is None or model.info.target is not EnergyBalanceModel:
        return None
    forcing_step = run.steps.get(model.arg("source"))
    if forcing_step is None or forcing_step.info.target is not forcing:
        return None
    grid = LatLonGrid(float(forcing_step.arg("resolution")))
    years = int(model.arg("years"))
    read = 12 * years * grid.size * np.dtype(np.float64).itemsize
    return (
        f"reads monthly.zarr of step {args['source']} once: {12 * years:,} months of "
        f"{_grid_text(grid)}, {format_bytes(read)} before compression; writes the annual zonal "
        f"means ({years:,} x {grid.nlat:,}), the global-mean series ({12 * years:,} months, "
        f"{years:,} annual), the ice edges ({years:,} years x 2), the last year's seasonal "
        "amplitude map and 4 PNG plots"
    )


#: Bytes of monthly means one task of ``climate.analyse`` reads at most, in whole years. The
#: model writes a month a chunk (127 kB at 2°: each window appends its own): read so, 150
#: years were 1,800 reads and a graph of 10,257 tasks, 22-34 s of a 2-3 minute run.
READ_BYTES = 16 * 2**20


def _by_years(monthly: xr.Dataset) -> xr.Dataset:
    """``monthly`` opened again from its store in chunks of as many whole years as
    :data:`READ_BYTES` holds (a task reads several of the store's chunks); as it is where a
    year is larger, it is not read from a store, or its chunks (another model's) would be
    split (which xarray warns of)."""
    source = monthly.encoding.get("source")
    T = monthly["T"]
    # (a month's bytes from the shape: a store of no months is said as such by the caller)
    months = 12 * int(READ_BYTES // max(12 * math.prod(T.shape[1:]) * T.dtype.itemsize, 1))
    stored = T.chunks[0][0] if T.chunks else 0
    if source is None or not stored or months <= stored or months % stored:
        return monthly
    return zarrio.open_output(Path(source), {"time": months})


@register(
    "climate.analyse",
    outputs=("zonal_mean", "global_mean", "ice_edge", "seasonal_amplitude", "plots/"),
    step_args=("source",),
    describe=_describe_analyse,
)
def analyse(ctx: StepContext, *, source: str = "simulate") -> dict[str, xr.Dataset]:
    """Annual zonal means, global-mean series, ice edge per hemisphere, seasonal amplitude."""
    monthly = ctx.input(source, "monthly")
    _check_monthly_dataset(monthly, source)
    T = _by_years(monthly)["T"]
    grid = LatLonGrid(float(monthly.attrs["resolution"]))
    threshold = float(monthly.attrs["ice_threshold"])
    years = T.sizes["time"] // 12
    if years < 1:
        raise ValueError("the simulation holds less than one model year of monthly means")
    annual = T.isel(time=slice(0, 12 * years)).coarsen(time=12).mean()
    annual = annual.rename(time="year").assign_coords(
        year=("year", np.arange(1, years + 1), YEAR_ATTRS)
    )
    zonal = annual.mean("lon")  # cells of a row have equal areas
    # time as the monthly store has it, days since TIME_ATTRS' origin: dates (what xarray
    # reads) were written "minutes since" the first month, a second time axis for any reader
    # of the raw numbers (decode_times=False, ncdump)
    days = ("time", _days(T["time"].values), {**T["time"].attrs, **TIME_ATTRS})
    global_series = xr.DataArray(global_mean(T.data, grid), dims="time", coords={"time": days})
    last_year = T.isel(time=slice(12 * (years - 1), 12 * years))
    amplitude = last_year.max("time") - last_year.min("time")
    annual_global = xr.DataArray(global_mean(annual.data, grid), dims="year")
    # every result is small; computed together they read the monthly store once (5 GB at
    # 0.25° x 50 years), where one .values each read it four times and wrote it twice more
    zonal, annual_global, global_series, last_annual, amplitude = dask.compute(
        zonal, annual_global, global_series, annual.isel(year=-1), amplitude
    )

    zonal_values = zonal.values  # (years, nlat)
    edges = np.array([ice_edge_latitude(row, grid.lat, threshold) for row in zonal_values])
    attrs = dict(monthly.attrs)
    out = {
        "zonal_mean": xr.Dataset(
            {"T": zonal.assign_attrs(units="degC", long_name="annual zonal-mean temperature")},
            attrs=attrs,
        ),
        "global_mean": xr.Dataset(
            {
                "T": global_series.assign_attrs(units="degC", long_name="global-mean temperature"),
                "T_annual": annual_global.assign_attrs(
                    units="degC", long_name="annual global mean"
                ),
            },
            coords={"year": annual["year"]},
            attrs=attrs,
        ),
        "ice_edge": xr.Dataset(
            {
                "south": ("year", edges[:, 0], _edge("southern")),
                "north": ("year", edges[:, 1], _edge("northern")),
            },
            coords={"year": annual["year"]},
            attrs={
                **attrs,
                "definition": f"zonal-mean annual T crosses {threshold} °C, from the pole; "
                "NaN: no ice cap (the pole is warmer), 0: ice to the equator",
            },
        ),
        "seasonal_amplitude": xr.Dataset(
            {
                "T": amplitude.assign_attrs(
                    units="K", long_name="max - min of the monthly means, last year"
                )
            },
            attrs=attrs,
        ),
    }
    ctx.metrics.update(
        ice_edge_north=float(edges[-1, 1]),
        ice_edge_south=float(edges[-1, 0]),
        global_mean_last_year=float(out["global_mean"]["T_annual"][-1]),
        literature_ice_edge="North (1975), North et al. (1981): x_s = sin(phi_s) = 0.95, "
        "71.8 deg, for annual-mean insolation",
    )
    ctx.metrics["plots"] = _plot(
        ctx,
        global_series.values,
        (np.arange(T.sizes["time"]) + 0.5) / 12,  # mid-month, in model years (dates: time)
        last_annual.values,
        zonal_values[-1],
        amplitude.values,
        grid,
        annual_series=annual_global.values,
    )
    return out
