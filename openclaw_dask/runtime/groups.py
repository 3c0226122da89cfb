"""Forget the scheduler's records of finished task groups, which it keeps for good otherwise.

The scheduler sorts tasks into task groups by key name, and every window of an iterative step
makes new names, so new groups (~200 a window of the climate step at 5°, one per batch of steps
at 0.25°). A group leaves the scheduler's ``task_groups`` once its tasks are forgotten, but the
span its tasks ran under (``distributed.spans``; distributed issue #7977) and the computation
they were submitted in keep it, with its dependencies, the groups of every window before it: in
the process that runs the scheduler (``submit``'s own, on a local cluster), measured at 5°, 300
model years: 18,500 groups alive at the end, 1-2 kB each; at 0.25°, ~115 windows a model year,
1-2 GB in 50 years. :func:`forget_finished_groups`, after each checkpoint, drops the groups
whose tasks are all forgotten from them; a span keeps one, the one that ended last, which its
end time (``Span.stop``) needs. Only the dashboard's per-span summaries of the windows before
lose the dropped groups' counts and durations; the fine performance metrics are the span's own
and stay.
"""

from __future__ import annotations

import logging
from typing import Any

from distributed import Client

logger = logging.getLogger("openclaw_dask.runtime")


def _forget(dask_scheduler: Any = None) -> int:
    """On the scheduler: drop the finished groups from its computations and spans; how many."""
    live = dask_scheduler.task_groups

    def finished(groups: Any) -> list[Any]:
        return [tg for tg in groups if live.get(tg.name) is not tg]

    dropped: list[Any] = []
    for computation in getattr(dask_scheduler, "computations", ()):  # (deprecated: may go)
        gone = finished(computation.groups)
        computation.groups.difference_update(gone)
        dropped += gone
    spans = dask_scheduler.extensions.get("spans")
    for span in spans.spans.values() if spans is not None else ():
        gone = finished(span.groups)
        if gone and len(gone) == len(span.groups):
            kept = max(gone, key=lambda tg: tg.stop)  # Span.stop is the latest of its groups'
            gone.remove(kept)
            kept.dependencies = set()
        span.groups.difference_update(gone)
        dropped += gone
    for tg in dropped:
        # a group names the groups its tasks needed: the windows before, one after another
        tg.dependencies = set()
    return len({id(tg) for tg in dropped})


def forget_finished_groups(client: Client) -> int | None:
    """Have the scheduler forget the task groups of forgotten tasks (see the module docstring).

    Returns
    -------
    int or None
        How many it dropped; ``None`` when the scheduler could not (a scheduler without
        openclaw-dask, or a distributed whose scheduler keeps them elsewhere): the run goes on.
    """
    try:
        return int(client.run_on_scheduler(_forget))
    except Exception as exc:  # memory, not results: never a reason to stop a run
        logger.debug("the scheduler's finished task groups stay: %s", exc)
        return None
