"""Preload for the processes an SSH cluster starts: they stop when their SSH session ends.

Dask's SSH deploy starts the scheduler and each worker's nanny as a command of its own SSH
session (``python -m distributed.cli.dask_spec``, no terminal) and stops them by asking the
scheduler to close its workers, then sending the session a ``KILL`` "signal" request and
closing the connection. OpenSSH's sshd (9.2 here) ignores that request, and it does not signal
a command without a terminal when the connection drops. So whatever the scheduler had not told
to close kept running on its node, orphaned: the nanny (and worker) of a worker that had
started but not yet registered when Ctrl-C stopped ``submit`` (7 of 11 presses 1-6 s into an
ssh run on the test rig; still there 2 minutes later), and the scheduler and every nanny and
worker of a client that was killed (all 7 processes still ran a minute later).

What the command does see is its standard input: the session's pipe, at end of file once the
session is gone, whatever ended it (Dask's close, a Ctrl-C, a killed client). A thread reads
it; at the end it closes the process's server (scheduler or nanny: the nanny closes its
worker) on the server's own loop, and exits the process if that has not happened within
:data:`GRACE` seconds. A process whose standard input is not a pipe or socket (a terminal,
``/dev/null``: not started by an SSH session) is left alone.
"""

from __future__ import annotations

import logging
import os
import stat
import threading
import time
from typing import Any

logger = logging.getLogger(__name__)

#: seconds a server has to close after its session ended, before the process exits anyway
GRACE = 5.0


def session_pipe() -> bool:
    """Whether standard input is a pipe or socket (an SSH session's without a terminal)."""
    try:
        mode = os.fstat(0).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def wait_for_end_of_input() -> None:
    """Return once standard input is at end of file (or unreadable)."""
    try:
        while os.read(0, 65536):
            pass
    except OSError:
        pass


def _watch(server: Any) -> None:
    wait_for_end_of_input()
    logger.info("the SSH session that started this process ended: closing")
    server.loop.add_callback(server.close)
    time.sleep(GRACE)
    os._exit(1)


def dask_setup(server: Any) -> None:
    """Preload hook (scheduler or nanny): close ``server`` when the SSH session ends."""
    if session_pipe():
        threading.Thread(target=_watch, args=(server,), name="ssh-hangup", daemon=True).start()
