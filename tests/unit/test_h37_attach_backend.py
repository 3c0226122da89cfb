"""A config that spells out its backend still runs on the `cluster up` cluster of that kind."""

from __future__ import annotations

from pathlib import Path

import pytest

from openclaw_dask import load_config
from openclaw_dask.config.errors import ConfigError
from openclaw_dask.translate import plan_cluster

SSH_CONFIG = """\
cluster:
  backend: ssh
distributed:
  nodes:
    - {host: 127.0.0.1, scheduler: true}
    - {host: 127.0.0.2}
"""

ADDRESS = "tcp://127.0.0.1:8786"


def test_an_ssh_config_attaches_to_the_address_cluster_up_gave(tmp_path: Path) -> None:
    """`submit --config ssh.config` beside an ssh `cluster up` was refused: 'attaches to a
    running scheduler, but cluster.backend: ssh starts one', an address the user never set."""
    path = tmp_path / "ssh.config"
    path.write_text(SSH_CONFIG)
    config = load_config(path)
    attached = config.with_values(
        source="cluster up (pid 4242)", cluster__scheduler_address=ADDRESS
    )
    plan = plan_cluster(attached)
    assert (plan.backend, plan.address) == ("attach", ADDRESS)


@pytest.mark.parametrize("source", ["--address", "api"])
def test_an_address_the_user_gave_beside_backend_ssh_is_still_refused(
    tmp_path: Path, source: str
) -> None:
    path = tmp_path / "ssh.config"
    path.write_text(SSH_CONFIG)
    config = load_config(path)
    with pytest.raises(ConfigError, match=r"cluster\.backend: ssh starts one; remove one"):
        config.with_values(source=source, cluster__scheduler_address=ADDRESS)


def test_an_address_in_the_file_beside_backend_ssh_is_refused_at_its_line(
    tmp_path: Path,
) -> None:
    path = tmp_path / "ssh.config"
    path.write_text(
        SSH_CONFIG.replace("  backend: ssh\n", f"  backend: ssh\n  scheduler_address: {ADDRESS}\n")
    )
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert f"{path}:3: cluster.scheduler_address" in str(caught.value)
