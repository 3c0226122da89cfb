"""``stencil``: the climate model's time step on the cluster vs the numpy reference on 1 core.

The Dask run is what ``climate.ebm`` runs: the state in one latitude band per worker thread,
``batch_size`` steps per halo exchange (:func:`~openclaw_dask.workflows.climate.advance`),
each band's tasks and state on its home worker (``band_homes``), the heat capacity computed
once beforehand (as the workflow's forcing step does) and placed on the homes once (as
``climate.ebm`` does).
The baseline is :func:`~openclaw_dask.workflows.climate.reference.run_reference`, the same
kernels on the whole globe in this process on one core, with the same capacity. Both do the
same cell-updates; the ratio of their times is the speedup, and the speedup over the cluster's
thread count is the parallel efficiency.

The same reference is also run on every worker thread at once, each on the whole globe in
its own task with no communication (``reference_on_every_thread``): the most this machine gives
for ``threads`` independent copies of the kernel (shared caches, memory bandwidth, clocks).
``efficiency_vs_independent_copies`` compares the Dask run with that, so what the cluster
loses (halo exchange, task latency, redundant halo rows) shows apart from what the hardware
loses when all cores run.

A band computes more than its own rows: each batch of ``K`` steps also advances its halos, a
cone of ``K`` rows shrinking by one a step, which the neighbour owns (``halo_work``: cells
computed per cell owned; 1.34 at K=64 on the 16-core machine's 180-row bands, 1.02 on the
2-core VM's 1440-row ones). Where the workflow would use fewer bands than threads
(:func:`~openclaw_dask.workflows.ops.climate.band_count`: the count whose slowest band takes
the least time a step, with a batch's overhead fitted on 2 cores only), the configured ``K``
also runs on that many bands (``dask_K{K}_workflow_bands``), so a machine shows which layout
pays.

After the timed runs, one more run at the configured ``K`` is recorded by Dask's task stream
(untimed, so the recording costs the figures nothing): how busy the threads were, how long a
step task took, how much longer each band's first one (its operators and buffer), and how long
a band waited between its step tasks (the halo tasks' hops and transfers, a slower neighbour).
They are the suite's ``profile`` in the JSON and one note in the report.

Bytes moved per cell-update are counted as the state's read and write (16 bytes in float64),
the least any explicit step must move; they are compared with a copy-bandwidth probe run in
this process on as many threads as the cluster has, in every round beside the timed runs
(:class:`~openclaw_dask.bench.probes.CopyProbe`), so each round's ratio sees one machine.
"""

from __future__ import annotations

import math
import re
import statistics
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import dask.array as da
import numpy as np
from distributed import Client, get_task_stream, wait
from threadpoolctl import threadpool_limits

from openclaw_dask.bench.probes import CopyProbe
from openclaw_dask.bench.suite import BenchContext, SuiteResult, run_and_forget
from openclaw_dask.bench.timing import interleaved, ratio, round_ratios
from openclaw_dask.workflows.climate import EBMParams, LatLonGrid, advance, heat_capacity
from openclaw_dask.workflows.climate.reference import run_reference
from openclaw_dask.workflows.climate.stepper import band_homes, place_bands
from openclaw_dask.workflows.ops.climate import band_count, steps_per_task

STATE_BYTES_PER_UPDATE = 16  # read T and write T, float64
#: the climate issue's goal: cell-updates/s on all cores >= 0.9 x cores x the 1-core reference
EFFICIENCY_GOAL = 0.9

#: batch sizes of the sweep (``distributed.batch_size``)
BATCH_SIZES = (1, 4, 16)

#: Full size: the grid where a K=16 step task carries well over 100 ms, as the climate issue
#: asks: ~190 ms with the compiled step on one core of the 2-core development VM (2 bands of
#: 1440 rows x 5760). At 0.125° (the size before the compiled step, when a task carried
#: ~290 ms) a K=16 task now carries ~45 ms, and the batches' round trips weigh 3x more.
#: 256 steps are 16 batches of K=16 in one graph. A graph pays its set-up once (submission,
#: the capacity's halo tasks, each band's operators and a fresh buffer in its first batch) and
#: the workflow's graphs are ``distributed.sync_interval`` steps long (1000 then, 5000 since
#: 2026-12-05), so the shorter the graph here the more the set-up weighs against the workflow:
#: measured on the 2-core VM on 2026-12-02, interleaved in one cluster, K=16 ran at a median of
#: 1349 and 1297 Mcell/s with 128-step graphs, 1645 and 1423 with 256, 1607 and 1502 with 512.
#: 256 steps (4x the weight of a 1000-step graph, 8x at 128) keep the suite under two minutes;
#: against 5000-step graphs the set-up weighs ~20x (by step count; not measured).
FULL_RESOLUTION, FULL_STEPS = 0.0625, 256


def model_setup(resolution: float) -> tuple[EBMParams, LatLonGrid, np.ndarray]:
    """The default climate model on a grid, with a smooth initial state (°C)."""
    grid = LatLonGrid(resolution)
    params = EBMParams()
    temp = 14.0 - 30.0 * np.broadcast_to(grid.sin_lat[:, None] ** 2, grid.shape)
    return params, grid, np.ascontiguousarray(temp)


def run(ctx: BenchContext) -> SuiteResult:
    """Cell-updates/s, speedup and efficiency vs 1 core, copy-bandwidth fraction, K sweep."""
    # quick: 1°, whose two bands of 90 rows take the default batch_size (64) as their halo
    resolution, nsteps = (1.0, 64) if ctx.quick else (FULL_RESOLUTION, FULL_STEPS)
    params, grid, start = model_setup(resolution)
    # precomputed, as the workflow passes its forcing's capacity (and for the reference too)
    capacity = heat_capacity(params, grid)
    threads = ctx.worker_threads
    client = ctx.client
    slots = [w for w, n in client.nthreads().items() for _ in range(n)]
    state, placed_capacity, homes = placed_state(client, start, capacity, threads)
    configured, notes = halo_batch(ctx, state.chunks[0])
    # what climate.ebm would run with this config and cluster, where it is not one band a
    # thread: its K is the config's, not the one cut to this layout's bands (its bands are
    # at least K rows tall); with the cut K it could time more bands than it would use
    workflow_k = int(ctx.config["distributed.batch_size"])
    workflow_bands = band_count(grid.shape, threads, workflow_k, len(client.nthreads()))

    def dask_run(
        k: int, placed: tuple[da.Array, da.Array, list[str]] = (state, placed_capacity, homes)
    ) -> Callable[[], None]:
        on, cap, where = placed

        def go() -> None:
            run_placed(client, on, where, params, grid, nsteps, k, cap)

        return go

    def reference() -> None:
        with threadpool_limits(limits=1):
            run_reference(params, grid, nsteps, start, capacity=capacity)

    # fresh keys (hash=False): a second try after a worker death scatters the same data, and
    # content-hashed keys would share the first try's, which its release then forgets
    [start_on_cluster, capacity_on_cluster] = client.scatter(
        [start, capacity], broadcast=True, hash=False
    )

    def reference_everywhere() -> None:
        runs = [
            client.submit(
                _reference_task,
                params,
                grid,
                nsteps,
                start_on_cluster,
                capacity_on_cluster,
                workers=[w],
                pure=False,
            )
            for w in slots
        ]
        wait(runs)
        for run in runs:
            run.result()  # raise a failed copy here

    sizes = sorted({*BATCH_SIZES, configured})
    fns = {
        "reference_1core": reference,
        "reference_on_every_thread": reference_everywhere,
    } | {f"dask_K{k}": dask_run(k) for k in sizes}
    fewer = f"dask_K{workflow_k}_workflow_bands"
    if workflow_bands < threads:
        placed = placed_state(client, start, capacity, workflow_bands)
        fns[fewer] = dask_run(steps_per_task(workflow_k, workflow_bands), placed)
    # the copy probe in every round, beside the runs its ratio compares it with
    with CopyProbe(threads, tries=3 if ctx.quick else 5) as probe:
        t = interleaved(fns | {"copy_probe": probe}, repeats=ctx.repeats(3))
    del t["copy_probe"]  # its own figure is its fastest copy of each round, not the call's time
    bandwidths = probe.readings[-ctx.repeats(3) :]  # the counted rounds (the first warmed up)
    with get_task_stream(client) as stream:
        began = time.time()
        dask_run(configured)()
        ended = time.time()
    profile = task_profile(stream.data, threads, began, ended)
    updates = grid.size * nsteps
    best = f"dask_K{configured}"
    speedup = ratio(t[best], t["reference_1core"])
    speedups = round_ratios(t[best], t["reference_1core"])
    bandwidth = statistics.median(bandwidths)
    state_rate = t[best].rate(updates) * STATE_BYTES_PER_UPDATE
    independent = t["reference_on_every_thread"].rate(updates * len(slots))
    result = SuiteResult(
        params={
            "resolution_deg": resolution,
            "grid": list(grid.shape),
            "steps": nsteps,
            "bands": threads,
            "batch_size": configured,
            "threads": threads,
            "workflow_bands": workflow_bands,
        },
        timings=t,
        throughput={k: (v.rate(updates), "cell-updates/s") for k, v in t.items()}
        | {
            "reference_on_every_thread": (independent, "cell-updates/s"),
            "state_bytes": (state_rate, "B/s"),
            "copy_bandwidth": (bandwidth, "B/s"),
        },
        ratios={
            "speedup_vs_reference_1core": speedup,
            "parallel_efficiency": speedup / threads,
            "efficiency_vs_independent_copies": t[best].rate(updates) / independent,
            "independent_copies_vs_reference_1core": independent
            / t["reference_1core"].rate(updates),
            "fraction_of_copy_bandwidth": state_rate / bandwidth,
            "halo_work": halo_work(state.chunks[0], nsteps, configured),
        }
        | ({f"workflow_bands_vs_{threads}_bands": ratio(t[fewer], t[best])} if fewer in t else {})
        | {f"batch_K{k}_vs_K1": ratio(t[f"dask_K{k}"], t["dask_K1"]) for k in sizes if k != 1},
        goals={"parallel_efficiency": EFFICIENCY_GOAL, "fraction_of_copy_bandwidth": 0.6},
        notes=[
            *notes,
            *ceiling_note(independent / t["reference_1core"].rate(updates), len(slots)),
            profile_note(configured, profile),
        ],
        profile=profile,
        rounds={
            "parallel_efficiency": tuple(s / threads for s in speedups),
            "efficiency_vs_independent_copies": tuple(
                r / len(slots) for r in round_ratios(t[best], t["reference_on_every_thread"])
            ),
            "fraction_of_copy_bandwidth": tuple(
                updates / seconds * STATE_BYTES_PER_UPDATE / reading
                for seconds, reading in zip(t[best].samples, bandwidths, strict=True)
            ),
        },
    )
    return result


def halo_batch(ctx: BenchContext, heights: tuple[int, ...]) -> tuple[int, list[str]]:
    """``distributed.batch_size``, at most the smallest band's height (a halo comes from the
    next band only), and a note when it had to be cut (e.g. K=128 on 90-row bands)."""
    configured = int(ctx.config["distributed.batch_size"])
    deepest = min(heights)
    if configured <= deepest:
        return configured, []
    note = (
        f"distributed.batch_size={configured} is deeper than this grid's {deepest}-row "
        f"bands: measured at K={deepest}"
    )
    return deepest, [note]


#: a step task's layer name (:func:`~openclaw_dask.workflows.climate.stepper.advance`):
#: ``ebm-steps[-sum]-{first step}-{stop}-{token}``
_STEP_TASK = re.compile(r"ebm-steps(?:-sum)?-(?P<first>\d+)-(?P<stop>\d+)-")


def task_profile(
    records: Iterable[Mapping[str, Any]], threads: int, began: float, ended: float
) -> dict[str, float]:
    """Where one Dask run spent its time, from its task stream (``distributed.get_task_stream``).

    Returns ``wall_s``; ``busy_fraction``, the tasks' compute time over ``threads x wall_s``;
    ``step_task_ms``, the median step task after each band's first; ``first_batch_extra_ms``,
    the median of how much longer a band's first step task took than its later ones;
    ``wait_between_batches_ms``, the mean time from a band's step task ending to its next one
    starting; ``transfer_s``, the time workers spent fetching inputs (overlaps compute).

    A last batch shorter than ``K`` (``nsteps`` not a multiple of it) is left out of the step
    task's length and of the first one's extra: it does less work, and with three batches a
    band it had pulled the median of the later two halfway down.
    """
    wall = ended - began
    busy = transfer = 0.0
    bands: dict[int, list[tuple[float, float, int]]] = {}
    for record in records:
        key = record["key"]
        steps = _STEP_TASK.match(str(key[0])) if isinstance(key, tuple) else None
        for part in record["startstops"]:
            length = part["stop"] - part["start"]
            if part["action"] == "transfer":
                transfer += length
            elif part["action"] == "compute":
                busy += length
                if steps:
                    # the band is the key's next-to-last index: (name, i, 0), and with
                    # accumulate the last batch's (name, 0, i, 0) ([T, sum] stacked)
                    depth = int(steps["stop"]) - int(steps["first"])
                    bands.setdefault(int(key[-2]), []).append((part["start"], part["stop"], depth))
    later, extra, waits = [], [], []
    for runs in bands.values():
        runs.sort()
        waits += [runs[i + 1][0] - runs[i][1] for i in range(len(runs) - 1)]
        # the first batch is K deep (min(K, nsteps)); only the last can be shorter
        full = [b - a for a, b, depth in runs[1:] if depth == runs[0][2]]
        if full:
            later += full
            extra.append(runs[0][1] - runs[0][0] - statistics.median(full))
    ms = 1e3
    return {
        "wall_s": wall,
        "busy_fraction": busy / (threads * wall) if wall > 0 else math.nan,
        "step_task_ms": statistics.median(later) * ms if later else math.nan,
        "first_batch_extra_ms": statistics.median(extra) * ms if extra else math.nan,
        "wait_between_batches_ms": statistics.fmean(waits) * ms if waits else math.nan,
        "transfer_s": transfer,
    }


def ceiling_note(copies_vs_one: float, threads: int) -> list[str]:
    """A note when ``threads`` independent copies of the reference, nothing exchanged, already
    run below the efficiency goal: then no cluster layout can meet it on this machine (shared
    caches, memory bandwidth, all-core clocks), and the missed goal says nothing of Dask.

    Examples
    --------
    >>> ceiling_note(12.12, 16)[0][:60]
    'one reference per thread at once runs at 12.12x one (0.76 pe'
    >>> ceiling_note(1.9, 2)
    []
    """
    per_core = copies_vs_one / threads
    if threads < 2 or per_core >= EFFICIENCY_GOAL:
        return []
    return [
        f"one reference per thread at once runs at {copies_vs_one:.2f}x one ({per_core:.2f} per "
        f"thread): this machine itself stays under the {EFFICIENCY_GOAL} parallel_efficiency "
        "goal, which no cluster layout can then meet here (efficiency_vs_independent_copies "
        "is what the cluster loses)"
    ]


def profile_note(batch_size: int, p: Mapping[str, float]) -> str:
    """:func:`task_profile` in a sentence (what a run of one batch a band cannot show left out)."""
    head = (
        f"one more K={batch_size} run in Dask's task stream: threads busy "
        f"{p['busy_fraction']:.0%} of {p['wall_s']:.2f} s"
    )
    if math.isnan(p["step_task_ms"]):
        # a K-deep batch and a shorter last one still have a wait between them
        one = "one batch" if math.isnan(p["wait_between_batches_ms"]) else "one full batch"
        return f"{head} ({one} a band)"
    return (
        f"{head}; step tasks {p['step_task_ms']:.0f} ms (a band's first "
        f"{p['first_batch_extra_ms']:+.0f} ms: its operators and buffer); "
        f"{p['wait_between_batches_ms']:.0f} ms between a band's step tasks (halo hops and "
        "transfers, a slower neighbour)"
    )


def halo_work(heights: tuple[int, ...], nsteps: int, batch_size: int) -> float:
    """Cells a banded run computes per cell it owns: each batch of ``d = min(K, left)`` steps
    advances a band of ``h`` rows plus, on each inner side, a halo cone of ``d`` rows that loses
    one row a step (:func:`~openclaw_dask.workflows.climate.physics.advance_with`'s ``shrink``):
    ``d h + sides d (d + 1) / 2`` row-steps.

    Examples
    --------
    >>> round(halo_work((90, 90), 64, 64), 4)  # one inner side each: 1 + 65 / 180
    1.3611
    >>> halo_work((180,), 64, 64)  # one band has no halo
    1.0
    """
    owned = sum(heights) * nsteps
    computed = 0
    for i, h in enumerate(heights):
        sides = (i > 0) + (i < len(heights) - 1)
        for first in range(0, nsteps, batch_size):
            d = min(batch_size, nsteps - first)
            computed += d * h + sides * d * (d + 1) // 2
    return computed / owned


def placed_state(
    client: Client, start: np.ndarray, capacity: np.ndarray, bands: int
) -> tuple[da.Array, da.Array, list[str]]:
    """``start`` and ``capacity`` persisted in ``bands`` latitude bands, each band on its home
    worker, and the homes.

    The workflow passes the same homes (``band_homes``) to ``advance``, and in a run each band's
    state is already home from the previous graph; a plain ``persist`` may put both bands of a
    fresh array on one worker, and every timed run would then begin by moving a band home.
    ``climate.ebm`` places its forcing's capacity on the homes once in the same way, instead of
    sending it with every graph (32 MiB at 0.125°).
    """
    homes = band_homes(client.nthreads(), bands)
    return place_bands(client, start, homes), place_bands(client, capacity, homes), homes


def run_placed(
    client: Client,
    state: da.Array,
    homes: list[str],
    params: EBMParams,
    grid: LatLonGrid,
    nsteps: int,
    batch_size: int,
    capacity: da.Array,
) -> None:
    """Advance a :func:`placed_state` on the cluster as ``climate.ebm`` does and wait for it:
    each band's tasks restricted to its home, persisted unoptimised (Dask's low-level fusion
    would drop the restrictions), as the workflow runner does for that op. ``capacity`` is
    placed like the state."""
    run = advance(state, params, grid, nsteps, batch_size, capacity=capacity, workers=homes)
    run_and_forget(client, run, optimize_graph=False)


def _reference_task(
    params: EBMParams, grid: LatLonGrid, nsteps: int, start: np.ndarray, capacity: np.ndarray
) -> None:
    """One whole-globe reference run inside a worker task (one core, nothing exchanged)."""
    with threadpool_limits(limits=1):
        run_reference(params, grid, nsteps, start, capacity=capacity)
