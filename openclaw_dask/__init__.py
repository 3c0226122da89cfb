"""openclaw-dask: one strictly checked ``openclaw.config`` -> a real Dask cluster -> workflows.

Public API: :func:`load_config`, :func:`plan_cluster`, :func:`start_cluster` (a context manager
yielding a ``distributed.Client``), :func:`memory_compact` (alias ``openclaw_memory_compact``)
and :func:`run_workflow` (returns the run record); :func:`benchmark` and :func:`tune` measure
and improve a config. The exceptions a script catches: :class:`ConfigError` (bad input),
:class:`StepFailedError` (a step failed: its ``error``), :class:`ClusterLostError`,
:class:`WorkersOutOfMemoryError` and :class:`TuneInterrupted` (a ``KeyboardInterrupt``).

The names are imported on first use (PEP 562): ``import openclaw_dask.config`` runs this file
first, and every CLI command and every spawned worker process imports the package, so importing
Dask, xarray and the benchmarks here cost each of them about a second on a 2 GHz core.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from openclaw_dask.lazy import attach

if TYPE_CHECKING:
    from openclaw_dask.bench.run import benchmark
    from openclaw_dask.bench.tune import TuneInterrupted, tune
    from openclaw_dask.config import Config, ConfigError, Hardware, detect_hardware, load_config
    from openclaw_dask.runtime import memory_compact, openclaw_memory_compact, start_cluster
    from openclaw_dask.runtime.cluster import ClusterLostError
    from openclaw_dask.runtime.oom import WorkersOutOfMemoryError
    from openclaw_dask.translate import ClusterPlan, plan_cluster
    from openclaw_dask.workflows.run import StepFailedError
    from openclaw_dask.workflows.runner import run_workflow

__version__ = "0.1.0"

#: public name -> the module that defines it
_HOMES = {
    "benchmark": "openclaw_dask.bench.run",
    "tune": "openclaw_dask.bench.tune",
    "Config": "openclaw_dask.config",
    "ConfigError": "openclaw_dask.config",
    "Hardware": "openclaw_dask.config",
    "detect_hardware": "openclaw_dask.config",
    "load_config": "openclaw_dask.config",
    "memory_compact": "openclaw_dask.runtime",
    "openclaw_memory_compact": "openclaw_dask.runtime",
    "start_cluster": "openclaw_dask.runtime",
    "ClusterPlan": "openclaw_dask.translate",
    "plan_cluster": "openclaw_dask.translate",
    "run_workflow": "openclaw_dask.workflows.runner",
    # what a script catches: a step's failure (its .error, .step, .run_dir), the cluster gone
    # under a run, workers out of memory, a tune interrupted (its partial report)
    "StepFailedError": "openclaw_dask.workflows.run",
    "ClusterLostError": "openclaw_dask.runtime.cluster",
    "WorkersOutOfMemoryError": "openclaw_dask.runtime.oom",
    "TuneInterrupted": "openclaw_dask.bench.tune",
}

__all__ = [
    "ClusterLostError",
    "ClusterPlan",
    "Config",
    "ConfigError",
    "Hardware",
    "StepFailedError",
    "TuneInterrupted",
    "WorkersOutOfMemoryError",
    "__version__",
    "benchmark",
    "detect_hardware",
    "load_config",
    "memory_compact",
    "openclaw_memory_compact",
    "plan_cluster",
    "run_workflow",
    "start_cluster",
    "tune",
]


__getattr__, __dir__ = attach(__name__, _HOMES)
