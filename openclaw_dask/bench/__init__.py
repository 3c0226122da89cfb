"""Benchmarks and the tuner, on top of the public API (``openclaw-dask benchmark``/``tune``)."""

from openclaw_dask.bench.run import benchmark
from openclaw_dask.bench.tune import tune

__all__ = ["benchmark", "tune"]
