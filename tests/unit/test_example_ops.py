"""The example workflow's ops (``example.field``, ``example.diffuse``, ``example.profile``)
against plain numpy: the chunked, halo-fused diffusion must be the textbook periodic 5-point
scheme on the whole array, whatever the bands and ``distributed.batch_size``."""

from __future__ import annotations

from pathlib import Path

import dask
import numpy as np
import pytest

from openclaw_dask.config import load_config
from openclaw_dask.workflows.context import StepContext
from openclaw_dask.workflows.ops.example import Diffuse, field, profile


def _context(tmp_path: Path, step: str, inputs: dict, batch_size: int = 8) -> StepContext:
    config = load_config(None, use_search_path=False)
    config = config.with_overrides({"distributed.batch_size": batch_size})
    return StepContext(step, config, None, tmp_path, {}, inputs)


def _periodic_diffusion(u: np.ndarray, steps: int, alpha: float) -> np.ndarray:
    """Forward Euler of the 5-point Laplacian, periodic in both directions, on the whole array."""
    u = u.copy()
    for _ in range(steps):
        neighbours = sum(np.roll(u, shift, axis) for shift in (1, -1) for axis in (0, 1))
        u = u + alpha * (neighbours - 4.0 * u)
    return u


def test_field_noise_is_seeded_per_block_on_top_of_the_waves(tmp_path: Path) -> None:
    """Each block's noise comes from ``(seed, block row, block column)`` (so any worker layout
    draws the same), on ``280 + 10 sin(2π x) cos(4π y)``: recomputed for block (1, 0)."""
    ds = field(_context(tmp_path, "field", {}), size=8, chunk=4, seed=3)["field"]
    temperature = ds["temperature"].values
    y, x = np.arange(8)[:, None] / 8, np.arange(8)[None, :] / 8
    noise = temperature - (280.0 + 10.0 * np.sin(2 * np.pi * x) * np.cos(4 * np.pi * y))
    drawn = np.random.default_rng([3, 1, 0]).standard_normal((4, 8))
    np.testing.assert_allclose(noise[4:], drawn, rtol=0, atol=1e-12)
    assert not np.allclose(noise[:4], noise[4:])


@pytest.mark.parametrize("batch_size", [1, 3, 8])
def test_diffusion_is_the_periodic_five_point_scheme(tmp_path: Path, batch_size: int) -> None:
    """Bands of 4 rows with halos of up to ``batch_size`` rows (more than a band: the op caps
    the halo at a band) give the whole-array periodic scheme at ``ν dt / dx² = 0.2``; the
    history's mean stays put and its variance is the field's."""
    made = field(_context(tmp_path, "field", {}), size=12, chunk=4, seed=1)
    ctx = _context(tmp_path, "diffuse", {"field": made}, batch_size)
    op = Diffuse(ctx, steps=10, record_every=5, diffusivity=2.0e4)
    assert op.alpha == pytest.approx(0.2, rel=1e-15)
    state, records = op.advance(op.initial_state(), 0, 10)
    state, records = dask.compute(state, records, scheduler="sync")
    u0 = made["field"]["temperature"].values
    want = _periodic_diffusion(u0, 10, 0.2)
    np.testing.assert_allclose(state["temperature"].values, want, rtol=0, atol=1e-10)
    history = records["history"]
    assert history["time"].values.tolist() == [s * op.dt for s in (0, 5, 10)]
    for k, s in enumerate((0, 5, 10)):
        expected = _periodic_diffusion(u0, s, 0.2)
        assert float(history["mean"][k]) == pytest.approx(u0.mean(), rel=1e-13)
        assert float(history["variance"][k]) == pytest.approx(expected.var(), rel=1e-10)


def test_profile_is_the_mean_and_standard_deviation_along_x(tmp_path: Path) -> None:
    """``mean`` and ``std`` (population, ddof 0) over x of the smoothed field, per row."""
    made = field(_context(tmp_path, "field", {}), size=8, chunk=4, seed=2)
    smoothed = {"smoothed": made["field"]}
    out = profile(_context(tmp_path, "profile", {"diffuse": smoothed}))["profile"]
    temperature = made["field"]["temperature"].values
    np.testing.assert_allclose(out["mean"].values, temperature.mean(axis=1), rtol=1e-14)
    np.testing.assert_allclose(out["std"].values, temperature.std(axis=1), rtol=1e-12)
