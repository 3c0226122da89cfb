"""Console output helpers: a long message bounded, Dask's logs kept off the terminal."""

from __future__ import annotations

import io
import logging
import os

import dask
import pytest

from openclaw_dask.cli.output import (
    MESSAGE_CHARS,
    MESSAGE_LINES,
    WORKER_LOGGING_ENV,
    clipped,
    dask_logs_quieted,
)


def test_a_short_message_is_left_as_it_is() -> None:
    text = "ValueError: one\ntwo"
    assert clipped(text) == (text, 0)
    assert clipped("x" * MESSAGE_CHARS) == ("x" * MESSAGE_CHARS, 0)


def test_one_long_line_keeps_its_head_and_tail() -> None:
    text = "head " + "x" * 20_000 + " tail"
    shown, cut = clipped(text)
    head, note, tail = shown.split("\n")
    assert head.startswith("head ") and tail.endswith(" tail")
    assert len(head) + len(tail) == MESSAGE_CHARS
    assert cut == len(text) - MESSAGE_CHARS
    assert note == f"[... {cut:,} characters left out ...]"


def test_many_lines_keep_whole_lines_at_both_ends() -> None:
    text = "".join(f"row {i}\n" for i in range(500))
    shown, cut = clipped(text)
    rows = shown.split("\n")
    assert len(rows) == MESSAGE_LINES + 1  # the note between head and tail
    assert rows[0] == "row 0" and rows[-1] == "row 499"
    head = MESSAGE_LINES * 3 // 4
    assert rows[head - 1] == f"row {head - 1}"
    gone = 500 - MESSAGE_LINES
    assert rows[head] == f"[... {gone} lines, {cut:,} characters left out ...]"
    assert cut == sum(len(f"row {i}\n") for i in range(head, 500 - (MESSAGE_LINES - head)))


@pytest.fixture
def terminal(monkeypatch: pytest.MonkeyPatch) -> logging.Handler:
    """distributed's handler to stderr, as a command has it (pytest's plugin may take its place
    with the root's)."""
    handler = logging.StreamHandler(io.StringIO())
    monkeypatch.setattr(logging.getLogger("distributed"), "handlers", [handler])
    monkeypatch.setattr(logging.getLogger("distributed"), "propagate", False)
    return handler


def _says(handler: logging.Handler, message: str, level: int, name: str) -> bool:
    """Whether ``handler`` would print a record (its filters decide)."""
    return bool(handler.filter(logging.LogRecord(name, level, __file__, 1, message, None, None)))


def test_dask_logs_are_quiet_for_the_run_and_back_after_it(
    monkeypatch: pytest.MonkeyPatch, terminal: logging.Handler
) -> None:
    monkeypatch.delenv("OPENCLAW_DEBUG", raising=False)
    monkeypatch.delenv(WORKER_LOGGING_ENV, raising=False)
    scheduler = "distributed.scheduler"
    with dask_logs_quieted():
        assert not _says(terminal, "Restarting worker", logging.WARNING, "distributed.nanny")
        assert not _says(terminal, "marked as failed", logging.ERROR, scheduler)
        assert _says(terminal, "the end", logging.CRITICAL, scheduler)
        # an SSH worker's own output, forwarded: not a log of this process
        assert _says(terminal, "a task's print", logging.WARNING, "distributed.deploy.ssh")
        assert os.environ[WORKER_LOGGING_ENV] == "{'distributed': 'critical'}"
    assert _says(terminal, "Restarting worker", logging.WARNING, "distributed.nanny")
    assert WORKER_LOGGING_ENV not in os.environ


def test_records_that_reach_the_root_are_quiet_too_and_only_dask_s(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A process that set up logging before importing distributed has no handler of
    distributed's: its records reach the root's."""
    monkeypatch.delenv("OPENCLAW_DEBUG", raising=False)
    root = logging.StreamHandler(io.StringIO())
    monkeypatch.setattr(logging.getLogger("distributed"), "handlers", [])
    monkeypatch.setattr(logging.getLogger("distributed"), "propagate", True)
    monkeypatch.setattr(logging.getLogger(), "handlers", [root])
    with dask_logs_quieted():
        assert not _says(root, "Restarting worker", logging.WARNING, "distributed.nanny")
        assert _says(root, "ours", logging.WARNING, "openclaw_dask.workflows")
        assert _says(root, "similar name", logging.WARNING, "distributedx")
    assert _says(root, "Restarting worker", logging.WARNING, "distributed.nanny")


def test_debug_or_a_logging_config_of_the_user_s_own_keep_dask_s_logs(
    monkeypatch: pytest.MonkeyPatch, terminal: logging.Handler
) -> None:
    monkeypatch.delenv(WORKER_LOGGING_ENV, raising=False)
    monkeypatch.setenv("OPENCLAW_DEBUG", "1")
    with dask_logs_quieted():
        assert _says(terminal, "Restarting worker", logging.WARNING, "distributed.nanny")
        assert WORKER_LOGGING_ENV not in os.environ
    monkeypatch.delenv("OPENCLAW_DEBUG")
    with dask.config.set({"logging": {"distributed.worker": "info"}}), dask_logs_quieted():
        assert WORKER_LOGGING_ENV not in os.environ  # the workers do as it says
    monkeypatch.setenv(WORKER_LOGGING_ENV, "{'distributed': 'debug'}")
    with dask_logs_quieted():
        assert os.environ[WORKER_LOGGING_ENV] == "{'distributed': 'debug'}"
    assert os.environ[WORKER_LOGGING_ENV] == "{'distributed': 'debug'}"


def test_a_long_message_shows_three_quarters_from_its_head_and_a_quarter_from_its_tail() -> None:
    """The head says what failed, the tail often what went wrong last: both get their share
    (mutation audit: half the characters to the head went unseen)."""
    shown, cut = clipped("h" * 2000 + "t" * 2000, chars=1000, lines=15)
    assert shown == "h" * 750 + "\n[... 3,000 characters left out ...]\n" + "t" * 250
    assert cut == 3000
