"""Engine overhead: ``submit`` of workflows/example.yaml vs the same work in plain Dask.

All run on one cluster, started once, interleaved (plain, plain windowed, engine, ...),
so machine noise hits both alike. "Plain Dask" is what a user would write by hand with the same
op functions: make the field and write it, run the diffusion with the same halo batches and
records and write its outputs, compute and write the profile. The engine adds what it promises
on top: checkpoints every ``distributed.sync_interval`` steps, the run record with checksums,
progress tracking and the config checks of every worker.

Run: ``.venv/bin/python benchmarks/engine_overhead.py [--repeats 5] [--steps 400] [--json F]``
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import dask
import xarray as xr

from openclaw_dask.config import load_config
from openclaw_dask.runtime import start_cluster
from openclaw_dask.workflows import zarrio
from openclaw_dask.workflows.context import StepContext
from openclaw_dask.workflows.ops.example import Diffuse, field, profile
from openclaw_dask.workflows.runner import run_workflow

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "workflows" / "example.yaml"


def plain_dask(
    client: Any,
    config: Any,
    out: Path,
    size: int,
    chunk: int,
    steps: int,
    window: int | None = None,
) -> None:
    """The example workflow written by hand with plain Dask + xarray (no engine).

    ``window``: persist the state every ``window`` steps (what a careful user does to keep the
    graph small, and what the engine does at each sync point) instead of one graph.
    """
    ctx = StepContext("field", config, client, out, {})
    f = field(ctx, size=size, chunk=chunk, seed=42)["field"]
    dask.compute(zarrio.write(f, out / "field.zarr", config))
    ctx.inputs = {"field": {"field": zarrio.open_output(out / "field.zarr")}}
    op = Diffuse(ctx, steps=steps, record_every=80)
    state, parts = op.initial_state(), []
    for s in range(0, steps, window or steps):
        state, records = op.advance(state, s, min(window or steps, steps - s))
        if window:
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


def engine(address: str, out: Path, size: int, chunk: int, steps: int) -> dict[str, Any]:
    """The same work through ``run_workflow`` (what ``openclaw-dask submit`` calls)."""
    sets = [
        f"params.size={size}",
        f"params.chunk={chunk}",
        f"params.steps={steps}",
        "cluster.dashboard_address=127.0.0.1:0",
    ]
    return run_workflow(EXAMPLE, overrides=sets, address=address, run_dir=out)


def measure(repeats: int, size: int, chunk: int, steps: int) -> dict[str, Any]:
    """Interleaved pairs on one cluster; medians, spread and the ratio."""
    config = load_config(overrides=["cluster.dashboard_address=127.0.0.1:0"])
    window = int(config["distributed.sync_interval"])
    times: dict[str, list[float]] = {"plain": [], "plain_windowed": [], "engine": []}
    with start_cluster(config) as client, client.as_current(), tempfile.TemporaryDirectory() as tmp:
        address = client.scheduler.address
        for i in range(repeats + 1):  # the first pair warms caches and imports: not counted
            for kind in times:
                out = Path(tmp) / f"{kind}-{i}"
                out.mkdir()
                t0 = time.perf_counter()
                if kind.startswith("plain"):
                    plain_dask(
                        client,
                        config,
                        out,
                        size,
                        chunk,
                        steps,
                        window if kind == "plain_windowed" else None,
                    )
                else:
                    engine(address, out, size, chunk, steps)
                if i:
                    times[kind].append(time.perf_counter() - t0)
                same = xr.open_zarr(out / "smoothed.zarr")["temperature"].shape == (size, size)
                assert same, "both variants must produce the outputs"
    med = {k: statistics.median(v) for k, v in times.items()}
    best_plain = min(med["plain"], med["plain_windowed"])
    return {
        "params": {
            "size": size,
            "chunk": chunk,
            "steps": steps,
            "repeats": repeats,
            "sync_interval": window,
        },
        "seconds": times,
        "median_seconds": med,
        # against the faster of the two hand-written versions: the engine's real overhead
        "overhead_ratio": med["engine"] / best_plain,
        "pairwise_ratio_vs_windowed": [
            e / p for p, e in zip(times["plain_windowed"], times["engine"], strict=True)
        ],
    }


def main() -> None:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--chunk", type=int, default=512)
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    result = measure(args.repeats, args.size, args.chunk, args.steps)
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text)


if __name__ == "__main__":
    main()
