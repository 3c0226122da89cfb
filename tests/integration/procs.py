"""Reading other processes' command lines in tests, where they may end at any moment."""

from __future__ import annotations

from typing import Any

import psutil


def command_line(process: psutil.Process) -> str:
    """``process``'s command line as one string; ``""`` once it has ended.

    A child that has just exited is a zombie until its parent reaps it, and psutil refuses its
    command line (``ZombieProcess``, a ``NoSuchProcess``): a loop that looked for the cluster
    daemon among ``cluster up``'s children failed on such a child in a run beside a busy loop.
    """
    try:
        return " ".join(process.cmdline())
    except psutil.NoSuchProcess:
        return ""


def cpu_seconds(pid: int) -> float:
    """The user and system seconds process ``pid`` has used so far."""
    times = psutil.Process(pid).cpu_times()
    return times.user + times.system


def check_busiest_named(top: list[dict[str, Any]], pid: int, share: float, most: int) -> bool:
    """Check a report's ``top`` (its busiest other processes) against a process ``pid`` that
    used ``share`` cores (the test's own measure, over a window holding the report's); whether
    ``pid`` is named.

    Beside the test suite's other worker, whose runs start processes that together took 1.6
    cores of this 2-core machine, a spinning stranger had less than each of three of them and
    was rightly left out: then the list must be full and each named one about as busy (half
    the stranger's share at least, as its rate in the report's shorter window may differ).
    """
    cores = {p["pid"]: p["cores"] for p in top}
    assert share > 0.2, share  # it did spin
    if pid in cores:
        assert cores[pid] > 0.2, top
        return True
    assert len(cores) == most and min(cores.values()) >= share / 2, (top, share)
    return False
