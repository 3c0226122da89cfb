"""Grid, parameters and insolation of the climate model."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from openclaw_dask.workflows.climate import (
    EBMParams,
    LatLonGrid,
    daily_insolation_factor,
    heat_capacity,
    idealized_land_mask,
    insolation_factor,
    insolation_steps,
    max_stable_dt,
    regrid,
    solar_declination,
)
from openclaw_dask.workflows.climate.insolation import legendre_p2
from openclaw_dask.workflows.climate.params import MAX_AUTO_DT


# -- grid -------------------------------------------------------------------------------------
def test_grid_two_degrees_is_90_by_180_with_unit_total_area() -> None:
    g = LatLonGrid(2.0)
    assert g.shape == (90, 180)
    assert g.lat[0] == -89.0 and g.lat[-1] == 89.0
    assert g.lon[0] == 1.0 and g.lon[-1] == 359.0
    assert g.nlon * g.area_weights.sum() == pytest.approx(1.0, abs=1e-15)
    # exact cell areas: each row's area is the spherical zone between its edges
    assert g.cell_area.sum() * g.nlon == pytest.approx(4 * math.pi, rel=1e-15)
    assert g.cos_edges[0] == 0.0 and g.cos_edges[-1] == 0.0
    c_north, c_south = g.meridional_factors()
    assert c_south[0] == 0.0 and c_north[-1] == 0.0  # nothing crosses the poles
    # interior faces are shared: what leaves row j northward enters row j+1 from the south
    assert np.allclose(c_north[:-1] * g.dx[:-1], c_south[1:] * g.dx[1:], rtol=1e-15)


@pytest.mark.parametrize("bad", [0.0, -1.0, 7.0, 0.7])
def test_grid_refuses_resolutions_that_do_not_divide_180(bad: float) -> None:
    with pytest.raises(ValueError, match="resolution"):
        LatLonGrid(bad)


@pytest.mark.parametrize(
    ("bad", "near"),
    [
        (7.0, "7.2 or 6 (25 or 30 rows)"),
        (0.7, "0.72 or 0.625 (250 or 288 rows)"),
        (9.7, "10 or 9 (18 or 20 rows)"),
        (100.0, "90 (2 rows)"),  # no coarser grid: two rows at least
    ],
)
def test_a_resolution_that_does_not_divide_180_suggests_the_nearest_that_do(
    bad: float, near: str
) -> None:
    """It said "use e.g. 0.5, 1, 2, 4, 5" whatever was asked: 7 got no 7.2 or 6."""
    with pytest.raises(
        ValueError, match=rf"does not divide 180°; did you mean {re.escape(near)}\?$"
    ):
        LatLonGrid(bad)
    for suggested in near.partition(" (")[0].split(" or "):
        LatLonGrid(float(suggested))  # each does


def test_regrid_is_bilinear_periodic_in_longitude_and_the_identity_on_its_own_grid() -> None:
    coarse, fine = LatLonGrid(4.0), LatLonGrid(2.0)

    def field(grid: LatLonGrid) -> np.ndarray:
        # linear in latitude and in longitude on each side of the seam at 0°/360°
        saw = np.abs(((grid.lon - 180.0) % 360.0) - 180.0)  # 0 at 0°E, 180 at 180°E
        return grid.lat[:, None] * 0.1 + saw[None, :] * 0.01

    same = regrid(field(coarse), coarse.lat, coarse.lon, coarse)
    assert np.array_equal(same, field(coarse))
    finer = regrid(field(coarse), coarse.lat, coarse.lon, fine)
    assert finer.shape == fine.shape
    # exact where the field is linear between coarse centres: inside the coarse rows, away from
    # the kinks of the saw at 0° and 180° (across the seam the wrap is used, and it is exact)
    inner = (fine.lat > coarse.lat[0]) & (fine.lat < coarse.lat[-1])
    away = np.abs(((fine.lon - 90.0) % 180.0) - 90.0) > 2.0
    expected = field(fine)
    assert np.allclose(finer[np.ix_(inner, away)], expected[np.ix_(inner, away)], atol=1e-12)
    # beyond the outermost coarse rows (fine rows -89° and 89°): the nearest row's values
    edge = expected[[0, -1]] + 0.1 * (coarse.lat[[0, -1]] - fine.lat[[0, -1]])[:, None]
    assert np.allclose(finer[[0, -1]][:, away], edge[:, away], atol=1e-12)
    with pytest.raises(ValueError, match="a field of shape"):
        regrid(field(coarse)[:, :-1], coarse.lat, coarse.lon, fine)


def test_land_mask_is_deterministic_and_resolution_independent() -> None:
    coarse = idealized_land_mask(LatLonGrid(2.0))
    fine = idealized_land_mask(LatLonGrid(0.5))
    frac_coarse = coarse.mean(axis=1) @ LatLonGrid(2.0).dx / 2
    frac_fine = fine.mean(axis=1) @ LatLonGrid(0.5).dx / 2
    assert 0.25 < frac_fine < 0.35
    assert abs(frac_coarse - frac_fine) < 0.01
    assert np.array_equal(coarse, idealized_land_mask(LatLonGrid(2.0)))
    # Antarctica is land; the equatorial Pacific (180°E) is ocean
    g = LatLonGrid(2.0)
    assert coarse[0].all()
    assert not coarse[np.searchsorted(g.lat, 0.0), np.searchsorted(g.lon, 180.0)]


# -- parameters -------------------------------------------------------------------------------
def test_params_attrs_are_json_and_round_trip() -> None:
    p = EBMParams().resolved(LatLonGrid(4.0))
    attrs = json.loads(json.dumps(p.to_attrs()))
    assert attrs["A"] == 203.3 and attrs["B"] == 2.09 and attrs["D"] == 0.649
    assert attrs["Q"] == 334.4 and attrs["solar_constant"] == pytest.approx(1337.6)
    assert EBMParams.from_attrs(attrs) == p
    assert "alpha" not in attrs  # the albedo varies (P2, ice): no one alpha
    north = EBMParams.north_analytic().resolved(LatLonGrid(4.0))
    attrs = json.loads(json.dumps(north.to_attrs()))
    assert attrs["alpha"] == attrs["albedo_free"] == 0.30  # the analytic case's one albedo
    assert EBMParams.from_attrs(attrs) == north


def test_automatic_dt_is_stable_and_divides_the_year() -> None:
    g = LatLonGrid(2.0)
    p = EBMParams().resolved(g)
    limit = max_stable_dt(p, g, p.heat_capacity_land)
    assert p.dt is not None and p.dt <= p.dt_safety * limit
    assert p.steps_per_year == pytest.approx(round(p.steps_per_year), abs=1e-6)
    # the limit is the meridional one, ≈ C_min / (B + 4D/Δφ²)
    approx = p.heat_capacity_land / (p.B + 4 * p.D / g.dlat**2)
    assert limit == pytest.approx(approx, rel=1e-3)


def test_the_automatic_dt_is_a_day_at_most() -> None:
    """Stability alone allowed one step a year with ``D = 0`` (``params.diffusivity``) and 15
    at 10° without land: months with no step of their own, seasons of one step. A day caps it;
    the defaults' steps, shorter already, keep their bits."""
    for params, grid in (
        (EBMParams(D=0.0, land=False), LatLonGrid(2.0)),
        (EBMParams(D=0.0), LatLonGrid(2.0)),  # 9 steps a year before
        (EBMParams(land=False), LatLonGrid(10.0)),
    ):
        p = params.resolved(grid)
        assert p.dt is not None and p.dt <= MAX_AUTO_DT == 86400.0
        assert p.steps_per_year == pytest.approx(366, abs=1e-6)
    assert EBMParams().resolved(LatLonGrid(2.0)).dt == 365.25 * 86400 / 8932
    assert EBMParams(land=False).resolved(LatLonGrid(2.0)).dt == 365.25 * 86400 / 367


def test_explicit_dt_above_the_limit_is_refused() -> None:
    g = LatLonGrid(2.0)
    with pytest.raises(ValueError, match="stability limit"):
        EBMParams(dt=86400.0).resolved(g)


def test_ice_must_be_brighter_than_open_surface() -> None:
    with pytest.raises(ValueError, match="albedo_ice"):
        EBMParams(albedo_ice=0.3)


def test_heat_capacity_uses_land_mask_or_uniform_ocean() -> None:
    g = LatLonGrid(4.0)
    p = EBMParams()
    cap = heat_capacity(p, g)
    land = idealized_land_mask(g)
    assert np.all(cap[land] == p.heat_capacity_land)
    assert np.all(cap[~land] == p.heat_capacity_ocean)
    assert np.all(heat_capacity(EBMParams(land=False), g) == p.heat_capacity_ocean)
    custom = np.zeros(g.shape, dtype=bool)
    custom[:, :10] = True
    assert (heat_capacity(p, g, custom) == p.heat_capacity_land).sum() == custom.sum()
    with pytest.raises(ValueError, match="shape"):
        heat_capacity(p, g, custom[:-1])


# -- insolation -------------------------------------------------------------------------------
def test_declination_follows_the_orbit() -> None:
    p = EBMParams()
    t_eq = p.vernal_equinox_day * 86400.0
    assert solar_declination(p, t_eq) == pytest.approx(0.0, abs=1e-15)
    assert math.degrees(solar_declination(p, t_eq + p.year_length / 4)) == pytest.approx(23.44)
    assert math.degrees(solar_declination(p, t_eq + 3 * p.year_length / 4)) == pytest.approx(-23.44)


def test_daily_insolation_known_values() -> None:
    p = EBMParams()
    delta = math.radians(p.obliquity)
    lat = np.deg2rad(np.array([-89.999, -70.0, 0.0, 89.999]))
    s = daily_insolation_factor(np.sin(lat), np.cos(lat), delta)
    q_day = p.Q * s
    assert q_day[0] == 0.0 and q_day[1] == 0.0  # polar night in the southern winter
    # equator: S0/π cos δ; pole in polar day: S0 sin δ
    assert q_day[2] == pytest.approx(p.solar_constant / math.pi * math.cos(delta), rel=1e-12)
    assert q_day[3] == pytest.approx(p.solar_constant * math.sin(delta), rel=1e-6)


def test_insolation_global_mean_is_one_and_annual_mean_is_north_p2() -> None:
    g = LatLonGrid(1.0)
    p = EBMParams().resolved(g)
    w = g.dx / 2  # zonal-band area fractions
    steps = np.linspace(0, p.steps_per_year, 73, endpoint=False).astype(int)
    rows = np.stack([insolation_factor(p, g.sin_lat, g.cos_lat, int(n)) for n in steps])
    assert np.allclose(rows @ w, 1.0, atol=2e-4)
    annual = rows.mean(axis=0)
    # Legendre P2 coefficient of the annual mean: (5/2) ∫ s P2 dx over [-1, 1]
    s2 = 5.0 * float((annual * legendre_p2(g.sin_lat)) @ w)
    assert s2 == pytest.approx(-0.482, abs=0.01)  # North (1975a) fits -0.482; we get ≈ -0.477
    flat = insolation_factor(EBMParams(seasonal_cycle=False), g.sin_lat, g.cos_lat, 0)
    assert np.array_equal(flat, 1.0 - 0.482 * legendre_p2(g.sin_lat))


# -- bands of climate.ebm ---------------------------------------------------------------------
def test_the_compiled_insolation_of_many_steps_is_each_steps_own_however_they_are_batched() -> None:
    grid = LatLonGrid(2.0)
    params = EBMParams().resolved(grid, heat_capacity(EBMParams(), grid).min())
    steps = range(100, 400)
    table = insolation_steps(params, grid.sin_lat, grid.cos_lat, 100, len(steps))
    assert table.shape == (len(steps), grid.nlat)
    # the array namespace's value of each step: the same operations (libm's acos and sin
    # for numpy's; equal here, within a few units in the last place on any host)
    each = np.stack([insolation_factor(params, grid.sin_lat, grid.cos_lat, n) for n in steps])
    np.testing.assert_array_max_ulp(table, each, maxulp=4)
    # a step's row does not depend on the batch it was asked for in: bit for bit
    split = [
        insolation_steps(params, grid.sin_lat, grid.cos_lat, a, b - a)
        for a, b in ((100, 101), (101, 164), (164, 400))
    ]
    assert np.array_equal(np.concatenate(split), table)
    # with the seasons off, North's annual mean at every step
    flat = EBMParams(seasonal_cycle=False).resolved(grid, heat_capacity(EBMParams(), grid).min())
    mean = insolation_steps(flat, grid.sin_lat, grid.cos_lat, 7, 3)
    assert np.array_equal(
        mean, np.stack([insolation_factor(flat, grid.sin_lat, grid.cos_lat, 0)] * 3)
    )


def test_bands_are_as_many_as_make_the_slowest_band_fastest() -> None:
    from openclaw_dask.workflows.ops.climate import band_count, steps_per_task

    eighth, quarter, half, one = (1440, 2880), (720, 1440), (360, 720), (180, 360)
    third, fifth = (600, 1200), (450, 900)

    def bands(shape: tuple[int, int], threads: int, k: int, processes: int = 2) -> int:
        return band_count(shape, threads=threads, batch_size=k, processes=processes)

    # measured on 2 workers x 1 thread, 1 band against 2 in Mcell/s (BATCH_OVERHEAD_UPDATES)
    assert bands(quarter, 2, 64) == 2  # 826 against 646 as one band
    assert bands(quarter, 2, 32) == 2  # 725 against 638
    assert bands(quarter, 2, 128) == 2  # 838 against 633
    assert bands(third, 2, 64) == 2  # 0.3°: 728 against 620
    assert bands(fifth, 2, 64) == 1  # 0.4°: 634 against 616
    assert bands(half, 2, 64) == 1  # 0.5°: 24.8 M a batch for 16.6 M
    assert bands(half, 2, 90) == 1  # 616 against 535
    assert bands(half, 2, 128) == 1  # 601 against 539: the cones decide
    assert bands(fifth, 2, 128) == 2  # 635 / 638: one cone each
    assert bands((90, 180), 2, 64) == 1  # the 2° default: 45 rows < K
    assert bands(quarter, 2, 16) == 1  # 23.5 M a batch for 16.6 M
    assert bands(one, 2, 4) == 1  # 7x slower as two bands
    assert bands(eighth, 2, 16) == 2  # 1.4x one band
    # one worker of two threads: no halo task, a cheaper batch (ONE_PROCESS_...)
    assert bands(fifth, 2, 64, processes=1) == 2  # 701 against 613
    assert bands(third, 2, 32, processes=1) == 2  # 735 against 610 (one band on 2 x 1)
    assert bands(quarter, 2, 16, processes=1) == 2  # 709 against 632
    assert bands(half, 2, 64, processes=1) == 1  # 602 against 590
    # many threads: a band a thread once bands are K tall (the 16-core Xeon's 16 bands of 180
    # rows at K=64 ran 2408 Mcell/s: 433 ms a batch by this rule's arithmetic, 441 measured)
    assert bands((2880, 5760), 16, 64, processes=4) == 16  # not 11 bands of 262
    assert bands(eighth, 16, 64, processes=4) == 16  # 90 rows >= K
    assert bands(eighth, 16, 128, processes=4) == 11  # 1440 // 128: K tall
    assert bands(half, 16, 64, processes=4) == 1  # 5 bands: 463 rows a step, not 360
    assert bands(fifth, 3, 64, processes=3) == 1  # 3 bands: 150 + 65 + 260 rows a step
    assert bands((90, 180), 16, 1, processes=4) == 1  # tiny tasks: one band
    assert bands(quarter, 1, 64, processes=1) == 1  # one thread, one band
    assert steps_per_task(16, 2) == 16 and steps_per_task(16, 1) == 2**31  # one task a segment


def test_regrid_interpolates_across_the_0e_seam() -> None:
    """A field linear in longitude through 0°E (kinks at 90°E and 270°E) is reproduced exactly
    at the fine columns between the last and first coarse columns (1°E, 359°E): the wrap, not
    the end column's value. The other regrid test keeps away from the seam, where its saw
    has a kink."""
    coarse, fine = LatLonGrid(4.0), LatLonGrid(2.0)

    def field(grid: LatLonGrid) -> np.ndarray:
        through_seam = np.abs(((grid.lon - 270.0) % 360.0) - 180.0)  # 90 - lon near 0°E
        return np.broadcast_to(through_seam[None, :] * 0.01, grid.shape)

    finer = regrid(field(coarse), coarse.lat, coarse.lon, fine)
    seam = np.isin(fine.lon, [1.0, 359.0])
    np.testing.assert_allclose(finer[:, seam], field(fine)[:, seam], atol=1e-12)
    np.testing.assert_allclose(finer[0, seam], [0.89, 0.91], atol=1e-12)


def test_a_continent_that_crosses_0e_continues_across_it() -> None:
    """ "Africa" (centre 5°N 20°E, 25° half-width) reaches 355°E: at 5°N the columns 357°E to
    43°E are land and 351°E is ocean (no other continent there), as the shortest signed
    longitude difference gives, rather than a coast cut at the meridian."""
    g = LatLonGrid(2.0)
    mask = idealized_land_mask(g)
    row = mask[int(np.flatnonzero(g.lat == 5.0)[0])]
    land = [357.0, 359.0, 1.0, 3.0, 41.0, 43.0]
    assert row[np.isin(g.lon, land)].all()
    assert not row[np.isin(g.lon, [351.0, 49.0])].any()


def test_heat_capacities_are_50_m_of_sea_water_and_2_m_of_water() -> None:
    """The documented columns: 50 m of sea water (1025 kg m⁻³ × 3985 J kg⁻¹ K⁻¹) and 2 m of
    fresh water (1000 × 4186); the seasonal cycle's land/sea contrast is their ratio."""
    p = EBMParams()
    assert p.heat_capacity_ocean == pytest.approx(50.0 * 1025.0 * 3985.0, rel=1e-15)
    assert p.heat_capacity_land == pytest.approx(2.0 * 1000.0 * 4186.0, rel=1e-15)


def test_ice_is_compared_with_the_brightest_open_surface_for_either_sign_of_the_p2_term() -> None:
    """With a negative ``albedo_p2`` the brightest open surface is at the equator
    (``P2 = -1/2``): 0.3 + 0.1 = 0.4, so ice of 0.39 is refused and of 0.41 accepted."""
    brightest = 0.3 + max(-0.2 * p2 for p2 in (-0.5, 1.0))
    assert brightest == pytest.approx(0.4)
    with pytest.raises(ValueError, match="albedo_ice"):
        EBMParams(albedo_free=0.3, albedo_p2=-0.2, albedo_ice=0.39)
    EBMParams(albedo_free=0.3, albedo_p2=-0.2, albedo_ice=0.41)


def test_steps_in_years_cover_a_fraction_of_a_year() -> None:
    """A whole number of steps that covers the time: the first count whose steps reach it
    (2239 steps a year at 4°: 0.01 years is 22.39 steps, so 23, not the nearest 22)."""
    p = EBMParams().resolved(LatLonGrid(4.0))
    assert p.steps_in_years(0.01) == 23
    for years in (0.01, 0.3, 1.0 / 7.0, 2.5, 1.0):
        n = p.steps_in_years(years)
        assert n * p.steps_per_year**-1 >= years - 1e-12 > (n - 1) / p.steps_per_year


def test_an_initial_state_one_row_or_two_columns_short_of_the_sphere_is_refused(
    tmp_path: Path,
) -> None:
    """The bounds of :func:`check_initial`, at a 10° field: rows must come within one row
    spacing of each pole (without its south row the field starts at 75°S, 15° from the pole)
    and the gap around the turn may be at most two column spacings (dropping two columns
    leaves 30°); a cell at exactly absolute zero is refused too. The workflow tests refuse
    half a sphere, which any looser bound would refuse as well."""
    from openclaw_dask.workflows.ops.climate import ABSOLUTE_ZERO, check_initial

    grid = LatLonGrid(10.0)

    def store(name: str, field: np.ndarray, lat: np.ndarray, lon: np.ndarray) -> str:
        path = tmp_path / name / "final.zarr"
        temperature = xr.DataArray(field, dims=("lat", "lon"), attrs={"units": "degC"})
        xr.Dataset({"T": temperature}, coords={"lat": lat, "lon": lon}).to_zarr(
            path, consolidated=False
        )
        return str(path)

    warm = np.full(grid.shape, 10.0)
    frozen = warm.copy()
    frozen[4, 7] = ABSOLUTE_ZERO
    refused = {
        store("south", warm[1:], grid.lat[1:], grid.lon): "from latitude -75 to 85",
        store("north", warm[:-1], grid.lat[:-1], grid.lon): "from latitude -85 to 75",
        store("gap", warm[:, 2:], grid.lat, grid.lon[2:]): "from longitude 25 to 355",
        store("zero", frozen, grid.lat, grid.lon): "at or below absolute zero in 1 of 648",
    }
    for path, said in refused.items():
        with pytest.raises(ValueError, match=said):
            check_initial(path)
    check_initial(store("one", warm[:, 1:], grid.lat, grid.lon[1:]))  # 20°: two spacings


def test_the_coldest_start_puts_the_poles_at_absolute_zero_and_is_refused() -> None:
    """The start profile is ``T0 + 20 (1/3 − x²)``, so its poles are 40/3 K below ``T0``: the
    coldest ``initial_temperature`` is −273.15 + 40/3 °C, where the poles would be at
    absolute zero itself, which an initial store's cell may not be either; a hair above it
    is accepted."""
    from openclaw_dask.workflows.ops.climate import COLDEST_START, EnergyBalanceModel

    assert COLDEST_START == pytest.approx(-273.15 + 40.0 / 3.0, abs=1e-12)
    refused = EnergyBalanceModel.check_args({"initial_temperature": COLDEST_START})
    assert "initial_temperature" in refused
    assert EnergyBalanceModel.check_args({"initial_temperature": COLDEST_START + 1e-9}) == {}


def test_a_steps_insolation_is_that_of_the_steps_start() -> None:
    """Step ``k`` is forced by the sun at ``t = k dt`` from 1 January 00:00 (a step's start,
    as the checkpoints and the month bounds count it): at the equator the daily mean is
    ``(4/π) cos δ`` with ``sin δ = sin ε sin(2π (t − t_eq) / year)``, δ ≈ −23° at step 0."""
    p = EBMParams().resolved(LatLonGrid(4.0))
    assert p.dt is not None
    equator_sin, equator_cos = np.zeros(1), np.ones(1)
    for step in (0, 1, 700, 2238):
        t = step * p.dt
        longitude = 2 * math.pi * (t - 79 * 86400.0) / (365.25 * 86400.0)
        delta = math.asin(math.sin(math.radians(23.44)) * math.sin(longitude))
        s = insolation_factor(p, equator_sin, equator_cos, step)
        assert s[0] == pytest.approx(4 / math.pi * math.cos(delta), rel=1e-13), step
        if step == 0:
            assert math.degrees(delta) == pytest.approx(-23.0, abs=0.2)


def test_dt_safety_may_be_the_whole_limit_but_not_more_nor_nothing() -> None:
    """``dt_safety`` is in (0, 1]: 1 steps at the stability limit itself (the largest
    automatic step, which the limit still allows), 0 or above 1 is refused."""
    g = LatLonGrid(4.0)
    p = EBMParams(dt_safety=1.0).resolved(g)
    limit = max_stable_dt(p, g, p.min_heat_capacity)
    assert p.dt is not None and 0.999 * limit < p.dt <= limit
    for bad in (0.0, 1.01):
        with pytest.raises(ValueError, match="dt_safety must be in"):
            EBMParams(dt_safety=bad)
