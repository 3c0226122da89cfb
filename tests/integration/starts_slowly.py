"""Scheduler preload for tests: a cluster whose start takes :data:`DELAY` seconds longer.

A tune whose budget its baseline alone must use up (``tune --budget 20s``) measured a
candidate after all where the baseline's trial happened to be quick (3.5 s: one CI run).
With this preload every trial takes more than a quarter of that budget, which is when the
tune starts no candidate (the candidate and the final pairs' two trials would not fit).
"""

from __future__ import annotations

import time
from typing import Any

#: Seconds added to the scheduler's start.
DELAY = 5.0
#: ``--set`` arguments that load this preload in the scheduler of the cluster a command starts.
STARTS_SLOWLY_SETS = ["--set", f'dask.distributed.scheduler.preload=["{__file__}"]']


def dask_setup(scheduler: Any) -> None:
    """Delay the scheduler's start."""
    time.sleep(DELAY)
