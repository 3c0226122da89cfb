"""Progress of a step, read from the scheduler while its graph runs.

The runner submits a step's whole graph at once; this module asks the scheduler, a few times a
second, how many of the graph's tasks are still waiting or running, and moves a rich progress
bar. (Dask's own ``progress`` prints plain text or notebook widgets; we want one rich bar per
step in the terminal, and nothing at all when output is not a terminal.)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from dask.base import collections_to_expr

PENDING = ("released", "waiting", "no-worker", "queued", "processing")
POLL_SECONDS = 0.25


def graph_keys(collections: Sequence[Any]) -> list[Any]:
    """Every task key of ``collections`` (what the step will run)."""
    if not collections:
        return []
    graph = collections_to_expr(list(collections)).__dask_graph__()
    return list(graph.keys())


def _pending(keys: list[Any], dask_scheduler: Any = None) -> int:
    tasks = dask_scheduler.tasks
    return sum(1 for k in keys if k in tasks and tasks[k].state in PENDING)


def compute_with_progress(
    client: Any,
    collections: Sequence[Any],
    progress: Any = None,
    task_id: Any = None,
    check: Callable[[], None] | None = None,
) -> list[Any]:
    """Run ``collections`` on ``client`` in one submission; return the results.

    The keys of the graph are listed (one more pass over the graph) only when a progress bar
    is shown; the run record counts tasks on the scheduler instead
    (:mod:`openclaw_dask.runtime.counter`).

    Parameters
    ----------
    client
        The run's ``distributed.Client``.
    collections
        Dask collections (or delayed writes).
    progress, task_id
        A ``rich.progress.Progress`` and the bar to move (optional).
    check
        Called between polls; raises to stop waiting (see :func:`wait_checked`).
    """
    keys = graph_keys(collections) if progress is not None else []
    futures = client.compute(list(collections))
    if progress is not None:
        progress.update(task_id, total=len(keys), completed=0)

    def poll() -> None:
        if check is not None:
            check()
        if progress is None:
            return
        try:
            pending = client.run_on_scheduler(_pending, keys)
        except Exception:  # progress is cosmetic; the futures tell the truth
            pending = len(keys)
        progress.update(task_id, completed=len(keys) - pending)

    wait_checked(futures, poll)
    if progress is not None:
        progress.update(task_id, completed=len(keys))
    return client.gather(futures)


def wait_checked(futures: Sequence[Any], check: Callable[[], None] | None = None) -> None:
    """``distributed.wait`` for ``futures``, calling ``check`` every :data:`POLL_SECONDS`.

    ``check`` may raise to give up the wait: the runner's
    :class:`~openclaw_dask.runtime.oom.PauseWatch` does when every worker has stayed paused for
    memory (Dask would wait for ever).
    """
    from distributed import wait

    while True:
        try:  # returns as soon as everything is done, else after POLL_SECONDS
            wait(futures, timeout=POLL_SECONDS if check is not None else None)
            return
        except TimeoutError:
            pass
        if check is not None:
            check()
