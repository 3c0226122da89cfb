"""Workers out of memory: restarted by their nannies, or paused for good.

A nanny restarts its worker when the process passes ``memory.spill.terminate`` of its budget
(Dask's ``distributed.worker.memory.terminate``, 95 % by default) and logs a
``worker-restart-memory`` event on the scheduler. The step then fails with whatever the lost
tasks left behind (no workers left, ``KilledWorker``, futures already forgotten), which points at
the cluster or the step instead of the budget. :func:`memory_restarts` reads the events back,
so the runner can say what happened and which key to raise.

A worker also stops taking tasks at ``memory.spill.pause`` (80 %) and waits for its memory to
fall. When the memory is not Dask's to spill (a task's leak, a library's cache, the process
itself) it never falls, and when paused workers hold up all the work Dask waits for ever.
:class:`PauseWatch` notices that and turns it into the same error.
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Any

__all__ = ["PauseWatch", "WorkersOutOfMemoryError", "memory_restarts", "out_of_memory"]

#: Seconds paused workers may hold up the work, freeing no memory, before the step fails.
PAUSE_GRACE_SECONDS = 60.0
#: A paused cluster whose memory fell by this fraction of its budget is making progress.
FREED_FRACTION = 0.05

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


class PauseWatch:
    """Notices paused workers that hold up a cluster's work for good (Dask would wait).

    Polls the scheduler from a thread while a run goes on. Once paused workers have held up all
    of the cluster's work (:func:`_stuck`) for ``grace`` seconds and their memory has not fallen
    meanwhile (spilling may free it), it sets :attr:`error` (a :class:`WorkersOutOfMemoryError`)
    and cancels every future of the client, so that whatever waits on the cluster returns: the
    runner's waits, and also an op's own ``dask.compute``, which nothing else could interrupt.
    :meth:`check` raises the error. Use as a context manager.

    Parameters
    ----------
    client : distributed.Client
    grace : float, optional
        Seconds; default :data:`PAUSE_GRACE_SECONDS`.
    every : float, optional
        Seconds between polls.
    """

    def __init__(self, client: Any, grace: float | None = None, every: float = 2.0) -> None:
        self.client = client
        self.grace = PAUSE_GRACE_SECONDS if grace is None else grace
        self.every = every
        self.error: WorkersOutOfMemoryError | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="openclaw-pause-watch")
        self._thread.daemon = True

    def __enter__(self) -> PauseWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        # a poll in flight ends with the client; the thread is a daemon, so do not wait long
        self._thread.join(timeout=self.every + 1.0)

    def check(self) -> None:
        """Raise the error once the cluster has stalled (else nothing)."""
        if self.error is not None:
            raise self.error

    def _watch(self) -> None:
        since: float | None = None  # when the paused workers were first seen stuck
        # the memory they held then: progress is a fall below it, in one poll or over several
        # (it had been the least seen since, so a cluster that spilled a little at each poll
        # never counted as freeing memory and was failed as out of it)
        start = 0.0
        while not self._stop.wait(self.every) and self.error is None:
            try:
                workers = self.client.scheduler_info(n_workers=-1)["workers"]
                stuck = {a: workers[a] for a in _stuck(workers)}
                if not stuck:
                    since = None
                    continue
                held = sum(w["metrics"]["memory"] for w in stuck.values())
                budget = sum(w.get("memory_limit") or 0 for w in stuck.values())
            except Exception:  # a closing cluster, or an answer without a figure: next poll
                continue
            if since is None or held < start - FREED_FRACTION * budget:
                since, start = time.monotonic(), held  # newly stuck, or freeing memory
            elif time.monotonic() - since >= self.grace:
                self.error = _paused_error(stuck, len(workers), self.grace)
                self._cancel_everything()

    def _cancel_everything(self) -> None:
        """Cancel every future the client holds, with the error as the reason.

        A blocked ``gather`` (``dask.compute`` in an op) then raises ``CancelledError``, which
        the runner reports as :attr:`error`; the step fails either way, and ``--resume``
        starts it again from its last checkpoint.
        """
        from distributed import Future

        with contextlib.suppress(Exception):  # a closing client: nothing left to wait on
            held = [Future(key, self.client) for key in list(self.client.futures)]
            self.client.cancel(held, reason="workers out of memory", msg=str(self.error))


#: Worker task states of work that a worker holds but has not started.
WAITING_STATES = ("ready", "constrained", "waiting", "fetch", "flight")


def _stuck(workers: dict[str, dict[str, Any]]) -> list[str]:
    """The paused workers, when they hold up the cluster's work (else an empty list).

    No task runs anywhere (a running task may yet finish and free memory), and either every
    worker is paused, or a paused one holds tasks it will not start: Dask does not move those
    to a worker that still runs (measured: one worker paused with a ready task, the other idle,
    for good).
    """
    counts = {a: w.get("metrics", {}).get("task_counts", {}) for a, w in workers.items()}
    if any(c.get("executing", 0) or c.get("long-running", 0) for c in counts.values()):
        return []
    paused = sorted(a for a, w in workers.items() if w.get("status") == "paused")
    holding = any(counts[a].get(state, 0) for a in paused for state in WAITING_STATES)
    if not paused or (len(paused) < len(workers) and not holding):
        return []
    return paused


def _paused_error(
    stuck: dict[str, dict[str, Any]], total: int, grace: float
) -> WorkersOutOfMemoryError:
    """The error for ``stuck`` paused workers (of ``total``) that held up a run for ``grace`` s."""
    budgets = {w.get("memory_limit") or 0 for w in stuck.values()}
    budget = f" (a {_mb(min(budgets))} budget per worker)" if min(budgets) else ""
    shown = ", ".join(f"{a} at {_mb(w['metrics']['memory'])}" for a, w in list(stuck.items())[:3])
    more = f" and {len(stuck) - 3} more" if len(stuck) > 3 else ""
    which = "every worker" if len(stuck) == total else f"{len(stuck)} of {total} workers"
    return WorkersOutOfMemoryError(
        f"workers ran out of memory{budget}: {which} stopped taking tasks (paused at "
        f"memory.spill.pause of its budget), holding the run's tasks, and freed nothing for "
        f"{grace:.0f} s; the memory they hold is not Dask's to spill: {shown}{more}"
    )
