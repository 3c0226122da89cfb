"""Lat-lon fields a climate run reads from the user's Zarr stores: what they must hold.

``climate.ebm`` starts from another run's temperature (``params.initial``) and
``climate.forcing`` takes a land mask of the user's (``params.land_mask``); both are read from
a Zarr store on disk (nothing is downloaded) and regridded onto the model grid, so both must
cover the whole sphere, in increasing coordinates, with a finite value in every cell.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import xarray as xr

from openclaw_dask.config.errors import nearby
from openclaw_dask.workflows.climate import LatLonGrid, regrid

__all__ = [
    "bad_cells",
    "count",
    "coverage_problem",
    "land_mask_field",
    "land_mask_store",
    "order_problem",
    "read_land_mask",
    "zarr_node",
]

#: The variable a land-mask store holds (as every climate run's ``forcing.zarr`` does).
LAND_MASK = "land_mask"


def count(n: int, thing: str) -> str:
    """``"1 row"``, ``"3 rows"``."""
    return f"{n} {thing}" + ("" if n == 1 else "s")


def coverage_problem(store: Path, name: str, lat: np.ndarray, lon: np.ndarray) -> str | None:
    """Why field ``name`` of ``store`` on ``lat`` x ``lon`` does not cover the sphere, or
    ``None``: :func:`~openclaw_dask.workflows.climate.regrid` would fill what is missing with
    the nearest row's or column's value."""
    dlat = float(np.diff(lat).max()) if lat.size > 1 else 0.0
    dlon = float(np.diff(lon).max()) if lon.size > 1 else 0.0
    whole = "expected a field over the whole sphere"
    # every point of the sphere within one spacing of the field's rows and columns
    if lat.size < 2 or lat[0] - dlat > -90 + 1e-6 or lat[-1] + dlat < 90 - 1e-6:
        return (
            f"{store}: {name} has {count(lat.size, 'row')}, from latitude {lat[0]:g} to "
            f"{lat[-1]:g}; {whole} (rows within one row spacing of each pole)"
        )
    if lon.size < 2 or (360 - (lon[-1] - lon[0])) / 2 > dlon + 1e-6:
        return (
            f"{store}: {name} has {count(lon.size, 'column')}, from longitude {lon[0]:g} to "
            f"{lon[-1]:g}; {whole} (no gap around the turn wider than two column spacings)"
        )
    return None


def order_problem(name: str, lat: np.ndarray, lon: np.ndarray) -> str | None:
    """Why the coordinates of field ``name`` are not in the order regridding reads, or
    ``None``: both increasing, ``lon`` within one turn. Says which coordinate, what it holds
    and the xarray call that fixes it (ERA5's latitudes run north to south; many maps repeat
    the seam column at 360°)."""
    for axis, values in (("lat", lat), ("lon", lon)):
        steps = np.diff(values)
        if values.size > 1 and np.all(steps < 0):
            return (
                f"{name}'s {axis} decreases, from {values[0]:g} to {values[-1]:g}; expected "
                f"increasing {axis} (xarray: ds.sortby('{axis}'))"
            )
        if not np.all(steps > 0):
            i = int(np.argmax(steps <= 0))
            return (
                f"{name}'s {axis} does not increase from {values[i]:g} to {values[i + 1]:g}; "
                f"expected strictly increasing {axis} (xarray: ds.sortby('{axis}'))"
            )
    if lon[-1] - lon[0] >= 360:
        return (
            f"{name}'s lon spans {lon[0]:g} to {lon[-1]:g}, a whole turn or more (a repeated seam "
            "column?); expected under 360 degrees (xarray: ds.isel(lon=slice(None, -1)))"
        )
    return None


def zarr_node(folder: Path) -> str | None:
    """The ``node_type`` of a zarr v3 ``folder`` (``"group"`` or ``"array"``), or ``None``."""
    try:
        node = json.loads((folder / "zarr.json").read_text()).get("node_type")
    except (OSError, ValueError, AttributeError):
        return None
    return node if isinstance(node, str) else None


def land_mask_store(path: str) -> Path:
    """The absolute path of the store ``path`` names: itself, or the ``forcing.zarr`` of the
    run directory it names (another climate run's mask, as ``params.initial`` takes a run
    directory for its ``final.zarr``)."""
    store = Path(path).expanduser().resolve()
    own = (store / "zarr.json").is_file() or (store / ".zgroup").is_file()
    if not own and (store / "forcing.zarr").is_dir():
        return store / "forcing.zarr"
    return store


def land_mask_field(path: str) -> xr.DataArray:
    """The ``land_mask(lat, lon)`` of the Zarr store at ``path``, checked (values read).

    Land is 1 and ocean 0; fractions between (a coarser mask's land share) are allowed, and
    a cell of the model grid is land where the regridded value is at least a half. A run
    directory stands for its ``forcing.zarr`` (:func:`land_mask_store`).

    Raises
    ------
    ValueError
        Saying what ``path`` holds and what was expected.
    """
    store = land_mask_store(path)
    expected = f"expected a Zarr store with {LAND_MASK}(lat, lon): 1 land, 0 ocean"
    if not store.is_dir():
        where = "" if Path(path).expanduser().is_absolute() else f" (here: {store})"
        raise ValueError(
            f"{path}: no such Zarr store{where}; {expected}" + nearby(path, folders=True)
        )
    # a run directory, or another of its stores: the forcing step's mask is in forcing.zarr
    forcing = next(
        (f for f in (store / "forcing.zarr", store.parent / "forcing.zarr") if f.is_dir()), None
    )
    hint = f"; did you mean '{forcing}'?" if forcing and forcing != store else ""
    if (store / ".zarray").is_file() or zarr_node(store) == "array":
        # zarr's own "An array already exists in store ... at path ." named no fix
        raise ValueError(
            f"{path}: a Zarr array, not a store; {expected}; did you mean '{store.parent}'?"
        )
    if not (store / "zarr.json").is_file() and not (store / ".zgroup").is_file():
        raise ValueError(f"{path}: not a Zarr store (no zarr.json); {expected}{hint}")
    try:
        mask = xr.open_zarr(store, consolidated=False)[LAND_MASK]
    except (KeyError, OSError, ValueError) as exc:
        found = f"no {LAND_MASK} variable" if isinstance(exc, KeyError) else str(exc)
        raise ValueError(f"{path}: {found}; {expected}{hint}") from None
    lat, lon = (mask[c].values if c in mask.coords else None for c in ("lat", "lon"))
    if mask.dims != ("lat", "lon") or lat is None or lon is None:
        raise ValueError(f"{path}: {LAND_MASK} has dimensions {mask.dims}; {expected}, with coords")
    order = order_problem(LAND_MASK, lat, lon)
    if order:
        raise ValueError(f"{path}: {order}")
    problem = coverage_problem(store, LAND_MASK, lat, lon)
    if problem:
        raise ValueError(problem)
    values = np.asarray(mask.values, dtype=np.float64)
    bad = ~(np.isfinite(values) & (values >= 0.0) & (values <= 1.0))
    if bad.any():
        raise ValueError(
            f"{path}: {LAND_MASK} is outside 0 to 1 or not a number "
            f"{bad_cells(bad, values, lat, lon)}; expected 1 for land, 0 for ocean (or a land "
            "fraction)"
        )
    return mask


def bad_cells(bad: np.ndarray, values: np.ndarray, lat: np.ndarray, lon: np.ndarray) -> str:
    """``"in 2 of 648 cells (first: nan at lat -55, lon 55)"``: which cells ``bad`` marks."""
    j, i = np.argwhere(bad)[0]
    return (
        f"in {int(bad.sum())} of {count(values.size, 'cell')} (first: {values[j, i]:g} at lat "
        f"{lat[j]:g}, lon {lon[i]:g})"
    )


def read_land_mask(path: str, grid: LatLonGrid) -> np.ndarray:
    """The land mask at ``path`` on ``grid``: bilinear, land where at least a half.

    Parameters
    ----------
    path : str
        A Zarr store holding ``land_mask(lat, lon)`` (:func:`land_mask_field`).
    grid : LatLonGrid
        The model grid.

    Returns
    -------
    numpy.ndarray of bool, shape ``grid.shape``
    """
    mask = land_mask_field(path)
    values = np.asarray(mask.values, dtype=np.float64)
    return regrid(values, mask["lat"].values, mask["lon"].values, grid) >= 0.5
