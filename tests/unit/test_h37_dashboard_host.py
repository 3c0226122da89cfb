"""A dashboard address of another machine is bad input, said at its key before anything starts."""

from __future__ import annotations

import subprocess
import sys

import pytest

from openclaw_dask import load_config, plan_cluster
from openclaw_dask.config import ConfigError, detect_hardware
from openclaw_dask.config.hardware import Hardware
from tests.conftest import ROOT

#: TEST-NET-2 (RFC 5737): documentation only, never an address of this machine.
ELSEWHERE = "198.51.100.7"


def test_a_dashboard_on_another_machines_address_is_exit_2_at_its_key() -> None:
    """It passed validate, then the cluster's start failed: 'RuntimeError: Cluster failed to
    start: [Errno 99] Cannot assign requested address', exit 1, no key named."""
    done = subprocess.run(
        [sys.executable, "-m", "openclaw_dask", "config", "validate", "--set",
         f"cluster.dashboard_address={ELSEWHERE}:8787"],
        capture_output=True, text=True, timeout=120, cwd=ROOT / "tests",
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    line = done.stderr.splitlines()[1]
    assert line.startswith(
        f"error: --set: cluster.dashboard_address: '{ELSEWHERE}' is no address of this machine "
        "(its addresses: "
    )
    assert "127.0.0.1" in line and "0.0.0.0 for every interface" in line


def test_a_dashboard_host_that_does_not_resolve_is_refused() -> None:
    config = load_config(None, overrides=["cluster.dashboard_address=nosuch.invalid:8787"])
    with pytest.raises(ConfigError, match=r"'nosuch\.invalid' does not resolve"):
        plan_cluster(config)  # the checks against this machine: the start's, too


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "0.0.0.0", "", "localhost"])
def test_loopback_and_every_interface_are_accepted(host: str) -> None:
    config = load_config(None, overrides=[f"cluster.dashboard_address={host}:0"])
    assert plan_cluster(config).cluster_kwargs["dashboard_address"] == f"{host}:0"


def test_an_address_of_this_machine_is_accepted() -> None:
    mine = [a for a in detect_hardware().addresses if ":" not in a and not a.startswith("127.")]
    if not mine:
        pytest.skip("this machine has no IPv4 address besides loopback")
    config = load_config(None, overrides=[f"cluster.dashboard_address={mine[0]}:0"])
    assert plan_cluster(config).cluster_kwargs["dashboard_address"] == f"{mine[0]}:0"


def test_an_ssh_scheduler_serves_its_dashboard_on_its_node_unchecked() -> None:
    config = load_config(
        None,
        overrides=[
            "cluster.backend=ssh",
            "distributed.nodes=[{host: 10.0.0.3, scheduler: true}]",
            f"cluster.dashboard_address={ELSEWHERE}:8787",
        ],
    )
    assert plan_cluster(config).backend == "ssh"


def test_records_carry_no_addresses_and_a_description_without_them_checks_nothing() -> None:
    here = detect_hardware()
    assert here.addresses  # found on this machine
    described = here.to_dict()
    assert "addresses" not in described  # run.json and reports record this form
    assert Hardware.from_dict(described).addresses == ()
