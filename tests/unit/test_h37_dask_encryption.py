"""A raw dask: setting that needs TLS is refused beside a transport without it."""

from __future__ import annotations

from pathlib import Path

import pytest

from openclaw_dask import load_config
from openclaw_dask.config.errors import ConfigError
from openclaw_dask.config.tls import create_certificates

KEY = "distributed.comm.require-encryption"


@pytest.mark.parametrize("transport", ["tcp", "ucx"])
def test_require_encryption_without_tls_is_refused_at_its_line(
    tmp_path: Path, transport: str
) -> None:
    """It passed validate; the start then failed: 'RuntimeError: Cluster failed to start:
    Scheduler failed to start.', exit 1, no key named."""
    path = tmp_path / "openclaw.config"
    path.write_text(f"distributed:\n  communication_backend: {transport}\ndask:\n  {KEY}: true\n")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    said = [str(p) for p in caught.value.problems if p.key == f"dask.{KEY}"]
    assert said == [
        f"{path}:4: dask.{KEY}: true makes every connection need TLS, but "
        f"distributed.communication_backend is {transport}: set it to tls (with the "
        "distributed.tls files), or leave this key out"
    ]


def test_require_encryption_with_tls_or_false_is_accepted(tmp_path: Path) -> None:
    certs = create_certificates(tmp_path / "certs")
    tls = (
        "distributed:\n  communication_backend: tls\n  tls:\n"
        f"    ca_file: {certs.ca_file}\n    cert: {certs.nodes[0].cert}\n"
        f"    key: {certs.nodes[0].key}\n"
    )
    path = tmp_path / "tls.config"
    path.write_text(tls + "dask:\n  distributed: {comm: {require-encryption: true}}\n")
    assert load_config(path)["dask"]
    plain = tmp_path / "plain.config"
    plain.write_text(f"dask:\n  {KEY}: false\n")
    assert load_config(plain)["dask"] == {KEY: False}
