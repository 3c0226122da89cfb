"""The ucx transport (distributed-ucxx) on a CPU-only machine, over TCP.

distributed-ucxx pins dask to its own release, so it lives in its own environment, ``.venv-ucx``
(``scripts/setup-ucx-env.sh``, run by ``scripts/setup-env.sh``); these tests drive that
environment's ``openclaw-dask`` and python as a user would.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from openclaw_dask.workflows.runner import run_workflow
from tests.conftest import ROOT

pytestmark = pytest.mark.ucx

UCX_ENV = ROOT / ".venv-ucx" / "bin"
EXAMPLE = ROOT / "workflows/example.yaml"
COMMON = [
    "params.size=128",
    "params.chunk=64",
    "params.steps=120",
    "cluster.dashboard_address=null",
    "parallel.deterministic_mode=true",
]
UCX = "distributed.communication_backend=ucx"

# what transport UCX really chose, read inside the scheduler and every worker
TRANSPORTS = """
from openclaw_dask import load_config, start_cluster

def chosen():
    import ucxx
    config = ucxx.get_config()
    return config["TLS"], config["SOCKADDR_TLS_PRIORITY"]

if __name__ == "__main__":
    import json
    config = load_config(None, [{ucx!r}, "cluster.dashboard_address=null"], use_search_path=False)
    with start_cluster(config) as client:
        print(json.dumps({{"scheduler": client.run_on_scheduler(chosen), **client.run(chosen)}}))
"""


def ucx_env_bin(name: str) -> Path:
    path = UCX_ENV / name
    assert path.exists(), f"{path} missing: run scripts/setup-ucx-env.sh (make test does)"
    return path


def run(*command: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "UCX_WARN_UNUSED_ENV_VARS": "n"}
    return subprocess.run(
        [str(c) for c in command], capture_output=True, text=True, timeout=240, env=env, cwd=cwd
    )


def record_of(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / "run.json").read_text())


def test_example_over_ucx_equals_the_tcp_run_bit_for_bit(tmp_path: Path) -> None:
    run_dir = tmp_path / "ucx"
    sets = [a for s in [*COMMON, UCX] for a in ("--set", s)]
    result = run(ucx_env_bin("openclaw-dask"), "submit", EXAMPLE, "--run-dir", run_dir, *sets)
    assert result.returncode == 0, result.stderr
    rec = record_of(run_dir)
    assert rec["status"] == "completed"
    assert rec["cluster"]["scheduler"].startswith("ucx://127.0.0.1:")
    workers = rec["cluster"]["workers"]
    assert len(workers) == 2 and all(a.startswith("ucx://") for a in workers)

    tcp = run_workflow(EXAMPLE, overrides=COMMON, run_dir=tmp_path / "tcp", report=False)
    assert tcp["cluster"]["scheduler"].startswith("tcp://")
    for step in ("field", "diffuse", "profile"):
        assert rec["steps"][step]["checksums"] == tcp["steps"][step]["checksums"], step


def test_ucx_runs_over_tcp_without_a_gpu(tmp_path: Path) -> None:
    result = run(ucx_env_bin("python"), "-c", TRANSPORTS.format(ucx=UCX), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    chosen = json.loads(result.stdout.strip().splitlines()[-1])
    assert len(chosen) == 3  # the scheduler and two workers
    assert all(tuple(v) == ("tcp", "tcp") for v in chosen.values()), chosen
