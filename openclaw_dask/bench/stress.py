"""``benchmark --stress DURATION``: the climate stencil at full load, watched for decay.

The seed's "stress test before production": run the real workload back to back for the whole
duration and report failed tasks, memory growth per worker (RSS after the first round vs after
the last) and throughput drift (the median of the last quarter of rounds vs the first quarter).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import psutil
from distributed import futures_of, wait
from rich.table import Table

from openclaw_dask.bench.load import watch_end, watch_start
from openclaw_dask.bench.machine import config_facts, machine_facts, versions
from openclaw_dask.bench.run import config_argument, watch_workers, workers_lost
from openclaw_dask.bench.suites.stencil import model_setup
from openclaw_dask.config import Config, detect_hardware
from openclaw_dask.runtime import start_cluster
from openclaw_dask.workflows.climate import advance
from openclaw_dask.workflows.climate.params import heat_capacity
from openclaw_dask.workflows.climate.stepper import to_bands

RESOLUTION = 0.5
STEPS_PER_ROUND = 64

#: Rounds after which the state is sent to the workers anew (untimed: 2 MB at 0.5°).
CHAIN_ROUNDS = 50


class StressError(RuntimeError):
    """No round of :func:`stress_test` succeeded: its tasks failed every time."""


def _rss() -> int:
    return psutil.Process().memory_info().rss


def stress_test(
    config: Config | str | Path | None = None,
    *,
    overrides: Sequence[str] | None = None,
    seconds: float = 600.0,
) -> dict[str, Any]:
    """Run the stencil for ``seconds``; return failures, memory growth and drift.

    Returns
    -------
    dict
        ``seconds`` asked for and ``ran_s`` run (less, with ``interrupted``: a Ctrl-C after
        the first round ended it, and it returned what it had measured), ``rounds``,
        ``failed_tasks``, ``errors`` (first few messages), ``workers_lost`` (the
        address of each worker that died during the run, once per death), ``memory`` per worker
        (``start``/``end`` bytes and ``growth`` fraction), ``throughput`` per round
        (cell-updates/s), ``drift`` (last quarter median / first quarter median - 1) and
        ``background``, the cores other processes took meanwhile (:mod:`.load`).

    Raises
    ------
    StressError
        Every round failed (the first error is in its message).
    """
    # a loaded Config gets the overrides too (they had been dropped without a word)
    config = config_argument("stress_test", config, overrides)
    hw = detect_hardware()
    params, grid, start = model_setup(RESOLUTION)
    k = int(config["distributed.batch_size"])
    rates: list[float] = []
    errors: list[str] = []
    failed = 0
    watched = watch_start(config, hw)  # a drift may be another process's doing
    with start_cluster(config, hardware=hw, attach_running=False) as client, client.as_current():
        threads = sum(client.nthreads().values())
        # each death, a restart on a pinned port and a worker that joined and died too
        watch = watch_workers(client)
        # the capacity persisted once: passed as a host array, each round's graph carried its
        # own copy, which the workers kept with the round's records (below). Persisted from a
        # graph, not placed: a worker that dies is counted, and Dask recomputes what it held
        [state, capacity] = client.persist(
            [to_bands(start, threads), to_bands(heat_capacity(params, grid), threads)]
        )
        wait([state, capacity])
        memory_start: dict[str, int] = {}
        step0 = 0
        began = time.monotonic()
        deadline = began + seconds
        interrupted = False
        try:
            # one round at least, good or failed: "or not rates" alone ran on for ever (a
            # --stress 3s still running at 25 s) where every round failed
            while time.monotonic() < deadline or not (rates or failed):
                t0 = time.perf_counter()
                run = advance(state, params, grid, STEPS_PER_ROUND, k, step0, capacity)
                [nxt] = client.persist([run])
                wait(nxt)
                futures = futures_of(nxt)
                bad = [f for f in futures if f.status == "error"]
                if bad:
                    failed += len(bad)
                    errors += [repr(f.exception()) for f in bad[:3]]
                    continue  # keep the last good state and try again
                state, step0 = nxt, step0 + STEPS_PER_ROUND
                rates.append(grid.size * STEPS_PER_ROUND / (time.perf_counter() - t0))
                if not memory_start:
                    memory_start = client.run(_rss)
                if len(rates) % CHAIN_ROUNDS == 0:
                    # a worker keeps each released round's record while a later round that
                    # descends from it is known there (as the workflow's windows, see
                    # workflows.iterative.CHAIN_TASKS): persisted anew from the host, the state
                    # descends from no round, and the growth measured is the cluster's
                    [state] = client.persist([to_bands(state.compute(), threads)])
        except KeyboardInterrupt:
            # the rounds measured until a Ctrl-C stay, as a benchmark's finished suites do: a
            # 10m stress stopped at minute 8 had shown and written nothing
            if not rates:
                raise
            interrupted = True
        ran = time.monotonic() - began
        if not rates:
            raise StressError(
                f"every round failed ({failed} failed task(s) in {ran:.0f} s); the first "
                f"error: {errors[0]}"
            )
        memory_end = client.run(_rss)
        lost = sorted(workers_lost(client, watch))
    background = watch_end(watched)
    quarter = max(1, len(rates) // 4)
    first, last = statistics.median(rates[:quarter]), statistics.median(rates[-quarter:])
    return {
        "config_hash": config.config_hash(),
        "config": config_facts(config),
        "machine": machine_facts(hw),
        "versions": versions(),
        "seconds": seconds,
        "ran_s": ran,
        "interrupted": interrupted,
        "grid": list(grid.shape),
        "steps_per_round": STEPS_PER_ROUND,
        "rounds": len(rates),
        "failed_tasks": failed,
        "errors": errors[:10],
        "workers_lost": lost,
        "memory": {
            w: {
                "start": memory_start.get(w, memory_end[w]),
                "end": memory_end[w],
                "growth": memory_end[w] / memory_start.get(w, memory_end[w]) - 1.0,
            }
            for w in memory_end
        },
        "throughput": rates,
        "throughput_median": statistics.median(rates),
        "drift": last / first - 1.0,
        "background": background,
    }


def stress_table(result: dict[str, Any]) -> Table:
    """The stress result on screen."""
    ran = (
        f"{result['ran_s']:.0f} s of {result['seconds']:g} (Ctrl-C)"
        if result.get("interrupted")
        else f"{result['seconds']:g} s"
    )
    t = Table(title=f"stress test: {ran}, {result['rounds']} rounds")
    t.add_column("figure")
    t.add_column("value")
    t.add_row("failed tasks", str(result["failed_tasks"]))
    # Dask's own logs of a worker's death are kept off the terminal: the table says it
    t.add_row("workers lost (died, restarted)", str(len(result.get("workers_lost", []))))
    t.add_row("throughput (median)", f"{result['throughput_median'] / 1e6:.1f} Mcell/s")
    t.add_row("throughput drift (last vs first quarter)", f"{100 * result['drift']:+.1f}%")
    for worker, m in result["memory"].items():
        t.add_row(
            f"memory {worker}",
            f"{m['start'] / 2**20:.0f} -> {m['end'] / 2**20:.0f} MiB ({100 * m['growth']:+.1f}%)",
        )
    return t
