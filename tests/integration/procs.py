"""Reading other processes' command lines in tests, where they may end at any moment."""

from __future__ import annotations

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
