"""A first run refused before any step leaves nothing it made behind."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from openclaw_dask.config import ConfigError
from openclaw_dask.workflows.runner import run_workflow
from tests.integration.test_workflow_run import EXAMPLE


def test_a_first_run_refused_before_any_step_leaves_no_folder_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An SSH node refused by the preflight, after the run directory was made: the run's
    ``runs/<workflow>/`` (and ``runs/``) had stayed, empty; what was there before stays."""
    monkeypatch.chdir(tmp_path)
    with socket.socket() as closed:  # bound, not listening: connections are refused
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
        refused = [
            "cluster.backend=ssh",
            f"distributed.nodes=[{{host: 127.0.0.1, ssh_port: {port}}}]",
            "params.size=128",
        ]

        def refused_run(**kw: object) -> None:
            with pytest.raises(ConfigError, match="not reachable"):
                run_workflow(EXAMPLE, overrides=refused, report=False, **kw)  # type: ignore[arg-type]

        said: list[str] = []
        refused_run(announce=said.append)
        assert not (tmp_path / "runs").exists()
        # the run directory it named as it began is said gone (a reader looked there)
        [made] = [line for line in said if line.startswith("run directory: ")]
        assert said[-1] == (
            f"run directory {made.removeprefix('run directory: ')}: nothing kept (refused "
            "before any step)"
        )
        (tmp_path / "runs" / "other").mkdir(parents=True)
        refused_run()
        assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == ["other"]
        refused_run(run_dir="a/b/c")
        assert not (tmp_path / "a").exists()
        (tmp_path / "mine").mkdir()
        refused_run(run_dir="mine")
        assert (tmp_path / "mine").is_dir() and not any((tmp_path / "mine").iterdir())
