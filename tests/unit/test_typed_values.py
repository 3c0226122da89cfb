"""Values as typed on the command line: empty, out of range, given twice, YAML numbers."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest
import xarray as xr
from click.testing import CliRunner

from openclaw_dask.cli.main import cli
from openclaw_dask.config import ConfigError
from openclaw_dask.exitcodes import EXIT_BAD_INPUT
from openclaw_dask.workflows.ops.climate import DAYS_PER_YEAR, MAX_YEARS, TIME_ATTRS
from openclaw_dask.workflows.resume import carried_inputs
from openclaw_dask.workflows.spec import load_workflow
from tests.conftest import ROOT


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


def test_int_parameters_hold_64_bits_and_floats_are_finite(tmp_path: Path) -> None:
    # 10**20 passed the dry run, and the real run then ran for ever
    with pytest.raises(ConfigError) as info:
        load_workflow(_workflow(tmp_path), {"size": "99999999999999999999"})
    assert [str(p) for p in info.value.problems] == [
        "--set: params.size: expected int from 16 to 9223372036854775807 (a 64-bit integer), "
        "got 99999999999999999999"
    ]
    assert load_workflow(_workflow(tmp_path), {"size": str(2**63 - 1)}).values["size"] == 2**63 - 1
    climate = ROOT / "workflows" / "climate.yaml"
    for value in (".nan", ".inf", "1e400"):  # a NaN passed any bound: each comparison is false
        with pytest.raises(ConfigError) as info:
            load_workflow(climate, {"resolution": value})
        [problem] = info.value.problems
        assert str(problem).startswith(
            "--set: params.resolution: expected a finite float from 0.1 to 10.0, got "
        )


def test_climate_run_lengths_end_where_their_dates_do(tmp_path: Path) -> None:
    climate = ROOT / "workflows" / "climate.yaml"
    for name, least in (("years", 1), ("spinup_years", 0)):
        with pytest.raises(ConfigError) as info:
            load_workflow(climate, {name: "99999999999999999999"})
        [problem] = [str(p) for p in info.value.problems]
        assert problem.startswith(  # then what the parameter is (its doc)
            f"--set: params.{name}: expected int from {least} to {MAX_YEARS}, got "
            f"99999999999999999999; {name}: "
        )
    # real science passes
    wf = load_workflow(climate, {"resolution": "0.25", "years": "50", "spinup_years": "0"})
    assert wf.values["years"] == 50
    # the bound is the op's, for a workflow that gives years itself
    text = (ROOT / "workflows" / "climate.yaml").read_text()
    text = text.replace('years: "${params.years}"', "years: 1000000")
    (tmp_path / "c.yaml").write_text(text)
    with pytest.raises(ConfigError) as info:
        load_workflow(tmp_path / "c.yaml")
    [problem] = info.value.problems
    assert str(problem).endswith(
        f"steps.simulate.with.years: expected an integer from 1 to {MAX_YEARS}, got 1000000 "
        "(the last year whose dates xarray decodes)"
    )


def test_the_last_year_of_a_climate_run_is_the_last_xarray_decodes() -> None:
    # what MAX_YEARS is derived from: the last month's mid-point, decoded as xarray reads the
    # monthly store
    def decoded_year(years: int) -> int:
        days = (12 * years - 0.5) * DAYS_PER_YEAR / 12
        ds = xr.Dataset(coords={"time": ("time", [days], TIME_ATTRS)})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "dates out of range" for numpy: cftime then
            return int(xr.decode_cf(ds)["time"].dt.year[0])

    assert decoded_year(MAX_YEARS) == MAX_YEARS
    with pytest.raises(ValueError, match="unable to decode time units"):
        decoded_year(MAX_YEARS + 1)


def test_a_run_past_the_bound_is_refused_by_submit_dry_run() -> None:
    result = invoke(
        "submit",
        str(ROOT / "workflows" / "climate.yaml"),
        "--dry-run",
        "--set",
        "params.years=99999999999999999999",
    )
    assert result.exit_code == EXIT_BAD_INPUT
    assert f"params.years: expected int from 1 to {MAX_YEARS}, got 99999999" in result.output


def test_a_parameter_set_twice_keeps_the_last_and_says_so(tmp_path: Path) -> None:
    given = ["params.size=32", "storage.level=4", "params.size=48"]
    wf = load_workflow(_workflow(tmp_path), {"size": "48"}, given=given)
    assert wf.values["size"] == 48 and wf.param_sources["size"] == "--set twice: 32, then 48"
    assert load_workflow(_workflow(tmp_path), {"size": "48"}).param_sources["size"] == "--set"


def test_the_dry_run_shows_a_value_set_twice() -> None:
    result = invoke(
        "submit",
        str(ROOT / "workflows" / "example.yaml"),
        "--dry-run",
        "--set",
        "params.steps=3",
        "distributed.sync_interval=7",
        "--set",
        "params.steps=5",
    )
    assert result.exit_code == 0, result.output
    assert "steps=5 (--set twice: 3, then 5)" in result.output
    assert "workflow example-smoothing:" in result.output


def test_a_bad_value_set_again_is_not_refused() -> None:
    # the earlier value of a config key was still refused though the later one runs;
    # parameters already kept only the last
    result = invoke(
        "submit",
        str(ROOT / "workflows" / "example.yaml"),
        "--dry-run",
        "--set",
        "params.steps=abc",
        "distributed.sync_interval=x",
        "--set",
        "params.steps=5",
        "distributed.sync_interval=7",
    )
    assert result.exit_code == 0, result.output
    assert "steps=5 (--set twice: abc, then 5)" in result.output
    result = invoke("config", "show", "--sources", "--set", "storage.level=x", "storage.level=4")
    assert result.exit_code == 0, result.output
    assert "# --set twice: x, then 4" in result.output


def test_config_validate_refuses_a_dask_key_with_nothing_typed() -> None:
    result = invoke("config", "validate", "--set", "dask.distributed.comm.timeouts.connect=")
    assert result.exit_code == EXIT_BAD_INPUT
    assert (
        "--set: dask.distributed.comm.timeouts.connect: expected a value (null for none), "
        "got nothing after '='" in result.output
    )
    assert "Traceback" not in result.output


def test_a_resume_does_not_count_a_value_given_again_as_twice(tmp_path: Path) -> None:
    record = {
        "workflow": {
            "name": "demo",
            "params": {"size": 48, "day": "2026-12-04"},
            "param_sources": {"size": "--set twice: 32, then 48", "day": "default"},
        },
        "config": {"values": {"storage": {"level": 4}}, "sources": {"storage.level": "--set"}},
    }
    path = _workflow(tmp_path)
    _, items = carried_inputs(record, tmp_path, path, None, ["params.size=48"])
    assert items == ["storage.level=4", "params.size=48"]
    _, items = carried_inputs(record, tmp_path, path, None, [])
    assert items == ["params.size=48", "storage.level=4"]


def test_a_refused_parameter_value_is_told_what_the_parameter_is() -> None:
    """Its doc and unit were read and kept but never shown: a name like ``alpha`` or
    ``resolution`` alone does not say what it measures, or in what."""
    with pytest.raises(ConfigError) as info:
        load_workflow(ROOT / "workflows" / "climate.yaml", {"resolution": "70"})
    assert [str(p) for p in info.value.problems] == [
        "--set: params.resolution: expected float from 0.1 to 10.0, got 70.0; "
        "resolution: grid spacing, in degree"
    ]
