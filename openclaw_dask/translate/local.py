"""Config -> plan for a ``distributed.LocalCluster`` on this machine."""

from __future__ import annotations

from openclaw_dask.config.hardware import Hardware
from openclaw_dask.config.layout import resolve_layout
from openclaw_dask.config.loader import Config
from openclaw_dask.translate.plan import (
    ClusterPlan,
    alias_notes,
    common_dask_config,
    dashboard_kwargs,
    layout_dict,
    protocol,
    security_kwargs,
    shared_cores_note,
    with_child_worker_preload,
    worker_env,
    worker_plugins,
)


def plan_local(config: Config, hw: Hardware) -> ClusterPlan:
    """Plan a LocalCluster of worker processes (never in-process threads).

    Workers are always separate processes behind a Nanny: only then can the allocator be
    preloaded, the cores pinned and a stuck worker restarted.
    """
    layout = resolve_layout(config.values, hw, "local")
    env = worker_env(config, hw, layout)
    dask_config, notes = common_dask_config(config, env)
    notes += shared_cores_note(config, layout)
    kwargs = {
        "n_workers": layout.processes,
        "threads_per_worker": layout.threads_per_worker,
        "processes": True,
        "memory_limit": layout.memory_limit,
        "host": "127.0.0.1",
        "scheduler_port": 0,
        "dashboard_address": config["cluster.dashboard_address"],
        "protocol": f"{protocol(config)}://",
    }
    if not config["cluster.dashboard_address"]:
        kwargs["scheduler_kwargs"] = dashboard_kwargs(config)  # off: see NO_DASHBOARD
    if config["cluster.interface"]:
        del kwargs["host"]  # LocalCluster takes host or interface, not both
        kwargs["interface"] = config["cluster.interface"]
    security = security_kwargs(config)
    if security:
        kwargs["security"] = security
    return ClusterPlan(
        backend="local",
        cluster_class="distributed.LocalCluster",
        cluster_kwargs=kwargs,
        dask_config=with_child_worker_preload(dask_config),
        worker_env=env,
        worker_plugins=worker_plugins(config),
        layout=layout_dict(layout),
        notes=alias_notes(config) + notes,
    )
