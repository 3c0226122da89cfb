"""Running Dask from a plan: cluster start/attach and the worker plugins that verify it."""

from openclaw_dask.runtime.build import cluster_class, materialise_kwargs

__all__ = ["cluster_class", "materialise_kwargs"]
