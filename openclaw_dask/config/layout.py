"""Resolve ``auto`` settings against a machine: backend, workers, threads, memory, cores.

Pure functions of (config values, :class:`Hardware`), shared by validation (to check the
resolved layout fits the machine) and by ``translate/`` (to build the cluster plan).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from openclaw_dask.config.errors import ConfigError, Problem, shorten
from openclaw_dask.config.hardware import Hardware

#: Most worker threads a node may run per usable logical core (``parallel.thread_pool_size``).
#: A few threads per core can pay when tasks wait on I/O (object storage, Zarr writes) rather
#: than compute, so some oversubscription stays allowed; far beyond it the threads only queue
#: for the same cores, each holding its task's memory. A count such as 10**18 is a typo, and
#: Dask's layout heuristic (a factor search, time ~ sqrt(threads)) would run for minutes on it.
MAX_THREADS_PER_CORE = 8


@dataclass(frozen=True)
class Layout:
    """How work is laid out on one node.

    Parameters
    ----------
    threads
        Worker threads on the node in total.
    processes
        Worker processes on the node.
    memory_limit
        Per-worker memory limit in bytes, or ``"auto"`` (Dask: RAM / workers).
    affinity
        One core list per worker process, or ``None`` when workers are not pinned.
    """

    threads: int
    processes: int
    memory_limit: int | str
    affinity: list[list[int]] | None

    @property
    def threads_per_worker(self) -> int:
        """Threads of each worker process."""
        return max(1, self.threads // self.processes)


def resolve_backend(values: Mapping[str, Any], hw: Hardware) -> str:
    """The backend ``cluster.backend: auto`` stands for on ``hw``.

    ssh if nodes are listed, mpi if the transport is mpi, cuda if GPUs are asked for and
    present, else local.
    """
    backend = values["cluster.backend"]
    if backend != "auto":
        return backend
    if values["distributed.nodes"]:
        return "ssh"
    if values["distributed.communication_backend"] == "mpi":
        return "mpi"
    if values["gpu.devices"] and hw.gpus:
        return "cuda"
    return "local"


def max_threads(hw: Hardware) -> int:
    """Most worker threads one node of ``hw`` may run: :data:`MAX_THREADS_PER_CORE` per core."""
    return MAX_THREADS_PER_CORE * max(1, len(hw.usable_cores))


def too_many_threads(threads: int, hw: Hardware) -> str:
    """Why ``threads`` worker threads are refused on ``hw`` (beyond :func:`max_threads`)."""
    return (
        f"{shorten(str(threads))} threads but only {len(hw.usable_cores)} usable core(s) on "
        f"this machine: use at most {max_threads(hw)} ({MAX_THREADS_PER_CORE} per core; more "
        "only queue for the same cores), or auto"
    )


def _thread_count(values: Mapping[str, Any], hw: Hardware) -> int:
    setting = values["parallel.thread_pool_size"]
    if setting == "auto":
        return len(hw.usable_cores)
    if setting == "physical":
        return len(hw.physical_core_ids())
    return int(setting)


def _process_count(values: Mapping[str, Any], threads: int) -> int:
    setting = values["parallel.processes"]
    if setting != "auto":
        return int(setting)
    # Dask's own heuristic (what `dask worker --nworkers auto` uses)
    from distributed.deploy.utils import nprocesses_nthreads

    return nprocesses_nthreads(threads)[0]


def gpu_ids(values: Mapping[str, Any], hw: Hardware) -> list[int] | None:
    """GPU ids to use; ``None`` means every GPU the worker machine has (``all``)."""
    devices = values["gpu.devices"]
    if devices == "all":
        return list(range(len(hw.gpus))) if hw.gpus else None
    return list(devices)


def pin_cores(
    mode: str, pool: list[int], numa: Mapping[int, list[int]], workers: int, threads_per_worker: int
) -> list[list[int]]:
    """Core lists per worker for ``compact`` or ``scatter`` pinning.

    Parameters
    ----------
    mode
        ``compact``: each worker gets a contiguous block, filling one NUMA node before the
        next. ``scatter``: workers go round-robin over NUMA nodes (more memory bandwidth when
        the node is not full).
    pool
        Cores that may be used (all usable cores, or one per physical core).
    numa
        ``{node: cores}``.
    workers, threads_per_worker
        The layout to pin.

    Returns
    -------
    list of list of int
        One core list per worker. When there are more threads than cores, blocks wrap around.
    """
    allowed = set(pool)
    by_node = [[c for c in cores if c in allowed] for _, cores in sorted(numa.items())]
    by_node = [cores for cores in by_node if cores] or [sorted(allowed)]
    if mode == "compact":
        order = [c for cores in by_node for c in cores]
    else:  # scatter: worker i takes its block from node i % n, then the next node...
        order = []
        cursors = [0] * len(by_node)
        for w in range(workers):
            node = w % len(by_node)
            for _ in range(threads_per_worker):
                cores = by_node[node]
                order.append(cores[cursors[node] % len(cores)])
                cursors[node] += 1
    return [
        sorted(
            {order[(w * threads_per_worker + t) % len(order)] for t in range(threads_per_worker)}
        )
        for w in range(workers)
    ]


def resolve_layout(values: Mapping[str, Any], hw: Hardware, backend: str | None = None) -> Layout:
    """Workers, threads, memory limit and pinning of one node of ``backend`` on ``hw``.

    Raises
    ------
    ConfigError
        When ``parallel.thread_pool_size`` is beyond :func:`max_threads` of ``hw``.
    """
    backend = backend or resolve_backend(values, hw)
    if backend == "cuda":
        ids = gpu_ids(values, hw)
        processes = len(ids) if ids else max(1, len(hw.gpus))
        threads = processes * values["gpu.stream_count"]
    else:
        threads = _thread_count(values, hw)
        if threads > max_threads(hw):
            # validation refuses this, with file and line, before a plan is made; a direct
            # caller gets the same refusal instead of a factor search and pinning that could
            # run for hours
            raise ConfigError([Problem(too_many_threads(threads, hw), "parallel.thread_pool_size")])
        processes = max(1, _process_count(values, threads))
    per_worker = max(1, threads // processes)

    memory: int | str = "auto"
    if values["memory.per_thread_pool_size"] != "auto":
        memory = int(values["memory.per_thread_pool_size"]) * per_worker
    elif values["memory.global_pool"] != "auto" and backend != "cuda" and not values["gpu.devices"]:
        # on GPUs the global pool is the RMM pool, not the host memory limit; a config that
        # asks for GPUs meant it so, also where it falls back to CPU workers (no GPU here)
        memory = int(values["memory.global_pool"]) // processes

    # dask-cuda pins each GPU worker to the cores nearest its GPU: no setting goes on top (core
    # lists had been preloaded on top of it while the plan said they were not applied)
    affinity = False if backend == "cuda" else values["parallel.thread_affinity"]
    cores: list[list[int]] | None = None
    if isinstance(affinity, list):
        cores = [list(c) for c in affinity]
    elif affinity in ("compact", "scatter"):
        pool = (
            hw.physical_core_ids()
            if values["parallel.thread_pool_size"] == "physical"
            else list(hw.usable_cores)
        )
        cores = pin_cores(affinity, pool, hw.numa_nodes, processes, per_worker)
    return Layout(threads, processes, memory, cores)
