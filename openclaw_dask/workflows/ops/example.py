"""The example ops of ``workflows/example.yaml``: a seeded field, its diffusion, its profile.

Small, but the whole contract: a map op that makes data (seeded per block, so it does not depend
on how many workers make it), an iterative op that advances a state with ``batch_size`` steps per
halo exchange and emits records along ``time``, and a map op that reads an earlier output.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import dask.array as da
import numpy as np
import xarray as xr

from openclaw_dask.config.errors import did_you_mean
from openclaw_dask.workflows.context import IterativeOp, StepContext
from openclaw_dask.workflows.registry import RunFacts, register

#: Explicit diffusion is stable for nu * dt / dx**2 <= 1/4 on a 5-point stencil.
STABLE_NU = 0.2


def _seeded_block(block: np.ndarray, seed: int, block_info: Any = None) -> np.ndarray:
    """Noise for one block from ``(seed, block index)``: the same for any worker layout."""
    info = block_info[None]
    rng = np.random.default_rng([seed, *info["chunk-location"]])
    (y0, _), (x0, _) = info["array-location"]
    ny, nx = info["chunk-shape"]
    y = (y0 + np.arange(ny))[:, None] / info["shape"][0]
    x = (x0 + np.arange(nx))[None, :] / info["shape"][1]
    waves = 10.0 * np.sin(2 * np.pi * x) * np.cos(4 * np.pi * y)
    return 280.0 + waves + rng.standard_normal((ny, nx))


def _at_least(args: Mapping[str, Any], limits: Mapping[str, int]) -> dict[str, str]:
    """Integer arguments below their least value (an argument left out: its default is fine)."""
    problems = {}
    for name, least in limits.items():
        value = args.get(name, least)
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            problems[name] = f"expected an integer >= {least}, got {value!r}"
    return problems


def _positive(args: Mapping[str, Any], names: tuple[str, ...]) -> dict[str, str]:
    """Number arguments that are not finite and > 0 (a zero spacing or diffusivity divides)."""
    problems = {}
    for name in names:
        value = args.get(name, 1.0)
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        if not ok or not math.isfinite(value) or value <= 0:
            problems[name] = f"expected a finite number > 0, got {value!r}"
    return problems


def _check_field(args: Mapping[str, Any]) -> dict[str, str]:
    """What ``example.field`` would refuse, found before the run starts."""
    # size >= 2: a grid spacing needs two points (example.diffuse reads it from x)
    # seed >= 0: numpy seeds its generators from non-negative integers only
    return _at_least(args, {"size": 2, "chunk": 1, "seed": 0}) | _positive(args, ("spacing",))


def _grid(size: int, chunk: int, spacing: float) -> tuple[da.Array, dict[str, Any]]:
    # row bands: a halo of K rows costs 2K/chunk extra work, a square tile twice that
    template = da.zeros((size, size), chunks=(chunk, -1), dtype=np.float64)
    coords = {
        "y": ("y", np.arange(size) * spacing, {"units": "m", "long_name": "northing"}),
        "x": ("x", np.arange(size) * spacing, {"units": "m", "long_name": "easting"}),
    }
    return template, coords


@register("example.field", outputs=("field",), check=_check_field)
def field(
    ctx: StepContext, *, size: int = 512, chunk: int = 128, seed: int = 0, spacing: float = 1000.0
) -> dict[str, xr.Dataset]:
    """A temperature-like field: large-scale waves plus seeded noise (K), in row bands."""
    refused = _check_field({"size": size, "chunk": chunk, "seed": seed, "spacing": spacing})
    if refused:  # called from Python, not through a checked workflow
        raise ValueError("; ".join(f"{k}: {v}" for k, v in refused.items()))
    template, coords = _grid(size, chunk, spacing)
    data = template.map_blocks(_seeded_block, seed, dtype=np.float64)
    ds = xr.Dataset(
        {"temperature": (("y", "x"), data, {"units": "K"})},
        coords=coords,
        attrs={"seed": seed, "description": "waves + N(0,1) noise, seeded per block"},
    )
    return {"field": ds}


def _diffuse_block(u: np.ndarray, steps: int, alpha: float) -> np.ndarray:
    """``steps`` explicit 5-point diffusion steps on a band that carries ``steps`` halo rows.

    Bands hold whole rows, so the periodic x direction wraps inside the block (``np.roll``)
    and only rows are exchanged between tasks.
    """
    u = u.copy()
    for _ in range(steps):
        lap = np.zeros_like(u)
        mid = u[1:-1]
        lap[1:-1] = u[2:] + u[:-2] + np.roll(mid, 1, axis=1) + np.roll(mid, -1, axis=1) - 4.0 * mid
        u += alpha * lap
    return u


@register("example.diffuse")
class Diffuse(IterativeOp):
    """Heat diffusion of the field on a periodic domain; records mean and variance in time.

    ``distributed.batch_size`` steps are fused per task: each block gets that many halo cells
    from its neighbours and takes the steps on its own (a wider halo, fewer exchanges).
    """

    outputs = ("history", "smoothed")
    step_args = ("source",)
    append_dim = "time"

    @staticmethod
    def check_args(args: Mapping[str, Any]) -> dict[str, str]:
        """Run length, record interval and diffusivity, before the run starts."""
        # steps >= 1: a run of none would record no history.zarr that the workflow lists
        return _at_least(args, {"steps": 1, "record_every": 1}) | _positive(args, ("diffusivity",))

    def __init__(
        self,
        ctx: StepContext,
        *,
        steps: int = 400,
        record_every: int = 50,
        diffusivity: float = 1.0e4,
        source: str = "field",
    ) -> None:
        super().__init__(ctx)
        args = {"steps": steps, "record_every": record_every, "diffusivity": diffusivity}
        refused = self.check_args(args)
        if refused:  # called from Python, not through a checked workflow
            raise ValueError("; ".join(f"{k}: {v}" for k, v in refused.items()))
        self.steps, self.record_every = steps, record_every
        self.field = ctx.input(source)["temperature"]
        spacing = float(self.field["x"][1] - self.field["x"][0])
        self.dt = STABLE_NU * spacing**2 / diffusivity
        self.alpha = diffusivity * self.dt / spacing**2
        self.batch = ctx.batch_size

    @property
    def total_steps(self) -> int:
        return self.steps

    def initial_state(self) -> xr.Dataset:
        # whole rows per chunk: x wraps inside a task (see _diffuse_block)
        return self.field.chunk({"x": -1}).to_dataset(name="temperature")

    def _advance(self, u: da.Array, nsteps: int) -> da.Array:
        done = 0
        while done < nsteps:
            k = min(self.batch, nsteps - done, min(u.chunks[0]))
            u = u.map_overlap(
                _diffuse_block,
                depth={0: k, 1: 0},
                boundary={0: "periodic", 1: "none"},
                steps=k,
                alpha=self.alpha,
                dtype=u.dtype,
            )
            done += k
        return u

    def _record(self, u: da.Array, step: int) -> xr.Dataset:
        time = np.array([step * self.dt])
        return xr.Dataset(
            {
                "mean": ("time", u.mean().reshape(1), {"units": "K"}),
                "variance": ("time", u.var().reshape(1), {"units": "K2"}),
            },
            coords={"time": ("time", time, {"units": "s", "long_name": "model time"})},
        )

    def advance(
        self, state: xr.Dataset, step0: int, nsteps: int
    ) -> tuple[xr.Dataset, dict[str, xr.Dataset]]:
        u = state["temperature"].data
        records = []
        s = step0
        end = step0 + nsteps
        while s < end:
            if s % self.record_every == 0:
                records.append(self._record(u, s))
            nxt = min(end, (s // self.record_every + 1) * self.record_every)
            u = self._advance(u, nxt - s)
            s = nxt
        if end == self.steps:
            records.append(self._record(u, end))
        new = state.copy()
        new["temperature"] = (("y", "x"), u, state["temperature"].attrs)
        emitted = {"history": xr.concat(records, dim="time")} if records else {}
        return new, emitted

    def finish(self, state: xr.Dataset) -> dict[str, xr.Dataset]:
        out = state.copy()
        out.attrs.update(steps=self.steps, dt_seconds=self.dt)
        return {"smoothed": out}


def _profile_run_check(args: Mapping[str, Any], run: RunFacts) -> dict[str, str]:
    """``output`` must be a Zarr output of the ``source`` step: a typo (``smoothd``) had passed
    the dry run and failed after the steps before it had run."""
    source = run.steps.get(args.get("source", "diffuse"))
    output = args.get("output", "smoothed")
    if source is None or output in source.zarr_outputs:
        return {}  # a source that is no step is said by the step check
    have = ", ".join(source.zarr_outputs) or "none"
    hint = did_you_mean(str(output), source.zarr_outputs)
    return {"output": f"step {source.name!r} writes {have}, not {output!r}{hint}"}


@register(
    "example.profile",
    outputs=("profile",),
    step_args=("source",),
    check_run=_profile_run_check,
)
def profile(
    ctx: StepContext, *, source: str = "diffuse", output: str = "smoothed"
) -> dict[str, xr.Dataset]:
    """Mean over x: the profile along y (K), and its spread (K)."""
    t = ctx.input(source, output)["temperature"]
    ds = xr.Dataset(
        {"mean": t.mean("x").assign_attrs(units="K"), "std": t.std("x").assign_attrs(units="K")}
    )
    return {"profile": ds}
