"""Scheduler preload for tests: a cluster that never finishes starting.

Named by file path in a config's ``dask:`` section (``distributed.scheduler.preload``), it
blocks the scheduler's start, and with it the process that starts the cluster (a ``cluster
up`` daemon) for good: SIGTERM is noted but never acted on, as in a start stuck on a lost file
system or an SSH node that never answers.
"""

from __future__ import annotations

import time
from typing import Any

#: ``--set`` arguments that load this preload in the scheduler of the cluster a command starts.
HANGS_STARTING_SETS = ["--set", f'dask.distributed.scheduler.preload=["{__file__}"]']


def dask_setup(scheduler: Any) -> None:
    """Block the scheduler's start."""
    time.sleep(3600)  # far longer than any test
