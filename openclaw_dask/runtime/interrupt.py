"""Worker preload: a local worker process leaves Ctrl-C to the process that started it.

A terminal's Ctrl-C sends SIGINT to every process of the foreground group, and the worker
processes of a ``LocalCluster`` (or ``LocalCUDACluster``) are children of the client in that
group. Without this, each worker died of ``KeyboardInterrupt`` at the same moment as the client,
printed its traceback, and the scheduler logged lost tasks, while the client was still marking
the run interrupted and closing the cluster in order. With SIGINT ignored in the workers, the
client alone reacts and closes them through their nannies (SIGTERM and SIGKILL still stop a
worker, as before).
"""

from __future__ import annotations

import signal
import threading
from typing import Any


def dask_setup(worker: Any) -> None:
    """Preload hook: ignore SIGINT in this worker process."""
    # signal handlers can only be set from the main thread; a worker run inside a thread of
    # another process (not how our plans start them) keeps that process's handling
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
