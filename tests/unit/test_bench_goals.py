"""A benchmark ratio is of the two timings' medians, and a goal is met from its own side.

``benchmark --quick`` times each figure once, where a median, a mean and a minimum are one
number: these check the rules on timings of several repeats, and the goals both ways.
"""

from __future__ import annotations

from rich.console import Console

from openclaw_dask.bench.report import table
from openclaw_dask.bench.suite import SuiteResult
from openclaw_dask.bench.timing import Timing, ratio, round_ratios


def test_a_ratio_is_of_the_medians_and_each_round_of_its_own_pair() -> None:
    dask = Timing((1.0, 2.0, 9.0))  # median 2 s (mean 4, fastest 1)
    numpy = Timing((3.0, 8.0, 4.0))  # median 4 s (mean 5, fastest 3)
    assert dask.median == 2.0 and numpy.median == 4.0
    assert ratio(dask, numpy) == 2.0  # Dask did the same work twice as fast
    assert ratio(numpy, dask) == 0.5
    assert round_ratios(dask, numpy) == (3.0, 4.0, 4.0 / 9.0)


def test_a_goal_is_met_from_its_own_side() -> None:
    result = SuiteResult(
        ratios={"efficiency": 0.95, "slow": 0.5, "cost": 1.2, "cheap": 1.05, "free": 3.0},
        goals={"efficiency": 0.9, "slow": 0.9, "cost": 1.1, "cheap": 1.1},
        goals_at_most={"cost", "cheap"},
    )
    assert result.goal_met("efficiency") is True and result.goal_met("slow") is False
    assert result.goal_met("cost") is False and result.goal_met("cheap") is True
    assert result.goal_met("free") is None  # no goal
    goals = result.to_dict()["goals"]
    assert goals["efficiency"] == {"target": 0.9, "kind": "at_least", "met": True}
    assert goals["cost"] == {"target": 1.1, "kind": "at_most", "met": False}
    assert set(goals) == {"efficiency", "slow", "cost", "cheap"}

    console = Console(width=200, record=True)
    console.print(table({"config_hash": "0" * 16, "suites": {"s": result.to_dict()}}))
    cells = [line.split("│") for line in console.export_text().splitlines() if "│" in line]
    rows = {c[1].strip(): c[4].strip() for c in cells}
    assert rows["efficiency"] == ">= 0.9 met" and rows["slow"] == ">= 0.9 missed"
    assert rows["cost"] == "<= 1.1 missed" and rows["cheap"] == "<= 1.1 met"
    assert rows["free"] == ""


def test_a_spread_is_the_repeats_range_over_their_median() -> None:
    """``--quick`` times each figure once (a spread of 0 whatever its formula): the range over
    the median, not over the slowest repeat, is pinned here."""
    timing = Timing((1.0, 2.0, 4.0))
    assert timing.spread == 1.5
    assert timing.to_dict()["spread"] == 1.5 and timing.to_dict()["min_s"] == 1.0
    assert Timing((3.0,)).spread == 0.0
