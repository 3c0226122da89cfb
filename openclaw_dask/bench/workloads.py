"""What ``openclaw-dask tune`` measures a config with: the climate step, a matmul, a workflow.

A workload is prepared once per cluster (data persisted on the workers) and then run
repeatedly; each run returns the work it did, so a trial's figure is work per second.
"""

from __future__ import annotations

import itertools
import shutil
import tempfile
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import dask.array as da
from distributed import Client, wait

from openclaw_dask.bench.suite import run_and_forget
from openclaw_dask.config import Config, ConfigError
from openclaw_dask.config.errors import Problem, did_you_mean, not_a_file

BUILTIN = ("climate", "stencil", "matmul")


@dataclass(frozen=True)
class Workload:
    """A named, repeatable piece of work.

    Parameters
    ----------
    name : str
        ``climate``, ``stencil``, ``matmul`` or the path of a workflow file.
    unit : str
        Unit of the work a run returns (``cell-updates``, ``FLOP``, ``runs``).
    description : str
        One line for the report.
    prepare : callable
        ``prepare(client, config) -> run``; ``run()`` does the work once and returns its amount.
    uses_batch_size : bool
        Whether ``distributed.batch_size`` changes what it does (worth sweeping).
    graph_shape : callable, optional
        ``graph_shape(threads, processes, batch_size)``: what the work runs as with that ``K``
        on that many threads and worker processes (latitude bands, steps per task); equal
        shapes are the same task graph, so ``tune`` measures one of them. ``None``: not known
        before a run (a workflow's grid comes from its own steps).
    """

    name: str
    unit: str
    description: str
    prepare: Callable[[Client, Config], Callable[[], float]]
    uses_batch_size: bool = False
    graph_shape: Callable[[int, int, int], tuple[int, int]] | None = None


def _stencil_shape(resolution: float) -> Callable[[int, int, int], tuple[int, int]]:
    def shape(threads: int, processes: int, batch_size: int) -> tuple[int, int]:
        from openclaw_dask.workflows.climate import LatLonGrid
        from openclaw_dask.workflows.ops.climate import band_count, steps_per_task

        bands = band_count(LatLonGrid(resolution).shape, threads, batch_size, processes)
        return bands, steps_per_task(batch_size, bands)

    return shape


def _stencil(resolution: float, steps: int) -> Callable[[Client, Config], Callable[[], float]]:
    def prepare(client: Client, config: Config) -> Callable[[], float]:
        from openclaw_dask.bench.suites.stencil import model_setup, placed_state, run_placed
        from openclaw_dask.workflows.climate import heat_capacity

        params, grid, start = model_setup(resolution)
        capacity = heat_capacity(params, grid)  # once, as the workflow's forcing step
        # the bands and steps per task climate.ebm would use with this config and cluster
        workers = client.nthreads()
        shape = _stencil_shape(resolution)
        bands, k = shape(sum(workers.values()), len(workers), int(config["distributed.batch_size"]))
        state, placed_capacity, homes = placed_state(client, start, capacity, bands)

        def run() -> float:
            run_placed(client, state, homes, params, grid, steps, k, placed_capacity)
            return float(grid.size * steps)

        return run

    return prepare


def _matmul(n: int) -> Callable[[Client, Config], Callable[[], float]]:
    def prepare(client: Client, config: Config) -> Callable[[], float]:
        threads = sum(client.nthreads().values())
        band = -(-n // threads)
        rng = da.random.default_rng(0)
        a, b = client.persist([rng.random((n, n), chunks=(band, n)), rng.random((n, n))])
        wait([a, b])
        client.amm.stop()  # keep B's replicas (the trial's cluster is closed after it)
        client.replicate([b])

        def run() -> float:
            run_and_forget(client, a @ b)
            return 2.0 * n**3

        return run

    return prepare


def _workflow(path: Path) -> Callable[[Client, Config], Callable[[], float]]:
    def prepare(client: Client, config: Config) -> Callable[[], float]:
        from openclaw_dask.workflows.runner import run_workflow

        tmp = Path(tempfile.mkdtemp(prefix="openclaw-tune-"))
        runs = itertools.count()
        address = client.scheduler.address

        def run() -> float:
            run_workflow(path, config, address=address, run_dir=tmp / f"run-{next(runs)}")
            return 1.0

        # every run's outputs (Zarr stores, a report: megabytes each) had stayed in /tmp after
        # the tune; they go once the trial is done with its runs (or at exit, after a Ctrl-C),
        # not in run(), whose time is the trial's figure
        weakref.finalize(run, shutil.rmtree, tmp, ignore_errors=True)
        return run

    return prepare


def workload(name: str) -> Workload:
    """The workload called ``name``, or the workflow at path ``name``.

    Raises
    ------
    ConfigError
        For a name that is neither a built-in workload nor an existing workflow file.
    """
    if name == "climate":
        return Workload(
            name,
            "cell-updates",
            # 0.25°: a grid where the band rule's choice depends on K (on 2 threads one band at
            # K=16, two at 32, the default 64 and 128), so the sweep can find the best;
            # 512 steps, so that K=128 still makes four batches per graph
            "climate.ebm time step, 0.25° grid, 512 steps (latitude bands, K-step halos)",
            _stencil(0.25, 512),
            uses_batch_size=True,
            graph_shape=_stencil_shape(0.25),
        )
    if name == "stencil":
        return Workload(
            name,
            "cell-updates",
            # one band at any K (band_count: two 90-row bands allow K <= 90, where a batch's
            # overhead alone outweighs the grid's 180 rows K times), so batch_size changes
            # nothing here and is not swept
            "climate stencil alone on a 1° grid, 512 steps (one band)",
            _stencil(1.0, 512),
        )
    if name == "matmul":
        return Workload(
            name, "FLOP", "2048² float64 matmul, row bands, B replicated", _matmul(2048)
        )
    path = Path(name)
    try:
        is_file = path.is_file()
    except OSError:  # a name too long to be a file's ("OSError: File name too long", exit 1)
        is_file = False
    if path.suffix in (".yaml", ".yml") and is_file:
        from openclaw_dask.workflows.spec import load_workflow

        workflow = load_workflow(path)  # a bad workflow is bad input now, not after the baseline
        # an iterative step fuses batch_size steps per task (IterativeOp), a map step does not
        iterative = any(step.info.iterative for step in workflow.steps.values())
        return Workload(
            str(path), "runs", f"workflow {path}", _workflow(path), uses_batch_size=iterative
        )
    if path.suffix in (".yaml", ".yml"):
        message = not_a_file(name)
    elif is_file and path.suffix == ".config":
        message = f"{name} is a config, not a workload: a config is given with --config"
    elif is_file:
        message = f"{name} is not a workflow file: a workflow is a .yaml file"
    else:
        message = (
            f"unknown workload {name!r}: expected one of {', '.join(BUILTIN)} or a "
            f"workflow file{did_you_mean(name, BUILTIN)}"
        )
    raise ConfigError([Problem(message, origin="--workload")])


def describe_rate(rate: float, unit: str) -> str:
    """A rate in readable units."""
    scaled: dict[str, tuple[float, str]] = {
        "cell-updates": (1e6, "Mcell/s"),
        "FLOP": (1e9, "GFLOP/s"),
        "runs": (1 / 60, "runs/min"),
    }
    div, label = scaled.get(unit, (1.0, f"{unit}/s"))
    return f"{rate / div:.3g} {label}"
