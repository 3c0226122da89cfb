"""Running Dask from a plan: cluster start/attach and the worker plugins that verify it.

The names are imported on first use (PEP 562), as the package's own: every CLI command imports
``openclaw_dask.runtime.terminal``, and importing ``distributed`` here cost each of them ~0.3 s
(``--help``, ``config show`` and ``config init`` need none of it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from openclaw_dask.lazy import attach

if TYPE_CHECKING:
    from openclaw_dask.runtime.build import cluster_class, materialise_kwargs
    from openclaw_dask.runtime.cluster import start_cluster, verify_cluster
    from openclaw_dask.runtime.inspect import inspect_workers, refused_workers
    from openclaw_dask.runtime.memory import memory_compact, openclaw_memory_compact

#: public name -> the module that defines it
_HOMES = {
    "cluster_class": "openclaw_dask.runtime.build",
    "materialise_kwargs": "openclaw_dask.runtime.build",
    "start_cluster": "openclaw_dask.runtime.cluster",
    "verify_cluster": "openclaw_dask.runtime.cluster",
    "inspect_workers": "openclaw_dask.runtime.inspect",
    "refused_workers": "openclaw_dask.runtime.inspect",
    "memory_compact": "openclaw_dask.runtime.memory",
    "openclaw_memory_compact": "openclaw_dask.runtime.memory",
}

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


__getattr__, __dir__ = attach(__name__, _HOMES)
