"""When paused workers count as stuck for good: memory that does not fall, not memory that
falls slowly.

:class:`~openclaw_dask.runtime.oom.PauseWatch` reads only the scheduler's worker table; the
scheduler here is a stand-in whose paused workers' memory follows a given series, one value
per poll, so that the rule itself is what is tested (a real cluster's spilling cannot be paced).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from openclaw_dask.runtime.oom import FREED_FRACTION, PauseWatch

BUDGET = 1000


class PausedCluster:
    """Two paused workers, idle, holding a ready task each; their memory from ``series``."""

    def __init__(self, series: Iterator[float]) -> None:
        self.series = series
        self.futures: dict[str, Any] = {}

    def scheduler_info(self, n_workers: int = -1) -> dict[str, Any]:
        held = next(self.series) / 2
        worker = {
            "status": "paused",
            "memory_limit": BUDGET,
            "metrics": {"memory": held, "task_counts": {"ready": 1}},
        }
        return {"workers": {"tcp://a:1": worker, "tcp://b:1": dict(worker)}}

    def cancel(self, *args: Any, **kwargs: Any) -> None:
        pass


def watched(series: Iterator[float], seconds: float) -> PauseWatch:
    watch = PauseWatch(PausedCluster(series), grace=0.3, every=0.02)
    with watch:
        time.sleep(seconds)
    return watch


def flat() -> Iterator[float]:
    while True:
        yield 1800.0


def falling(per_poll: float) -> Iterator[float]:
    held = 1800.0
    while True:
        yield held
        held = max(held - per_poll, 0.0)


def test_paused_workers_whose_memory_stays_are_stuck_after_the_grace() -> None:
    watch = watched(flat(), 1.0)
    assert watch.error is not None and "freed nothing for 0 s" in str(watch.error)


def test_paused_workers_freeing_memory_slowly_are_not_stuck() -> None:
    """Spilling many small keys frees memory a little at each poll: a fall of 1 % of the
    budget per poll is FREED_FRACTION within five polls, far inside the grace (15 polls).
    It had to fall by FREED_FRACTION between two polls to count, so a cluster spilling
    steadily was failed as out of memory."""
    per_poll = 2 * BUDGET * FREED_FRACTION / 5
    watch = watched(falling(per_poll), 1.0)
    assert watch.error is None
