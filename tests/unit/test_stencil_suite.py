"""The ``stencil`` suite's layout arithmetic (its timings run in tests/integration)."""

from __future__ import annotations

import pytest

from openclaw_dask.bench.suites.stencil import halo_work


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
