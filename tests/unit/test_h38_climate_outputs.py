"""What a climate scientist reads in the climate workflow's stores: every variable and
coordinate says its units and what it is (``long_name``), as CF asks and xarray's plots use."""

from __future__ import annotations

from pathlib import Path

import matplotlib.image
import numpy as np
import xarray as xr

from openclaw_dask.config import load_config
from openclaw_dask.workflows.climate import LatLonGrid
from openclaw_dask.workflows.context import StepContext
from openclaw_dask.workflows.ops.climate import TIME_ATTRS, analyse, forcing


def _unlabelled(ds: xr.Dataset) -> list[str]:
    """The variables and coordinates of ``ds`` without units or without a long_name."""
    return [
        f"{name}: {sorted(set(('units', 'long_name')) - set(var.attrs))}"
        for name, var in {**ds.data_vars, **ds.coords}.items()
        if not {"units", "long_name"} <= set(var.attrs)
    ]


def test_the_forcing_labels_every_field(tmp_path: Path) -> None:
    """``heat_capacity`` had units but no long_name (xarray's plot of it said only
    "heat_capacity [J m-2 K-1]")."""
    config = load_config(None, use_search_path=False)
    made = forcing(StepContext("forcing", config, None, tmp_path, {}), resolution=10.0)
    assert _unlabelled(made["forcing"]) == []
    assert made["forcing"]["heat_capacity"].attrs["long_name"] == "column heat capacity"


def test_the_analysis_labels_every_field(tmp_path: Path) -> None:
    """``ice_edge``'s ``north`` and ``south`` had units but no long_name."""
    grid = LatLonGrid(10.0)
    profile = 20.0 - 40.0 * grid.sin_lat**2
    days = (np.arange(12) + 0.5) * 365.25 / 12
    monthly = xr.Dataset(
        {"T": (("time", "lat", "lon"), np.broadcast_to(profile[None, :, None], (12, *grid.shape)))},
        coords={"time": ("time", days, TIME_ATTRS), "lat": grid.lat, "lon": grid.lon},
        attrs={"resolution": grid.resolution, "ice_threshold": -10.0},
    )
    monthly["T"].attrs.update(units="degC", long_name="monthly-mean surface temperature")
    for c, units in (("lat", "degrees_north"), ("lon", "degrees_east")):
        monthly[c].attrs.update(units=units, long_name=c)
    inputs = {"simulate": {"monthly": monthly}}
    config = load_config(None, use_search_path=False)
    out = analyse(StepContext("analyse", config, None, tmp_path, {}, inputs))
    assert {name: _unlabelled(ds) for name, ds in out.items()} == {name: [] for name in out}
    edges = out["ice_edge"]
    assert edges["north"].attrs["long_name"] == "northern ice edge latitude"
    assert edges["south"].attrs["long_name"] == "southern ice edge latitude"


def test_the_temperature_map_is_white_at_freezing(tmp_path: Path) -> None:
    """The annual-mean map's diverging colours put white at 0 °C: scaled to the field's range
    they put it at the range's middle (7 °C for the present climate), and 0 °C looked frozen
    solid. A field at 0 °C north of the equator and 20 °C south of it: the northern half of
    the map is RdBu_r's white, (0.969, 0.969, 0.969), not its darkest blue."""
    grid = LatLonGrid(4.0)
    profile = np.where(grid.lat > 0, 0.0, 20.0)
    days = (np.arange(12) + 0.5) * 365.25 / 12
    monthly = xr.Dataset(
        {"T": (("time", "lat", "lon"), np.broadcast_to(profile[None, :, None], (12, *grid.shape)))},
        coords={"time": ("time", days, TIME_ATTRS), "lat": grid.lat, "lon": grid.lon},
        attrs={"resolution": grid.resolution, "ice_threshold": -10.0},
    )
    config = load_config(None, use_search_path=False)
    inputs = {"simulate": {"monthly": monthly}}
    analyse(StepContext("analyse", config, None, tmp_path, {}, inputs))
    rgb = matplotlib.image.imread(tmp_path / "plots" / "annual_mean_map.png")[..., :3]
    white = np.all(np.abs(rgb - 0.969) < 0.01, axis=-1).sum()
    # the map is ~600 x 300 pixels at dpi 100: its northern half is ~90,000 of them
    assert white > 50_000, white


def test_the_global_mean_series_keeps_the_monthly_time_axis_encoding(tmp_path: Path) -> None:
    """global_mean.zarr's ``time`` was written "minutes since 0001-01-16 05:15" (xarray's
    choice for the dates) beside monthly.zarr's "days since 0001-01-01": the same dates, two
    time axes for anyone reading the numbers without decoding them."""
    from openclaw_dask.workflows.zarrio import write

    grid = LatLonGrid(10.0)
    monthly_path = tmp_path / "monthly.zarr"
    days = (np.arange(12) + 0.5) * 365.25 / 12
    field = np.broadcast_to((20.0 - 40.0 * grid.sin_lat**2)[None, :, None], (12, *grid.shape))
    xr.Dataset(
        {"T": (("time", "lat", "lon"), field, {"units": "degC"})},
        coords={"time": ("time", days, TIME_ATTRS), "lat": grid.lat, "lon": grid.lon},
        attrs={"resolution": grid.resolution, "ice_threshold": -10.0},
    ).to_zarr(monthly_path, consolidated=False)
    monthly = xr.open_zarr(monthly_path, consolidated=False)  # dates, as the runner reads it
    config = load_config(None, use_search_path=False)
    inputs = {"simulate": {"monthly": monthly}}
    out = analyse(StepContext("analyse", config, None, tmp_path, {}, inputs))
    write(out["global_mean"], tmp_path / "global_mean.zarr", config).compute()
    raw = xr.open_zarr(tmp_path / "global_mean.zarr", decode_times=False, consolidated=False)
    assert raw["time"].attrs["units"] == TIME_ATTRS["units"]
    assert raw["time"].attrs["calendar"] == TIME_ATTRS["calendar"]
    assert np.array_equal(raw["time"].values, days)
