"""The zonal filters' vector passes (:mod:`openclaw_dask.workflows.climate.lanes`) against the
scalar loops they replaced, bit for bit, on every remainder of four columns."""

from __future__ import annotations

import numba
import numpy as np
import pytest
from numba.core.errors import TypingError

from openclaw_dask.workflows.climate.kernel import east_pass, west_pass

PAD = 3


@numba.njit
def _passes(T, rows, rho, top, start, start_value, inv_rho):
    m = T.shape[1]
    column_buf = np.full((m, 8), np.nan)
    out = np.full((8, m + PAD), np.nan)
    last = east_pass(T, rows, rho, column_buf)
    first = west_pass(column_buf, out, rho, top, start, start_value, inv_rho)
    return column_buf, out, last, first


def _scalar_passes(T, rows, rho, top, start, start_value, inv_rho):
    """The eight scalar chains the vector passes replaced (Python floats: IEEE doubles)."""
    m = T.shape[1]
    u = np.empty((m, 8))
    v = np.empty((8, m))
    last, first = [], []
    for g in range(8):
        a = 0.0
        for i in range(m):
            a = float(T[rows[g], i]) + rho[g] * a
            u[i, g] = a
        last.append(a)
        a = w = 0.0
        for i in range(m - 1, top - 1, -1):
            a = float(u[i, g]) + rho[g] * a
            v[g, i] = a
        for i in range(top - 1, -1, -1):
            w = start_value[g] if i == start[g] else w * inv_rho[g]
            a = (float(u[i, g]) + w) + rho[g] * a
            v[g, i] = a
        first.append(a)
    return u, v, tuple(last), tuple(first)


def _bits(a) -> np.ndarray:
    return np.asarray(a, dtype=np.float64).view(np.int64)


def _case(m: int, seed: int):
    rng = np.random.default_rng(seed)
    T = rng.normal(10.0, 20.0, (8 + 3, m))
    rows = tuple(int(x) for x in rng.integers(0, 8 + 3, 8))
    rows = (*rows[:6], rows[5], rows[5])  # a short block repeats its last row
    rho = tuple(float(x) for x in rng.uniform(0.0, 0.99, 8))
    rho = (0.0, *rho[1:])  # a row without zonal coupling: no correction (start -1)
    start = tuple(int(x) for x in rng.integers(-1, m, 8))
    start = (-1, *start[1:])
    top = max(start) + 1
    start_value = tuple(float(x) for x in rng.normal(0.0, 5.0, 8))
    inv_rho = tuple(1.0 / r if r > 0.0 else 0.0 for r in rho)
    return T, rows, rho, top, start, start_value, inv_rho


@pytest.mark.parametrize("m", [1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 180, 183])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_vector_passes_give_the_scalar_chains_bits(m: int, seed: int) -> None:
    case = _case(m, seed)
    column_buf, out, last, first = _passes(*case)
    u, v, want_last, want_first = _scalar_passes(*case)
    np.testing.assert_array_equal(_bits(column_buf), _bits(u))
    np.testing.assert_array_equal(_bits(out[:, :m]), _bits(v))
    assert _bits(last).tolist() == _bits(want_last).tolist()
    assert _bits(first).tolist() == _bits(want_first).tolist()
    assert np.isnan(out[:, m:]).all(), "the west pass wrote into a row's padding"


@pytest.mark.parametrize("top", [0, 1, 4, 5, 11, 12])
def test_every_split_of_plain_and_corrected_columns(top: int) -> None:
    """``top`` anywhere in a group of four: the two regions meet mid-group."""
    T, rows, rho, _, start, start_value, inv_rho = _case(12, 7)
    start = tuple(min(s, top - 1) for s in start)
    case = (T, rows, rho, top, start, start_value, inv_rho)
    _, out, _, first = _passes(*case)
    _, v, _, want_first = _scalar_passes(*case)
    np.testing.assert_array_equal(_bits(out[:, :12]), _bits(v))
    assert _bits(first).tolist() == _bits(want_first).tolist()


def test_a_block_of_another_size_is_a_typing_error() -> None:
    @numba.njit
    def seven(T, column_buf):
        return east_pass(T, (0, 1, 2, 3, 4, 5, 6), (0.5,) * 7, column_buf)

    with pytest.raises(TypingError):
        seven(np.zeros((8, 4)), np.zeros((4, 8)))
