"""workflows/climate.yaml through the engine: outputs, recorded physics, determinism."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import dask
import numpy as np
import psutil
import pytest
import xarray as xr

from openclaw_dask.config import ConfigError, load_config
from openclaw_dask.runtime import start_cluster
from openclaw_dask.workflows import zarrio
from openclaw_dask.workflows.climate import EBMParams, LatLonGrid, band_homes, insolation_factor
from openclaw_dask.workflows.context import StepContext
from openclaw_dask.workflows.ops.climate import EnergyBalanceModel, choose_bands, forcing
from openclaw_dask.workflows.runner import run_workflow
from tests.conftest import ROOT
from tests.integration.procs import command_line
from tests.integration.test_workflow_run import start_in_own_group, wait_for_checkpoint
from tests.unit.test_workflow_spec import climate_line

CLIMATE = ROOT / "workflows/climate.yaml"
QUICK = [
    "cluster.dashboard_address=127.0.0.1:0",
    "distributed.batch_size=16",  # the two bands some tests force on the 45-row grid need K <= 22
    "params.resolution=4.0",
    "params.spinup_years=1",
    "params.years=1",
]

#: The two-band runs that lose a worker mid-run (locally and over SSH): one year (2239 steps at
#: 4°) in windows of 100 steps, so the kill after step 300 leaves ~19 windows to go.
KILLED_RUN_SETS = [*QUICK, "params.spinup_years=0", "distributed.sync_interval=100"]


def test_climate_workflow_outputs_and_record(tmp_path: Path) -> None:
    rec = run_workflow(CLIMATE, overrides=QUICK, run_dir=tmp_path / "run")
    assert rec["status"] == "completed"
    run = Path(rec["run_dir"])
    monthly = xr.open_zarr(run / "monthly.zarr")
    T = monthly["T"]
    assert T.dims == ("time", "lat", "lon") and T.shape == (12, 45, 90)
    assert T.attrs["units"] == "degC" and monthly["lat"].attrs["units"] == "degrees_north"
    assert T.attrs["cell_methods"] == "time: mean"
    # CF dates: year 1 is the first after the spin-up, each mean at its own month's middle
    dates = monthly.indexes["time"]
    assert [(d.year, d.month) for d in dates] == [(1, m) for m in range(1, 13)]
    assert dates[0].day == 16 and dates[0].calendar == "julian"
    assert monthly["T"].groupby("time.season").mean().sizes["season"] == 4
    for name in ("A", "B", "D", "Q", "s2", "albedo_free", "albedo_p2", "albedo_ice"):
        assert name in monthly.attrs, name  # enough to recompute North's solution
    assert monthly.attrs["A"] == 203.3 and monthly.attrs["Q"] == 334.4
    t = T.values
    assert np.isfinite(t).all() and -60 < t.min() and t.max() < 45
    amplitude = xr.open_zarr(run / "seasonal_amplitude.zarr")["T"]
    mask = xr.open_zarr(run / "forcing.zarr")["land_mask"].values.astype(bool)
    # land is less inert than the ocean: larger seasonal swings at the same latitude band
    mid = (np.abs(monthly["lat"].values) > 30) & (np.abs(monthly["lat"].values) < 60)
    land_amp = amplitude.values[mid][mask[mid]].mean()
    ocean_amp = amplitude.values[mid][~mask[mid]].mean()
    assert land_amp > 2 * ocean_amp
    # the recorded annual-mean insolation is the mean of what the model's steps see in a year
    forcing = xr.open_zarr(run / "forcing.zarr")
    grid = LatLonGrid(4.0)
    params = EBMParams().resolved(grid, float(forcing["heat_capacity"].min()))
    spy = forcing.attrs["steps_per_year"]
    year = [insolation_factor(params, grid.sin_lat, grid.cos_lat, k) for k in range(spy)]
    assert np.array_equal(forcing["insolation"].values, params.Q * np.mean(year, axis=0))
    edges = xr.open_zarr(run / "ice_edge.zarr")
    assert edges["north"].attrs["units"] == "degrees_north"
    # every variable and coordinate of every store says its units
    stores = ["forcing", "monthly", "final", "zonal_mean", "global_mean", "ice_edge"]
    for store in [*stores, "seasonal_amplitude"]:
        ds = xr.open_zarr(run / f"{store}.zarr", decode_timedelta=False)
        for name, var in ds.variables.items():
            # decoded dates keep their units in the encoding
            assert "units" in {**var.attrs, **var.encoding}, f"{store}.zarr {name}"
    assert edges["year"].attrs["units"] == "years" and edges["year"].values.tolist() == [1]
    series = xr.open_zarr(run / "global_mean.zarr")
    assert series.indexes["time"].equals(dates) and series["year"].values.tolist() == [1]
    metrics = rec["steps"]["analyse"]["metrics"]
    assert 60 < metrics["ice_edge_north"] < 80 and -80 < metrics["ice_edge_south"] < -60
    maps = ("annual_mean_map.png", "seasonal_amplitude_map.png")
    pngs = ("global_mean.png", *maps, "zonal_mean.png")
    assert rec["steps"]["analyse"]["metrics"]["plots"] == list(pngs)
    for png in pngs:
        assert (run / "plots" / png).stat().st_size > 5_000


def _banded(tmp_path: Path, bands: int = 2) -> Path:
    """The climate workflow with ``bands`` bands of the 45-row grid (halo exchange between
    tasks)."""
    banded = tmp_path / f"climate-{bands}-bands.yaml"
    banded.write_text(
        CLIMATE.read_text().replace("      years:", f"      bands: {bands}\n      years:")
    )
    assert f"bands: {bands}" in banded.read_text()
    return banded


def test_bands_the_grid_refuses_stop_the_run_before_any_step(tmp_path: Path) -> None:
    """A ``bands:`` thinner than ``distributed.batch_size`` (or above the grid's rows) was
    refused when the simulate step started: after the cluster, the run directory and the
    forcing step's work, exit 1 and a resume hint. Now the dry run and the run refuse it
    before any of that, like every other bad value."""
    for bands, said in (
        (3, "into bands of 15, fewer than distributed.batch_size=16"),
        (46, "46 is more than the 45 rows of the 4.0° grid"),
    ):
        for dry_run in (True, False):
            run_dir = tmp_path / f"run-{bands}-{dry_run}"
            with pytest.raises(ConfigError) as info:
                run_workflow(
                    _banded(tmp_path, bands), overrides=QUICK, run_dir=run_dir, dry_run=dry_run
                )
            [problem] = [str(p) for p in info.value.problems]
            assert (
                f":{climate_line('years')}: steps.simulate.with.bands: " in problem
                and said in problem
            ), problem
            assert not run_dir.exists()  # no run directory, no forcing.zarr


def test_each_band_runs_on_its_home_worker(tmp_path: Path) -> None:
    """Through the runner (which persists each window unoptimised, keeping the restrictions):
    a band's step tasks run on its home worker. Without homes the bands of the
    fresh state land wherever the scheduler puts them, often both on one worker for good."""
    layout = [*QUICK[:2], "parallel.processes=2"]  # the workers' config: QUICK's batch_size
    run = [*QUICK, "params.spinup_years=0", "parallel.thread_pool_size=2"]
    with start_cluster(overrides=[*layout, "parallel.thread_pool_size=2"]) as client:
        client.get_task_stream()  # registers the scheduler's task-stream plugin
        started = time.time()
        rec = run_workflow(
            _banded(tmp_path),
            overrides=[*layout, *run],
            address=client.scheduler.address,
            report=False,
        )
        stream = client.get_task_stream(start=started)
        homes = band_homes(client.nthreads(), 2)
    assert rec["status"] == "completed"
    steps = [r for r in stream if r["key"][0].startswith("ebm-steps")]
    assert len(steps) > 100
    home = [r["worker"] == homes[r["key"][-2]] for r in steps]
    # loose restrictions: work stealing may still run a batch elsewhere now and then
    assert sum(home) >= 0.9 * len(home)


def test_deterministic_mode_is_bit_identical_across_layouts(tmp_path: Path) -> None:
    layouts = {
        "1x1": ["parallel.processes=1", "parallel.thread_pool_size=1"],
        "2x1": ["parallel.processes=2", "parallel.thread_pool_size=2"],
        "1x2": ["parallel.processes=1", "parallel.thread_pool_size=2"],
    }
    banded = _banded(tmp_path)  # halo exchange between tasks is part of the run
    common = [
        *QUICK,
        "params.spinup_years=0",
        "parallel.deterministic_mode=true",
        "distributed.sync_interval=500",
    ]
    sums = {}
    for name, layout in layouts.items():
        rec = run_workflow(
            banded, overrides=[*common, *layout], run_dir=tmp_path / name, report=False
        )
        assert rec["status"] == "completed"
        workers = rec["cluster"]["workers"].values()
        assert sum(w["nthreads"] for w in workers) == int(layout[1].rsplit("=", 1)[1])
        sums[name] = {s: rec["steps"][s]["checksums"] for s in ("simulate", "analyse")}
    assert sums["1x1"] == sums["2x1"] == sums["1x2"]


def test_every_banding_gives_the_same_bits(tmp_path: Path) -> None:
    """Not only the stepper: the analysis sums across bands in an order that does not depend on
    them (row sums, then one sum over the whole latitude column), so deterministic mode need not
    fix the band count and can use every core."""
    layout = [QUICK[0], "distributed.batch_size=8"]  # bands of 15 rows need K <= 15
    common = [*QUICK, *layout, "params.spinup_years=0"]
    sums = {}
    with start_cluster(load_config(None, layout)) as client:
        for bands in (1, 2, 3):
            rec = run_workflow(
                _banded(tmp_path, bands),
                overrides=common,
                run_dir=tmp_path / str(bands),
                address=client.scheduler.address,
                report=False,
            )
            assert rec["status"] == "completed"
            monthly = xr.open_zarr(Path(rec["run_dir"]) / "monthly.zarr")
            assert len(monthly["T"].chunks[1]) == bands  # stored as the model ran
            # run.json says how the grid was laid out: the 45 rows as even as they split,
            # K = 8 with halos, without them a month (2239 steps a year at 4°) a task
            layout_said = rec["steps"]["simulate"]["metrics"]["decomposition"]
            rows = layout_said.pop("band_rows")
            assert (len(rows), sum(rows), max(rows) - min(rows) <= 1) == (bands, 45, True)
            assert layout_said == {
                "steps_per_task": 8 if bands > 1 else 187,
                "worker_threads": sum(client.nthreads().values()),
            }
            sums[bands] = {
                f"{step}/{store}/{name}": digest
                for step in ("simulate", "analyse")
                for store, arrays in rec["steps"][step]["checksums"].items()
                for name, digest in arrays.items()
            }
    assert len(sums[1]) > 10
    assert sums[1] == sums[2] == sums[3]


def _largest_array_in_graph(array: Any) -> int:
    graph = dict(array.__dask_graph__())
    found = [0]

    def walk(obj: Any) -> None:
        if isinstance(obj, np.ndarray):
            found.append(obj.nbytes)
        elif isinstance(obj, (tuple, list)):
            for item in obj:
                walk(item)
        elif hasattr(obj, "args"):  # a dask Task
            walk(tuple(obj.args))

    for task in graph.values():
        walk(task)
    return max(found)


def test_host_fields_go_to_the_workers_once_not_inside_graphs(tmp_path: Path) -> None:
    """The forcing's fields and the first state are placed on the bands' homes (at 0.125° they
    made Dask warn of 32-36 MiB graphs); the graphs only name them."""
    config = load_config(None, ["cluster.dashboard_address=null"])
    with start_cluster(config) as client, client.as_current():
        ctx = StepContext("forcing", config, client, tmp_path, {}, {})
        forcing_ds = forcing(ctx, resolution=1.0)["forcing"]  # 180 x 360: 518 kB of capacity
        for name in ("heat_capacity", "land_mask"):
            assert _largest_array_in_graph(forcing_ds[name].data) < 10_000, name
        capacity = forcing_ds["heat_capacity"].values
        assert capacity.shape == (180, 360) and np.isfinite(capacity).all()
        store = tmp_path / "forcing.zarr"
        dask.compute(zarrio.write(forcing_ds, store, config))
        ctx = StepContext(
            "simulate",
            config,
            client,
            tmp_path,
            {},
            {"forcing": {"forcing": zarrio.open_output(store)}},
        )
        state = EnergyBalanceModel(ctx, years=1, spinup_years=0).initial_state()
        assert _largest_array_in_graph(state["T"].data) < 10_000
        assert state["T"].chunks[0] == forcing_ds["heat_capacity"].chunks[0]


@pytest.mark.parametrize(("processes", "bands"), [(1, 2), (2, 1)])
def test_the_band_count_follows_the_cluster_s_worker_processes(
    tmp_path: Path, processes: int, bands: int
) -> None:
    """On one worker process a batch has no halo task and costs less, so 0.4° at the default
    K = 64 runs two bands on two threads there (701 against 613 Mcell/s measured) and one band
    on two workers of one thread (634 against 616)."""
    sets = ["cluster.dashboard_address=null", "parallel.thread_pool_size=2"]
    config = load_config(None, [*sets, f"parallel.processes={processes}"])
    with start_cluster(config) as client:
        ctx = StepContext("simulate", config, client, tmp_path, {}, {})
        assert (ctx.worker_threads, ctx.worker_processes) == (2, processes)
        assert choose_bands(LatLonGrid(0.4), ctx) == bands


def test_a_worker_lost_mid_run_costs_one_window_and_changes_no_bit(
    tmp_path: Path, uninterrupted_banded_run: dict[str, Any]
) -> None:
    """The climate model sends its first state and capacity to the workers once, so Dask alone
    cannot recompute a band whose worker died: the run continues from its last checkpoint."""
    banded = _banded(tmp_path)
    run_dir = tmp_path / "killed"
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
    proc = start_in_own_group(run_dir, ["--no-report", "--set", *KILLED_RUN_SETS], banded, **pipes)
    try:
        seen = wait_for_checkpoint(proc, run_dir, 300, name="simulate")
        workers = [
            p
            for p in psutil.Process(proc.pid).children(recursive=True)
            if "spawn_main" in command_line(p)
        ]
        assert seen >= 300 and len(workers) == 2, (seen, workers, proc.poll())
        workers[-1].send_signal(signal.SIGKILL)  # its nanny starts a new one
        _, stderr = proc.communicate(timeout=240)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 0, stderr
    assert "simulate: lost worker tcp://" in stderr and "(recovery 1 of 3 from it)" in stderr, (
        stderr
    )
    killed = json.loads((run_dir / "run.json").read_text())
    [recovery] = killed["steps"]["simulate"]["recoveries"]
    assert recovery["from_step"] >= 300

    whole = uninterrupted_banded_run
    for name in ("simulate", "analyse"):
        assert killed["steps"][name]["checksums"] == whole["steps"][name]["checksums"], name


def test_the_default_spin_up_leaves_the_climate_in_equilibrium(tmp_path: Path) -> None:
    """The defaults' recorded years are an equilibrium climate: their annual global means agree
    to 0.01 K (3 spin-up years left 0.35 K of drift), and the climate is the present one that
    North, Cahalan & Coakley calibrate to. At 4° (the relaxation time hardly depends on the
    grid: 2° gives the same to 0.02 K), default spin-up and years. A finer run started from
    that state (``params.initial``) needs no spin-up."""
    overrides = ["cluster.dashboard_address=127.0.0.1:0", "params.resolution=4.0"]
    rec = run_workflow(CLIMATE, overrides=overrides, run_dir=tmp_path / "run", report=False)
    annual = xr.open_zarr(Path(rec["run_dir"]) / "global_mean.zarr")["T_annual"].values
    assert annual.shape == (2,)
    assert abs(annual[1] - annual[0]) < 0.01, annual
    assert 14.0 < annual[1] < 14.6, annual
    metrics = rec["steps"]["analyse"]["metrics"]
    assert abs(metrics["ice_edge_north"] - 71.8) < 2.0, metrics
    assert abs(metrics["ice_edge_south"] + 71.8) < 2.0, metrics

    # that equilibrium, regridded, starts a 2° run with no spin-up already in equilibrium
    warm = [*overrides[:1], "params.resolution=2.0", "params.spinup_years=0"]
    warm.append(f"params.initial={rec['run_dir']}")
    rec = run_workflow(CLIMATE, overrides=warm, run_dir=tmp_path / "warm", report=False)
    monthly = xr.open_zarr(Path(rec["run_dir"]) / "monthly.zarr")
    assert monthly.attrs["initial_state"] == str(Path(rec["run_dir"]).parent / "run" / "final.zarr")
    annual = xr.open_zarr(Path(rec["run_dir"]) / "global_mean.zarr")["T_annual"].values
    assert abs(annual[1] - annual[0]) < 0.02 and 14.0 < annual[0] < 14.6, annual

    # the state it started from deleted, the run can still be finished: a lost analysis is
    # made again (the completed simulation is not checked again; it was refused, "no such
    # Zarr store", and only a whole new run was left); a simulation that must run again is
    shutil.rmtree(tmp_path / "run")
    shutil.rmtree(tmp_path / "warm" / "ice_edge.zarr")
    again = run_workflow(None, resume=tmp_path / "warm", report=False)
    assert again["status"] == "completed" and (tmp_path / "warm" / "ice_edge.zarr").is_dir()
    assert again["attempts"] == 2 and "skipped" not in again["steps"]["analyse"]
    assert "skipped" in again["steps"]["simulate"] and "skipped" in again["steps"]["forcing"]
    shutil.rmtree(tmp_path / "warm" / "final.zarr")
    with pytest.raises(ConfigError, match=r"steps\.simulate\.with\.initial: .*no such Zarr store"):
        run_workflow(None, resume=tmp_path / "warm", report=False)


#: An op beside the workflow: the climate model, writing down before each window how many
#: tasks each worker still knows (released ones included).
CHAIN_PROBE = """
from pathlib import Path

from openclaw_dask.workflows.ops.climate import EnergyBalanceModel


def _known(dask_worker):
    return len(dask_worker.state.tasks)


class Counted(EnergyBalanceModel):
    def advance(self, state, step0, nsteps):
        known = max(self.ctx.client.run(_known).values())
        with open(Path(__file__).with_name("known.txt"), "a") as f:
            f.write(f"{known}\\n")
        return super().advance(state, step0, nsteps)
"""


def test_windows_started_from_their_checkpoint_change_no_bit_and_end_the_workers_chain(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker keeps a released task's record while a task that depends on it is known there,
    and each window's first tasks depend on the last window's: the workers' records had grown
    with the run (at 0.25°, ~0.7 GB a worker a model year). A window that starts from the
    state read back from its checkpoint (CHAIN_TASKS, here every window) gives the same bits,
    and the workers forget the chain before it."""
    from openclaw_dask.workflows import iterative

    workflow = tmp_path / "chain.yaml"
    workflow.write_text(
        _banded(tmp_path).read_text().replace("op: climate.ebm", "op: openclaw_test_chain:Counted")
    )
    (tmp_path / "openclaw_test_chain.py").write_text(CHAIN_PROBE)
    known = tmp_path / "known.txt"
    sums, counts = {}, {}
    layout = [QUICK[0], QUICK[1], "distributed.sync_interval=100"]
    with start_cluster(load_config(None, layout)) as client:
        for every, threshold in (("never", 10**12), ("each", 1)):
            monkeypatch.setattr(iterative, "CHAIN_TASKS", threshold)
            known.unlink(missing_ok=True)
            rec = run_workflow(
                workflow,
                overrides=KILLED_RUN_SETS,
                run_dir=tmp_path / every,
                address=client.scheduler.address,
                report=False,
            )
            assert rec["status"] == "completed"
            sums[every] = {
                f"{step}/{store}/{name}": digest
                for step in ("simulate", "analyse")
                for store, arrays in rec["steps"][step]["checksums"].items()
                for name, digest in arrays.items()
            }
            counts[every] = [int(n) for n in known.read_text().split()]
    assert len(sums["never"]) > 10 and sums["never"] == sums["each"]
    windows = len(counts["never"])
    assert windows == len(counts["each"]) > 15
    grown = counts["never"][-1] - counts["never"][windows // 2]
    assert grown > 50, counts["never"]  # ~16 tasks a window, kept (6 -> 387 in 23 windows)
    # (~33 in every window)
    assert max(counts["each"][windows // 2 :]) < counts["never"][windows // 2], counts["each"]


def test_a_forcing_made_again_with_other_physics_runs_the_model_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``climate.ebm`` takes its physics from ``forcing.zarr``'s attributes. A ``forcing`` run
    again after ``olr_intercept``'s default was edited writes the same arrays, and a resume
    had skipped ``simulate`` and ``analyse`` as up to date: outputs of A = 203.3 under a
    record that said 230. The checksums now cover the stores' attributes.

    The resume's workers compile for another CPU (``NUMBA_CPU_NAME=generic``), which changes
    the model's bits: in deterministic mode that is said and kept in ``software_changed``
    (it was not recorded anywhere)."""
    workflow = tmp_path / "climate.yaml"
    text = CLIMATE.read_text()
    workflow.write_text(text)
    run_dir = tmp_path / "run"
    sets = [*QUICK, "params.spinup_years=0", "parallel.deterministic_mode=true"]
    first = run_workflow(workflow, overrides=sets, run_dir=run_dir, report=False)
    numerics = {w["numerics"]["cpu"] for w in first["cluster"]["workers"].values()}
    assert len(numerics) == 1 and "generic" not in numerics, numerics
    line = "olr_intercept:  {type: float, default: "
    edited = text.replace(f"{line}203.3,", f"{line}230.0,")
    assert edited != text
    workflow.write_text(edited)
    monkeypatch.setenv("NUMBA_CPU_NAME", "generic")  # the local workers inherit it
    said: list[str] = []
    again = run_workflow(workflow, resume=run_dir, report=False, announce=said.append)
    assert again["status"] == "completed"
    for step in ("forcing", "simulate", "analyse"):
        assert "skipped" not in again["steps"][step], step
    assert xr.open_zarr(run_dir / "final.zarr").attrs["A"] == 230.0
    simulate = (first["steps"]["simulate"]["checksums"], again["steps"]["simulate"]["checksums"])
    assert simulate[0]["monthly"]["T"] != simulate[1]["monthly"]["T"]
    forcing = (first["steps"]["forcing"]["checksums"], again["steps"]["forcing"]["checksums"])
    # the same arrays, other attributes
    assert {k: v for k, v in forcing[0]["forcing"].items() if k != zarrio.ATTRS_CHECKSUM} == {
        k: v for k, v in forcing[1]["forcing"].items() if k != zarrio.ATTRS_CHECKSUM
    }
    change = f"workers' cpu {numerics.pop()} -> generic"
    assert f"attempt 2: {change}" in again["software_changed"]  # (and its vector features)
    assert any(s.startswith("note: the workers compute unlike") and change in s for s in said)
