"""`cluster up` says when its dashboard is not on the configured port."""

from __future__ import annotations

import re
import socket
import urllib.request

from openclaw_dask.runtime.state import read_state
from tests.integration.test_cluster_cli import sh


def test_cluster_up_says_the_configured_dashboard_port_was_taken() -> None:
    """Dask serves the dashboard on another port when the configured one is in use; `submit`
    said so, `cluster up` printed the other link alone (a tunnel made for the configured port
    then reached whatever held it)."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        taken = holder.getsockname()[1]
        up = sh("cluster", "up", "--set", f"cluster.dashboard_address=127.0.0.1:{taken}")
        assert up.returncode == 0, up.stderr
        try:
            state = read_state()
            assert state is not None
            line = next(x for x in up.stdout.splitlines() if x.startswith("dashboard: "))
            assert (
                line == f"dashboard: {state['dashboard']} (port {taken} was taken: another "
                "cluster running?)"
            )
            served = re.search(r":(\d+)/", state["dashboard"])
            assert served and int(served.group(1)) != taken
            with urllib.request.urlopen(state["dashboard"], timeout=30) as page:
                assert page.status == 200  # the link printed is the dashboard really served
        finally:
            down = sh("cluster", "down")
        assert down.returncode == 0, down.stderr


def test_cluster_up_on_a_free_configured_port_prints_the_link_alone() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        free = probe.getsockname()[1]
    up = sh("cluster", "up", "--set", f"cluster.dashboard_address=127.0.0.1:{free}")
    assert up.returncode == 0, up.stderr
    try:
        assert f"dashboard: http://127.0.0.1:{free}/status\n" in up.stdout
    finally:
        down = sh("cluster", "down")
    assert down.returncode == 0, down.stderr
