"""What the command line does when the reader of its output goes away
(``openclaw-dask ... | head -1``), from the real entry point."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from openclaw_dask.exitcodes import EXIT_STDOUT_CLOSED
from tests.unit.test_h42_validate_layers import _no_search


def _reader_gone(*args: str, tmp_path: Path) -> tuple[int, str]:
    """``openclaw-dask ARGS | head -1`` once head has its line: the pipe's reading end is
    closed before the command writes (what it writes then does not fit in the pipe, as
    ``config show`` on a terminal's pipe need not), so its first write finds no reader.
    The command's exit code and its stderr."""
    read, write = os.pipe()
    os.close(read)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "openclaw_dask", *args],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
            env=_no_search(tmp_path) | {"COLUMNS": "200"},
            timeout=120,
        )
    finally:
        os.close(write)
    return proc.returncode, proc.stderr


@pytest.mark.parametrize(
    "args",
    [
        ("config", "show"),  # rich's console writes it
        ("config", "show", "--json"),
        ("config", "plan"),
        ("benchmark", "--help"),  # click writes it
        ("--help",),
        ("memory", "compact", "--help"),  # said "error: BrokenPipeError"
        ("--version",),
    ],
    ids=" ".join,
)
def test_a_reader_that_goes_away_ends_the_command_quietly_as_sigpipe_does(
    args: tuple[str, ...], tmp_path: Path
) -> None:
    code, stderr = _reader_gone(*args, tmp_path=tmp_path)
    assert stderr == "", stderr  # no traceback, no "error:", no "Exception ignored"
    # as `git log | head -1` ends (128 + SIGPIPE), not 1 ("the run failed") nor 0 (done)
    assert code == EXIT_STDOUT_CLOSED == 141
