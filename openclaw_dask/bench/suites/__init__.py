"""The benchmark suites, in the order ``openclaw-dask benchmark`` runs them.

Each module has ``run(ctx: BenchContext) -> SuiteResult``.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module

from openclaw_dask.bench.suite import BenchContext, SuiteResult

NAMES = ("matmul", "stencil", "reduce", "zarr", "overhead", "graph")


def suite(name: str) -> Callable[[BenchContext], SuiteResult]:
    """The ``run`` function of suite ``name`` (imported on demand)."""
    return import_module(f"openclaw_dask.bench.suites.{name}").run
