"""Console output shared by the commands: rich on a terminal, plain text in pipes."""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import re
import select
import shutil
import sys
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from openclaw_dask.config.errors import ConfigError
from openclaw_dask.exitcodes import EXIT_STDOUT_CLOSED


def _readerless() -> list[int]:
    """Which of stdout and stderr are pipes whose reader went away (``| head -1`` has its line).

    A pipe's writing end polls as an error once no process holds its reading end.
    """
    poll = select.poll()
    for fd in (1, 2):
        poll.register(fd, 0)  # errors are always reported
    return [fd for fd, events in poll.poll(0) if events & select.POLLERR]


def stop_if_reader_gone() -> None:
    """End the command quietly, exit :data:`EXIT_STDOUT_CLOSED`, if a reader of its output went
    away; return otherwise (a ``BrokenPipeError`` of a socket is no business of this).

    What ``git log | head -1`` does for its user (killed by SIGPIPE, 141 in the shell): no
    message, no traceback. Python ignores SIGPIPE (Dask's sockets need the ``EPIPE`` error
    instead), so the closed pipe is pointed at ``/dev/null``: writes still to come, and the
    interpreter's last flush, then go nowhere rather than into an "Exception ignored" line.
    """
    gone = _readerless()
    if not gone:
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    for fd in gone:
        os.dup2(devnull, fd)
    os.close(devnull)
    # SystemExit: a command's own `except Exception` lets it by (a run's step takes it for a
    # failure of its own: a run announces through run_announcer instead)
    raise SystemExit(EXIT_STDOUT_CLOSED)


class ReaderGone(KeyboardInterrupt):
    """The reader of a run's output went away mid-run (``submit ... 2>&1 | head -1``).

    A :class:`KeyboardInterrupt` so that the run stops as a Ctrl-C stops it (its cluster
    closed, run.json saying ``interrupted``, ``--resume`` continuing it); the command then
    exits :data:`EXIT_STDOUT_CLOSED`. :func:`stop_if_reader_gone`'s ``SystemExit`` had failed
    the step under way ("SystemExit: 141", exit 1), or between steps left run.json "running".
    """


def run_announcer(console: Console) -> Callable[[str], None]:
    """What a run announces its lines with: on ``console``, raising :class:`ReaderGone` once
    that console's reader went away."""

    def announce(line: str) -> None:
        try:
            console.print(line, markup=False)
        except SystemExit as exc:
            if exc.code != EXIT_STDOUT_CLOSED:
                raise
            raise ReaderGone("the reader of the output went away") from None

    return announce


class _Console(Console):
    """rich's Console, ending as :func:`stop_if_reader_gone` says when its reader went away."""

    def on_broken_pipe(self) -> None:
        # rich's own exits 1, which here says "the run failed"
        self.quiet = True  # (what cleanup prints later is dropped)
        stop_if_reader_gone()
        super().on_broken_pipe()


# In pipes and logs rich would assume 80 columns and fold table rows; give them room instead.
_WIDTH = None if sys.stdout.isatty() else int(os.environ.get("COLUMNS", "200"))
out = _Console(highlight=False, soft_wrap=True, width=_WIDTH)
err = _Console(stderr=True, highlight=False, soft_wrap=True, width=_WIDTH)


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


#: control characters a terminal would act on (colours, cursor moves, a title): all of C0 but
#: tab and newline, DEL and C1
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def visible(text: str) -> str:
    r"""``text`` with the control characters a terminal acts on shown as ``\x1b`` and alike.

    An op's own message is printed as it is; escape sequences in it (``\x1b[31m``) reached
    the terminal and coloured, moved or retitled it. Tabs and newlines stay.

    Examples
    --------
    >>> print(visible("\x1b[31mred\x1b[0m"))
    \x1b[31mred\x1b[0m
    """
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


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


#: Set (to anything) for tracebacks of unexpected errors, and Dask's own logs during a run.
DEBUG_ENV = "OPENCLAW_DEBUG"
#: Where distributed's terminal handler sits; its loggers below it have none of their own.
DASK_LOGGER = "distributed"
#: What an SSH cluster's remote workers write, forwarded line by line (``runtime/ssh_process``):
#: their output, not a log of this process.
FORWARDED = "distributed.deploy.ssh"
#: Dask's config of the logging of processes started meanwhile (read when they import it).
WORKER_LOGGING_ENV = "DASK_LOGGING"


def _not_dask_chatter(record: logging.LogRecord) -> bool:
    name = record.name
    if name != DASK_LOGGER and not name.startswith(f"{DASK_LOGGER}."):
        return True  # on the root's handlers: other loggers' records are not ours to drop
    return record.levelno >= logging.CRITICAL or name.startswith(FORWARDED)


def _to_terminal(handler: logging.Handler) -> bool:
    # a FileHandler is a StreamHandler too: a log file a user set up keeps everything
    return isinstance(handler, logging.StreamHandler) and not isinstance(
        handler, logging.FileHandler
    )


@contextlib.contextmanager
def dask_logs_quieted() -> Iterator[None]:
    """Keep Dask's own log lines off the terminal for a run; the run reports what happened.

    A worker that dies (``os._exit``, killed for memory) made the scheduler and the nannies,
    which run in this process for a local cluster, log ~10-30 lines ("Removing worker ...
    caused the cluster to lose already computed task(s)", "Restarting worker", "... marked as
    failed because 4 workers died", at close "Worker process still alive after 4 s, killing")
    around the one line the run prints itself, and the worker processes, whose stderr is this
    terminal, their memory warnings ("Unmanaged memory use is high", "Pausing worker").

    In this process a filter on the terminal handlers that distributed's records reach drops
    all of them but critical ones (what SSH workers write, forwarded through
    ``distributed.deploy.ssh``, still passes); log files are left alone. Worker processes
    started meanwhile (a local cluster's, and those their nannies restart) inherit
    ``DASK_LOGGING``, which Dask reads as they import it, with the same level, unless Dask's
    logging is configured already. With ``OPENCLAW_DEBUG`` set nothing changes. A ``cluster
    up`` cluster logs to its own file, as before.
    """
    if os.environ.get(DEBUG_ENV):
        yield
        return
    import dask
    import distributed  # noqa: F401  (its import installs the handler filtered here)

    # distributed adds its handler only where no ancestor has one (the root, when the
    # process set up logging first); its records then reach the root's
    dask_logger = logging.getLogger(DASK_LOGGER)
    loggers = [dask_logger, logging.getLogger()] if dask_logger.propagate else [dask_logger]
    handlers = [h for logger in loggers for h in logger.handlers if _to_terminal(h)]
    for handler in handlers:
        handler.addFilter(_not_dask_chatter)
    # a logging section of the user's own (Dask's YAML or env) decides for the workers
    configured = any(
        dask.config.get(key, None) is not None
        for key in ("logging", "distributed.logging", "distributed.logging-file-config")
    )
    worker_env = WORKER_LOGGING_ENV not in os.environ and not configured
    if worker_env:
        os.environ[WORKER_LOGGING_ENV] = repr({DASK_LOGGER: "critical"})
    try:
        yield
    finally:
        if worker_env:
            os.environ.pop(WORKER_LOGGING_ENV, None)
        for handler in handlers:
            handler.removeFilter(_not_dask_chatter)
