"""Values as typed on the command line: empty, out of range, given twice, YAML numbers."""

from __future__ import annotations

from typing import Any

from click.testing import CliRunner

from openclaw_dask.cli.main import cli
from openclaw_dask.exitcodes import EXIT_BAD_INPUT


def invoke(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_config_validate_says_nothing_was_typed() -> None:
    # it said "expected an integer >= 1, got null", YAML's word for nothing
    result = invoke("config", "validate", "--set", "distributed.sync_interval=")
    assert result.exit_code == EXIT_BAD_INPUT
    assert (
        "--set: distributed.sync_interval: expected an integer >= 1, got nothing after '='"
        in result.output
    )
    assert "null" not in result.output and "Traceback" not in result.output
