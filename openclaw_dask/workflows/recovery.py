"""An iterative step that loses a worker continues from its last checkpoint, in the same run.

Dask recomputes a lost result from its graph, but an iterative step cuts its graph at every
window (the state is persisted and the window before it released, dask#3898), and the climate
model also sends its first state and heat capacity to the workers once (``place_bands``): when
the worker holding them dies, the scheduler has nothing to recompute them from and cancels the
window ("already forgotten"). A nanny restarts the worker within seconds, so the run itself can
go on from its last checkpoint, as ``--resume`` would, instead of failing the step: the outputs
are cut back to the checkpoint's extents and the windows after it run again (bit-identical,
which the tests check), under keys of their own (the failed attempt's may still be held as
erred, and Dask would answer them with the old error). A step gives up after
:data:`MAX_RECOVERIES` losses with no new checkpoint between them (a worker that is killed
again and again in one window, say for memory, would otherwise loop), with the checkpoint kept
for ``--resume``; losses a checkpoint apart do not add up, so a run of days on nodes that fail
now and then goes on.

A map step that loses a worker Dask cannot make up for runs again from its start
(:func:`lost_workers`, :func:`cluster_goes_on`, :func:`recovery_entry`): its outputs are
written whole again. Dask recomputes a lost result of a graph by itself, but not a scattered
one: the climate workflow's ``forcing`` failed with ``FuturesCancelledError ... already
forgotten`` and the advice to fix the step. A task that killed ``allowed-failures`` workers
(``KilledWorker``) is not run again: it is the task that kills them.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

from openclaw_dask.config import ConfigError
from openclaw_dask.runtime.cluster import ClusterLostError, cluster_gone

#: Worker losses an iterative step recovers from, with no new checkpoint between them.
MAX_RECOVERIES = 3

#: Seconds to wait for restarted workers to come back before going on with fewer.
WORKER_RETURN_TIMEOUT = 30.0


class WorkersLostError(ClusterLostError):
    """Workers were lost more often than a step recovers from (not the step's own fault)."""


def worker_addresses(client: Any) -> set[str]:
    """The addresses of the cluster's workers now (a restarted worker has a new one)."""
    return set(client.nthreads())


def lost_workers(client: Any, before: set[str], failure: BaseException) -> list[str]:
    """The workers of ``before`` gone now, after a step's ``failure``: ``[]`` where that is
    not a loss to continue from (a refusal, or the cluster itself gone: said as lost)."""
    if isinstance(failure, ConfigError) or cluster_gone(client):
        return []
    return sorted(before - worker_addresses(client))


def cluster_goes_on(client: Any, workers: int) -> bool:
    """After a loss: wait for the cluster to go on (:func:`prepare_to_continue`); ``False``
    when it went away meanwhile.

    A recovery is said and recorded only then: a cluster that closes worker by worker
    (``cluster down``), or an mpirun that ends every rank when one dies, had printed
    "continuing from step N" just before the run failed as a lost cluster.
    """
    with contextlib.suppress(OSError):  # a scheduler gone meanwhile: asked below
        prepare_to_continue(client, workers)
    return not cluster_gone(client)


def recovery_entry(lost: list[str], failure: BaseException, **where: Any) -> dict[str, Any]:
    """A recovery as ``run.json`` keeps it (``steps.<step>.recoveries``)."""
    error = f"{type(failure).__name__}: {failure}".splitlines()[0]
    return {"lost": lost, **where, "time": time.time(), "error": error}


def prepare_to_continue(client: Any, workers: int) -> None:
    """Wait until nothing of the lost window runs and the workers have returned.

    The caller has released the window's futures (Dask then drops what has not started; a
    task that already runs cannot be stopped), and the window's writes must not land after
    the outputs are cut back to the checkpoint; the bands of the next window are placed on the
    workers there are then. (``client.cancel`` is not used: in distributed 2026.8 cancelling a
    key with dependents no client holds fails an assertion in the scheduler, which then drops
    the client's connection.)
    """
    deadline = time.monotonic() + WORKER_RETURN_TIMEOUT
    while time.monotonic() < deadline:
        # a cancelled task that already runs goes on in its thread until it returns
        running = client.run(_running_tasks, on_error="return").values()
        busy = any(isinstance(n, int) and n > 0 for n in running)  # not a worker going away
        if not busy and len(client.nthreads()) >= workers:
            return
        time.sleep(0.1)


def _running_tasks(dask_worker: Any) -> int:
    """Tasks whose code runs in this worker now, cancelled ones included."""
    return sum(ts.state in _RUNNING for ts in dask_worker.state.tasks.values())


_RUNNING = frozenset({"executing", "long-running", "cancelled", "resumed"})
