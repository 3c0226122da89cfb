"""sum_rows_first: the same bits for any chunking, where Dask's own sum changes with it."""

from __future__ import annotations

import dask.array as da
import numpy as np
import pytest

from openclaw_dask.workflows.climate import LatLonGrid, global_mean
from openclaw_dask.workflows.reductions import sum_rows_first

CHUNKINGS = [(5, 90, 180), (1, 30, 180), (5, (44, 1, 45), 180), (2, 17, 60), (5, 7, 33)]


@pytest.mark.parametrize("chunks", CHUNKINGS, ids=str)
def test_every_chunking_gives_the_numpy_bits(chunks) -> None:
    x = np.random.default_rng(3).standard_normal((5, 90, 180)) * 40.0 + 11.0
    lazy = sum_rows_first(da.from_array(x, chunks=chunks))
    assert isinstance(lazy, da.Array)
    assert np.array_equal(lazy.compute(scheduler="threads"), sum_rows_first(x))
    np.testing.assert_allclose(sum_rows_first(x), x.sum(axis=(-2, -1)), rtol=1e-12)


def test_dasks_own_sum_changes_with_the_bands() -> None:
    """Why the helper exists: the same data in 2 or 3 latitude bands, summed by Dask."""
    x = np.random.default_rng(3).standard_normal((5, 90, 180)) * 40.0 + 11.0
    two, three = (da.from_array(x, chunks=(5, c, 180)).sum(axis=(-2, -1)) for c in (45, 30))
    assert not np.array_equal(two.compute(), three.compute())


def test_global_mean_has_the_same_bits_in_any_bands() -> None:
    grid = LatLonGrid(2.0)
    field = np.random.default_rng(5).standard_normal((3, *grid.shape)) + 14.0
    expected = global_mean(field, grid)
    for rows in (90, 45, (10, 50, 30), 1):
        lazy = global_mean(da.from_array(field, chunks=(1, rows, -1)), grid)
        assert np.array_equal(lazy.compute(), expected), rows
