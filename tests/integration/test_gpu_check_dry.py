"""``scripts/gpu_check.py --dry``: the device machine's check, run here on a CPU stand-in cluster.

The device machine is lent for 15 minutes at most and rarely; a script that breaks there (an
import, a renamed function) costs that session its only check. Here it runs what it can: the
numpy reference and the cluster part on a local CPU cluster with numpy (``cpu_standin_cluster``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT
from tests.integration.conftest import isolated_env


def test_the_gpu_check_runs_its_cluster_part_on_a_cpu_stand_in(tmp_path: Path) -> None:
    env = isolated_env(tmp_path) | {"PYTHONPATH": str(ROOT)}
    args = ["--dry", "--out", str(tmp_path), "--seconds", "0.3"]
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts/gpu_check.py"), *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = json.loads((tmp_path / "gpu-check.json").read_text())
    assert report["failures"] == [] and report["numpy_reference"]["status"] == "ok"
    # the SSH probe's count of this machine's GPUs (none here; on the device, nvidia-smi's)
    assert report["environment"]["ssh_probe_gpus"] == 0, report["environment"]
    standin = report["cpu_standin_cluster"]
    assert standin["status"] == "ok" and standin["bit_identical_to_reference"] is True
    # where a batch's time went, from Dask's task stream (on the H200 a batch took 10x its
    # kernel): the same figures as the stencil suite's profile
    profile = standin["profile"]
    assert 0 < profile["busy_fraction"] <= 1 and profile["step_task_ms"] > 0, profile
