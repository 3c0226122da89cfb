"""Worker preload for local workers: they share the client's terminal, the client speaks for them.

The worker processes of a ``LocalCluster`` (or ``LocalCUDACluster``) are children of the client,
in its terminal's process group and writing to its stderr. Two things reached the user twice
and badly from there:

* **Ctrl-C.** A terminal sends SIGINT to the whole foreground group. Each worker died of
  ``KeyboardInterrupt`` and printed its traceback, and the scheduler logged lost tasks, while the
  client was still marking the run interrupted and closing the cluster in order. The workers now
  ignore SIGINT and the client closes them through their nannies (SIGTERM and SIGKILL still stop
  a worker).
* **A failed task.** Dask's worker logs ``Compute Failed`` with the task, the exception and its
  traceback as one ``repr`` string. The client that waits for the task receives the same
  exception with its traceback; ``submit`` prints one line and keeps the traceback in
  ``run.json``. The worker's copy of that message is dropped; other worker logs are untouched.
"""

from __future__ import annotations

import logging
import signal
import threading
from typing import Any

#: Dask's worker log message for a task that raised (``distributed/worker.py``).
TASK_FAILED = "Compute Failed"


def _not_a_task_failure(record: logging.LogRecord) -> bool:
    return not str(record.msg).startswith(TASK_FAILED)


def dask_setup(worker: Any) -> None:
    """Preload hook: ignore SIGINT and leave failed tasks to the client in this worker."""
    # signal handlers can only be set from the main thread; a worker run inside a thread of
    # another process (not how our plans start them) keeps that process's handling
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    logger = logging.getLogger("distributed.worker")
    if _not_a_task_failure not in logger.filters:
        logger.addFilter(_not_a_task_failure)
