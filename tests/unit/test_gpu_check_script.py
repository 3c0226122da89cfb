"""``scripts/gpu-check.sh``'s own plumbing, run with a stand-in interpreter (no GPU, no cluster).

The stand-in answers ``-m openclaw_dask benchmark/tune`` by writing the file it is told to
(``--json``, ``--out``) where it runs, passes code on stdin or ``-c`` to this interpreter, and
does nothing for the rest (pytest, ``scripts/gpu_check.py``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

STAND_IN = f"""#!/usr/bin/env bash
echo "$PWD $*" >> "$STAND_IN_LOG"
case "$1 ${{2:-}}" in
    "-m openclaw_dask")
        while [ $# -gt 0 ]; do
            case "$1" in --json | --out) echo written > "$2" ;; esac
            shift
        done ;;
    "-c "* | "- "*) exec {sys.executable} "$@" ;;
esac
exit 0
"""


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_a_relative_out_gets_the_benchmark_and_tune_files(tmp_path: Path) -> None:
    """Parts c and d run in a temporary folder of their own: with ``OUT=out`` they had written
    ``stencil-cpu.json`` and ``tuned.config`` there, under a relative ``out/`` gone with it."""
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts/gpu-check.sh", tmp_path / "scripts")  # it cds to its parent
    stand_in = tmp_path / "python"
    stand_in.write_text(STAND_IN)
    stand_in.chmod(0o755)
    log = tmp_path / "calls.log"
    env = {
        **os.environ,
        "OUT": "out",
        "PYTHON": str(stand_in),
        "STAND_IN_LOG": str(log),
        "GPU_CHECK_TUNE_BUDGET": "20s",
    }
    proc = subprocess.run(
        ["bash", "scripts/gpu-check.sh", "--dry", "--no-install"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (tmp_path / "out/gpu-check.log").is_file(), proc.stdout + proc.stderr
    assert (tmp_path / "out/stencil-cpu.json").read_text() == "written\n", proc.stdout
    assert (tmp_path / "out/tuned.config").read_text() == "written\n", proc.stdout
    # the budget reaches tune as given
    tune = [line for line in log.read_text().splitlines() if " tune " in line]
    assert len(tune) == 1 and "--budget 20s" in tune[0], tune
