"""Waiting for (and killing) processes that are not (or no longer) this process's children.

``psutil.wait_procs`` waits until a pid is gone; an exited process that is not our child stays a
zombie until its parent or init reaps it (seconds in some containers), although it is done:
its files and locks are closed. These helpers count a zombie as gone.
"""

from __future__ import annotations

import contextlib
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


def kill_tree(process: psutil.Process, timeout: float = 10.0) -> list[psutil.Process]:
    """SIGKILL ``process`` and every process under it; return those under it that it killed.

    For a process that will not stop on request (a ``cluster up`` daemon that hangs while it
    closes its cluster). Its children are not left to notice their parent's death: a local
    worker does (a thread of its own ends it), but not while a task holds the GIL in a C call,
    nor does what a task started. The process is stopped first (SIGSTOP), so that it starts
    no new one (a nanny restarting a worker) between the look at its children and the kill.

    Parameters
    ----------
    process : psutil.Process
        The process (psutil refuses to signal a pid that now names another process).
    timeout : float
        Seconds to wait for them all to be gone (a zombie is).

    Returns
    -------
    list of psutil.Process
        The processes under ``process`` that ran when it was stopped, by pid.
    """
    try:
        process.suspend()
        under = process.children(recursive=True)
    except psutil.NoSuchProcess:
        under = []
    for p in [process, *under]:
        with contextlib.suppress(psutil.NoSuchProcess):
            p.kill()
    wait_gone([process, *under], timeout)
    return sorted(under, key=lambda p: p.pid)
