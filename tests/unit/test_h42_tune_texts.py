"""What a tune's texts say when the budget left no time for the final comparison of the
candidates it measured: not "no candidate was measured" (some were)."""

from __future__ import annotations

from pathlib import Path

from openclaw_dask.bench.tune import not_compared, tuned_config_text
from openclaw_dask.bench.tune_report import markdown
from openclaw_dask.config import load_config
from tests.unit.test_bench_report import _tune_report

SKIPPED = (
    "final comparison: not made, the budget had 3 s left and the pairs take about 9 s; "
    "nothing is recommended without it"
)


def test_a_final_comparison_the_budget_left_out_is_said_so(tmp_path: Path) -> None:
    config = load_config(None, use_search_path=False)
    report = _tune_report(config)
    assert not_compared(report) == "no candidate was measured within the budget"
    report |= {"final_skipped": SKIPPED, "skipped": [SKIPPED]}
    said = "the budget ran out before the final comparison"
    assert not_compared(report) == said
    text = tuned_config_text(config, report)
    assert f"# measured: {said}; this is the baseline unchanged" in text
    (tmp_path / "tuned.config").write_text(text)
    assert load_config(tmp_path / "tuned.config").config_hash() == config.config_hash()
    md = markdown(report)
    assert f"Not measured: {said}." in md and f"Keep the baseline: {said}." in md
    assert f"- {SKIPPED}" in md and "no candidate" not in md.lower()
