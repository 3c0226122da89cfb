"""Workers that their nannies restarted for memory, named after a step failed.

A nanny restarts its worker when the process passes ``memory.spill.terminate`` of its budget
(Dask's ``distributed.worker.memory.terminate``, 95 % by default) and logs a
``worker-restart-memory`` event on the scheduler. The step then fails with whatever the lost
tasks left behind (no workers left, ``KilledWorker``, futures already forgotten), which points at
the cluster or the step instead of the budget. :func:`memory_restarts` reads the events back,
so the runner can say what happened and which key to raise.
"""

from __future__ import annotations

import contextlib
from typing import Any

__all__ = ["WorkersOutOfMemoryError", "memory_restarts", "out_of_memory"]

#: The scheduler's event topic a nanny logs when it restarts its worker for memory.
TOPIC = "worker-restart-memory"


class WorkersOutOfMemoryError(RuntimeError):
    """Workers went past their memory budget while a step ran, and were restarted."""


def memory_restarts(client: Any, since: float) -> list[dict[str, Any]]:
    """The ``worker-restart-memory`` events logged on the scheduler since ``since``.

    Parameters
    ----------
    client : distributed.Client
    since : float
        Seconds since the epoch (the scheduler's clock; its skew is checked at start).

    Returns
    -------
    list of dict
        ``{"worker", "pid", "rss"}`` per restart, oldest first; empty when the scheduler does
        not answer.
    """
    try:
        events = client.get_events(TOPIC)
    except Exception:  # a scheduler that stopped: nothing to learn from it
        return []
    return [dict(event) for stamp, event in events if stamp >= since]


def out_of_memory(client: Any, since: float, planned: Any = None) -> WorkersOutOfMemoryError | None:
    """The error to report when workers were restarted for memory since ``since``, else ``None``.

    The message names each restart (worker, resident memory) and the workers' budget: the
    workers' own ``memory_limit``, or ``planned`` (bytes) when none is up at the moment.
    """
    restarts = memory_restarts(client, since)
    if not restarts:
        return None
    budgets: set[int] = set()
    with contextlib.suppress(Exception):  # the budgets are a detail of the message
        budgets = {w["memory_limit"] for w in client.scheduler_info()["workers"].values()}
    if not budgets and isinstance(planned, int):
        budgets = {planned}
    shown = ", ".join(f"{r['worker']} at {_mb(r['rss'])}" for r in restarts[:3])
    more = f" and {len(restarts) - 3} more" if len(restarts) > 3 else ""
    budget = f" (a {_mb(min(budgets))} budget per worker)" if budgets and min(budgets) else ""
    return WorkersOutOfMemoryError(
        f"workers ran out of memory{budget}: their nannies restarted {shown}{more}"
    )


def _mb(nbytes: float) -> str:
    return f"{nbytes / 1e6:,.0f} MB"
