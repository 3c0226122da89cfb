"""``reduce``: a large sum and mean with deterministic mode on vs off.

Dask's array reductions already combine partial results in an order fixed by the graph, so a
result can only change with the chunking (and with ``split_every``). Deterministic mode
therefore fixes both independently of the cluster: what costs time is that the chunk count no
longer follows the worker threads. Off: one band per worker thread (what
``climate.choose_bands`` does outside deterministic mode). On: the fixed band count of
deterministic mode (``DETERMINISTIC_MAX_BANDS``) and a fixed ``split_every``; the suite checks
that repeated deterministic results are bit-identical.
"""

from __future__ import annotations

import dask
import dask.array as da
from distributed import wait

from openclaw_dask.bench.suite import BenchContext, SuiteResult
from openclaw_dask.bench.timing import interleaved, ratio
from openclaw_dask.workflows.climate.stepper import band_chunks
from openclaw_dask.workflows.ops.climate import DETERMINISTIC_MAX_BANDS

#: fixed reduction tree width in deterministic mode
SPLIT_EVERY = 8


def run(ctx: BenchContext) -> SuiteResult:
    """Time sum + mean on both layouts; cost ratio on/off."""
    rows, cols = (2048, 4096) if ctx.quick else (16384, 8192)
    threads = ctx.worker_threads
    client = ctx.client
    layouts = {
        "off": band_chunks(rows, threads),
        "on": band_chunks(rows, DETERMINISTIC_MAX_BANDS),
    }
    fields = {}
    for mode, bands in layouts.items():
        rng = da.random.default_rng(42)  # seeded per block: the same numbers in both layouts
        x = rng.standard_normal((rows, cols), chunks=(bands, cols))
        [fields[mode]] = client.persist([x])
    wait(list(fields.values()))
    answers: dict[str, list[tuple[float, float]]] = {"on": [], "off": []}

    def reduce(mode: str):
        x = fields[mode]
        split = SPLIT_EVERY if mode == "on" else None

        def go() -> None:
            answers[mode].append(dask.compute(x.sum(split_every=split), x.mean(split_every=split)))

        return go

    t = interleaved({"off": reduce("off"), "on": reduce("on")}, repeats=ctx.repeats(7))
    nbytes = rows * cols * 8
    repeatable = len({tuple(a) for a in answers["on"]}) == 1
    notes = [f"deterministic results identical over {len(answers['on'])} runs: {repeatable}"]
    return SuiteResult(
        params={"shape": [rows, cols], "bands_off": threads, "bands_on": len(layouts["on"])},
        timings={f"deterministic_{k}": v for k, v in t.items()},
        throughput={f"deterministic_{k}": (2 * v.rate(nbytes), "B/s") for k, v in t.items()},
        ratios={"deterministic_cost": ratio(t["off"], t["on"])},  # time on / time off
        goals={"deterministic_cost": 1.02},
        goals_at_most={"deterministic_cost"},
        notes=notes,
    )
