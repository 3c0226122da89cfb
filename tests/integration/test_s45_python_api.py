"""``run_workflow`` as a scientist's script calls it, beside a Dask client of its own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from distributed import Client, LocalCluster, default_client

from openclaw_dask import run_workflow, start_cluster
from tests.conftest import ROOT

#: the example workflow at its smallest (a run of ~5 s here)
SMALL = (
    "params.size=128",
    "params.chunk=64",
    "params.steps=40",
    "cluster.dashboard_address=127.0.0.1:0",
)


def _add_one(x: int) -> int:
    return x + 1


def test_a_run_beside_the_users_client_leaves_it_and_returns_what_run_json_says(
    tmp_path: Path,
) -> None:
    # the notebook's own cluster (in-process: no worker processes of its own to start)
    with (
        LocalCluster(n_workers=1, processes=False, dashboard_address=":0") as theirs,
        Client(theirs) as client,
    ):
        pending = client.submit(_add_one, 1)
        record = run_workflow(
            ROOT / "workflows" / "example.yaml", overrides=SMALL, run_dir=tmp_path / "run"
        )
        # ours had its own cluster and client; theirs is still the default, its work intact
        assert record["status"] == "completed"
        assert record["cluster"]["scheduler"] != theirs.scheduler_address
        assert default_client() is client
        assert pending.result(timeout=10) == 2
        assert client.submit(_add_one, 2).result(timeout=10) == 3
    # the returned record is run.json's, value for value: the hardware's gpus had come back
    # a tuple (() against run.json's [])
    written = (tmp_path / "run" / "run.json").read_text()
    assert record == json.loads(written)
    # a resume given a run_dir too: refused, as `submit --resume --run-dir` is (the run_dir had
    # been ignored in silence), and nothing written
    with pytest.raises(ValueError) as info:
        run_workflow(None, resume=tmp_path / "run", run_dir=tmp_path / "elsewhere")
    assert str(info.value) == (
        "run_workflow: resume continues a run in its own directory; pass run_dir or resume, "
        "not both"
    )
    assert not (tmp_path / "elsewhere").exists()
    assert (tmp_path / "run" / "run.json").read_text() == written


def test_a_run_inside_a_start_cluster_block_runs_on_its_cluster(tmp_path: Path) -> None:
    """``with start_cluster() as client: run_workflow(...)`` had started a second cluster
    beside the block's (twice the workers on the machine); the run now goes to the block's
    cluster, as the block's ``compute()`` does, and says so. After the block, a run starts its
    own again."""
    said: list[str] = []
    example = ROOT / "workflows" / "example.yaml"
    with start_cluster(overrides=["cluster.dashboard_address=null"]) as client:
        scheduler, workers = client.scheduler.address, set(client.scheduler_info()["workers"])
        record = run_workflow(
            example, overrides=SMALL, run_dir=tmp_path / "in", report=False, announce=said.append
        )
        assert record["status"] == "completed"
        assert record["cluster"]["scheduler"] == scheduler
        assert set(record["cluster"]["workers"]) == workers
        assert set(client.scheduler_info()["workers"]) == workers  # the block's, still there
    assert any(
        line.startswith(
            f"cluster: the running scheduler at {scheduler} "
            "(the enclosing start_cluster block): 2 workers"
        )
        for line in said
    ), said
    after = run_workflow(example, overrides=SMALL, run_dir=tmp_path / "after", report=False)
    assert after["cluster"]["scheduler"] != scheduler
