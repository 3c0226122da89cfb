"""Waiting for processes that are not (or no longer) this process's children.

``psutil.wait_procs`` waits until a pid is gone; an exited process that is not our child stays a
zombie until its parent or init reaps it (seconds in some containers), although it is done:
its files and locks are closed. These helpers count a zombie as gone.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

import psutil


def running(process: psutil.Process) -> bool:
    """Whether ``process`` still runs: not exited (a zombie has), its pid not reused."""
    try:
        # is_running is False once the pid names another process
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def wait_gone(
    processes: Iterable[psutil.Process], timeout: float, poll: float = 0.05
) -> list[psutil.Process]:
    """Wait until each of ``processes`` has exited; return those still running at ``timeout``."""
    left = [p for p in processes if running(p)]
    deadline = time.monotonic() + timeout
    while left and time.monotonic() < deadline:
        time.sleep(poll)
        left = [p for p in left if running(p)]
    return left
