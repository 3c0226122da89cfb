"""Under mpirun, rank 1 waits for every worker rank before it checks and records the cluster
(a real ``mpirun -np 4``, Open MPI, with dask-mpi inside)."""

from __future__ import annotations

import json
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
