"""Console output shared by the commands: rich on a terminal, plain text in pipes."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import sys
import warnings
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from openclaw_dask.config.errors import ConfigError

# In pipes and logs rich would assume 80 columns and fold table rows; give them room instead.
_WIDTH = None if sys.stdout.isatty() else int(os.environ.get("COLUMNS", "200"))
out = Console(highlight=False, soft_wrap=True, width=_WIDTH)
err = Console(stderr=True, highlight=False, soft_wrap=True, width=_WIDTH)


def print_problems(exc: ConfigError, title: str | None = None) -> None:
    """One line per problem on stderr, then a count."""
    if title:
        err.print(f"[bold red]{title}[/]")
    for problem in exc.problems:
        err.print(f"[red]error:[/] {escape(str(problem))}", emoji=False)
    n = len(exc.problems)
    err.print(f"[red]{n} problem{'s' if n != 1 else ''} found[/]")


def warn(message: str) -> None:
    """One warning line on stderr."""
    err.print(f"[yellow]warning:[/] {escape(message)}", emoji=False)


def show_state_warnings() -> None:
    """Print each :class:`~openclaw_dask.runtime.state.StateFileWarning` as one ``warning:`` line.

    Python's own format takes two lines and names a file and line of ours, which tell the user
    nothing; other warnings keep it.
    """
    from openclaw_dask.runtime.state import StateFileWarning

    shown = warnings.showwarning

    def show(message: Warning | str, category: type[Warning], *args: Any, **kwargs: Any) -> None:
        if issubclass(category, StateFileWarning):
            warn(str(message))
        else:
            shown(message, category, *args, **kwargs)

    warnings.showwarning = show


#: A full disk, or a full quota (the usual way an HPC scratch or home directory fills up).
_NO_SPACE = (errno.ENOSPC, errno.EDQUOT)


def no_space(exc: BaseException, where: str | Path | None = None) -> str | None:
    """What to say when ``exc`` is a full disk or quota, else ``None``.

    Parameters
    ----------
    exc : BaseException
        The error (an ``OSError`` raised here or in a Dask task keeps its errno on the client).
    where : str or Path, optional
        A folder on the filesystem in question, for its free space (default: the error's file).

    Returns
    -------
    str or None
        E.g. ``no space left on device for runs/x/monthly.zarr (28 kB free)``.
    """
    if not isinstance(exc, OSError) or exc.errno not in _NO_SPACE:
        return None
    what = "disk quota exceeded" if exc.errno == errno.EDQUOT else "no space left on device"
    target = exc.filename or where
    free = ""
    probe = Path(where or target or ".")
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    with contextlib.suppress(OSError):
        free = f" ({_size(shutil.disk_usage(probe).free)} free)"
    return f"{what}{f' for {target}' if target else ''}{free}"


def _size(nbytes: float) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if nbytes < 1000:
            return f"{nbytes:.0f} {unit}"
        nbytes /= 1000
    return f"{nbytes:.0f} TB"


#: The most of an op's own error message that ``submit`` prints: characters, and lines. A
#: message can hold a whole array's repr or a subprocess's output (20 kB filled ~250 rows of an
#: 80-column terminal); run.json keeps all of it.
MESSAGE_CHARS = 1000
MESSAGE_LINES = 15


def clipped(text: str, chars: int = MESSAGE_CHARS, lines: int = MESSAGE_LINES) -> tuple[str, int]:
    """``text`` bounded for a terminal: its head and tail around a note of what was left out.

    Parameters
    ----------
    text : str
        The message.
    chars : int
        The most characters shown (the note aside): three quarters from the head, the rest
        from the tail, which often says what went wrong last.
    lines : int
        The most lines shown, split the same way.

    Returns
    -------
    tuple of (str, int)
        What to print, and how many characters were left out (0: ``text`` as it is).
    """
    rows = text.splitlines(keepends=True)
    if len(text) <= chars and len(rows) <= lines:
        return text, 0
    head_chars, head_lines = chars * 3 // 4, max(1, lines * 3 // 4)
    tail_chars, tail_lines = chars - head_chars, max(1, lines - head_lines)
    # cut at the end of the head's last line or after its characters, whichever comes first
    head_end = min(sum(len(r) for r in rows[:head_lines]), head_chars)
    tail_start = max(len(text) - sum(len(r) for r in rows[-tail_lines:]), len(text) - tail_chars)
    head, tail = text[:head_end].rstrip("\n"), text[tail_start:].strip("\n")
    left = text[head_end:tail_start]
    breaks = left.count("\n")
    what = (f"{breaks:,} lines, " if breaks else "") + f"{len(left):,} characters"
    return f"{head}\n[... {what} left out ...]\n{tail}", len(left)
