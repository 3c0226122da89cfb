"""The chunked climate stepper on a real cluster: each band stays on its worker (one band per
thread, the layout of climate.ebm and of the stencil benchmark)."""

from __future__ import annotations

import collections

import numpy as np
from distributed import Client, LocalCluster, get_task_stream, wait

from openclaw_dask.workflows.climate import (
    EBMParams,
    LatLonGrid,
    advance,
    heat_capacity,
    run_reference,
)
from openclaw_dask.workflows.climate.stepper import to_bands


def _band(key: object) -> int:
    assert isinstance(key, tuple)
    return int(key[-2])  # (name, i, 0), or (name, 0, i, 0) for the stacked [T, sum]


def test_step_tasks_run_where_their_band_is() -> None:
    grid = LatLonGrid(2.0)
    params = EBMParams().resolved(grid)
    T0 = 10.0 + 20.0 * (1.0 / 3.0 - grid.sin_lat[:, None] ** 2) * np.ones(grid.shape)
    reference = run_reference(params, grid, 19, T0, step0=300)
    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
        ) as cluster,
        Client(cluster) as client,
    ):
        [state] = client.persist([to_bands(T0, 2)])  # one band per thread, as climate.ebm
        wait(state)
        owner = {_band(k): w for k, (w,) in client.who_has(state).items()}
        assert len(set(owner.values())) == 2  # both workers hold bands
        with get_task_stream(client) as stream:
            end, total = advance(state, params, grid, 19, 4, step0=300, accumulate=True)
            end, total = client.compute([end, total], sync=True)
        assert np.array_equal(end, reference)
        ran = collections.defaultdict(set)
        for record in stream.data:
            name = record["key"][0]
            if name.startswith("ebm-steps"):
                ran[_band(record["key"])].add(record["worker"])
            elif name.startswith("ebm-halo"):  # a slice runs where its source band is
                i, side = record["key"][1:]
                assert record["worker"] == owner[i - 1 if side == 0 else i + 1]
        assert dict(ran) == {i: {w} for i, w in owner.items()}


def test_a_capacity_persisted_on_the_cluster_is_used_there() -> None:
    """A capacity that lives only on the cluster (persisted) works: its minimum sets dt."""
    grid = LatLonGrid(4.0)
    params = EBMParams()
    T0 = 5.0 + 10.0 * np.cos(np.deg2rad(grid.lat))[:, None] * np.ones(grid.shape)
    capacity = heat_capacity(params, grid)
    reference = run_reference(params, grid, 9, T0, step0=40)
    with (
        LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cluster,
        Client(cluster) as client,
    ):
        state, cap = client.persist([to_bands(T0, 2), to_bands(capacity, 2)])
        end = advance(state, params, grid, 9, 4, step0=40, capacity=cap)
        assert np.array_equal(end.compute(), reference)
