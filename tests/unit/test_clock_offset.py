"""The clock offset of a worker is read from its fastest exchange with the scheduler (NTP's rule).

A slow exchange (a busy event loop on either side) shifts the midpoint of its round trip
away from the moment the scheduler read its clock, by up to half the delay: on a loaded
cluster, an estimate from any but the fastest exchange could refuse workers for clock skew
they do not have. The scheduler here is a stand-in whose clock is 5 s ahead and whose replies
are held back after it has read the clock: the delay a loaded loop adds.
"""

from __future__ import annotations

import asyncio
from typing import Any

from distributed.metrics import time

from openclaw_dask.runtime.inspect import clock_offset

AHEAD = 5.0


class SlowScheduler:
    """Answers ``run_function`` with its clock read at once, the reply held ``delays[i]`` s."""

    def __init__(self, delays: list[float]) -> None:
        self.delays = iter(delays)

    async def run_function(self, **_: Any) -> dict[str, Any]:
        now = time() + AHEAD
        await asyncio.sleep(next(self.delays))
        return {"status": "OK", "result": now}


class Worker:
    def __init__(self, delays: list[float]) -> None:
        self.scheduler = SlowScheduler(delays)


def test_the_offset_comes_from_the_fastest_exchange_whatever_its_place() -> None:
    for fast in (0, 2, 4):
        delays = [0.0 if i == fast else 0.1 for i in range(5)]
        offset, round_trip = asyncio.run(clock_offset(Worker(delays)))
        assert abs(offset - AHEAD) < 0.02, (fast, offset)  # a slow one: 0.05 s off
        assert round_trip < 0.05, (fast, round_trip)
