"""The lines `certs create` prints are a config that reads back to its files, wherever they are."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from openclaw_dask import load_config
from openclaw_dask.cli.main import cli


@pytest.mark.parametrize("folder", ["my: certs", "certs #2", "plain", "Zertifikate für"])
def test_the_printed_lines_pasted_into_a_config_name_the_files_made(
    tmp_path: Path, folder: str
) -> None:
    """A folder named 'my: certs' made the pasted lines a YAML error; 'certs #2' cut the
    paths at the '#' (a comment), and the config then named files that do not exist."""
    where = tmp_path / folder
    made = CliRunner().invoke(cli, ["certs", "create", str(where)])
    assert made.exit_code == 0, made.output
    pasted = made.stdout.split("one node pair per machine):\n", 1)[1]
    config_file = tmp_path / "openclaw.config"
    config_file.write_text(pasted)
    config = load_config(config_file)  # the TLS files are checked: present, PEM, matching
    assert config["distributed.communication_backend"] == "tls"
    assert config["distributed.tls.ca_file"] == str(where / "ca.pem")
    assert config["distributed.tls.cert"] == str(where / "node.pem")
    assert config["distributed.tls.key"] == str(where / "node-key.pem")
    # as the user will read them: "für" was printed as "f\xFCr" (YAML reads that back too)
    assert str(where / "node-key.pem") in pasted
