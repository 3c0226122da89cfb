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


def _run_with_stand_in(tmp_path: Path, **env_vars: str) -> subprocess.CompletedProcess[str]:
    """gpu-check.sh --dry with the stand-in interpreter; its calls go to ``calls.log``."""
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts/gpu-check.sh", tmp_path / "scripts")  # it cds to its parent
    stand_in = tmp_path / "python"
    stand_in.write_text(STAND_IN)
    stand_in.chmod(0o755)
    env = {
        **os.environ,
        "OUT": "out",
        "PYTHON": str(stand_in),
        "STAND_IN_LOG": str(tmp_path / "calls.log"),
        **env_vars,
    }
    return subprocess.run(
        ["bash", "scripts/gpu-check.sh", "--dry", "--no-install"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_a_relative_out_gets_the_benchmark_and_tune_files(tmp_path: Path) -> None:
    """Parts c and d run in a temporary folder of their own: with ``OUT=out`` they had written
    ``stencil-cpu.json`` and ``tuned.config`` there, under a relative ``out/`` gone with it."""
    proc = _run_with_stand_in(tmp_path, GPU_CHECK_TUNE_BUDGET="20s")
    log = tmp_path / "calls.log"
    assert (tmp_path / "out/gpu-check.log").is_file(), proc.stdout + proc.stderr
    assert (tmp_path / "out/stencil-cpu.json").read_text() == "written\n", proc.stdout
    assert (tmp_path / "out/tuned.config").read_text() == "written\n", proc.stdout
    # the budget reaches tune as given
    tune = [line for line in log.read_text().splitlines() if " tune " in line]
    assert len(tune) == 1 and "--budget 20s" in tune[0], tune


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
@pytest.mark.parametrize(("deadline", "budget"), [("200", "20s"), ("100", None)])
def test_tune_ends_inside_the_device_call(
    tmp_path: Path, deadline: str, budget: str | None
) -> None:
    """Parts a to c may take most of the call's 600 s; tune's budget then shrinks to end by
    ``GPU_CHECK_DEADLINE`` (with 60 s to spare), or part d is skipped, instead of the call being
    cut off with no tune report."""
    proc = _run_with_stand_in(tmp_path, GPU_CHECK_TUNE_BUDGET="20s", GPU_CHECK_DEADLINE=deadline)
    tune = [line for line in (tmp_path / "calls.log").read_text().splitlines() if " tune " in line]
    if budget is None:  # 100 s: under 45 s left for tune after the 60 s kept
        assert tune == [] and "skipped: " in proc.stdout and "GPU_CHECK_DEADLINE=100" in proc.stdout
    else:  # 200 s: the 20 s asked for fit
        assert len(tune) == 1 and f"--budget {budget}" in tune[0], tune


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_a_tune_budget_longer_than_the_call_is_cut_to_fit(tmp_path: Path) -> None:
    proc = _run_with_stand_in(tmp_path, GPU_CHECK_TUNE_BUDGET="10m", GPU_CHECK_DEADLINE="200")
    [tune] = [
        line for line in (tmp_path / "calls.log").read_text().splitlines() if " tune " in line
    ]
    budget = int(tune.split("--budget ")[1].split("s")[0])
    assert 45 <= budget <= 140, (tune, proc.stdout)  # 200 - 60 - the seconds parts a-c took
