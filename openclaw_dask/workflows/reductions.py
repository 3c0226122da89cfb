"""Sums whose bits do not depend on how a dask array is chunked.

Dask's own ``sum`` over several axes adds each chunk's partial sum in a tree shaped by the
chunks, so the same data chunked into 2 or 4 latitude bands gives sums that differ in the last
bits. :func:`sum_rows_first` sums each row whole and then the column of row sums in one piece:
numpy adds along a contiguous row the same way whatever block of rows it sits in, so every
banding (and every worker layout that picks one) gives the same bits, at the cost of one small
concatenation of the row sums. This is how the built-in workflows keep
``parallel.deterministic_mode``'s promise without fixing their chunk counts; a user op can do
the same.
"""

from __future__ import annotations

from typing import Any

__all__ = ["sum_rows_first"]


def _is_dask(array: Any) -> bool:
    return type(array).__module__.startswith("dask")


def _row_sums(block: Any, axis: Any = None, keepdims: bool = True) -> Any:
    # a block's row sums, as a column: shape (..., rows, 1)
    return block.sum(axis=-1, keepdims=True)


def _keep_order(parts: Any, axis: Any = None, keepdims: bool = True) -> Any:
    # Dask concatenated the row sums of neighbouring blocks in row order: keep them as they are
    return parts


def _column_sum(parts: Any, axis: Any = None, keepdims: bool = False) -> Any:
    total = parts[..., 0].sum(axis=-1)  # every row's sum, in row order, in one piece
    return total[..., None, None] if keepdims else total


def sum_rows_first(x: Any) -> Any:
    """Sum over the trailing ``(row, column)`` axes, the same bits for any chunking of ``x``.

    For a dask array this is one :func:`dask.array.reduction`, as many tasks as Dask's own
    ``sum``: each block's row sums, then one task that sums the whole column of them (through
    a tree that only concatenates, in row order, when there are many blocks).

    Parameters
    ----------
    x : array, shape (..., rows, cols)
        numpy, cupy or dask. A dask array's columns are merged into whole rows if they are
        chunked; its other axes may be chunked in any way.

    Returns
    -------
    array, shape (...)
        Lazy for a dask ``x``.

    Examples
    --------
    >>> import numpy as np, dask.array as da
    >>> x = np.random.default_rng(0).standard_normal((6, 5))
    >>> two, three = (sum_rows_first(da.from_array(x, chunks=(c, 5))) for c in (3, 2))
    >>> bool(two.compute() == three.compute() == sum_rows_first(x))
    True
    """
    if not _is_dask(x):
        return x.sum(axis=-1).sum(axis=-1)
    import dask.array as da

    if x.numblocks[-1] > 1:
        x = x.rechunk({x.ndim - 1: -1})
    return da.reduction(
        x,
        _row_sums,
        _column_sum,
        axis=(x.ndim - 2, x.ndim - 1),
        combine=_keep_order,
        dtype=x.dtype,
        name="sum-rows-first",
    )
