"""One-shot measurement of the climate kernel on numpy, on CuPy and on the project's CUDA cluster.

Run by ``scripts/gpu-check.sh`` on the GPU device machine (one NVIDIA H200, lent to some
sessions for at most 15 minutes), after the carried wheels are installed; see
``docs/design-notes.md``, "GPU check on the device machine". Every part is recorded whether it
passes or not, and the report is rewritten after each part, so a run that is killed still
leaves what it measured in ``gpu-check.json``.

Parts
-----
``environment``      versions, CPUs, ``nvidia-smi``, the SSH probe's GPU count
``imports``          openclaw_dask, the climate model, dask.distributed, zarr, dask_cuda
``requirements``     Requires-Dist of the carried wheels against what is installed there
``numpy_reference``  :func:`~openclaw_dask.workflows.climate.reference.run_reference` at 0.25°
                     on one thread (threadpoolctl), in Mcell/s
``cupy_reference``   the same on a CuPy state (warmed up, synchronised before the clock
                     stops), in Mcell/s, and its largest difference from numpy
``cuda_cluster``     :func:`~openclaw_dask.runtime.start_cluster` with ``cluster.backend=cuda``
                     (dask-cuda's LocalCUDACluster, verified as users get it), then
                     :func:`~openclaw_dask.workflows.climate.advance` on a CuPy state chunked
                     with :func:`~openclaw_dask.workflows.climate.to_bands`, timed and compared
                     with the single-GPU CuPy reference (bit-identity expected)
``cpu_standin_cluster``  only with ``--dry`` on a machine without a GPU: the cluster part's
                     code on a local CPU cluster with numpy, to test this script (no GPU result)

Each timed run is sized from a short calibration run to take about ``--seconds``.

Without a GPU the CuPy and cluster parts fail; with ``--dry`` they are recorded as skipped
("no GPU here") and do not set the exit code, so the rest can be tried on any machine.

Exit code: 0 when every part that ran passed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import time
import traceback
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a file from anywhere: the package is the checkout's
    sys.path.insert(0, str(ROOT))

RESOLUTION = 0.25  # degrees: 720 x 1440 cells, the stencil benchmark's full size
#: the config a user would give to get one dask-cuda worker per GPU
CLUSTER_OVERRIDES = ("cluster.backend=cuda", "gpu.devices=all")
#: a CuPy result may differ from numpy by round-off only (cuFFT rounds differently)
NUMPY_TOLERANCE = 1e-6
#: versions recorded with the results
PACKAGES = (
    "numpy",
    "cupy-cuda13x",
    "cupy-cuda12x",
    "cuda-core",
    "cuda-bindings",
    "nvidia-ml-py",
    "dask",
    "distributed",
    "dask-cuda",
    "zarr",
    "numcodecs",
    "xarray",
    "pandas",
    "bokeh",
    "tornado",
    "msgpack",
    "cloudpickle",
    "threadpoolctl",
    "pytest",
)
#: requirements that the wheel set leaves out on purpose (see scripts/gpu-wheels.sh)
NOT_CARRIED = {"rapids-dask-dependency", "cupy-cuda12x", "tzdata"}


class NoGPUError(Exception):
    """There is no usable CUDA device here (the reason is the message).

    Parameters
    ----------
    reason : str
        Why not, as CUDA or the import said it.
    found : dict, optional
        What the part found before it needed the GPU (kept in the report).
    """

    def __init__(self, reason: str, found: dict[str, Any] | None = None) -> None:
        super().__init__(reason)
        self.found = found or {}


class SkippedError(Exception):
    """A part that does not apply to this run (the reason is the message); not a failure."""


class Report:
    """The JSON report: one entry per part, rewritten to disk after each part.

    Parameters
    ----------
    path : pathlib.Path
        Where the JSON goes.
    dry : bool
        Whether a missing GPU is accepted (the parts that need one are then skipped).
    """

    def __init__(self, path: Path, dry: bool) -> None:
        self.path = path
        self.dry = dry
        self.data: dict[str, Any] = {"mode": "dry (no GPU accepted)" if dry else "gpu"}
        self.failures: list[str] = []

    def run(self, name: str, fn: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """Run one part, record its result (or its failure) and save the report."""
        print(f"--- {name}", flush=True)
        start = time.perf_counter()
        try:
            entry = {"status": "ok", **fn()}
        except NoGPUError as exc:
            status = "skipped" if self.dry else "failed"
            entry = {"status": status, "reason": f"no GPU here: {exc}", **exc.found}
        except SkippedError as exc:
            entry = {"status": "skipped", "reason": str(exc)}
        except Exception as exc:
            traceback.print_exc()
            entry = {"status": "failed", "error": f"{type(exc).__name__}: {exc}"}
        entry["wall_s"] = round(time.perf_counter() - start, 3)
        if entry.get("problems"):  # it ran to the end, and found something wrong
            entry["status"] = "failed"
            self.failures += [f"{name}: {problem}" for problem in entry["problems"]]
        elif entry["status"] == "failed":
            self.failures.append(name)
        self.data[name] = entry
        print(json.dumps(entry, indent=1, default=str), flush=True)
        self.save()
        return entry

    def save(self) -> None:
        """Write the report as it stands (also after a part that failed)."""
        for key in ("failures", "ok"):  # kept last, after the parts so far
            self.data.pop(key, None)
        self.data["failures"] = self.failures
        self.data["ok"] = not self.failures
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(json.dumps(self.data, indent=1, default=str) + "\n")


# -- helpers --------------------------------------------------------------------------------
def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    found = {"python": platform.python_version(), "executable": sys.executable}
    for name in PACKAGES:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            continue
    return found


def _nvidia_smi() -> str | None:
    query = "name,driver_version,memory.total,clocks.sm,clocks.max.sm,temperature.gpu"
    try:
        run = subprocess.run(
            ["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unavailable: {exc}"
    return (run.stdout or run.stderr).strip()


def _cupy() -> Any:
    """CuPy with at least one device, or :class:`NoGPUError` saying why not."""
    try:
        import cupy
    except ImportError as exc:
        raise NoGPUError(f"cupy does not import ({exc})") from None
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except cupy.cuda.runtime.CUDARuntimeError as exc:
        raise NoGPUError(str(exc)) from None
    if count < 1:
        raise NoGPUError("CUDA reports no device")
    return cupy


def _import_failure(module: str, exc: BaseException) -> str:
    """Why ``module`` did not import: ``not installed``, ``CUDA only`` or ``other``.

    ``CUDA only``: what is missing is CUDA itself (a CUDA Python module such as ``cuda.core``
    or ``cupy``, the driver library, NVML or a device), not a Python package of the project.
    """
    missing = getattr(exc, "name", None) if isinstance(exc, ModuleNotFoundError) else None
    if missing and missing.split(".")[0] == module.split(".")[0]:
        return "not installed"
    if missing:
        cuda = re.match(r"(cuda|cupy\w*|pynvml|rmm|numba\.cuda)(\.|$)", missing)
    else:
        text = f"{type(exc).__name__}: {exc}"
        cuda = re.search(r"libcuda|nvml|cuda driver|cudaError|no CUDA|nvrtc", text, re.I)
    return "CUDA only" if cuda else "other"


def _steps_for(per_step: float, seconds: float, lo: int, hi: int, multiple: int = 1) -> int:
    """Steps that take about ``seconds`` at ``per_step`` s each, in ``[lo, hi]``."""
    n = int(min(hi, max(lo, seconds / max(per_step, 1e-9))))
    return max(multiple, n // multiple * multiple)


def _timed(fn: Callable[[], Any], sync: Callable[[], Any] = lambda: None) -> tuple[Any, float]:
    """``fn()`` and its wall time; ``sync`` runs before the clock starts and before it stops.

    A CuPy call returns once its kernels are queued: without the synchronisation the clock
    would stop long before the device has done the work.
    """
    sync()
    start = time.perf_counter()
    out = fn()
    sync()
    return out, time.perf_counter() - start


def _model() -> tuple[Any, Any, np.ndarray]:
    from openclaw_dask.bench.suites.stencil import model_setup

    return model_setup(RESOLUTION)


def _device_sync() -> None:
    """Wait for every stream of this process's device (the workers use per-thread streams)."""
    import cupy

    cupy.cuda.runtime.deviceSynchronize()


def _device_name(cupy: Any, device: int) -> str:
    name = cupy.cuda.runtime.getDeviceProperties(device)["name"]
    return name.decode() if isinstance(name, bytes) else str(name)


def _worker_gpu() -> dict[str, Any]:
    """Inside a worker: the GPU it was given (pickled by value: this file runs as __main__)."""
    import cupy

    device = cupy.cuda.runtime.getDevice()
    return {
        "CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "device": device,
        "name": _device_name(cupy, device),
    }


# -- parts ----------------------------------------------------------------------------------
def _probe_gpus() -> Any:
    """The GPUs the SSH pre-flight's probe counts on this machine, as it would on a node (its
    ``resources.gpus`` check: NVML, else the driver's list), run as a node's python would."""
    from openclaw_dask.config import load_config
    from openclaw_dask.runtime.preflight import PROBE_MARK, probe_text

    text = probe_text(load_config(None, [], env={}, use_search_path=False))
    run = subprocess.run([sys.executable, "-"], input=text, capture_output=True, text=True)
    line = next((ln for ln in run.stdout.splitlines() if ln.startswith(PROBE_MARK)), None)
    return json.loads(line[len(PROBE_MARK) :])["gpus"] if line else run.stderr[-500:]


def part_environment() -> dict[str, Any]:
    """Versions, the machine, what nvidia-smi says and what the SSH probe counts."""
    return {
        "versions": _versions(),
        "host": platform.node(),
        "cpus": os.cpu_count(),
        "nvidia_smi": _nvidia_smi(),
        "ssh_probe_gpus": _probe_gpus(),
        "pythonpath": os.environ.get("PYTHONPATH", ""),
    }


def part_imports(dry: bool) -> dict[str, Any]:
    """Import what a GPU run needs; in dry mode a dask_cuda that lacks only CUDA is accepted."""
    import importlib

    results, problems = {}, []
    for module in (
        "openclaw_dask",
        "openclaw_dask.workflows.climate",
        "dask.distributed",
        "zarr",
        "bokeh",
        "dask_cuda",
    ):
        try:
            importlib.import_module(module)
            results[module] = "ok"
            continue
        except Exception as exc:
            why = _import_failure(module, exc)
            results[module] = f"{why}: {exc!r}"
        # without a GPU, dask_cuda may be absent (it is the gpu extra) or lack CUDA's modules
        if not (dry and (why == "CUDA only" or (why, module) == ("not installed", "dask_cuda"))):
            problems.append(f"{module}: {results[module]}")
    return {"modules": results, "problems": problems}


def part_requirements(wheels: Path | None) -> dict[str, Any]:
    """Check the carried wheels' requirements against the versions installed here.

    The image's packages are not pinned by this project; a version a carried package does not
    accept is recorded (and fails the part), since it can break at run time in ways an import
    does not show.
    """
    from importlib.metadata import PackageNotFoundError, distribution, version

    from packaging.requirements import Requirement

    if wheels is None:
        raise SkippedError("no wheels were installed by this run (--wheels not given)")
    names = sorted({w.name.split("-")[0] for w in wheels.glob("*.whl")})
    conflicts = []
    for name in names:
        try:
            dist = distribution(name)
        except PackageNotFoundError:
            conflicts.append(f"{name}: carried but not installed")
            continue
        for text in dist.requires or []:
            req = Requirement(text)
            if req.marker and not req.marker.evaluate({"extra": ""}):
                continue
            if re.sub(r"[-_.]+", "-", req.name).lower() in NOT_CARRIED:
                continue
            try:
                have = version(req.name)
            except PackageNotFoundError:
                conflicts.append(f"{name} needs {req}: not installed")
                continue
            if not req.specifier.contains(have, prereleases=True):
                conflicts.append(f"{name} needs {req}: found {have}")
    return {"carried": names, "problems": conflicts}


def part_numpy(state: dict[str, Any], seconds: float) -> dict[str, Any]:
    """The reference on one thread of this machine's CPU."""
    from threadpoolctl import threadpool_limits

    from openclaw_dask.workflows.climate.reference import run_reference

    params, grid, start = _model()
    with threadpool_limits(limits=1):
        run_reference(params, grid, 1, start)  # warm-up: page faults, FFT plan
        _, calib = _timed(lambda: run_reference(params, grid, 4, start))
        steps = _steps_for(calib / 4, seconds, lo=8, hi=2000)
        result, elapsed = _timed(lambda: run_reference(params, grid, steps, start))
    rate = grid.size * steps / elapsed / 1e6
    state["numpy"] = (steps, result, rate)
    return {
        "grid": list(grid.shape),
        "resolution_deg": RESOLUTION,
        "threads": 1,
        "steps": steps,
        "seconds": round(elapsed, 4),
        "mcell_per_s": round(rate, 2),
    }


def part_cupy(state: dict[str, Any], seconds: float) -> dict[str, Any]:
    """The reference on the device, and its difference from the numpy result."""
    cupy = _cupy()
    from openclaw_dask.workflows.climate.reference import run_reference

    params, grid, start = _model()
    on_device = cupy.asarray(start)
    sync = _device_sync
    # warm-up: compiles the elementwise kernels (NVRTC) and makes the cuFFT plans
    _timed(lambda: run_reference(params, grid, 8, on_device), sync)
    _, calib = _timed(lambda: run_reference(params, grid, 32, on_device), sync)
    steps = _steps_for(calib / 32, seconds, lo=64, hi=50_000)
    _, elapsed = _timed(lambda: run_reference(params, grid, steps, on_device), sync)
    entry: dict[str, Any] = {
        "device": _device_name(cupy, 0),
        "steps": steps,
        "seconds": round(elapsed, 4),
        "mcell_per_s": round(grid.size * steps / elapsed / 1e6, 2),
        "problems": [],
    }
    if "numpy" in state:  # same steps from the same start as the numpy run
        np_steps, np_result, np_rate = state["numpy"]
        on_host = run_reference(params, grid, np_steps, on_device).get()
        diff = float(np.max(np.abs(on_host - np_result)))
        entry |= {
            "max_abs_diff_vs_numpy": diff,
            "diff_steps": np_steps,
            "speedup_vs_numpy_1thread": round(entry["mcell_per_s"] / np_rate, 2),
        }
        if not diff <= NUMPY_TOLERANCE:  # also catches NaN
            entry["problems"].append(f"differs from numpy by {diff:.3g} °C after {np_steps} steps")
    return entry


def part_cluster(state: dict[str, Any], seconds: float, standin: bool = False) -> dict[str, Any]:
    """The project's CUDA cluster, as ``--set cluster.backend=cuda`` starts it, running advance.

    Parameters
    ----------
    state : dict
        Results shared between parts (unused here; kept for a uniform signature).
    seconds : float
        Target duration of the timed run.
    standin : bool, optional
        Run the same code on a local CPU cluster with numpy arrays instead, to test this
        function on a machine without a GPU (``--dry`` does so); nothing of it is a GPU result.
    """
    import dask.array as da
    from distributed import futures_of, get_task_stream, wait

    from openclaw_dask import load_config, plan_cluster, start_cluster
    from openclaw_dask.bench.suites.stencil import task_profile
    from openclaw_dask.workflows.climate import advance, band_chunks, to_bands
    from openclaw_dask.workflows.climate.reference import run_reference

    overrides = ["cluster.backend=local"] if standin else list(CLUSTER_OVERRIDES)
    config = load_config(None, overrides)
    plan = plan_cluster(config, strict=False)  # the plan users see with `config plan`
    entry: dict[str, Any] = {
        "overrides": overrides,
        "plan": {
            "backend": plan.backend,
            "cluster_class": plan.cluster_class,
            "cluster_kwargs": plan.cluster_kwargs,
            "warnings": plan.warnings,
        },
        "problems": [],
    }
    if standin:
        xp, sync, worker_info = np, (lambda: None), (lambda: {})
    else:
        try:
            xp, sync, worker_info = _cupy(), _device_sync, _worker_gpu
        except NoGPUError as exc:  # the plan is all a machine without a GPU can show
            del entry["problems"]
            raise NoGPUError(str(exc), entry) from None
    params, grid, start = _model()
    batch = int(config["distributed.batch_size"])
    t0 = time.perf_counter()
    with start_cluster(config) as client, client.as_current():
        entry["startup_s"] = round(time.perf_counter() - t0, 2)
        nthreads = client.nthreads()
        info = client.run(worker_info)
        entry["workers"] = {a: {"threads": n, **info[a]} for a, n in nthreads.items()}
        bands = max(2, sum(nthreads.values()))  # one band per worker thread, as the benchmark
        entry |= {"bands": bands, "batch_size": batch}
        on_device = xp.asarray(start)
        chunks = (band_chunks(grid.nlat, bands), -1)
        try:
            if standin:  # exercise the fallback below, the branch a GPU run may need
                raise TypeError("stand-in: the fallback is tested, to_bands has unit tests")
            banded = to_bands(on_device, bands)
            entry["to_bands"] = "ok"
        except Exception as exc:
            # e.g. np.asarray refusing a CuPy array: the user's path is broken. Record it, then
            # measure the cluster all the same with a state chunked the same way.
            entry["to_bands"] = f"failed: {type(exc).__name__}: {exc}"
            if not standin:
                entry["problems"].append(f"to_bands(cupy array) raised {entry['to_bands'][8:]}")
            banded = da.from_array(on_device, chunks=chunks, asarray=False, name="state-timed")
        entry["state_meta"] = type(banded._meta).__module__

        def persisted(state: da.Array) -> da.Array:
            [on_workers] = client.persist([state])
            wait(on_workers)
            return on_workers

        def copy(tag: str) -> da.Array:
            # Each run starts from its own state (its own keys): advance names its tasks after
            # the state, and a graph resubmitted while the scheduler is still forgetting the
            # same keys of the last run can fail (see run_and_forget in bench/suite.py).
            name = f"state-{tag}-{uuid.uuid4().hex}"
            return persisted(da.from_array(on_device, chunks=chunks, asarray=False, name=name))

        def run(state: da.Array, steps: int) -> Any:
            lazy = advance(state, params, grid, steps, batch)
            entry["tasks"] = len(lazy.__dask_graph__())
            [out] = client.persist([lazy])
            wait(out)
            for future in futures_of(out):
                if future.status != "finished":
                    future.result()  # raises the task's error here, not at compute time
            client.run(sync)  # a finished task has only queued its kernels
            return out

        warm, calib_state = copy("warm"), copy("calibrate")  # persisted before any clock
        _timed(lambda: run(warm, batch))  # warm-up: kernels compiled and plans made in workers
        _, calib = _timed(lambda: run(calib_state, 4 * batch))
        steps = _steps_for(calib / (4 * batch), seconds, lo=4 * batch, hi=20_000, multiple=batch)
        state = persisted(banded)
        out, elapsed = _timed(lambda: run(state, steps))
        result = out.compute()
        entry |= {
            "steps": steps,
            "seconds": round(elapsed, 4),
            "mcell_per_s": round(grid.size * steps / elapsed / 1e6, 2),
            "result_type": f"{type(result).__module__}.{type(result).__name__}",
        }
        # where a batch's time goes (on the H200 on 2026-12-04 a 64-step batch took ~470 ms
        # against ~45 ms of kernel in one process): one more run in Dask's task stream; a GPU
        # task's compute ends when its kernels are queued, so its wait shows the device's time
        profiled = copy("profile")
        with get_task_stream(client) as stream:
            began = time.time()
            run(profiled, steps)
            ended = time.time()
        entry["profile"] = task_profile(stream.data, sum(nthreads.values()), began, ended)
        reference, ref_elapsed = _timed(lambda: run_reference(params, grid, steps, on_device), sync)
        entry["single_process_reference_mcell_per_s"] = round(
            grid.size * steps / ref_elapsed / 1e6, 2
        )
        result = xp.asarray(result)
        identical = bool(xp.array_equal(result, reference))
        diff = float(xp.max(xp.abs(result - reference)))
        entry |= {"bit_identical_to_reference": identical, "max_abs_diff": diff}
        if not identical:
            entry["problems"].append(
                f"not bit-identical to the single-process reference (max |diff| {diff:.3g})"
            )
    return entry


def main(argv: list[str] | None = None) -> int:
    """Run every part, write the JSON report and return the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", ".")))
    parser.add_argument("--dry", action="store_true", help="accept a machine without a GPU")
    parser.add_argument(
        "--seconds", type=float, default=3.0, help="target duration of each timed run"
    )
    parser.add_argument(
        "--wheels", type=Path, help="the folder of the wheels this run installed (.whl)"
    )
    args = parser.parse_args(argv)
    report = Report(args.out / "gpu-check.json", args.dry)
    state: dict[str, Any] = {}
    report.run("environment", part_environment)
    report.run("imports", lambda: part_imports(args.dry))
    report.run("requirements", lambda: part_requirements(args.wheels))
    report.run("numpy_reference", lambda: part_numpy(state, args.seconds))
    report.run("cupy_reference", lambda: part_cupy(state, args.seconds))
    cluster = report.run("cuda_cluster", lambda: part_cluster(state, args.seconds))
    if args.dry and cluster["status"] == "skipped":
        # no GPU: run the cluster part's code on CPU workers, so that it is tested before it
        # spends device time (numpy state, local cluster; not a GPU result)
        report.run("cpu_standin_cluster", lambda: part_cluster(state, args.seconds, True))
    report.save()
    print(f"=== gpu-check.json: {report.path}")
    for name, entry in report.data.items():
        if isinstance(entry, dict) and entry["status"] == "skipped":
            print(f"=== skipped {name}: {entry['reason']}")
    print("=== failures: " + ("; ".join(report.failures) if report.failures else "none"))
    return 0 if report.data["ok"] else 1


if __name__ == "__main__":  # the cluster's worker processes re-import this file
    sys.exit(main())
