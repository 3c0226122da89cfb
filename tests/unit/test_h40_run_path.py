"""The run path's decisions that need no cluster: the mpi launch's outcome and clean-up, the
run directory's lock and refusals, resume's carried inputs, the step fingerprint, the context
an op gets, strict JSON and the zarr helpers (mutation audit of the workflow engine's run
path: each test names the mutant that survived without it)."""

from __future__ import annotations

import errno
import io
import json
import math
import os
from pathlib import Path

import dask.array as da
import numpy as np
import pytest
import xarray as xr
from rich.console import Console

from openclaw_dask.atomicfile import atomic_write_text
from openclaw_dask.config import Config, ConfigError, load_config
from openclaw_dask.translate import plan_cluster
from openclaw_dask.workflows import (
    context,
    lock,
    mpi_run,
    progress,
    resume,
    rundir,
    runner,
    strictjson,
    zarrio,
)
from openclaw_dask.workflows.context import StepContext
from openclaw_dask.workflows.reductions import sum_rows_first
from openclaw_dask.workflows.spec import Workflow, load_workflow
from tests.conftest import make_hardware

TWO_STEPS = (
    "name: two\nsteps:\n"
    "  field:\n    op: example.field\n    with: {size: 32, chunk: 16}\n"
    "    outputs: [field.zarr]\n"
    "  double:\n    op: tests.integration.user_ops:double\n    needs: [field]\n"
    "    with: {factor: 2.0}\n    outputs: [doubled.zarr]\n"
)


def _config(*sets: str) -> Config:
    return load_config(None, list(sets), use_search_path=False)


def _two_steps(tmp_path: Path, text: str = TWO_STEPS) -> Workflow:
    wf = tmp_path / "two.yaml"
    wf.write_text(text)
    return load_workflow(wf)


# -- mpi_run ---------------------------------------------------------------------------------


def test_a_rank_s_signal_is_named_with_what_it_usually_means() -> None:
    """(mutants: SIGSEGV's "a crash" dropped; 128 read as signal 0)"""
    assert mpi_run._signal_note(139) == " (a rank ended on signal 11, SIGSEGV: a crash)"
    assert mpi_run._signal_note(134) == " (a rank ended on signal 6, SIGABRT)"
    assert mpi_run._signal_note(128) == ""
    assert mpi_run._signal_note(1) == ""
    assert mpi_run._signal_note(128 + 200) == ""  # no such signal


def test_the_dry_run_s_mpirun_line_puts_a_loaded_config_after_the_workflow() -> None:
    """(mutant: --config CONFIG inserted before the workflow file, a line submit would refuse)"""
    config = load_config(None, ["cluster.backend=mpi"], use_search_path=False)
    plan = plan_cluster(config, make_hardware(cores=4), strict=False)
    line = mpi_run.mpirun_line(plan, "wf.yaml", config, ["params.x=1"], None)
    workflow = str(Path("wf.yaml").resolve())
    assert f"-- submit {workflow} --config CONFIG --set params.x=1 --run-dir RUN_DIR" in line


def test_the_outermost_missing_folder_is_the_first_one_made(tmp_path: Path) -> None:
    """(mutant: the walk went on past an existing folder, to the root's missing nothing)"""
    assert mpi_run._outermost_missing(tmp_path / "a" / "b" / "c") == tmp_path / "a"
    assert mpi_run._outermost_missing(tmp_path) is None
    (tmp_path / "a").mkdir()
    assert mpi_run._outermost_missing(tmp_path / "a" / "b" / "c") == tmp_path / "a" / "b"


def test_an_interrupt_before_rank_1_wrote_anything_removes_only_what_was_made_for_it(
    tmp_path: Path,
) -> None:
    """A Ctrl-C while the ranks import: the run directory and the folders made for it go, up
    to ``made``; a folder that was there before stays. With run.json written, everything stays
    and the interrupt names the run to resume (mutants: the removal stopping at the first
    folder, and the resume hint given for a directory without a record)."""
    made = tmp_path / "runs"
    directory = made / "wf" / "20261205-010101"
    directory.mkdir(parents=True)
    (directory / lock.LOCK).write_text("")
    exc = mpi_run._interrupted(KeyboardInterrupt(), directory, made)
    assert not hasattr(exc, "run_dir")
    assert not made.exists() and tmp_path.is_dir()
    directory.mkdir(parents=True)
    (directory / runner.RUN_RECORD).write_text("{}")
    exc = mpi_run._interrupted(KeyboardInterrupt(), directory, made)
    assert exc.run_dir == directory  # type: ignore[attr-defined]
    assert (directory / runner.RUN_RECORD).is_file()


def _record(run_dir: Path, status: str, step_status: str) -> None:
    record = {"status": status, "steps": {"diffuse": {"op": "example.diffuse"}}}
    record["steps"]["diffuse"]["status"] = step_status
    (run_dir / runner.RUN_RECORD).write_text(json.dumps(record))


def test_a_run_that_finished_before_the_interrupt_stays_completed(tmp_path: Path) -> None:
    """mpirun ending on a SIGTERM after rank 1 wrote its completed record: the record keeps
    "completed", and a later crash code does not rewrite a finished run as failed (mutants:
    any record marked interrupted, any record marked failed)."""
    _record(tmp_path, "completed", "completed")
    record = mpi_run._update_record(tmp_path, "mpirun -np 4", interrupted=True)
    assert record["status"] == "completed" and record["mpirun"] == "mpirun -np 4"
    assert record["steps"]["diffuse"]["status"] == "completed"
    with pytest.raises(mpi_run.MpiRunError):
        mpi_run._outcome(tmp_path, 137, "mpirun")
    saved = json.loads((tmp_path / runner.RUN_RECORD).read_text())
    assert saved["status"] == "completed" and "error" not in saved


def test_exit_0_without_a_completed_record_is_no_success(tmp_path: Path) -> None:
    """(mutant: exit code 0 alone returned the record, an empty one when rank 1 wrote none)"""
    with pytest.raises(mpi_run.MpiRunError, match="exited with code 0"):
        mpi_run._outcome(tmp_path, 0, "mpirun")
    _record(tmp_path, "running", "running")
    with pytest.raises(runner.StepFailedError) as info:
        mpi_run._outcome(tmp_path, 0, "mpirun")
    assert info.value.step == "diffuse"


def test_a_recorded_error_that_is_no_exception_type_comes_back_whole() -> None:
    """(mutants: a message without ': ' made an empty exception of its first word; a builtin
    that is no exception class was called with the message)"""
    assert repr(mpi_run._error({"message": "ValueError"})) == "RuntimeError('ValueError')"
    assert repr(mpi_run._error({"message": "print: x"})) == "RuntimeError('print: x')"
    kept = mpi_run._error({"message": "KeyboardInterrupt: x"})  # not an Exception
    assert repr(kept) == "RuntimeError('KeyboardInterrupt: x')"
    # a type that needs more arguments than a message
    needs = mpi_run._error({"message": "UnicodeDecodeError: 'utf-8' codec can't decode"})
    assert type(needs) is RuntimeError
    assert repr(mpi_run._error({"message": "OSError: disk full"})) == "OSError('disk full')"


# -- the run directory's lock ----------------------------------------------------------------


def test_the_lock_names_its_holder_in_one_line_and_is_free_once_closed(tmp_path: Path) -> None:
    """(mutants: the file not emptied for the new holder, so the refusal named every earlier
    one; the refusal saying "another process" instead; holder() of a free directory)"""
    assert lock.holder(tmp_path) is None  # no lock file yet
    for _ in range(2):
        lock.hold(tmp_path).close()
    assert lock.holder(tmp_path) is None  # the file stays, unlocked
    held = lock.hold(tmp_path)
    try:
        line = lock.holder(tmp_path)
        assert line is not None and line.startswith("pid ") and "\n" not in line
        with pytest.raises(ConfigError, match=rf"\({line}\)"):
            lock.hold(tmp_path)
    finally:
        held.close()


def test_a_new_run_is_refused_a_directory_another_run_holds_by_its_holder(tmp_path: Path) -> None:
    """(mutant: the holder check dropped: the directory was then refused as "not empty", which
    tells the user to pass --resume into a run that is running)"""
    workflow = _two_steps(tmp_path)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    held = lock.hold(run_dir)
    try:
        with pytest.raises(ConfigError, match="another openclaw-dask run is using"):
            rundir._new_run_dir(workflow, run_dir)
    finally:
        held.close()


def test_an_empty_run_dir_is_taken_and_a_blank_one_refused(tmp_path: Path) -> None:
    """(mutants: an existing empty --run-dir refused as not empty; "  " taken as a folder)"""
    workflow = _two_steps(tmp_path)
    (tmp_path / "empty").mkdir()
    assert rundir._new_run_dir(workflow, tmp_path / "empty") == tmp_path / "empty"
    with pytest.raises(ConfigError, match="expected a folder, got an empty path"):
        rundir._new_run_dir(workflow, "  ")


def test_runs_under_a_file_are_one_refusal_not_a_hang(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file named ``runs`` where the default run directories go: one readable refusal
    (mutant: a folder that cannot be made was taken as one another run claimed: the search
    for a free name never ended)."""
    workflow = _two_steps(tmp_path)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").write_text("not a folder")
    with pytest.raises(ConfigError, match="cannot write a run directory here"):
        rundir._new_run_dir(workflow, None)


def test_a_refused_first_run_leaves_the_user_s_folder_and_no_lock(tmp_path: Path) -> None:
    """(mutants: the user's own empty --run-dir removed too; the lock file left behind, which
    made the folder "not empty" for the next run)"""
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / runner.RUN_RECORD).write_text("{}")
    lock.hold(folder).close()
    rundir._discard(folder, made=False)
    assert folder.is_dir() and not any(folder.iterdir())
    rundir._discard(folder, made=True)
    assert not folder.exists()


# -- what a run record and its resume carry --------------------------------------------------


def test_a_params_item_without_a_value_is_left_to_the_config_s_check() -> None:
    """(mutant: ``params.size`` without '=' became the parameter set to nothing)"""
    assert runner.split_overrides(["params.size", "params.x=1", "a.b=2"]) == (
        ["params.size", "a.b=2"],
        {"x": "1"},
    )


def test_a_resumed_attempt_writes_the_plain_report_when_no_earlier_one_did(tmp_path: Path) -> None:
    """A first attempt interrupted before its report was written: the resume's report is the
    plain one (mutant: every resumed attempt wrote performance-report-N.html)."""
    assert runner.report_path(tmp_path, 2) == (tmp_path / "performance-report.html").resolve()
    (tmp_path / "performance-report.html").write_text("")
    assert runner.report_path(tmp_path, 3).name == "performance-report-3.html"


def test_a_checkpoint_without_its_state_store_is_none(tmp_path: Path) -> None:
    """(mutants: a checkpoint.json whose store is gone was continued from; one naming no store
    failed the resume with a TypeError)"""
    saved = {"step": 4, "store": "state-4.zarr", "extents": {"time": 12}}
    (tmp_path / "checkpoint.json").write_text(json.dumps(saved))
    assert runner.read_checkpoint(tmp_path) is None
    (tmp_path / "state-4.zarr").mkdir()
    assert runner.read_checkpoint(tmp_path) == saved
    # a damaged one (no store named, half written): none, not a crash of the resume
    (tmp_path / "checkpoint.json").write_text(json.dumps({"step": 4, "store": None}))
    assert runner.read_checkpoint(tmp_path) is None
    # read as the resume reads it: a store outside the folder, counts that are not numbers
    (tmp_path / "inner").mkdir()
    (tmp_path / "inner" / "checkpoint.json").write_text(json.dumps({**saved, "store": "../x.zarr"}))
    (tmp_path / "x.zarr").mkdir()
    assert runner.read_checkpoint(tmp_path / "inner") is None
    (tmp_path / "checkpoint.json").write_text(json.dumps({**saved, "extents": {"time": "12"}}))
    assert runner.read_checkpoint(tmp_path) is None
    (tmp_path / "checkpoint.json").write_text('{"step": 4, "sto')
    assert runner.read_checkpoint(tmp_path) is None


def test_the_step_fingerprint_follows_the_outputs_and_not_the_run_only_config(
    tmp_path: Path,
) -> None:
    """A step renamed its output is another step; a resume on another allocator or transport
    compression is the same run (mutants: outputs out of the fingerprint; the full config
    fingerprint, which re-ran every completed step after an allocator change)."""
    workflow = _two_steps(tmp_path)
    record: dict = {"steps": {}}
    step = workflow.steps["field"]
    plain = runner.step_fingerprint(step, record, _config())
    other_allocator = _config("memory.allocator=jemalloc", "distributed.compression=lz4")
    assert runner.step_fingerprint(step, record, other_allocator) == plain
    assert runner.step_fingerprint(step, record, _config("distributed.batch_size=3")) != plain
    double = runner.step_fingerprint(workflow.steps["double"], record, _config())
    renamed = _two_steps(tmp_path, TWO_STEPS.replace("[doubled.zarr]", "[other.zarr]"))
    assert runner.step_fingerprint(renamed.steps["double"], record, _config()) != double


def test_a_step_recorded_with_the_older_fingerprint_is_still_the_same_step(
    tmp_path: Path,
) -> None:
    """Runs recorded before the allocator left the result config carry the full config's
    fingerprint: their resume still skips the step (mutant: the legacy fingerprint refused)."""
    workflow = _two_steps(tmp_path)
    config = _config("memory.allocator=jemalloc")
    step, record = workflow.steps["field"], {"steps": {}}
    legacy = runner.step_fingerprint(step, record, config, legacy=True)
    now = runner.step_fingerprint(step, record, config)
    assert legacy != now
    assert runner.same_step(step, {"fingerprint": legacy}, now, record, config)
    assert not runner.same_step(step, {"fingerprint": "0" * 16}, now, record, config)


def test_a_user_op_recorded_before_code_was_recorded_has_not_changed(tmp_path: Path) -> None:
    """(mutant: a record without ``code`` read as changed, which re-ran every user op's step
    of a run made before the code was recorded)"""
    step = _two_steps(tmp_path).steps["double"]
    assert step.info.code is not None
    assert not runner.code_changed(step, {})
    assert runner.code_changed(step, {"code": "def double(): ..."})
    assert not runner.code_changed(step, {"code": step.info.code})


def _completed(
    workflow: Workflow, config: Config, run_dir: Path, status: str = "completed"
) -> dict:
    """A record of ``workflow`` with every step completed, its outputs there as recorded."""
    record: dict = {"status": status, "steps": {}}
    for name in workflow.order:
        step = workflow.steps[name]
        for output in step.outputs:
            (run_dir / output).mkdir()
            (run_dir / output / "zarr.json").write_text("{}")
        record["steps"][name] = {
            "status": "completed",
            "fingerprint": runner.step_fingerprint(step, record, config),
            "checksums": {"temperature": name},
            "files": zarrio.manifest(run_dir, [run_dir / o for o in step.outputs]),
        }
        if step.info.code is not None:
            record["steps"][name]["code"] = step.info.code
    return record


def test_only_a_completed_run_has_nothing_left(tmp_path: Path) -> None:
    """An attempt interrupted after its last step but before it said "completed": the resume
    runs (mutant: nothing_left without the run's status)."""
    workflow, config = _two_steps(tmp_path), _config()
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    record = _completed(workflow, config, run_dir, status="interrupted")
    assert runner.skipped_steps(workflow, config, record, run_dir) == {"field", "double"}
    assert not runner.nothing_left(workflow, config, record, run_dir)
    assert runner.nothing_left(workflow, config, {**record, "status": "completed"}, run_dir)


def test_a_step_after_one_that_runs_again_is_not_sure_to_be_skipped(tmp_path: Path) -> None:
    """(mutant: skipped_steps without its needs: a step whose input runs again counted as
    skipped, so its values went unchecked and the run said nothing was left)"""
    workflow, config = _two_steps(tmp_path), _config()
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    record = _completed(workflow, config, run_dir)
    (run_dir / "field.zarr/zarr.json").unlink()
    assert runner.skipped_steps(workflow, config, record, run_dir) == set()
    assert not runner.nothing_left(workflow, config, record, run_dir)


# -- resume ----------------------------------------------------------------------------------


def _recorded(tmp_path: Path) -> dict:
    config_file = tmp_path / "recorded.config"
    config_file.write_text("distributed:\n  batch_size: 2\n")
    return {
        "workflow": {
            "name": "two",
            "params": {"size": 64, "seed": 3},
            "param_sources": {"size": "--set", "seed": "defaults"},
        },
        "config": {
            "file": str(config_file),
            "values": {"distributed": {"batch_size": 2, "sync_interval": 7}},
            "sources": {"distributed.sync_interval": "--set", "distributed.batch_size": "file"},
        },
    }


def test_a_resume_carries_what_was_set_and_lets_what_is_given_now_win(tmp_path: Path) -> None:
    """(mutants: a given --config replaced by the recorded one; every recorded value carried as
    if set; a key given now carried too, and then refused as given twice; another workflow's
    file taken)"""
    wf = tmp_path / "two.yaml"
    wf.write_text(TWO_STEPS)
    record = _recorded(tmp_path)
    config, items = resume.carried_inputs(record, tmp_path, wf, None, [])
    assert config == record["config"]["file"]
    assert items == ["params.size=64", "distributed.sync_interval=7"]
    mine = str(tmp_path / "mine.config")
    config, items = resume.carried_inputs(record, tmp_path, wf, mine, ["params.size=64"])
    assert config == mine
    assert items == ["distributed.sync_interval=7", "params.size=64"]
    other = tmp_path / "three.yaml"
    other.write_text(TWO_STEPS.replace("name: two\n", "name: three\n"))
    with pytest.raises(ConfigError, match="--resume continues that workflow, not 'three'"):
        resume.carried_inputs(record, tmp_path, other, None, [])


def test_a_key_new_since_the_recorded_run_is_no_difference(tmp_path: Path) -> None:
    """A run recorded by an older version lacks keys added since, and its versions lack a
    package added since: neither is a reason to refuse or a change to say (mutants: a missing
    key compared as null; a missing package said as changed from None)."""
    workflow = _two_steps(tmp_path)
    config = _config()
    record = {"workflow": {"params": {}}, "config": {"values": config.to_nested()}}
    assert resume.resume_problems(record, workflow, config, {}) == []
    del record["config"]["values"]["distributed"]["batch_size"]
    assert resume.resume_problems(record, workflow, config, {}) == []
    assert (
        resume.software_changes({"versions": {"numpy": "2.0"}}, {"numpy": "2.0", "new": "1"}) == []
    )


def test_a_param_given_again_is_compared_as_json_reads_it(tmp_path: Path) -> None:
    """A list parameter comes back from run.json as a list; the same value given again as a
    tuple-valued default is the same (mutant: compared with ==)."""
    workflow = _two_steps(tmp_path)
    workflow.values["shape"] = (2, 3)
    record = {"workflow": {"params": {"shape": [2, 3]}}, "config": {"values": {}}}
    assert resume.resume_problems(record, workflow, _config(), {"shape": "[2, 3]"}) == []


def test_resume_without_a_workflow_refuses_a_recorded_file_that_is_gone(tmp_path: Path) -> None:
    """(mutant: the recorded path taken whether or not the file is still there)"""
    record = {"workflow": {"file": str(tmp_path / "gone.yaml")}}
    with pytest.raises(ConfigError, match="is not there any more"):
        resume.recorded_workflow(record, tmp_path)
    # the copy the run keeps of it is named, with the command that resumes from it (the
    # message had said only "give it", the author's folder deleted)
    (tmp_path / ".source").mkdir()
    (tmp_path / ".source/gone.yaml").write_text("name: gone\n")
    record["workflow"]["copies"] = [".source/gone.yaml", ".source/ops.py"]
    with pytest.raises(ConfigError) as refused:
        resume.recorded_workflow(record, tmp_path)
    kept = tmp_path / ".source/gone.yaml"
    assert str(refused.value).endswith(
        f"; the copy its last attempt ran, kept with the run: `openclaw-dask submit {kept} "
        f"--resume {tmp_path}`"
    )
    kept.unlink()  # a copy gone too is not offered
    with pytest.raises(ConfigError, match=r"--resume \S+`$"):
        resume.recorded_workflow(record, tmp_path)


# -- what an op gets -------------------------------------------------------------------------


def test_an_input_of_a_step_that_wrote_no_dataset_says_so(tmp_path: Path) -> None:
    """(mutants: a step with no datasets asked for its only one fell into StopIteration; an
    unknown output name returned nothing readable)"""
    ds = xr.Dataset({"t": ("x", np.zeros(2))})
    ctx = StepContext("s", _config(), None, tmp_path, {}, {"plots": {}, "field": {"a": ds}})
    with pytest.raises(KeyError, match=r"step 'plots' wrote \[\]; name the output"):
        ctx.input("plots")
    assert ctx.input("field") is ds
    with pytest.raises(KeyError, match=r"wrote \['a'\], not 'b'"):
        ctx.input("field", "b")


def test_output_dir_takes_a_listed_folder_with_or_without_its_slash(tmp_path: Path) -> None:
    """(mutant: the name compared as given, so output_dir("plots") of "plots/" was refused)"""
    ctx = StepContext("s", _config(), None, tmp_path, {}, outputs=("plots/",))
    assert ctx.output_dir("plots") == ctx.output_dir("plots/") == tmp_path / "plots"
    assert (tmp_path / "plots").is_dir()


def test_worker_threads_counts_every_thread_of_every_worker(tmp_path: Path) -> None:
    """(mutant: the workers counted, not their threads)"""
    from distributed import Client, LocalCluster

    with (
        LocalCluster(
            n_workers=2, threads_per_worker=3, processes=False, dashboard_address=":0"
        ) as cluster,
        Client(cluster) as client,
    ):
        ctx = StepContext("s", _config(), client, tmp_path, {})
        assert ctx.worker_threads == 6
    assert StepContext("s", _config(), None, tmp_path, {}).worker_threads == 1


# -- strict JSON, sums, zarr -----------------------------------------------------------------


def test_non_finite_values_in_tuples_and_infinities_are_null() -> None:
    """(mutants: tuples passed through, so json refused the NaN in one; only NaN replaced)"""
    value = {"a": (1.0, math.nan), "b": [math.inf, -math.inf]}
    assert json.loads(strictjson.dumps(value)) == {"a": [1.0, None], "b": [None, None]}


def test_rows_chunked_into_two_column_blocks_give_the_numpy_bits() -> None:
    """(mutants: two column blocks left unmerged; the row sums' column summed all at once)"""
    x = np.random.default_rng(1).standard_normal((3, 40, 30)) * 1e3
    expected = x.sum(axis=-1).sum(axis=-1)
    for chunks in ((1, 10, 15), (3, 7, 30), (2, 40, 10)):
        got = sum_rows_first(da.from_array(x, chunks=chunks)).compute()
        assert got.shape == (3,) and got.tobytes() == expected.tobytes(), chunks


def _store(tmp_path: Path, n: int) -> Path:
    ds = xr.Dataset({"n": ("time", da.arange(n, chunks=4)), "c": ("x", np.zeros(3))})
    path = tmp_path / "s.zarr"
    zarrio.write(ds, path, _config()).compute()
    return path


def test_truncate_cuts_back_and_never_grows_a_store(tmp_path: Path) -> None:
    """(mutants: a store shorter than the cut grown with fill values; a missing store an error)"""
    path = _store(tmp_path, 10)
    zarrio.truncate(path, "time", 12)
    assert zarrio.extent(path, "time") == 10
    zarrio.truncate(path, "time", 6)
    assert zarrio.open_output(path)["n"].values.tolist() == list(range(6))
    assert zarrio.open_output(path)["c"].shape == (3,)  # without the dimension: untouched
    zarrio.truncate(tmp_path / "none.zarr", "time", 1)
    assert zarrio.extent(tmp_path / "none.zarr", "time") == 0


def test_no_codec_writes_uncompressed_chunks(tmp_path: Path) -> None:
    """(mutant: storage.codec none given a Blosc codec all the same)"""
    assert zarrio.compressor(_config("storage.codec=none")) is None
    ds = xr.Dataset({"z": ("x", da.zeros(4096, chunks=4096, dtype="f8"))})
    zarrio.write(ds, tmp_path / "z.zarr", _config("storage.codec=none")).compute()
    assert (tmp_path / "z.zarr/z/c/0").stat().st_size == 4096 * 8


def test_a_full_disk_s_write_names_the_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    """A write to a full disk fails without a file name (the temporary is /dev/full here): the
    error names the file being written (mutant: re-raised as it was, naming nothing)."""
    target = tmp_path / "run.json"
    tmp = target.with_name(f".run.json.tmp{os.getpid()}")
    tmp.symlink_to("/dev/full")
    with pytest.raises(OSError) as info:
        atomic_write_text(target, "{}" * 10_000)
    assert info.value.errno == errno.ENOSPC and info.value.filename == str(target)
    assert not tmp.is_symlink() and not target.exists()


# -- what the run says -----------------------------------------------------------------------


def test_progress_news_says_nothing_before_the_first_step_of_this_attempt() -> None:
    """(mutant: a line at the step it started from, dividing by no steps done)"""
    news = runner.ProgressNews("diffuse", 100, 1000)
    news.every = 0.0
    assert news.line(100) is None and news.line(50) is None
    line = news.line(200)
    assert line is not None and line.startswith("diffuse: step 200 of 1,000 (20.0 %), ")


def test_an_hour_is_said_in_minutes_up_to_ninety_of_them() -> None:
    """(mutant: hours from 60 minutes on)"""
    assert [progress._duration(s) for s in (89, 90, 4000, 5399, 5400)] == [
        "89 s",
        "2 min",
        "67 min",
        "90 min",
        "1.5 h",
    ]


def test_a_step_s_bar_shows_no_count_until_its_graph_gives_the_total() -> None:
    """A step's bar is added before its op builds the graph; its count column said "0/None"
    meanwhile (audit: ``analyse ━━━━ 0/None 0:00:02`` for ~2 s in the climate workflow)."""
    screen = io.StringIO()
    bars = progress.step_progress(console=Console(file=screen, width=100, color_system=None))
    done = bars.add_task("forcing", total=15, completed=15)
    bars.add_task("analyse", total=None)

    def shown() -> list[str]:
        screen.seek(0)
        screen.truncate()
        bars.console.print(bars.get_renderable())
        return screen.getvalue().splitlines()

    forcing, analyse = shown()
    assert "15/15" in forcing
    assert "None" not in analyse and "/" not in analyse, analyse
    assert analyse.split() == ["analyse", "━" * 40, "0:00:00"]  # (the bar pulses)
    bars.update(done, visible=False)
    bars.update(bars.task_ids[1], total=940, completed=7)
    assert "  7/940" in shown()[0]


def test_a_returned_value_s_type_is_named_with_its_package() -> None:
    """(mutant: numpy.ndarray said as ndarray, a name without the package to look it up in)"""
    assert context._type_name(np.zeros(1)) == "numpy.ndarray"
    assert context._type_name(xr.DataArray([1])) == "xarray.DataArray"
    assert context._type_name([]) == "list"


def test_strict_json_writes_other_objects_as_text() -> None:
    """(mutant: ``default=str`` dropped: a path in the record failed the whole save)"""
    assert json.loads(strictjson.dumps({"file": Path("/a/b"), "n": 1})) == {"file": "/a/b", "n": 1}


def test_an_iterative_op_s_records_are_a_dict_of_the_step_s_outputs(tmp_path: Path) -> None:
    """What an iterative op's advance or finish returns is checked before anything is written
    (mutants: a name that is no output of the step written into the run directory all the
    same; a Dataset taken as a dict of outputs named after its variables; the one-output hint
    given for a step with two)."""
    step = _two_steps(tmp_path).steps["double"]
    ds = xr.Dataset({"t": ("time", np.zeros(2))})
    assert context._datasets(None, "X.finish", step) == {}
    assert context._datasets({"doubled": ds}, "X.finish", step) == {"doubled": ds}
    with pytest.raises(TypeError, match=r"X.advance's records returned \['other'\], not outputs"):
        context._datasets({"other": ds}, "X.advance's records", step)
    with pytest.raises(TypeError, match=r"returned xarray.Dataset; expected a dict .*'doubled'"):
        context._datasets(ds, "X.finish", step)
    with pytest.raises(TypeError, match=r"for output 'doubled'; expected an xarray.Dataset \("):
        context._datasets({"doubled": ds["t"]}, "X.finish", step)
    assert context._return_hint(["a"]) == ": return {'a': ds}"
    assert context._return_hint(["a", "b"]) == ""


def test_a_loaded_config_reaches_rank_1_whole_with_only_the_reserved_variables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Config object travels to rank 1 as a file of every resolved key; the OPENCLAW_ config
    variables stay behind (they were applied already, and would be applied again), but the
    reserved ones (OPENCLAW_DEBUG, the state folder) go along (mutant: every OPENCLAW_ variable
    dropped). ``mpirun`` is a stand-in that records what it was given: the point is what
    reaches it, the real launch is tests/integration/test_mpi.py's."""
    import sys

    seen = tmp_path / "seen.json"
    fake = tmp_path / "bin" / "mpirun"
    fake.parent.mkdir()
    fake.write_text(
        f"#!{sys.executable}\nimport json, os, sys\n"
        "args = sys.argv[1:]\n"
        "if args == ['--version']:  # an MPI of its own: left to the launch\n"
        "    sys.exit(print('stand-in mpirun'))\n"
        "config = open(args[args.index('--config') + 1]).read()\n"
        f"json.dump({{'env': dict(os.environ), 'args': args, 'config': config}}, "
        f"open({str(seen)!r}, 'w'))\nsys.exit(2)\n"
    )
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("OPENCLAW_DEBUG", "1")
    monkeypatch.setenv("OPENCLAW_DISTRIBUTED__BATCH_SIZE", "5")
    config = _config("cluster.backend=mpi", "distributed.batch_size=3")
    plan = plan_cluster(config, make_hardware(cores=4), strict=False)
    wf = tmp_path / "two.yaml"
    wf.write_text(TWO_STEPS)
    with pytest.raises(ConfigError, match="refused inside the mpi launch"):
        mpi_run.run_under_mpirun(
            wf, config, [], config, load_workflow(wf), plan, run_dir=tmp_path / "run"
        )
    got = json.loads(seen.read_text())
    assert got["env"]["OPENCLAW_DEBUG"] == "1"
    assert "OPENCLAW_DISTRIBUTED__BATCH_SIZE" not in got["env"]
    assert "batch_size: 3" in got["config"]
    assert got["args"][-2:] == ["--run-dir", str((tmp_path / "run").resolve())]


def test_only_a_cuda_cluster_says_the_built_in_ops_compute_on_the_host(tmp_path: Path) -> None:
    """(mutant: every backend but local, so an mpi or ssh run on CPU nodes was told its
    built-in ops got a CUDA cluster's threads)"""
    config = _config("cluster.backend=mpi")
    plan = plan_cluster(config, make_hardware(cores=4, gpus=1), strict=False)
    assert plan.backend == "mpi"
    assert runner.host_ops_note(_two_steps(tmp_path), plan) == []


def test_deterministic_and_batch_size_are_the_config_s(tmp_path: Path) -> None:
    """(mutants: ctx.deterministic always on; ctx.batch_size read from another key)"""
    assert StepContext("s", _config(), None, tmp_path, {}).deterministic is False
    config = _config("parallel.deterministic_mode=true", "distributed.batch_size=3")
    on = StepContext("s", config, None, tmp_path, {})
    assert on.deterministic is True and on.batch_size == 3


def test_a_run_dir_is_made_empty_and_a_file_there_is_refused_untouched(tmp_path: Path) -> None:
    """(mutants: the write test's probe left in the new directory, which a refused first run
    then could not remove; a file given as --run-dir read as a folder, an OSError traceback)"""
    workflow = _two_steps(tmp_path)
    made = rundir._new_run_dir(workflow, tmp_path / "a" / "new")
    assert made.is_dir() and not any(made.iterdir())
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(ConfigError, match="is a file, not a folder"):
        rundir._new_run_dir(workflow, tmp_path / "notes.txt")
    assert (tmp_path / "notes.txt").read_text() == "mine"


@pytest.mark.parametrize("bad", ["a/b", "", "..", "__zarr"])
def test_a_name_zarr_cannot_hold_as_written_is_refused_before_the_write(bad: str) -> None:
    """A variable ``a/b`` was written as a Zarr group of its own: the run completed and its
    output opened as an empty dataset (exploratory test, 2026-12-05)."""
    from openclaw_dask.workflows.context import _check_dataset

    ok = xr.Dataset({"t": ("y", np.zeros(2))})
    _check_dataset("op", "out", ok)
    for ds in (
        xr.Dataset({bad: ("y", np.zeros(2))}),  # a variable
        xr.Dataset({"t": (bad, np.zeros(2))}),  # a dimension
    ):
        with pytest.raises(TypeError) as info:
            _check_dataset("op", "out", ds)
        assert str(info.value).startswith(
            f"op returned output 'out' with variable or dimension names {bad!r}, which a Zarr "
            "store cannot hold as written"
        )


def test_progress_news_measures_the_rate_over_the_recent_past(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The rate of the last ten minutes, not of the whole attempt: a run that slowed (or a
    slow start) kept the attempt's average long after (an audit's "11 min left" at 26 % and
    again at 37 %)."""
    clock = [0.0]
    monkeypatch.setattr(progress.time, "monotonic", lambda: clock[0])
    news = runner.ProgressNews("simulate", 0, 100_000)
    said = []
    for minute, done in [(1, 10_000), (5, 50_000), (10, 60_000), (15, 65_000), (20, 70_000)]:
        clock[0] = 60.0 * minute
        said.append(news.line(done))
    # the first ten minutes from the start: 10,000 a minute, then 6,000; then the last ten
    assert "10,000 steps/min" in said[0] and "6,000 steps/min" in said[2]
    assert "1,500 steps/min" in said[3] and "about 23 min left" in said[3], said[3]
    assert "1,000 steps/min" in said[4] and "about 30 min left" in said[4], said[4]
