"""Fixtures for tests on real clusters: isolated state, no stray workers."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.conftest import ROOT

ARTIFACTS = ROOT / "test-artifacts"


def _isolate(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    """No developer config (``OPENCLAW_*``), a private state dir, and ``folder`` as the cwd."""
    for name in list(os.environ):
        if name.startswith("OPENCLAW_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("OPENCLAW_STATE_DIR", str(folder / "state"))
    monkeypatch.chdir(folder)


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """No developer config, a private state dir, and no worker processes left behind."""
    _isolate(monkeypatch, tmp_path)
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


@pytest.fixture(scope="session")
def uninterrupted_banded_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The run record of the two-band climate workflow with ``KILLED_RUN_SETS``, uninterrupted
    on a local cluster: what the tests that kill a worker mid-run (locally, over SSH) compare
    their checksums with. Run once a session: it took ~20 s inside each of them."""
    from openclaw_dask.workflows.runner import run_workflow
    from tests.integration.test_climate_workflow import KILLED_RUN_SETS, _banded

    folder = tmp_path_factory.mktemp("uninterrupted")
    with pytest.MonkeyPatch.context() as monkeypatch:
        _isolate(monkeypatch, folder)
        banded = _banded(folder)
        return run_workflow(banded, overrides=KILLED_RUN_SETS, run_dir=folder / "run", report=False)


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
