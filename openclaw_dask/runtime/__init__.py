"""Running Dask from a plan: cluster start/attach and the worker plugins that verify it."""

from openclaw_dask.runtime.build import cluster_class, materialise_kwargs
from openclaw_dask.runtime.cluster import start_cluster, verify_cluster
from openclaw_dask.runtime.inspect import inspect_workers, refused_workers
from openclaw_dask.runtime.memory import memory_compact, openclaw_memory_compact

__all__ = [
    "cluster_class",
    "inspect_workers",
    "materialise_kwargs",
    "memory_compact",
    "openclaw_memory_compact",
    "refused_workers",
    "start_cluster",
    "verify_cluster",
]
