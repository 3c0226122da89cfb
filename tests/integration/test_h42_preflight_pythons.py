"""Two ``distributed.nodes`` entries on one host with two pythons: each probed and reported on
its own (keyed by ``host:port``, one python's probe result stood for both)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from openclaw_dask.config import load_config
from openclaw_dask.runtime.preflight import check_nodes
from tests.integration.sshd import SshRig, loopback_rig
from tests.integration.test_ssh import EXAMPLE, NODE_A, SMALL, cli

pytestmark = pytest.mark.ssh


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshRig]:
    with loopback_rig(tmp_path_factory.mktemp("h42rig"), "a") as rig:
        yield rig


def _python(rig: SshRig, path: Path, env: str = "") -> Path:
    """Another python on the host: this one's, run through a script (with ``env`` set)."""
    path.write_text(f'#!/bin/sh\n{env}exec {rig.python} "$@"\n')
    path.chmod(0o755)
    return path


def test_each_python_of_one_host_is_probed_and_reported_on_its_own(
    rig: SshRig, tmp_path: Path
) -> None:
    """Deterministic mode on one host given two pythons that compute differently: the second
    python's probe replaced the first's, so the node agreed with itself and nothing was said."""
    (a,) = rig.hosts
    # two of three compute alike (one against one would be a tie, which the address decides)
    alike = _python(rig, tmp_path / "python-alike")
    other = _python(rig, tmp_path / "python-generic-cpu", "NUMBA_CPU_NAME=generic ")
    nodes = [rig.node(a, **NODE_A), rig.node(a, python=str(alike)), rig.node(a, python=str(other))]
    path = rig.config(nodes, tmp_path / "ssh.config", {"parallel.deterministic_mode": True})
    args = ("--config", str(path), "--run-dir", str(tmp_path / "run"), *SMALL)
    run = cli("submit", str(EXAMPLE), *args)
    assert run.returncode == 2, run.stderr[-3000:]
    errors = [ln for ln in run.stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1, run.stderr
    label = f"{a.host}:{a.port} (python {other})"
    assert f"distributed.nodes[2]: node {label}: " in errors[0], errors[0]
    assert "computes unlike the others: cpu generic (node " in errors[0]
    assert f"(node {a.host}:{a.port} (python {rig.python}) and 1 more:" in errors[0]
    assert "Scheduler at" not in run.stderr  # nothing was launched

    # the same two pythons without deterministic mode pass, and each has its own probe
    path = rig.config(nodes, tmp_path / "ssh.config")
    found = check_nodes(load_config(path, env={}))
    pythons = (rig.python, alike, other)
    assert set(found) == {f"{a.host}:{a.port} (python {p})" for p in pythons}
    assert all("numerics" not in facts for facts in found.values())


def test_a_python_without_the_packages_is_reported_for_its_entry_only(
    rig: SshRig, tmp_path: Path
) -> None:
    (a,) = rig.hosts
    nodes = [rig.node(a, **NODE_A), rig.node(a, python="/usr/bin/python3"), rig.node(a)]
    path = rig.config(nodes, tmp_path / "ssh.config")
    run = cli(
        "submit", str(EXAMPLE), "--config", str(path), "--run-dir", str(tmp_path / "run"), *SMALL
    )
    assert run.returncode == 2, run.stderr[-3000:]
    errors = [ln for ln in run.stderr.splitlines() if ln.startswith("error:")]
    assert errors == [
        f"error: {path}:{errors[0].split(':')[2]}: distributed.nodes[1]: node {a.host}:{a.port} "
        "(python /usr/bin/python3): its python /usr/bin/python3 cannot import dask: install "
        "openclaw-dask there (pip install 'openclaw-dask[ssh]'), or point the node's python at "
        "an environment that has it"
    ], run.stderr
    assert "Scheduler at" not in run.stderr
