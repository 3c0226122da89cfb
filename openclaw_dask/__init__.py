"""openclaw-dask: one strictly checked ``openclaw.config`` -> a real Dask cluster -> workflows.

Public API: :func:`load_config`, :func:`plan_cluster` (more arrive with the runtime and the
workflow engine: ``start_cluster``, ``run_workflow``, ``memory_compact``, ``benchmark``, ``tune``).
"""

from openclaw_dask.config import Config, ConfigError, Hardware, detect_hardware, load_config
from openclaw_dask.translate import ClusterPlan, plan_cluster

__version__ = "0.1.0"

__all__ = [
    "ClusterPlan",
    "Config",
    "ConfigError",
    "Hardware",
    "__version__",
    "detect_hardware",
    "load_config",
    "plan_cluster",
]
