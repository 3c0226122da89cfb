"""``zarr``: write and read MB/s and compression ratio for zstd levels, smooth and random fields.

Fields are written through the engine's own writer (:func:`openclaw_dask.workflows.zarrio.write`:
one task per chunk, the Blosc codec of ``storage.*``) from arrays persisted on the workers, so
the timing is encode + write (and read + decode), not the making of the data. Smooth fields
(a climate-like temperature map) compress far better than random ones; both bound what a real
output sees.
"""

from __future__ import annotations

import shutil

import dask
import dask.array as da
import numpy as np
import xarray as xr
from distributed import wait

from openclaw_dask.bench.suite import BenchContext, SuiteResult
from openclaw_dask.bench.timing import interleaved
from openclaw_dask.workflows import zarrio

LEVELS = (1, 3, 9)


def _fields(rows: int, cols: int, chunk_rows: int) -> dict[str, da.Array]:
    lat = da.linspace(-np.pi / 2, np.pi / 2, rows, chunks=chunk_rows)[:, None]
    lon = da.linspace(0, 2 * np.pi, cols, chunks=cols)[None, :]
    smooth = 288.0 - 40.0 * da.sin(lat) ** 2 + 2.0 * da.cos(3 * lon) * da.cos(lat)
    noise = da.random.default_rng(7).standard_normal((rows, cols), chunks=(chunk_rows, cols))
    return {"smooth": smooth.astype("f8"), "random": noise}


def run(ctx: BenchContext) -> SuiteResult:
    """Write and read each field at each level; MB/s and stored/raw ratio."""
    rows, cols = (512, 2048) if ctx.quick else (4096, 4096)
    chunk_rows = max(1, rows // (4 * ctx.worker_threads))
    client = ctx.client
    fields = _fields(rows, cols, chunk_rows)
    persisted = dict(zip(fields, client.persist(list(fields.values())), strict=True))
    wait(list(persisted.values()))
    raw = rows * cols * 8
    timings, throughput, ratios = {}, {}, {}
    for level in LEVELS:
        config = ctx.config.with_values(storage__codec="zstd", storage__level=level)
        for kind, arr in persisted.items():
            store = ctx.workdir / f"zarr-{kind}-{level}.zarr"
            ds = xr.Dataset({"field": (("y", "x"), arr, {"units": "1"})})

            def write(ds: xr.Dataset = ds, store=store, config=config) -> None:
                shutil.rmtree(store, ignore_errors=True)
                dask.compute(zarrio.write(ds, store, config))

            def read(store=store) -> None:
                dask.compute(da.from_zarr(str(store / "field")).sum())

            name = f"{kind}_zstd{level}"
            # the store must exist before the first read; this write is also the warm-up of
            # both (a second one cost the quick run ~10 s: zstd at Blosc level 9 is zstd's 22)
            write()
            t = interleaved({"write": write, "read": read}, repeats=ctx.repeats(3), warmup=0)
            timings |= {f"{name}_write": t["write"], f"{name}_read": t["read"]}
            throughput[f"{name}_write"] = (t["write"].rate(raw) / 1e6, "MB/s")
            throughput[f"{name}_read"] = (t["read"].rate(raw) / 1e6, "MB/s")
            ratios[f"compression_{name}"] = raw / zarrio.tree_bytes(store / "field")
            shutil.rmtree(store, ignore_errors=True)
    return SuiteResult(
        params={"shape": [rows, cols], "chunk_rows": chunk_rows, "levels": list(LEVELS)},
        timings=timings,
        throughput=throughput,
        ratios=ratios,
        notes=["compression ratio = raw bytes / stored bytes of the array's chunks"],
    )
