"""Unit tests never read the developer's own config or OPENCLAW_* variables."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _no_user_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Tests never read the developer's own config or OPENCLAW_* variables."""
    for name in list(os.environ):
        if name.startswith("OPENCLAW_"):
            monkeypatch.delenv(name)
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
