"""`cluster status` and `memory compact` refuse a tcp:// address beside a TLS --config."""

from __future__ import annotations

import time
from pathlib import Path

from openclaw_dask.runtime.state import read_state
from tests.integration.test_cluster_cli import sh

TLS_CONFIG = """\
cluster:
  dashboard_address: null
distributed:
  communication_backend: tls
  tls: {ca_file: certs/ca.pem, cert: certs/node.pem, key: certs/node-key.pem}
"""


def test_a_tcp_address_with_a_tls_config_is_bad_input_at_once(tmp_path: Path) -> None:
    """It waited 20 s, then ended in Dask's 'encryption required' RuntimeError, exit 1, with
    a traceback from the client's finaliser under it. (Both commands on one cluster.)"""
    made = sh("certs", "create", str(tmp_path / "certs"))
    assert made.returncode == 0, made.stderr
    config = tmp_path / "tls.config"
    config.write_text(TLS_CONFIG)
    up = sh("cluster", "up", "--config", str(config))
    assert up.returncode == 0, up.stderr
    try:
        state = read_state()
        assert state and state["address"].startswith("tls://")
        plain = "tcp://" + state["address"].removeprefix("tls://")
        for command in (("cluster", "status"), ("memory", "compact")):
            started = time.monotonic()
            wrong = sh(*command, "--address", plain, "--config", str(config))
            took = time.monotonic() - started
            assert wrong.returncode == 2, (command, wrong.stderr)
            assert wrong.stderr.splitlines()[0] == (
                f"error: --address: {plain} is reached over tcp, but {config} sets "
                "distributed.communication_backend: tls: give its tls:// address, or a config "
                "of the tcp transport"
            )
            assert "Traceback" not in wrong.stderr
            assert took < 15, took  # refused before connecting, not after Dask's 20 s timeout
            right = sh(*command, "--address", state["address"], "--config", str(config))
            assert right.returncode == 0, (command, right.stderr)
    finally:
        down = sh("cluster", "down")
    assert down.returncode == 0, down.stderr
