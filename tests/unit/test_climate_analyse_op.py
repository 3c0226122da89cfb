"""``climate.analyse`` on a climate that is not symmetric about the equator.

The model's own climates are nearly symmetric (the idealised continents change the heat
capacity, not the albedo), so a hemisphere swapped in the recorded ice edges, or latitude
reversed in the zonal-mean plot, would hardly show in a model run. Here the monthly means are
given: warmest at 11.5°N, with the -10 °C ice threshold crossed at 58.2°N and 26.7°S.
"""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib.image
import numpy as np
import pytest
import xarray as xr

from openclaw_dask.config import load_config
from openclaw_dask.workflows import zarrio
from openclaw_dask.workflows.climate import LatLonGrid
from openclaw_dask.workflows.context import StepContext
from openclaw_dask.workflows.ops import climate as climate_ops
from openclaw_dask.workflows.ops.climate import TIME_ATTRS, analyse

PEAK, WIDTH = 0.2, 0.65  # in x = sin(lat): T = 20 - 30 ((x - PEAK) / WIDTH)^2


def _monthly(grid: LatLonGrid) -> xr.Dataset:
    x = grid.sin_lat
    profile = 20.0 - 30.0 * ((x - PEAK) / WIDTH) ** 2
    T = np.broadcast_to(profile[None, :, None], (12, *grid.shape)).copy()
    days = (np.arange(12) + 0.5) * 365.25 / 12
    return xr.Dataset(
        {"T": (("time", "lat", "lon"), T, {"units": "degC"})},
        coords={"time": ("time", days, TIME_ATTRS), "lat": grid.lat, "lon": grid.lon},
        attrs={"resolution": grid.resolution, "ice_threshold": -10.0},
    )


def test_analyse_keeps_each_hemisphere_its_own(tmp_path: Path) -> None:
    grid = LatLonGrid(4.0)
    inputs = {"simulate": {"monthly": _monthly(grid)}}
    ctx = StepContext(
        "analyse", load_config(None, use_search_path=False), None, tmp_path, {}, inputs
    )
    out = analyse(ctx)
    north, south = (math.degrees(math.asin(PEAK + s * WIDTH)) for s in (1, -1))
    assert north == pytest.approx(58.2, abs=0.1) and south == pytest.approx(-26.7, abs=0.1)
    assert ctx.metrics["ice_edge_north"] == pytest.approx(north, abs=0.5)
    assert ctx.metrics["ice_edge_south"] == pytest.approx(south, abs=0.5)
    edges = out["ice_edge"]
    assert edges["north"].values == pytest.approx([ctx.metrics["ice_edge_north"]])
    assert edges["south"].values == pytest.approx([ctx.metrics["ice_edge_south"]])
    zonal = out["zonal_mean"]["T"].values[-1]
    assert grid.lat[np.argmax(zonal)] == 12.0  # the row of 10-14°N

    # the zonal-mean plot: latitude left to right, so its warmest point is right of the middle
    # of the curve (11.5°N of -88..88° is 0.565 of the way), not left of it (0.435)
    assert "zonal_mean.png" in ctx.metrics["plots"]
    rgb = matplotlib.image.imread(tmp_path / "plots" / "zonal_mean.png")[..., :3]
    line = np.array([0x1F, 0x77, 0xB4]) / 255  # matplotlib's first colour: the profile
    rows, cols = np.nonzero(np.abs(rgb - line).max(axis=-1) < 0.1)
    assert rows.size > 100
    top = cols[rows <= rows.min() + 1]
    where = (top.mean() - cols.min()) / (cols.max() - cols.min())
    assert 0.53 < where < 0.6, where


def test_analyse_reads_whole_years_a_task_from_a_store_of_a_month_a_chunk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The model writes a month a chunk: read so, 150 years at 2° were a graph of 10,257 tasks
    (22-34 s); whole years a task, up to READ_BYTES, and a year larger than that as stored."""
    grid = LatLonGrid(4.0)
    months = xr.concat([_monthly(grid)] * 10, dim="time")  # 10 years
    months["time"] = ("time", np.arange(120) * 30.0 + 15, TIME_ATTRS)
    months.chunk(time=1).to_zarr(tmp_path / "monthly.zarr", zarr_format=3, consolidated=False)
    stored = zarrio.open_output(tmp_path / "monthly.zarr")
    assert stored["T"].chunks[0] == (1,) * 120

    year = 12 * grid.size * 8
    monkeypatch.setattr(climate_ops, "READ_BYTES", 4 * year + 1)
    read = climate_ops._by_years(stored)
    assert read["T"].chunks[0] == (48, 48, 24)  # whole years, 4 a task
    assert read["T"].chunks[1:] == stored["T"].chunks[1:]
    np.testing.assert_array_equal(read["T"].values, months["T"].values)

    monkeypatch.setattr(climate_ops, "READ_BYTES", year - 1)  # a year is larger: as stored
    assert climate_ops._by_years(stored) is stored
    in_memory = _monthly(grid)  # not read from a store: as it is
    assert climate_ops._by_years(in_memory) is in_memory
    # another model's store in chunks of 5 months: 48 months a task would split them
    monkeypatch.setattr(climate_ops, "READ_BYTES", 4 * year + 1)
    months.chunk(time=5).to_zarr(tmp_path / "fives.zarr", zarr_format=3, consolidated=False)
    fives = zarrio.open_output(tmp_path / "fives.zarr")
    assert climate_ops._by_years(fives) is fives


def test_a_store_of_no_months_is_said_as_less_than_a_year(tmp_path: Path) -> None:
    """Reading whole years a task had first measured a month by its first one: IndexError."""
    grid = LatLonGrid(4.0)
    # (no time coordinate: xarray cannot decode an empty one)
    empty = _monthly(grid).isel(time=slice(0, 0)).drop_vars("time")
    empty.to_zarr(tmp_path / "monthly.zarr", zarr_format=3, consolidated=False)
    inputs = {"simulate": {"monthly": zarrio.open_output(tmp_path / "monthly.zarr")}}
    ctx = StepContext(
        "analyse", load_config(None, use_search_path=False), None, tmp_path, {}, inputs
    )
    with pytest.raises(ValueError, match="less than one model year of monthly means"):
        analyse(ctx)
