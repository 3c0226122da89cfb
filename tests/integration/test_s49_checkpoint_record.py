"""A checkpoint and run.json's word of it are committed together, whatever Ctrl-C does."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from openclaw_dask.workflows import iterative
from openclaw_dask.workflows.runner import run_workflow
from tests.conftest import ROOT


def test_a_ctrl_c_right_after_a_checkpoint_is_written_leaves_run_json_saying_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Ctrl-C that landed between the checkpoint's file and the record's update had left
    run.json a checkpoint behind the one a resume then continued from (an audit's interrupt,
    1 in 4). Here it lands there every time: sent by the write of the second checkpoint."""
    written = iterative.atomic_write_text
    commits: list[int] = []

    def write_then_interrupt(path: Path, text: str) -> None:
        written(path, text)
        if path.name == "checkpoint.json":
            commits.append(json.loads(text)["step"])
            if len(commits) == 2:
                os.kill(os.getpid(), signal.SIGINT)

    monkeypatch.setattr(iterative, "atomic_write_text", write_then_interrupt)
    # Python's own Ctrl-C, as in a terminal (pytest-xdist's workers ignore SIGINT, and a run
    # leaves a SIGINT it finds ignored ignored)
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    run_dir = tmp_path / "run"
    sets = ["params.size=64", "params.chunk=32", "params.steps=400"]
    sets += ["distributed.sync_interval=50", "cluster.dashboard_address=null"]
    try:
        with pytest.raises(KeyboardInterrupt):
            run_workflow(
                ROOT / "workflows/example.yaml", overrides=sets, run_dir=run_dir, report=False
            )
    finally:
        signal.signal(signal.SIGINT, before)
    record: dict[str, Any] = json.loads((run_dir / "run.json").read_text())
    checkpoint = json.loads((run_dir / ".checkpoints/diffuse/checkpoint.json").read_text())
    assert record["status"] == "interrupted"
    assert checkpoint["step"] == commits[-1] == 100
    diffuse = record["steps"]["diffuse"]
    assert diffuse["checkpoint_step"] == diffuse["checkpoint_committed"] == 100
