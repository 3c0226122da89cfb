"""What ``openclaw-dask config validate`` says about where a bad value came from: the header
names the layer (file, environment variable, ``--set``) as the problem's line does."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from openclaw_dask.exitcodes import EXIT_BAD_INPUT
from tests.unit.test_cli import run_cli


def _no_search(tmp_path: Path) -> dict[str, str]:
    """An environment whose search order finds no config file (the built-in defaults)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENCLAW_")}
    return env | {"HOME": str(tmp_path)}


def _header_and_problem(proc: subprocess.CompletedProcess[str]) -> tuple[str, str]:
    assert proc.returncode == EXIT_BAD_INPUT, proc.stderr
    assert "Traceback" not in proc.stderr
    header, problem, count = proc.stderr.splitlines()
    assert count == "1 problem found"
    return header, problem


def test_validate_names_an_environment_variable_not_the_defaults_as_invalid(
    tmp_path: Path,
) -> None:
    env = _no_search(tmp_path) | {"OPENCLAW_PARALLEL__THREAD_POOL_SIZE": "abc"}
    proc = subprocess.run(
        [sys.executable, "-m", "openclaw_dask", "config", "validate"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    header, problem = _header_and_problem(proc)
    layer = "env OPENCLAW_PARALLEL__THREAD_POOL_SIZE"
    assert problem.startswith(f"error: {layer}: parallel.thread_pool_size: "), problem
    # the defaults are not what is invalid: the header said "built-in defaults: invalid"
    assert header == f"{layer}: invalid (on the built-in defaults)"


def test_validate_names_set_as_invalid_and_the_file_it_was_set_on(tmp_path: Path) -> None:
    good = tmp_path / "good.config"
    good.write_text("parallel:\n  processes: 1\n")
    proc = run_cli("config", "validate", str(good), "--set", "parallel.processes=-2", cwd=tmp_path)
    header, problem = _header_and_problem(proc)
    assert problem.startswith("error: --set: parallel.processes: "), problem
    assert header == f"--set: invalid (on {good})"


def test_validate_names_the_file_when_the_file_is_invalid(tmp_path: Path) -> None:
    bad = tmp_path / "bad.config"
    bad.write_text("parallel:\n  processes: -3\n")
    header, problem = _header_and_problem(run_cli("config", "validate", str(bad), cwd=tmp_path))
    assert problem.startswith(f"error: {bad}:2: parallel.processes: "), problem
    assert header == f"{bad}: invalid"
