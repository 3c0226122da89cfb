"""Config -> plan for dask-mpi under ``mpirun``.

dask-mpi turns MPI ranks into a cluster: rank 0 the scheduler, rank 1 runs the client program
(our workflow), ranks 2.. are workers. So ``mpirun -np N`` with N = worker processes + 2.
``cluster_kwargs`` are exactly ``dask_mpi.initialize``'s arguments. Workers are the ranks
themselves (no nanny), so their environment (allocator, BLAS threads, pinning) travels as
``mpirun -x NAME=value``; ``--bind-to none`` stops Open MPI binding each rank to one core,
which would squeeze a worker's threads onto it (our own pinning applies instead when asked).
"""

from __future__ import annotations

import sys

from openclaw_dask.config.hardware import Hardware
from openclaw_dask.config.layout import resolve_layout
from openclaw_dask.config.loader import Config
from openclaw_dask.translate.plan import (
    ClusterPlan,
    alias_notes,
    common_dask_config,
    layout_dict,
    protocol,
    worker_env,
    worker_plugins,
)

#: The program every rank runs; it calls ``dask_mpi.initialize(**cluster_kwargs)``.
MPI_ENTRY = "openclaw_dask.runtime.mpi_entry"


def plan_mpi(config: Config, hw: Hardware) -> ClusterPlan:
    """Plan a dask-mpi launch on this machine's cores."""
    layout = resolve_layout(config.values, hw, "mpi")
    env = worker_env(config, hw, layout)
    dask_config, notes = common_dask_config(config, env)
    kwargs = {
        "interface": config["cluster.interface"],
        "nthreads": layout.threads_per_worker,
        "memory_limit": layout.memory_limit,
        "nanny": False,
        "dashboard": config["cluster.dashboard_address"] is not None,
        "dashboard_address": config["cluster.dashboard_address"] or ":0",
        "protocol": protocol(config),
        "worker_class": "distributed.Worker",
        "worker_options": {},
        "exit": True,
    }
    ranks = layout.processes + 2
    command = ["mpirun", "-np", str(ranks), "--bind-to", "none"]
    if ranks > len(hw.usable_cores):
        command.append("--oversubscribe")  # scheduler and client ranks mostly sleep
    for name, value in env.items():
        command += ["-x", f"{name}={value}"]
    command += [sys.executable, "-m", MPI_ENTRY]
    notes.append(
        f"{ranks} ranks: rank 0 scheduler, rank 1 client (the workflow), "
        f"ranks 2-{ranks - 1} workers"
    )
    return ClusterPlan(
        backend="mpi",
        cluster_class="dask_mpi.initialize",
        cluster_kwargs=kwargs,
        dask_config=dask_config,
        worker_env=env,
        worker_plugins=worker_plugins(config),
        layout=layout_dict(layout),
        launch_command=command,
        notes=alias_notes(config) + notes,
    )
