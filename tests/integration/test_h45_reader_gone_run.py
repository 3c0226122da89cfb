"""A submit whose output's reader goes away (``submit ... 2>&1 | head -1``) stops its run as a
Ctrl-C does: run.json says ``interrupted`` and ``--resume`` continues it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from openclaw_dask.exitcodes import EXIT_STDOUT_CLOSED

ROOT = Path(__file__).resolve().parents[2]
EXE = Path(sys.executable).with_name("openclaw-dask")
EXAMPLE = ROOT / "workflows/example.yaml"
QUIET = ["--set", "cluster.dashboard_address=127.0.0.1:0"]
SMALL = ["--set", "params.size=128", "--set", "params.chunk=64", "--set", "params.steps=120"]


def test_a_run_whose_reader_went_away_is_recorded_interrupted_not_running(
    tmp_path: Path,
) -> None:
    # the pipe's reading end closed before the run's first line ("run directory: ...")
    read, write = os.pipe()
    os.close(read)
    try:
        proc = subprocess.run(
            [str(EXE), "submit", str(EXAMPLE), "--no-report", *QUIET, *SMALL],
            stdout=write,
            stderr=write,
            cwd=tmp_path,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            timeout=300,
        )
    finally:
        os.close(write)
    assert proc.returncode == EXIT_STDOUT_CLOSED  # as `| head -1` ends any other command
    [record_file] = tmp_path.glob("runs/*/*/run.json")
    record = json.loads(record_file.read_text())
    # it said "running" (a run still going, or killed), with nothing running any more
    assert record["status"] == "interrupted"
    assert "running" not in {rec.get("status") for rec in record["steps"].values()}
    again = subprocess.run(
        [str(EXE), "submit", "--resume", str(record_file.parent), "--no-report"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=300,
    )
    assert again.returncode == 0, again.stderr
    assert json.loads(record_file.read_text())["status"] == "completed"
