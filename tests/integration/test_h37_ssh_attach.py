"""`submit` with the config that started an ssh `cluster up` runs on that cluster."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from openclaw_dask.runtime.state import read_state
from tests.integration.sshd import SshRig, loopback_rig
from tests.integration.test_cluster_cli import blocks_ctrl_c
from tests.integration.test_ssh import EXAMPLE, SMALL, cli

pytestmark = pytest.mark.ssh


@pytest.fixture
def rig(tmp_path: Path) -> Iterator[SshRig]:
    with loopback_rig(tmp_path / "rig", "a") as rig:  # the attach is what is tested
        yield rig


def test_submit_attaches_to_ssh_cluster_up_with_backend_ssh_spelled_out(
    rig: SshRig, tmp_path: Path
) -> None:
    """configs/ssh-cluster.config names `cluster.backend: ssh`; such a config was refused with
    'attaches to a running scheduler, but cluster.backend: ssh starts one' (exit 2) when it
    met the ssh cluster it had started itself."""
    a = rig.hosts[0]
    node = rig.node(a, scheduler=True, resources={"cpus": 1})
    config = rig.config([node], tmp_path / "ssh.config")
    assert "backend: ssh" in config.read_text()
    up = cli("cluster", "up", "--config", str(config))
    assert up.returncode == 0, up.stderr[-3000:]
    state = read_state()
    assert state is not None
    try:
        assert not blocks_ctrl_c(state["pid"])
        run = cli("submit", str(EXAMPLE), "--config", str(config), "--no-report", *SMALL)
        assert run.returncode == 0, run.stderr[-3000:]
        assert f"the running scheduler at {state['address']}" in run.stderr
        record = next(Path("runs").glob("*/*/run.json"))
        rec = json.loads(record.read_text())
        assert rec["cluster"]["scheduler"] == state["address"]
    finally:
        down = cli("cluster", "down")
    assert down.returncode == 0, down.stderr


def test_cluster_up_says_what_the_ssh_backend_does_not_apply(rig: SshRig, tmp_path: Path) -> None:
    """`config plan` and `submit` said pinning is not applied on ssh nodes; `cluster up`,
    which starts the workers, did not."""
    a = rig.hosts[0]
    node = rig.node(a, scheduler=True, resources={"cpus": 1})
    extra = {"parallel.thread_affinity": "compact"}
    config = rig.config([node], tmp_path / "ssh.config", extra)
    up = cli("cluster", "up", "--config", str(config))
    assert up.returncode == 0, up.stderr[-3000:]
    try:
        notes = [line.strip() for line in up.stdout.splitlines() if "note:" in line]
        assert notes == [
            "note: parallel.thread_affinity not applied on ssh nodes: workers are not pinned"
        ]
    finally:
        down = cli("cluster", "down")
    assert down.returncode == 0, down.stderr
