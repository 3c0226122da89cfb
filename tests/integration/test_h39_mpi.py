"""Under mpirun, rank 1 waits for every worker rank before it checks and records the cluster
(a real ``mpirun -np 4``, Open MPI, with dask-mpi inside)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from tests.integration.test_mpi import EXAMPLE, SMALL, sets, submit

pytestmark = pytest.mark.mpi

#: a worker preload that holds each worker rank back before it registers with the scheduler
SLOW_START = "import time\n\ndef dask_setup(worker):\n    time.sleep(4)\n"


def test_worker_ranks_that_register_late_are_all_checked_and_recorded(tmp_path: Path) -> None:
    """Mutation audit: rank 1's wait for the worker ranks dropped survived: they had always
    registered before rank 1 connected. Rank 1 then checked and recorded none of them (the
    run's record listed no workers, and their pinning went unverified)."""
    assert shutil.which("mpirun"), "Open MPI's mpirun is not installed (scripts/setup-env.sh)"
    preload = tmp_path / "slow_start.py"
    preload.write_text(SLOW_START)
    run_dir = tmp_path / "run"
    items = [
        *SMALL,
        "cluster.backend=mpi",
        "cluster.dashboard_address=null",
        "parallel.processes=2",
        f'dask.distributed.worker.preload=["{preload}"]',
    ]
    result = submit(str(EXAMPLE), "--run-dir", str(run_dir), "--no-report", *sets(items))
    assert result.returncode == 0, result.stderr
    record = json.loads((run_dir / "run.json").read_text())
    names = sorted(w["name"] for w in record["cluster"]["workers"].values())
    assert names == ["2", "3"], record["cluster"]


#: a site preload that makes worker rank 3 compute for another CPU (numba's target), after
#: numba is loaded: what a rank on a node of another CPU kind would be
OTHER_CPU_ON_RANK_3 = (
    "import os\n\n"
    "def dask_setup(worker):\n"
    "    if os.environ.get('OMPI_COMM_WORLD_RANK') == '3':\n"
    "        import numba\n"
    "        numba.config.CPU_NAME = 'generic'\n"
)


def test_a_worker_rank_that_computes_unlike_the_others_is_refused_in_one_line(
    tmp_path: Path,
) -> None:
    """The worker checks run under mpirun too: in deterministic mode, of two ranks that
    compute unlike each other one is refused by name before any step, exit 2 (mutation audit:
    rank 1's plugin registration and its verification of the workers, each dropped, survived:
    no mpi test had a rank that failed a check)."""
    assert shutil.which("mpirun"), "Open MPI's mpirun is not installed (scripts/setup-env.sh)"
    preload = tmp_path / "other_cpu.py"
    preload.write_text(OTHER_CPU_ON_RANK_3)
    run_dir = tmp_path / "run"
    items = [
        *SMALL,
        "cluster.backend=mpi",
        "cluster.dashboard_address=null",
        "parallel.processes=2",
        "parallel.deterministic_mode=true",
        f'dask.distributed.worker.preload=["{preload}"]',
    ]
    result = submit(str(EXAMPLE), "--run-dir", str(run_dir), "--no-report", *sets(items))
    assert result.returncode == 2, result.stderr
    # rank 1 names the worker and why; the launcher then points at it
    refused = [ln for ln in result.stderr.splitlines() if ln.startswith("error: --set: ")]
    assert len(refused) == 1, result.stderr
    assert "parallel.deterministic_mode: worker tcp://" in refused[0], refused[0]
    assert (
        "refused: parallel.deterministic_mode is on and this worker computes unlike" in (refused[0])
    )
    # two kinds, one rank each: the tie goes to the first worker by address, so either rank
    # may be the one refused
    assert re.search(r"cpu (generic \(cluster: [^)]+\)|\S+ \(cluster: generic\))", refused[0])
    assert "the workflow was refused inside the mpi launch" in result.stderr
    assert "Traceback" not in result.stderr
    assert "Primary job" not in result.stderr and "-----" not in result.stderr  # Open MPI's
