"""openclaw-dask: one strictly checked ``openclaw.config`` -> a real Dask cluster -> workflows.

Public API: :func:`load_config`, :func:`plan_cluster`, :func:`start_cluster` (a context manager
yielding a ``distributed.Client``), :func:`memory_compact` (alias ``openclaw_memory_compact``).
and :func:`run_workflow` (returns the run record); :func:`benchmark` and :func:`tune` measure
and improve a config.
"""

from openclaw_dask.bench.run import benchmark
from openclaw_dask.bench.tune import tune
from openclaw_dask.config import Config, ConfigError, Hardware, detect_hardware, load_config
from openclaw_dask.runtime import memory_compact, openclaw_memory_compact, start_cluster
from openclaw_dask.translate import ClusterPlan, plan_cluster
from openclaw_dask.workflows.runner import run_workflow

__version__ = "0.1.0"

__all__ = [
    "ClusterPlan",
    "Config",
    "ConfigError",
    "Hardware",
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
