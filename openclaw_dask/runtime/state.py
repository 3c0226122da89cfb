"""The state file of the long-lived cluster of ``openclaw-dask cluster up``.

One JSON file, ``$OPENCLAW_STATE_DIR/cluster.json`` (default
``~/.local/state/openclaw-dask/cluster.json``), holds the scheduler address, the kind of
cluster (``backend``: local, cuda or ssh), the dashboard link and the pid of the process that
owns the cluster. A file whose process is gone is stale and is
removed when read.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def state_dir() -> Path:
    """Directory of the state file (``OPENCLAW_STATE_DIR`` or ``~/.local/state``)."""
    base = os.environ.get("OPENCLAW_STATE_DIR")
    return Path(base) if base else Path.home() / ".local" / "state" / "openclaw-dask"


def state_file() -> Path:
    """Path of the state file."""
    return state_dir() / "cluster.json"


def pid_alive(pid: int) -> bool:
    """True if a process with this pid exists."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def read_state() -> dict[str, Any] | None:
    """The running cluster's state, or ``None`` (stale files are removed)."""
    path = state_file()
    try:
        state = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(state, dict) or not pid_alive(int(state.get("pid", -1))):
        path.unlink(missing_ok=True)
        return None
    return state


def write_state(state: dict[str, Any]) -> Path:
    """Write the state file atomically (readers never see half a file)."""
    path = state_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(state, indent=2))
    tmp.replace(path)
    return path


def clear_state(pid: int | None = None) -> None:
    """Remove the state file (only if it belongs to ``pid`` when given)."""
    path = state_file()
    if pid is not None:
        try:
            if json.loads(path.read_text()).get("pid") != pid:
                return
        except (OSError, ValueError):
            return
    path.unlink(missing_ok=True)
