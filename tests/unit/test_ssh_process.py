"""How the SSH specs show remote output (read end to end in tests/integration/test_ssh.py)."""

from __future__ import annotations

import asyncio
import io
import logging

import pytest

from openclaw_dask.runtime.ssh_process import forward, line_level, shown_text

LINE = "2026-12-03 15:04:24,826 - distributed.worker - {} - message"


def test_a_line_keeps_its_level_and_a_traceback_the_level_of_its_line() -> None:
    assert line_level(LINE.format("WARNING"), logging.INFO) == logging.WARNING
    assert line_level(LINE.format("ERROR"), logging.INFO) == logging.ERROR
    assert line_level(LINE.format("INFO"), logging.ERROR) == logging.INFO
    assert line_level('  File "x.py", line 1, in f', logging.ERROR) == logging.ERROR
    assert line_level("plain words - INFO - lookalike", logging.DEBUG) == logging.INFO


class TextReader(asyncio.StreamReader):
    """An asyncio stream that reads text lines, as asyncssh's process streams do."""

    async def readline(self) -> str:  # type: ignore[override]
        return (await super().readline()).decode()


def read_all(stream: str, data: bytes) -> int:
    """Forward ``data`` as ``stream``; return how many bytes were left unread."""

    async def run() -> int:
        reader = TextReader()
        reader.feed_data(data)
        reader.feed_eof()
        await forward(reader, "node-22", stream)
        return len(await reader.read())

    return asyncio.run(run())


def test_reading_goes_on_when_our_own_stdout_is_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    """``submit | head``: a write that fails must not stop the reading (the remote would
    block); the stream is read to its end."""
    closed = io.StringIO()
    closed.close()
    monkeypatch.setattr("sys.stdout", closed)
    assert read_all("stdout", b"".join(b"line %d\n" % i for i in range(1000))) == 0


def test_stderr_lines_are_logged_at_their_level(caplog: pytest.LogCaptureFixture) -> None:
    text = LINE.format("WARNING") + "\nTraceback (most recent call last):\n" + LINE.format("INFO")
    with caplog.at_level(logging.DEBUG, logger="distributed.deploy.ssh"):
        assert read_all("stderr", (text + "\n").encode()) == 0
    shown = [(r.levelname, r.getMessage()) for r in caplog.records]
    # the remote time and level go: the local record has its own time and the same level
    assert shown == [
        ("WARNING", "node-22: distributed.worker - message"),
        ("WARNING", "node-22: Traceback (most recent call last):"),
        ("INFO", "node-22: distributed.worker - message"),
    ]


def test_only_a_whole_dask_log_line_loses_its_time_and_level() -> None:
    assert shown_text(LINE.format("ERROR") + "\n") == "distributed.worker - message"
    lookalike = "plain words - INFO - lookalike"
    assert shown_text(lookalike) == lookalike
    late = "see 2026-12-03 15:04:24,826 - distributed.worker - INFO - message"
    assert shown_text(late) == late
