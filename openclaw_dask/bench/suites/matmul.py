"""``matmul``: blocked Dask matmul vs one numpy/BLAS matmul on the same cores.

The Dask product is blocked in row bands (one band per worker thread) with ``B`` replicated to
every worker (the active memory manager pauses meanwhile, or it would drop the replicas), so
each task is one large BLAS call and nothing moves during the timed part;
the workers' BLAS is single-threaded (the plan sets ``OMP_NUM_THREADS`` per worker). The
baseline is one ``numpy.matmul`` in this process with BLAS on as many threads as the cluster
has, and once more on one thread (the speedup's denominator).
"""

from __future__ import annotations

import dask.array as da
import numpy as np
from distributed import wait
from threadpoolctl import threadpool_limits

from openclaw_dask.bench.suite import BenchContext, SuiteResult, run_and_forget
from openclaw_dask.bench.timing import interleaved, ratio, round_ratios


def run(ctx: BenchContext) -> SuiteResult:
    """Measure GFLOP/s of Dask and of BLAS, their ratio and the speedup over 1 thread."""
    n = 1024 if ctx.quick else 4096
    threads = ctx.worker_threads
    rng = np.random.default_rng(0)
    a = rng.random((n, n))
    b = rng.random((n, n))
    band = -(-n // threads)
    client = ctx.client
    # the inputs are made on the workers (same sizes, other values: speed does not depend on them)
    gen = da.random.default_rng(0)
    [da_a] = client.persist([gen.random((n, n), chunks=(band, n))])
    [da_b] = client.persist([gen.random((n, n), chunks=(n, n))])
    wait([da_a, da_b])
    # every worker holds B, so the timed part moves no data; the active memory manager would
    # drop the extra replicas as redundant within seconds, so it pauses for this suite
    client.amm.stop()
    try:
        client.replicate([da_b])

        def dask_matmul() -> None:
            run_and_forget(client, da_a @ da_b)

        def blas_all() -> None:
            with threadpool_limits(limits=threads, user_api="blas"):
                np.matmul(a, b)

        def blas_one() -> None:
            with threadpool_limits(limits=1, user_api="blas"):
                np.matmul(a, b)

        t = interleaved(
            {"dask": dask_matmul, "blas": blas_all, "blas_1thread": blas_one},
            repeats=ctx.repeats(5),
        )
    finally:
        client.amm.start()
    flops = 2.0 * n**3
    result = SuiteResult(
        params={"n": n, "band_rows": band, "threads": threads, "dtype": "float64"},
        timings=t,
        throughput={k: (v.rate(flops) / 1e9, "GFLOP/s") for k, v in t.items()},
        ratios={
            "dask_vs_blas": ratio(t["dask"], t["blas"]),
            "speedup_vs_1thread": ratio(t["dask"], t["blas_1thread"]),
        },
        goals={"dask_vs_blas": 0.9},
        rounds={"dask_vs_blas": round_ratios(t["dask"], t["blas"])},
    )
    return result
