"""2-D energy-balance climate model (Budyko–Sellers / North type) on a lat-lon grid.

``C ∂T/∂t = Q s(φ,t) (1 − α(T)) − (A + B T) + ∇·(D ∇T)`` with orbital seasons, ice-albedo
feedback and a land/ocean heat-capacity contrast. Modules, one job each:

``grid``        :class:`LatLonGrid`, :func:`idealized_land_mask`, :func:`regrid`
``params``      :class:`EBMParams` (literature values, switches, ``to_attrs``), stable ``dt``
``insolation``  orbital daily-mean and annual-mean insolation
``physics``     the time-step kernels (numpy/cupy), North's analytic solution
``reference``   :func:`run_reference`: single-process ground truth, energy budget
``stepper``     :func:`advance`: the Dask driver, latitude bands, K steps per halo exchange
``analysis``    global/zonal/annual/monthly means, seasonal amplitude, ice edge

Typical use::

    grid = LatLonGrid(2.0)
    params = EBMParams().resolved(grid)
    T = to_bands(np.full(grid.shape, 10.0), 4)
    T = advance(T, params, grid, nsteps=params.steps_in_years(1), batch_size=8).persist()
"""

from openclaw_dask.workflows.climate.analysis import (
    annual_mean,
    global_mean,
    ice_edge_latitude,
    monthly_means,
    seasonal_amplitude,
    zonal_mean,
)
from openclaw_dask.workflows.climate.grid import LatLonGrid, idealized_land_mask, regrid
from openclaw_dask.workflows.climate.insolation import (
    daily_insolation_factor,
    insolation_factor,
    insolation_steps,
    solar_declination,
)
from openclaw_dask.workflows.climate.namespace import get_namespace
from openclaw_dask.workflows.climate.params import EBMParams, heat_capacity, max_stable_dt
from openclaw_dask.workflows.climate.physics import (
    advance_band,
    north_analytic_solution,
    step_band,
)
from openclaw_dask.workflows.climate.reference import (
    EnergyBudget,
    reference_energy_budget,
    run_reference,
)
from openclaw_dask.workflows.climate.stepper import (
    advance,
    band_chunks,
    band_homes,
    energy_budget,
    place_bands,
    to_bands,
)

__all__ = [
    "EBMParams",
    "EnergyBudget",
    "LatLonGrid",
    "advance",
    "advance_band",
    "annual_mean",
    "band_chunks",
    "band_homes",
    "daily_insolation_factor",
    "energy_budget",
    "get_namespace",
    "global_mean",
    "heat_capacity",
    "ice_edge_latitude",
    "idealized_land_mask",
    "insolation_factor",
    "insolation_steps",
    "max_stable_dt",
    "monthly_means",
    "north_analytic_solution",
    "place_bands",
    "reference_energy_budget",
    "regrid",
    "run_reference",
    "seasonal_amplitude",
    "solar_declination",
    "step_band",
    "to_bands",
    "zonal_mean",
]
