"""``tune --budget`` is a promise of wall time: the whole command keeps within it.

A budget of 5 s had taken 13 s (the baseline ran whatever the budget, and the command's start
and its reports were not counted), and one of 30 s 39-47 s (a trial started just before the
sweep's deadline ran a whole trial past it, the final pairs past the budget).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from openclaw_dask.bench.tune import MIN_BUDGET_S
from tests.integration.conftest import isolated_env
from tests.unit.test_cli import run_cli

#: what may run past the budget: one timed run of the stencil (~1 s here), a cluster's
#: shutdown and the interpreter's exit (~2 s), and a 2-core machine shared with other work
MARGIN_S = 5.0


@pytest.mark.slow
def test_a_tune_keeps_within_its_budget(tmp_path: Path) -> None:
    """A short budget (with a candidate and its pairs, the 60 s of
    ``test_tune.test_tune_writes_a_valid_config_and_a_report_with_interleaved_pairs``)."""
    budget = 30
    out = tmp_path / "tuned.config"
    args = ("tune", "--workload", "stencil", "--budget", f"{budget}s", "--out", str(out))
    t0 = time.monotonic()
    proc = run_cli(*args, env=isolated_env(tmp_path), cwd=tmp_path, timeout=600)
    wall = time.monotonic() - t0
    assert proc.returncode == 0, proc.stderr
    assert wall <= budget + MARGIN_S, (wall, proc.stderr)
    # and it measured within it: the baseline, the config and the reports written
    report = json.loads((tmp_path / "tuned.report.json").read_text())
    baseline = report["trials"][0]
    assert baseline["stage"] == "baseline" and len(baseline["rate_samples"]) == 3
    assert report["budget_s"] == budget and report["wall_s"] < budget
    assert out.is_file() and (tmp_path / "tuned.report.png").is_file()


def test_a_budget_too_short_for_the_baseline_is_refused_up_front(tmp_path: Path) -> None:
    out = tmp_path / "tuned.config"
    args = ("tune", "--workload", "stencil", "--budget", "5s", "--out", str(out))
    t0 = time.monotonic()
    proc = run_cli(*args, env=isolated_env(tmp_path), cwd=tmp_path, timeout=600)
    wall = time.monotonic() - t0
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.splitlines() == [
        "error: --budget: 5s is too short for a tune: the baseline alone (a cluster's start, a "
        f"warm-up, 3 timed runs) and the reports take ~{MIN_BUDGET_S:.0f} s on a 2-core "
        f"machine; give {MIN_BUDGET_S:.0f}s or more",
        "1 problem found",
    ]
    assert wall < 5  # refused before anything started
    assert not out.exists() and not (tmp_path / "tuned.report.json").exists()
