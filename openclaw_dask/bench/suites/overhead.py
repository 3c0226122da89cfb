"""``overhead``: per-task cost on the cluster, and ``submit`` vs the same graph in plain Dask.

Per-task cost: the round trip of one trivial task (submit, result) and the amortised cost of
many trivial tasks submitted together. The round trip is mostly Dask's own batching: the
client sends to the scheduler at most every 10 ms and the scheduler to a worker every 5 ms
(``BatchedSend`` intervals in ``distributed``), so one task at a time waits out those
intervals on any machine (2-core VM, 2026-12-02: a median of 10.6 ms, and 5.8 ms with the
client's interval set to 0.5 ms by hand). Engine overhead: ``workflows/example.yaml`` through
:func:`~openclaw_dask.workflows.runner.run_workflow` (what ``openclaw-dask submit`` calls,
attached to this cluster) vs the same op functions driven by hand with plain Dask, persisting
the state at the same sync points (what a careful user writes to keep the graph small). The
engine adds checkpoints, the run record with checksums, progress tracking and the worker
checks on top.

``submit`` writes Dask's ``performance_report`` by default, bokeh rendering on the scheduler
whatever the run's size (0.3-0.7 s measured on the 2-core VMs, 1.3 s on a 2 GHz core). So the
engine is compared like for like twice: with the report against plain Dask inside
``distributed.performance_report``, and with ``--no-report`` against bare plain Dask. Default
``submit`` against bare plain Dask is reported too (no goal): that is the report's price on a
run this short.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import dask
import xarray as xr
from distributed import performance_report, wait

from openclaw_dask.bench.suite import BenchContext, SuiteResult
from openclaw_dask.bench.timing import Timing, interleaved, ratio, round_ratios
from openclaw_dask.workflows import zarrio
from openclaw_dask.workflows.context import StepContext
from openclaw_dask.workflows.ops.example import Diffuse, field, profile
from openclaw_dask.workflows.runner import run_workflow

#: ``record_every`` of workflows/example.yaml
RECORD_EVERY = 80
#: The example workflow, package data beside its ops (``workflows/example.yaml`` in a checkout
#: links to it): the repository's copy was "file not found" in any install but an editable one
EXAMPLE = Path(__file__).resolve().parents[2] / "workflows" / "ops" / "example.yaml"


def _noop(x: int) -> int:
    return x


def task_round_trip(client: Any, repeats: int, task: Callable[[int], Any] = _noop) -> Timing:
    """The wall time of one task's round trip (submit, result), ``repeats`` times.

    Every worker runs ``task`` once first, uncounted. A task's function travels by reference
    and the worker imports its module the first time (this suite's, with xarray and the
    workflow engine: ~0.85-2.4 s on the 2-core VM); the one warm-up round of
    :func:`~openclaw_dask.bench.timing.interleaved` ran on one worker only, and the scheduler,
    alternating between idle workers, put the first counted round trip on the other: ~850 ms
    among 8-24 ms ones, a spread of ±2600-4000 %.

    Parameters
    ----------
    client : distributed.Client
        A client of the measured cluster.
    repeats : int
        Counted round trips.
    task : callable of one int
        What each round trip runs (a no-op by default).

    Returns
    -------
    Timing
    """
    workers = list(client.nthreads())
    wait([client.submit(task, 1, pure=False, workers=[w]) for w in workers])

    def round_trip() -> None:
        client.submit(task, 1, pure=False).result()

    return interleaved({"round_trip": round_trip}, repeats=repeats)["round_trip"]


def plain_dask(
    client: Any, config: Any, out: Path, size: int, chunk: int, steps: int, report: bool = False
) -> None:
    """The example workflow written by hand with plain Dask + xarray (no engine).

    With ``report``, inside ``distributed.performance_report`` (the artifact ``submit`` writes).
    """
    html = out / "performance-report.html"
    # BokehJS inline, as submit writes it (workflows/perf_report.py)
    inline = performance_report(filename=str(html), mode="inline")
    with inline if report else contextlib.nullcontext():
        _plain_steps(client, config, out, size, chunk, steps)


def _plain_steps(client: Any, config: Any, out: Path, size: int, chunk: int, steps: int) -> None:
    window = int(config["distributed.sync_interval"])
    ctx = StepContext("field", config, client, out, {})
    f = field(ctx, size=size, chunk=chunk, seed=42)["field"]
    dask.compute(zarrio.write(f, out / "field.zarr", config))
    ctx.inputs = {"field": {"field": zarrio.open_output(out / "field.zarr")}}
    op = Diffuse(ctx, steps=steps, record_every=RECORD_EVERY)
    state, parts = op.initial_state(), []
    for s in range(0, steps, window):
        state, records = op.advance(state, s, min(window, steps - s))
        state, records = dask.persist(state, records)
        parts += list(records.values())
    history = xr.concat(parts, dim="time")
    smoothed = op.finish(state)["smoothed"]
    dask.compute(
        zarrio.write(history, out / "history.zarr", config),
        zarrio.write(smoothed, out / "smoothed.zarr", config),
    )
    ctx.inputs = {"diffuse": {"smoothed": zarrio.open_output(out / "smoothed.zarr")}}
    p = profile(ctx)["profile"]
    dask.compute(zarrio.write(p, out / "profile.zarr", config))


def run(ctx: BenchContext) -> SuiteResult:
    """Task latency; engine vs plain Dask in interleaved pairs."""
    client = ctx.client
    n_tasks = 200 if ctx.quick else 2000
    size, chunk, steps = (256, 128, 80) if ctx.quick else (1024, 512, 400)

    def many() -> None:
        wait(client.map(_noop, range(n_tasks), pure=False))

    latency = task_round_trip(client, repeats=20 if ctx.quick else 100)
    batch = interleaved({"many": many}, repeats=ctx.repeats(3))
    runs = iter(range(10**6))
    config = ctx.config
    address = client.scheduler.address
    sets = [
        f"params.size={size}",
        f"params.chunk={chunk}",
        f"params.steps={steps}",
    ]

    def fresh(kind: str) -> Path:
        out = ctx.workdir / f"overhead-{kind}-{next(runs)}"
        out.mkdir()
        return out

    def plain(report: bool) -> Any:
        def go() -> None:
            with client.as_current():
                plain_dask(client, config, fresh("plain"), size, chunk, steps, report)

        return go

    def engine(report: bool) -> Any:
        def go() -> None:
            overrides = [*sets, "cluster.dashboard_address=127.0.0.1:0"]
            run_workflow(
                EXAMPLE,
                overrides=overrides,
                address=address,
                run_dir=fresh("engine"),
                report=report,
            )

        return go

    fns = {
        "plain_dask": plain(False),
        "plain_dask_report": plain(True),
        "submit": engine(True),
        "submit_no_report": engine(False),
    }
    t = interleaved(fns, repeats=ctx.repeats(5))
    same_report = "submit_vs_plain_dask_same_report"
    no_report = "submit_no_report_vs_plain_dask"
    return SuiteResult(
        params={"tasks": n_tasks, "size": size, "chunk": chunk, "steps": steps},
        timings={"task_round_trip": latency, f"{n_tasks}_tasks": batch["many"]} | t,
        throughput={
            "task_round_trip": (latency.median * 1e3, "ms"),
            "per_task_amortised": (batch["many"].median / n_tasks * 1e3, "ms"),
            "performance_report_cost": (
                t["plain_dask_report"].median - t["plain_dask"].median,
                "s",
            ),
        },
        ratios={
            same_report: ratio(t["plain_dask_report"], t["submit"]),
            no_report: ratio(t["plain_dask"], t["submit_no_report"]),
            "submit_vs_plain_dask": ratio(t["plain_dask"], t["submit"]),
        },
        goals={same_report: 1.05, no_report: 1.05},
        goals_at_most={same_report, no_report},
        rounds={
            same_report: round_ratios(t["plain_dask_report"], t["submit"]),
            no_report: round_ratios(t["plain_dask"], t["submit_no_report"]),
        },
        notes=[
            "ratios = engine time / plain Dask time (1.0: no overhead); "
            f"{same_report}: both write Dask's performance report; "
            f"{no_report}: neither does (submit --no-report); "
            "submit_vs_plain_dask: default submit (with report) vs bare plain Dask"
        ],
    )
