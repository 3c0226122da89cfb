"""What ``openclaw-dask submit`` prints when a run fails: bounded, its own, one voice."""

from __future__ import annotations

import json
from pathlib import Path

from openclaw_dask.runtime.cluster import start_cluster
from tests.integration.test_workflow_run import EXAMPLE, QUIET, SMALL, submit
from tests.integration.user_ops import FAILING_WORKFLOW


def test_a_huge_error_message_is_printed_bounded_and_kept_whole_in_run_json(
    tmp_path: Path,
) -> None:
    """A 20 kB message filled ~250 rows of a terminal; run.json keeps it all."""
    wf = tmp_path / "long.yaml"
    text = FAILING_WORKFLOW.replace("user_ops:explode", "user_ops:explode_at_length")
    wf.write_text(text.replace("{message: kaboom}", "{length: 20000}"))
    run_dir = tmp_path / "run"
    result = submit(str(wf), "--run-dir", str(run_dir), "--no-report", *QUIET)
    assert result.returncode == 1, result.stderr
    assert len(result.stderr) < 2500, len(result.stderr)
    # the head, what was left out, and the tail; the op's brackets are its text, not markup
    said = "(op tests.integration.user_ops:explode_at_length): ValueError: [bold]the head[/] x"
    assert said in result.stderr
    assert "\n[... 19,0" in result.stderr and " characters left out ...]\n" in result.stderr
    assert "x the end [/]\n" in result.stderr
    assert (
        "the whole message and its traceback are in run.json (steps.bad.error, "
        f"steps.bad.traceback); completed steps and their outputs are kept; fix the step and "
        f"openclaw-dask submit --resume {run_dir}"
    ) in result.stderr
    assert "Traceback" not in result.stderr
    step = json.loads((run_dir / "run.json").read_text())["steps"]["bad"]
    assert step["error"] == "ValueError: [bold]the head[/] " + "x" * 20000 + " the end [/]"
    assert "x" * 20000 in step["traceback"]


def test_attaching_to_workers_of_another_config_names_the_keys_and_the_way_out(
    tmp_path: Path,
) -> None:
    """Refused with the fingerprints alone ('blames cluster.scheduler_address'); now the keys,
    both values, and a --set that runs on the cluster as it is."""
    theirs = ["distributed.sync_interval=7", "parallel.processes=1", *QUIET[1:]]
    with start_cluster(overrides=theirs) as client:
        address = client.scheduler.address
        args = [str(EXAMPLE), "--address", address, "--no-report", *SMALL]
        refused = submit(*args, "--run-dir", str(tmp_path / "refused"), "--set", "storage.level=5")
        assert refused.returncode == 2, refused.stderr
        assert (
            "error: --address: cluster.scheduler_address: the running cluster's workers were "
            "started from another openclaw.config: distributed.sync_interval 7 there, 5000 here, "
            "storage.level 3 there, 5 here (--set); start the cluster's workers from this "
            "config, or run with the cluster's values: --set distributed.sync_interval=7 "
            "storage.level=3\n1 problem found\n"
        ) in refused.stderr
        # nothing ran: the run directory it made is gone (its run.json had made the same
        # --run-dir "not empty; pass --resume"), and a user's empty one stays, empty
        assert not (tmp_path / "refused").exists()
        (tmp_path / "run").mkdir()
        refused = submit(*args, "--run-dir", str(tmp_path / "run"), "--set", "storage.level=5")
        assert refused.returncode == 2 and not any((tmp_path / "run").iterdir())
        # the way out it names runs, in the same directory
        again = ["--set", "distributed.sync_interval=7", "storage.level=3"]
        done = submit(*args, "--run-dir", str(tmp_path / "run"), *again)
        assert done.returncode == 0, done.stderr


def test_a_worker_that_dies_leaves_the_run_s_own_message_alone(tmp_path: Path) -> None:
    """The scheduler's and the nannies' logs (this process) and the workers' own (their stderr
    is the terminal's) came around the one line the run prints: ~10-30 lines of Dask's."""
    wf = tmp_path / "exits.yaml"
    text = FAILING_WORKFLOW.replace("user_ops:explode", "user_ops:exits_in_task")
    wf.write_text(text.replace("    with: {message: kaboom}\n", ""))
    once = ["--set", "dask.distributed.scheduler.allowed-failures=0"]  # fail at the first death
    result = submit(str(wf), "--run-dir", str(tmp_path / "run"), "--no-report", *QUIET, *once)
    assert result.returncode == 1, result.stderr
    lines = result.stderr.splitlines()
    assert lines[0].startswith("run directory: ") and lines[1].startswith("dashboard: ")
    # the worker's death: Dask's KilledWorker, or no workers left when both died at once
    assert lines[2].startswith("failed: step 'bad'"), result.stderr
    assert len(lines) == 4, result.stderr
