"""The chunked climate stepper on a real cluster: each band stays on its worker (one band per
thread, the layout of climate.ebm and of the stencil benchmark) and goes to its home one."""

from __future__ import annotations

import collections
import contextlib
import time
from collections.abc import Iterator

import numpy as np
from distributed import Client, Event, LocalCluster, get_task_stream, wait

from openclaw_dask.workflows.climate import (
    EBMParams,
    LatLonGrid,
    advance,
    heat_capacity,
    run_reference,
)
from openclaw_dask.workflows.climate.stepper import (
    band_homes,
    place_bands,
    quietest_worker,
    to_bands,
)


def _band(key: object) -> int:
    assert isinstance(key, tuple)
    return int(key[-2])  # (name, i, 0), or (name, 0, i, 0) for the stacked [T, sum]


@contextlib.contextmanager
def _two_workers() -> Iterator[Client]:
    """A client of 2 in-process workers x 1 thread (one band per thread, as climate.ebm)."""
    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
        ) as cluster,
        Client(cluster) as client,
    ):
        yield client


def _two_degree_case() -> tuple[LatLonGrid, EBMParams, np.ndarray, np.ndarray]:
    """Grid, parameters, a start and the reference after 19 steps from step 300."""
    grid = LatLonGrid(2.0)
    params = EBMParams().resolved(grid)
    T0 = 10.0 + 20.0 * (1.0 / 3.0 - grid.sin_lat[:, None] ** 2) * np.ones(grid.shape)
    return grid, params, T0, run_reference(params, grid, 19, T0, step0=300)


def test_step_tasks_run_where_their_band_is() -> None:
    grid, params, T0, reference = _two_degree_case()
    with _two_workers() as client:
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


def test_bands_go_to_their_home_workers_from_wherever_they_are() -> None:
    """Both bands start on one worker (as a fresh state, or one that work stealing moved, can
    be): with homes, each band's tasks run on its own home, and the bits do not change."""
    grid, params, T0, reference = _two_degree_case()
    with _two_workers() as client:
        homes = band_homes(client.nthreads(), 3)
        assert homes[0] == homes[1] != homes[2]  # neighbours share a worker
        [state] = client.persist([to_bands(T0, 3)], workers=[homes[2]])
        wait(state)
        assert {w for (w,) in client.who_has(state).values()} == {homes[2]}
        # Dask's low-level fusion would drop the restrictions (the workflow runner skips it too)
        with get_task_stream(client) as stream:
            end = advance(state, params, grid, 19, 4, step0=300, workers=homes)
            end = end.persist(optimize_graph=False)
            wait(end)
        assert {_band(k): w for k, (w,) in client.who_has(end).items()} == dict(enumerate(homes))
        assert np.array_equal(end.compute(), reference)
        moved = set()  # the halo tasks of later batches: only where the homes differ
        for record in stream.data:
            name, i, side = record["key"]
            if name.startswith("ebm-steps"):
                assert record["worker"] == homes[i], record["key"]
            elif name.startswith("ebm-halo"):
                assert record["worker"] == homes[i - 1 if side == 0 else i + 1], record["key"]
                if not name.startswith("ebm-halo-300-"):
                    moved.add((i, side))
        # bands 0 and 1 share a worker: band 1 takes band 0's step task itself, and back
        assert moved == {(1, 1), (2, 0)}


def test_placed_bands_are_on_their_homes_and_hold_the_field() -> None:
    field = np.arange(45 * 90, dtype=np.float64).reshape(45, 90)
    with _two_workers() as client:
        homes = band_homes(client.nthreads(), 3)
        placed = place_bands(client, field, homes)
        assert placed.chunks == ((15, 15, 15), (90,))
        assert [w for _, (w,) in sorted(client.who_has(placed).items())] == homes
        assert np.array_equal(placed.compute(), field)


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


def test_halos_within_and_between_worker_processes() -> None:
    """Two worker processes of two threads, four bands homed two a worker: a band takes its
    same-worker neighbour's step task (nothing pickled), and across the border between the
    processes a halo task sends only the rows; the state, the running sum and the bits are
    the reference's."""
    grid, params, T0, reference = _two_degree_case()
    with (
        LocalCluster(n_workers=2, threads_per_worker=2, dashboard_address=None) as cluster,
        Client(cluster) as client,
    ):
        homes = band_homes(client.nthreads(), 4)
        assert homes[0] == homes[1] != homes[2] == homes[3]
        state = place_bands(client, T0, homes)
        with get_task_stream(client) as stream:
            end, total = advance(
                state, params, grid, 19, 4, step0=300, accumulate=True, workers=homes
            )
            end, total = client.persist([end, total], optimize_graph=False)
            end, total = client.compute([end, total], sync=True)
    assert np.array_equal(end, reference)
    running = np.zeros_like(T0)
    T = T0
    for k in range(19):  # the sum of the temperatures after each step, one step at a time
        T = run_reference(params, grid, 1, T, step0=300 + k)
        running += T
    assert np.array_equal(total, running)
    later = {record["key"][1:] for record in stream.data if _later_halo(record["key"])}
    assert later == {(2, 0), (1, 1)}  # only across the border between the two processes


def _later_halo(key: object) -> bool:
    """Whether ``key`` is a halo task of a batch after the call's first (step 300)."""
    return (
        isinstance(key, tuple)
        and str(key[0]).startswith("ebm-halo-")
        and not str(key[0]).startswith("ebm-halo-300-")
    )


def test_a_field_placed_again_right_after_its_last_placement_was_dropped() -> None:
    """The same field placed again as the last placement's futures are released (tune's and
    the benchmark's second try after a worker death): with Dask's content-hashed scatter keys
    the new bands had the old ones' keys, and the old release, reaching the scheduler after
    the new scatter, forgot them under the new placement ("lost dependencies": within these 30
    tries in each of 3 runs before the fix)."""
    field = np.arange(45 * 900, dtype=np.float64).reshape(45, 900)
    with _two_workers() as client:
        homes = band_homes(client.nthreads(), 2)
        placed = place_bands(client, field, homes)
        for _ in range(30):
            placed = place_bands(client, field, homes)  # the last placement's futures go here
            assert placed.sum().compute() == field.sum()


def test_a_runs_bands_start_on_the_worker_with_the_least_of_other_runs_work() -> None:
    """Another run's band held on a worker, or its task running there, sends this run's first
    band to the other worker: two one-band runs on a shared cluster had both computed on the
    first worker while the second idled."""
    field = np.zeros((45, 90))
    with _two_workers() as client:
        a, b = sorted(client.nthreads())
        assert quietest_worker(client) == a  # nothing anywhere: the first address
        held = place_bands(client, field, [a])  # another run's band, persisted on a
        assert quietest_worker(client) == b
        del held
        wait(client.submit(lambda: None, workers=[b], pure=False))
        event = Event()
        busy = client.submit(event.wait, 60, workers=[b], pure=False)  # a task running on b
        deadline = time.monotonic() + 30
        while not client.processing()[b] and time.monotonic() < deadline:
            time.sleep(0.05)
        assert quietest_worker(client) == a
        event.set()
        busy.result()
