"""A land mask of the user's, read from a real Zarr store: regridded, and refused in one line
when it is not one (``params.land_mask`` of ``workflows/climate.yaml``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from openclaw_dask.workflows.climate import LatLonGrid
from openclaw_dask.workflows.ops.climate import initial_field
from openclaw_dask.workflows.ops.fields import land_mask_field, land_mask_store, read_land_mask


def write_mask(path: Path, values: np.ndarray, lat: np.ndarray, lon: np.ndarray) -> str:
    """``values`` as ``land_mask(lat, lon)`` in a Zarr store at ``path``."""
    xr.Dataset({"land_mask": (("lat", "lon"), values)}, coords={"lat": lat, "lon": lon}).to_zarr(
        path, zarr_format=3, consolidated=False
    )
    return str(path)


def one_degree(tmp_path: Path, values: np.ndarray | None = None, name: str = "m.zarr") -> str:
    grid = LatLonGrid(1.0)
    arctic = (grid.lat[:, None] > 60) & np.ones(grid.shape, dtype=bool)
    chosen = arctic.astype(np.int8) if values is None else values
    return write_mask(tmp_path / name, chosen, grid.lat, grid.lon)


def test_a_one_degree_mask_is_regridded_onto_the_model_grid(tmp_path: Path) -> None:
    """An Arctic continent north of 60° on a 1° grid lands on the 4° grid's rows from 60°
    on, on every column: the row centred on 60° lies half on land (a half is land)."""
    mask = read_land_mask(one_degree(tmp_path), LatLonGrid(4.0))
    grid = LatLonGrid(4.0)
    assert mask.shape == grid.shape and mask.dtype == bool
    land_rows = grid.lat[mask.all(axis=1)]
    assert np.array_equal(land_rows, grid.lat[grid.lat >= 60])
    assert not mask[grid.lat < 60].any()


def test_another_run_s_forcing_store_is_a_mask_and_fractions_go_to_the_majority(
    tmp_path: Path,
) -> None:
    """An int8 mask with flags (what ``forcing.zarr`` holds) reads as it is at its own grid;
    a land fraction of a half or more is land."""
    grid = LatLonGrid(4.0)
    rng = np.random.default_rng(3)
    fraction = rng.uniform(0.0, 1.0, grid.shape)
    path = write_mask(tmp_path / "f.zarr", fraction, grid.lat, grid.lon)
    assert np.array_equal(read_land_mask(path, grid), fraction >= 0.5)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ("nan", "land_mask is outside 0 to 1 or not a number in 1 of 64800 cells (first: nan"),
        ("two", "land_mask is outside 0 to 1 or not a number in 1 of 64800 cells (first: 2 "),
        ("north-only", "land_mask has 90 rows, from latitude 0.5 to 89.5; expected a field"),
        ("lon-gap", "land_mask has 180 columns, from longitude 0.5 to 179.5; expected a field"),
        ("no-variable", "no land_mask variable; expected a Zarr store with land_mask(lat, lon)"),
        ("time-dim", "land_mask has dimensions ('time', 'lat', 'lon'); expected"),
        ("missing", "no such Zarr store"),
        ("array", "a Zarr array, not a store; expected a Zarr store with land_mask(lat, lon)"),
    ],
)
def test_what_is_not_a_land_mask_is_refused_saying_what_it_holds(
    tmp_path: Path, change: str, expected: str
) -> None:
    grid = LatLonGrid(1.0)
    values = np.zeros(grid.shape)
    if change == "nan":
        values[10, 20] = np.nan
        path = one_degree(tmp_path, values)
    elif change == "two":
        values[10, 20] = 2.0
        path = one_degree(tmp_path, values)
    elif change == "north-only":
        path = write_mask(tmp_path / "n.zarr", values[90:], grid.lat[90:], grid.lon)
    elif change == "lon-gap":
        path = write_mask(tmp_path / "g.zarr", values[:, :180], grid.lat, grid.lon[:180])
    elif change == "no-variable":
        path = str(tmp_path / "v.zarr")
        xr.Dataset({"mask": (("lat", "lon"), values)}).to_zarr(
            path, zarr_format=3, consolidated=False
        )
    elif change == "time-dim":
        path = str(tmp_path / "t.zarr")
        three = xr.DataArray(values[None], dims=("time", "lat", "lon"))
        three = three.assign_coords(lat=grid.lat, lon=grid.lon)
        xr.Dataset({"land_mask": three}).to_zarr(path, zarr_format=3, consolidated=False)
    elif change == "array":
        path = str(Path(one_degree(tmp_path)) / "land_mask")
    else:
        one_degree(tmp_path, name="mask.zarr")
        path = str(tmp_path / "mask.zar")
    with pytest.raises(ValueError) as caught:
        land_mask_field(path)
    message = str(caught.value)
    assert expected in message, message
    if change == "missing":
        assert "did you mean" in message and "mask.zarr" in message, message
    if change == "array":
        assert message.endswith(f"did you mean '{tmp_path / 'm.zarr'}'?"), message


def test_descending_latitudes_and_a_repeated_seam_column_are_named_with_their_fix(
    tmp_path: Path,
) -> None:
    """ERA5's latitudes run north to south and many maps repeat 0° as 360° (a cyclic column):
    both were refused with "lat and lon must increase, lon within one turn", which named
    neither the coordinate at fault, nor what it held, nor the fix (exploratory runs,
    2026-12-06)."""
    grid = LatLonGrid(5.0)
    values = np.zeros(grid.shape)
    north_first = write_mask(tmp_path / "era5.zarr", values[::-1], grid.lat[::-1], grid.lon)
    with pytest.raises(ValueError) as caught:
        land_mask_field(north_first)
    assert str(caught.value) == (
        f"{north_first}: land_mask's lat decreases, from 87.5 to -87.5; expected increasing "
        "lat (xarray: ds.sortby('lat'))"
    )
    seam = np.append(grid.lon - 2.5, 360.0)  # 0, 5, ..., 355, 360
    cyclic = write_mask(tmp_path / "cyclic.zarr", np.zeros((36, 73)), grid.lat, seam)
    with pytest.raises(ValueError) as caught:
        land_mask_field(cyclic)
    assert str(caught.value) == (
        f"{cyclic}: land_mask's lon spans 0 to 360, a whole turn or more (a repeated seam "
        "column?); expected under 360 degrees (xarray: ds.isel(lon=slice(None, -1)))"
    )
    # an initial state (params.initial) is read with the same rule and says the same
    final = tmp_path / "final.zarr"
    temperature = xr.DataArray(values[::-1] + 10.0, dims=("lat", "lon"), attrs={"units": "degC"})
    temperature = temperature.assign_coords(lat=grid.lat[::-1], lon=grid.lon)
    xr.Dataset({"T": temperature}).to_zarr(final, zarr_format=3, consolidated=False)
    with pytest.raises(ValueError) as caught:
        initial_field(str(final))
    assert str(caught.value) == (
        f"{final}: T's lat decreases, from 87.5 to -87.5; expected increasing lat (xarray: "
        "ds.sortby('lat'))"
    )


def test_a_run_directory_stands_for_its_forcing_store(tmp_path: Path) -> None:
    """``params.initial`` takes another run's directory; ``params.land_mask`` answered the same
    directory with "not a Zarr store; did you mean '.../forcing.zarr'?". It now reads that
    run's ``forcing.zarr`` (the store the forcing then records as the mask's source)."""
    run = tmp_path / "runs/climate-ebm/20261206-142020"
    forcing = one_degree(run, name="forcing.zarr")
    assert land_mask_store(str(run)) == Path(forcing)
    assert land_mask_store(forcing) == Path(forcing)  # a store names itself
    grid = LatLonGrid(4.0)
    assert np.array_equal(read_land_mask(str(run), grid), read_land_mask(forcing, grid))
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ValueError, match="not a Zarr store"):
        land_mask_field(str(empty))  # a directory without one is still refused
