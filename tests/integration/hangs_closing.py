"""Scheduler preload for tests: a cluster that never finishes closing.

Named by file path in a config's ``dask:`` section (``distributed.scheduler.preload``), it
blocks the event loop of the process that runs the scheduler (a ``cluster up`` daemon, for a
local cluster, whose nannies share that loop) when the scheduler removes its first worker:
as the cluster closes, before the nannies have stopped the other workers. A daemon that hangs
while it closes its cluster, as a stuck plugin, a lost file system or a C call would leave it;
only SIGKILL ends it.
"""

from __future__ import annotations

import time
from typing import Any

from distributed import SchedulerPlugin

#: ``--set`` arguments that load this preload in the scheduler of the cluster a command starts.
HANGS_CLOSING_SETS = ["--set", f'dask.distributed.scheduler.preload=["{__file__}"]']


class _HangsClosing(SchedulerPlugin):
    def remove_worker(self, scheduler: Any, worker: str, **kwargs: Any) -> None:
        time.sleep(3600)  # far longer than any test


def dask_setup(scheduler: Any) -> None:
    """Add the plugin."""
    scheduler.add_plugin(_HangsClosing(), name="hangs-closing")
