"""``reduce``: what deterministic mode costs a large sum and mean.

Dask's own sum over both axes adds the chunks' partial sums in a tree shaped by the chunks, so
a field in one band per worker thread (the cluster's layout) gives different bits on another
cluster. The built-in workflows keep ``parallel.deterministic_mode``'s promise with
:func:`~openclaw_dask.workflows.reductions.sum_rows_first` instead (whole-row sums, then the
column of row sums in one piece: the same bits for any banding) and keep the cluster's layout;
an earlier design fixed the band count instead (4 bands: 1.13-1.24x on 2 cores). This suite
times both on the cluster's layout: off, Dask's ``sum``; on, ``sum_rows_first``; the mean is the
sum over the size on both sides. It checks that the deterministic sum of the same numbers
chunked in another band count has the same bits (and reports whether Dask's own sum does).
"""

from __future__ import annotations

import dask
import dask.array as da
from distributed import wait

from openclaw_dask.bench.suite import BenchContext, SuiteResult
from openclaw_dask.bench.timing import interleaved, ratio, round_ratios
from openclaw_dask.workflows.climate.stepper import band_chunks
from openclaw_dask.workflows.reductions import sum_rows_first


def _sums(x: da.Array, deterministic: bool) -> tuple[da.Array, da.Array]:
    total = sum_rows_first(x) if deterministic else x.sum()
    return total, total / x.size


def run(ctx: BenchContext) -> SuiteResult:
    """Time sum + mean both ways on the cluster's layout; cost ratio on/off."""
    rows, cols = (2048, 4096) if ctx.quick else (16384, 8192)
    threads = ctx.worker_threads
    client = ctx.client
    layouts = {"cluster": band_chunks(rows, threads), "other": band_chunks(rows, threads + 1)}
    x = da.random.default_rng(42).standard_normal((rows, cols), chunks=(layouts["cluster"], cols))
    # the same numbers in the other layout (a seeded field drawn in other blocks would differ)
    other = x.rechunk((layouts["other"], cols))
    fields = dict(zip(layouts, client.persist([x, other]), strict=True))
    wait(list(fields.values()))
    answers: dict[str, list[tuple[float, float]]] = {"on": [], "off": []}

    def reduce(mode: str):
        deterministic = mode == "on"

        def go() -> None:
            answers[mode].append(dask.compute(*_sums(fields["cluster"], deterministic)))

        return go

    t = interleaved({"off": reduce("off"), "on": reduce("on")}, repeats=ctx.repeats(31))
    nbytes = rows * cols * 8
    on_other = dask.compute(*_sums(fields["other"], True))
    off_other = dask.compute(*_sums(fields["other"], False))
    identical = {mode: len({*answers[mode]}) == 1 for mode in answers}
    notes = [
        f"deterministic results identical over {len(answers['on'])} runs and on "
        f"{threads} and {threads + 1} bands: {identical['on'] and on_other == answers['on'][0]}",
        f"Dask's own sum identical on {threads} and {threads + 1} bands: "
        f"{identical['off'] and off_other == answers['off'][0]}",
    ]
    return SuiteResult(
        params={"shape": [rows, cols], "bands": threads, "other_bands": threads + 1},
        timings={f"deterministic_{k}": v for k, v in t.items()},
        throughput={f"deterministic_{k}": (v.rate(nbytes), "B/s") for k, v in t.items()},
        ratios={"deterministic_cost": ratio(t["off"], t["on"])},  # time on / time off
        goals={"deterministic_cost": 1.02},
        goals_at_most={"deterministic_cost"},
        rounds={"deterministic_cost": round_ratios(t["off"], t["on"])},
        notes=notes,
    )
