"""Machine probes measured in the benchmark's own process: memory copy bandwidth."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from types import TracebackType

import numpy as np

from openclaw_dask.bench.timing import clock


class CopyProbe:
    """Sustained copy bandwidth in bytes/s (read + write counted), on ``threads`` threads, as
    one more step of an interleaved timing.

    Each thread copies its own slice of a buffer far larger than the caches with
    ``numpy.copyto`` (which releases the GIL), the STREAM "copy" kernel. A call takes the best
    of ``tries`` copies (bandwidth is a ceiling, and noise only ever lowers it) and appends it
    to :attr:`readings`. Timed in each round beside the runs it is compared with, a ratio to
    it sees the same machine they saw: on the development VM a probe taken once after the
    suite's timings once read 18 GB/s where the rounds around it read 26-28.

    Parameters
    ----------
    threads : int
        Threads copying at once (the cluster's worker threads).
    nbytes : int, optional
        Size of the copied buffer.
    tries : int, optional
        Copies per call; the call's reading is the fastest.
    """

    def __init__(self, threads: int, nbytes: int = 256 * 2**20, tries: int = 5) -> None:
        self._src = np.ones(nbytes // 8)
        self._dst = np.empty_like(self._src)
        parts = np.array_split(np.arange(self._src.size), threads)
        self._bounds = [(int(p[0]), int(p[-1]) + 1) for p in parts if p.size]
        self._pool = ThreadPoolExecutor(threads)
        self._tries = tries
        #: bytes/s, one per call
        self.readings: list[float] = []

    def _copy_slice(self, bound: tuple[int, int]) -> None:
        lo, hi = bound
        np.copyto(self._dst[lo:hi], self._src[lo:hi])

    def _copy(self) -> None:
        list(self._pool.map(self._copy_slice, self._bounds))

    def __call__(self) -> None:
        best = min(clock(self._copy) for _ in range(self._tries))
        self.readings.append(2 * self._src.nbytes / best)

    def __enter__(self) -> CopyProbe:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._pool.shutdown()
