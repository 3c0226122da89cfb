"""Worker preload that pins every thread of a worker process to its planned cores.

Dask has no CPU pinning for CPU workers (distributed#5906). The plan puts one core list per
worker into ``_OPENCLAW_AFFINITY``; this preload runs in the worker process when the worker
starts, before its task threads exist, and pins *every* thread already in the process
(``/proc/self/task``), since ``sched_setaffinity`` acts on one thread only. Threads created
later (the task pool) inherit the mask of the thread that creates them.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from openclaw_dask.translate.plan import AFFINITY_ENV


def mpi_rank() -> int | None:
    """This process's rank when it is a rank of an MPI job (a dask-mpi worker), else ``None``.

    Asked of mpi4py, which every rank of our launch has loaded and initialised
    (:mod:`openclaw_dask.cli.mpi_entry`), not of the launcher's variables
    (``OMPI_COMM_WORLD_RANK``, ``PMI_RANK``): those are inherited by every process started
    under ``srun`` or ``mpirun -np 1``, the local workers of a run there too, which had all
    taken the core list of rank ``-2`` and were refused ("runs on cores [0], planned [1]").
    """
    mpi = sys.modules.get("mpi4py.MPI")
    if mpi is None or not mpi.Is_initialized() or mpi.Is_finalized():
        return None
    return int(mpi.COMM_WORLD.Get_rank())


def worker_index(worker: Any) -> int:
    """Which core list belongs to this worker.

    LocalCluster names its workers 0, 1, ...; dask-mpi workers are ranks 2, 3, ...
    """
    rank = mpi_rank()
    if rank is not None:
        return rank - 2
    return int(str(worker.name).rsplit("-", 1)[-1])


def pin_process(cores: list[int]) -> list[int]:
    """Pin every thread of this process to ``cores``; return the threads' new masks' union."""
    for tid in os.listdir("/proc/self/task"):
        try:
            os.sched_setaffinity(int(tid), cores)
        except ProcessLookupError:  # the thread ended meanwhile
            continue
    return sorted(os.sched_getaffinity(0))


def dask_setup(worker: Any) -> None:
    """Preload hook: pin this worker to its cores from the plan."""
    text = os.environ.get(AFFINITY_ENV)
    if not text:
        return
    lists = json.loads(text)
    cores = lists[worker_index(worker) % len(lists)]
    worker.openclaw_affinity = pin_process(cores)
