"""``openclaw-dask submit`` end to end: outputs, run record, dry run, failure, kill and resume."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pty
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import termios
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
import xarray as xr

from openclaw_dask.config import ConfigError, load_config
from openclaw_dask.runtime import oom
from openclaw_dask.workflows import zarrio
from openclaw_dask.workflows.lock import LOCK
from openclaw_dask.workflows.progress import _duration
from openclaw_dask.workflows.runner import (
    ProgressNews,
    StepFailedError,
    run_workflow,
    step_fingerprint,
)
from openclaw_dask.workflows.spec import load_workflow
from tests.conftest import ROOT
from tests.integration.user_ops import FAILING_WORKFLOW, HUNGRY_WORKFLOW, LEAKY_WORKFLOW

EXE = Path(sys.executable).with_name("openclaw-dask")
EXAMPLE = ROOT / "workflows/example.yaml"
QUIET = ["--set", "cluster.dashboard_address=127.0.0.1:0"]
SMALL = ["--set", "params.size=128", "--set", "params.chunk=64", "--set", "params.steps=120"]


def submit(*args: str, timeout: float = 300, **kw: Any) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [str(EXE), "submit", *args], capture_output=True, text=True, timeout=timeout, env=env, **kw
    )


@pytest.fixture(scope="module")
def shared_scheduler() -> Iterator[str]:
    """The address of one local cluster for the tests of what a step's op is told: each had
    started its own, two thirds of a 6 s test."""
    from distributed import LocalCluster

    with LocalCluster(n_workers=1, threads_per_worker=2, dashboard_address=":0") as cluster:
        yield cluster.scheduler_address


def record_of(run_dir: Path) -> dict[str, Any]:
    def refuse(constant: str) -> None:  # NaN and Infinity are not JSON: jq would refuse them
        raise AssertionError(f"run.json holds {constant}")

    return json.loads((run_dir / "run.json").read_text(), parse_constant=refuse)


#: Runs argv[1:] with SIGINT at its default, as a terminal's foreground job has it: a child
#: inherits an ignored SIGINT, and what the test process has must not decide the test.
DEFAULT_SIGINT = (
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
    "os.execv(sys.argv[1], sys.argv[1:])"
)


def foreground(command: list[str], **kw: Any) -> subprocess.Popen[str]:
    """``command`` as a terminal's foreground job: SIGINT at its default, a process group of
    its own (Ctrl-C reaches the whole group), text pipes."""
    return subprocess.Popen(
        [sys.executable, "-c", DEFAULT_SIGINT, *command],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        **kw,
    )


def ctrl_c_after(
    proc: subprocess.Popen[str], ready: Callable[[str], bool], timeout: float = 180
) -> tuple[str, str]:
    """Ctrl-C ``proc``'s group once a line of its stderr is ``ready``; its stdout and the rest
    of its stderr."""
    try:
        assert proc.stderr is not None
        for line in proc.stderr:
            if ready(line):
                break
        os.killpg(proc.pid, signal.SIGINT)
        return proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)


def start_in_own_group(
    run_dir: Path, args: list[str], workflow: Path = EXAMPLE, **kw: Any
) -> subprocess.Popen[str]:
    """``submit workflow`` in a process group of its own, as a terminal's foreground job."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [str(EXE), "submit", str(workflow), "--run-dir", str(run_dir), *args]
    command = [sys.executable, "-c", DEFAULT_SIGINT, *command]
    return subprocess.Popen(command, text=True, env=env, start_new_session=True, **kw)


def wait_for_checkpoint(
    proc: subprocess.Popen[str], run_dir: Path, step: int, name: str = "diffuse"
) -> int:
    """Step ``name``'s committed checkpoint once it reaches ``step`` (or the run ends)."""
    checkpoint = run_dir / ".checkpoints" / name / "checkpoint.json"
    deadline = time.monotonic() + 240
    seen = 0
    while time.monotonic() < deadline and seen < step and proc.poll() is None:
        with contextlib.suppress(OSError, ValueError, KeyError):  # not written yet
            seen = json.loads(checkpoint.read_text())["step"]
        time.sleep(0.05)
    return seen


def test_example_end_to_end(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    result = submit(str(EXAMPLE), "--run-dir", str(run_dir), *QUIET, *SMALL)
    assert result.returncode == 0, result.stderr
    assert f"outputs:  {run_dir.resolve()}" in result.stdout
    # where the record is (mutation audit: the summary's record: line could be dropped unseen)
    assert f"record:   {run_dir.resolve()}/run.json\n" in result.stdout
    assert "dashboard: http://127.0.0.1:" in result.stderr
    rec = record_of(run_dir)
    assert rec["status"] == "completed"
    assert rec["order"] == ["field", "diffuse", "profile"]
    assert rec["workflow"]["params"]["steps"] == 120
    assert rec["workflow"]["file"] == str(EXAMPLE)  # as named: not the packaged file it links
    assert rec["config"]["hash"] and rec["versions"]["dask"] and rec["hardware"]["memory"] > 0
    assert len(rec["cluster"]["workers"]) == 2
    for name, step in rec["steps"].items():
        assert step["status"] == "completed", name
        assert step["wall_seconds"] > 0 and step["tasks"] > 0 and step["bytes_written"] > 0
        assert all(len(h) == 64 for c in step["checksums"].values() for h in c.values())
    # what each step's outputs take on disk (mutation audit: any positive number had passed)
    for name, step in load_workflow(EXAMPLE).steps.items():
        on_disk = sum(zarrio.tree_bytes(run_dir / output) for output in step.outputs)
        assert rec["steps"][name]["bytes_written"] == on_disk > 0, name
    assert rec["steps"]["diffuse"]["checkpoint_step"] == 120
    report = run_dir.resolve() / "performance-report.html"
    assert rec["performance_report"] == str(report) and report.stat().st_size > 10_000
    assert f"report:   {report}" in result.stdout
    assert not (run_dir / ".checkpoints" / "diffuse").exists()

    # consolidated: xarray opens a finished output at once and without a warning (mutation
    # audit: outputs left unconsolidated, each open warned and read every array's metadata)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        field, history, profile = (
            xr.open_zarr(run_dir / f"{name}.zarr") for name in ("field", "history", "profile")
        )
    assert field["temperature"].dims == ("y", "x") and field["temperature"].attrs["units"] == "K"
    assert field["x"].attrs["units"] == "m" and field.sizes == {"y": 128, "x": 128}
    assert history["time"].attrs["units"] == "s"
    assert history.sizes["time"] == 120 // 80 + 2  # every 80 steps, plus the end
    assert float(history["variance"][-1]) < float(history["variance"][0])  # it smooths
    assert profile["mean"].dims == ("y",) and profile["mean"].attrs["units"] == "K"


def test_dry_run_starts_nothing(tmp_path: Path) -> None:
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    # one --set with several assignments (as the issues write it), then the workflow path
    args = ["--dry-run", "--set", "params.size=256", "params.steps=9", "distributed.batch_size=4"]
    result = submit(*args, str(EXAMPLE), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "steps in order: field -> diffuse -> profile" in result.stdout
    # the values the run would use, and which came from the command line
    assert "params: size=256 (--set), chunk=512, seed=42, steps=9 (--set)\n" in result.stdout
    assert "cluster: local (distributed.LocalCluster)" in result.stdout
    assert not (tmp_path / "runs").exists()
    assert {p.pid for p in psutil.Process().children(recursive=True)} <= before


def user_ops_line(text: str) -> int:
    """The number of the line of ``user_ops.py`` that holds ``text``."""
    lines = (Path(__file__).parent / "user_ops.py").read_text().splitlines()
    [number] = [n for n, line in enumerate(lines, 1) if text in line]
    return number


def test_a_task_that_fails_on_a_worker_is_one_line_and_its_traceback_is_kept(
    tmp_path: Path,
) -> None:
    wf = tmp_path / "fails-in-task.yaml"
    wf.write_text(FAILING_WORKFLOW.replace("user_ops:explode", "user_ops:explode_in_task"))
    run_dir = tmp_path / "run"
    result = submit(str(wf), "--run-dir", str(run_dir), "--no-report", *QUIET)
    assert result.returncode == 1
    assert "step 'bad' (op tests.integration.user_ops:explode_in_task): ValueError: the " in (
        result.stderr
    )
    assert "its traceback is in run.json (steps.bad.traceback)" in result.stderr
    # the worker's own "Compute Failed" log (a traceback as a repr string) is not repeated
    assert "Traceback" not in result.stderr and "Compute Failed" not in result.stderr
    kept = record_of(run_dir)["steps"]["bad"]["traceback"]
    assert "in _explode_block" in kept and "the task's own error: kaboom" in kept
    # the line of the user's module, as the worker's frames give it
    line = user_ops_line("raise ValueError(f\"the task's own error")
    assert f"raised in user_ops.py, line {line}, in _explode_block; its traceback is in " in (
        result.stderr
    )


@pytest.mark.parametrize(
    ("op", "said"),
    [
        ("returns_nothing", "TypeError: op returned None; the workflow expects outputs"),
        (
            "returns_a_data_array",
            "TypeError: op returned xarray.DataArray for output 'nothing'; expected an "
            "xarray.Dataset (DataArray.to_dataset(name=...) makes one)",
        ),
        (  # said which was which only by comparing the two lists
            "returns_one_output_more",
            "TypeError: op returned ['bonus', 'nothing']; the workflow expects outputs "
            "['nothing'] (bonus is not among the step's outputs: list bonus.zarr there, or "
            "do not return it)",
        ),
        (
            "returns_a_misnamed_output",
            "TypeError: op returned ['nothin']; the workflow expects outputs ['nothing'] "
            "(nothin is not among the step's outputs: list nothin.zarr there, or do not "
            "return it; nothing for nothing; did you mean 'nothing'?)",
        ),
        (  # was "ValueError: The truth value of an array ... is ambiguous"
            "returns_an_array",
            "TypeError: op returned dask.Array; the workflow expects outputs ['nothing'] as a "
            "dict of output name -> xarray.Dataset",
        ),
        # the run ended with the op's exit code and nothing said; run.json said "running"
        ("calls_sys_exit", "SystemExit: 4"),
        (
            "AdvancesWithoutRecords",
            "TypeError: AdvancesWithoutRecords.advance returned Dataset; expected (state, "
            "{output: records})",
        ),
        (  # a Dataset is a Mapping of its variables: "op returned ['temperature']" was said
            "returns_a_bare_dataset",
            "TypeError: op returned xarray.Dataset; the workflow expects outputs ['nothing'] "
            "as a dict of output name -> xarray.Dataset: return {'nothing': ds}",
        ),
        (  # one window of them wrote an output without time; a second failed in xarray
            "RecordsWithoutTime",
            "TypeError: RecordsWithoutTime.advance's records for 'nothing' have no dimension "
            "'time' (its append_dim, along which they are appended); they have ('y',)",
        ),
        (  # was "AttributeError: 'DataArray' object has no attribute 'variables'"
            "FinishesWithADataset",
            "TypeError: FinishesWithADataset.finish returned xarray.Dataset; expected a dict "
            "of output name -> xarray.Dataset (may be empty): return {'nothing': ds}",
        ),
        (  # final.zarr was written into the run directory, then "FileNotFoundError: file://"
            "FinishesWithAnotherName",
            "TypeError: FinishesWithAnotherName.finish returned ['final'], not outputs of the "
            "step ['nothing']",
        ),
        (
            "FinishesWithNothing",
            "TypeError: FinishesWithNothing wrote nothing to nothing: neither advance's records "
            "nor finish returned it",
        ),
        (  # both were an empty "AssertionError: " from Client.persist
            "StartsInNumpy",
            "TypeError: StartsInNumpy.initial_state returned a Dataset with numpy (not dask) "
            "variables ['temperature']; chunk it (ds.chunk({dim: size})) or build it with "
            "dask.array",
        ),
        (
            "StartsWithAnArray",
            "TypeError: StartsWithAnArray.initial_state returned numpy.ndarray; expected the "
            "state, an xarray.Dataset of dask arrays",
        ),
        (  # 10.5 had run 10 steps, and run.json said 10, without a word
            "StepsInHalves",
            "TypeError: StepsInHalves.total_steps is 4.5 (a float); expected the number of "
            "steps to run, an int of at least 1",
        ),
        (  # was "StepsNone wrote nothing to nothing", the cause unnamed
            "StepsNone",
            "ValueError: StepsNone.total_steps is 0; expected the number of steps to run, an "
            "int of at least 1",
        ),
        (  # was blamed on finish: "AdvancesToNone.finish returned NoneType for output ..."
            "AdvancesToNone",
            "TypeError: AdvancesToNone.advance returned None as the new state; expected an "
            "xarray.Dataset: return (state, {output: records})",
        ),
        (  # these three completed, exit 0: outputs a column short, or in float32, unsaid
            "AdvancesToFewerColumns",
            "TypeError: AdvancesToFewerColumns.advance(state, 0, 4) changed the state: "
            "'temperature' is (y: 64, x: 63) float64, was (y: 64, x: 64) float64; the state "
            "keeps the variables, sizes and dtypes of initial_state from window to window",
        ),
        (
            "AdvancesToSinglePrecision",
            "TypeError: AdvancesToSinglePrecision.advance(state, 0, 4) changed the state: "
            "'temperature' is (y: 64, x: 64) float32, was (y: 64, x: 64) float64",
        ),
        (
            "AdvancesToAnotherVariable",
            "TypeError: AdvancesToAnotherVariable.advance(state, 0, 4) changed the state: "
            "variables ['t'] added, ['temperature'] dropped",
        ),
    ],
)
def test_an_op_that_returns_no_datasets_is_told_what_to_return(
    tmp_path: Path, op: str, said: str, shared_scheduler: str
) -> None:
    """Through the Python API on one cluster for all: the CLI says a step's failure the same
    way whatever it is (test_failing_op_reports_and_keeps_completed_outputs)."""
    wf = tmp_path / "returns.yaml"
    text = FAILING_WORKFLOW.replace("user_ops:explode", f"user_ops:{op}")
    wf.write_text(text.replace("    with: {message: kaboom}\n", ""))
    with pytest.raises(StepFailedError) as failed:
        run_workflow(wf, address=shared_scheduler, run_dir=tmp_path / "run", report=False)
    assert f"step 'bad' (op tests.integration.user_ops:{op}) failed: {said}" in str(failed.value)
    rec = record_of(tmp_path / "run")
    assert rec["status"] == "failed" and rec["steps"]["bad"]["status"] == "failed"
    assert not (tmp_path / "run/final.zarr").exists()  # no output the step does not list


@pytest.mark.parametrize(
    ("op", "said", "kept"),
    [
        (  # 2.5 was stored as 2 in the int store of the first window's records; exit 0
            "RecordsInTwoDtypes",
            "'level' is float64, stored as int64",
            {"level": [2]},
        ),
        (  # the store no longer opened ("conflicting sizes"), said as an error of no step
            "RecordsLosingAVariable",
            "'peak' is not in the records",
            {"level": [2.0], "peak": [3.0]},
        ),
    ],
)
def test_records_that_do_not_fit_the_earlier_ones_fail_their_step(
    tmp_path: Path, op: str, said: str, kept: dict[str, list[float]], shared_scheduler: str
) -> None:
    """A later window's records that xarray would append as a loss or a broken store fail
    the step before the write, in its words; the first window's records stay as written and
    its checkpoint is committed (CI once saw them cancelled half-written: the store's int
    fill value 0 where 2 had been computed)."""
    wf = tmp_path / "records.yaml"
    text = FAILING_WORKFLOW.replace("user_ops:explode", f"user_ops:{op}")
    wf.write_text(text.replace("    with: {message: kaboom}\n", ""))
    run_dir = tmp_path / "run"
    with pytest.raises(StepFailedError) as failed:
        run_workflow(
            wf,
            overrides=["distributed.sync_interval=2"],
            address=shared_scheduler,
            run_dir=run_dir,
            report=False,
        )
    line = (
        f"step 'bad' (op tests.integration.user_ops:{op}) failed: TypeError: {op}.advance("
        f"state, 2, 2)'s records for 'nothing' do not fit those in nothing.zarr: {said}; "
        "each window's records hold the same variables"
    )
    assert str(failed.value).startswith(line)
    stored = zarrio.open_output(run_dir / "nothing.zarr")
    assert {name: stored[name].values.tolist() for name in stored.data_vars} == kept
    assert record_of(run_dir)["steps"]["bad"]["checkpoint_committed"] == 2


def test_an_op_error_whose_message_cannot_be_made_fails_its_step(tmp_path: Path) -> None:
    """Found by an exploratory test of workflow submit: an exception whose ``__str__`` raises
    escaped the step's failure as "error: RuntimeError: cannot str", no step named, and
    run.json kept the step "running" under a failed run."""
    wf = tmp_path / "unprintable.yaml"
    text = FAILING_WORKFLOW.replace("user_ops:explode", "user_ops:raises_unprintable")
    wf.write_text(text.replace("    with: {message: kaboom}\n", ""))
    run_dir = tmp_path / "run"
    result = submit(str(wf), "--run-dir", str(run_dir), "--no-report", *QUIET)
    assert result.returncode == 1, result.stderr
    said = "UnprintableError: <message unprintable: its __str__ raised RuntimeError>"
    assert (
        f"\nfailed: step 'bad' (op tests.integration.user_ops:raises_unprintable): {said}\n"
    ) in result.stderr, result.stderr
    assert "raised in user_ops.py, line " in result.stderr and "Traceback" not in result.stderr
    rec = record_of(run_dir)
    assert rec["status"] == "failed" and rec["error"]["message"] == said
    assert rec["steps"]["bad"]["status"] == "failed" and rec["steps"]["bad"]["error"] == said
    assert rec["steps"]["field"]["status"] == "completed"


#: the climate model's forcing and run steps alone, on the coarsest grid, one year, no spin-up
TINY_CLIMATE = """
name: tiny-climate
steps:
  forcing:
    op: climate.forcing
    with: {resolution: 10.0}
    outputs: [forcing.zarr]
  simulate:
    op: climate.ebm
    needs: [forcing]
    with: {years: 1, spinup_years: 0}
    outputs: [monthly.zarr, final.zarr]
"""


def test_a_run_says_its_steps_sizes_at_its_start_and_keeps_them_in_run_json(
    tmp_path: Path, shared_scheduler: str
) -> None:
    """What the dry run prints under the plan, a real run says before its cluster works, one
    line a step, and records: 366 steps a year at 10° (the year over a day's step, rounded up:
    the stability limit is longer there), on 18 x 36 cells."""
    wf = tmp_path / "tiny.yaml"
    wf.write_text(TINY_CLIMATE)
    said: list[str] = []
    rec = run_workflow(
        wf, address=shared_scheduler, run_dir=tmp_path / "run", report=False, announce=said.append
    )
    assert rec["status"] == "completed"
    lines = [line for line in said if line.startswith("size: simulate: ")]
    assert len(lines) == 1 and "\n" not in lines[0], said
    assert lines[0] == (
        "size: simulate: the 18 x 36 grid (10°, 648 cells), 1 model year (0 spin-up + 1 "
        "recorded), 366 time steps a year (dt 86223 s): 366 steps, 237,168 cell-updates"
    )
    # the whole text (outputs' and a state's bytes) is the record's, as the dry run prints it
    sizes = record_of(tmp_path / "run")["sizes"]
    assert sizes == rec["sizes"] and set(sizes) == {"forcing", "simulate"}
    assert sizes["simulate"].startswith(f"{lines[0].removeprefix('size: simulate: ')}\n")
    assert "outputs before compression: monthly.zarr " in sizes["simulate"]
    # and the run took what was said
    assert rec["steps"]["simulate"]["total_steps"] == 366
    assert xr.open_zarr(tmp_path / "run/monthly.zarr")["T"].shape == (12, 18, 36)


def test_a_dataset_for_an_output_listed_as_a_folder_says_how_to_list_it(
    tmp_path: Path, shared_scheduler: str
) -> None:
    """A user op declares no outputs, so the file check cannot tell; the run says which."""
    wf = tmp_path / "folder.yaml"
    text = FAILING_WORKFLOW.replace("user_ops:explode", "user_ops:returns_a_dataset")
    text = text.replace("    with: {message: kaboom}\n", "").replace("nothing.zarr", "nothing/")
    wf.write_text(text)
    with pytest.raises(StepFailedError) as failed:
        run_workflow(wf, address=shared_scheduler, run_dir=tmp_path / "run", report=False)
    assert str(failed.value).endswith(
        "TypeError: op returned ['nothing']; the workflow expects outputs [] (it returned a "
        "dataset for nothing, listed as a folder: list nothing.zarr instead)"
    )


@pytest.mark.parametrize(
    ("listed", "said"),
    [
        (
            "nothing.zarr",
            "KeyError: \"output_dir('nothing'): step 'bad' lists nothing.zarr, a Zarr store the "
            "runner writes from the dataset the op returns; for a folder the op fills, list "
            'nothing/ instead"',
        ),
        (
            "other/",
            "KeyError: \"output_dir('nothing'): step 'bad' has no folder output nothing/ "
            "(outputs: ['other/']): add nothing/ to its outputs:\"",
        ),
    ],
)
def test_a_folder_the_workflow_does_not_list_is_refused_before_the_op_fills_it(
    tmp_path: Path, listed: str, said: str, shared_scheduler: str
) -> None:
    """output_dir had created the folder, the op filled it, and the step failed only after its
    work, on what the op returned."""
    wf = tmp_path / "folder.yaml"
    text = FAILING_WORKFLOW.replace("user_ops:explode", "user_ops:fills_a_folder")
    wf.write_text(text.replace("    with: {message: kaboom}\n", "").replace("nothing.zarr", listed))
    with pytest.raises(StepFailedError) as failed:
        run_workflow(wf, address=shared_scheduler, run_dir=tmp_path / "run", report=False)
    assert said in str(failed.value)
    assert not (tmp_path / "run/nothing").exists()
    # listed as a folder, the same op writes it
    wf.write_text(wf.read_text().replace(listed, "nothing/"))
    rec = run_workflow(wf, address=shared_scheduler, run_dir=tmp_path / "run2", report=False)
    assert rec["status"] == "completed"
    assert (tmp_path / "run2/nothing/note.txt").read_text() == "written by the op\n"


def test_a_folder_the_op_left_empty_is_still_made_so_a_resume_agrees(
    tmp_path: Path, shared_scheduler: str
) -> None:
    """An op that had nothing to put in its ``nothing/`` folder completed the run, and every
    resume then said "nothing is missing" and ran the step again (exploratory test,
    2026-12-05)."""
    wf = tmp_path / "empty-folder.yaml"
    text = FAILING_WORKFLOW.replace("user_ops:explode", "user_ops:returns_nothing")
    wf.write_text(
        text.replace("    with: {message: kaboom}\n", "").replace("nothing.zarr", "nothing/")
    )
    run_dir = tmp_path / "run"
    run_workflow(wf, address=shared_scheduler, run_dir=run_dir, report=False)
    assert (run_dir / "nothing").is_dir() and not any((run_dir / "nothing").iterdir())
    again = submit("--resume", str(run_dir), "--dry-run", *QUIET)
    assert again.returncode == 0, again.stderr
    assert "resume: bad: skip: completed in an earlier attempt" in again.stdout


def test_an_op_s_message_cannot_drive_the_terminal(tmp_path: Path) -> None:
    """Escape sequences in an op's message reached the terminal (colours, cursor moves, a
    window title); they are shown as text, and run.json keeps the message as raised
    (exploratory test, 2026-12-05)."""
    wf = tmp_path / "ansi.yaml"
    wf.write_text(
        FAILING_WORKFLOW.replace("{message: kaboom}", '{message: "\\e[31mred\\e]0;title\\a"}')
    )
    run_dir = tmp_path / "run"
    result = submit(str(wf), "--run-dir", str(run_dir), "--no-report", *QUIET)
    assert result.returncode == 1
    assert "\x1b" not in result.stderr and "\x07" not in result.stderr
    assert "the op's own error: \\x1b[31mred\\x1b]0;title\\x07" in result.stderr
    assert "\x1b[31mred" in record_of(run_dir)["steps"]["bad"]["error"]


def test_failing_op_reports_and_keeps_completed_outputs(tmp_path: Path) -> None:
    wf = tmp_path / "fails.yaml"
    wf.write_text(FAILING_WORKFLOW)
    run_dir = tmp_path / "run"
    result = submit(str(wf), "--run-dir", str(run_dir), *QUIET)
    assert result.returncode == 1
    assert "step 'bad' (op tests.integration.user_ops:explode)" in result.stderr
    assert "the op's own error: kaboom" in result.stderr
    # where in their module: the user had to open run.json's traceback to find it
    line = user_ops_line("raise ValueError(f\"the op's own error")
    assert f"\nraised in user_ops.py, line {line}, in explode; its traceback is in " in (
        result.stderr
    )
    assert "Traceback" not in result.stderr
    rec = record_of(run_dir)
    assert rec["status"] == "failed"
    assert rec["error"]["step"] == "bad" and "kaboom" in rec["error"]["message"]
    assert rec["steps"]["field"]["status"] == "completed"
    assert xr.open_zarr(run_dir / "field.zarr")["temperature"].shape == (64, 64)


def test_workers_restarted_for_memory_are_named_with_their_budget(tmp_path: Path) -> None:
    """Each task holds 600 MB on 400 MB workers: the nannies restart them and Dask gives up on
    the task (KilledWorker); the message says memory and which keys to raise."""
    wf = tmp_path / "hungry.yaml"
    wf.write_text(HUNGRY_WORKFLOW)
    run_dir = tmp_path / "run"
    budget = ["--set", "memory.per_thread_pool_size=400MB"]
    result = submit(str(wf), "--no-report", "--run-dir", str(run_dir), *QUIET, *budget)
    assert result.returncode == 1, result.stderr
    assert (
        "failed: step 'hungry': workers ran out of memory (a 400 MB budget per worker): "
        "their nannies restarted tcp://"
    ) in result.stderr
    assert "give each worker more memory (memory.per_thread_pool_size" in result.stderr
    assert f"then openclaw-dask submit --resume {run_dir}" in result.stderr
    assert "Traceback" not in result.stderr
    # multiprocessing's tracker cleaned up the killed workers' semaphores: no warning about it
    assert "leaked semaphore" not in result.stderr
    rec = record_of(run_dir)
    assert rec["steps"]["field"]["status"] == "completed"
    assert rec["steps"]["hungry"]["error"].startswith("WorkersOutOfMemoryError: workers ran out")
    # the same tasks would need the same memory again: the step is not run again
    assert "recoveries" not in rec["steps"]["hungry"] and "running the step again" not in (
        result.stderr
    )


def test_a_task_refused_as_bigger_than_a_worker_says_its_figures_with_the_memory_advice(
    tmp_path: Path,
) -> None:
    """The scheduler's MemoryError for a task whose inputs exceed a worker's budget had been
    said as the op's own error ("fix the step"), or, where workers were also restarted for
    memory, the step ran again three times and then said memory without the task's figures;
    the figures are said, with the budget keys, and the step is not run again."""
    wf = tmp_path / "big.yaml"
    wf.write_text(
        HUNGRY_WORKFLOW.replace("user_ops:hungry", "user_ops:needs_more").replace(
            "    with: {megabytes: 600}\n", ""
        )
    )
    run_dir = tmp_path / "run"
    result = submit(str(wf), "--no-report", "--run-dir", str(run_dir), *QUIET)
    assert result.returncode == 1, result.stderr
    said = " ".join(result.stderr.split())
    assert (
        "failed: step 'hungry': a task needs more memory than a worker's budget: Task "
        "('rechunk-merge-1', 0) has 512.00 MiB worth of input dependencies, but worker "
        "tcp://127.0.0.1:1 has memory_limit set to 256.00 MiB."
    ) in said, said
    assert "give each worker more memory (memory.per_thread_pool_size" in said
    assert "running the step again" not in said and "Traceback" not in said
    first = record_of(run_dir)
    assert "recoveries" not in first["steps"]["hungry"]
    # the resume with a larger budget (failing the same way here) keeps what the first attempt
    # ended with and the budget it had: both had been replaced by the last attempt's
    budget = ["--set", "memory.per_thread_pool_size=600MB"]
    again = submit("--resume", str(run_dir), "--no-report", *budget)
    assert again.returncode == 1, again.stderr
    rec = record_of(run_dir)
    [earlier] = rec["steps"]["hungry"]["earlier_attempts"]
    assert earlier["status"] == "failed" and earlier["error"] == first["steps"]["hungry"]["error"]
    assert earlier["error"].startswith("WorkersOutOfMemoryError: a task needs more memory")
    was = first["config"]["values"]["memory"]["per_thread_pool_size"]
    assert rec["config"]["changed"] == [
        f"attempt 2: memory.per_thread_pool_size: {was!r} -> 600000000"
    ], rec["config"]


@pytest.mark.parametrize("op", ["leaky", "leaky_sum"])
def test_workers_paused_for_memory_for_good_end_the_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, op: str
) -> None:
    """Each task keeps 300 MB on 400 MB workers, past the 80 % where Dask pauses a worker:
    Dask would wait for ever; the step fails once every worker has been paused for the grace
    period (shortened here), with the memory message. ``leaky`` returns its graph to the
    runner; ``leaky_sum`` waits in its own ``dask.compute``, which the watch's cancellation
    ends."""
    monkeypatch.setattr(oom, "PAUSE_GRACE_SECONDS", 4.0)
    wf = tmp_path / "leaky.yaml"
    wf.write_text(LEAKY_WORKFLOW.replace("user_ops:leaky", f"user_ops:{op}"))
    run_dir = tmp_path / "run"
    # no restart at 95 %: the workers must stay paused, not be restarted (the test above)
    budget = ["memory.per_thread_pool_size=400MB", "memory.spill.terminate=false"]
    t0 = time.monotonic()
    with pytest.raises(StepFailedError) as info:
        run_workflow(wf, overrides=[*QUIET[1:], *budget], run_dir=run_dir, report=False)
    assert time.monotonic() - t0 < 120
    error = info.value.error
    assert isinstance(error, oom.WorkersOutOfMemoryError)
    # the tasks may land on both workers (both paused) or all on one: that one paused with
    # tasks it will not start while the other idles, which Dask leaves as it is for good too
    assert re.match(
        r"workers ran out of memory \(a 400 MB budget per worker\): (every worker|1 of 2 "
        r"workers) stopped taking tasks \(paused at memory.spill.pause of its budget\), "
        r"holding the run's tasks, and freed nothing for 4 s",
        str(error),
    ), str(error)
    assert "tcp://" in str(error)
    rec = record_of(run_dir)
    assert rec["status"] == "failed" and rec["steps"]["field"]["status"] == "completed"
    assert rec["steps"]["leaky"]["error"].startswith("WorkersOutOfMemoryError: workers ran out")


@pytest.fixture
def small_disk(tmp_path: Path) -> Any:
    """A real 600 kB filesystem (tmpfs; the tests run as root, as CI does)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=600k", "tmpfs", str(disk)], check=True)
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def test_a_full_disk_is_one_line_keeps_the_outputs_and_resume_finishes(
    tmp_path: Path, small_disk: Path, shared_scheduler: str
) -> None:
    """The field (424 kB) fits, the diffusion's checkpoints and outputs do not."""
    sets = [*QUIET, "--set", "params.size=256", "params.chunk=64", "params.steps=120"]
    run_dir = small_disk / "run"
    result = submit(str(EXAMPLE), "--no-report", "--run-dir", str(run_dir), *sets)
    assert result.returncode == 1, result.stderr
    assert f"failed: step 'diffuse': no space left on device for {run_dir}" in result.stderr
    assert (
        f"free space (or move the run directory), then openclaw-dask submit --resume {run_dir}"
        in result.stderr
    )
    assert "Traceback" not in result.stderr and "Errno" not in result.stderr
    rec = record_of(run_dir)
    assert rec["steps"]["field"]["status"] == "completed"
    field = rec["steps"]["field"]["checksums"]["field"]
    assert zarrio.checksums(run_dir / "field.zarr") == field  # intact
    # no half-written temporary of run.json or a checkpoint's record left behind (mutation
    # audit: atomic_write_text without its cleanup went unseen)
    assert not list(run_dir.rglob(".*.tmp*")), list(run_dir.rglob(".*.tmp*"))
    # a disk that is full before anything is written: the file it could not write, no traceback
    subprocess.run(["dd", "if=/dev/zero", f"of={small_disk}/filler", "bs=4k"], capture_output=True)
    full = submit(str(EXAMPLE), "--no-report", *sets, cwd=small_disk)
    assert full.returncode == 1
    assert "error: no space left on device for runs/example-smoothing/" in full.stderr
    assert ".openclaw.lock (0 B free); free space and run the command again" in full.stderr
    assert "Traceback" not in full.stderr
    (small_disk / "filler").unlink()
    subprocess.run(["mount", "-o", "remount,size=20m", str(small_disk)], check=True)
    resumed = submit(str(EXAMPLE), "--no-report", "--resume", str(run_dir))
    assert resumed.returncode == 0, resumed.stderr
    # the same run on a roomy disk: what the resumed run must come to
    plain = [item for item in sets[2:] if item != "--set"]
    run_workflow(
        EXAMPLE, overrides=plain, address=shared_scheduler, run_dir=tmp_path / "plain", report=False
    )
    for step in ("field", "diffuse", "profile"):
        sums = record_of(tmp_path / "plain")["steps"][step]["checksums"]
        assert record_of(run_dir)["steps"][step]["checksums"] == sums, step


def field_and_double(wf: Path, field_args: str, factor: float, name: str = "two") -> Path:
    """A two-step workflow at ``wf``: the example field, then a user op (by import path) that
    multiplies it by ``factor``."""
    wf.write_text(
        f"name: {name}\nsteps:\n"
        f"  field:\n    op: example.field\n    with: {field_args}\n"
        "    outputs: [field.zarr]\n"
        "  double:\n    op: tests.integration.user_ops:double\n    needs: [field]\n"
        f"    with: {{factor: {factor}}}\n    outputs: [doubled.zarr]\n"
    )
    return wf


def test_user_op_by_import_path_and_resume_skips_done_steps(
    tmp_path: Path, shared_scheduler: str
) -> None:
    wf = field_and_double(tmp_path / "user.yaml", "{size: 64, chunk: 32}", 3.0, name="user")
    run_dir = tmp_path / "run"
    rec = run_workflow(wf, address=shared_scheduler, overrides=QUIET[1:], run_dir=run_dir)
    assert rec["status"] == "completed"
    doubled = xr.open_zarr(run_dir / "doubled.zarr")
    field = xr.open_zarr(run_dir / "field.zarr")
    assert (doubled["temperature"] == 3.0 * field["temperature"]).all()
    # strict JSON (record_of refuses NaN): an undefined metric is null
    assert record_of(run_dir)["steps"]["double"]["metrics"] == {"factor": 3.0, "undefined": None}
    # nothing left to run: the record comes back as it is, without a cluster
    again = run_workflow(wf, address=shared_scheduler, overrides=QUIET[1:], resume=run_dir)
    assert again == record_of(run_dir) and again["attempts"] == 1
    # the user op's output gone: that step runs again, the field is skipped
    shutil.rmtree(run_dir / "doubled.zarr")
    said: list[str] = []
    first_report = (run_dir / "performance-report.html").read_bytes()
    again = run_workflow(
        wf, address=shared_scheduler, overrides=QUIET[1:], resume=run_dir, announce=said.append
    )
    assert again["attempts"] == 2
    # the resumed attempt's report lands beside the first attempt's, which stays as it was
    assert again["performance_report"] == str(run_dir.resolve() / "performance-report-2.html")
    assert Path(again["performance_report"]).stat().st_size > 0
    assert (run_dir / "performance-report.html").read_bytes() == first_report
    assert "skipped" in again["steps"]["field"] and "skipped" not in again["steps"]["double"]
    for name, step in again["steps"].items():
        assert step["checksums"] == rec["steps"][name]["checksums"]
        assert step["fingerprint"] == rec["steps"][name]["fingerprint"]
    assert "step 'double' completed earlier, but doubled.zarr is missing: running it again" in said
    # a completed output that lost a file or had one rewritten since: not skipped, nor called
    # "nothing to run" (zarr reads a missing chunk as its fill value, so it looked whole)
    chunks = sorted((run_dir / "doubled.zarr/temperature").rglob("c/*/*"))
    damages = {
        "doubled.zarr/zarr.json": "doubled.zarr/zarr.json is missing",
        str(chunks[-1].relative_to(run_dir)): f"{chunks[-1].relative_to(run_dir)} is missing",
    }
    for rel, message in damages.items():
        (run_dir / rel).unlink()
        said.clear()
        again = run_workflow(
            wf, address=shared_scheduler, overrides=QUIET[1:], resume=run_dir, announce=said.append
        )
        assert f"step 'double' completed earlier, but {message}: running it again" in said
        assert "skipped" in again["steps"]["field"] and "skipped" not in again["steps"]["double"]
        assert again["steps"]["double"]["checksums"] == rec["steps"]["double"]["checksums"]
    garbled = run_dir / str(chunks[0].relative_to(run_dir))
    garbled.write_bytes(garbled.read_bytes()[:-1])
    said.clear()
    again = run_workflow(
        wf, address=shared_scheduler, overrides=QUIET[1:], resume=run_dir, announce=said.append
    )
    assert f"but {garbled.relative_to(run_dir)} changed size since" in said[-1], said
    assert again["steps"]["double"]["checksums"] == rec["steps"]["double"]["checksums"]
    assert again["attempts"] == 5
    # the dry run of a resume says a damaged output's step runs again, and why
    (run_dir / "doubled.zarr/zarr.json").unlink()
    plan = run_workflow(wf, overrides=QUIET[1:], resume=run_dir, dry_run=True)["resume"]
    assert plan == {
        "field": "skip: completed in an earlier attempt",
        "double": "run again: doubled.zarr/zarr.json is missing",
    }
    # an edited step (the fix after a failure) runs again over its outputs, and says so
    wf.write_text(wf.read_text().replace("factor: 3.0", "factor: 2.0"))
    said.clear()
    again = run_workflow(
        wf, address=shared_scheduler, overrides=QUIET[1:], resume=run_dir, announce=said.append
    )
    assert again["attempts"] == 6 and "skipped" not in again["steps"]["double"]
    rerun = "step 'double' completed earlier, but its op, arguments or inputs changed since"
    assert any(line.startswith(rerun) for line in said), said
    assert not any("'field'" in line for line in said)
    # a step after one that runs again is skipped only if that one's outputs come out as
    # before: its dry run said "skip" flatly, where an edit of the field ran it again
    (run_dir / "field.zarr/zarr.json").unlink()
    plan = run_workflow(wf, overrides=QUIET[1:], resume=run_dir, dry_run=True)["resume"]
    assert plan == {
        "field": "run again: field.zarr/zarr.json is missing",
        "double": "skip if the outputs of field come out as before, else run again",
    }
    again = run_workflow(wf, address=shared_scheduler, overrides=QUIET[1:], resume=run_dir)
    assert "skipped" not in again["steps"]["field"] and "skipped" in again["steps"]["double"]


def test_a_resume_runs_again_the_steps_after_one_whose_outputs_changed(
    tmp_path: Path, shared_scheduler: str
) -> None:
    """A step is skipped only while its inputs are the ones it was made from: after an edit of
    an upstream step (its seed, the fix after a failure), the resume runs that step and then
    every step that reads it, whose own arguments did not change (mutation audit: a step
    fingerprint without the inputs' checksums skipped ``double`` over the old field)."""
    wf = field_and_double(tmp_path / "two.yaml", "{size: 32, chunk: 16, seed: 1}", 3.0)
    run_dir = tmp_path / "run"
    first = run_workflow(
        wf, address=shared_scheduler, overrides=QUIET[1:], run_dir=run_dir, report=False
    )
    wf.write_text(wf.read_text().replace("seed: 1", "seed: 2"))
    said: list[str] = []
    again = run_workflow(
        wf, address=shared_scheduler, overrides=QUIET[1:], resume=run_dir, announce=said.append
    )
    assert not any("skipped" in again["steps"][name] for name in ("field", "double")), said
    assert again["steps"]["field"]["checksums"] != first["steps"]["field"]["checksums"]
    rerun = "step 'double' completed earlier, but its op, arguments or inputs changed since"
    assert any(line.startswith(rerun) for line in said), said
    field = xr.open_zarr(run_dir / "field.zarr")["temperature"]
    doubled = xr.open_zarr(run_dir / "doubled.zarr")["temperature"]
    assert field.attrs["units"] == "K" and bool((doubled == 3.0 * field).all())


def test_an_op_s_all_to_all_rechunk_is_written(tmp_path: Path, shared_scheduler: str) -> None:
    """A pixel-major rechunk in a user op: dask's P2P rechunk cannot run inside the delayed
    Zarr write xarray returns, and every such step failed ("_finalize_store ... cancelled for
    reason: lost dependencies", whatever the memory); the plan's rechunks are by tasks."""
    wf = tmp_path / "columns.yaml"
    wf.write_text(
        "name: columns\nsteps:\n"
        "  field:\n    op: example.field\n    with: {size: 256, chunk: 8}\n"
        "    outputs: [field.zarr]\n"
        "  columns:\n    op: tests.integration.user_ops:columns\n    needs: [field]\n"
        "    outputs: [columns.zarr]\n"
    )
    run_dir = tmp_path / "run"
    rec = run_workflow(wf, address=shared_scheduler, overrides=QUIET[1:], run_dir=run_dir)
    assert rec["status"] == "completed"
    columns = xr.open_zarr(run_dir / "columns.zarr")["temperature"]
    assert columns.chunks == ((256,), (8,) * 32)  # (dask's choice for it: P2P)
    assert (columns.values == xr.open_zarr(run_dir / "field.zarr")["temperature"].values).all()


#: the steps an edited workflow is made of, by name: ``base`` is ``field`` renamed
EDITED_STEPS = {
    "field": "op: example.field\n    with: {size: 16, chunk: 8}\n    outputs: [field.zarr]",
    "base": "op: example.field\n    with: {size: 16, chunk: 8}\n    outputs: [field.zarr]",
    "double": "op: tests.integration.user_ops:double\n    needs: [field]\n"
    "    outputs: [doubled.zarr]",
    "bad": "op: tests.integration.user_ops:explode\n    needs: [field]\n    outputs: [no.zarr]",
}


def test_a_resume_whose_workflow_dropped_or_renamed_steps_moves_their_records(
    tmp_path: Path, shared_scheduler: str
) -> None:
    """The fix after a failure may remove or rename steps: their records leave run.json's
    ``steps`` for ``dropped_steps``, and the resume (and its dry run) says so. They had stayed:
    a run that completed still said its removed step ``failed``, and a renamed step's old record
    claimed the output its new name wrote again (found by an exploratory test of workflow
    submit)."""
    wf = tmp_path / "edited.yaml"
    run_dir = tmp_path / "run"

    def edit(*steps: str) -> None:
        wf.write_text(
            "name: edited\nsteps:\n" + "".join(f"  {n}:\n    {EDITED_STEPS[n]}\n" for n in steps)
        )

    def resume(*steps: str, dry: bool = False) -> subprocess.CompletedProcess[str]:
        edit(*steps)
        args = ["--dry-run"] if dry else ["--no-report", "--address", shared_scheduler]
        return submit(str(wf), "--resume", str(run_dir), *args)

    edit("field", "double", "bad")
    failed = submit(
        str(wf), "--run-dir", str(run_dir), "--no-report", "--address", shared_scheduler
    )
    assert failed.returncode == 1, failed.stderr
    field_files = record_of(run_dir)["steps"]["field"]["files"]
    # `bad` removed: its dry run says so, and writes nothing
    before = (run_dir / "run.json").read_text()
    said = "resume: step bad of the earlier attempt is not in this workflow: its record moves "
    dry = resume("field", "double", dry=True)
    assert dry.returncode == 0, dry.stderr
    assert f"{said}to dropped_steps\n" in dry.stdout
    assert (run_dir / "run.json").read_text() == before
    done = resume("field", "double")
    assert done.returncode == 0, done.stderr
    assert f"{said}to dropped_steps\n" in done.stderr
    rec = record_of(run_dir)
    assert rec["status"] == "completed" and list(rec["steps"]) == ["field", "double"]
    assert all("skipped" in step for step in rec["steps"].values())
    dropped = rec["dropped_steps"]["bad"]
    assert dropped["status"] == "failed" and dropped["dropped_in_attempt"] == 2
    # `double` removed from the completed run, whose other steps are all skipped: its record
    # moves too (it had been "nothing to run", run.json left with `double` in its steps)
    done = resume("field")
    assert done.returncode == 0, done.stderr
    assert "nothing to run" not in done.stderr
    rec = record_of(run_dir)
    assert list(rec["steps"]) == ["field"] and rec["attempts"] == 3
    assert sorted(rec["dropped_steps"]) == ["bad", "double"]
    assert rec["dropped_steps"]["bad"]["dropped_in_attempt"] == 2  # kept as it was
    assert (run_dir / "doubled.zarr").is_dir()  # its output stays on disk
    # `field` renamed `base`: `base` writes field.zarr again, and `steps` claims it once
    said = "resume: step field of the earlier attempt is not in this workflow: its record moves "
    renamed = resume("base")
    assert renamed.returncode == 0, renamed.stderr
    assert f"{said}to dropped_steps\n" in renamed.stderr
    rec = record_of(run_dir)
    assert rec["status"] == "completed" and list(rec["steps"]) == ["base"]
    assert "skipped" not in rec["steps"]["base"] and rec["steps"]["base"]["files"] == field_files
    assert sorted(rec["dropped_steps"]) == ["bad", "double", "field"]
    assert rec["dropped_steps"]["field"]["dropped_in_attempt"] == 4
    # and the record it leaves is one a resume reads: nothing left to run
    again = resume("base")
    assert again.returncode == 0, again.stderr
    assert "nothing to run" in again.stderr and "dropped_steps" not in again.stderr


#: an iterative op (beside the workflow) whose arguments say what it adds and where it fails; it
#: records each step it made, and fails at its end while a file BROKEN lies beside it
COUNTING_OPS = """
from pathlib import Path

import numpy as np
import xarray as xr

from openclaw_dask.workflows.context import IterativeOp


class Count(IterativeOp):
    outputs = ("counted", "steps")
    total_steps = 6

    def __init__(self, ctx, *, add: int = 1, fail_at: int = 99, steps: int = 6):
        super().__init__(ctx)
        self.add, self.fail_at, self.total_steps = add, fail_at, steps

    def initial_state(self):
        return self.ctx.input("field")

    def advance(self, state, step0, nsteps):
        if step0 >= self.fail_at:
            raise RuntimeError("not yet")
        made = np.arange(step0, step0 + nsteps)
        return state + self.add * nsteps, {"steps": xr.Dataset({"n": ("time", made)})}

    def finish(self, state):
        if Path(__file__).with_name("BROKEN").exists():
            raise RuntimeError("broken at the end")
        return {"counted": state}
"""


def _counting(folder: Path, module: str, args: str) -> Path:
    """A workflow in ``folder``: the field, then ``Count`` (as ``module``) with ``args``."""
    (folder / f"{module}.py").write_text(COUNTING_OPS)
    wf = folder / "counting.yaml"
    wf.write_text(
        "name: counting\nsteps:\n"
        "  field:\n    op: example.field\n    with: {size: 16, chunk: 16}\n"
        "    outputs: [field.zarr]\n"
        f"  count:\n    op: {module}:Count\n    needs: [field]\n"
        f"    with: {args}\n    outputs: [counted.zarr, steps.zarr]\n"
    )
    return wf


def test_a_checkpoint_made_with_other_arguments_is_not_continued(
    tmp_path: Path, shared_scheduler: str
) -> None:
    """A resume continues an iterative step from its checkpoint only when the checkpoint is of
    this step as it is now: after an edit of the step's ``with:``, the step runs from step 0
    (and the dry run says so), never the new arguments on top of the old ones' state
    (mutation audit: both the run and the dry run continued from any checkpoint unseen)."""
    wf = _counting(tmp_path, "openclaw_test_argument_counting_ops", "{add: 1, fail_at: 4}")
    run_dir = tmp_path / "run"
    sets = [QUIET[1], "distributed.sync_interval=2"]
    with pytest.raises(StepFailedError, match="not yet"):
        run_workflow(wf, address=shared_scheduler, overrides=sets, run_dir=run_dir, report=False)
    # at step 4, add 1: the window before the failed one commits
    assert (run_dir / ".checkpoints/count/checkpoint.json").is_file()
    wf.write_text(wf.read_text().replace("{add: 1, fail_at: 4}", "{add: 2}"))
    plan = run_workflow(wf, overrides=sets, resume=run_dir, dry_run=True)["resume"]
    passed_over = (
        "its checkpoint at step 4 is of the step before its op, arguments or inputs changed; "
        "running the step from step 0"
    )  # it had said "run", and the run nothing at all
    assert plan == {"field": "skip: completed in an earlier attempt", "count": passed_over}
    said: list[str] = []
    again = run_workflow(
        wf, address=shared_scheduler, overrides=sets, resume=run_dir, announce=said.append
    )
    assert f"count: {passed_over}" in said, said
    assert "resumed_from_step" not in again["steps"]["count"]
    field = xr.open_zarr(run_dir / "field.zarr")["temperature"]
    counted = xr.open_zarr(run_dir / "counted.zarr")["temperature"]
    assert bool((counted == field + 2 * 6).all())  # not field + 1 * 4 + 2 * 2
    assert not (run_dir / ".checkpoints").exists()  # nor the folder, left empty before


def _failed_after_a_checkpoint(
    tmp_path: Path, module: str, address: str
) -> tuple[Path, Path, list[str]]:
    """A counting step of 10 run with a checkpoint every 5 steps that fails at its end (the
    file BROKEN there meanwhile): the workflow, its run directory and the ``--set`` items."""
    wf = _counting(tmp_path, module, "{steps: 10}")
    (tmp_path / "BROKEN").touch()
    run_dir = tmp_path / "run"
    sets = [QUIET[1], "distributed.sync_interval=5"]
    with pytest.raises(StepFailedError, match="broken at the end"):
        run_workflow(wf, address=address, overrides=sets, run_dir=run_dir, report=False)
    (tmp_path / "BROKEN").unlink()
    return wf, run_dir, sets


def test_a_checkpoint_is_continued_over_records_made_after_it_but_not_over_lost_ones(
    tmp_path: Path, shared_scheduler: str
) -> None:
    """A step that fails after its last checkpoint leaves records beyond it (an output's
    metadata grown): the resume still continues from the checkpoint and cuts the records back
    to it. A record lost from before the checkpoint (a deleted chunk, which zarr reads as its
    fill value) is damage: the step runs from step 0 and no record is lost (mutation audit: a
    checkpoint whose outputs merely grew was called damaged, and one without its outputs'
    files in its manifest continued over a lost chunk, both unseen)."""
    wf, run_dir, sets = _failed_after_a_checkpoint(
        tmp_path, "openclaw_test_recording_ops", shared_scheduler
    )
    assert json.loads((run_dir / ".checkpoints/count/checkpoint.json").read_text())["step"] == 5
    assert zarrio.extent(run_dir / "steps.zarr", "time") == 10  # the records after it, too
    lost = shutil.copytree(run_dir, tmp_path / "lost", symlinks=True)
    (lost / "steps.zarr/n/c/0").unlink()  # records 0-4
    for directory, resumed in ((run_dir, 5), (lost, None)):
        again = run_workflow(
            wf, address=shared_scheduler, overrides=sets, resume=directory, report=False
        )
        assert again["steps"]["count"].get("resumed_from_step") == resumed, directory
        assert ("checkpoint_damaged" in again["steps"]["count"]) is (resumed is None)
        made = zarrio.open_output(directory / "steps.zarr")["n"].values
        assert made.tolist() == list(range(10)), directory
        field = zarrio.open_output(directory / "field.zarr")["temperature"]
        counted = zarrio.open_output(directory / "counted.zarr")["temperature"]
        assert bool((counted == field + 10).all()), directory


def test_a_damaged_or_missing_checkpoint_is_said_alike_by_the_dry_run_and_the_resume(
    tmp_path: Path, shared_scheduler: str
) -> None:
    """A checkpoint the run committed and a resume cannot use is said, in the same words by
    the dry run and the resume, and the step runs from step 0. A checkpoint.json cut short or
    not an object, or a state store gone, had run the step from step 0 without a word (its
    checkpoint and outputs deleted), the dry run saying "run"; a chunk gone from the state
    store had the dry run promise to continue from it (found by an exploratory test)."""
    wf, run_dir, sets = _failed_after_a_checkpoint(
        tmp_path, "openclaw_test_damaged_checkpoint_ops", shared_scheduler
    )
    count = record_of(run_dir)["steps"]["count"]
    # the last window counts its records, not a checkpoint: the one to continue is at 5
    assert (count["checkpoint_committed"], count["checkpoint_step"]) == (5, 10)
    ckpt, state = ".checkpoints/count", ".checkpoints/count/state-5.zarr"
    chunk = next(p for p in sorted((run_dir / state).rglob("c/*")) if p.is_file())
    damages: dict[str, tuple[Callable[[Path], Any], str]] = {
        "cut-short": (
            lambda d: (d / ckpt / "checkpoint.json").write_text('{"step": 5, "sto'),
            f"{ckpt}/checkpoint.json is not JSON: cut short or overwritten",
        ),
        "not-an-object": (
            lambda d: (d / ckpt / "checkpoint.json").write_text("[1]"),
            f"{ckpt}/checkpoint.json holds an array, not a checkpoint object",
        ),
        "state-gone": (lambda d: shutil.rmtree(d / state), f"{state} is missing"),
        "chunk-gone": (
            lambda d: (d / chunk.relative_to(run_dir)).unlink(),
            f"{chunk.relative_to(run_dir)} is missing",
        ),
        "folder-gone": (lambda d: shutil.rmtree(d / ckpt), f"{ckpt} is missing"),
    }
    copies = {}
    for kind, (damage, why) in damages.items():
        copies[kind] = copy = shutil.copytree(run_dir, tmp_path / kind, symlinks=True)
        damage(copy)
        plan = run_workflow(wf, overrides=sets, resume=copy, dry_run=True)["resume"]
        said = f"the checkpoint at step 5 is damaged ({why}); running the step from step 0"
        assert plan["count"] == said, kind
    # a record from before checkpoint_committed: checkpoint_step short of total_steps is one
    old, why = copies["folder-gone"], damages["folder-gone"][1]
    made = record_of(old)
    del made["steps"]["count"]["checkpoint_committed"]
    said = f"the checkpoint at step 5 is damaged ({why}); running the step from step 0"
    for done, plan_of_count in ((5, said), (10, "run")):  # 10: the last window, no checkpoint
        made["steps"]["count"]["checkpoint_step"] = done
        (old / "run.json").write_text(json.dumps(made))
        plan = run_workflow(wf, overrides=sets, resume=old, dry_run=True)["resume"]
        assert plan["count"] == plan_of_count, done
    # the resume says what its dry run said, then runs the step whole from step 0
    for kind in ("cut-short", "state-gone"):
        copy, why = copies[kind], damages[kind][1]
        lines: list[str] = []
        again = run_workflow(
            wf,
            address=shared_scheduler,
            overrides=sets,
            resume=copy,
            report=False,
            announce=lines.append,
        )
        said = f"the checkpoint at step 5 is damaged ({why}); running the step from step 0"
        assert f"count: {said}" in lines, (kind, lines)
        count = again["steps"]["count"]
        assert count["checkpoint_damaged"] == why and "resumed_from_step" not in count, kind
        assert zarrio.open_output(copy / "steps.zarr")["n"].values.tolist() == list(range(10))
        field = zarrio.open_output(copy / "field.zarr")["temperature"]
        counted = zarrio.open_output(copy / "counted.zarr")["temperature"]
        assert bool((counted == field + 10).all()), kind


def test_a_resume_after_an_upgrade_says_what_changed_and_run_json_keeps_it(
    tmp_path: Path, shared_scheduler: str
) -> None:
    """A resume continued with other versions of the packages without a word, and the record's
    versions became the new ones: nothing said that the run's parts came from two."""
    wf = field_and_double(tmp_path / "two.yaml", "{size: 32, chunk: 16}", 2.0)
    run_dir = tmp_path / "run"
    rec = run_workflow(
        wf, address=shared_scheduler, overrides=QUIET[1:], run_dir=run_dir, report=False
    )
    assert rec["software_changed"] == []
    numpy_now = rec["versions"]["numpy"]
    made = record_of(run_dir)
    made["versions"]["numpy"] = "1.0.0"  # as an attempt before an upgrade recorded it
    (run_dir / "run.json").write_text(json.dumps(made))
    shutil.rmtree(run_dir / "doubled.zarr")  # something left to run
    plan = run_workflow(wf, overrides=QUIET[1:], resume=run_dir, dry_run=True)
    assert plan["software_changed"] == [f"numpy 1.0.0 -> {numpy_now}"]
    said: list[str] = []
    again = run_workflow(
        wf, address=shared_scheduler, overrides=QUIET[1:], resume=run_dir, announce=said.append
    )
    assert (
        f"note: the software changed since the run's last attempt (numpy 1.0.0 -> {numpy_now}); "
        "the completed steps and the checkpoint are kept as the earlier versions made them"
    ) in said
    assert again["software_changed"] == [f"attempt 2: numpy 1.0.0 -> {numpy_now}"]
    # a later attempt on the same versions keeps the record of the change, and says nothing
    shutil.rmtree(run_dir / "doubled.zarr")
    said.clear()
    again = run_workflow(
        wf, address=shared_scheduler, overrides=QUIET[1:], resume=run_dir, announce=said.append
    )
    assert again["attempts"] == 3 and not any("software changed" in line for line in said)
    assert record_of(run_dir)["software_changed"] == [f"attempt 2: numpy 1.0.0 -> {numpy_now}"]


def test_existing_run_dir_is_never_overwritten(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "precious.txt").write_text("keep me")
    result = submit(str(EXAMPLE), "--run-dir", str(run_dir), *QUIET)
    assert result.returncode == 2 and "not empty" in result.stderr
    assert (run_dir / "precious.txt").read_text() == "keep me"
    # a place no run directory can be made: one line, exit 2, nothing started
    result = submit(str(EXAMPLE), "--run-dir", "/proc/openclaw-run", *QUIET)
    assert result.returncode == 2, result.stderr
    assert "/proc/openclaw-run: cannot write a run directory here" in result.stderr
    assert "Traceback" not in result.stderr and "dashboard:" not in result.stderr


def test_ctrl_c_stops_the_whole_run_quietly_and_resume_finishes_it(tmp_path: Path) -> None:
    """Ctrl-C in a terminal signals the whole process group: the client and its workers."""
    # 800 steps: the run is frozen while the second CLI runs, and the Ctrl-C follows its
    # SIGCONT at once, so it cannot finish on its own first (70-90 steps a second here)
    args = [*QUIET, *SMALL[:4], "--set", "params.steps=800"]
    args += ["--set", "distributed.sync_interval=100", "--no-report"]
    run_dir = tmp_path / "run"
    proc = start_in_own_group(run_dir, args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    seen = wait_for_checkpoint(proc, run_dir, 200)
    assert 200 <= seen < 800, f"the run should be mid-way, checkpoint at {seen}"
    # while it runs, no second run may write its directory (a requeued batch job, say); the
    # run is frozen meanwhile, so that it cannot end during the seconds the second CLI takes
    os.killpg(proc.pid, signal.SIGSTOP)
    try:
        second = submit(str(EXAMPLE), "--resume", str(run_dir), "--no-report")
        # nor a fresh run given the same --run-dir (it was told to pass --resume)
        fresh = submit(str(EXAMPLE), "--run-dir", str(run_dir), "--no-report")
    finally:
        os.killpg(proc.pid, signal.SIGCONT)
    for refused in (second, fresh):
        assert refused.returncode == 2, refused.stderr
        assert f"another openclaw-dask run is using this run directory (pid {proc.pid} on " in (
            refused.stderr
        )
    assert record_of(run_dir)["status"] == "running" and proc.poll() is None
    # SIGINT must be caught by the run, not ignored (a disposition a child inherits)
    status = Path(f"/proc/{proc.pid}/status").read_text()
    caught = {k: int(v, 16) for k, v in re.findall(r"^(SigIgn|SigCgt):\s*(\w+)$", status, re.M)}
    sigint = 1 << (signal.SIGINT - 1)
    assert caught["SigCgt"] & sigint and not caught["SigIgn"] & sigint, caught
    t_int = time.time()
    os.killpg(proc.pid, signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=90)
    rec = record_of(run_dir)
    assert proc.returncode == 130, (rec.get("finished", 0) - t_int, stdout, stderr, rec)
    # one line, no worker tracebacks and no scheduler complaints about lost workers
    hint = f"interrupted: run.json says so; continue with openclaw-dask submit --resume {run_dir}"
    assert hint in stderr
    for noise in ("Traceback", "KeyboardInterrupt", "Removing worker"):
        assert noise not in stderr, stderr
    rec = record_of(run_dir)
    assert rec["status"] == "interrupted" and rec["steps"]["diffuse"]["status"] == "interrupted"

    # its dry run says what the resume does with each step; the resume says it as it goes
    checkpoint = json.loads((run_dir / ".checkpoints/diffuse/checkpoint.json").read_text())
    dry = submit("--resume", str(run_dir), "--dry-run")
    assert dry.returncode == 0, dry.stderr
    said = [line for line in dry.stdout.splitlines() if line.startswith("resume: ")]
    assert said == [
        "resume: field: skip: completed in an earlier attempt",
        f"resume: diffuse: continue from its checkpoint at step {checkpoint['step']:,}",
        "resume: profile: run",
    ], dry.stdout
    # the --set values of the interrupted run come along, and so does its workflow file: the
    # hint's command alone continues it
    first_wall = record_of(run_dir)["wall_seconds"]
    resumed = submit("--resume", str(run_dir), "--no-report")
    assert resumed.returncode == 0, resumed.stderr
    assert "field: completed in an earlier attempt, skipped\n" in resumed.stderr
    assert f"diffuse: continuing from its checkpoint at step {checkpoint['step']:,}\n" in (
        resumed.stderr
    )
    rec = record_of(run_dir)
    assert rec["status"] == "completed" and rec["attempts"] == 2
    # the summary's time is this attempt's, and the run's whole time is said beside it (a
    # resume of a 150-year run said its 129 s alone, the first attempt's ~100 s left out)
    assert rec["wall_seconds_all"] == pytest.approx(first_wall + rec["wall_seconds"])
    assert (
        f"completed example-smoothing in {rec['wall_seconds']:.1f} s (this attempt; "
        f"{rec['wall_seconds_all']:.1f} s in its 2 attempts)"
    ) in resumed.stdout, resumed.stdout
    assert rec["steps"]["diffuse"]["resumed_from_step"] >= 200
    assert rec["workflow"]["params"]["steps"] == 800
    assert rec["config"]["values"]["distributed"]["sync_interval"] == 100


def test_a_terminal_that_hangs_up_stops_the_run_cleanly(tmp_path: Path) -> None:
    """An SSH connection that drops hangs up the run's terminal: SIGHUP from the kernel to the
    terminal's session leader (the run here), and from a shell to its whole job."""
    args = [*QUIET, *SMALL[:4], "--set", "params.steps=800"]
    args += ["--set", "distributed.sync_interval=100", "--no-report"]
    run_dir = tmp_path / "run"
    terminal, tty = pty.openpty()

    def own_terminal() -> None:  # the new session's controlling terminal, as a login's is
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    proc = start_in_own_group(
        run_dir, args, stdin=tty, stdout=tty, stderr=tty, preexec_fn=own_terminal
    )
    os.close(tty)
    said = bytearray()
    seen = 0
    while seen < 200 and proc.poll() is None:  # read what it says, as a terminal does
        if select.select([terminal], [], [], 0.1)[0]:
            with contextlib.suppress(OSError):
                said += os.read(terminal, 65536)
        seen = wait_for_checkpoint(proc, run_dir, 1)
    assert 200 <= seen < 800, f"the run should be mid-way, checkpoint at {seen}: {said!r}"
    workers = [p for p in psutil.Process(proc.pid).children(recursive=True)]
    os.close(terminal)  # the hangup
    os.killpg(proc.pid, signal.SIGHUP)  # and the shell's, to the whole job
    assert proc.wait(timeout=90) == 130
    rec = record_of(run_dir)
    assert rec["status"] == "interrupted" and rec["steps"]["diffuse"]["status"] == "interrupted"
    _, alive = psutil.wait_procs(workers, timeout=10)
    assert not alive, alive
    resumed = submit("--resume", str(run_dir), "--no-report")
    assert resumed.returncode == 0, resumed.stderr
    assert record_of(run_dir)["steps"]["diffuse"]["resumed_from_step"] >= 200


def handling(proc: subprocess.Popen[str], sig: signal.Signals) -> None:
    """Return once the command ``proc`` runs (past :data:`DEFAULT_SIGINT`'s ``execv``) handles
    ``sig``: SIGINT from its interpreter's first act, before any import (Python's
    KeyboardInterrupt), SIGTERM once ``openclaw_dask.cli.main`` has begun.

    For SIGINT a fixed wait from the start was not enough: under a CI run started in the
    background (a shell's background job ignores SIGINT) the wrapper still ignores it until its
    first line has run, and a Ctrl-C sent 0.4 s after the start was lost there once on a loaded
    machine: the run went on and exited 0. (Python's own start, before the command's first
    line, turns a Ctrl-C into a traceback: the presses here come 0.15 s or more after it.)
    """
    bit = 1 << (sig - 1)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and proc.poll() is None:
        with contextlib.suppress(OSError, IndexError):  # (between the exec and the next)
            argv = Path(f"/proc/{proc.pid}/cmdline").read_bytes().split(b"\0")
            status = Path(f"/proc/{proc.pid}/status").read_text()
            caught = int(re.findall(r"^SigCgt:\s*(\w+)$", status, re.M)[0], 16) & bit
            if argv[1] != b"-c" and caught:
                return
        time.sleep(0.002)
    raise AssertionError(f"the command never handled {sig.name}: {proc.poll()}")


@pytest.mark.parametrize("delay", [0.15, 0.4])
def test_ctrl_c_while_python_imports_is_one_line(tmp_path: Path, delay: float) -> None:
    # the command's imports take about half a second here: the press lands inside them
    proc = start_in_own_group(tmp_path / "run", QUIET, stderr=subprocess.PIPE)
    handling(proc, signal.SIGINT)
    time.sleep(delay)
    os.killpg(proc.pid, signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert stderr.splitlines()[-1].startswith("interrupted"), stderr
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr


def test_sigterm_before_the_run_began_is_one_line(tmp_path: Path) -> None:
    """``kill`` (or a batch system ending the job) in the first seconds, while the command
    imports: it had ended silently with exit 143."""
    run_dir = tmp_path / "run"
    proc = start_in_own_group(run_dir, QUIET, stderr=subprocess.PIPE)
    handling(proc, signal.SIGTERM)
    proc.send_signal(signal.SIGTERM)  # as soon as the command handles it: mid-import
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert stderr.startswith("interrupted") and len(stderr.splitlines()) == 1, stderr
    assert not run_dir.exists()


@pytest.mark.parametrize("delay", [0.3, 0.8, 1.3])
def test_ctrl_c_while_local_workers_start_is_one_line(tmp_path: Path, delay: float) -> None:
    """The workers are children in the terminal's group: the press reaches them mid-import."""
    run_dir = tmp_path / "run"
    proc = start_in_own_group(run_dir, [*QUIET, *SMALL], stderr=subprocess.PIPE)
    assert proc.stderr is not None
    said = proc.stderr.readline()  # announced before the cluster starts
    assert said.startswith("run directory:"), said
    time.sleep(delay)
    os.killpg(proc.pid, signal.SIGINT)
    _, rest = proc.communicate(timeout=90)
    assert proc.returncode == 130, rest
    assert rest.splitlines()[-1].startswith("interrupted"), rest
    for noise in ("Traceback", "KeyboardInterrupt", "AssertionError", "Status.init"):
        assert noise not in rest, rest
    if (run_dir / "run.json").exists():  # written once the cluster was up
        assert record_of(run_dir)["status"] == "interrupted"


def test_resume_continues_the_same_run_or_refuses(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    # a config file given by a relative path, with a result-relevant value of its own: the
    # resumes below run from another directory and must still find it
    (tmp_path / "start").mkdir()
    (tmp_path / "start/cfg.config").write_text("storage:\n  level: 5\n")
    first = [str(EXAMPLE), "--run-dir", str(run_dir), "--config", "cfg.config", "--no-report"]
    done = submit(*first, *QUIET, *SMALL, cwd=tmp_path / "start")
    assert done.returncode == 0, done.stderr
    outputs = {p: p.stat().st_mtime_ns for p in run_dir.rglob("*") if p.is_file()}
    resume = [str(EXAMPLE), "--resume", str(run_dir), "--dry-run"]
    refused = {
        # another value for a parameter the run was started with
        "params.steps=121": "params.steps: the run being resumed used 120; --resume continues",
        # a result-relevant config key
        "distributed.sync_interval=7": "--resume: distributed.sync_interval: the run being "
        "resumed used 5000, this one would use 7 (from --set)",
    }
    for item, message in refused.items():
        result = submit(*resume, "--set", item)
        assert result.returncode == 2 and message in result.stderr, result.stderr
        assert "Traceback" not in result.stderr
    other = submit(str(ROOT / "workflows/climate.yaml"), *resume[1:])
    assert other.returncode == 2, other.stderr
    assert "holds a run of workflow 'example-smoothing'" in other.stderr
    assert "not 'climate-ebm'" in other.stderr
    # the same values again, or only another cluster shape: accepted
    same = submit(*resume, "--set", "params.steps=120", "parallel.processes=1")
    assert same.returncode == 0, same.stderr
    assert "params: size=128 (--set), chunk=64 (--set), seed=42, steps=120 (--set)" in same.stdout
    # nothing left to run: no cluster starts and the record stays as it is, also with another
    # allocator and transport compression (how the run goes, not what it computes: another
    # machine may lack the allocator)
    how = ["--set", "memory.allocator=jemalloc", "distributed.compression=zstd"]
    before = (run_dir / "run.json").read_text()
    again = submit(*resume[:3], *QUIET, *how)
    assert again.returncode == 0, again.stderr
    nothing = f"nothing to run: every step of {run_dir} completed in an earlier attempt"
    assert nothing in again.stderr and "dashboard:" not in again.stderr, again.stderr
    assert "s (an earlier attempt: nothing ran now)\n" in again.stdout, again.stdout
    assert f"outputs:  {run_dir}\n" in again.stdout, again.stdout
    assert (run_dir / "run.json").read_text() == before
    # a run recorded before the allocator left the step fingerprints: the same
    rec = record_of(run_dir)
    assert rec["attempts"] == 1
    workflow = load_workflow(EXAMPLE, {"size": 128, "chunk": 64, "steps": 120})
    config = load_config(tmp_path / "start/cfg.config")  # what the resume carries
    for name, step in rec["steps"].items():
        step["fingerprint"] = step_fingerprint(workflow.steps[name], rec, config, legacy=True)
        assert step["fingerprint"] != step_fingerprint(workflow.steps[name], rec, config)
    (run_dir / "run.json").write_text(json.dumps(rec))
    before = (run_dir / "run.json").read_text()
    older = submit(*resume[:3], *QUIET)
    assert older.returncode == 0 and nothing in older.stderr, older.stderr
    assert (run_dir / "run.json").read_text() == before
    records = ("run.json", LOCK)  # what each attempt rewrites
    assert {p: p.stat().st_mtime_ns for p in outputs if p.name not in records} == {
        p: t for p, t in outputs.items() if p.name not in records
    }
    # a step's output gone: that step runs again, on a cluster, and the others are skipped
    profiled = rec["steps"]["profile"]["checksums"]
    profile_tasks = rec["steps"]["profile"]["tasks"]
    shutil.rmtree(run_dir / "profile.zarr")
    redo = submit(*resume[:3], *QUIET)
    assert redo.returncode == 0 and nothing not in redo.stderr, redo.stderr
    assert "earlier attempt" not in redo.stdout, redo.stdout
    rec = record_of(run_dir)
    assert rec["attempts"] == 2 and rec["status"] == "completed"
    assert {name for name, step in rec["steps"].items() if "skipped" in step} == {
        "field",
        "diffuse",
    }
    assert rec["steps"]["profile"]["checksums"] == profiled  # the same bits again
    # a step counts its own tasks: as many alone as after the others (mutation audit: a count
    # since the cluster started, not since the step did, went unseen)
    assert rec["steps"]["profile"]["tasks"] == profile_tasks
    # a run started with --no-report is resumed without one, as run_workflow's report=None
    # promises (mutation audit: a resume that always wrote a report went unseen)
    assert rec["performance_report"] is None and not list(run_dir.glob("performance-report*"))


def test_sigkill_mid_iteration_then_resume_is_bit_identical(tmp_path: Path) -> None:
    args = [
        *QUIET,
        "--set",
        "params.size=256",
        "--set",
        "params.chunk=128",
        "--set",
        "params.steps=600",  # SIGKILL lands within ms of the checkpoint at 300: mid-way
        "--set",
        "distributed.sync_interval=100",
    ]
    reference_dir = tmp_path / "reference"
    # the reference also shows --no-report: no report, and outputs identical to a run with one
    done = submit(str(EXAMPLE), "--run-dir", str(reference_dir), "--no-report", *args)
    assert done.returncode == 0, done.stderr
    assert "report:" not in done.stdout
    reference = record_of(reference_dir)
    assert reference["performance_report"] is None
    assert not (reference_dir / "performance-report.html").exists()

    run_dir = tmp_path / "killed"
    proc = start_in_own_group(run_dir, args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seen = wait_for_checkpoint(proc, run_dir, 300)
    assert 300 <= seen < 600, f"the run should be mid-way, checkpoint at {seen}"
    os.killpg(proc.pid, signal.SIGKILL)  # the submit process and its whole cluster
    proc.wait(timeout=30)
    killed_at = json.loads((run_dir / ".checkpoints/diffuse/checkpoint.json").read_text())["step"]
    assert record_of(run_dir)["status"] == "running"  # nobody could mark it
    damaged = {
        kind: shutil.copytree(run_dir, tmp_path / f"damaged-{kind}", symlinks=True)
        for kind in ("chunk-gone", "chunk-garbled", "output-gone")
    }

    resumed = submit(str(EXAMPLE), "--resume", str(run_dir), *args)
    assert resumed.returncode == 0, resumed.stderr
    rec = record_of(run_dir)
    assert rec["status"] == "completed" and rec["attempts"] == 2
    assert "skipped" in rec["steps"]["field"]
    diffuse = rec["steps"]["diffuse"]
    # restarted from the last committed checkpoint: at most one sync interval is redone
    assert diffuse["resumed_from_step"] == killed_at
    assert (run_dir / "performance-report.html").exists()
    for name in ("diffuse", "profile"):
        assert rec["steps"][name]["checksums"] == reference["steps"][name]["checksums"], name

    # a damaged checkpoint is said and the step runs from 0: a deleted chunk (zarr reads it
    # as NaN) completed with NaN fields, a garbled one failed every resume alike, a deleted
    # output lost the records before the checkpoint; all three with exit 0 or the same 1
    for kind, copy in damaged.items():
        state = copy / f".checkpoints/diffuse/state-{killed_at}.zarr"
        chunk = next(p for p in sorted(state.rglob("c/*/*")) if p.is_file())
        if kind == "chunk-gone":
            chunk.unlink()
        elif kind == "chunk-garbled":
            chunk.write_bytes(os.urandom(100))
        else:
            shutil.rmtree(copy / "history.zarr")
    # the three resumes at once: each starts its own cluster, partly waiting (33.1 -> 28.7 s)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    resumes = {
        kind: subprocess.Popen(
            [str(EXE), "submit", "--resume", str(copy), *QUIET, "--no-report"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for kind, copy in damaged.items()
    }
    for kind, copy in damaged.items():
        _, stderr = resumes[kind].communicate(timeout=300)
        assert resumes[kind].returncode == 0, (kind, stderr)
        said = f"diffuse: the checkpoint at step {killed_at:,} is damaged ("
        assert said in stderr, (kind, stderr)
        diffuse = record_of(copy)["steps"]["diffuse"]
        assert "resumed_from_step" not in diffuse and diffuse["checkpoint_damaged"], kind
        for name in ("diffuse", "profile"):
            assert (
                record_of(copy)["steps"][name]["checksums"] == reference["steps"][name]["checksums"]
            ), (kind, name)


def test_a_taken_dashboard_port_is_one_clear_line(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        args = ["--set", f"cluster.dashboard_address=127.0.0.1:{port}", "--no-report", *SMALL]
        result = submit(str(EXAMPLE), "--run-dir", str(tmp_path / "run"), *args)
    assert result.returncode == 0, result.stderr
    # Dask serves the dashboard on another port; we say which and why, without its warning
    assert f"/status (port {port} was taken: another cluster running?)" in result.stderr
    assert "UserWarning" not in result.stderr and "warnings.warn" not in result.stderr


def test_without_a_terminal_a_long_step_reports_its_progress(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ProgressNews, "every", 0.0)  # a line per checkpoint, not per minute
    lines: list[str] = []
    overrides = [*QUIET[1:], *SMALL[1::2], "distributed.sync_interval=40"]
    rec = run_workflow(
        EXAMPLE, overrides=overrides, run_dir=tmp_path / "run", report=False, announce=lines.append
    )
    assert rec["status"] == "completed"
    news = [line for line in lines if line.startswith("diffuse: step ")]
    # every checkpoint but the last (that one ends the step)
    assert [line.split(" (")[0] for line in news] == [
        "diffuse: step 40 of 120",
        "diffuse: step 80 of 120",
    ]
    assert re.fullmatch(
        r"diffuse: step 80 of 120 \(66\.7 %\), [\d,]+ steps/min, about \d+ s left", news[-1]
    ), news


def test_durations_read_as_people_say_them() -> None:
    year = 365.25 * 86400
    assert [_duration(s) for s in (45, 720, 12_600, 181_440, 3.4 * year, 1.2e3 * year)] == [
        "45 s",
        "12 min",
        "3.5 h",
        "2.1 days",
        "3.4 years",
        "1,200 years",
    ]


def test_a_step_refused_while_it_runs_is_recorded_rejected_not_running(tmp_path: Path) -> None:
    """A ConfigError raised inside a step of a first run (an op refusing its input): the step
    had stayed "running" beside the run's "rejected"; it is "rejected", with the message."""
    wf = tmp_path / "refuses.yaml"
    wf.write_text(FAILING_WORKFLOW.replace("user_ops:explode", "user_ops:refuses"))
    wf.write_text(wf.read_text().replace("    with: {message: kaboom}\n", ""))
    run_dir = tmp_path / "run"
    with pytest.raises(ConfigError, match="the field is not what this op takes"):
        run_workflow(wf, overrides=[QUIET[1]], run_dir=run_dir)
    rec = record_of(run_dir)
    assert rec["status"] == "rejected"
    assert rec["steps"]["field"]["status"] == "completed"
    bad = rec["steps"]["bad"]
    assert bad["status"] == "rejected" and "the field is not what this op takes" in bad["error"]
