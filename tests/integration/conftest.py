"""Fixtures for tests on real clusters: isolated state, no stray workers."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tests.conftest import ROOT

ARTIFACTS = ROOT / "test-artifacts"


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """No developer config, a private state dir, and no worker processes left behind."""
    for name in list(os.environ):
        if name.startswith("OPENCLAW_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("OPENCLAW_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.chdir(tmp_path)
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    yield
    # the resource tracker lives as long as this process: waiting for it cost 15 s a session
    left = [
        p for p in psutil.Process().children(recursive=True) if p.pid not in before and _is_stray(p)
    ]
    _, alive = psutil.wait_procs(left, timeout=15)
    stray = [p for p in alive if _is_stray(p)]
    for p in stray:
        p.kill()
    assert not stray, f"processes left running: {[p.pid for p in stray]}"


def _is_stray(p: psutil.Process) -> bool:
    """A live process other than multiprocessing's long-lived resource tracker."""
    try:
        if p.status() == psutil.STATUS_ZOMBIE:
            return False
        return "resource_tracker" not in " ".join(p.cmdline())
    except psutil.NoSuchProcess:
        return False


def isolated_env(folder: Path) -> dict[str, str]:
    """This process's environment without OPENCLAW_* overrides, with a private state dir.

    For CLI subprocesses started outside the ``_isolated`` fixture's scope (module fixtures).
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENCLAW_")}
    env["OPENCLAW_STATE_DIR"] = str(folder / "state")
    return env


@pytest.fixture
def artifacts() -> Path:
    """Folder for files a reviewer may want to look at (screenshots, reports)."""
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS
