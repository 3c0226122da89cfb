"""Workers lost in an iterative step: a run goes on over losses a checkpoint apart, and ends
the step only when they come again and again with no checkpoint between them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psutil
import pytest
import xarray as xr

from tests.integration.test_workflow_run import QUIET, record_of, submit
from tests.integration.user_ops import DYING_WORKFLOW

#: A death fails its window at once (Dask would otherwise run the task again elsewhere, as it
#: may for a recomputable window); a window of 20 steps; no report to make.
SETS = [
    *QUIET,
    "--no-report",
    "--set",
    "dask.distributed.scheduler.allowed-failures=0",
    "--set",
    "distributed.sync_interval=20",
]


def _run(
    tmp_path: Path, die_at: list[int], deaths: int, hangs: bool = False, sets: list[str] = SETS
) -> tuple[Path, str, int]:
    markers = tmp_path / "markers"
    markers.mkdir(parents=True)
    wf = tmp_path / "dies.yaml"
    text = DYING_WORKFLOW.replace("DIE_AT", str(die_at)).replace("DEATHS", str(deaths))
    text = text.replace("HANGS", str(hangs).lower())
    wf.write_text(text.replace("MARKERS", str(markers)))
    run_dir = tmp_path / "run"
    result = submit(str(wf), "--run-dir", str(run_dir), *sets)
    return run_dir, result.stderr, result.returncode


@pytest.fixture(scope="module")
def whole(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The diffusion's checksums from a run that loses no worker."""
    run_dir, stderr, code = _run(tmp_path_factory.mktemp("whole"), [], 1)
    assert code == 0, stderr
    return record_of(run_dir)["steps"]["diffuse"]["checksums"]


def test_losses_a_checkpoint_apart_never_add_up_to_the_limit(
    tmp_path: Path, whole: dict[str, Any]
) -> None:
    """Four losses, each after the step got further: a run of days on nodes that fail now and
    then had ended at its fourth loss, after three recoveries in all."""
    run_dir, stderr, code = _run(tmp_path / "lossy", [20, 40, 60, 80], 1)
    assert code == 0, stderr
    lossy = record_of(run_dir)["steps"]["diffuse"]
    recoveries = lossy["recoveries"]
    assert [r["from_step"] for r in recoveries] == [20, 40, 60, 80]
    assert stderr.count("(recovery 1 of 3 from it)") == 4, stderr
    smoothed = xr.open_zarr(run_dir / "smoothed.zarr")
    assert smoothed.attrs["steps"] == 100
    assert xr.open_zarr(run_dir / "history.zarr").sizes["time"] == 6
    assert lossy["checksums"] == whole


def test_losses_with_no_checkpoint_between_them_end_the_step(tmp_path: Path) -> None:
    """A worker killed again and again in one window (say for memory) would loop: the fourth
    loss from the same checkpoint ends the step, which keeps that checkpoint for --resume."""
    run_dir, stderr, code = _run(tmp_path, [40], 4)
    assert code == 1, stderr
    assert "(recovery 3 of 3 from it)" in stderr
    assert "workers were lost 4 times with no checkpoint after step 40 (the last: tcp://" in (
        stderr
    )
    rec = record_of(run_dir)
    assert rec["status"] == "failed"
    assert [r["from_step"] for r in rec["steps"]["diffuse"]["recoveries"]] == [40, 40, 40]
    assert "Traceback" not in stderr


def test_a_hung_worker_is_lost_after_the_scheduler_s_worker_ttl(
    tmp_path: Path, whole: dict[str, Any]
) -> None:
    """A worker stopped mid-window (a node stuck in the kernel) answers nothing, so nothing
    fails: the run waits until Dask's scheduler removes it, ``worker-ttl`` after its last
    heartbeat (5 minutes by default, the README says how to set it), then goes on as after a
    death, with the same bits; the stopped process is not left behind."""
    sets = [*SETS, "--set", "dask.distributed.scheduler.worker-ttl=5s"]
    run_dir, stderr, code = _run(tmp_path / "hung", [40], 1, hangs=True, sets=sets)
    assert code == 0, stderr
    hung = record_of(run_dir)["steps"]["diffuse"]
    assert [r["from_step"] for r in hung["recoveries"]] == [40]
    assert hung["checksums"] == whole
    pid = int((tmp_path / "hung/markers/40-0").read_text())
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def test_a_window_run_again_asks_for_keys_of_its_own(tmp_path: Path, whole: dict[str, Any]) -> None:
    """The window run again after a loss built the same graph as the one that failed, and
    Dask answers a key it still holds as erred with the old error at once: the step failed
    with no worker lost (CI, one run in ten: the futures sat in a reference cycle until
    Python collected it). An op that keeps the states it is given keeps those futures for
    the whole run; each attempt computes under keys of its own."""
    markers = tmp_path / "markers"
    markers.mkdir()
    wf = tmp_path / "dies.yaml"
    text = DYING_WORKFLOW.replace("DIE_AT", "[40]").replace("DEATHS", "2")
    text = text.replace("HANGS", "false").replace("MARKERS", str(markers))
    text = text.replace("hangs: false", "hangs: false, linger: 1.0")
    wf.write_text(text.replace("user_ops:DiesInWindows", "user_ops:KeepsItsStates"))
    result = submit(str(wf), "--run-dir", str(tmp_path / "run"), *SETS)
    assert result.returncode == 0, result.stderr
    diffuse = record_of(tmp_path / "run")["steps"]["diffuse"]
    assert [r["from_step"] for r in diffuse["recoveries"]] == [40, 40]
    assert diffuse["checksums"] == whole


@pytest.mark.parametrize("deaths", [1, 4])
def test_a_map_step_that_loses_a_worker_runs_again(
    tmp_path: Path, whole: dict[str, Any], deaths: int
) -> None:
    """A map step's worker dies with an input sent to it: the step runs again from its start,
    with the same bits. Dask does not compute a scattered input again: the climate workflow's
    ``forcing`` failed with "FuturesCancelledError ... already forgotten" and the advice to
    fix the step. Losses again and again end the step. (Dask's own retries stay: a death
    fails at once only because the input is gone, ``allowed-failures`` is the default.)"""
    markers = tmp_path / "markers"
    markers.mkdir()
    wf = tmp_path / "dies.yaml"
    text = DYING_WORKFLOW.replace("DIE_AT", "[]").replace("DEATHS", "1")
    text = text.replace("HANGS", "false").replace("MARKERS", str(markers))
    dies = f"op: tests.integration.user_ops:field_dies\n    with: {{markers: {markers}, "
    wf.write_text(text.replace("op: example.field\n    with: {", f"{dies}deaths: {deaths}, "))
    sets = [*QUIET, "--no-report", "--set", "distributed.sync_interval=20"]
    result = submit(str(wf), "--run-dir", str(tmp_path / "run"), *sets)
    record = record_of(tmp_path / "run")
    field = record["steps"]["field"]
    if deaths > 3:
        assert result.returncode == 1, result.stderr
        assert "workers were lost 4 times in the step (the last: tcp://" in result.stderr
        assert [len(r["lost"]) for r in field["recoveries"]] == [1, 1, 1]
        assert "fix the step" not in result.stderr and "Traceback" not in result.stderr
        return
    assert result.returncode == 0, result.stderr
    assert "field: lost worker tcp://" in result.stderr
    assert "running the step again from its start (recovery 1 of 3)" in result.stderr
    assert [len(r["lost"]) for r in field["recoveries"]] == [1]
    assert record["steps"]["diffuse"]["checksums"] == whole  # from the same field
