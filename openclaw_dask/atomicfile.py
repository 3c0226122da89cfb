"""Small files written whole or not at all: a reader, or a full disk, never leaves one cut."""

from __future__ import annotations

import os
from pathlib import Path


def atomic_write_text(path: Path, text: str) -> None:
    """Write a small file so readers never see it half-written.

    The text goes to a temporary file beside ``path``, which then replaces it: a write that
    fails (a full disk, a quota) leaves the old file as it was and no temporary behind.

    Raises
    ------
    OSError
        With ``path`` as its file name, where the write or the rename failed.
    """
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        tmp.write_text(text)
        tmp.replace(path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)  # a full disk leaves no half-written temporary behind
        if exc.filename is None:  # say which file (a full disk's write does not)
            raise OSError(exc.errno, exc.strerror, str(path)) from exc
        raise
