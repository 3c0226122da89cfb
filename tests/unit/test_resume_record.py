"""``--resume`` reads the run record it continues: damaged records are one clear refusal."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from openclaw_dask.config import ConfigError
from openclaw_dask.workflows.resume import RUN_RECORD, read_run, recorded_workflow


def a_record(workflow_file: Path) -> dict[str, object]:
    return {
        "workflow": {"name": "w", "file": str(workflow_file), "params": {}},
        "config": {"values": {}, "sources": {}},
        "steps": {"a": {"status": "completed"}},
        "status": "interrupted",
    }


def refusal(run_dir: Path) -> str:
    with pytest.raises(ConfigError) as caught:
        read_run(run_dir)
    [problem] = caught.value.problems
    return problem.message


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (lambda r: [], "it holds an array, not an object"),
        (lambda r: {**r, "workflow": 5}, "workflow is a number, not an object"),
        (lambda r: {**r, "config": "x"}, "config is a string, not an object"),
        # (mutation audit: a record without its parameters' check went unseen)
        (lambda r: {**r, "workflow": {**r["workflow"], "params": []}}, "workflow.params is an"),
        (lambda r: {k: v for k, v in r.items() if k != "steps"}, "steps is missing"),
        (lambda r: {k: v for k, v in r.items() if k != "status"}, "status is missing"),
        (lambda r: {**r, "steps": {"a": "completed"}}, "steps.a is a string, not an object"),
        # the parts read where a record has them (found by an exploratory test of workflow
        # submit: each ended in an internal error, exit 1)
        (
            lambda r: {**r, "workflow": {**r["workflow"], "param_sources": [1]}},
            "workflow.param_sources is an array, not an object",
        ),
        (
            lambda r: {**r, "workflow": {**r["workflow"], "param_sources": {"size": 5}}},
            "workflow.param_sources.size is a number, not a string",
        ),
        (
            lambda r: {**r, "workflow": {**r["workflow"], "file": ["w.yaml"]}},
            "workflow.file is an array, not a string",
        ),
        (
            lambda r: {**r, "config": {**r["config"], "sources": [1]}},
            "config.sources is an array, not an object",
        ),
        (
            lambda r: {**r, "config": {**r["config"], "sources": {"a.b": False}}},
            "config.sources.a.b is a boolean, not a string",
        ),
        (lambda r: {**r, "config": {**r["config"], "file": 123}}, "config.file is a number"),
        (lambda r: {**r, "attempts": "x"}, "attempts is a string, not a whole number"),
        (lambda r: {**r, "attempts": 1.5}, "attempts is 1.5, not a whole number"),
        (lambda r: {**r, "attempts": True}, "attempts is a boolean, not a whole number"),
        # the records of dropped steps, which a resume carries on
        (lambda r: {**r, "dropped_steps": ["a"]}, "dropped_steps is an array, not an object"),
        (
            lambda r: {**r, "steps": {"a": {"status": "completed", "files": ["x"]}}},
            "steps.a.files is an array, not an object",
        ),
        (
            lambda r: {**r, "steps": {"a": {"metrics": {"plots": "p.png"}}}},
            "steps.a.metrics.plots is a string, not an array",
        ),
        # what the summary of a completed run's resume says (nothing left to run)
        (lambda r: {**r, "status": "completed"}, "wall_seconds is missing, not a number"),
        (lambda r: {**r, "wall_seconds": "2 s"}, "wall_seconds is a string, not a number"),
        (lambda r: {**r, "finished": None}, "finished is null, not a number"),
    ],
)
def test_a_damaged_record_is_refused_by_what_is_wrong(tmp_path: Path, edit, said) -> None:
    (tmp_path / RUN_RECORD).write_text(json.dumps(edit(a_record(tmp_path / "w.yaml"))))
    message = refusal(tmp_path)
    assert message.startswith(f"{RUN_RECORD} is damaged ({said}") and "new run" in message


def test_a_record_whose_parts_a_resume_reads_are_as_the_runner_writes_them_is_taken(
    tmp_path: Path,
) -> None:
    """Null where the runner writes it (no config file), whole numbers, and parts a record
    of a run killed mid-step lacks."""
    record: Any = a_record(tmp_path / "w.yaml")
    record["workflow"]["param_sources"] = {"size": "--set", "seed": "default"}
    record["config"]["file"] = None
    record.update(attempts=2, wall_seconds=3, finished=1.5e9, status="completed")
    record["steps"]["a"].update(files={"a.zarr/zarr.json": 9}, metrics={"plots": None})
    record["dropped_steps"] = {"b": {"status": "failed", "dropped_in_attempt": 2}}
    (tmp_path / RUN_RECORD).write_text(json.dumps(record))
    assert read_run(tmp_path)[1] == record


@pytest.mark.parametrize("dry_run", [True, False])
def test_submit_resume_of_a_record_with_a_part_of_the_wrong_type_is_bad_input(
    tmp_path: Path, dry_run: bool
) -> None:
    """One line and exit 2, the record left as it was: ``attempts`` as a string had been a
    ``TypeError`` and exit 1 ("a step failed") once the real resume built its record."""
    from tests.unit.test_cli import invoke

    workflow = Path(__file__).parents[2] / "workflows" / "example.yaml"
    record = {**a_record(workflow), "attempts": "x", "status": "failed"}
    text = json.dumps(record, indent=1)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / RUN_RECORD).write_text(text)
    result = invoke("submit", "--resume", str(run_dir), *(["--dry-run"] if dry_run else []))
    assert result.exit_code == 2, result.output
    assert result.stderr.splitlines()[0] == (
        f"error: {run_dir}: {RUN_RECORD} is damaged (attempts is a string, not a whole "
        "number); start a new run instead"
    )
    assert "Traceback" not in result.output
    assert (run_dir / RUN_RECORD).read_text() == text
    assert [p.name for p in run_dir.iterdir()] == [RUN_RECORD]


def test_the_folder_of_a_workflow_s_runs_names_them_and_a_record_stands_for_its_run(
    tmp_path: Path,
) -> None:
    """``--resume runs/NAME`` said only "not a run directory"; ``--resume RUN/run.json`` was a
    click usage error (exploratory test, 2026-12-05)."""
    from tests.unit.test_cli import invoke

    record = a_record(tmp_path / "w.yaml")
    names = [f"20261205-2100{i:02d}" for i in range(7)]
    for name in names:
        (tmp_path / name).mkdir()
        (tmp_path / name / RUN_RECORD).write_text(json.dumps(record))
    assert refusal(tmp_path) == (
        f"no {RUN_RECORD} here: not a run directory; it holds the runs ..., "
        f"{', '.join(names[-5:])}: give one of them"
    )
    assert read_run(tmp_path / names[0] / RUN_RECORD) == (tmp_path / names[0], record)
    workflow = Path(__file__).parents[2] / "workflows" / "example.yaml"
    run = tmp_path / "run"
    run.mkdir()
    (run / RUN_RECORD).write_text(json.dumps({**a_record(workflow), "attempts": "x"}))
    given = invoke("submit", "--resume", str(run / RUN_RECORD), "--dry-run")
    assert given.exit_code == 2 and given.stderr.startswith(f"error: {run}: {RUN_RECORD} is")


def test_a_record_that_is_no_file_or_no_directory_at_all(tmp_path: Path) -> None:
    assert refusal(tmp_path / "nowhere").startswith("no such directory")
    assert refusal(tmp_path).startswith(f"no {RUN_RECORD} here")
    (tmp_path / RUN_RECORD).mkdir()
    assert refusal(tmp_path).startswith(f"cannot read {RUN_RECORD}: Is a directory")


def test_resume_without_a_workflow_uses_the_recorded_file_while_it_is_there(
    tmp_path: Path,
) -> None:
    workflow = tmp_path / "w.yaml"
    workflow.write_text("name: w\n")
    (tmp_path / RUN_RECORD).write_text(json.dumps(a_record(workflow)))
    directory, record = read_run(tmp_path)
    assert recorded_workflow(record, directory) == str(workflow)
    workflow.unlink()
    with pytest.raises(ConfigError) as caught:
        recorded_workflow(record, directory)
    assert f"give it, as in `openclaw-dask submit WORKFLOW --resume {tmp_path}`" in str(
        caught.value
    )


def test_runs_started_in_the_same_second_get_a_directory_each(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Default run directories are named by the second and claimed by making them (atomic:
    two processes cannot both make one; their race itself is not staged here)."""
    from openclaw_dask.workflows.rundir import _claimed, _new_run_dir
    from openclaw_dask.workflows.spec import load_workflow

    workflow = load_workflow(Path(__file__).parents[2] / "workflows" / "example.yaml")
    monkeypatch.chdir(tmp_path)
    made = [_new_run_dir(workflow, None) for _ in range(3)]
    assert all(path.parent == Path("runs") / workflow.name and path.is_dir() for path in made)
    # STAMP, STAMP-2, STAMP-3 (YYYYmmdd-HHMMSS); a second that ticks over between them starts
    # its own count
    names = [path.name for path in made]
    stamp = names[0][:15]
    same = [name[15:] for name in names if name[:15] == stamp]
    assert same == ["", "-2", "-3"][: len(same)], names
    assert len(set(names)) == 3
    # a name another run made first is not claimed again (its test and its making are one
    # mkdir)
    assert not _claimed(made[0]) and _claimed(made[0].with_name("free"))
