"""Config -> plan for dask-mpi under ``mpirun``.

dask-mpi turns MPI ranks into a cluster: rank 0 the scheduler, rank 1 runs the client program
(our workflow), ranks 2.. are workers. So ``mpirun -np N`` with N = worker processes + 2.
``cluster_kwargs`` are exactly ``dask_mpi.initialize``'s arguments. Workers are the ranks
themselves (no nanny), so their environment (allocator, BLAS threads, pinning) travels as
``mpirun -x NAME=value``; ``--bind-to none`` stops Open MPI binding each rank to one core,
which would squeeze a worker's threads onto it (our own pinning applies instead when asked).

The plan puts every rank on this machine (``-np`` only, no host file), so with
``cluster.interface`` unset scheduler and workers bind to the loopback interface ``lo``: the
cluster is not reachable from the network, and it works where the external interface does not
route back to itself. Set ``cluster.interface`` (``ib0``, ``eth0``) for a multi-host launch.
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
    dashboard_kwargs,
    layout_dict,
    protocol,
    shared_cores_note,
    user_set,
    worker_env,
    worker_plugins,
)

#: The program every rank runs; it calls ``dask_mpi.initialize(**cluster_kwargs)``.
MPI_ENTRY = "openclaw_dask.cli.mpi_entry"
#: Interface of an mpi cluster when ``cluster.interface`` is unset: all ranks are on this host.
DEFAULT_INTERFACE = "lo"


def plan_mpi(config: Config, hw: Hardware) -> ClusterPlan:
    """Plan a dask-mpi launch on this machine's cores."""
    layout = resolve_layout(config.values, hw, "mpi")
    env = worker_env(config, hw, layout)
    dask_config, notes = common_dask_config(config, env)
    notes += shared_cores_note(config, layout)
    unapplied: list[str] = []
    interface = config["cluster.interface"]
    if not interface:
        interface = DEFAULT_INTERFACE
        notes.append(
            f"cluster.interface unset: ranks bind to {DEFAULT_INTERFACE!r} (all on this host); "
            "set cluster.interface (e.g. ib0) for ranks on several hosts"
        )
    if dask_config.get("distributed.worker.memory.terminate") is not False:
        # the nanny restarts a worker at that fraction; worker ranks have none. Said at submit
        # too when the user set it; Dask's own default dropped is only a note
        (unapplied if user_set(config, "memory.spill.terminate") else notes).append(
            "memory.spill.terminate: no effect under mpi: worker ranks run without a nanny "
            "(target, spill and pause still apply)"
        )
    kwargs = {
        "interface": interface,
        "nthreads": layout.threads_per_worker,
        "memory_limit": layout.memory_limit,
        "nanny": False,
        **dashboard_kwargs(config),
        "protocol": protocol(config),
        "worker_class": "distributed.Worker",
        "worker_options": {},
        "exit": False,  # mpi_entry ends every rank itself, after rank 1's command
    }
    ranks = layout.processes + 2
    command = ["mpirun", "-np", str(ranks), "--bind-to", "none"]
    if ranks > len(hw.usable_cores):
        command.append("--oversubscribe")  # scheduler and client ranks mostly sleep
    for name, value in env.items():
        command += ["-x", f"{name}={value}"]
    command += [sys.executable, "-m", MPI_ENTRY]
    workers = "rank 2 the worker" if ranks == 3 else f"ranks 2-{ranks - 1} workers"
    notes.append(f"{ranks} ranks: rank 0 scheduler, rank 1 client (the workflow), {workers}")
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
        unapplied=unapplied,
    )
