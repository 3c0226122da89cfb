"""``graph``: scheduler memory and per-step time after 100 vs 10 000 model steps.

The climate model is advanced the way the engine runs an iterative step: a graph of
``distributed.sync_interval`` steps at a time (at most a tenth of the long run, so that it is
ten windows or more), persisted, the previous state released. If the
graph grew with the length of the run (dask#3898, dask#4630), the scheduler's memory and the
time per step would grow with it; here both are measured after a short and a long run on a
coarse grid (small tasks, so scheduler costs dominate what is measured).
"""

from __future__ import annotations

import time
from typing import Any

import psutil
from distributed import wait

from openclaw_dask.bench.suite import BenchContext, SuiteResult
from openclaw_dask.bench.suites.stencil import halo_batch, model_setup
from openclaw_dask.bench.timing import Timing
from openclaw_dask.runtime.memory import release_free_memory
from openclaw_dask.workflows.climate import LatLonGrid, advance
from openclaw_dask.workflows.climate.stepper import band_chunks, to_bands

RESOLUTION = 4.0


def _scheduler_state(dask_scheduler: Any) -> dict[str, int]:
    release_free_memory()  # count live memory, not free pages the allocator still holds
    return {"rss": psutil.Process().memory_info().rss, "tasks": len(dask_scheduler.tasks)}


def _windowed_run(ctx: BenchContext, nsteps: int, window: int) -> tuple[float, float]:
    """Run ``nsteps`` in windows of ``window``; return (total seconds, seconds per step of the
    last window)."""
    params, grid, start = model_setup(RESOLUTION)
    client = ctx.client
    [state] = client.persist([to_bands(start, ctx.worker_threads)])
    k, _ = batch_size(ctx)
    wait(state)
    t0 = time.perf_counter()
    last = 0.0
    for step0 in range(0, nsteps, window):
        n = min(window, nsteps - step0)
        w0 = time.perf_counter()
        [state] = client.persist([advance(state, params, grid, n, k, step0=step0)])
        wait(state)
        last = (time.perf_counter() - w0) / n
    total = time.perf_counter() - t0
    del state
    return total, last


def batch_size(ctx: BenchContext) -> tuple[int, list[str]]:
    """The batch the bands of this coarse grid allow (22 rows on 2 threads: less than the
    default 64), and a note when it is less than the configured one."""
    return halo_batch(ctx, band_chunks(LatLonGrid(RESOLUTION).nlat, ctx.worker_threads))


def run(ctx: BenchContext) -> SuiteResult:
    """Short run, then long run; scheduler RSS and per-step time after each."""
    short, long = 100, (1000 if ctx.quick else 10_000)
    # the engine's windows, but at least ten in the long run: what is measured is whether
    # the graph grows with the windows run (sync_interval's default, 5000, would give two)
    window = min(int(ctx.config["distributed.sync_interval"]), long // 10)
    client = ctx.client
    # warm-up as long as the measured run: imports, worker caches, and the scheduler's bounded
    # logs (transitions, events, task stream) filled to their caps, so that what grows after
    # this grows with the length of the run
    _windowed_run(ctx, long, window)
    t_short, step_short = _windowed_run(ctx, short, window)
    after_short = client.run_on_scheduler(_scheduler_state)
    t_long, step_long = _windowed_run(ctx, long, window)
    time.sleep(0.5)  # let the scheduler forget the released keys
    after_long = client.run_on_scheduler(_scheduler_state)
    growth = after_long["rss"] / after_short["rss"] - 1.0
    k, cut = batch_size(ctx)
    return SuiteResult(
        params={
            "resolution_deg": RESOLUTION,
            "steps_short": short,
            "steps_long": long,
            "sync_interval": int(ctx.config["distributed.sync_interval"]),
            "window": window,
            "batch_size": k,
        },
        timings={
            f"run_{short}_steps": Timing((t_short,)),
            f"run_{long}_steps": Timing((t_long,)),
        },
        throughput={
            "scheduler_rss_short": (float(after_short["rss"]), "B"),
            "scheduler_rss_long": (float(after_long["rss"]), "B"),
            "scheduler_tasks_after_long": (float(after_long["tasks"]), "tasks"),
            "step_time_short": (step_short * 1e3, "ms/step"),
            "step_time_long_last_window": (step_long * 1e3, "ms/step"),
        },
        ratios={
            "scheduler_memory_growth": growth,
            "step_time_long_vs_short": step_long / step_short,
        },
        goals={"scheduler_memory_growth": 0.10},
        goals_at_most={"scheduler_memory_growth"},
        notes=[f"scheduler holds {after_long['tasks']} tasks after the long run", *cut],
    )
