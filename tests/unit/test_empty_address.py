"""An empty ``--address`` is refused, never taken for no ``--address`` (no cluster started)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from openclaw_dask.cli.main import cli
from tests.conftest import ROOT


@pytest.mark.parametrize(
    "command",
    [
        ["submit", str(ROOT / "workflows/example.yaml"), "--dry-run"],
        ["cluster", "status"],
        ["memory", "compact"],
    ],
)
@pytest.mark.parametrize("address", ["", " "])
def test_an_empty_address_is_bad_input(
    command: list[str], address: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--address "$SCHEDULER"`` with the variable unset: submit planned (and would start) a
    cluster of its own, status and compact went to the `cluster up` cluster, all silently."""
    monkeypatch.setenv("OPENCLAW_STATE_DIR", str(tmp_path / "state"))
    result = CliRunner().invoke(cli, [*command, "--address", address])
    assert result.exit_code == 2, result.output
    assert result.stderr.splitlines() == [
        f"error: --address: expected a scheduler address such as tcp://10.0.0.1:8786, got "
        f"{address!r}",
        "1 problem found",
    ]
    assert not result.stdout
