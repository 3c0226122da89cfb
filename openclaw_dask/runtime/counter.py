"""Count the tasks each client submits to run, on the scheduler (for ``run.json``).

The runner used to list every key of a step's graph on the client before submitting it, which
builds the whole graph a second time (Dask builds it again to submit). The scheduler already
sees every graph as it arrives: :class:`TaskCounter` adds up, per client, the tasks each of its
graphs sets to run, so a step's task count is two cheap reads around it.

A graph's ``tasks`` as distributed hands them to ``SchedulerPlugin.update_graph`` are not
those: they are every task the graph touches (``_generate_taskstates``' ``touched_tasks``,
all reachable from the requested keys), also those already in memory (a persisted state, a
previous window's) and those still waiting or running for an earlier graph (the iterative
runner submits the next window while one runs). Counting them gave 339 tasks in ``run.json``
for a climate run whose performance report (and the scheduler's processing -> memory
transitions) said 286.
"""

from __future__ import annotations

import logging
from typing import Any

from distributed import Client
from distributed.diagnostics.plugin import SchedulerPlugin

NAME = "openclaw-task-counter"
logger = logging.getLogger("openclaw_dask.runtime")


class TaskCounter(SchedulerPlugin):
    """Per client, the tasks its graphs set to run on the scheduler.

    A task counts for a client when the scheduler, handling one of that client's graphs
    (``update_graph``, whatever sent it: ``compute``, ``persist``, ``submit``, ``map``), moves
    it from released to waiting: a task new to the scheduler, or one it knew but had released
    (its result dropped) that the graph needs again. A task already in memory, or already
    waiting, queued or running for another graph, is not counted, nor a new task the graph
    does not need (its dependent already in memory), nor one computed again later because its
    worker was lost (that is not the graph's doing, and would make the count depend on luck).
    """

    name = NAME
    idempotent = True  # registering again keeps the running counts of other clients

    def __init__(self) -> None:
        self.submitted: dict[str, int] = {}
        # the graph being handled: its stimulus id and client. The scheduler makes its
        # transitions in the same event-loop tick, right after calling update_graph (a
        # graph's handling must not be async, distributed's comment says), each with the
        # graph's stimulus id
        self._graph: tuple[str, str] | None = None

    def update_graph(
        self, scheduler: Any, *, client: str, stimulus_id: str = "", **kwargs: Any
    ) -> None:
        """Note the graph whose tasks the transitions that follow set to run."""
        self._graph = (stimulus_id, client)
        self.submitted.setdefault(client, 0)

    def transition(self, key: Any, start: str, finish: str, *args: Any, **kwargs: Any) -> None:
        """Count a task the graph being handled sets to run for its client."""
        if start != "released" or finish != "waiting" or self._graph is None:
            return
        stimulus, client = self._graph
        if kwargs.get("stimulus_id") == stimulus and client in self.submitted:
            self.submitted[client] += 1

    def remove_client(self, scheduler: Any, client: str) -> None:
        """Forget a client that left."""
        self.submitted.pop(client, None)
        if self._graph is not None and self._graph[1] == client:
            self._graph = None


def install(client: Client) -> bool:
    """Add the counter to the scheduler unless it is there (other clients may share it).

    Returns ``False`` (and task counts stay 0) when the scheduler cannot load it, e.g. a
    scheduler started by hand in an environment without openclaw-dask.
    """
    try:
        client.register_plugin(TaskCounter(), name=NAME)
    except Exception as exc:  # the counts are informative; the run goes on without them
        logger.warning("task counts unavailable: the scheduler refused %s (%s)", NAME, exc)
        return False
    return True


def _read(client_id: str, dask_scheduler: Any = None) -> int:
    plugin = dask_scheduler.plugins.get(NAME)
    return plugin.submitted.get(client_id, 0) if plugin else 0


def submitted(client: Client) -> int:
    """Tasks ``client``'s graphs have set to run so far (:class:`TaskCounter`; 0 before
    :func:`install`)."""
    return int(client.run_on_scheduler(_read, client.id))
