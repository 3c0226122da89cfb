"""``openclaw-dask cluster up/status/down`` and ``memory compact`` from the shell."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from openclaw_dask.runtime.state import read_state

EXE = Path(sys.executable).with_name("openclaw-dask")


def sh(*args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(EXE), *args], capture_output=True, text=True, timeout=timeout, env=os.environ.copy()
    )


def test_up_status_compact_down() -> None:
    up = sh(
        "cluster",
        "up",
        "--set",
        "cluster.dashboard_address=127.0.0.1:0",
        "--set",
        "parallel.thread_affinity=compact",
        "--set",
        "memory.allocator=jemalloc",
    )
    assert up.returncode == 0, up.stderr
    state = read_state()
    assert state and up.stdout.startswith(f"cluster up: {state['address']}")
    try:
        again = sh("cluster", "up")
        assert again.returncode == 2
        assert f"already running at {state['address']}" in again.stderr

        status = sh("cluster", "status")
        assert status.returncode == 0, status.stderr
        rows = [r for r in status.stdout.splitlines() if r.startswith("│ tcp://127.0.0.1")]
        assert len(rows) == 2 and all("jemalloc" in r for r in rows)
        cores = sorted(r.split("│")[4].strip() for r in rows)
        assert cores == ["0", "1"]

        compact = sh("memory", "compact")
        assert compact.returncode == 0 and compact.stdout.count("mallctl(arena.all.purge)") == 2
    finally:
        down = sh("cluster", "down")
    assert down.returncode == 0 and "stopped" in down.stdout
    assert read_state() is None
    assert sh("cluster", "status").returncode == 1
    assert os.environ.get("LD_PRELOAD") is None


def test_bad_input_exits_2_and_starts_nothing() -> None:
    nonexistent_cores = sh("cluster", "up", "--set", "parallel.thread_affinity=[[0],[64]]")
    assert nonexistent_cores.returncode == 2
    assert "parallel.thread_affinity[1]: core 64 does not exist" in nonexistent_cores.stderr
    assert "Traceback" not in nonexistent_cores.stderr
    assert read_state() is None

    unreachable = sh("cluster", "status", "--address", "tcp://127.0.0.1:1")
    assert unreachable.returncode == 2
    assert "no scheduler answers at tcp://127.0.0.1:1" in unreachable.stderr
    assert "Traceback" not in unreachable.stderr
