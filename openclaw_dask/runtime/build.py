"""Turn a plan's plain data into the objects Dask wants (classes, ``Security``)."""

from __future__ import annotations

from typing import Any

from distributed.utils import import_term

from openclaw_dask.translate.plan import ClusterPlan


def materialise_kwargs(plan: ClusterPlan) -> dict[str, Any]:
    """Cluster keyword arguments with ``security`` dicts made into ``distributed.Security``.

    Class names inside SpecCluster specs stay strings: SpecCluster imports them itself.
    """
    kwargs = dict(plan.cluster_kwargs)
    if isinstance(kwargs.get("security"), dict):
        from distributed import Security

        kwargs["security"] = Security(**kwargs["security"])
    return kwargs


def cluster_class(plan: ClusterPlan) -> Any:
    """Import the plan's cluster class (or dask-mpi's ``initialize``)."""
    if not plan.cluster_class:
        raise ValueError(f"a {plan.backend} plan starts no cluster")
    return import_term(plan.cluster_class)
