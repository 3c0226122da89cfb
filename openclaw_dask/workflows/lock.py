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
        raise in_use(directory, holder) from None
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


def holder(directory: Path) -> str | None:
    """Who holds ``directory``'s lock, as it wrote itself down (``None``: nobody does)."""
    try:
        handle = (directory / LOCK).open()
    except OSError:  # no lock file: no run ever held it
        return None
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return handle.read().strip() or "another process"
        return None  # closing the file lets the shared lock go


def in_use(directory: Path, holder: str) -> ConfigError:
    """The refusal of a run directory another run holds."""
    message = (
        f"another openclaw-dask run is using this run directory ({holder}); let it end "
        "(or stop it) before running or resuming here"
    )
    return ConfigError([Problem(message, "", str(directory))])
