"""A value given twice on the command line: the last one runs, and run.json says so."""

from __future__ import annotations

import json
from pathlib import Path

from tests.integration.test_workflow_run import EXAMPLE, QUIET, SMALL, submit


def test_run_json_records_a_value_set_twice_and_a_resume_keeps_it_once(tmp_path: Path) -> None:
    """The first of two --set values was dropped without a word; run.json now says so."""
    run_dir = tmp_path / "run"
    twice = ["--set", "params.steps=40", "distributed.sync_interval=30", "--set", "params.steps=60"]
    args = [str(EXAMPLE), "--run-dir", str(run_dir), "--no-report", *QUIET, *SMALL, *twice]
    result = submit(*args, "--set", "distributed.sync_interval=20")
    assert result.returncode == 0, result.stderr
    record = json.loads((run_dir / "run.json").read_text())
    assert record["workflow"]["params"]["steps"] == 60
    # SMALL sets steps=120 first
    assert record["workflow"]["param_sources"]["steps"] == "--set 3 times: 120, 40, then 60"
    assert record["config"]["values"]["distributed"]["sync_interval"] == 20
    assert record["config"]["sources"]["distributed.sync_interval"] == "--set twice: 30, then 20"
    assert record["steps"]["diffuse"]["total_steps"] == 60
    # a resume carries the values (a source that says twice is still --set), and one given
    # again is not a second time
    resumed = submit("--resume", str(run_dir), "--dry-run", "--set", "params.steps=60")
    assert resumed.returncode == 0, resumed.stderr
    assert "steps=60 (--set)" in resumed.stdout
    resumed = submit("--resume", str(run_dir), "--dry-run")
    assert resumed.returncode == 0, resumed.stderr
    assert "steps=60 (--set)" in resumed.stdout


def test_a_carried_value_that_the_edited_workflow_refuses_is_said_as_the_runs(
    tmp_path: Path,
) -> None:
    """A value the run was started with, refused after the workflow's edit: the resume said
    "--set: params.size: ..." though nothing was given with --set now."""
    workflow = tmp_path / "wf.yaml"
    workflow.write_text(EXAMPLE.read_text())
    run_dir = tmp_path / "run"
    args = [str(workflow), "--run-dir", str(run_dir), "--no-report", *QUIET, *SMALL]
    started = submit(*args)
    assert started.returncode == 0, started.stderr
    workflow.write_text(workflow.read_text().replace("min: 16, doc: grid", "min: 200, doc: grid"))
    resumed = submit("--resume", str(run_dir), "--dry-run")
    assert resumed.returncode == 2, resumed.stderr
    assert resumed.stderr.startswith(
        f"error: {run_dir / 'run.json'} (a --set of the run being resumed): params.size: "
        "expected int >= 200, got 128"
    ), resumed.stderr
    # given now, the value is this command's own
    resumed = submit("--resume", str(run_dir), "--dry-run", "--set", "params.size=128")
    assert resumed.stderr.startswith("error: --set: params.size: expected int >= 200"), (
        resumed.stderr
    )
