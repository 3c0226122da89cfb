"""A future waited for by :func:`wait_checked` is released as soon as its caller drops it."""

from __future__ import annotations

import gc
import time

from distributed import Client, LocalCluster

from openclaw_dask.workflows.progress import POLL_SECONDS, wait_checked


def test_a_future_waited_over_several_polls_is_released_when_dropped() -> None:
    """Each poll that timed out kept the futures in a reference cycle (the timeout's traceback
    holds distributed's wait frames): dropped, they stayed with the scheduler until Python's
    next full collection. A lost window run again then asked for keys still held as erred
    and got the old error at once (CI: one run in ten of the worker-loss tests); a long run
    kept each window's results in worker memory that long."""
    with (
        LocalCluster(
            n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0"
        ) as cluster,
        Client(cluster) as client,
    ):
        future = client.submit(time.sleep, 4 * POLL_SECONDS, pure=False)
        key = future.key
        polls: list[float] = []
        gc.disable()  # as when no collection comes between: the cycle is never broken
        try:
            wait_checked([future], lambda: polls.append(time.monotonic()))
            assert len(polls) >= 2  # the wait timed out and polled, more than once
            del future
            deadline = time.monotonic() + 5
            while key in client.futures and time.monotonic() < deadline:
                time.sleep(0.05)
            assert key not in client.futures
        finally:
            gc.enable()
