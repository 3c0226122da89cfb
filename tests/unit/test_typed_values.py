"""Values as typed on the command line: empty, out of range, given twice, YAML numbers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from openclaw_dask.cli.main import cli
from openclaw_dask.config import ConfigError
from openclaw_dask.exitcodes import EXIT_BAD_INPUT
from openclaw_dask.workflows.spec import load_workflow


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


WORKFLOW = """\
name: demo
params:
  size: {type: int, default: SIZE, min: 16}
  day: {type: str, default: 2026-12-04}
steps:
  field:
    op: example.field
    with: {size: "${params.size}", chunk: CHUNK}
    outputs: [field.zarr]
"""


def _workflow(tmp_path: Path, size: str = "64", chunk: str = "32") -> Path:
    path = tmp_path / "wf.yaml"
    path.write_text(WORKFLOW.replace("SIZE", size).replace("CHUNK", chunk))
    return path


def test_workflow_numbers_follow_yaml_1_2(tmp_path: Path) -> None:
    # hex and octal are integers, a date is text (it was refused as a disallowed YAML tag)
    wf = load_workflow(_workflow(tmp_path, size="0x40", chunk="0o40"), {"size": "0o200"})
    assert wf.values == {"size": 128, "day": "2026-12-04"}
    assert wf.steps["field"].args == {"size": 128, "chunk": 32}
    # 1_0 was 10 (YAML 1.1), and 1e3 is a float, which no integer parameter takes
    with pytest.raises(ConfigError) as info:
        load_workflow(_workflow(tmp_path, size="1e3"))
    assert [str(p) for p in info.value.problems] == [
        f"{tmp_path}/wf.yaml:3: params.size.default: expected int, got 1000.0 (a float); "
        "did you mean 1000?"
    ]
    with pytest.raises(ConfigError) as info:
        load_workflow(_workflow(tmp_path, chunk="1_0"), {"size": "0b1000000"})
    assert [str(p) for p in info.value.problems] == [
        "--set: params.size: expected int, got '0b1000000' (text in YAML 1.2: no 0b numbers); "
        "did you mean 64?",
        f"{tmp_path}/wf.yaml:8: steps.field.with.chunk: expected int, got '1_0' (text in YAML "
        "1.2: no _ in numbers); did you mean 10?",
    ]
