"""Config -> plan for dask-cuda's ``LocalCUDACluster`` (one worker per GPU).

Built and tested without a GPU or dask-cuda: the plan is data, and the keyword names are
checked against :data:`LOCAL_CUDA_CLUSTER_PARAMS` (and against the real signature where
dask-cuda imports). The real cluster is exercised by ``scripts/gpu_check.py`` on a GPU machine.
"""

from __future__ import annotations

from openclaw_dask.config.hardware import Hardware
from openclaw_dask.config.layout import gpu_ids, resolve_layout
from openclaw_dask.config.loader import Config
from openclaw_dask.translate.plan import (
    ClusterPlan,
    alias_notes,
    common_dask_config,
    dashboard_kwargs,
    layout_dict,
    protocol,
    security_kwargs,
    user_set,
    uses_nvlink,
    with_child_worker_preload,
    worker_env,
    worker_plugins,
)

#: ``LocalCUDACluster.__init__`` parameters of dask-cuda 26.10 (the rest go to LocalCluster).
LOCAL_CUDA_CLUSTER_PARAMS = (
    "CUDA_VISIBLE_DEVICES", "n_workers", "threads_per_worker", "memory_limit",
    "device_memory_limit", "enable_cudf_spill", "cudf_spill_stats", "local_directory",
    "protocol", "enable_tcp_over_ucx", "enable_infiniband", "enable_nvlink", "enable_rdmacm",
    "rmm_pool_size", "rmm_maximum_pool_size", "rmm_managed_memory", "rmm_async",
    "rmm_allocator_external_lib_list", "rmm_release_threshold", "rmm_log_directory",
    "rmm_track_allocations", "log_spilling", "pre_import",
)  # fmt: skip

#: Per-thread default streams: each of a worker's ``gpu.stream_count`` threads gets its own
#: CUDA stream, so copies and kernels of different tasks overlap.
PTDS_ENV = {"CUPY_CUDA_PER_THREAD_DEFAULT_STREAM": 1, "NUMBA_CUDA_PER_THREAD_DEFAULT_STREAM": 1}


def plan_cuda(config: Config, hw: Hardware) -> ClusterPlan:
    """Plan a LocalCUDACluster.

    ``gpu.devices`` becomes ``CUDA_VISIBLE_DEVICES`` (``all``: every GPU dask-cuda finds),
    ``gpu.stream_count`` the threads per worker, ``gpu.unified_memory`` RMM managed memory,
    ``gpu.peer_access`` (or the ``nccl`` alias) NVLink over UCX, ``memory.global_pool`` the RMM
    pool, ``distributed.rdma`` InfiniBand with RDMA-CM.
    """
    layout = resolve_layout(config.values, hw, "cuda")
    env = {**worker_env(config, hw, layout), **PTDS_ENV}
    dask_config, notes = common_dask_config(config, env)
    unapplied: list[str] = []  # what the plan cannot do as asked: submit prints these
    ids = gpu_ids(config.values, hw) or None  # [] when forced to cuda: every GPU
    proto = protocol(config)
    kwargs = {
        "CUDA_VISIBLE_DEVICES": ids,
        "threads_per_worker": config["gpu.stream_count"],
        "memory_limit": layout.memory_limit,
        "protocol": proto,
        "rmm_managed_memory": bool(config["gpu.unified_memory"]),
        "host": "127.0.0.1",
        "dashboard_address": config["cluster.dashboard_address"],
    }
    if not config["cluster.dashboard_address"]:
        kwargs["scheduler_kwargs"] = dashboard_kwargs(config)  # off: see NO_DASHBOARD
    if ids is not None:
        kwargs["n_workers"] = len(ids)
    if config["cluster.interface"]:
        del kwargs["host"]
        kwargs["interface"] = config["cluster.interface"]
    if proto == "ucx":
        rdma = bool(config["distributed.rdma"])
        kwargs.update(
            enable_tcp_over_ucx=True,
            enable_nvlink=uses_nvlink(config),
            enable_infiniband=rdma,
            enable_rdmacm=rdma,
        )
    if config["memory.global_pool"] != "auto":
        kwargs["rmm_pool_size"] = int(config["memory.global_pool"])
        # dask-cuda gives every worker a pool of rmm_pool_size: it is not one budget split
        # over the node's workers, as the key is on the other backends
        unapplied.append(
            "memory.global_pool: the RMM pool of each GPU worker (not split between them); "
            "the workers' host memory_limit is not set by it"
        )
    security = security_kwargs(config)
    if security:
        kwargs["security"] = security
    if config["gpu.async_prefetch"]:
        # it had said the runner stages the next chunk on the device, which nothing does: the
        # built-in ops compute on the host (the climate kernels run on CuPy, but simulate keeps
        # its state in host memory), and a user op's chunks are its own to place
        (unapplied if user_set(config, "gpu.async_prefetch") else notes).append(
            "gpu.async_prefetch: no effect yet: the built-in ops compute on the host and the "
            "workflow runner stages no chunks on the device"
        )
    shaped = [
        key for key in ("parallel.thread_pool_size", "parallel.processes") if user_set(config, key)
    ]
    if shaped:
        unapplied.append(
            f"{' and '.join(shaped)} not applied: a CUDA cluster runs one worker per GPU with "
            "gpu.stream_count threads"
        )
    if config["parallel.thread_affinity"] is not False:
        unapplied.append(
            "parallel.thread_affinity: dask-cuda pins each GPU worker to the cores nearest its "
            "GPU (its CPUAffinity plugin); the setting is not applied on top"
        )
    return ClusterPlan(
        backend="cuda",
        cluster_class="dask_cuda.LocalCUDACluster",
        cluster_kwargs=kwargs,
        dask_config=with_child_worker_preload(dask_config),
        worker_env=env,
        worker_plugins=worker_plugins(config),
        layout=layout_dict(layout),
        notes=alias_notes(config) + notes,
        unapplied=unapplied,
    )
