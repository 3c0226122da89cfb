"""Model parameters of the energy-balance model, the stable time step and the heat capacity.

The equation (North 1975; North & Coakley 1979; North, Cahalan & Coakley 1981)::

    C(φ,λ) ∂T/∂t = Q s(φ,t) a(φ,T) − (A + B T) + ∇·(D ∇T)

with ``T`` in °C, ``a = 1 − α`` the co-albedo, and the Laplacian on the unit sphere, so that
``D`` is in W m⁻² K⁻¹ and a ``P2(sin φ)`` mode decays at the rate ``(B + 6D)/C``.

References
----------
North, G. R. (1975a): Analytical solution to a simple climate model with diffusive heat
    transport. J. Atmos. Sci. 32, 1301-1307.
North, G. R. (1975b): Theory of energy-balance climate models. J. Atmos. Sci. 32, 2033-2043.
North, G. R. & Coakley, J. A. (1979): Differences between seasonal and mean annual energy
    balance model calculations of climate and climate sensitivity. J. Atmos. Sci. 36, 1189-1204.
North, G. R., Cahalan, R. F. & Coakley, J. A. (1981): Energy balance climate models.
    Rev. Geophys. Space Phys. 19, 91-121.
North, G. R., Mengel, J. G. & Short, D. A. (1983): Simple energy balance model resolving the
    seasons and the continents. J. Geophys. Res. 88, 6576-6586.
Kopp, G. & Lean, J. L. (2011): A new, lower value of total solar irradiance. Geophys. Res.
    Lett. 38, L01706 (S0 = 1360.8 ± 0.5 W m⁻²).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from openclaw_dask.workflows.climate.grid import LatLonGrid, idealized_land_mask

__all__ = ["EBMParams", "heat_capacity", "max_stable_dt"]

SECONDS_PER_DAY = 86400.0
#: Julian year: the model calendar; ``dt`` is snapped to an integer number of steps per year.
YEAR_SECONDS = 365.25 * SECONDS_PER_DAY
#: Volumetric heat capacities (J m⁻³ K⁻¹): sea water (ρ 1025 kg m⁻³, c_p 3985 J kg⁻¹ K⁻¹) and
#: fresh water (1000 kg m⁻³, 4186 J kg⁻¹ K⁻¹) for "metres of water equivalent".
RHO_CP_SEAWATER = 1025.0 * 3985.0
RHO_CP_WATER = 1000.0 * 4186.0

#: The longest automatic time step (s): the sun is a daily mean, and a month's mean needs
#: steps of its own. Stability alone allowed 15 steps a year at 10° without land, and one a
#: year with ``D = 0``; the defaults' steps are shorter (2°: 3533 s, 85988 s without land).
MAX_AUTO_DT = SECONDS_PER_DAY

#: The albedo everywhere when ``ice_albedo`` is off (:meth:`EBMParams.from_switches`).
CONSTANT_ALBEDO = 0.30


@dataclass(frozen=True)
class EBMParams:
    """All parameters of the energy-balance model (SI units, temperatures in °C).

    Defaults: the present-climate calibration of North, Cahalan & Coakley (1981, Table 2):
    ``A = 203.3 W m⁻²``, ``B = 2.09 W m⁻² K⁻¹``, ``D = 0.649 W m⁻² K⁻¹``, ``Q = S0/4 = 334.4
    W m⁻²`` (their ``S0 = 1337.6 W m⁻²``), ``s2 = −0.482``, ice-free co-albedo
    ``0.681 − 0.202 P2(sin φ)`` (albedo ``0.319 + 0.202 P2``), ice co-albedo 0.38 (albedo 0.62)
    below North's −10 °C; a 50 m mixed-layer ocean and 2 m water-equivalent land (land ~25
    times less inert than the ocean: the contrast behind the land/sea seasonal difference of
    North et al. 1983; the depths are typical textbook magnitudes). With annual-mean insolation
    this set puts the ice edge at ``x_s = sin φ_s ≈ 0.95`` (71.8°), as the paper does; the
    model reproduces it to a fraction of a degree (tests). A modern ``S0 = 1361`` with the same
    constants moves the edge poleward to ≈ 78.7°: the calibration belongs to its ``Q``.

    ``ice_ramp = 2 K`` replaces North's sharp switch by a linear ramp over ±1 K: with a sharp
    switch a whole grid row flips at once and the equilibrium edge "locks" to the grid and
    depends on the initial state (70.9° vs 71.8° at 2° from cold and warm starts); with the
    ramp both starts converge to the same edge (71.5°). ``ice_ramp = 0`` restores the sharp
    switch.

    Parameters
    ----------
    A, B : float
        Outgoing long-wave radiation ``A + B T`` (W m⁻², W m⁻² K⁻¹).
    D : float
        Diffusion coefficient on the unit sphere (W m⁻² K⁻¹).
    Q : float
        Global-mean insolation ``S0/4`` (W m⁻²).
    s2 : float
        ``P2`` coefficient of the annual-mean insolation distribution, used when
        ``seasonal_cycle`` is off: ``s(x) = 1 + s2 P2(x)``.
    albedo_free, albedo_p2 : float
        Ice-free albedo ``albedo_free + albedo_p2 P2(sin φ)``.
    albedo_ice : float
        Albedo where ``T < ice_threshold``.
    ice_threshold : float
        Freezing threshold (°C); North (1975a) uses −10 °C.
    ice_ramp : float
        Width (K) of a linear albedo ramp centred on the threshold; 0 is North's sharp switch
        (see above for why the default is 2 K).
    obliquity : float
        Obliquity in degrees (present day 23.44°); the orbit is circular.
    year_length : float
        Seconds per model year.
    vernal_equinox_day : float
        Days from the start of step 0 (1 January, 00:00) to the vernal equinox.
    heat_capacity_ocean, heat_capacity_land : float
        Column heat capacities (J m⁻² K⁻¹).
    dt : float or None
        Time step (s); ``None`` means "pick the stable one" (see :meth:`resolved`).
    dt_safety : float
        Fraction of :func:`max_stable_dt` used when ``dt`` is picked automatically.
    seasonal_cycle : bool
        Orbital daily-mean insolation when true, ``1 + s2 P2`` annual mean when false.
    ice_albedo : bool
        Temperature-dependent (ice) albedo when true, the ice-free albedo everywhere when false.
    land : bool
        Land/ocean heat-capacity contrast when true, ocean everywhere when false.
    """

    A: float = 203.3
    B: float = 2.09
    D: float = 0.649
    Q: float = 334.4
    s2: float = -0.482
    albedo_free: float = 0.319
    albedo_p2: float = 0.202
    albedo_ice: float = 0.62
    ice_threshold: float = -10.0
    ice_ramp: float = 2.0
    obliquity: float = 23.44
    year_length: float = YEAR_SECONDS
    vernal_equinox_day: float = 79.0
    heat_capacity_ocean: float = 50.0 * RHO_CP_SEAWATER
    heat_capacity_land: float = 2.0 * RHO_CP_WATER
    dt: float | None = None
    dt_safety: float = 0.9
    seasonal_cycle: bool = True
    ice_albedo: bool = True
    land: bool = True

    def __post_init__(self) -> None:
        positive = ("B", "Q", "year_length", "heat_capacity_ocean", "heat_capacity_land")
        for name in positive:
            if not getattr(self, name) > 0:
                raise ValueError(f"EBMParams.{name} must be > 0, got {getattr(self, name)!r}")
        if self.D < 0 or self.ice_ramp < 0:
            raise ValueError("EBMParams.D and EBMParams.ice_ramp must be >= 0")
        if self.dt is not None and not self.dt > 0:
            raise ValueError(f"EBMParams.dt must be > 0 or None, got {self.dt!r}")
        warm_max = self.albedo_free + max(self.albedo_p2, -0.5 * self.albedo_p2)  # P2 ∈ [-½, 1]
        if self.ice_albedo and self.albedo_ice < warm_max:
            raise ValueError(
                f"EBMParams.albedo_ice ({self.albedo_ice}) must be at least the largest ice-free "
                f"albedo ({warm_max:.3f}): ice is brighter than the surface it covers"
            )
        if not 0 < self.dt_safety <= 1:
            raise ValueError(f"EBMParams.dt_safety must be in (0, 1], got {self.dt_safety!r}")

    # -- presets ----------------------------------------------------------------------------
    @classmethod
    def north_analytic(cls, **overrides: Any) -> EBMParams:
        """North's (1975a) analytic case: annual-mean insolation, constant albedo 0.3, no ice,
        no land (uniform capacity). Its equilibrium is :func:`north_analytic_solution`."""
        return cls.from_switches(seasonal_cycle=False, ice_albedo=False, land=False, **overrides)

    @classmethod
    def from_switches(
        cls, *, seasonal_cycle: bool, ice_albedo: bool, land: bool, **overrides: Any
    ) -> EBMParams:
        """The parameters of the climate workflow's three switches.

        ``ice_albedo`` off also makes the albedo one constant, ``CONSTANT_ALBEDO`` (North
        1975a), rather than the ice-free ``albedo_free + albedo_p2 P2``: with all three
        switches off the equilibrium is then North's closed form ``T0 + T2 P2`` in the ``A``,
        ``B``, ``D``, ``Q``, ``s2`` and ``α = albedo_free`` the outputs record, as the analytic
        check states it (the P2 albedo would add ~8 K to the difference through ``T2`` and a
        ``P4`` mode). 0.30 is the P2 albedo's mean under the annual sun ``1 + s2 P2``
        (``0.319 + 0.202 s2/5 = 0.2995``), so the planet absorbs the same sunlight.
        """
        albedo = {} if ice_albedo else {"albedo_free": CONSTANT_ALBEDO, "albedo_p2": 0.0}
        switches = {"seasonal_cycle": seasonal_cycle, "ice_albedo": ice_albedo, "land": land}
        return cls(**(switches | albedo | overrides))

    # -- derived ----------------------------------------------------------------------------
    @property
    def solar_constant(self) -> float:
        """``S0 = 4 Q`` (W m⁻²)."""
        return 4.0 * self.Q

    @property
    def steps_per_year(self) -> float:
        """``year_length / dt`` (an integer when ``dt`` was picked automatically)."""
        if self.dt is None:
            raise ValueError("dt is not set; call params.resolved(grid) first")
        return self.year_length / self.dt

    def global_equilibria(self) -> tuple[float, float | None]:
        """The global-mean equilibrium temperatures (°C) of the two limiting planets.

        Diffusion moves heat and neither makes nor destroys it, so a global-mean equilibrium
        balances the sunlight absorbed against ``A + B <T>``. Under the annual-mean sun
        ``1 + s2 P2(x)`` (x = sin φ; ``<P2> = 0``, ``<P2²> = 1/5`` over the sphere) an ice-free
        planet with albedo ``albedo_free + albedo_p2 P2`` absorbs ``Q (1 − albedo_free −
        albedo_p2 s2 / 5)``, a frozen one ``Q (1 − albedo_ice)``. The seasonal sun's annual
        mean is close to that distribution (``s2`` is its fit), so with the seasons on these are
        close estimates rather than exact.

        Returns
        -------
        (float, float or None)
            The ice-free planet's and the frozen planet's ``<T>``; the second is ``None``
            where ``ice_albedo`` is off (no ice to freeze over).
        """
        free = self.Q * (1.0 - self.albedo_free - self.albedo_p2 * self.s2 / 5.0)
        frozen = self.Q * (1.0 - self.albedo_ice) if self.ice_albedo else None
        return (free - self.A) / self.B, None if frozen is None else (frozen - self.A) / self.B

    def steps_in_years(self, years: float) -> int:
        """Whole number of steps covering ``years`` model years (``dt`` must be set)."""
        return math.ceil(round(years * self.steps_per_year, 9))

    def resolved(self, grid: LatLonGrid, c_min: float | None = None) -> EBMParams:
        """Return a copy with ``dt`` set (if it was ``None``) and checked for stability.

        The automatic step is ``dt_safety · max_stable_dt``, a day at most
        (:data:`MAX_AUTO_DT`), shortened so that a year holds a whole number of steps (the
        seasonal forcing then repeats exactly every year).

        Parameters
        ----------
        grid : LatLonGrid
        c_min : float, optional
            Smallest heat capacity of the field in use (J m⁻² K⁻¹); default the smallest of
            :func:`heat_capacity` of these parameters.

        Raises
        ------
        ValueError
            If an explicit ``dt`` exceeds the stability limit.
        """
        c_min = self.min_heat_capacity if c_min is None else float(c_min)
        limit = max_stable_dt(self, grid, c_min)
        if self.dt is None:
            step = min(self.dt_safety * limit, MAX_AUTO_DT)
            n = math.ceil(self.year_length / step)
            return dataclasses.replace(self, dt=self.year_length / n)
        if self.dt > limit:
            raise ValueError(
                f"dt = {self.dt:g} s exceeds the stability limit {limit:g} s at "
                f"{grid.resolution}° (C_min = {c_min:.3g} J m-2 K-1); use dt=None for an "
                f"automatic step or dt <= {limit:.0f}"
            )
        return self

    @property
    def min_heat_capacity(self) -> float:
        """Smallest heat capacity of the default capacity field."""
        if self.land:
            return min(self.heat_capacity_land, self.heat_capacity_ocean)
        return self.heat_capacity_ocean

    # -- records ----------------------------------------------------------------------------
    def to_attrs(self) -> dict[str, Any]:
        """Plain JSON-serialisable dict of every parameter (for Zarr attributes, run records)."""
        attrs: dict[str, Any] = dataclasses.asdict(self)
        attrs["solar_constant"] = self.solar_constant
        if not self.ice_albedo and self.albedo_p2 == 0.0:
            # one albedo everywhere: the α of North's analytic solution, under that name
            attrs["alpha"] = self.albedo_free
        return attrs

    @classmethod
    def from_attrs(cls, attrs: dict[str, Any]) -> EBMParams:
        """Inverse of :meth:`to_attrs` (unknown keys, e.g. derived ones, are ignored)."""
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in attrs.items() if k in names})


def max_stable_dt(params: EBMParams, grid: LatLonGrid, c_min: float) -> float:
    """Largest stable time step of the explicit-meridional / preconditioned-zonal scheme.

    The zonal preconditioner (see :mod:`~openclaw_dask.workflows.climate.physics`) keeps the
    zonal part of the amplification below 1 for any ``dt``; the explicit remainder (meridional
    diffusion and the ``B T`` damping) must then stay below 1 as well (the sum of the two must
    stay below 2 for forward Euler)::

        dt ≤ C_min / (B + 2 D max_j (cN_j + cS_j))  ≈  C_min / (B + 4 D / Δφ²)

    Parameters
    ----------
    params : EBMParams
    grid : LatLonGrid
    c_min : float
        Smallest heat capacity in the domain (J m⁻² K⁻¹).

    Returns
    -------
    float
        Seconds.
    """
    c_north, c_south = grid.meridional_factors()
    stiffness = params.B + 2.0 * params.D * float(np.max(c_north + c_south))
    return c_min / stiffness


def heat_capacity(
    params: EBMParams, grid: LatLonGrid, land_mask: np.ndarray | None = None
) -> np.ndarray:
    """Column heat capacity field (J m⁻² K⁻¹), shape ``grid.shape``.

    Parameters
    ----------
    params : EBMParams
        With ``land`` off the field is ``heat_capacity_ocean`` everywhere.
    grid : LatLonGrid
    land_mask : numpy.ndarray of bool, optional
        ``True`` = land; default :func:`~openclaw_dask.workflows.climate.grid.idealized_land_mask`.

    Returns
    -------
    numpy.ndarray of float64
    """
    if not params.land:
        return np.full(grid.shape, params.heat_capacity_ocean)
    mask = idealized_land_mask(grid) if land_mask is None else np.asarray(land_mask, dtype=bool)
    if mask.shape != grid.shape:
        raise ValueError(f"land_mask has shape {mask.shape}, the grid is {grid.shape}")
    return np.where(mask, params.heat_capacity_land, params.heat_capacity_ocean)
