"""A tune whose baseline alone outlasts ``--budget`` (a cluster slow to start) says so."""

from __future__ import annotations

from typing import Any

from openclaw_dask.bench.tune import budget_note


def _report(baseline_s: float, budget_s: float = 20.0) -> dict[str, Any]:
    """What ``budget_note`` reads of a report: 11 candidates left unmeasured."""
    return {
        "budget_s": budget_s,
        "unmeasured": {"count": 11, "candidates": 11, "suggested_budget_s": 540},
        "trials": [{"stage": "baseline", "wall_s": baseline_s}],
    }


def test_a_baseline_past_the_budget_is_said_with_its_time() -> None:
    # measured: workers that took 25 s to start made `tune --budget 20s` take 34 s, and the
    # note said only "the budget (20 s) ran out", as if it had been kept
    note = budget_note(_report(baseline_s=30.7))
    assert note == (
        "11 of 11 candidates not measured: the budget (20 s) left no room for them beside the "
        "final comparison, the baseline alone took 31 s (its cluster's start, a warm-up, a "
        "timed run: it always runs); --budget 9m or more measures them all here"
    )


def test_a_baseline_within_the_budget_is_not_mentioned() -> None:
    note = budget_note(_report(baseline_s=12.0))
    assert note is not None and "baseline" not in note
