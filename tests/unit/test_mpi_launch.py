"""The launching side of the mpi backend, without launching: command lines, env, errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from openclaw_dask.config import Config, ConfigError, load_config
from openclaw_dask.runtime.mpi_launch import (
    MPI_SCHEDULER_ENV,
    find_mpirun,
    format_command,
    launch_env,
    mpi_job_scheduler,
    mpirun_command,
)
from openclaw_dask.translate import ClusterPlan, plan_cluster
from openclaw_dask.workflows.mpi_run import client_args
from tests.conftest import make_hardware


def mpi_plan(*sets: str) -> tuple[Config, ClusterPlan]:
    config = load_config(None, ["cluster.backend=mpi", *sets], use_search_path=False)
    return config, plan_cluster(config, make_hardware(cores=4), strict=False)


def test_interface_defaults_to_loopback_and_the_plan_ends_ranks_itself() -> None:
    _, plan = mpi_plan()
    assert plan.cluster_kwargs["interface"] == "lo"
    assert plan.cluster_kwargs["exit"] is False
    assert any("cluster.interface unset" in note for note in plan.notes)
    _, plan = mpi_plan("cluster.interface=eth0")
    assert plan.cluster_kwargs["interface"] == "eth0"
    assert not any("cluster.interface unset" in note for note in plan.notes)


def test_root_needs_open_mpis_permission_only_as_root() -> None:
    assert launch_env(uid=0) == {
        "OMPI_ALLOW_RUN_AS_ROOT": "1",
        "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
    }
    assert launch_env(uid=1000) == {}


def test_command_line_is_plan_then_client_and_copy_pasteable() -> None:
    _, plan = mpi_plan()
    command = mpirun_command(plan, "/tmp/p.json", ["submit", "wf.yaml", "--set", "a.b=c d"])
    assert command[: len(plan.launch_command or [])] == plan.launch_command
    assert command[-6:] == ["/tmp/p.json", "--", "submit", "wf.yaml", "--set", "a.b=c d"]
    line = format_command(command, {"OMPI_ALLOW_RUN_AS_ROOT": "1"})
    assert line.startswith("OMPI_ALLOW_RUN_AS_ROOT=1 mpirun -np ")
    assert line.endswith("--set 'a.b=c d'")


def test_client_args_carry_config_sets_and_backend() -> None:
    args = client_args("wf.yaml", "my.config", ["params.x=1"], "mpi")
    assert args[0] == "submit" and args[1].endswith("/wf.yaml")
    assert args[2] == "--config" and args[3].endswith("/my.config")
    assert args[4:] == ["--set", "params.x=1", "--backend", "mpi"]
    # submit --no-report reaches rank 1, which is the process that would write the report
    assert client_args("wf.yaml", None, [], None, report=False)[2:] == ["--no-report"]


def test_missing_mpirun_names_the_backend(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    config, plan = mpi_plan()
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ConfigError, match=r"cluster\.backend: mpi launches through 'mpirun'"):
        find_mpirun(plan, config)
    with pytest.raises(ConfigError, match=r"^--backend mpi: cluster\.backend"):
        find_mpirun(plan, config, forced="mpi")


def test_inside_a_launch_only_with_the_address(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(MPI_SCHEDULER_ENV, raising=False)
    assert mpi_job_scheduler() is None
    monkeypatch.setenv(MPI_SCHEDULER_ENV, "tcp://127.0.0.1:1234")
    assert mpi_job_scheduler() == "tcp://127.0.0.1:1234"


def _record(run_dir: Path, status: str, step_status: str, error: str | None = None) -> None:
    import json

    record: dict = {"status": status, "steps": {"diffuse": {"op": "example.diffuse"}}}
    record["steps"]["diffuse"]["status"] = step_status
    if error:
        record["error"] = {"step": "diffuse", "op": "example.diffuse", "message": error}
    (run_dir / "run.json").write_text(json.dumps(record))


def test_rank_1s_recorded_error_comes_back_as_our_own_type_with_the_run_directory(
    tmp_path: Path,
) -> None:
    """The launcher words a failure as a local run does: the memory hint needs the type."""
    from openclaw_dask.runtime.oom import WorkersOutOfMemoryError
    from openclaw_dask.workflows.mpi_run import _outcome
    from openclaw_dask.workflows.runner import StepFailedError

    _record(tmp_path, "failed", "failed", "WorkersOutOfMemoryError: workers ran out of memory")
    with pytest.raises(StepFailedError) as info:
        _outcome(tmp_path, 1, "mpirun -np 4 ...")
    assert isinstance(info.value.error, WorkersOutOfMemoryError)
    assert str(info.value.error) == "workers ran out of memory"
    assert info.value.run_dir == tmp_path
    _record(tmp_path, "failed", "failed", "KeyError: 'x'")
    with pytest.raises(StepFailedError) as info:
        _outcome(tmp_path, 1, "mpirun")
    assert type(info.value.error) is KeyError


@pytest.mark.parametrize("written", ["running", "interrupted"])
def test_a_rank_killed_by_a_signal_fails_the_step_whatever_rank_1_wrote(
    tmp_path: Path, written: str
) -> None:
    """mpirun stops rank 1 when a worker rank dies; rank 1 then writes interrupted, or nothing
    (still running). Exit code 137 is the SIGKILL of a rank: a failure, not an interrupt."""
    import json

    from openclaw_dask.workflows.mpi_run import MpiRunError, _outcome
    from openclaw_dask.workflows.runner import StepFailedError

    _record(tmp_path, written, written)
    with pytest.raises(StepFailedError) as info:
        _outcome(tmp_path, 137, "mpirun -np 4 ...")
    assert isinstance(info.value.error, MpiRunError) and info.value.step == "diffuse"
    assert "(a rank ended on signal 9, SIGKILL: killed, or out of memory)" in str(info.value)
    record = json.loads((tmp_path / "run.json").read_text())
    assert record["status"] == "failed" and record["steps"]["diffuse"]["status"] == "failed"
    assert record["mpirun"] == "mpirun -np 4 ..."
    assert record["error"]["message"].startswith("MpiRunError: mpirun exited with code 137")
    _record(tmp_path, "running", "running")
    with pytest.raises(KeyboardInterrupt):  # mpirun forwarded a SIGTERM: an interrupt
        _outcome(tmp_path, 143, "mpirun")
    assert json.loads((tmp_path / "run.json").read_text())["status"] == "interrupted"


#: Stands in for mpirun: starts a "rank" naming the plan file too, forwards SIGTERM to it.
FAKE_MPIRUN = """
import signal, subprocess, sys, time
rank = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", sys.argv[1]])
def end(*_):
    rank.terminate()
    open(sys.argv[1] + ".ended", "w").write(str(rank.wait()))
    sys.exit(143)
signal.signal(signal.SIGTERM, end)
print("up", flush=True)
time.sleep(60)
"""


def test_stop_finds_mpirun_and_its_ranks_by_the_plan_file(tmp_path: Path) -> None:
    """An interrupt inside Popen leaves no handle on mpirun: stop() finds it (this process's
    child naming the plan file) and waits for its ranks, which name the plan file too."""
    import subprocess
    import sys

    import psutil

    from openclaw_dask.runtime.mpi_launch import stop

    plan_file = tmp_path / "plan.json"
    mpirun = subprocess.Popen(
        [sys.executable, "-c", FAKE_MPIRUN, str(plan_file)], stdout=subprocess.PIPE, text=True
    )
    assert mpirun.stdout is not None and mpirun.stdout.readline() == "up\n"
    (rank,) = psutil.Process(mpirun.pid).children()
    stop(None, plan_file)  # reaps mpirun: its own wait then sees nothing
    assert mpirun.wait(timeout=5) == 0 and not rank.is_running()
    # asked to end (SIGTERM forwarded to the rank), not killed
    assert Path(f"{plan_file}.ended").read_text() == "-15"


def test_a_launch_from_inside_an_mpirun_is_bad_input(monkeypatch: pytest.MonkeyPatch) -> None:
    """`mpirun -np 3 openclaw-dask submit --backend mpi` (a batch script's first guess) had each
    rank start an mpirun of its own: three Open MPI banners ("does not support recursive
    calls"), exit 1."""
    config, plan = mpi_plan()
    monkeypatch.setenv("OMPI_UNIVERSE_SIZE", "3")
    with pytest.raises(ConfigError) as info:
        find_mpirun(plan, config, forced="mpi")
    (problem,) = info.value.problems
    assert problem.origin == "--backend mpi"
    assert "already runs under one (OMPI_UNIVERSE_SIZE is set)" in problem.message
    assert "python -m openclaw_dask.cli.mpi_entry plan.json -- submit WORKFLOW" in problem.message
