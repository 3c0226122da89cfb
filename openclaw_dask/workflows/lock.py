"""One run at a time in a run directory.

Two runs writing one directory (a batch job requeued while the first still runs, a second
``--resume`` in another terminal) would append to the same Zarr stores and checkpoints and
leave both corrupt. A run holds an exclusive ``flock`` on ``RUN_DIR/.openclaw.lock`` for its
whole life. The kernel drops the lock when the process ends, even by SIGKILL, so a killed run
never leaves a stale lock for ``--resume`` to trip over; the file itself stays (removing it
would let two later runs lock two different files).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import os
import socket
from pathlib import Path
from typing import IO

from openclaw_dask.config import ConfigError
from openclaw_dask.config.errors import Problem

LOCK = ".openclaw.lock"


def hold(directory: Path) -> IO[str]:
    """Lock ``directory`` for this run; close the returned file to release it.

    Raises
    ------
    ConfigError
        Another process holds the lock (the message says which, as it wrote itself down).
    """
    handle = (directory / LOCK).open("a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip() or "another process"
        handle.close()
        message = (
            f"another openclaw-dask run is using this run directory ({holder}); let it end "
            "(or stop it) before running or resuming here"
        )
        raise ConfigError([Problem(message, "", str(directory))]) from None
    handle.seek(0)
    handle.truncate()
    since = dt.datetime.now().isoformat(timespec="seconds")
    try:
        handle.write(f"pid {os.getpid()} on {socket.gethostname()} since {since}\n")
        handle.flush()
    except OSError as exc:  # a full disk: say which file, and let the lock go
        with contextlib.suppress(OSError):  # closing flushes the same bytes again (and fails)
            handle.close()
        raise OSError(exc.errno, exc.strerror, str(directory / LOCK)) from exc
    return handle
