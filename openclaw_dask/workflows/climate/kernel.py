"""The host's compiled time step: a band's whole step in a few passes over each row (numba).

The array-namespace step in :mod:`.physics` spends ~20 whole-array passes and an FFT pair per
step; on one core that is ~9 ns per cell-update, while a copy of the state takes ~0.35 ns. This
module computes the same scheme in compiled loops that keep the temporaries in L1/L2.

Zonal diffusion without an FFT
------------------------------
The preconditioned zonal increment of :mod:`.physics` is, per row (``r = dt k_j / C_min,j``)::

    ΔE_zonal = −dt k L (I + r L)^{-1} T = −C_min (T − S T),    S = (I + r L)^{-1},

the same operator (mode ``k`` gets ``−C_min r μ_k / (1 + r μ_k)``). ``I + r L`` is the periodic
tridiagonal ``(−r, 1 + 2r, −r)``, which factors into two first-order filters,
``(r/ρ) (I − ρE)(I − ρE⁻¹)`` with ``ρ = 2r / (1 + 2r + √(1 + 4r)) < 1`` (``E`` shifts by one
column), so ``S T = (ρ/r) v`` where ``u_i = T_i + ρ u_{i−1}`` runs east and
``v_i = u_i + ρ v_{i+1}`` runs west, both periodic. Each filter runs once from zero; the exact
periodic solution differs from it by ``c ρ^{i+1}`` (east) or ``v₀ ρ^{m−i}`` (west), with
``c = u_{m−1}`` and ``v₀`` found from the last value of the run (``/(1 − ρ^m)``). Those
corrections are added only while ``ρ^k ≥ 2⁻⁶⁰`` (``nterms``); beyond that they are far below
one ulp of the filtered values. The recursions are exact to round-off at every ``r``: the
condition number grows like ``√r``, ~10⁻¹³ relative at the poles of a 0.125° grid.

A filter is a chain of dependent multiply-adds, which one row alone would run at the
latency of the FPU (~1.3 ns per element). The passes therefore advance eight rows at once.

Eight rows as two vectors
-------------------------
Written as eight scalar chains, numba's code stored eight scalars per column and pass, and a
Zen 2 core stores one a cycle: the filters were ~40 % of a step (1.91 against 1.12 ns per
cell-update without them, 0.0625°, 2026-12-05). :func:`east_pass` and :func:`west_pass` run
the eight chains as two ``<4 x double>`` vectors instead: the east pass loads four columns of
each row, transposes 4 × 4 blocks in registers and stores each column's eight values together
into a column-major buffer (m × 8); the west pass reads that buffer a column at a time and
transposes back, so each row of its output takes four columns per store. numba has no vector
types, so the two are :func:`numba.extending.intrinsic` code, LLVM IR built with llvmlite,
inlined into :func:`advance_rows` and compiled and cached with it. They live in this file
because numba's cache keys on the calling function's file alone (numba#1833): a pass kept in
another module could change and leave a stale compiled step in ``__pycache__``. LLVM lowers
``<4 x double>`` on any target (SSE pairs where there is no AVX). Each lane takes the scalar
chain's operations in its order on its operands (``fadd``/``fmul`` without fast-math flags:
nothing contracted or reassociated) and the transposes only move values, so the bits are the
scalar loops' (``tests/unit/test_climate_kernel_passes.py`` keeps those loops and compares).
The 0.0625° step went from 1.86-1.92 to 1.63-1.70 ns per cell-update on the Zen 2 VM, 2° from
3.19 to 2.62; sixteen rows (four vectors) measured no faster.

The filters' round-off scales with the row's energy ``C T`` rather than with the increment, as
the FFT's did, and its sum along a row is not zero (the 2° budget test saw ~4 × 10⁻¹² of the
radiative input unbalanced per step), so each row's zonal increment has the mean of its own
computed values removed (:func:`_zonal_row`, a second pass over the row): diffusion then
conserves energy to the round-off of that sum, as with the FFT. The sum is the one loop
compiled with reassociation (:func:`_row_sum`): vectorised, it costs a quarter of a strict
left-to-right sum, which waits on each add (the whole pass went from 0.45 to 0.24 ns per
element). Measured again on 2026-12-04 (the reference's budget over 6-20 steps from step 2000,
a rough field and one 25 K warmer; the mean's pass fused away for the comparison): without the
removal the residual grows 3-9x, to 4 × 10⁻¹¹ of the radiative input at 0.5° and 7 × 10⁻¹³ of
the gross flux, the budget test's limit being 10⁻¹²; with it, at most 6 × 10⁻¹² and
1.5 × 10⁻¹³. The pass costs ~10 % of a step on one core at 0.0625° (718 against 795 Mcell/s
without it), kept for the closure.

Radiation, the meridional fluxes and the update are one loop per row, in place: each row keeps
the old gradient across its north face for the next row (``T[j+1] − T[j]``, the same operands
that row would subtract), so nothing reads a row after it has been overwritten. ``1/C`` comes
from a one-byte capacity class per cell (:func:`capacity_classes`): at grids that outgrow the
cache the step is bound by memory traffic as much as by arithmetic, and the class saves 7 of
the 24 bytes a cell-update moves.

Several steps per pass (:func:`advance_rows`)
---------------------------------------------
A step needs a row, its two neighbours and nothing else, so step ``s + 1`` of a row can run as
soon as step ``s`` has passed the row north of it. The kernel runs ``depth`` steps as a
wavefront: each step's block of eight rows one row south of the block of the step before, and
each step with its own gradient row. A band's rows then travel between memory and the cores
once per ``depth`` steps instead of once per step, while ~``8 + 2 depth`` rows stay in the
caches (temporal blocking). Each row's steps take the same operations on the same operands in
the same order, so the depth changes no bit.

Bit-identity
------------
Every row's result depends only on that row, its two neighbours and its own coefficients: the
eight chains of a block never mix, a row's correction length is its own, its sum runs in an
order fixed by the row's length and the host's vector width, and no operation depends on the
band, the block or the thread. So any band decomposition gives the same bits, as the Dask
driver needs. Floating-point contraction is off (numba's default without ``fastmath``). Hosts
with different SIMD widths may sum a row in a different order (as numpy's own ``sin`` and
``arccos`` already round differently there), so bit-identity holds among hosts of one CPU kind.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = [
    "ZONAL_CUTOFF",
    "advance_rows",
    "capacity_classes",
    "east_pass",
    "filter_coefficients",
    "west_pass",
]

#: Corrections of the periodic filters stop once ``ρ^k`` falls below this (see the module doc).
ZONAL_CUTOFF = 2.0**-60

#: Rows per block: eight independent chains keep the FPU busy (its latency is ~4 adds deep).
_BLOCK = 8

#: Doubles of padding after each row of the filters' buffer. Rows exactly ``nlon`` apart put
#: the eight chains' streams at a few offsets modulo 4 KiB (from 2° to 0.0625° ``nlon`` is a
#: multiple of 180, a row 1440·k bytes), where a core can mistake a load for one depending on
#: an earlier store (4K aliasing, the likely cause). Measured, the padding made the whole step
#: 8-12 % faster at 0.0625°-0.5° with the same bits; 8 doubles gained a little less, 64 no more.
_ROW_PAD = 16


def filter_coefficients(r: np.ndarray, nlon: int) -> dict[str, np.ndarray]:
    """The recursive-filter coefficients of the rows' zonal solve, from ``r = dt k_j / C_min,j``.

    Parameters
    ----------
    r : ndarray, shape (nrows,)
        The rows' implicit zonal weights (``r >= 0``).
    nlon : int
        Points per row.

    Returns
    -------
    dict of ndarray, each shape (nrows,)
        ``rho`` (the filter pole), ``inv_rho`` (0 where ``rho = 0``), ``scale`` (``ρ/r``, 1 at
        ``r = 0``), ``wrap`` (``1/(1 − ρ^nlon)``), ``nterms`` (corrections kept, int64) and
        ``rho_nterms`` (``ρ^nterms``).
    """
    r = np.asarray(r, dtype=np.float64)
    root = 1.0 + 2.0 * r + np.sqrt(1.0 + 4.0 * r)
    rho = 2.0 * r / root  # the smaller root of ρ² − (2 + 1/r) ρ + 1, without cancellation
    scale = 2.0 / root
    nterms = np.zeros(r.shape, dtype=np.int64)
    positive = rho > 0.0
    with np.errstate(divide="ignore"):
        needed = np.ceil(math.log(ZONAL_CUTOFF) / np.log(rho[positive]))
    nterms[positive] = np.minimum(needed, nlon).astype(np.int64)
    inv_rho = np.zeros_like(rho)
    inv_rho[positive] = 1.0 / rho[positive]
    return {
        "rho": rho,
        "inv_rho": inv_rho,
        "scale": scale,
        "wrap": 1.0 / (1.0 - rho**nlon),
        "nterms": nterms,
        "rho_nterms": rho**nterms,
    }


def capacity_classes(capacity: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The heat-capacity field as a class per cell and ``1/C`` per class.

    A model's capacity takes a few values (ocean, land), so the step reads a one-byte class
    per cell instead of an eight-byte ``1/C``: 7 of the 24 bytes a cell-update moves, at
    grids that do not fit in cache. ``1/C`` of a class is the same division as per cell, so the
    step's bits do not change.

    Parameters
    ----------
    capacity : ndarray, shape (nrows, nlon)

    Returns
    -------
    classes : ndarray of uint8 (uint16, uint32 for more than 256, 65536 values)
    inv_values : ndarray of float64, ``1/C`` of each class
    """
    capacity = np.asarray(capacity, dtype=np.float64)
    low, high = capacity.min(), capacity.max()
    if low == high:
        return np.zeros(capacity.shape, np.uint8), 1.0 / np.array([low])
    upper = capacity == high
    if np.all(upper | (capacity == low)):  # land and ocean: no sort
        return upper.astype(np.uint8), 1.0 / np.array([low, high])
    values, inverse = np.unique(capacity, return_inverse=True)
    dtype = np.uint8 if len(values) <= 2**8 else np.uint16 if len(values) <= 2**16 else np.uint32
    return inverse.reshape(capacity.shape).astype(dtype), 1.0 / values


# --- the filters' passes as LLVM vector code (see "Eight rows as two vectors" above) -------

_F64 = ir.DoubleType()
_I32 = ir.IntType(32)
_I64 = ir.IntType(64)
_VEC = ir.VectorType(_F64, 4)
_IVEC = ir.VectorType(_I64, 4)
_CHAINS = _BLOCK // 4


def _i64(value: int) -> ir.Constant:
    return ir.Constant(_I64, value)


def _pack(builder: ir.IRBuilder, values, vector_type=_VEC) -> ir.Value:
    """Four scalars as one vector."""
    v = ir.Constant(vector_type, ir.Undefined)
    for lane, x in enumerate(values):
        v = builder.insert_element(v, x, ir.Constant(_I32, lane))
    return v


def _unpack(builder: ir.IRBuilder, v: ir.Value) -> list[ir.Value]:
    return [builder.extract_element(v, ir.Constant(_I32, lane)) for lane in range(4)]


def _shuffle(builder: ir.IRBuilder, a: ir.Value, b: ir.Value, mask: list[int]) -> ir.Value:
    return builder.shuffle_vector(a, b, ir.Constant(ir.VectorType(_I32, 4), mask))


def _transpose(builder: ir.IRBuilder, x0, x1, x2, x3) -> tuple[ir.Value, ...]:
    """The columns of the 4 × 4 block whose rows are ``x0 .. x3`` (its own inverse)."""
    t0 = _shuffle(builder, x0, x1, [0, 4, 2, 6])
    t1 = _shuffle(builder, x0, x1, [1, 5, 3, 7])
    t2 = _shuffle(builder, x2, x3, [0, 4, 2, 6])
    t3 = _shuffle(builder, x2, x3, [1, 5, 3, 7])
    return (
        _shuffle(builder, t0, t2, [0, 1, 4, 5]),
        _shuffle(builder, t1, t3, [0, 1, 4, 5]),
        _shuffle(builder, t0, t2, [2, 3, 6, 7]),
        _shuffle(builder, t1, t3, [2, 3, 6, 7]),
    )


def _load(builder: ir.IRBuilder, ptr: ir.Value) -> ir.Value:
    return builder.load(builder.bitcast(ptr, _VEC.as_pointer()), align=8)


def _store(builder: ir.IRBuilder, v: ir.Value, ptr: ir.Value) -> None:
    builder.store(v, builder.bitcast(ptr, _VEC.as_pointer()), align=8)


def _array(context, builder, array_type, value):
    """The data pointer, the number of columns and the row stride (bytes) of a 2D array."""
    a = context.make_array(array_type)(context, builder, value)
    cols = cgutils.unpack_tuple(builder, a.shape, 2)[1]
    return a.data, cols, cgutils.unpack_tuple(builder, a.strides, 2)[0]


def _row_pointers(builder, data, stride, rows) -> list[ir.Value]:
    base = builder.ptrtoint(data, _I64)
    return [
        builder.inttoptr(builder.add(base, builder.mul(r, stride)), _F64.as_pointer()) for r in rows
    ]


def _vectors(builder, tuple_value, vector_type=_VEC) -> list[ir.Value]:
    values = cgutils.unpack_tuple(builder, tuple_value, _BLOCK)
    return [_pack(builder, values[4 * c : 4 * c + 4], vector_type) for c in range(_CHAINS)]


def _is_tuple_of(value, dtype) -> bool:
    return isinstance(value, types.UniTuple) and value.count == _BLOCK and value.dtype == dtype


def _is_matrix(value) -> bool:
    return isinstance(value, types.Array) and value.ndim == 2 and value.dtype == types.float64


def _zero_accumulators(builder) -> list[ir.Value]:
    return [
        cgutils.alloca_once_value(builder, ir.Constant(_VEC, [0.0] * 4)) for _ in range(_CHAINS)
    ]


def _lanes_tuple(context, builder, return_type, accumulators):
    lanes = []
    for acc in accumulators:
        lanes += _unpack(builder, builder.load(acc))
    return context.make_tuple(builder, return_type, lanes)


@intrinsic
def east_pass(typingctx, T, rows, rho, out):
    """``u_i = T_i + ρ u_{i−1}`` along eight rows of ``T``, from ``u_{−1} = 0``.

    Parameters (in the compiled caller)
    ----------
    T : float64[:, ::1], shape (n, m)
    rows : UniTuple(int64, 8)
        The rows of ``T`` to filter (a row may repeat).
    rho : UniTuple(float64, 8)
        Each row's filter pole.
    out : float64[:, ::1], shape (m, 8)
        Gets ``u``, column-major: ``out[i, g]`` is row ``g``'s ``u_i``.

    Returns
    -------
    UniTuple(float64, 8)
        Each row's last value ``u_{m−1}``.
    """
    if not (
        _is_matrix(T)
        and T.layout == "C"
        and _is_tuple_of(rows, types.int64)
        and _is_tuple_of(rho, types.float64)
        and _is_matrix(out)
        and out.layout == "C"
    ):
        return None  # numba reports the call's types as not supported
    signature = types.UniTuple(types.float64, _BLOCK)(T, rows, rho, out)

    def codegen(context, builder, sig, args):
        t_value, rows_value, rho_value, out_value = args
        data, m, stride = _array(context, builder, sig.args[0], t_value)
        src = _row_pointers(builder, data, stride, cgutils.unpack_tuple(builder, rows_value))
        dst = context.make_array(sig.args[3])(context, builder, out_value).data
        rho_v = _vectors(builder, rho_value)
        acc = _zero_accumulators(builder)

        def step(c, column, i):
            # a = T_i + ρ a, then the column's four values of this chain to out[i, 4c : 4c + 4]
            a = builder.fadd(column, builder.fmul(rho_v[c], builder.load(acc[c])))
            builder.store(a, acc[c])
            _store(
                builder,
                a,
                builder.gep(dst, [builder.add(builder.mul(i, _i64(_BLOCK)), _i64(4 * c))]),
            )

        groups = builder.udiv(m, _i64(4))
        with cgutils.for_range(builder, groups) as loop:  # four columns at a time
            i = builder.mul(loop.index, _i64(4))
            for c in range(_CHAINS):
                block = [_load(builder, builder.gep(src[4 * c + g], [i])) for g in range(4)]
                for q, column in enumerate(_transpose(builder, *block)):
                    step(c, column, builder.add(i, _i64(q)))
        tail = builder.mul(groups, _i64(4))
        with cgutils.for_range_slice(builder, tail, m, _i64(1), inc=True) as (i, _):
            for c in range(_CHAINS):
                loads = [builder.load(builder.gep(src[4 * c + g], [i])) for g in range(4)]
                step(c, _pack(builder, loads), i)
        return _lanes_tuple(context, builder, sig.return_type, acc)

    return signature, codegen


@intrinsic
def west_pass(typingctx, u, out, rho, top, start, start_value, inv_rho):
    """``v_i = u_i + ρ v_{i+1}`` west along eight rows from ``v_m = 0``; below column ``top``,
    ``v_i = (u_i + w_i) + ρ v_{i+1}`` with the east correction ``w``.

    ``w`` is row ``g``'s ``start_value`` at its column ``start`` and is multiplied by its
    ``inv_rho`` at each column west of it (zero east of it): the scalar loop's
    ``w = s if i == e else w * q``.

    Parameters (in the compiled caller)
    ----------
    u : float64[:, ::1], shape (m, 8)
        The east pass's output (column-major).
    out : float64[:, ::1], shape (8, m') with ``m' >= m``
        Row ``g``'s first ``m`` columns get ``v`` of row ``g`` (a wider buffer pads its rows).
    rho : UniTuple(float64, 8)
    top : int64
        Columns ``top ..`` take no correction; ``0 <= top <= m``.
    start : UniTuple(int64, 8)
        Each row's first corrected column (below ``top``; ``−1``: none).
    start_value, inv_rho : UniTuple(float64, 8)

    Returns
    -------
    UniTuple(float64, 8)
        Each row's ``v_0``.
    """
    if not (
        _is_matrix(u)
        and u.layout == "C"
        and _is_matrix(out)
        and out.layout == "C"
        and _is_tuple_of(rho, types.float64)
        and top == types.int64
        and _is_tuple_of(start, types.int64)
        and _is_tuple_of(start_value, types.float64)
        and _is_tuple_of(inv_rho, types.float64)
    ):
        return None
    signature = types.UniTuple(types.float64, _BLOCK)(u, out, rho, top, start, start_value, inv_rho)

    def codegen(context, builder, sig, args):
        u_value, out_value, rho_value, top_value, start_v, value_v, inv_v = args
        u_array = context.make_array(sig.args[0])(context, builder, u_value)
        src, m = u_array.data, cgutils.unpack_tuple(builder, u_array.shape, 2)[0]
        data, _, stride = _array(context, builder, sig.args[1], out_value)
        dst = _row_pointers(builder, data, stride, [_i64(g) for g in range(_BLOCK)])
        rho_v = _vectors(builder, rho_value)
        start_vec = _vectors(builder, start_v, _IVEC)
        value_vec = _vectors(builder, value_v)
        inv_vec = _vectors(builder, inv_v)
        acc = _zero_accumulators(builder)
        corr = _zero_accumulators(builder)

        def step(c, i, corrected):
            offset = builder.add(builder.mul(i, _i64(_BLOCK)), _i64(4 * c))
            x = _load(builder, builder.gep(src, [offset]))
            if corrected:
                hit = builder.icmp_signed("==", start_vec[c], _pack(builder, [i] * 4, _IVEC))
                w = builder.fmul(builder.load(corr[c]), inv_vec[c])
                w = builder.select(hit, value_vec[c], w)
                builder.store(w, corr[c])
                x = builder.fadd(x, w)
            a = builder.fadd(x, builder.fmul(rho_v[c], builder.load(acc[c])))
            builder.store(a, acc[c])
            return a

        def columns(lo, hi, corrected):
            # columns hi − 1 down to lo: four at a time (transposed, one store per row),
            # then the rest one at a time
            groups = builder.sdiv(builder.sub(hi, lo), _i64(4))
            with cgutils.for_range(builder, groups) as loop:
                i0 = builder.sub(hi, builder.mul(builder.add(loop.index, _i64(1)), _i64(4)))
                for c in range(_CHAINS):
                    block = [step(c, builder.add(i0, _i64(q)), corrected) for q in (3, 2, 1, 0)]
                    for g, row in enumerate(_transpose(builder, *block[::-1])):
                        _store(builder, row, builder.gep(dst[4 * c + g], [i0]))
            rest = builder.sub(builder.sub(hi, lo), builder.mul(groups, _i64(4)))
            with cgutils.for_range(builder, rest) as loop:
                i = builder.sub(builder.add(lo, rest), builder.add(loop.index, _i64(1)))
                for c in range(_CHAINS):
                    for g, x in enumerate(_unpack(builder, step(c, i, corrected))):
                        builder.store(x, builder.gep(dst[4 * c + g], [i]))

        columns(top_value, m, corrected=False)
        columns(_i64(0), top_value, corrected=True)
        return _lanes_tuple(context, builder, sig.return_type, acc)

    return signature, codegen


# Inlined into advance_rows (numba's IR inlining). As a function of its own, its code ran
# from wherever the loader put it: a copy inside advance_rows's cached object, or its own
# library in a process that had compiled it first. The cached case ran the step ~7 % slower
# (1.90-1.92 against 1.78-1.79 ns per cell-update at 0.0625° on the Zen 2 VM, 2026-12-05),
# same bits. Inlined: 1.77-1.80 either way (docs/design-notes.md, session 37).
@numba.njit(inline="always", boundscheck=False, error_model="numpy")
def _filter_block(T, j0, stop, padded, column_buf, v0, rho, inv_rho, wrap, last_term, rho_nterms):
    """The two filters for rows ``j0 .. min(j0 + 8, stop) - 1`` of ``T`` (a short block
    repeats its last row).

    ``padded[g, :m]`` gets row g's west filter run from zero (``v`` before its periodic
    correction) and ``v0[g]`` the scale of that correction. ``column_buf`` (m × 8) holds the
    east pass.
    """
    # the rows, a tuple rather than an array: an allocation per block cost ~4 % of a 2° step
    last = stop - 1
    k = (
        min(j0, last),
        min(j0 + 1, last),
        min(j0 + 2, last),
        min(j0 + 3, last),
        min(j0 + 4, last),
        min(j0 + 5, last),
        min(j0 + 6, last),
        min(j0 + 7, last),
    )
    r, w = _of_rows(rho, k), _of_rows(wrap, k)
    # east filter from zero, u_i = T_i + ρ u_{i-1}
    u = east_pass(T, k, r, column_buf)
    # the periodic east solution adds c ρ^{i+1}, c = u_{m-1} / (1 − ρ^m): row g's correction
    # starts at column nterms - 1 (with c ρ^nterms) and is divided by ρ at each step west
    s = _times(_times(u, w), _of_rows(rho_nterms, k))
    e = _of_rows(last_term, k)
    top = max(e[0], e[1], e[2], e[3], e[4], e[5], e[6], e[7]) + 1
    # west filter from zero, v_i = u_i + ρ v_{i+1}, with the east correction below top
    v = west_pass(column_buf, padded, r, top, e, s, _of_rows(inv_rho, k))
    # the periodic west solution adds v0 ρ^{m-i}, v0 = v_0 / (1 − ρ^m)
    for g in range(_BLOCK):
        v0[g] = v[g] * w[g]


@numba.njit(inline="always", boundscheck=False)
def _of_rows(a, k):
    """``a`` at the block's eight rows ``k``, as the tuple the vector passes take."""
    return (a[k[0]], a[k[1]], a[k[2]], a[k[3]], a[k[4]], a[k[5]], a[k[6]], a[k[7]])


@numba.njit(inline="always")
def _times(a, b):
    """The elementwise product of two 8-tuples."""
    return (
        a[0] * b[0],
        a[1] * b[1],
        a[2] * b[2],
        a[3] * b[3],
        a[4] * b[4],
        a[5] * b[5],
        a[6] * b[6],
        a[7] * b[7],
    )


@numba.njit(cache=True, nogil=True, boundscheck=False, error_model="numpy")
def advance_rows(
    T,
    shrink_south,
    shrink_north,
    depth,
    capacity_class,
    class_inv_capacity,
    c_north,
    c_south,
    neg_dt_b,
    mode,
    threshold,
    absorbed_free,
    absorbed_ice,
    slope,
    offset,
    c_min,
    rho,
    inv_rho,
    scale,
    wrap,
    nterms,
    rho_nterms,
    total,
    total_row0,
):
    """Advance ``T`` (rows × lon, C-contiguous float64) by several steps, in place, ``depth``
    steps per pass over the rows. The faces beyond the rows a step advances carry nothing.

    Parameters
    ----------
    T : ndarray, shape (n, m)
        Temperatures (°C), overwritten with the last step's.
    shrink_south, shrink_north : bool
        Whether step ``s`` (from 0) leaves out ``s`` more rows at that end (a halo edge).
    depth : int
        Steps per pass (a wavefront: each step one row behind the one before); any depth
        gives the same bits. ``8 + depth`` rows of ``T`` and ``depth`` gradient rows are in
        flight, which should fit in a cache.
    capacity_class : ndarray of unsigned int, shape (n, m)
        Each cell's heat-capacity class (:func:`capacity_classes`).
    class_inv_capacity : ndarray, shape (k,)
        ``1/C`` of each class.
    c_north, c_south : ndarray, shape (n - 1,)
        ``dt D`` times the meridional face factors north of rows ``0..n-2`` and south of rows
        ``1..n-1``.
    neg_dt_b : float
        ``−dt B``.
    mode : int
        Albedo: 0 ice-free everywhere, 1 sharp switch below ``threshold``, 2 linear ramp.
    threshold : float
        Ice threshold (°C), for ``mode`` 1.
    absorbed_free, absorbed_ice, slope, offset : ndarray, shape (nsteps, n)
        Per step and row: ``dt (Q s (1 − α_free) − A)``, the same with ice, and the ramp
        ``clip(T slope + offset, absorbed_ice, absorbed_free)``.
    c_min : ndarray, shape (n,)
        The row's smallest heat capacity.
    rho, inv_rho, scale, wrap, nterms, rho_nterms : ndarray, shape (n,)
        From :func:`filter_coefficients`.
    total : ndarray, shape (k, m)
        A running sum of rows ``total_row0 : total_row0 + k``: each step's new values are
        added to it (``k = 0``: no sum).
    total_row0 : int
    """
    nsteps = absorbed_free.shape[0]
    n, m = T.shape
    padded = np.empty((_BLOCK, m + _ROW_PAD))  # see _ROW_PAD
    buf = padded[:, :m]
    v0 = np.empty(_BLOCK)
    column_buf = np.empty((m, _BLOCK))  # the east pass, column-major
    last_term = nterms - 1  # each row's highest column with an east correction
    tail = np.empty(m)  # the west correction of the current row, from column m - nterms
    zonal = np.empty(m)
    # per step in flight: old T[j] − T[j-1], the gradient across row j's south face
    grads = np.empty((max(1, min(depth, nsteps)), m))
    for s0 in range(0, nsteps, grads.shape[0]):
        levels = min(grads.shape[0], nsteps - s0)
        grads[:levels] = 0.0
        # at tick b, step s0 + l advances rows 8b - l .. 8b - l + 7: the step before has then
        # finished the row north of them, and nothing later reads their old values
        for b in range((n + levels) // _BLOCK + 1):
            for level in range(levels):
                s = s0 + level
                lo_s = s if shrink_south else 0  # the rows step s advances
                hi_s = n - s if shrink_north else n
                a = _BLOCK * b - level
                first, stop = max(a, lo_s), min(a + _BLOCK, hi_s)
                if first >= stop:
                    continue
                _filter_block(
                    T,
                    first,
                    stop,
                    padded,
                    column_buf,
                    v0,
                    rho,
                    inv_rho,
                    wrap,
                    last_term,
                    rho_nterms,
                )
                for j in range(first, stop):
                    _update_row(
                        T,
                        j,
                        j - first,
                        lo_s,
                        hi_s,
                        buf,
                        v0,
                        tail,
                        zonal,
                        grads[level],
                        capacity_class[j],
                        class_inv_capacity,
                        c_north,
                        c_south,
                        (
                            neg_dt_b,
                            mode,
                            threshold,
                            absorbed_free[s, j],
                            absorbed_ice[s, j],
                            slope[s, j],
                            offset[s, j],
                        ),
                        c_min[j],
                        scale[j],
                        nterms[j],
                        rho_nterms[j],
                        inv_rho[j],
                    )
                    k = j - total_row0
                    if 0 <= k < total.shape[0]:
                        row, t = total[k], T[j]
                        for i in range(m):
                            row[i] += t[i]


@numba.njit(inline="always", boundscheck=False, error_model="numpy")
def _update_row(
    T,
    j,
    g,
    lo,
    hi,
    buf,
    v0,
    tail,
    zonal,
    grad,
    cls,
    class_inv_capacity,
    c_north,
    c_south,
    rad,
    c_min_j,
    scale_j,
    nterms_j,
    rho_nterms_j,
    inv_rho_j,
):
    """Row ``j`` of one step (the ``g``-th row of its filter block), in place; rows ``lo:hi``
    take part in the step."""
    m = T.shape[1]
    t = T[j]
    # the west correction v0 ρ^{m-i} in the last nterms columns
    first = m - nterms_j
    w, q = v0[g] * rho_nterms_j, inv_rho_j
    for i in range(first, m):
        tail[i] = w
        w *= q
    mean = _zonal_row(t, buf[g], tail, first, -c_min_j, scale_j, zonal) / m
    north = T[j + 1] if j + 1 < hi else t  # still old: rows go south to north
    cs = c_south[j - 1] if j > lo else 0.0  # the outer faces carry nothing
    cn = c_north[j] if j + 1 < hi else 0.0
    # the two loops differ only in how they find 1/C; one loop with both would not
    # vectorise (a gather in its body)
    if class_inv_capacity.shape[0] <= 2:  # land and ocean: a select
        low, high = class_inv_capacity[0], class_inv_capacity[-1]
        for i in range(m):
            ti = t[i]
            energy, up = _energy(ti, north[i], grad[i], cn, cs, rad)
            grad[i] = up
            t[i] = ti + (energy + (zonal[i] - mean)) * (high if cls[i] else low)
    else:  # any other field: a gather from the table
        for i in range(m):
            ti = t[i]
            energy, up = _energy(ti, north[i], grad[i], cn, cs, rad)
            grad[i] = up
            t[i] = ti + (energy + (zonal[i] - mean)) * class_inv_capacity[cls[i]]


@numba.njit(inline="always", error_model="numpy")
def _energy(ti, north_i, south_grad, cn, cs, rad):
    """A cell's radiative and meridional energy increment, and its north face's gradient."""
    neg_dt_b, mode, threshold, free, ice, sl, off = rad
    energy = neg_dt_b * ti
    if mode == 0:
        energy += free
    elif mode == 1:
        energy += ice if ti < threshold else free
    else:
        energy += min(max(ti * sl + off, ice), free)
    up = north_i - ti
    energy += cn * up
    energy -= cs * south_grad
    return energy, up


@numba.njit(inline="always", boundscheck=False, error_model="numpy")
def _zonal_row(t, v, tail, first, cz, sc, out):
    """``out = cz (t − sc (v + tail))``, the row's zonal increment (``tail`` only from column
    ``first`` on, zero before), and its sum (:func:`_row_sum`).

    The filters' round-off leaves the increment's sum off zero by ~10⁻¹² of the row's
    energy; the caller removes the mean of exactly these values, so the zonal part conserves
    energy to the round-off of this sum.
    """
    for i in range(first):
        out[i] = cz * (t[i] - sc * v[i])
    # an unsigned range (``first = m - nterms >= 0``): with a signed index that numba cannot
    # prove non-negative it adds a wraparound to every access, which kept this loop scalar
    # (~14 % of a 2° step; vectorised, the step took 8-10 % less, 0.5° 3 %, same bits)
    for i in range(np.uint64(first), np.uint64(t.shape[0])):
        out[i] = cz * (t[i] - sc * (v[i] + tail[i]))
    return _row_sum(out)


@numba.njit(boundscheck=False, error_model="numpy", fastmath={"reassoc"})
def _row_sum(a):
    """The sum of ``a``, in the vector order of the host's SIMD (a fixed order for a CPU
    target: vectorised, this loop costs a quarter of the strict one, which waits on each add)."""
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i]
    return s
