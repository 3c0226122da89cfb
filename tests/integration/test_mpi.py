"""``submit`` on the mpi backend: a real ``mpirun -np 4`` (Open MPI) with dask-mpi inside."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from openclaw_dask.config.tls import create_certificates
from openclaw_dask.workflows.runner import run_workflow
from tests.conftest import ROOT
from tests.integration.test_workflow_run import start_in_own_group
from tests.integration.user_ops import FAILING_WORKFLOW

pytestmark = pytest.mark.mpi

EXE = Path(sys.executable).with_name("openclaw-dask")
EXAMPLE = ROOT / "workflows/example.yaml"
SMALL = ["params.size=128", "params.chunk=64", "params.steps=120"]
COMMON = [*SMALL, "cluster.dashboard_address=127.0.0.1:0", "parallel.deterministic_mode=true"]


def sets(items: list[str]) -> list[str]:
    return [arg for item in items for arg in ("--set", item)]


#: the example under mpirun, long enough to be stopped after its first checkpoint (step 100)
LONG_RUN = [
    str(EXAMPLE),
    "--backend",
    "mpi",
    *sets(["params.size=256", "params.chunk=128", "params.steps=500"]),
    *sets(["distributed.sync_interval=100", "cluster.dashboard_address=null"]),
    # 16 steps a task (the default was 16 when this was timed): at 64 the 400 steps after the
    # first checkpoint ran out before the SIGTERM reached the ranks (a run that completed)
    *sets(["distributed.batch_size=16"]),
]


def submit(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run(
        [str(EXE), "submit", *args], capture_output=True, text=True, timeout=240, env=env
    )


def record_of(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / "run.json").read_text())


@pytest.fixture(autouse=True)
def _needs_mpirun() -> None:
    assert shutil.which("mpirun"), "Open MPI's mpirun is not installed (scripts/setup-env.sh)"


def test_example_under_mpirun_equals_local_run_bit_for_bit(tmp_path: Path) -> None:
    local = run_workflow(
        EXAMPLE,
        overrides=[*COMMON, "parallel.processes=1", "parallel.thread_pool_size=2"],
        run_dir=tmp_path / "local",
        report=False,
    )
    assert local["status"] == "completed" and local["plan"]["backend"] == "local"

    run_dir = tmp_path / "mpi"
    # the backend from the config (not --backend): the inner submit must not launch again;
    # worker ranks get the configured threads, pinning and allocator
    mpi = [
        "cluster.backend=mpi",
        "parallel.processes=2",
        "parallel.thread_pool_size=2",
        "parallel.thread_affinity=compact",
        "memory.allocator=jemalloc",
        "memory.per_thread_pool_size=512MiB",  # worker ranks have no nanny: dask-mpi's limit
    ]
    with socket.socket() as taken:  # the dashboard's port is taken: said in one line
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        dashboard = f"cluster.dashboard_address=127.0.0.1:{port}"
        result = submit(str(EXAMPLE), "--run-dir", str(run_dir), *sets([*COMMON, *mpi, dashboard]))
    assert result.returncode == 0, result.stderr
    assert f"/status (port {port} was taken: another cluster running?)" in result.stderr
    assert "UserWarning" not in result.stderr and "warnings.warn" not in result.stderr
    line = next(x for x in result.stderr.splitlines() if x.startswith("mpirun: "))
    assert "mpirun -np 4 --bind-to none" in line
    assert "-m openclaw_dask.cli.mpi_entry" in line and "-- submit" in line
    assert (os.getuid() == 0) == line.startswith("mpirun: OMPI_ALLOW_RUN_AS_ROOT=1 ")
    assert result.stdout.count("completed example-smoothing") == 1  # once, by the launcher
    assert f"outputs:  {run_dir.resolve()}" in result.stdout
    assert "Traceback" not in result.stderr

    rec = record_of(run_dir)
    assert rec["status"] == "completed" and rec["plan"]["backend"] == "mpi"
    assert rec["mpirun"] == line.removeprefix("mpirun: ")
    assert any("ranks 2-3 workers" in note for note in rec["plan"]["notes"])
    assert rec["cluster"]["scheduler"].startswith("tcp://127.0.0.1:")  # interface lo
    workers = {w["name"]: w for w in rec["cluster"]["workers"].values()}
    assert sorted(workers) == ["2", "3"]  # dask-mpi workers are ranks 2 and 3
    planned = rec["plan"]["layout"]["affinity"]
    for rank, worker in workers.items():
        assert worker["nthreads"] == 1 and worker["allocator"] == "jemalloc"
        assert worker["memory_limit"] == 512 * 2**20
        assert worker["affinity"] == planned[int(rank) - 2]
    for step in ("field", "diffuse", "profile"):
        assert rec["steps"][step]["checksums"] == local["steps"][step]["checksums"], step


def test_step_failure_under_mpirun_exits_1_with_the_ops_message(tmp_path: Path) -> None:
    # over tls, too: the ranks take the certificates from the plan's dask config
    certs = create_certificates(tmp_path / "certs")
    tls = [
        "distributed.communication_backend=tls",
        f"distributed.tls.ca_file={certs.ca_file}",
        f"distributed.tls.cert={certs.nodes[0].cert}",
        f"distributed.tls.key={certs.nodes[0].key}",
    ]
    wf = tmp_path / "fails.yaml"
    wf.write_text(FAILING_WORKFLOW)
    run_dir = tmp_path / "run"
    result = submit(
        str(wf), "--backend", "mpi", "--run-dir", str(run_dir),
        *sets(["cluster.dashboard_address=null", *tls]),
    )  # fmt: skip
    assert result.returncode == 1, result.stderr
    assert result.stderr.count("the op's own error: kaboom") == 1
    # Open MPI's two banners on a rank's non-zero exit (10 lines, before our own) are not
    # shown for an outcome rank 1 reports itself
    for banner in ("Primary job", "mpirun detected", "-----"):
        assert banner not in result.stderr, result.stderr
    assert "failed: step 'bad' (op tests.integration.user_ops:explode): ValueError" in (
        result.stderr
    )
    assert "Traceback" not in result.stderr
    rec = record_of(run_dir)
    assert rec["status"] == "failed" and rec["steps"]["field"]["status"] == "completed"
    assert rec["cluster"]["scheduler"].startswith("tls://127.0.0.1:")


def test_dry_run_prints_the_mpirun_line_and_starts_nothing(tmp_path: Path) -> None:
    result = submit(str(EXAMPLE), "--backend", "mpi", "--dry-run", *sets(SMALL))
    assert result.returncode == 0, result.stderr
    line = next(x for x in result.stdout.splitlines() if x.startswith("mpirun: "))
    assert "mpirun -np 4 --bind-to none" in line
    assert "mpi_entry PLAN.json -- submit" in line and "--backend mpi --run-dir RUN_DIR" in line
    assert "params.size=128" in line
    assert not Path("runs").exists()


def test_missing_mpirun_is_bad_input_naming_the_backend(tmp_path: Path) -> None:
    config = tmp_path / "openclaw.config"
    config.write_text("cluster:\n  backend: mpi\n")
    empty = tmp_path / "bin"
    empty.mkdir()
    result = submit(str(EXAMPLE), "--config", str(config), env={"PATH": str(empty)})
    assert result.returncode == 2, result.stderr
    assert f"{config}:2: cluster.backend: mpi launches through 'mpirun'" in result.stderr
    assert "Traceback" not in result.stderr
    forced = submit(str(EXAMPLE), "--backend", "mpi", env={"PATH": str(empty)})
    assert forced.returncode == 2
    assert "--backend mpi: cluster.backend: mpi launches through 'mpirun'" in forced.stderr


def test_address_and_mpi_backend_together_are_bad_input() -> None:
    result = submit(str(EXAMPLE), "--backend", "mpi", "--address", "tcp://127.0.0.1:9")
    assert result.returncode == 2
    assert "--address: cluster.scheduler_address: attaches to a running scheduler" in result.stderr
    assert "Traceback" not in result.stderr and not Path("runs").exists()


def test_sigterm_stops_every_rank_and_resume_under_mpirun_continues(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    args = LONG_RUN
    proc = _start_past_first_checkpoint(args, run_dir)
    # the ranks are frozen until Open MPI passes them the SIGTERM (mpirun sends SIGCONT, then
    # SIGTERM: ~0.25 s after submit's signal here); the rest of the run takes ~1 s on a fast
    # core, less than the poll and the signal's way there (seen: a run whose step finished)
    with _frozen(_ranks(proc), until=signal.SIGTERM):
        proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    rec = record_of(run_dir)
    assert rec["status"] == "interrupted" and rec["steps"]["diffuse"]["status"] == "interrupted"
    assert rec["mpirun"].endswith(f"--run-dir {run_dir.resolve()}")

    resumed = submit(*args, "--resume", str(run_dir))
    assert resumed.returncode == 0, resumed.stderr
    rec = record_of(run_dir)
    assert rec["status"] == "completed" and rec["attempts"] == 2
    assert rec["steps"]["field"]["skipped"].startswith("completed in an earlier attempt")
    assert rec["steps"]["diffuse"]["resumed_from_step"] >= 100


def test_ctrl_c_while_the_ranks_start_leaves_nothing_that_claims_a_run(tmp_path: Path) -> None:
    """Ctrl-C at once after the ``mpirun`` line, while the ranks still import: ``mpirun``
    exits at once and the ranks about a second later. The launch had said "run.json says so;
    continue with --resume DIR" of a directory without run.json (rank 1 had not written it
    yet), which ``--resume`` refused, and returned while ranks still ran. The folders made for
    the run go too (they had stayed, empty, as a first run's ``runs/<workflow>`` did)."""
    run_dir = tmp_path / "runs" / "run"
    proc = start_in_own_group(
        run_dir, [*LONG_RUN[1:], "--no-report"], stderr=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert proc.stderr is not None
    line = proc.stderr.readline()
    while line and not line.startswith("mpirun: "):
        line = proc.stderr.readline()
    os.killpg(proc.pid, signal.SIGINT)  # as a terminal does: submit, mpirun and the ranks
    plan = line.split(" -m openclaw_dask.cli.mpi_entry ")[1].split()[0]
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    assert stderr.strip().endswith("interrupted before the run began: nothing to resume"), stderr
    assert not (tmp_path / "runs").exists() and "Traceback" not in stderr
    left = [p.pid for p in psutil.process_iter(["cmdline"]) if plan in (p.info["cmdline"] or ())]
    assert not left, f"ranks of the launch outlived it: {left}"


#: the climate workflow under mpirun: its bands are scattered to the workers, so a lost
#: worker rank's bands are gone at once and rank 1 sees the loss before mpirun ends it
CLIMATE_RUN = [
    str(ROOT / "workflows/climate.yaml"),
    "--backend",
    "mpi",
    *sets(["params.spinup_years=3", "params.years=1", "distributed.sync_interval=500"]),
    *sets(["cluster.dashboard_address=null"]),
]


def test_a_worker_rank_killed_fails_the_step_in_one_line_and_resume_continues(
    tmp_path: Path,
) -> None:
    """Open MPI ends every rank when one dies: a SIGKILLed worker rank (rank 3; rank 0 is the
    scheduler, rank 1 the client) ends the run. That is said in one line as what it is (not an
    interrupt, a recovery begun, nor an error of ours), the record says failed, and
    ``--resume`` continues from the last checkpoint."""
    run_dir = tmp_path / "run"
    args = [*CLIMATE_RUN, "--no-report"]
    proc = _start_past_first_checkpoint(args, run_dir, "simulate", 1000)
    ranks = {child.environ().get("OMPI_COMM_WORLD_RANK"): child for child in _ranks(proc)}
    ranks["3"].kill()
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 1, stderr
    assert (
        "failed: step 'simulate': mpirun exited with code 137 (a rank ended on signal 9, "
        "SIGKILL: killed, or out of memory) before the workflow finished" in stderr
    ), stderr
    # our two lines end the output (a surviving worker rank may log Dask's own traceback of
    # the connection the dead rank broke, above them)
    assert stderr.splitlines()[-1].endswith(f"--resume {run_dir} continues from it"), stderr
    assert stderr.splitlines()[-2].startswith("failed: step 'simulate': mpirun exited"), stderr
    # rank 1 saw the lost worker (its bands were gone) while mpirun ended the ranks: no
    # recovery is begun, said nor recorded, and the scheduler's list of lost keys is not shown
    noise = ("interrupted", "OPENCLAW_DEBUG", "fix the step", "continuing from step")
    for text in (*noise, "caused the cluster to lose"):
        assert text not in stderr, stderr
    rec = record_of(run_dir)
    assert rec["status"] == "failed" and rec["steps"]["simulate"]["status"] == "failed"
    assert "recoveries" not in rec["steps"]["simulate"], rec["steps"]["simulate"]
    assert rec["error"]["step"] == "simulate"
    assert rec["error"]["message"].startswith("MpiRunError: mpirun exited with code 137")

    resumed = submit(*args, "--resume", str(run_dir))
    assert resumed.returncode == 0, resumed.stderr
    rec = record_of(run_dir)
    assert rec["status"] == "completed" and rec["attempts"] == 2
    assert rec["steps"]["simulate"]["resumed_from_step"] >= 1000


def _start_past_first_checkpoint(
    args: list[str], run_dir: Path, step: str = "diffuse", at: int = 100
) -> subprocess.Popen[str]:
    """``submit ARGS --run-dir RUN_DIR``, returned once its ``step`` has checkpointed step
    ``at``."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [str(EXE), "submit", *args, "--run-dir", str(run_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        record = _read(run_dir).get("steps", {}).get(step, {})
        if record.get("checkpoint_step", 0) >= at:
            break
        time.sleep(0.2)
    assert proc.poll() is None, proc.communicate()
    return proc


def _ranks(proc: subprocess.Popen[str]) -> list[psutil.Process]:
    """The ranks that ``mpirun`` started under ``proc`` (not ``mpirun``, whose command line
    names ``mpi_entry`` too)."""
    return [
        child
        for child in psutil.Process(proc.pid).children(recursive=True)
        if "OMPI_COMM_WORLD_RANK" in child.environ()
    ]


@contextlib.contextmanager
def _frozen(ranks: list[psutil.Process], until: signal.Signals) -> Iterator[None]:
    """Stop ``ranks`` (SIGSTOP) around the block, then until each has signal ``until`` pending,
    has been resumed by ``mpirun`` or is gone (30 s at most); then resume them."""
    assert len(ranks) == 4, ranks
    for rank in ranks:
        rank.suspend()
    try:
        yield
        bit = 1 << (until - 1)
        deadline = time.monotonic() + 30
        waiting = list(ranks)
        while waiting and time.monotonic() < deadline:
            waiting = [rank for rank in waiting if not _holds(rank, bit)]
            time.sleep(0.05)
    finally:
        for rank in ranks:
            with contextlib.suppress(psutil.NoSuchProcess):
                rank.resume()


def _holds(rank: psutil.Process, bit: int) -> bool:
    """Whether ``rank`` has the pending signal ``bit``, runs again, or is gone."""
    try:
        status = Path(f"/proc/{rank.pid}/status").read_text()
        stopped = rank.status() == psutil.STATUS_STOPPED
    except (OSError, psutil.NoSuchProcess):
        return True
    pending = {k: int(v, 16) for k, v in re.findall(r"^(SigPnd|ShdPnd):\s*(\w+)$", status, re.M)}
    return not stopped or any(mask & bit for mask in pending.values())


def _read(run_dir: Path) -> dict[str, Any]:
    try:
        return record_of(run_dir)
    except (OSError, ValueError):
        return {}
