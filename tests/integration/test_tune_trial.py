"""What one tune trial records, on a real cluster: its rates (work per second) and each
worker's context switches per run.

A workload whose every run makes each worker sleep a known number of times (a voluntary
context switch each) gives a count to check the figure against: per run, not per trial.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from distributed import Client

from openclaw_dask.bench.tune import Tuner
from openclaw_dask.bench.workloads import Workload, workload
from openclaw_dask.config import Config, detect_hardware, load_config
from openclaw_dask.runtime import start_cluster
from openclaw_dask.workflows.run import StepFailedError
from tests.conftest import ROOT

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


def test_a_workflow_trial_s_runs_leave_no_outputs_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``tune --workload run.yaml`` left each run's outputs (Zarr stores, run.json, the
    performance report) in /tmp/openclaw-tune-*, every trial's, after the tune had ended."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    example = (ROOT / "workflows/example.yaml").read_text()
    small = example.replace("default: 1024", "default: 64").replace("default: 512", "default: 32")
    flow = tmp_path / "small.yaml"
    flow.write_text(small.replace("default: 400", "default: 4"))
    sets = ["cluster.dashboard_address=127.0.0.1:0", "parallel.processes=1"]
    config = load_config(None, sets, use_search_path=False)
    with start_cluster(config, attach_running=False) as client:
        run = workload(str(flow)).prepare(client, config)
        run()
        [folder] = tmp_path.glob("openclaw-tune-*")
        assert (folder / "run-0" / "run.json").is_file()  # there while the trial runs
        del run  # the trial is done with it
        assert not folder.exists()


def fails_in_one_process(client: Client, config: Config) -> Callable[[], float]:
    if config["parallel.processes"] == 1:
        raise StepFailedError("grid", "mine:grid", MemoryError("too big for one process"))
    return lambda: 1.0


def test_a_candidate_whose_workflow_fails_is_skipped_and_the_tune_goes_on() -> None:
    """A workflow's step that failed in one candidate's cluster ended the whole tune, with
    "StepFailedError" as an unexpected error, and what the other trials measured was lost."""
    work = Workload("flow", "runs", "a workflow", fails_in_one_process)
    config = load_config(None, ["cluster.dashboard_address=127.0.0.1:0"], use_search_path=False)
    tuner = Tuner(config, work, 60.0, detect_hardware(), lambda _: None, repeats=1)
    trial = tuner.measure("threads", {"parallel.processes": 1, "parallel.thread_pool_size": 1})
    assert trial.skipped == (
        "step 'grid' (op mine:grid) failed: MemoryError: too big for one process"
    )
    assert not trial.samples
    with pytest.raises(StepFailedError):  # the baseline must run
        tuner.measure("baseline", {"parallel.processes": 1}, strict=True)


def fails_in_the_candidate_s_third_run(client: Client, config: Config) -> Callable[[], float]:
    runs: list[int] = []

    def run() -> float:
        runs.append(1)
        if config["parallel.processes"] == 1 and len(runs) == 3:  # final pair 2
            raise StepFailedError("grid", "mine:grid", OSError("the scratch disk went away"))
        client.submit(time.sleep, 0.01, pure=False).result()
        return 1.0

    return run


def test_a_workflow_that_fails_in_the_final_pairs_ends_them_with_no_recommendation() -> None:
    """It had ended the whole tune, said as "tune's baseline run ... failed", and the trials
    measured before were lost with it."""
    from openclaw_dask.bench.tune import Trial, tuned_config_text
    from openclaw_dask.bench.tune_pairs import candidate_won, failed_note
    from openclaw_dask.bench.tune_report import markdown
    from tests.unit.test_bench_report import _tune_report

    work = Workload("flow", "runs", "a workflow", fails_in_the_candidate_s_third_run)
    sets = ["cluster.dashboard_address=127.0.0.1:0", "parallel.processes=2"]
    config = load_config(None, sets, use_search_path=False)
    lines: list[str] = []
    tuner = Tuner(config, work, 60.0, detect_hardware(), lines.append, repeats=1)
    comp = tuner.compare(Trial("threads", {"parallel.processes": 1}), pairs=5)
    assert comp["failed"] == {
        "side": "tuned",
        "pair": 2,
        "error": "step 'grid' (op mine:grid) failed: OSError: the scratch disk went away",
    }
    assert comp["pairs"] == 1 and not candidate_won(comp)
    said = (
        "the candidate's workflow run failed in final pair 2, after its trial had run: step "
        "'grid' (op mine:grid) failed: OSError: the scratch disk went away; no recommendation"
    )
    assert failed_note(comp) == said
    [line] = lines
    assert line.endswith(f"; {said}"), line
    # the tuned config and the report say so too (the baseline unchanged)
    report = _tune_report(config) | {"comparison": {**comp, "candidate": {}}}
    assert f"Keep the baseline: {said}." in markdown(report)
    text = tuned_config_text(config, report)
    assert "# measured: the candidate's workflow run failed in the final pairs; this is" in text
