"""What one tune trial records, on a real cluster: its rates (work per second) and each
worker's context switches per run.

A workload whose every run makes each worker sleep a known number of times (a voluntary
context switch each) gives a count to check the figure against: per run, not per trial.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from distributed import Client

from openclaw_dask.bench.tune import Tuner
from openclaw_dask.bench.workloads import Workload
from openclaw_dask.config import Config, detect_hardware, load_config
from openclaw_dask.runtime import start_cluster

SLEEPS = 400


def sleep_often() -> None:
    for _ in range(SLEEPS):
        time.sleep(0.0002)


def prepare(client: Client, config: Config) -> Callable[[], float]:
    def run() -> float:
        client.run(sleep_often)
        return 1.0

    return run


def test_a_trial_records_runs_per_second_and_each_worker_s_switches_per_run() -> None:
    work = Workload("sleeps", "runs", f"{SLEEPS} sleeps in each worker", prepare)
    sets = ["cluster.dashboard_address=127.0.0.1:0", "parallel.processes=2"]
    config = load_config(None, sets, use_search_path=False)
    hw = detect_hardware()
    tuner = Tuner(config, work, 60.0, hw, lambda _: None, repeats=3)
    with start_cluster(config, hardware=hw, attach_running=False) as client:
        t0 = time.perf_counter()
        samples, per_run, lost = tuner._timed(client, config)
        wall = time.perf_counter() - t0
    assert len(samples) == 3 and lost == []
    # a rate is runs per second: each run takes the sleeps at least, and the three fit in
    # the call (which also warmed up once)
    seconds = [1 / rate for rate in samples]
    assert all(s >= SLEEPS * 0.0002 for s in seconds) and sum(seconds) < wall, (seconds, wall)
    assert len(per_run) == 2
    for worker, switches in per_run.items():
        # each sleep is one; Dask's own threads add some (heartbeats, the event loop)
        assert SLEEPS <= switches < 2 * SLEEPS, (worker, switches)
