"""A remote worker that cannot start is named, with the remote process's own reason."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.sshd import SshRig, loopback_rig
from tests.integration.test_ssh import EXAMPLE, SMALL, cli

pytestmark = pytest.mark.ssh


@pytest.fixture
def rig(tmp_path: Path) -> Iterator[SshRig]:
    with loopback_rig(tmp_path / "rig", "a", "b") as rig:  # a port taken on the node's host
        yield rig


@pytest.fixture
def taken(rig: SshRig) -> Iterator[int]:
    """A port held open on host b's address: its worker's `port:` there cannot be bound."""
    with socket.socket() as holder:
        holder.bind((rig.hosts[1].host, 0))
        holder.listen()
        yield holder.getsockname()[1]


def test_a_worker_port_in_use_on_a_node_is_named_with_its_reason(
    rig: SshRig, taken: int, tmp_path: Path
) -> None:
    """It was 'error: Exception: Worker failed to start': Dask's own words, naming neither the
    node nor the reason, which the remote process had written (Dask logged it at INFO). The
    pre-flight now binds the port on the node first (session 48): bad input, exit 2, before
    anything starts; a start without the pre-flight still names the node and the reason."""
    a, b = rig.hosts
    nodes = [rig.node(a, scheduler=True, resources={"cpus": 1}), rig.node(b, port=taken)]
    config = rig.config(nodes, tmp_path / "ssh.config")
    said = (
        f"distributed.nodes[1]: node {b.host}:{b.port}: its worker port {taken} is taken there "
        "(Address already in use): pick another, or leave port null for a free one"
    )
    run = cli("submit", str(EXAMPLE), "--config", str(config), "--no-report", *SMALL)
    assert run.returncode == 2, run.stderr[-3000:]
    errors = [line for line in run.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].endswith(said), errors
    up = cli("cluster", "up", "--config", str(config))
    assert up.returncode == 2, up.stderr[-3000:]
    assert up.stderr.splitlines()[0].startswith("error: cluster up: ")
    assert up.stderr.splitlines()[0].endswith(said)
    # past the pre-flight (a port taken between the probe and the start), the start names both
    from openclaw_dask import load_config, start_cluster
    from openclaw_dask.runtime.ssh_process import SshStartError

    with pytest.raises(SshStartError) as info, start_cluster(load_config(config), verify=False):
        pass
    assert str(info.value) == (
        f"ssh node {b.host}-{b.port} ({b.host}): its worker process ended before it started: "
        "OSError: [Errno 98] Address already in use"
    )


def test_a_cluster_starts_as_before_on_free_ports(rig: SshRig, tmp_path: Path) -> None:
    """The start lines are kept for the error only: a cluster that starts says nothing more."""
    a, b = rig.hosts
    nodes = [rig.node(a, scheduler=True, resources={"cpus": 1}), rig.node(b)]
    config = rig.config(nodes, tmp_path / "ssh.config")
    run = cli("submit", str(EXAMPLE), "--config", str(config), "--no-report", *SMALL)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "worker at" not in run.stderr and "Scheduler at" not in run.stderr
