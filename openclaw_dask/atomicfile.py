"""Small files written whole or not at all: a reader, or a full disk, never leaves one cut."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path


def atomic_write_text(path: Path, text: str) -> None:
    """Write a small file so readers never see it half-written.

    The text goes to a temporary file beside ``path``, which then replaces it: a write that
    fails (a full disk, a quota) or is interrupted (Ctrl-C) leaves the old file as it was and
    no temporary behind.

    Raises
    ------
    OSError
        With ``path`` as its file name, where the write or the rename failed.
    """
    _replace(path, lambda tmp: tmp.write_text(text))


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """:func:`atomic_write_text` for bytes (an image)."""
    _replace(path, lambda tmp: tmp.write_bytes(data))


def _replace(path: Path, write: Callable[[Path], object]) -> None:
    if path.exists() and not path.is_file():  # /dev/null, a FIFO: replacing it replaces it
        write(path)
        return
    real = Path(os.path.realpath(path)) if path.is_symlink() else path  # a link stays a link
    tmp = real.with_name(f".{real.name}.tmp{os.getpid()}")
    try:
        write(tmp)
        tmp.replace(real)
    except OSError as exc:
        tmp.unlink(missing_ok=True)  # a full disk leaves no half-written temporary behind
        if exc.filename is None:  # say which file (a full disk's write does not)
            raise OSError(exc.errno, exc.strerror, str(path)) from exc
        raise
    except BaseException:  # a Ctrl-C mid-write: no temporary behind either
        tmp.unlink(missing_ok=True)
        raise
