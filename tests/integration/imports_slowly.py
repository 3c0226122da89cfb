"""A task function whose module takes :data:`DELAY` seconds to import: a worker's first call.

A task's function travels by reference, and a worker imports its module when it first runs
one (the overhead suite's module imports xarray and the workflow engine: ~1 s). A benchmark
that warms one worker only counts the other's import as a round trip.
"""

from __future__ import annotations

import time

#: Seconds the import takes, in every process that imports this module.
DELAY = 1.5

time.sleep(DELAY)


def noop(x: int) -> int:
    """``x``."""
    return x
