"""The ``stencil`` suite's layout arithmetic (its timings run in tests/integration)."""

from __future__ import annotations

import math

import pytest

from openclaw_dask.bench.suites.stencil import (
    ceiling_note,
    halo_work,
    profile_note,
    task_profile,
)


def test_halo_work_counts_the_shrinking_cones_each_batch_computes() -> None:
    # --quick's layout: two 90-row bands, one inner side each, one batch of 64 steps whose
    # cone is 64, 63, ..., 1 rows: 64 * 65 / 2 extra row-steps per band
    assert halo_work((90, 90), 64, 64) == pytest.approx(1 + 65 / 180)
    # three bands (sides 1, 2, 1), 10 steps in batches of 4, 4 and 2: 10 + 10 + 3 extra
    # row-steps per inner side
    assert halo_work((100, 100, 100), 10, 4) == pytest.approx((3000 + 4 * 23) / 3000)
    # the 16-core machine's layout at the default K: 16 bands of 180 rows
    assert halo_work((180,) * 16, 256, 64) == pytest.approx(1 + (30 * 64 * 65 / 2) / (2880 * 64))
    assert halo_work((2880,), 256, 64) == 1.0  # one band exchanges nothing


def _record(key: object, start: float, stop: float, action: str = "compute") -> dict:
    return {"key": key, "startstops": ({"action": action, "start": start, "stop": stop},)}


def test_task_profile_reads_the_bands_step_tasks_from_a_task_stream() -> None:
    # two bands, three batches each on two threads over 10 s; halo slices and a transfer beside
    records = [
        _record(("ebm-steps-0-4-a", 0, 0), 0.0, 3.0),  # first batch: 1 s longer
        _record(("ebm-steps-4-8-a", 0, 0), 3.5, 5.5),
        _record(("ebm-steps-8-9-a", 0, 0), 6.0, 8.0),
        _record(("ebm-steps-0-4-a", 1, 0), 0.0, 2.5),
        _record(("ebm-steps-4-8-a", 1, 0), 3.5, 5.5),
        _record(("ebm-steps-8-9-a", 1, 0), 6.5, 8.5),
        _record(("ebm-halo-0-4-a", 0, 1), 3.0, 3.25),
        _record("finalize-x", 9.0, 9.5),
        _record(("ebm-halo-0-4-a", 1, 0), 3.0, 3.5, action="transfer"),
    ]
    p = task_profile(records, threads=2, began=0.0, ended=10.0)
    assert p["wall_s"] == 10.0
    assert p["busy_fraction"] == pytest.approx((7.0 + 6.5 + 0.25 + 0.5) / 20)
    assert p["step_task_ms"] == pytest.approx(2000)
    assert p["first_batch_extra_ms"] == pytest.approx(750)  # medians of +1 s and +0.5 s
    assert p["wait_between_batches_ms"] == pytest.approx((500 + 500 + 1000 + 1000) / 4)
    assert p["transfer_s"] == pytest.approx(0.5)
    note = profile_note(4, p)
    assert "busy 71% of 10.00 s; step tasks 2000 ms (a band's first +750 ms" in note
    assert "750 ms between a band's step tasks" in note


def test_a_run_of_one_batch_a_band_says_so_instead_of_nan() -> None:
    p = task_profile([_record(("ebm-steps-0-4-a", 0, 0), 0.0, 1.0)], 1, 0.0, 2.0)
    assert math.isnan(p["step_task_ms"]) and math.isnan(p["wait_between_batches_ms"])
    assert profile_note(4, p) == (
        "one more K=4 run in Dask's task stream: threads busy 50% of 2.00 s (one batch a band)"
    )


def test_task_profile_finds_each_band_in_the_running_sums_last_batch() -> None:
    """With ``accumulate`` the last batch's keys are ``(name, 0, band, 0)`` ([T, sum] stacked):
    every band's last step task had been counted as band 0's, a step task that overlapped
    band 0's own and made a wait between its batches negative."""
    records = [
        _record(("ebm-steps-sum-0-4-a", 0, 0), 0.0, 2.0),
        _record(("ebm-steps-sum-4-8-b", 0, 0, 0), 3.0, 5.0),
        _record(("ebm-steps-sum-0-4-a", 1, 0), 0.0, 2.0),
        _record(("ebm-steps-sum-4-8-b", 0, 1, 0), 3.0, 5.0),
    ]
    p = task_profile(records, threads=2, began=0.0, ended=5.0)
    assert p["wait_between_batches_ms"] == pytest.approx(1000)
    assert p["step_task_ms"] == pytest.approx(2000)
    assert p["first_batch_extra_ms"] == pytest.approx(0)


def test_a_shorter_last_batch_is_not_counted_as_a_step_task() -> None:
    """nsteps not a multiple of K (K=90 cut to the quick grid's bands, 256 steps: 90, 90, 76):
    the median of the later batches had been the mean of a full one and the short one."""
    records = [
        _record(("ebm-steps-0-90-a", 0, 0), 0.0, 1.5),
        _record(("ebm-steps-90-180-a", 0, 0), 2.0, 3.0),
        _record(("ebm-steps-180-256-a", 0, 0), 3.5, 3.7),
    ]
    p = task_profile(records, threads=1, began=0.0, ended=4.0)
    assert p["step_task_ms"] == pytest.approx(1000)
    assert p["first_batch_extra_ms"] == pytest.approx(500)
    assert p["wait_between_batches_ms"] == pytest.approx(500)
    # a K-deep batch and a shorter one: no full batch after the first, but a wait to show
    p = task_profile(records[:1] + records[2:], threads=1, began=0.0, ended=4.0)
    assert math.isnan(p["step_task_ms"]) and p["wait_between_batches_ms"] == pytest.approx(2000)
    assert profile_note(90, p).endswith("(one full batch a band)")


def test_a_machine_whose_copies_run_under_the_goal_is_said_to_be_the_ceiling() -> None:
    # the 16-core device machine on 2026-12-04: 16 references at once ran 12.1x one
    [note] = ceiling_note(12.12, 16)
    assert note.startswith("one reference per thread at once runs at 12.12x one (0.76 per ")
    assert "no cluster layout can then meet here" in note
    assert ceiling_note(1.9, 2) == [] and ceiling_note(0.9, 1) == []  # 0.95 a thread; 1 thread
