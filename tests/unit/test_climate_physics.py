"""Physics and numerics of the energy-balance model, with the numpy reference integrator."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest
from dask.sizeof import sizeof
from distributed.protocol import deserialize, serialize

from openclaw_dask.workflows.climate import (
    EBMParams,
    LatLonGrid,
    advance_band,
    global_mean,
    heat_capacity,
    ice_edge_latitude,
    north_analytic_solution,
    physics,
    reference_energy_budget,
    run_reference,
    zonal_mean,
)
from openclaw_dask.workflows.climate.insolation import legendre_p2
from openclaw_dask.workflows.climate.kernel import capacity_classes
from openclaw_dask.workflows.climate.physics import (
    BandOperators,
    advance_with,
    equilibrium_relaxation_steps,
    make_band_operators,
    radiative_energy,
    step_band,
)

# North (1975a): present-day ice edge at x_s = sin φ_s = 0.95, i.e. 71.8°
NORTH_ICE_EDGE = math.degrees(math.asin(0.95))


def _rough_field(grid: LatLonGrid, seed: int = 0) -> np.ndarray:
    """A profile with realistic large scales plus grid-scale noise (worst case for diffusion)."""
    rng = np.random.default_rng(seed)
    smooth = 28.0 - 45.0 * grid.sin_lat[:, None] ** 2 + 5.0 * np.cos(np.deg2rad(grid.lon))[None]
    return smooth + 3.0 * rng.standard_normal(grid.shape)


def test_north_analytic_equilibrium_at_two_degrees() -> None:
    grid = LatLonGrid(2.0)
    params = EBMParams.north_analytic().resolved(grid)
    nsteps = equilibrium_relaxation_steps(params, tolerance=2e-4)
    T = run_reference(params, grid, nsteps, np.zeros(grid.shape))
    exact = north_analytic_solution(params, grid.sin_lat)
    error = np.abs(zonal_mean(T) - exact).max()
    assert error < 0.25  # the requirement; the converged discretisation error is ≈ 0.009 K
    assert error < 0.02
    # nothing zonal happens in this case: rows stay uniform to round-off
    assert np.ptp(T, axis=1).max() < 1e-9


def test_p2_mode_decays_at_b_plus_6d() -> None:
    """The unit-sphere Laplacian: a P2 anomaly decays at (B + 6D)/C (North 1975a)."""
    grid = LatLonGrid(2.0)
    params = EBMParams.north_analytic().resolved(grid)
    base = north_analytic_solution(params, grid.sin_lat)[:, None] * np.ones(grid.shape)
    anomaly = legendre_p2(grid.sin_lat)
    nsteps = 200
    # the model is linear here: the difference of two runs isolates the anomaly exactly
    T = run_reference(params, grid, nsteps, base + anomaly[:, None])
    T_base = run_reference(params, grid, nsteps, base)
    w = grid.dx / 2
    amplitude = 5.0 * (zonal_mean(T - T_base) * anomaly) @ w  # P2 coefficient
    assert params.dt is not None
    rate = (params.B + 6.0 * params.D) * params.dt / params.heat_capacity_ocean
    assert amplitude == pytest.approx((1.0 - rate) ** nsteps, rel=2e-3)


def test_diffusion_conserves_energy_to_round_off() -> None:
    grid = LatLonGrid(2.0)
    params = EBMParams().resolved(grid)
    cap = heat_capacity(params, grid)
    ops = make_band_operators(params, grid, cap, 0)
    T0 = _rough_field(grid)
    T1 = T0.copy()
    step_band(T1, ops, 1234)
    diffusion = cap * (T1 - T0) - radiative_energy(T0, ops, 1234)  # J m-2 per cell
    net = global_mean(diffusion, grid)
    gross = global_mean(np.abs(diffusion), grid)
    assert gross > 1e3  # a rough field: diffusion moves a lot of energy
    assert abs(net) / gross < 1e-13


def test_zonal_preconditioner_is_what_keeps_the_polar_rows_stable() -> None:
    grid = LatLonGrid(2.0)
    params = EBMParams().resolved(grid)
    cap = heat_capacity(params, grid)
    ops = make_band_operators(params, grid, cap, 0, compiled=False)  # the FFT form's gains
    c_min = cap.min(axis=1, keepdims=True)
    # per-step amplification of each zonal mode through the preconditioned step: in [0, 1)
    amplification = 1.0 + ops.zonal_gain / c_min
    assert amplification.min() >= 0.0 and amplification.max() <= 1.0
    assert np.all(ops.zonal_gain[:, 0] == 0.0)  # wavenumber 0 (the row's energy) untouched
    # the explicit zonal step at this dt would be far outside the forward-Euler limit of 2
    assert params.dt is not None
    k_pole = params.D * grid.dlat / (grid.cos_lat[0] * grid.dx[0] * grid.dlon**2)
    assert 4 * params.dt * k_pole / params.heat_capacity_land > 100


def test_grid_scale_noise_decays_at_the_automatic_dt() -> None:
    grid = LatLonGrid(4.0)
    params = EBMParams().resolved(grid)
    T0 = _rough_field(grid, seed=3)
    T = run_reference(params, grid, 300, T0)
    # grid-scale roughness: second differences in both directions
    rough0 = np.abs(np.diff(T0, 2, axis=0)).max() + np.abs(np.diff(T0, 2, axis=1)).max()
    rough = np.abs(np.diff(T, 2, axis=0)).max() + np.abs(np.diff(T, 2, axis=1)).max()
    assert np.isfinite(T).all()
    assert rough < 0.2 * rough0
    assert T.min() > -60.0 and T.max() < 45.0


def test_energy_closes_every_step_with_land_ice_and_seasons() -> None:
    grid = LatLonGrid(2.0)
    params = EBMParams()  # seasonal cycle, ice albedo and land all on
    assert params.seasonal_cycle and params.ice_albedo and params.land
    _, budget = reference_energy_budget(params, grid, 20, _rough_field(grid), step0=2000)
    assert np.all(np.abs(budget.radiative_input) > 1e3)  # far from balance: a real test
    assert budget.relative_error.max() < 1e-12
    assert (np.abs(budget.residual) / np.abs(budget.radiative_input)).max() < 1e-12


@pytest.mark.parametrize(
    ("start", "T0"),
    [("warm", lambda x: 10.0 + 0.0 * x), ("cold", lambda x: 30.0 - 50.0 * x**2)],
)
def test_ice_edge_of_the_standard_parameters_is_where_north_puts_it(start: str, T0) -> None:
    """North, Cahalan & Coakley (1981) parameters, annual-mean insolation: x_s = 0.95 (71.8°).

    Measured at 2°: 71.5° from either side (the 2 K albedo ramp; a sharp switch gives
    70.9°-71.8° depending on the start).
    """
    grid = LatLonGrid(2.0)
    params = EBMParams(seasonal_cycle=False, land=False).resolved(grid)
    nsteps = int(1.5 * equilibrium_relaxation_steps(params, tolerance=1e-3))
    initial = T0(grid.sin_lat)[:, None] * np.ones(grid.shape)
    T = run_reference(params, grid, nsteps, initial)
    south, north = ice_edge_latitude(zonal_mean(T), grid.lat, params.ice_threshold)
    assert south == pytest.approx(-north, abs=1e-9)  # symmetric forcing, symmetric answer
    assert abs(north - NORTH_ICE_EDGE) < 1.0
    assert 14.0 < global_mean(T, grid) < 14.6  # the present-day global mean they calibrate to


def test_ramped_and_sharp_albedo_agree_away_from_the_threshold() -> None:
    grid = LatLonGrid(4.0)
    params = EBMParams().resolved(grid)
    cap = heat_capacity(params, grid)
    T = _rough_field(grid) - 15.0
    ramp = radiative_energy(T, make_band_operators(params, grid, cap, 0), 500)
    sharp_params = EBMParams(ice_ramp=0.0).resolved(grid)
    sharp = radiative_energy(T, make_band_operators(sharp_params, grid, cap, 0), 500)
    far = np.abs(T - params.ice_threshold) > params.ice_ramp / 2
    assert np.array_equal(ramp[far], sharp[far])
    assert not np.array_equal(ramp[~far], sharp[~far])


@pytest.mark.parametrize(
    "params",
    [EBMParams(), EBMParams(ice_ramp=0.0), EBMParams.north_analytic(), EBMParams(D=0.0)],
    ids=["ramp", "sharp", "north", "no-diffusion"],
)
@pytest.mark.parametrize("resolution", [4.0, 1.0])
def test_compiled_step_matches_the_array_namespace_step(params, resolution) -> None:
    """The kernel's recursive filters and the FFT form are one operator (to round-off)."""
    grid = LatLonGrid(resolution)
    params = params.resolved(grid)
    _compare_steps(params, grid, heat_capacity(params, grid))


def test_compiled_step_takes_any_capacity_field() -> None:
    """More than two capacities (a gather instead of the land/ocean select) and more than 256
    (a 16-bit class), against the FFT form."""
    grid = LatLonGrid(4.0)
    params = EBMParams().resolved(grid)
    cap = heat_capacity(params, grid)
    rng = np.random.default_rng(2)
    three = np.where(rng.random(grid.shape) < 0.1, 0.5 * cap.max(), cap)
    smooth = cap * (1.0 + 0.1 * rng.random(grid.shape))
    for field, dtype in [(three, np.uint8), (smooth, np.uint16)]:
        classes, inverse = capacity_classes(field)
        assert classes.dtype == dtype and np.array_equal(inverse[classes], 1.0 / field)
        _compare_steps(params, grid, field)


def test_capacity_classes_of_one_and_two_values() -> None:
    for field in (np.full((3, 4), 7.0), np.where(np.eye(3, 4) > 0, 2.0, 9.0)):
        classes, inverse = capacity_classes(field)
        assert classes.dtype == np.uint8 and len(inverse) == len(np.unique(field))
        assert np.array_equal(inverse[classes], 1.0 / field)


def _compare_steps(params: EBMParams, grid: LatLonGrid, cap: np.ndarray) -> None:
    T0 = _rough_field(grid, seed=4)
    T_fft, T_filters = T0.copy(), T0.copy()
    fft_ops = make_band_operators(params, grid, cap, 0, compiled=False)
    filter_ops = make_band_operators(params, grid, cap, 0)
    assert filter_ops.compiled and not fft_ops.compiled
    for step in range(4321, 4341):
        step_band(T_fft, fft_ops, step)
        step_band(T_filters, filter_ops, step)
    change = np.abs(T_fft - T0).max()
    assert change > 1.0  # a rough field moves: a real comparison
    assert np.abs(T_filters - T_fft).max() < 1e-12 * change * 20


def test_compiled_step_of_a_band_with_halos_keeps_its_interior_bits() -> None:
    """Rows never mix in the kernel: a band's valid rows match the whole globe bit for bit
    (other block alignments, a short last block, the pole rows)."""
    grid = LatLonGrid(4.0)
    params = EBMParams().resolved(grid)
    cap = heat_capacity(params, grid)
    T0 = _rough_field(grid, seed=5)
    whole = advance_band(T0, cap, params, grid, 0, 4321, 15)
    band = advance_band(T0[5:40], cap[5:40], params, grid, 5, 4321, 15)
    assert np.array_equal(band[15:-15], whole[20:25])
    for lo, hi in [(0, 27), (13, grid.nlat)]:  # a pole and 15 halo rows on the other side
        band = advance_band(T0[lo:hi], cap[lo:hi], params, grid, lo, 4321, 15)
        keep = slice(0, hi - lo - 15) if lo == 0 else slice(15, None)
        assert np.array_equal(band[keep], whole[lo:hi][keep]), (lo, hi)


@pytest.mark.parametrize("shrink", [(True, True), (False, True), (True, False)])
def test_a_shrinking_halo_keeps_every_valid_row_bit_for_bit(shrink) -> None:
    """The Dask driver skips the halo rows that are already wrong (a cone, not a rectangle)."""
    grid = LatLonGrid(4.0)
    params = EBMParams().resolved(grid)
    cap = heat_capacity(params, grid)
    T0 = _rough_field(grid, seed=8)
    ops = make_band_operators(params, grid, cap[:30], 0)  # the south pole row is row 0
    full, full_sum = advance_with(T0[:30], ops, 4321, 9, accumulate=True)
    valid = slice(9 if shrink[0] else 0, 30 - 9 if shrink[1] else 30)
    rows = (valid.start, valid.stop)
    cone, cone_sum = advance_with(
        T0[:30], ops, 4321, 9, accumulate=True, shrink=shrink, total_rows=rows
    )
    assert np.array_equal(cone[valid], full[valid])
    assert np.array_equal(cone_sum, full_sum[valid])
    assert not np.array_equal(cone, full)  # the skipped rows were left behind
    with pytest.raises(ValueError, match="the sum needs 0:30"):  # no sum over skipped rows
        advance_with(T0[:30], ops, 4321, 9, accumulate=True, shrink=shrink)
    with pytest.raises(ValueError, match="shrink a band of 30 rows to nothing"):
        advance_with(T0[:30], ops, 0, 16, shrink=(True, True))


@pytest.mark.parametrize("shrink", [(False, False), (True, True), (True, False)])
def test_steps_per_pass_change_no_bit(monkeypatch, shrink) -> None:
    """The compiled kernel's wavefront (several steps per pass over the rows) gives the bits of
    one step at a time, with halo cones and a running sum, for any depth."""
    grid = LatLonGrid(2.0)
    params = EBMParams().resolved(grid)
    cap = heat_capacity(params, grid)
    T0 = _rough_field(grid, seed=11)
    ops = make_band_operators(params, grid, cap[20:57], 20)  # 37 rows: no whole blocks
    rows = (15 if shrink[0] else 0, 37 - 15 if shrink[1] else 37)
    runs = {}
    for depth in (1, 5, 16, 64):
        monkeypatch.setattr(physics, "WAVEFRONT_DEPTH", depth)
        runs[depth] = advance_with(
            T0[20:57], ops, 999, 15, accumulate=True, shrink=shrink, total_rows=rows
        )
    T, total = T0[20:57].copy(), np.zeros((rows[1] - rows[0], grid.nlon))
    for s in range(15):  # one step per call, as the array step runs
        lo, hi = (s if shrink[0] else 0), (37 - s if shrink[1] else 37)
        step_band(T[lo:hi], ops.rows(lo, hi), 999 + s)
        total += T[rows[0] : rows[1]]
    for out, out_sum in runs.values():
        assert np.array_equal(out[rows[0] : rows[1]], T[rows[0] : rows[1]])
        assert np.array_equal(out_sum, total)


def test_overwrite_advances_the_callers_array_in_place() -> None:
    grid = LatLonGrid(4.0)
    params = EBMParams().resolved(grid)
    cap = heat_capacity(params, grid)
    T0 = _rough_field(grid, seed=6)
    copied = advance_band(T0, cap, params, grid, 0, 77, 5)
    mine = T0.copy()
    out = advance_band(mine, cap, params, grid, 0, 77, 5, overwrite=True)
    assert out is mine
    assert np.array_equal(out, copied)
    # an array that is not C-contiguous float64 is converted, never changed
    fortran = np.asfortranarray(T0)
    out = advance_band(fortran, cap, params, grid, 0, 77, 5, overwrite=True)
    assert np.array_equal(out, copied) and np.array_equal(fortran, T0)


OPERATOR_ARRAYS = (
    "insolation",
    "coalbedo_free",
    "c_north",
    "c_south",
)


@pytest.mark.parametrize("seasonal", [True, False])
def test_operator_rows_hold_the_bits_of_operators_built_for_those_rows(seasonal) -> None:
    """What lets the Dask driver build a band's operators once and slice them per batch."""
    grid = LatLonGrid(4.0)
    params = EBMParams(seasonal_cycle=seasonal).resolved(grid)
    cap = heat_capacity(params, grid)
    ops = make_band_operators(params, grid, cap[3:40], 3)
    assert ops.rows(0, ops.nrows) is ops
    for a, b in [(0, 37), (5, 37), (0, 20), (7, 21), (36, 37)]:
        sliced, built = ops.rows(a, b), make_band_operators(params, grid, cap[3 + a : 3 + b], 3 + a)
        assert (sliced.row0, sliced.nrows) == (built.row0, built.nrows) == (3 + a, b - a)
        for name in OPERATOR_ARRAYS:
            mine, theirs = getattr(sliced, name), getattr(built, name)
            if theirs is None:
                assert mine is None and seasonal  # the annual case only
            else:
                assert mine.shape == theirs.shape and np.array_equal(mine, theirs), (a, b, name)
        for name, theirs in built.filters.items():
            if name != "capacity_class":  # a slice keeps the whole band's classes
                assert np.array_equal(sliced.filters[name], theirs), (a, b, name)
        inverse = [o.class_inv_capacity[o.filters["capacity_class"]] for o in (sliced, built)]
        assert np.array_equal(*inverse)
        T = _rough_field(grid, seed=a)[3 + a : 3 + b]
        assert np.array_equal(advance_with(T, sliced, 900, 6), advance_with(T, built, 900, 6))
    for a, b in [(-1, 4), (4, 4), (0, 38)]:
        with pytest.raises(ValueError, match="not inside a band of 37 rows"):
            ops.rows(a, b)


def test_operators_travel_report_their_memory_and_refuse_a_band_of_another_height() -> None:
    grid = LatLonGrid(4.0)
    params = EBMParams().resolved(grid)
    ops = make_band_operators(params, grid, heat_capacity(params, grid), 0).rows(2, 40)
    assert isinstance(ops, BandOperators)
    # a band's state may be spilled or moved: plain pickle and Dask's serialisation
    T = _rough_field(grid, seed=9)[2:40]
    expected = advance_with(T, ops, 100, 4)
    for back in (
        pickle.loads(pickle.dumps(ops)),
        deserialize(*serialize((T, ops), on_error="raise"))[1],
    ):
        assert back.xp is np and (back.row0, back.nrows) == (2, 38)
        assert np.array_equal(advance_with(T, back, 100, 4), expected)
    # worker memory accounting: at least the capacity classes and the filters (host arrays)
    assert sizeof(ops) >= sum(a.nbytes for a in ops.filters.values())
    with pytest.raises(ValueError, match="operators for 38 rows, the band has 44"):
        advance_with(np.zeros((44, grid.nlon)), ops, 0, 1)
    with pytest.raises(ValueError, match="operators for None rows"):
        advance_with(np.zeros((44, grid.nlon)), None, 0, 1)
    assert np.array_equal(advance_with(np.ones((3, 2)), None, 0, 0), np.ones((3, 2)))


@pytest.mark.parametrize("compiled", [True, False])
def test_a_zonal_wave_decays_at_the_spherical_laplacians_rate(compiled: bool) -> None:
    """A wave ``cos(mλ)`` the same in every row feels no meridional flux, so its decay per
    step is ``dt B / C`` plus the zonal part of ``D ∇²`` on the unit sphere, ``D m² / cos²φ``
    over ``C``, slowed by the preconditioner's documented ``1 / (1 + that dt)``. Checked against
    the continuum (the grid's 4° differences are within 1 % of it from 20° to 80°), because a
    wrong power of ``cos φ`` in the zonal coefficient cancels in every zonal mean and keeps the
    kernel and the FFT form in agreement."""
    grid = LatLonGrid(4.0)
    params = EBMParams.north_analytic(dt=600.0).resolved(grid)
    cap = heat_capacity(params, grid)
    C, m = params.heat_capacity_ocean, 3
    ops = make_band_operators(params, grid, cap, 0, compiled=compiled)
    wave = np.cos(m * np.deg2rad(grid.lon))[None, :] * np.ones((grid.nlat, 1))
    calm, waved = np.zeros(grid.shape), wave.copy()
    step_band(calm, ops, 0)
    step_band(waved, ops, 0)
    # the model is linear without ice: the wave's part of the step is the difference
    kept = 2.0 / grid.nlon * ((waved - calm) @ wave[0])
    zonal = 1.0 - kept - params.dt * params.B / C
    rate = params.dt * params.D * m**2 / (C * grid.cos_lat**2)
    expected = rate / (1.0 + rate)
    rows = (np.abs(grid.lat) >= 20.0) & (np.abs(grid.lat) <= 80.0)
    np.testing.assert_allclose(zonal[rows], expected[rows], rtol=1e-2)


def test_a_halo_cone_shrunk_to_one_row_keeps_that_rows_bits() -> None:
    """``n`` steps on ``2n + 1`` rows with halo edges at both ends leave exactly the middle
    row valid (each step's outermost rows miss a flux, so one row per step and end is lost):
    it is the reference's row, bit for bit, and the only row a sum may cover. ``2n`` rows,
    which leave none, are refused (the guard had allowed ``2n − 1``: a band of wrong rows)."""
    grid = LatLonGrid(4.0)
    params = EBMParams().resolved(grid)
    cap = heat_capacity(params, grid)
    T0 = _rough_field(grid)
    n, middle = 5, 20
    want = run_reference(params, grid, n, T0, step0=300)[middle]
    rows = slice(middle - n, middle + n + 1)
    ops = make_band_operators(params, grid, cap[rows], rows.start)
    got = advance_with(T0[rows], ops, 300, n, shrink=(True, True))
    assert np.array_equal(got[n], want)
    assert not np.array_equal(got[n - 1], run_reference(params, grid, n, T0, step0=300)[middle - 1])
    got, total = advance_with(
        T0[rows], ops, 300, n, shrink=(True, True), accumulate=True, total_rows=(n, n + 1)
    )
    assert np.array_equal(got[n], want) and total.shape == (1, grid.nlon)
    with pytest.raises(ValueError, match=r"leave rows 5:6 valid, the sum needs 4:6"):
        advance_with(
            T0[rows], ops, 300, n, shrink=(True, True), accumulate=True, total_rows=(n - 1, n + 1)
        )
    for height in (2 * n, 2 * n - 1):
        with pytest.raises(ValueError, match=f"shrink a band of {height} rows to nothing"):
            advance_with(T0[rows][:height], ops.rows(0, height), 300, n, shrink=(True, True))
    with pytest.raises(ValueError, match="shrink a band of 5 rows to nothing"):
        advance_with(T0[rows][:n], ops.rows(0, n), 300, n, shrink=(True, False))


def test_the_budget_of_a_uniform_field_is_its_analytic_radiation() -> None:
    """A uniform 5 °C field with North's annual-mean forcing absorbs more than it emits in the
    tropics and less near the poles. Its budget terms are the area-weighted sums of
    ``dt (Q (1 + s2 P2)(1 − α) − A − B T)`` and of their moduli, from the row's ``sin φ``
    alone; a uniform field carries no diffusion, so storage follows the radiation."""
    grid = LatLonGrid(4.0)
    params = EBMParams.north_analytic().resolved(grid)
    _, budget = reference_energy_budget(params, grid, 1, np.full(grid.shape, 5.0))
    x = np.sin(np.deg2rad(grid.lat))
    absorbed = params.Q * (1.0 + params.s2 * (1.5 * x**2 - 0.5)) * (1.0 - params.albedo_free)
    rad = params.dt * (absorbed - params.A - params.B * 5.0)
    assert rad.min() < 0.0 < rad.max()
    band = np.diff(np.sin(np.deg2rad(grid.lat_edges))) / 2.0  # each row's area fraction
    gross = float(np.abs(rad) @ band)
    assert budget.gross_flux[0] == pytest.approx(gross, rel=1e-14)
    assert abs(budget.radiative_input[0] - float(rad @ band)) < 5e-15 * gross
    assert abs(budget.storage_change[0] - float(rad @ band)) < 1e-12 * gross


def test_relaxation_steps_follow_the_most_inert_capacity_whichever_it_is() -> None:
    """``ln(1/tol) C_max / (B dt)`` steps, with ``C_max`` the larger of the ocean's and (with
    land on) the land's: a land more inert than the ocean sets the spin-up."""
    grid = LatLonGrid(4.0)
    heavy = EBMParams(heat_capacity_land=5e8).resolved(grid)
    expected = math.ceil(math.log(1e3) * 5e8 / (heavy.B * heavy.dt))
    assert equilibrium_relaxation_steps(heavy) == expected
    light = EBMParams(heat_capacity_land=5e8, land=False).resolved(grid)
    ocean = light.heat_capacity_ocean
    assert equilibrium_relaxation_steps(light) == math.ceil(
        math.log(1e3) * ocean / (light.B * light.dt)
    )


def test_a_capacity_thinner_than_the_default_land_gets_its_own_stable_dt() -> None:
    """A caller's capacity field of 10⁶ J m⁻² K⁻¹ (a quarter metre of water, 8 times thinner
    than the default land) sets ``dt``: at most ``0.9 C / (B + 2 D cot(Δφ/2) / Δφ)`` (every
    row's ``cN + cS`` is ``cot(Δφ/2)/Δφ`` on the sphere), and the reference run on it damps
    grid-scale noise instead of amplifying it as the default land's ``dt`` would."""
    grid = LatLonGrid(4.0)
    params = EBMParams()
    thin = 1.0e6
    half = grid.dlat / 2
    limit = thin / (params.B + 2.0 * params.D / math.tan(half) / grid.dlat)
    dt = params.resolved(grid, thin).dt
    assert dt is not None and limit * 0.89 < dt <= 0.9 * limit
    T0 = _rough_field(grid, seed=5)
    T = run_reference(params, grid, 300, T0, capacity=np.full(grid.shape, thin))
    rough0 = np.abs(np.diff(T0, 2, axis=0)).max()
    assert np.isfinite(T).all() and np.abs(np.diff(T, 2, axis=0)).max() < 0.2 * rough0
