"""Regular latitude-longitude grid on the unit sphere, and an idealised continent layout.

Cells are centred: at resolution ``r`` degrees there are ``180/r`` rows from the south pole to
the north pole and ``360/r`` columns eastward from 0°E. Row ``j`` spans the latitudes
``[-90 + j r, -90 + (j+1) r]``. The finite-volume metric uses the exact cell areas on the unit
sphere, ``Δλ · (sin φ_{j+1/2} − sin φ_{j−1/2})``, so area-weighted sums are exact quadratures of
piecewise-constant fields and the global weights add up to one.

Everything here is host-side numpy computed once per grid; the kernels copy what they need to
the device (:func:`~openclaw_dask.workflows.climate.physics.make_band_operators`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

__all__ = ["LatLonGrid", "idealized_land_mask"]


def _nearest_resolutions(resolution: float) -> str:
    """``"; did you mean 7.2 or 6 (25 or 30 rows)?"``: the nearest coarser and finer
    resolutions that divide 180° with at most three decimals (180° / n for the n that divide
    180,000)."""
    rows = 180.0 / resolution
    tidy = [n for n in range(2, 180_001) if 180_000 % n == 0]
    coarser = [n for n in tidy if n < rows][-1:]
    finer = [n for n in tidy if n > rows][:1]
    near = coarser + finer
    return (
        "; did you mean "
        + " or ".join(f"{180 / n:g}" for n in near)
        + f" ({' or '.join(map(str, near))} rows)?"
    )


@dataclass(frozen=True)
class LatLonGrid:
    """A regular lat-lon grid with cell centres, resolution in degrees.

    Parameters
    ----------
    resolution : float
        Cell size in degrees; must divide 180 exactly (2.0 gives 90 × 180 cells).

    Examples
    --------
    >>> g = LatLonGrid(2.0)
    >>> g.shape
    (90, 180)
    """

    resolution: float

    def __post_init__(self) -> None:
        if not self.resolution > 0:
            raise ValueError(f"resolution must be > 0 degrees, got {self.resolution!r}")
        nlat = round(180.0 / self.resolution)
        if nlat < 2 or abs(nlat * self.resolution - 180.0) > 1e-9:
            raise ValueError(
                f"resolution {self.resolution!r}° does not divide 180°"
                + _nearest_resolutions(self.resolution)
            )

    # -- sizes ------------------------------------------------------------------------------
    @property
    def nlat(self) -> int:
        """Number of latitude rows."""
        return round(180.0 / self.resolution)

    @property
    def nlon(self) -> int:
        """Number of longitude columns."""
        return 2 * self.nlat

    @property
    def shape(self) -> tuple[int, int]:
        """``(nlat, nlon)``."""
        return (self.nlat, self.nlon)

    @property
    def size(self) -> int:
        """Number of cells."""
        return self.nlat * self.nlon

    @property
    def dlat(self) -> float:
        """Row height Δφ in radians."""
        return np.pi / self.nlat

    @property
    def dlon(self) -> float:
        """Column width Δλ in radians."""
        return 2.0 * np.pi / self.nlon

    # -- coordinates ------------------------------------------------------------------------
    @cached_property
    def lat(self) -> np.ndarray:
        """Cell-centre latitudes in degrees, south to north, shape ``(nlat,)``."""
        return -90.0 + (np.arange(self.nlat) + 0.5) * self.resolution

    @cached_property
    def lon(self) -> np.ndarray:
        """Cell-centre longitudes in degrees east, ``[0, 360)``, shape ``(nlon,)``."""
        return (np.arange(self.nlon) + 0.5) * self.resolution

    @cached_property
    def lat_edges(self) -> np.ndarray:
        """Row-edge latitudes in degrees, shape ``(nlat + 1,)``, from -90 to 90."""
        return -90.0 + np.arange(self.nlat + 1) * self.resolution

    @cached_property
    def phi(self) -> np.ndarray:
        """Cell-centre latitudes in radians."""
        return np.deg2rad(self.lat)

    @cached_property
    def sin_lat(self) -> np.ndarray:
        """``sin φ`` at cell centres (North's ``x``)."""
        return np.sin(self.phi)

    @cached_property
    def cos_lat(self) -> np.ndarray:
        """``cos φ`` at cell centres."""
        return np.cos(self.phi)

    @cached_property
    def cos_edges(self) -> np.ndarray:
        """``cos φ`` at the row edges; exactly zero at the two poles (no flux through them)."""
        c = np.cos(np.deg2rad(self.lat_edges))
        c[0] = 0.0
        c[-1] = 0.0
        return c

    @cached_property
    def dx(self) -> np.ndarray:
        """Row width in ``x = sin φ``: ``sin φ_{j+1/2} − sin φ_{j−1/2}`` (cell area / Δλ)."""
        s = np.sin(np.deg2rad(self.lat_edges))
        s[0] = -1.0
        s[-1] = 1.0
        return np.diff(s)

    @cached_property
    def cell_area(self) -> np.ndarray:
        """Area of one cell of each row on the unit sphere (sr), shape ``(nlat,)``."""
        return self.dx * self.dlon

    @cached_property
    def area_weights(self) -> np.ndarray:
        """Per-cell area fraction of each row, shape ``(nlat,)``; ``nlon * sum`` equals 1."""
        return self.cell_area / (4.0 * np.pi)

    def meridional_factors(self) -> tuple[np.ndarray, np.ndarray]:
        """Geometric factors of the meridional flux divergence (multiply by ``D``).

        Row ``j`` receives ``D (cN_j (T_{j+1} − T_j) − cS_j (T_j − T_{j−1}))`` with
        ``cN_j = cos φ_{j+1/2} / (Δφ dx_j)`` and ``cS_j = cos φ_{j−1/2} / (Δφ dx_j)``; the pole
        faces have exactly zero factors.

        Returns
        -------
        (cN, cS) : tuple of numpy.ndarray, each shape ``(nlat,)``
        """
        c = self.cos_edges / self.dlat
        return c[1:] / self.dx, c[:-1] / self.dx

    def row_slice_weights(self, start: int, stop: int) -> np.ndarray:
        """Area fractions of rows ``start:stop`` as a column ``(stop - start, 1)``."""
        return self.area_weights[start:stop, None]


# Idealised continents: ellipses in (lat, lon) degrees plus a polar cap. The shapes are fixed in
# degrees, so every resolution sees the same geography up to the cell size, and nothing is read
# from disk or the network. Centres and radii are loosely modelled on the real continents only
# to give a realistic land fraction (~0.3) and hemispheric asymmetry.
_CONTINENTS: tuple[tuple[float, float, float, float], ...] = (
    # (centre lat, centre lon east, half-height deg lat, half-width deg lon)
    (50.0, 95.0, 23.0, 75.0),  # "Eurasia"
    (5.0, 20.0, 33.0, 25.0),  # "Africa"
    (48.0, 260.0, 24.0, 38.0),  # "North America"
    (-15.0, 300.0, 28.0, 18.0),  # "South America"
    (-25.0, 134.0, 12.0, 22.0),  # "Australia"
    (72.0, 318.0, 10.0, 18.0),  # "Greenland"
)
_ANTARCTIC_EDGE = -70.0  # land poleward of 70°S


def idealized_land_mask(grid: LatLonGrid) -> np.ndarray:
    """Deterministic idealised land/sea mask (``True`` = land), shape ``grid.shape``.

    Six elliptical continents plus an Antarctic cap south of 70°S, evaluated at cell centres.
    The land fraction is about 0.3 at any resolution.

    Parameters
    ----------
    grid : LatLonGrid
        The grid.

    Returns
    -------
    numpy.ndarray of bool
    """
    lat = grid.lat[:, None]
    lon = grid.lon[None, :]
    land = np.broadcast_to(lat < _ANTARCTIC_EDGE, grid.shape).copy()
    for clat, clon, hlat, hlon in _CONTINENTS:
        # shortest signed longitude difference, so shapes wrap across 0°E
        dlon = (lon - clon + 180.0) % 360.0 - 180.0
        land |= ((lat - clat) / hlat) ** 2 + (dlon / hlon) ** 2 <= 1.0
    return land


def regrid(field: np.ndarray, lat: np.ndarray, lon: np.ndarray, grid: LatLonGrid) -> np.ndarray:
    """Bilinear interpolation of a lat-lon field onto ``grid``'s cell centres.

    Periodic in longitude; beyond the outermost source rows (towards the poles) the nearest
    row's value. Meant for initial states (a coarser run's equilibrium as a finer run's start),
    so it conserves nothing exactly.

    Parameters
    ----------
    field : numpy.ndarray, shape (len(lat), len(lon))
    lat, lon : numpy.ndarray
        Increasing cell-centre coordinates of ``field`` in degrees (``lon`` within one turn).
    grid : LatLonGrid
        The target grid.

    Returns
    -------
    numpy.ndarray, shape ``grid.shape``
    """
    field = np.asarray(field, dtype=np.float64)
    if field.shape != (lat.size, lon.size):
        raise ValueError(f"a field of shape {field.shape} on {lat.size} x {lon.size} coordinates")
    # along longitude first, row by row (np.interp wraps with period), then along latitude
    rows = np.stack([np.interp(grid.lon, lon, row, period=360.0) for row in field])
    return np.stack([np.interp(grid.lat, lat, column) for column in rows.T], axis=1)
