"""What ``tune`` decides from its measurements: the faster layout, a real gain, a won final.

A real tune measures real clusters, whose rates are noise around a few percent: its decisions
cannot be pinned down from a real run. Here the measurements are given (each candidate's rate
as a table), and the tuner's own sweeps and rules choose from them, as they do in ``tune``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from openclaw_dask.bench.tune import (
    BUDGET_SPENT,
    FINAL_SHARE,
    MIN_GAIN,
    Trial,
    Tuner,
    tuned_config_text,
    unmeasured,
)
from openclaw_dask.bench.tune_pairs import candidate_won, summary
from openclaw_dask.bench.workloads import describe_rate, workload
from openclaw_dask.config import load_config
from tests.conftest import make_hardware

Rates = Callable[[dict[str, Any]], float]


def tuner(rates: Rates, cores: int = 4) -> Tuner:
    """A tuner whose trials are "measured" at ``rates(changes)`` (three equal repeats)."""
    base = load_config(None, use_search_path=False)
    t = Tuner(base, workload("stencil"), 600.0, make_hardware(cores=cores), lambda _: None)

    def measure(stage: str, changes: dict[str, Any], strict: bool = False) -> Trial:
        trial = Trial(stage, dict(changes), samples=[rates(changes)] * 3)
        t.trials.append(trial)
        return trial

    t.measure = measure  # type: ignore[method-assign]
    return t


def threads_of(trial: Trial) -> tuple[int, int]:
    return trial.changes["parallel.thread_pool_size"], trial.changes["parallel.processes"]


def test_the_thread_sweep_keeps_the_faster_layout_and_stops_once_more_threads_are_slower() -> None:
    """4 cores: totals 2..6 are tried, one process or one thread per process each."""

    def rising_to_five(changes: dict[str, Any]) -> float:
        total, procs = changes["parallel.thread_pool_size"], changes["parallel.processes"]
        peak = {2: 200.0, 3: 300.0, 4: 400.0, 5: 500.0, 6: 450.0}[total]
        return peak if procs == 1 else peak / 2  # one process is the faster layout here

    t = tuner(rising_to_five)
    baseline = Trial("baseline", {}, samples=[100.0] * 3)
    best = t.sweep_threads(baseline)
    assert threads_of(best) == (5, 1)
    # 5 threads beat 4, so 6 was measured too (and was slower)
    assert {threads_of(x) for x in t.trials} >= {(6, 1), (6, 6)}
    assert "parallel.thread_pool_size" in t.reasons

    def falling_past_four(changes: dict[str, Any]) -> float:
        total = changes["parallel.thread_pool_size"]
        return {2: 200.0, 3: 300.0, 4: 400.0, 5: 350.0, 6: 900.0}[total]

    t = tuner(falling_past_four)
    best = t.sweep_threads(baseline)
    assert threads_of(best)[0] == 4
    # 5 threads were slower than 4: the sweep stops there and 6 is never started
    assert max(threads_of(x)[0] for x in t.trials) == 5


def test_a_candidate_is_adopted_only_when_it_is_faster_by_the_minimum_gain() -> None:
    t = tuner(lambda changes: 0.0)
    best = Trial("baseline", {}, samples=[100.0] * 3)
    for rate in (95.0, 99.0, 100.0, 100.0 * MIN_GAIN):
        slower = Trial("affinity", {"parallel.thread_affinity": "compact"}, samples=[rate] * 3)
        assert t.adopt(best, slower) is best, rate
    faster = Trial("affinity", {"parallel.thread_affinity": "compact"}, samples=[110.0] * 3)
    assert t.adopt(best, faster) is faster
    assert t.reasons["parallel.thread_affinity"].startswith("affinity sweep measured 0.00011 ")
    assert t.best([best, faster]) is faster and t.best([faster, best]) is faster


def test_a_sweep_tries_every_other_value_and_keeps_the_fastest() -> None:
    """From a system-malloc baseline the allocator sweep tries jemalloc and tcmalloc both:
    the value the best trial already has is passed over, not the end of the sweep."""
    speed = {"system": 100.0, "jemalloc": 104.0, "tcmalloc": 120.0}
    t = tuner(lambda changes: speed[changes.get("memory.allocator", "system")])
    baseline = Trial("baseline", {}, samples=[100.0] * 3)
    best = t.sweep("allocator", "memory.allocator", ["system", "jemalloc", "tcmalloc"], baseline)
    assert [x.changes["memory.allocator"] for x in t.trials] == ["jemalloc", "tcmalloc"]
    assert best.changes == {"memory.allocator": "tcmalloc"}


def test_the_final_pairs_recommend_only_a_candidate_faster_in_the_median_and_most_pairs() -> None:
    faster = summary({"baseline": [10.0, 10.0, 10.0], "tuned": [12.0, 12.0, 12.0]})
    assert faster["speedup"] == 1.2 and faster["tuned_wins"] == 3
    assert candidate_won(faster)
    slower = summary({"baseline": [12.0, 12.0, 12.0], "tuned": [10.0, 10.0, 10.0]})
    assert math.isclose(slower["speedup"], 10 / 12) and not candidate_won(slower)
    # a higher median from half the pairs is a tie in the pairs: not a win
    half = summary({"baseline": [10.0, 10.0, 10.0, 10.0], "tuned": [12.0, 9.0, 12.0, 9.0]})
    assert half["speedup"] > 1.0 and half["tuned_wins"] == 2
    assert not candidate_won(half)


def test_the_suggested_budget_leaves_the_sweep_time_for_every_candidate() -> None:
    """The sweep gets 1 - FINAL_SHARE of the budget: the budget suggested for the candidates
    the last one left unmeasured must give the sweep the time they all take."""
    trials = [Trial("baseline", {}, samples=[1.0], wall_s=100.0)]
    trials += [Trial("threads", {"k": i}, skipped=BUDGET_SPENT) for i in range(9)]
    left = unmeasured(trials)
    assert left is not None and (left["count"], left["candidates"]) == (9, 9)
    sweep_time = left["suggested_budget_s"] * (1 - FINAL_SHARE)
    assert sweep_time >= 100.0 * len(trials)
    assert left["suggested_budget_s"] % 60 == 0


def test_a_workflow_workload_s_rate_is_said_in_runs_per_minute() -> None:
    assert describe_rate(1 / 30, "runs") == "2 runs/min"
    assert describe_rate(2.5e9, "FLOP") == "2.5 GFLOP/s"
    assert describe_rate(3e6, "cell-updates") == "3 Mcell/s"


def test_the_tuned_config_keeps_every_setting_of_the_baseline_besides_the_tuned_ones(
    tmp_path: Any,
) -> None:
    """A user's tuned config replaces theirs: their own settings (their storage codec, their
    allocator) must still be in it, with only the recommended keys changed."""
    path = tmp_path / "openclaw.config"
    path.write_text(
        "storage:\n  codec: lz4\n  level: 5\nmemory:\n  allocator: jemalloc\n"
        "distributed:\n  sync_interval: 250\n"
    )
    config = load_config(path, ["distributed.batch_size=32"], use_search_path=False)
    report = {
        "workload": {"name": "stencil"},
        "machine": {"host": "vm", "usable_cores": 4},
        "config_file": str(path),
        "config_hash": config.config_hash(),
        "config": {},
        "comparison": {"speedup": 1.1, "pairs": 5, "tuned_wins": 4},
        "recommended": {"parallel.thread_pool_size": 3, "parallel.processes": 1},
        "reasons": {},
        "unmeasured": None,
        "budget_s": 600.0,
    }
    out = tmp_path / "tuned.config"
    out.write_text(tuned_config_text(config, report))
    tuned = load_config(out, use_search_path=False)
    for key in ("storage.codec", "storage.level", "memory.allocator", "distributed.sync_interval"):
        assert tuned[key] == config[key], key
    assert tuned["distributed.batch_size"] == 32  # a --set value of the baseline too
    assert (tuned["parallel.thread_pool_size"], tuned["parallel.processes"]) == (3, 1)
