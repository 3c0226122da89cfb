"""The runs registered on a cluster's scheduler: their run directories, workflows and starts.

A run registers itself in the scheduler's metadata as it starts
(:func:`~openclaw_dask.workflows.cluster_runs.register_run`, which also claims its op modules).
Reading them back is the runtime's too: ``cluster status`` lists them, and the ``cluster up``
daemon names the runs its close ends, for ``cluster down`` to say.
"""

from __future__ import annotations

from typing import Any

#: The scheduler metadata key of the runs: ``{client id: {"run", "workflow", "started"}}``.
RUNS = "openclaw-runs"


def runs_on(client: Any) -> list[dict[str, Any]]:
    """The runs on ``client``'s scheduler now (``run``, ``workflow``, ``started``), oldest first.

    Only runs whose client is still connected: one that ended (even by SIGKILL) is not listed.
    The scheduler needs openclaw-dask, as a run's graphs and ``cluster status``'s look at the
    workers already do.
    """
    return client.run_on_scheduler(_live_runs)


def _live_runs(dask_scheduler: Any = None) -> list[dict[str, Any]]:
    """On the scheduler: the registered runs whose clients are connected, oldest first."""
    runs = dask_scheduler.get_metadata([RUNS], default={})
    live = [r for c, r in runs.items() if c in dask_scheduler.clients]
    return sorted(live, key=lambda r: r["started"])
