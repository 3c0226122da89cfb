"""Count the tasks each client submits, on the scheduler (for ``run.json``).

The runner used to list every key of a step's graph on the client before submitting it, which
builds the whole graph a second time (Dask builds it again to submit). The scheduler already
sees every graph as it arrives: :class:`TaskCounter` adds up, per client, the tasks each
``update_graph`` brings in, so a step's task count is two cheap reads around it. Tasks that were
already on the scheduler (a persisted state) are not counted again.
"""

from __future__ import annotations

import logging
from typing import Any

from distributed import Client
from distributed.diagnostics.plugin import SchedulerPlugin

NAME = "openclaw-task-counter"
logger = logging.getLogger("openclaw_dask.runtime")


class TaskCounter(SchedulerPlugin):
    """Per-client count of the tasks submitted to the scheduler."""

    name = NAME
    idempotent = True  # registering again keeps the running counts of other clients

    def __init__(self) -> None:
        self.submitted: dict[str, int] = {}

    def update_graph(self, scheduler: Any, *, client: str, tasks: list[Any], **kwargs: Any) -> None:
        """Add the new graph's tasks to its client's count."""
        self.submitted[client] = self.submitted.get(client, 0) + len(tasks)

    def remove_client(self, scheduler: Any, client: str) -> None:
        """Forget a client that left."""
        self.submitted.pop(client, None)


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
    """Tasks ``client`` has submitted so far (0 before :func:`install`)."""
    return int(client.run_on_scheduler(_read, client.id))
