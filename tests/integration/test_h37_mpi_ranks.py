"""A hand-written ``mpirun`` with fewer ranks than the plan is refused in one line, exit 2."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from openclaw_dask.cli.mpi_entry import planned_ranks, world_size_problem
from openclaw_dask.runtime.mpi_launch import launch_env, other_mpi
from tests.conftest import ROOT
from tests.integration.test_mpi import EXAMPLE, SMALL, sets
from tests.integration.user_ops import FAILING_WORKFLOW

pytestmark = pytest.mark.mpi

MPI_CONFIG = ROOT / "configs" / "mpi-hpc.config"


def plan_file(tmp_path: Path) -> tuple[Path, int]:
    """`config plan --json` of mpi-hpc.config (what a batch script passes), and its ranks."""
    made = subprocess.run(
        [sys.executable, "-m", "openclaw_dask", "config", "plan", str(MPI_CONFIG), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    plan = json.loads(made.stdout)
    path = tmp_path / "plan.json"
    path.write_text(made.stdout)
    ranks = planned_ranks(plan)
    assert ranks == plan["layout"]["processes"] + 2
    return path, ranks


def by_hand(plan: Path, ranks: int, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """`mpirun -np RANKS python -m openclaw_dask.cli.mpi_entry PLAN -- submit ...`."""
    command = ["mpirun", "-np", str(ranks), "--oversubscribe", sys.executable]
    command += ["-m", "openclaw_dask.cli.mpi_entry", str(plan), "--", "submit", str(EXAMPLE)]
    command += ["--config", str(MPI_CONFIG), "--no-report", *sets(SMALL)]
    command += ["--run-dir", str(tmp_path / "run")]
    env = {**os.environ, "PYTHONPATH": str(ROOT), **launch_env()}
    return subprocess.run(command, capture_output=True, text=True, timeout=200, env=env)


@pytest.mark.parametrize("short", [1, 2])
def test_fewer_ranks_than_a_cluster_needs_is_one_line_exit_2(tmp_path: Path, short: int) -> None:
    """-np 2: dask-mpi's WorldTooSmallException, a traceback from every rank, exit 1."""
    assert shutil.which("mpirun")
    plan, planned = plan_file(tmp_path)
    done = by_hand(plan, short, tmp_path)
    assert done.returncode == 2, done.stderr[-3000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert errors == [f"error: mpi_entry: {world_size_problem(short, planned)}"]
    assert "needs at least 3" in errors[0] and f"mpirun -np {planned}" in errors[0]
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "run").exists()  # no run was begun


def test_fewer_worker_ranks_than_the_plan_is_refused_before_the_run(tmp_path: Path) -> None:
    """-np 3 for a plan of 4: the client waited 60 s for the second worker, then failed with
    WorkerStartTimeoutError, exit 1."""
    plan, planned = plan_file(tmp_path)
    if planned < 4:
        pytest.skip("a plan of one worker rank has no smaller count that makes a cluster")
    done = by_hand(plan, planned - 1, tmp_path)
    assert done.returncode == 2, done.stderr[-3000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    workers = planned - 3
    assert errors == [
        f"error: mpi_entry: {planned - 1} MPI ranks make {workers} worker rank(s) where the "
        f"plan has {planned - 2}; the plan's launch line starts {planned} (mpirun -np {planned})"
    ]
    assert not (tmp_path / "run").exists()


def test_world_size_against_the_plan() -> None:
    assert world_size_problem(4, 4) is None
    assert world_size_problem(3, None) is None  # a plan without a launch line: no count
    assert "needs at least 3" in str(world_size_problem(2, None))
    assert world_size_problem(6, 4) == (
        "6 MPI ranks make 4 worker rank(s) where the plan has 2; the plan's launch line starts 4"
        " (mpirun -np 4)"
    )
    assert planned_ranks({"launch_command": ["mpirun", "-np", "7", "--bind-to", "none"]}) == 7
    assert planned_ranks({"launch_command": None}) is None


def batch_line(plan: Path, *client: str) -> subprocess.CompletedProcess[str]:
    """The plan's own launch line, as a batch script copies it, with the client command."""
    launch = json.loads(plan.read_text())["launch_command"]
    command = [*launch, str(plan), "--", *client]
    env = {**os.environ, "PYTHONPATH": str(ROOT), **launch_env()}
    return subprocess.run(command, capture_output=True, text=True, timeout=200, env=env)


def test_a_batch_scripts_mpirun_says_how_the_run_ended(tmp_path: Path) -> None:
    """Rank 1 left the summary and a failed step's lines to the submit that launched mpirun;
    under a batch script's own mpirun line there is none, and nothing said either."""
    plan, _ = plan_file(tmp_path)
    run = tmp_path / "run"
    done = batch_line(
        plan, "submit", str(EXAMPLE), "--config", str(MPI_CONFIG), "--no-report",
        *sets(SMALL), "--run-dir", str(run),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    # Open MPI gives the ranks a terminal for stdout, also when mpirun's goes to a file (a batch
    # job's log): the lines come plain all the same, without rich's colour codes
    stdout = done.stdout
    assert "\x1b[" not in stdout, stdout
    assert stdout.count("completed example-smoothing in ") == 1, stdout
    assert f"record:   {run}/run.json" in stdout
    wf = tmp_path / "fails.yaml"
    wf.write_text(FAILING_WORKFLOW)
    failed = batch_line(
        plan, "submit", str(wf), "--config", str(MPI_CONFIG), "--no-report",
        "--run-dir", str(tmp_path / "failed"),
    )  # fmt: skip
    assert failed.returncode == 1, failed.stderr[-3000:]
    said = [line for line in failed.stderr.splitlines() if line.startswith("failed: ")]
    assert said == [
        "failed: step 'bad' (op tests.integration.user_ops:explode): ValueError: the op's own "
        "error: kaboom"
    ]


def test_the_submit_that_launches_mpirun_still_says_it_alone(tmp_path: Path) -> None:
    """Its rank 1 stays quiet: one summary, not two (the launcher's plan file is marked)."""
    run = tmp_path / "run"
    done = subprocess.run(
        [sys.executable, "-m", "openclaw_dask", "submit", str(EXAMPLE), "--config",
         str(MPI_CONFIG), "--no-report", *sets(SMALL), "--run-dir", str(run)],
        capture_output=True, text=True, timeout=200,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.count("completed example-smoothing in ") == 1, done.stdout


#: A stand-in for MPICH's Hydra mpirun (installing MPICH would take over this machine's
#: `mpirun` alternative): its `--version` text, and its refusal of an Open MPI option.
HYDRA = """#!/bin/sh
if [ "$1" = "--version" ]; then
  printf 'HYDRA build details:\\n    Version:                                 4.0.2\\n'
  exit 0
fi
echo "[mpiexec@host] match_arg (utils/args/args.c:163): unrecognized argument bind-to" >&2
exit 255
"""


def test_another_mpis_mpirun_first_on_path_is_bad_input_before_the_run(tmp_path: Path) -> None:
    """It ran, failed on `--bind-to` and was said as 'mpirun exited with code 255 before the
    workflow finished: Open MPI ends every rank when one dies', exit 1, a run directory made."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "mpirun"
    fake.write_text(HYDRA)
    fake.chmod(0o755)
    run = tmp_path / "run"
    done = subprocess.run(
        [sys.executable, "-m", "openclaw_dask", "submit", str(EXAMPLE), "--backend", "mpi",
         "--no-report", *sets(SMALL), "--run-dir", str(run)],
        capture_output=True, text=True, timeout=200,
        env={**os.environ, "PYTHONPATH": str(ROOT), "PATH": f"{bin_dir}:{os.environ['PATH']}"},
    )  # fmt: skip
    assert done.returncode == 2, done.stderr[-3000:]
    assert done.stderr.splitlines()[0] == (
        "error: --backend mpi: cluster.backend: mpi launches through Open MPI's mpirun (its -x, "
        f"--bind-to and --oversubscribe options), but {fake} is another MPI's ('HYDRA build "
        "details:'): put Open MPI's mpirun first on PATH (e.g. `module load openmpi`; Debian: "
        "apt-get install openmpi-bin), or choose another cluster.backend"
    )
    assert not run.exists()


def test_open_mpis_own_mpirun_is_taken() -> None:
    found = shutil.which("mpirun")
    assert found and other_mpi(found) is None


@pytest.mark.parametrize(
    ("says", "other"),
    [
        ("Intel(R) MPI Library for Linux* OS, Version 2021.10", True),
        ("HYDRA build details:", True),
        ("a site's own mpirun wrapper 1.0", False),  # not known to refuse: left to the launch
        ("mpirun (Open MPI) 5.0.3", False),
    ],
)
def test_only_an_mpirun_known_to_be_another_mpis_is_refused(
    tmp_path: Path, says: str, other: bool
) -> None:
    script = tmp_path / "mpirun"
    script.write_text(f"#!/bin/sh\necho '{says}'\n")
    script.chmod(0o755)
    assert (other_mpi(str(script)) is not None) == other


def test_a_batch_line_without_the_plans_variables_runs_as_the_plans_own(tmp_path: Path) -> None:
    """`mpirun -np N python -m openclaw_dask.cli.mpi_entry plan.json -- submit ...`, as the
    README writes it, without the plan's `-x` options (srun has none): the workers had been
    refused, "LD_PRELOAD did not take effect: is libjemalloc installed on this node?" (it was),
    or their pinning said wrong, exit 2. Each rank now starts again with the plan's variables."""
    plan, planned = plan_file(tmp_path)
    wanted = json.loads(plan.read_text())["worker_env"]
    assert "LD_PRELOAD" in wanted and "_OPENCLAW_AFFINITY" in wanted  # what mpi-hpc asks
    done = by_hand(plan, planned, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "completed example-smoothing in " in done.stdout
    record = json.loads((tmp_path / "run" / "run.json").read_text())
    allocators = {w["allocator"] for w in record["cluster"]["workers"].values()}
    assert allocators == {"jemalloc"}, record["cluster"]["workers"]
