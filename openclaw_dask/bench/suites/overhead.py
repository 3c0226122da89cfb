"""``overhead``: per-task cost on the cluster, and ``submit`` vs the same graph in plain Dask.

Per-task cost: the round trip of one trivial task (submit, result) and the amortised cost of
many trivial tasks submitted together. Engine overhead: ``workflows/example.yaml`` through
:func:`~openclaw_dask.workflows.runner.run_workflow` (what ``openclaw-dask submit`` calls,
attached to this cluster) vs the same op functions driven by hand with plain Dask, persisting
the state at the same sync points (what a careful user writes to keep the graph small). The
engine adds checkpoints, the run record with checksums, progress tracking and the worker
checks on top.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dask
import xarray as xr
from distributed import wait

from openclaw_dask.bench.suite import BenchContext, SuiteResult
from openclaw_dask.bench.timing import interleaved, ratio
from openclaw_dask.workflows import zarrio
from openclaw_dask.workflows.context import StepContext
from openclaw_dask.workflows.ops.example import Diffuse, field, profile
from openclaw_dask.workflows.runner import run_workflow

#: ``record_every`` of workflows/example.yaml
RECORD_EVERY = 80
EXAMPLE = Path(__file__).resolve().parents[3] / "workflows" / "example.yaml"


def _noop(x: int) -> int:
    return x


def plain_dask(client: Any, config: Any, out: Path, size: int, chunk: int, steps: int) -> None:
    """The example workflow written by hand with plain Dask + xarray (no engine)."""
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

    def round_trip() -> None:
        client.submit(_noop, 1, pure=False).result()

    def many() -> None:
        wait(client.map(_noop, range(n_tasks), pure=False))

    latency = interleaved({"round_trip": round_trip}, repeats=20 if ctx.quick else 100)
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

    def plain() -> None:
        with client.as_current():
            plain_dask(client, config, fresh("plain"), size, chunk, steps)

    def engine() -> None:
        overrides = [*sets, "cluster.dashboard_address=127.0.0.1:0"]
        run_workflow(EXAMPLE, overrides=overrides, address=address, run_dir=fresh("engine"))

    t = interleaved({"plain_dask": plain, "submit": engine}, repeats=ctx.repeats(5))
    return SuiteResult(
        params={"tasks": n_tasks, "size": size, "chunk": chunk, "steps": steps},
        timings={"task_round_trip": latency["round_trip"], f"{n_tasks}_tasks": batch["many"]} | t,
        throughput={
            "task_round_trip": (latency["round_trip"].median * 1e3, "ms"),
            "per_task_amortised": (batch["many"].median / n_tasks * 1e3, "ms"),
        },
        ratios={"submit_vs_plain_dask": ratio(t["plain_dask"], t["submit"])},
        goals={"submit_vs_plain_dask": 1.05},
        goals_at_most={"submit_vs_plain_dask"},
        notes=["submit_vs_plain_dask = submit time / plain Dask time (1.0: no overhead)"],
    )
