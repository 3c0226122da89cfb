"""Progress of a step, read from the scheduler while its graph runs.

The runner submits a step's whole graph at once; this module asks the scheduler, a few times a
second, how many of the graph's tasks are still waiting or running, and moves a rich progress
bar. (Dask's own ``progress`` prints plain text or notebook widgets; we want one rich bar per
step in the terminal, and nothing at all when output is not a terminal.) Without a terminal,
an iterative step says its progress in a line a minute instead (:class:`ProgressNews`).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from dask.base import collections_to_expr
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    Task,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

PENDING = ("released", "waiting", "no-worker", "queued", "processing")
POLL_SECONDS = 0.25


class TaskCountColumn(MofNCompleteColumn):
    """``done/total`` of a step's tasks, and nothing while the total is not known yet.

    A step's bar is added before its op has built the graph (the total comes with the graph,
    :func:`compute_with_progress`); a ``{task.completed}/{task.total}`` text column showed
    "0/None" meanwhile (for ~2 s in the climate workflow's ``analyse``), and rich's own
    :class:`~rich.progress.MofNCompleteColumn` "0/?". The bar pulses then, and this column
    stays empty, as rich's :class:`~rich.progress.TimeRemainingColumn` does for an unknown
    total.
    """

    def render(self, task: Task) -> Text:
        """``done/total``, the done count padded to the total's width; empty without one."""
        if task.total is None:
            return Text("")
        return super().render(task)


def step_progress(disable: bool = False, console: Console | None = None) -> Progress:
    """The bars of a run's steps: name, bar, ``done/total`` tasks, time taken and left.

    Parameters
    ----------
    disable
        Show nothing (output is not a terminal, or the caller asked for no bars).
    console
        Where to draw them; rich's global console (the terminal) by default.
    """
    return Progress(
        TextColumn("{task.description:<24}"),
        BarColumn(),
        TaskCountColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        disable=disable,
        transient=False,
        console=console,
    )


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
        except TimeoutError as exc:
            # distributed's ``sync`` keeps the timeout in its closure, whose frames its
            # traceback holds, and with them ``futures``: a reference cycle. A failed window's
            # futures dropped by the caller stayed with the scheduler (as erred) until Python's
            # next full collection, and the same window run again got the old error at once
            exc.__traceback__ = None
        if check is not None:
            check()


class ProgressNews:
    """A line about an iterative step's progress at most every :attr:`every` seconds.

    Without a terminal (a batch job's log, ``nohup``) there is no progress bar, and a run at
    0.25° that takes days said nothing until it ended; these lines give the step, the rate and
    the time left, measured over the last :attr:`recent` seconds (or the attempt so far): a
    rate over the whole attempt kept its start-up and any change of pace long after (an audit's
    "11 min left" at 26 % and again at 37 %).
    """

    #: seconds between two lines
    every = 60.0
    #: seconds of the past that the rate is measured over
    recent = 600.0

    def __init__(self, name: str, start: int, total: int) -> None:
        self.name, self.start, self.total = name, start, total
        self.t0 = self.last = time.monotonic()
        #: (time, steps done) of the lines said, from the attempt's start
        self.seen: deque[tuple[float, int]] = deque([(self.t0, start)])

    def line(self, done: int) -> str | None:
        """The line for ``done`` steps, or None when the last one is recent."""
        now = time.monotonic()
        if now - self.last < self.every or done <= self.start:
            return None
        self.last = now
        # from the latest point at least `recent` seconds back (the start, until then)
        while len(self.seen) > 1 and now - self.seen[1][0] >= self.recent:
            self.seen.popleft()
        since, then = self.seen[0]
        self.seen.append((now, done))
        per_second = max(done - then, 0) / max(now - since, 1e-9) or 1e-9
        left = (self.total - done) / per_second
        return (
            f"{self.name}: step {done:,} of {self.total:,} ({100 * done / self.total:.1f} %), "
            f"{per_second * 60:,.0f} steps/min, about {_duration(left)} left"
        )


def _duration(seconds: float) -> str:
    """``45 s``, ``12 min``, ``3.5 h``, ``2.1 days``, ``3.4 years``, ``1,200 years``."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    if seconds < 48 * 3600:
        return f"{seconds / 3600:.1f} h"
    days = seconds / 86400
    if days < 2 * 365.25:
        return f"{days:.1f} days"
    years = days / 365.25  # a run far too long for this cluster: "524794290037100.2 days" said
    return f"{years:.1f} years" if years < 100 else f"{years:,.0f} years"
