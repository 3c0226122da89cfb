"""Machine probes measured in the benchmark's own process: memory copy bandwidth."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from openclaw_dask.bench.timing import Timing, interleaved


def copy_bandwidth(threads: int, nbytes: int = 256 * 2**20, repeats: int = 5) -> float:
    """Sustained copy bandwidth in bytes/s (read + write counted), on ``threads`` threads.

    Each thread copies its own slice of a buffer far larger than the caches with
    ``numpy.copyto`` (which releases the GIL), the STREAM "copy" kernel.
    """
    src = np.ones(nbytes // 8)
    dst = np.empty_like(src)
    parts = np.array_split(np.arange(src.size), threads)
    bounds = [(p[0], p[-1] + 1) for p in parts if p.size]

    def copy_slice(bound: tuple[int, int]) -> None:
        lo, hi = bound
        np.copyto(dst[lo:hi], src[lo:hi])

    with ThreadPoolExecutor(threads) as pool:
        timing: Timing = interleaved(
            {"copy": lambda: list(pool.map(copy_slice, bounds))}, repeats=repeats, warmup=1
        )["copy"]
    # the best repeat: bandwidth is a ceiling, and noise only ever lowers it
    return 2 * src.nbytes / min(timing.samples)
