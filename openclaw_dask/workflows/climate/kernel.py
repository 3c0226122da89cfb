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
latency of the FPU (~1.3 ns per element). The passes therefore advance eight rows at once
(written out, so the eight chains stay in registers): ~0.2 ns per element and pass (both
passes ~0.4 ns of a ~0.9 ns step at 0.0625°, measured by leaving them out, 2026-12-02).
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

__all__ = ["ZONAL_CUTOFF", "advance_rows", "capacity_classes", "filter_coefficients"]

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


@numba.njit(inline="always", boundscheck=False)
def _store8(buf, i, a0, a1, a2, a3, a4, a5, a6, a7):
    """Column ``i`` of the eight chains' buffer (inlined: the chains stay in registers)."""
    buf[0, i] = a0
    buf[1, i] = a1
    buf[2, i] = a2
    buf[3, i] = a3
    buf[4, i] = a4
    buf[5, i] = a5
    buf[6, i] = a6
    buf[7, i] = a7


# Inlined into advance_rows (numba's IR inlining). As a function of its own, its code ran
# from wherever the loader put it: a copy inside advance_rows's cached object, or its own
# library in a process that had compiled it first. The cached case ran the step ~7 % slower
# (1.90-1.92 against 1.78-1.79 ns per cell-update at 0.0625° on the Zen 2 VM, 2026-12-05),
# same bits. Inlined: 1.77-1.80 either way (docs/design-notes.md, session 37).
@numba.njit(inline="always", boundscheck=False, error_model="numpy")
def _filter_block(T, j0, stop, buf, v0, rho, inv_rho, wrap, nterms, rho_nterms):
    """The two filters for rows ``j0 .. min(j0 + 8, stop) - 1`` of ``T`` (a short block
    repeats its last row).

    ``buf[g]`` gets row g's west filter run from zero (``v`` before its periodic correction)
    and ``v0[g]`` the scale of that correction.
    """
    m = T.shape[1]
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
    t0, t1, t2, t3 = T[k[0]], T[k[1]], T[k[2]], T[k[3]]
    t4, t5, t6, t7 = T[k[4]], T[k[5]], T[k[6]], T[k[7]]
    r0, r1, r2, r3 = rho[k[0]], rho[k[1]], rho[k[2]], rho[k[3]]
    r4, r5, r6, r7 = rho[k[4]], rho[k[5]], rho[k[6]], rho[k[7]]
    # east filter from zero, u_i = T_i + ρ u_{i-1}
    a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = 0.0
    for i in range(m):
        a0 = t0[i] + r0 * a0
        a1 = t1[i] + r1 * a1
        a2 = t2[i] + r2 * a2
        a3 = t3[i] + r3 * a3
        a4 = t4[i] + r4 * a4
        a5 = t5[i] + r5 * a5
        a6 = t6[i] + r6 * a6
        a7 = t7[i] + r7 * a7
        _store8(buf, i, a0, a1, a2, a3, a4, a5, a6, a7)
    # the periodic east solution adds c ρ^{i+1}, c = u_{m-1} / (1 − ρ^m): row g's correction
    # starts at column nterms - 1 (with c ρ^nterms) and is divided by ρ at each step west
    s0 = a0 * wrap[k[0]] * rho_nterms[k[0]]
    s1 = a1 * wrap[k[1]] * rho_nterms[k[1]]
    s2 = a2 * wrap[k[2]] * rho_nterms[k[2]]
    s3 = a3 * wrap[k[3]] * rho_nterms[k[3]]
    s4 = a4 * wrap[k[4]] * rho_nterms[k[4]]
    s5 = a5 * wrap[k[5]] * rho_nterms[k[5]]
    s6 = a6 * wrap[k[6]] * rho_nterms[k[6]]
    s7 = a7 * wrap[k[7]] * rho_nterms[k[7]]
    e0, e1, e2, e3 = nterms[k[0]] - 1, nterms[k[1]] - 1, nterms[k[2]] - 1, nterms[k[3]] - 1
    e4, e5, e6, e7 = nterms[k[4]] - 1, nterms[k[5]] - 1, nterms[k[6]] - 1, nterms[k[7]] - 1
    q0, q1, q2, q3 = inv_rho[k[0]], inv_rho[k[1]], inv_rho[k[2]], inv_rho[k[3]]
    q4, q5, q6, q7 = inv_rho[k[4]], inv_rho[k[5]], inv_rho[k[6]], inv_rho[k[7]]
    top = max(e0, e1, e2, e3, e4, e5, e6, e7) + 1
    # west filter from zero, v_i = u_i + ρ v_{i+1}: first the columns that no row of the
    # block corrects, then those where some row's east correction is still alive
    a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = 0.0
    for i in range(m - 1, top - 1, -1):
        a0 = buf[0, i] + r0 * a0
        a1 = buf[1, i] + r1 * a1
        a2 = buf[2, i] + r2 * a2
        a3 = buf[3, i] + r3 * a3
        a4 = buf[4, i] + r4 * a4
        a5 = buf[5, i] + r5 * a5
        a6 = buf[6, i] + r6 * a6
        a7 = buf[7, i] + r7 * a7
        _store8(buf, i, a0, a1, a2, a3, a4, a5, a6, a7)
    w0 = w1 = w2 = w3 = w4 = w5 = w6 = w7 = 0.0
    for i in range(top - 1, -1, -1):
        w0 = s0 if i == e0 else w0 * q0
        w1 = s1 if i == e1 else w1 * q1
        w2 = s2 if i == e2 else w2 * q2
        w3 = s3 if i == e3 else w3 * q3
        w4 = s4 if i == e4 else w4 * q4
        w5 = s5 if i == e5 else w5 * q5
        w6 = s6 if i == e6 else w6 * q6
        w7 = s7 if i == e7 else w7 * q7
        a0 = (buf[0, i] + w0) + r0 * a0
        a1 = (buf[1, i] + w1) + r1 * a1
        a2 = (buf[2, i] + w2) + r2 * a2
        a3 = (buf[3, i] + w3) + r3 * a3
        a4 = (buf[4, i] + w4) + r4 * a4
        a5 = (buf[5, i] + w5) + r5 * a5
        a6 = (buf[6, i] + w6) + r6 * a6
        a7 = (buf[7, i] + w7) + r7 * a7
        _store8(buf, i, a0, a1, a2, a3, a4, a5, a6, a7)
    # the periodic west solution adds v0 ρ^{m-i}, v0 = v_0 / (1 − ρ^m)
    v0[0], v0[1], v0[2], v0[3] = a0 * wrap[k[0]], a1 * wrap[k[1]], a2 * wrap[k[2]], a3 * wrap[k[3]]
    v0[4], v0[5], v0[6], v0[7] = a4 * wrap[k[4]], a5 * wrap[k[5]], a6 * wrap[k[6]], a7 * wrap[k[7]]


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
    buf = np.empty((_BLOCK, m + _ROW_PAD))[:, :m]  # see _ROW_PAD
    v0 = np.empty(_BLOCK)
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
                _filter_block(T, first, stop, buf, v0, rho, inv_rho, wrap, nterms, rho_nterms)
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
    for i in range(first, t.shape[0]):
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
