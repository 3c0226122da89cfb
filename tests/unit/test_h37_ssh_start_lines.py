"""The remote start lines kept for :class:`SshStartError`: per start, and left as found."""

from __future__ import annotations

import asyncio
import logging

from openclaw_dask.runtime.ssh_process import (
    _START_LINES,
    SshStartError,
    _start_lines_kept,
    logger,
)


async def _start(name: str, order: list[str]) -> list[str]:
    said: list[str] = []
    _START_LINES.set(said)
    with _start_lines_kept():
        for i in range(3):
            logger.info("%s line %d", name, i)
            order.append(name)
            await asyncio.sleep(0)  # the other node's start runs between the lines
        if name == "b":
            logger.info("OSError: [Errno 98] Address already in use")
    return said


def test_each_start_keeps_its_own_lines_and_the_logger_is_left_as_found() -> None:
    distributed = logging.getLogger("distributed")
    before = (logger.level, distributed.level, list(logger.filters))
    distributed.setLevel(logging.WARNING)  # the lines are kept even where INFO is off
    try:

        async def both() -> tuple[list[str], list[str], list[str]]:
            order: list[str] = []
            a, b = await asyncio.gather(_start("a", order), _start("b", order))
            return a, b, order

        a, b, order = asyncio.run(both())
        assert order[:2] == ["a", "b"]  # interleaved: the lines went by task, not by time
        assert a == ["a line 0", "a line 1", "a line 2"]
        assert b[:3] == ["b line 0", "b line 1", "b line 2"]
        assert logger.getEffectiveLevel() == logging.WARNING
        assert (logger.level, list(logger.filters)) == (before[0], before[2])
        error = SshStartError("node-22", "node", b)
        assert str(error) == (
            "ssh node node-22 (node): its worker process ended before it started: "
            "OSError: [Errno 98] Address already in use"
        )
    finally:
        distributed.setLevel(before[1])


def test_what_a_start_error_says_without_an_error_line() -> None:
    silent = SshStartError("10.0.0.1:22", "10.0.0.1:22", [], "scheduler")
    assert (
        str(silent) == "ssh node 10.0.0.1:22: its scheduler process ended before it started, "
        "saying nothing"
    )
    last = SshStartError("n", "h", ["", "some last words  "])
    assert str(last).endswith("ended before it started; its last line: some last words")
