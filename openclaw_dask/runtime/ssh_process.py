"""Dask's SSH scheduler and worker specs, with their remote output read for the cluster's life.

``distributed.deploy.ssh.Scheduler`` and ``Worker`` read the remote process's stderr only until
its start line ("Scheduler at", "worker at") and never read its stdout. The SSH channel then
fills (asyncssh's 2 MiB window plus the pipe): measured on the test rig, a remote worker
task that logged 4 MB never returned, and every later log line or ``print`` of that process
(the scheduler's too) would block its event loop the same way, so a long run could hang hours
in. That is dask/distributed#9033 (a fix, #9343, is not released as of distributed 2026.8).

These subclasses change nothing else: once Dask's own start returns, one task per stream reads
lines until the stream ends. A stderr line goes to the ``distributed.deploy.ssh`` logger, as in
Dask's start loop, at its own level when it is in Dask's log format (lines that continue it, a
traceback, keep that level), without the remote time and level that this process's own log
line repeats; the plan shows warnings and up, as ``LocalCluster`` does for its workers
(``silence_logs``). A stdout line (a task's ``print``) is written to this process's
stdout after the process's name, as a local worker's would appear. Delete this module once the
fix is released and required (the ``errors`` connect option stays: see ``_Drained``).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import re
import sys
from collections.abc import Iterator
from typing import Any

from distributed.deploy import ssh

from openclaw_dask.runtime.quiet_asyncssh import import_asyncssh
from openclaw_dask.runtime.terminal import LOST_RESULTS

# Dask's start imports asyncssh itself, which would then say cryptography's warnings
import_asyncssh()

logger = logging.getLogger("distributed.deploy.ssh")

#: ``distributed.admin.log-format``'s level field: "<time> - <logger> - LEVEL - <message>"
LEVEL = re.compile(r" - (DEBUG|INFO|WARNING|ERROR|CRITICAL) - ")
#: A whole line in that format, from its ``asctime`` on
DASK_LINE = re.compile(
    r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} - (?P<name>\S+)"
    r" - (?:DEBUG|INFO|WARNING|ERROR|CRITICAL) - (?P<message>.*)"
)


def line_level(line: str, previous: int) -> int:
    """The logging level of a remote stderr line: its own, else the line it continues."""
    found = LEVEL.search(line)
    return logging.getLevelName(found.group(1)) if found else previous


def shown_text(line: str) -> str:
    """A remote stderr line as logged here: a Dask log line keeps its logger and message.

    The local log line has its own time and the same level: the remote ones only repeated
    them ("<time> - distributed.deploy.ssh - WARNING - node: <time> - distributed.worker -
    WARNING - ...").
    """
    text = line.rstrip()
    found = DASK_LINE.fullmatch(text)
    return f"{found['name']} - {found['message']}" if found else text


def _show(label: str, stream: str, line: str, level: int) -> None:
    if stream == "stdout":
        sys.stdout.write(f"{label}: {line.rstrip()}\n")
        sys.stdout.flush()
    else:
        logger.log(level, "%s: %s", label, shown_text(line))


async def forward(reader: Any, label: str, stream: str) -> None:
    """Show every line of ``reader`` (an asyncssh stream) until it ends or breaks."""
    level = logging.INFO
    while True:
        try:
            line = await reader.readline()
        except Exception as exc:  # the connection went away: nothing more can arrive
            logger.debug("%s %s: stopped reading (%r)", label, stream, exc)
            return
        if not line:
            return
        level = line_level(line, level)
        if LOST_RESULTS in line:  # the remote scheduler's key list: the run says the loss
            continue
        # a closed stdout (`submit | head`) must not stop the reading: the remote would block
        with contextlib.suppress(Exception):
            _show(label, stream, line, level)


#: The remote stderr lines Dask's start loop has read so far, of the process starting in this
#: asyncio task (the nodes start side by side, each in a task of its own).
_START_LINES: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar(
    "openclaw_ssh_start_lines", default=None
)


class SshStartError(RuntimeError):
    """A remote scheduler or worker process ended before it said it had started.

    Dask raises ``Exception("Worker failed to start")`` (for the scheduler too) and logs the
    remote lines that say why at INFO, which the plan's ``silence_logs`` turns off: a worker
    ``port`` in use on the node was that one line, naming neither node nor reason.
    """

    def __init__(self, label: str, address: str, lines: list[str], kind: str = "worker") -> None:
        self.label, self.address, self.lines = label, address, list(lines)
        where = label if label == address else f"{label} ({address})"
        super().__init__(f"ssh node {where}: its {kind} {self.reason()}")

    def reason(self) -> str:
        """The remote error line (the last that names an error), or what is known."""
        text = [line.strip() for line in self.lines if line.strip()]
        errors = [line for line in text if re.search(r"(Error|Exception)\b", line)]
        if errors:
            return f"process ended before it started: {shown_text(errors[-1])}"
        if text:
            return f"process ended before it started; its last line: {shown_text(text[-1])}"
        return "process ended before it started, saying nothing"


class _KeepStartLines(logging.Filter):
    """Keep the INFO lines Dask's start loop logs, for :class:`SshStartError`.

    What reaches the handlers is unchanged: records below ``floor`` (the logger's level before
    the starts lowered it to INFO) are dropped here, as the logger would have dropped them.
    """

    def __init__(self) -> None:
        super().__init__()
        self.floor = logging.NOTSET
        self.starting = 0  # starts in progress (the nodes start side by side)
        self.previous = logging.NOTSET

    def filter(self, record: logging.LogRecord) -> bool:
        kept = _START_LINES.get()
        if kept is not None and record.levelno == logging.INFO:
            kept.append(record.getMessage())
        return record.levelno >= self.floor


_KEEP = _KeepStartLines()


@contextlib.contextmanager
def _start_lines_kept() -> Iterator[None]:
    """Let the start loop's INFO records reach :data:`_KEEP` while a process starts.

    The plan's ``silence_logs`` raises the handlers' level, not the logger's: the records are
    made and the handlers drop them; with ``distributed.logging`` at warning the logger does,
    so it is lowered to INFO for the starts and :data:`_KEEP` drops what it would have.
    """
    if _KEEP.starting == 0:
        _KEEP.floor, _KEEP.previous = logger.getEffectiveLevel(), logger.level
        logger.addFilter(_KEEP)
        if _KEEP.floor > logging.INFO:
            logger.setLevel(logging.INFO)
    _KEEP.starting += 1
    try:
        yield
    finally:
        _KEEP.starting -= 1
        if _KEEP.starting == 0:
            logger.removeFilter(_KEEP)
            if _KEEP.floor > logging.INFO:
                logger.setLevel(_KEEP.previous)
            _KEEP.floor = logging.NOTSET


class _Drained:
    """Mix-in for an ``ssh.Process``: read stdout and stderr once Dask's start returns."""

    address: str
    proc: Any
    connect_options: dict[str, Any]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # asyncssh decodes the output as it arrives, and a byte that is not UTF-8 (a task
        # writing binary to stderr) closed the whole connection with a ProtocolError, and with
        # it (runtime/hangup.py) the remote process: such bytes are shown escaped instead
        self.connect_options = {"errors": "backslashreplace", **self.connect_options}

    async def start(self) -> None:
        label = getattr(self, "name", None) or self.address
        said: list[str] = []
        token = _START_LINES.set(said)
        try:
            with _start_lines_kept():
                await super().start()  # type: ignore[misc]
        except Exception as exc:
            # Dask's own words are "Worker failed to start" (for the scheduler too), the
            # remote process's lines that say why only logged at INFO, which is off
            if "failed to start" not in str(exc):
                raise
            kind = "scheduler" if isinstance(self, ssh.Scheduler) else "worker"
            raise SshStartError(str(label), self.address, said, kind) from None
        finally:
            _START_LINES.reset(token)
        self._readers = [
            asyncio.ensure_future(forward(getattr(self.proc, s), str(label), s))
            for s in ("stdout", "stderr")
        ]

    async def close(self) -> None:
        await super().close()  # type: ignore[misc]
        for task in getattr(self, "_readers", []):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


class Scheduler(_Drained, ssh.Scheduler):
    """``distributed.deploy.ssh.Scheduler`` whose remote output is read until it ends."""


class Worker(_Drained, ssh.Worker):
    """``distributed.deploy.ssh.Worker`` whose remote output is read until it ends."""
