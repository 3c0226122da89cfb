"""The chunked Dask driver: bit-identity with the reference, halos, splits, energy budget."""

from __future__ import annotations

import pickle
from uuid import uuid4

import dask
import dask.array as da
import numpy as np
import pytest
from dask.sizeof import sizeof

from openclaw_dask.workflows.climate import (
    EBMParams,
    LatLonGrid,
    advance,
    band_chunks,
    band_homes,
    energy_budget,
    heat_capacity,
    run_reference,
    to_bands,
)
from openclaw_dask.workflows.climate.stepper import BandState, BandStep

STEP0 = 1789  # mid-April at 4°: seasons, polar night and polar day all present
NSTEPS = 37  # not a multiple of any batch size below


def _initial(grid: LatLonGrid) -> np.ndarray:
    rng = np.random.default_rng(42)
    smooth = 26.0 - 48.0 * grid.sin_lat[:, None] ** 2 + 4.0 * np.sin(np.deg2rad(grid.lon))[None]
    return smooth + 2.0 * rng.standard_normal(grid.shape)


@pytest.fixture(scope="module")
def case() -> tuple[LatLonGrid, EBMParams, np.ndarray, np.ndarray]:
    grid = LatLonGrid(4.0)  # 45 x 90
    params = EBMParams().resolved(grid)  # seasons, ice albedo (ramped) and land all on
    T0 = _initial(grid)
    reference = run_reference(params, grid, NSTEPS, T0, step0=STEP0)
    return grid, params, T0, reference


LAYOUTS = [1, 2, 3, 5, (4, 17, 9, 15)]  # the last one uneven


@pytest.mark.parametrize("bands", LAYOUTS, ids=str)
@pytest.mark.parametrize("batch_size", [1, 3, 4, 16])
@pytest.mark.parametrize("scheduler", ["sync", "threads"])
def test_chunked_run_is_bit_identical_to_the_reference(case, bands, batch_size, scheduler) -> None:
    grid, params, T0, reference = case
    T = to_bands(T0, bands)
    if len(T.chunks[0]) > 1 and batch_size > min(T.chunks[0]):
        with pytest.raises(ValueError, match="deeper than the smallest latitude band"):
            advance(T, params, grid, NSTEPS, batch_size, step0=STEP0)
        return
    out = advance(T, params, grid, NSTEPS, batch_size, step0=STEP0)
    assert out.chunks == T.chunks
    result = out.compute(scheduler=scheduler)
    assert np.array_equal(result, reference)


def test_bit_identity_at_two_degrees_with_deep_halos() -> None:
    grid = LatLonGrid(2.0)
    params = EBMParams()
    T0 = _initial(grid)
    reference = run_reference(params, grid, 40, T0, step0=5000)
    for bands, batch_size in [((30, 16, 44), 16), (4, 7), (2, 40)]:
        out = advance(to_bands(T0, bands), params, grid, 40, batch_size, step0=5000)
        assert np.array_equal(out.compute(scheduler="threads"), reference), (bands, batch_size)


def test_split_runs_continue_the_season_exactly(case) -> None:
    """What the runner does: persist every sync_interval steps and call advance again."""
    grid, params, T0, reference = case
    T = to_bands(T0, 3)
    step = STEP0
    for chunk in (10, 1, 19, 7):  # 37 steps in uneven pieces
        T = advance(T, params, grid, chunk, batch_size=4, step0=step).persist(scheduler="sync")
        step += chunk
    assert np.array_equal(T.compute(), reference)
    # the season matters: the same steps started from another step0 differ
    shifted = advance(to_bands(T0, 3), params, grid, NSTEPS, 4, step0=STEP0 + 1000)
    assert not np.array_equal(shifted.compute(scheduler="sync"), reference)


def test_capacity_from_caller_and_zero_steps(case) -> None:
    grid, params, T0, _ = case
    mask = np.zeros(grid.shape, dtype=bool)
    mask[10:30, 20:50] = True
    cap = heat_capacity(params, grid, mask)
    reference = run_reference(params, grid, 9, T0, capacity=cap)
    chunked_cap = da.from_array(cap, chunks=(7, 45))  # any chunking: it is aligned to T
    out = advance(to_bands(T0, 4), params, grid, 9, 3, capacity=chunked_cap)
    assert np.array_equal(out.compute(scheduler="sync"), reference)
    same = advance(to_bands(T0, 4), params, grid, 0, 3).compute(scheduler="sync")
    assert np.array_equal(same, T0)


def test_longitude_chunks_are_merged_into_whole_rows(case) -> None:
    grid, params, T0, reference = case
    T = da.from_array(T0, chunks=(15, 30))
    out = advance(T, params, grid, NSTEPS, 5, step0=STEP0)
    assert out.chunks[1] == (grid.nlon,)
    assert np.array_equal(out.compute(scheduler="sync"), reference)


def test_graph_keys_differ_for_different_states(case) -> None:
    """Runs that persist side by side on one cluster must never share task keys."""
    grid, params, T0, _ = case
    a = advance(to_bands(T0, 3), params, grid, 8, 4, step0=STEP0)
    b = advance(to_bands(T0 + 1.0, 3), params, grid, 8, 4, step0=STEP0)
    c = advance(to_bands(T0, 3), params, grid, 8, 4, step0=STEP0)
    assert a.name.startswith(f"ebm-steps-{STEP0 + 4}-{STEP0 + 8}")
    assert a.name != b.name
    assert a.name == c.name  # deterministic: same inputs, same keys


@pytest.mark.parametrize("accumulate", [False, True])
def test_runs_of_different_lengths_from_one_state_share_no_wrong_keys(case, accumulate) -> None:
    """A run's last batch returns bands; the same batch of a longer run returns the state."""
    grid, params, T0, _ = case
    state = to_bands(T0, 3)
    short = advance(state, params, grid, 4, 4, step0=STEP0, accumulate=accumulate)
    long = advance(state, params, grid, 8, 4, step0=STEP0, accumulate=accumulate)
    short, long = dask.compute(short, long, scheduler="sync")  # one merged graph
    if accumulate:
        short, long = short[0], long[0]
    assert np.array_equal(short, run_reference(params, grid, 4, T0, step0=STEP0))
    assert np.array_equal(long, run_reference(params, grid, 8, T0, step0=STEP0))


def test_bad_arguments_are_refused(case) -> None:
    grid, params, T0, _ = case
    T = to_bands(T0, 3)
    with pytest.raises(ValueError, match="batch_size must be >= 1"):
        advance(T, params, grid, 5, 0)
    with pytest.raises(ValueError, match="shape"):
        advance(T[:-1], params, grid, 5, 1)
    with pytest.raises(ValueError, match="add up"):
        to_bands(T0, (10, 10))
    assert band_chunks(45, 4) == (12, 11, 11, 11)
    with pytest.raises(ValueError, match="2 home workers for 3 bands"):
        advance(T, params, grid, 5, 1, workers=["tcp://a", "tcp://b"])


def test_band_homes_keep_neighbours_together_in_proportion_to_threads() -> None:
    two = {"tcp://b:1": 1, "tcp://a:1": 1}
    assert band_homes(two, 2) == ["tcp://a:1", "tcp://b:1"]  # sorted: the same on every call
    assert band_homes(two, 4) == ["tcp://a:1", "tcp://a:1", "tcp://b:1", "tcp://b:1"]
    assert band_homes(two, 3) == ["tcp://a:1", "tcp://a:1", "tcp://b:1"]
    assert band_homes({"tcp://a:1": 3, "tcp://b:1": 1}, 4) == ["tcp://a:1"] * 3 + ["tcp://b:1"]
    assert band_homes(two, 1) == ["tcp://a:1"]
    with pytest.raises(ValueError, match="bands on 0 worker threads"):
        band_homes({}, 2)


def test_band_homes_start_from_the_given_worker_and_keep_neighbours_together() -> None:
    three = {"tcp://a:1": 2, "tcp://b:1": 1, "tcp://c:1": 1}
    assert band_homes(three, 1, first="tcp://b:1") == ["tcp://b:1"]
    # rotated by whole workers: a's two bands stay neighbours
    assert band_homes(three, 4, first="tcp://b:1") == [
        "tcp://b:1",
        "tcp://c:1",
        "tcp://a:1",
        "tcp://a:1",
    ]
    # a worker gone since (lost, restarted under another address): the address order
    assert band_homes(three, 2, first="tcp://gone:1") == band_homes(three, 2)


def test_fft_of_row_subsets_is_bit_identical() -> None:
    """What the bit-identity rests on: a row's FFT does not depend on its batch-mates."""
    rng = np.random.default_rng(7)
    for nlon in (90, 180, 720):
        rows = rng.standard_normal((61, nlon))
        full = np.fft.rfft(rows, axis=1)
        back = np.fft.irfft(full, n=nlon, axis=1)
        for start, stop in [(0, 1), (3, 10), (5, 38), (17, 61), (60, 61)]:
            assert np.array_equal(np.fft.rfft(rows[start:stop], axis=1), full[start:stop])
            sub = np.fft.irfft(full[start:stop], n=nlon, axis=1)
            assert np.array_equal(sub, back[start:stop])


@pytest.mark.parametrize("bands", [2, (4, 17, 9, 15), 5], ids=str)
def test_energy_budget_closes_on_chunked_runs(case, bands) -> None:
    grid, params, T0, _ = case
    T, budget = energy_budget(to_bands(T0, bands), params, grid, 6, step0=STEP0, scheduler="sync")
    assert np.all(np.abs(budget.radiative_input) > 1e3)
    assert budget.relative_error.max() < 1e-12
    assert (np.abs(budget.residual) / np.abs(budget.radiative_input)).max() < 1e-12
    reference = run_reference(params, grid, 6, T0, step0=STEP0)
    assert np.array_equal(T.compute(), reference)


@pytest.mark.gpu
def test_cupy_state_matches_numpy(case) -> None:
    """Same kernels on the device (cuFFT rounds differently: close, not bit-identical)."""
    cupy = pytest.importorskip("cupy")
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            pytest.skip("no GPU")
    except cupy.cuda.runtime.CUDARuntimeError:
        pytest.skip("no GPU")
    grid, params, T0, reference = case
    on_device = run_reference(params, grid, NSTEPS, cupy.asarray(T0), step0=STEP0)
    assert isinstance(on_device, cupy.ndarray)
    np.testing.assert_allclose(on_device.get(), reference, rtol=0, atol=1e-9)
    chunked = advance(to_bands(cupy.asarray(T0), 3), params, grid, NSTEPS, 4, step0=STEP0)
    result = chunked.compute(scheduler="threads")
    assert isinstance(result, cupy.ndarray)
    assert cupy.array_equal(result, on_device)


@pytest.mark.parametrize(
    ("bands", "batch_size"),
    [(1, 2), (1, 2**31), ((23, 22), 2), (3, 2), (3, 3), ((4, 17, 9, 15), 4), (5, 9)],
    ids=str,
)
def test_accumulated_sum_matches_the_reference(bands, batch_size) -> None:
    """advance(accumulate=True): the sum of T after each step, on any banding, bit for bit
    the reference's step-by-step sum, also when a second call continues the first's sum.

    7 + 5 steps: the last batch is shorter for every batch size but 2**31 (one batch); K = 4
    is the smallest band of the uneven layout and K = 9 that of 5 bands.
    """
    grid = LatLonGrid(4.0)
    params = EBMParams().resolved(grid)
    T0 = 5.0 + np.cos(np.deg2rad(grid.lat))[:, None] * np.ones(grid.shape)
    expected_sum = np.zeros(grid.shape)
    T = T0
    for k in range(12):
        T = run_reference(params, grid, 1, T, step0=100 + k)
        expected_sum += T
        if k == 6:
            T7, sum7 = T, expected_sum.copy()
    state = to_bands(T0, bands)
    end, total = advance(state, params, grid, 7, batch_size, step0=100, accumulate=True)
    assert end.chunks == total.chunks == state.chunks
    end2, total2 = advance(end, params, grid, 5, batch_size, 107, accumulate=True, total=total)
    end, total, end2, total2 = dask.compute(end, total, end2, total2, scheduler="threads")
    assert np.array_equal(end, T7) and np.array_equal(total, sum7)
    assert np.array_equal(end2, T) and np.array_equal(total2, expected_sum)


def test_accumulate_with_a_dask_capacity_and_no_steps(case) -> None:
    grid, params, T0, _ = case
    mask = np.zeros(grid.shape, dtype=bool)
    mask[5:25, 10:60] = True
    cap = heat_capacity(params, grid, mask)
    reference = run_reference(params, grid, 11, T0, step0=STEP0, capacity=cap)
    state = to_bands(T0, (4, 17, 9, 15))
    end, _ = advance(
        state, params, grid, 11, 4, STEP0, da.from_array(cap, chunks=(10, 90)), accumulate=True
    )
    assert any(name.startswith("ebm-capacity-") for name in end.__dask_graph__().layers)
    assert np.array_equal(end.compute(scheduler="threads"), reference)
    same, zero = advance(state, params, grid, 0, 4, accumulate=True)
    same, zero = dask.compute(same, zero, scheduler="sync")
    assert np.array_equal(same, T0) and not zero.any()


def test_a_dask_capacity_minimum_is_computed_once(case) -> None:
    """climate.ebm passes one placed capacity to every call: its minimum (for ``dt``) is a
    blocking compute, which must not run again in every call."""
    from dask.callbacks import Callback

    grid, params, T0, _ = case
    # a name no other test uses: the minimum is remembered by array name
    cap = da.from_array(heat_capacity(params, grid), chunks=(15, 90), name=f"cap-{uuid4()}")
    computed: list[str] = []

    class Minima(Callback):
        def _start_state(self, dsk, state) -> None:
            computed.extend(str(k) for k in dsk if "min" in str(k))

    with Minima():
        advance(to_bands(T0, 3), params, grid, 4, 4, capacity=cap)
        first = len(computed)
        assert first  # the first call computed it
        advance(to_bands(T0, 3), params, grid, 4, 4, step0=4, capacity=cap)
        assert len(computed) == first  # the second did not
        advance(to_bands(T0, 3), params, grid, 4, 4, capacity=cap + 0.0)  # another array
        assert len(computed) > first
    reference = run_reference(params, grid, 4, T0, capacity=heat_capacity(params, grid))
    out = advance(to_bands(T0, 3), params, grid, 4, 4, capacity=cap)
    assert np.array_equal(out.compute(scheduler="sync"), reference)


def test_single_band_needs_no_exchange(case) -> None:
    """What climate.ebm does on a coarse grid: one band, one task per call (any batch size)."""
    grid, params, T0, reference = case
    out = advance(to_bands(T0, 1), params, grid, NSTEPS, 2**31, step0=STEP0)
    layers = out.__dask_graph__().layers
    assert not [name for name in layers if name.startswith("ebm-halo")]
    assert [name for name in layers if name.startswith("ebm-steps")] == [out.name]
    assert np.array_equal(out.compute(scheduler="sync"), reference)


def _literal_bytes(task: object) -> int:
    """Bytes of the numpy arrays inside a (legacy, tuple) task."""
    if isinstance(task, np.ndarray):
        return task.nbytes
    if isinstance(task, tuple):
        return sum(_literal_bytes(t) for t in task)
    return 0


@pytest.mark.parametrize("homes", [None, ("a", "a", "b", "b")], ids=["no-homes", "two-homes"])
def test_graph_shape_halo_tasks_then_one_step_task_per_band(case, homes) -> None:
    """Per batch one task per band, which takes its own state and its two halos: copies of
    the input's rows in a call's first batch (2 (n-1) halo tasks on the neighbours); later the
    rows the neighbour's previous step task copied, that step task itself where both bands have
    one home, else a halo task on the neighbour's worker that picks them out. Nothing waits for
    anything else; the host capacity is in the graph once."""
    grid, params, T0, reference = case
    T = to_bands(T0, (4, 17, 9, 15)).persist(scheduler="sync")
    K, n = 4, 4
    out = advance(T, params, grid, NSTEPS, K, step0=STEP0, workers=homes)
    graph = out.__dask_graph__()
    deps = graph.get_all_dependencies()
    steps = [name for name in graph.layers if name.startswith("ebm-steps-")]
    halos = [name for name in graph.layers if name.startswith("ebm-halo-")]
    assert len(steps) == -(-NSTEPS // K) == 10
    assert len(halos) == 10  # one layer a batch; with two homes, later ones only at their border
    assert len(graph.layers) == 1 + len(steps) + len(halos)  # nothing else: no overlap layers
    assert steps[0].startswith(f"ebm-steps-{STEP0}-{STEP0 + K}-")
    assert steps[-1] == out.name and out.name.startswith(f"ebm-steps-{STEP0 + 36}-{STEP0 + 37}-")
    source = T.name
    for batch, (step, halo) in enumerate(zip(steps, halos, strict=True)):
        assert halo.split("-")[2:] == step.split("-")[2:]  # same steps and token
        # a neighbour's step task is taken directly where both bands have one home
        pairs = {(i, j) for i in range(n) for j in (i - 1, i + 1) if 0 <= j < n}
        shared = homes is not None and batch > 0
        direct = {(i, j) for i, j in pairs if shared and homes[i] == homes[j]}
        assert len(graph.layers[halo]) == 2 * (n - 1) - len(direct)
        for i in range(n):
            expected = {(source, i, 0)}
            for j, side in ((i - 1, 0), (i + 1, 1)):
                if 0 <= j < n:
                    expected.add((source, j, 0) if (i, j) in direct else (halo, i, side))
            assert deps[(step, i, 0)] == expected
            for j, side in ((i - 1, 0), (i + 1, 1)):
                if 0 <= j < n and (i, j) not in direct:
                    assert deps[(halo, i, side)] == {(source, j, 0)}
        source = step
    # the capacity: each band plus K rows per inner side, only in the first batch's tasks
    literal = [sum(_literal_bytes(t) for t in graph.layers[name].values()) for name in steps]
    assert literal[0] == (grid.nlat + 2 * K * (n - 1)) * grid.nlon * 8
    assert not any(literal[1:])
    assert np.array_equal(out.compute(scheduler="threads"), reference)
    assert np.array_equal(T.compute(scheduler="sync"), T0)  # the input state is untouched


@pytest.mark.parametrize("accumulate", [False, True])
def test_a_band_builds_its_operators_once_and_carries_them(case, accumulate) -> None:
    """Between batches a band's state is a :class:`BandState`: a buffer and operators for the
    band plus K rows per inner side (and a running sum), built in the first batch, then
    passed on (not rebuilt, the buffer advanced in place) batch after batch."""
    grid, params, T0, _ = case
    heights, K = (4, 17, 9, 15), 4
    out = advance(to_bands(T0, heights), params, grid, 10, K, step0=STEP0, accumulate=accumulate)
    graph = dict((out[0] if accumulate else out).__dask_graph__())
    kind = "ebm-steps-sum-" if accumulate else "ebm-steps-"
    steps = sorted({k[0] for k in graph if isinstance(k, tuple) and k[0].startswith(kind)})
    assert len(steps) == 3  # 4 + 4 + 2 steps
    first, second = (next(s for s in steps if s.startswith(f"{kind}{STEP0 + d}-")) for d in (0, 4))
    for i, rows in enumerate(heights):
        step1, step2 = dask.get(graph, [(first, i, 0), (second, i, 0)])
        assert isinstance(step1, BandStep) and isinstance(step1.state, BandState)
        state1, state2 = step1.state, step2.state
        assert (state1.total is not None) == accumulate
        ops = state1.ops
        assert state2.ops is ops and state2.buffer is state1.buffer  # carried, not rebuilt
        inner = (K if i > 0 else 0) + (K if i < len(heights) - 1 else 0)
        assert ops.nrows == rows + inner and ops.row0 == sum(heights[:i]) - (K if i else 0)
        assert state1.buffer.shape == (ops.nrows, grid.nlon) and state1.rows == rows
        # a state can be spilled or move to another worker: it pickles, and counts its arrays
        back = pickle.loads(pickle.dumps(state2))
        assert np.array_equal(back.band, state2.band) and back.ops.nrows == ops.nrows
        extra = 0 if state2.total is None else state2.total.nbytes
        assert sizeof(state2) >= state2.buffer.nbytes + extra
        # the rows copied for the neighbours (the next batch's depth: 4, then 2) are copies
        below, above = step1.south_rows, step1.north_rows
        assert (below is None) == (i == 0) and (above is None) == (i == len(heights) - 1)
        for edge in (e for e in (below, above) if e is not None):
            assert edge.shape == (K, grid.nlon) and not np.shares_memory(edge, state1.buffer)
        assert sizeof(step2) >= sizeof(state2) + sum(
            e.nbytes for e in (step2.south_rows, step2.north_rows) if e is not None
        )
        assert step2.north_rows is None or step2.north_rows.shape[0] == 2
    ref10 = run_reference(params, grid, 10, T0, step0=STEP0)
    result = (out[0] if accumulate else out).compute(scheduler="sync")
    assert np.array_equal(result, ref10)
