"""A TLS cluster from ``certs create``: it runs a workflow, and clients without its CA's
certificates cannot connect."""

from __future__ import annotations

import json
import os
import socket
import ssl
import subprocess
import sys
from pathlib import Path

import pytest

from openclaw_dask.config import load_config
from openclaw_dask.runtime.cluster import start_cluster
from tests.conftest import ROOT

EXE = Path(sys.executable).with_name("openclaw-dask")
EXAMPLE = ROOT / "workflows/example.yaml"
SMALL = ["params.size=128", "params.chunk=64", "params.steps=120"]

# a fresh interpreter, so nothing of this process's dask config (the cluster's TLS) leaks in
PLAIN_CLIENT = """
import sys
from distributed import Client, Security
security = None
if len(sys.argv) > 2:  # certificates of another CA
    ca, cert, key = sys.argv[2:]
    security = Security(tls_ca_file=ca, tls_client_cert=cert, tls_client_key=key)
try:
    Client(sys.argv[1], timeout="5s", security=security)
except Exception as exc:
    print(f"refused: {type(exc).__name__}: {exc}")
    sys.exit(3)
print("connected")
"""


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(EXE), *args], capture_output=True, text=True, timeout=240,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip


def make_config(tmp_path: Path, name: str = "certs") -> tuple[Path, list[str]]:
    """``certs create`` as a user runs it; its printed lines become the config file."""
    result = cli("certs", "create", str(tmp_path / name))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.split("one node pair per machine):\n", 1)[1]
    config = tmp_path / f"{name}.config"
    config.write_text(lines)
    folder = (tmp_path / name).resolve()
    return config, [str(folder / f) for f in ("ca.pem", "node.pem", "node-key.pem")]


def plain_client(address: str, *certs: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", PLAIN_CLIENT, address, *certs],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_tls_cluster_runs_the_example_through_submit(tmp_path: Path) -> None:
    config, _ = make_config(tmp_path)
    run_dir = tmp_path / "run"
    sets = [a for s in [*SMALL, "cluster.dashboard_address=null"] for a in ("--set", s)]
    result = cli("submit", str(EXAMPLE), "--config", str(config), "--run-dir", str(run_dir), *sets)
    assert result.returncode == 0, result.stderr
    rec = json.loads((run_dir / "run.json").read_text())
    assert rec["status"] == "completed"
    assert rec["config"]["values"]["distributed"]["communication_backend"] == "tls"
    assert rec["cluster"]["scheduler"].startswith("tls://127.0.0.1:")
    assert rec["cluster"]["workers"] and all(
        a.startswith("tls://") for a in rec["cluster"]["workers"]
    )


def test_clients_without_the_cas_certificates_are_refused(tmp_path: Path) -> None:
    config, (ca, _, _) = make_config(tmp_path)
    _, other = make_config(tmp_path, "other")
    # the seed name grpc is the documented alias of tls
    cfg = load_config(
        config,
        ["distributed.communication_backend=grpc", "cluster.dashboard_address=null"],
    )
    with start_cluster(cfg) as client:
        address = client.scheduler.address
        assert address.startswith("tls://")
        assert client.submit(sum, [1, 2]).result() == 3  # with the certificates: fine

        no_certs = plain_client(address)
        assert no_certs.returncode == 3, no_certs.stdout + no_certs.stderr
        assert "TLS expects a `ssl_context`" in no_certs.stdout
        plain_tcp = plain_client(address.replace("tls://", "tcp://"))
        assert plain_tcp.returncode == 3, plain_tcp.stdout + plain_tcp.stderr
        wrong_ca = plain_client(address, *other)
        assert wrong_ca.returncode == 3, wrong_ca.stdout + wrong_ca.stderr
        assert "TLS certificate does not match" in wrong_ca.stdout

        # a TLS client that trusts the CA but shows no certificate: the scheduler asks for one
        host, port = address.removeprefix("tls://").rsplit(":", 1)
        ctx = ssl.create_default_context(cafile=ca)
        ctx.check_hostname = False
        with (
            socket.create_connection((host, int(port)), timeout=10) as raw,
            ctx.wrap_socket(raw) as tls,
            pytest.raises((ssl.SSLError, ConnectionError)),
        ):
            tls.sendall(b"\0" * 8)
            tls.recv(8)  # TLS 1.3 reports the missing client certificate here
        assert client.submit(sum, [3, 4]).result() == 7  # and the cluster is unharmed


def test_bad_certificate_path_is_bad_input(tmp_path: Path) -> None:
    config, _ = make_config(tmp_path)
    result = cli(
        "submit", str(EXAMPLE), "--config", str(config),
        "--set", f"distributed.tls.cert={tmp_path}/missing.pem",
    )  # fmt: skip
    assert result.returncode == 2
    assert f"distributed.tls.cert: file not found: {tmp_path}/missing.pem" in result.stderr
    assert "Traceback" not in result.stderr
    assert not Path("runs").exists()


def test_status_and_compact_reach_a_tls_cluster_up_from_any_directory(tmp_path: Path) -> None:
    config, _ = make_config(tmp_path)
    # certificate paths relative to the config's directory, as a user may write them
    relative = config.read_text().replace(f"{(tmp_path / 'certs').resolve()}/", "certs/")
    config.write_text(relative + "cluster:\n  dashboard_address: null\n")
    up = cli("cluster", "up", "--config", config.name)
    assert up.returncode == 0, up.stderr
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    def there(*args: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "COLUMNS": "200"}  # the status table unwrapped
        return subprocess.run(
            [str(EXE), *args], capture_output=True, text=True, timeout=120, cwd=elsewhere, env=env
        )

    try:
        address = up.stdout.split()[2]
        assert address.startswith("tls://")
        status = there("cluster", "status")
        assert status.returncode == 0, status.stderr
        assert status.stdout.count("│ tls://127.0.0.1:") == 2
        assert "dashboard:" not in status.stdout  # none was asked for
        compact = there("memory", "compact")
        assert compact.returncode == 0, compact.stderr
        assert compact.stdout.count("RSS") == 2
        # --address alone has no certificate to show: said so at once, with what to pass
        bare = there("cluster", "status", "--address", address)
        assert bare.returncode == 2
        assert f"{address} is a tls scheduler: it asks for this client's certificate" in bare.stderr
        assert "--config FILE" in bare.stderr and "Traceback" not in bare.stderr
        given = cli("cluster", "status", "--address", address, "--config", config.name)
        assert given.returncode == 0, given.stderr
        # the config's relative certificate paths are relative to it, from any directory
        given = there("cluster", "status", "--address", address, "--config", str(config))
        assert given.returncode == 0, given.stderr
    finally:
        down = cli("cluster", "down")
    assert down.returncode == 0, down.stderr


def test_addresses_this_client_cannot_speak_are_bad_input(tmp_path: Path) -> None:
    inproc = cli("cluster", "status", "--address", "inproc://127.0.0.1/1/2")
    assert inproc.returncode == 2
    assert "an inproc:// scheduler lives inside one Python process" in inproc.stderr
    mismatch = cli("submit", str(EXAMPLE), "--address", "tls://127.0.0.1:1")
    assert mismatch.returncode == 2
    assert (
        "--address: cluster.scheduler_address: a tls:// scheduler is reached over tls"
        in mismatch.stderr
    )
    for result in (inproc, mismatch):
        assert "Traceback" not in result.stderr
    assert not Path("runs").exists()


def test_status_names_the_recorded_tls_files_that_are_gone(tmp_path: Path) -> None:
    """With the certificates `cluster up` recorded moved away, `cluster status` said "no
    scheduler answers at tls://...: [Errno 2] No such file or directory": the scheduler ran."""
    config, (ca, cert, key) = make_config(tmp_path)
    config.write_text(config.read_text() + "parallel:\n  processes: 1\n")
    up = cli("cluster", "up", "--config", str(config), "--set", "cluster.dashboard_address=")
    assert up.returncode == 0, up.stderr
    folder = tmp_path / "certs"
    try:
        folder.rename(tmp_path / "moved")
        status = cli("cluster", "status")
        (tmp_path / "moved").rename(folder)
        again = cli("cluster", "status")
    finally:
        down = cli("cluster", "down")
    assert down.returncode == 0, down.stderr
    assert status.returncode == 2, status.stderr
    assert "no scheduler answers" not in status.stderr
    address = up.stdout.split()[2]
    assert (
        f"{address} is a tls scheduler, and this client's TLS files cannot be used: "
        f"distributed.tls.ca_file: file not found: {ca}; distributed.tls.cert: file not found: "
        f"{cert}; distributed.tls.key: file not found: {key} (put them back, or give "
        "--config FILE with working ones)"
    ) in status.stderr
    assert again.returncode == 0, again.stderr
