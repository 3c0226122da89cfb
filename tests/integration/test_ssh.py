"""The SSH backend on real sshd servers: a workflow, cluster status, pre-flight, compression.

The hosts come from :mod:`tests.integration.sshd`: throwaway OpenSSH daemons with their own
host and user keys, one network namespace each when the tests run as root (else 127.0.0.x).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dask
import numpy as np
import psutil
import pytest
from distributed import Client
from distributed.comm import get_address_host

from openclaw_dask.config import load_config
from openclaw_dask.config.tls import create_certificates
from openclaw_dask.runtime.cluster import start_cluster
from openclaw_dask.runtime.hangup import GRACE
from openclaw_dask.runtime.inspect import inspect_workers
from openclaw_dask.runtime.processes import wait_gone
from openclaw_dask.runtime.state import read_state
from openclaw_dask.translate.plan import QUIET_MONITORS
from tests.conftest import ROOT
from tests.integration.procs import command_line
from tests.integration.sshd import (
    SshHost,
    SshRig,
    free_port,
    keygen,
    netns_available,
    sshd_available,
)
from tests.integration.test_climate_workflow import KILLED_RUN_SETS, _banded
from tests.integration.test_workflow_run import start_in_own_group, wait_for_checkpoint

pytestmark = pytest.mark.ssh

EXE = Path(sys.executable).with_name("openclaw-dask")
EXAMPLE = ROOT / "workflows/example.yaml"
SMALL = ["--set", "params.size=128", "--set", "params.chunk=64", "--set", "params.steps=120"]
#: Per-node options the tests look for: node a runs 1 thread, node b 2 threads and a GPU slot.
NODE_A = {"scheduler": True, "resources": {"cpus": 1, "memory": "1GiB"}}
NODE_B = {"resources": {"cpus": 2, "gpus": 1}}


def cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [str(EXE), *args], capture_output=True, text=True, timeout=timeout, env=env
    )


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshRig]:
    """Hosts a and b (scheduler and workers), and host odd whose own config disagrees."""
    missing = sshd_available()
    if missing:
        pytest.fail(missing)  # CI installs openssh-server (scripts/setup-env.sh)
    root = tmp_path_factory.mktemp("sshrig")
    rig = SshRig(root, use_netns=netns_available())
    try:
        rig.add_host("a")
        rig.add_host("b")
        odd = root / "odd-node.config"
        odd.write_text("distributed:\n  sync_interval: 50\n")
        rig.add_host("odd", env={"OPENCLAW_CONFIG": str(odd)})
        yield rig
    finally:
        rig.close()


def hosts(rig: SshRig) -> tuple[SshHost, SshHost, SshHost]:
    a, b, odd = rig.hosts[:3]
    return a, b, odd


def table_rows(stdout: str) -> list[list[str]]:
    """The body rows of a rich table printed to a pipe."""
    rows = [r for r in stdout.splitlines() if r.startswith("│ tcp://")]
    return [[c.strip() for c in r.strip("│").split("│")] for r in rows]


def test_rig_hosts_are_separate(rig: SshRig) -> None:
    a, b, _ = hosts(rig)
    assert a.host != b.host
    assert rig.use_netns == netns_available()  # namespaces wherever they can be made
    if rig.use_netns:
        assert a.netns != b.netns and a.host.startswith("10.231.")


def test_workflow_runs_on_two_ssh_nodes(rig: SshRig, tmp_path: Path) -> None:
    a, b, _ = hosts(rig)
    config = rig.config([rig.node(a, **NODE_A), rig.node(b, **NODE_B)], tmp_path / "ssh.config")
    run_dir = tmp_path / "run"
    pinned = ["--set", "parallel.thread_affinity=compact"]  # which ssh nodes do not apply
    args = ["--config", str(config), "--run-dir", str(run_dir), *SMALL, *pinned]
    result = cli("submit", str(EXAMPLE), *args)
    assert result.returncode == 0, result.stderr[-3000:]
    rec = json.loads((run_dir / "run.json").read_text())
    assert rec["status"] == "completed" and rec["plan"]["backend"] == "ssh"
    # said when the run starts, not only by `config plan`: the user set it and it is not done
    [unapplied] = rec["plan"]["unapplied"]
    assert unapplied.startswith("parallel.thread_affinity not applied on ssh nodes: ")
    assert result.stderr.splitlines()[1] == f"note: {unapplied}"
    assert rec["cluster"]["scheduler"].startswith(f"tcp://{a.host}:")
    workers = {w["name"]: w for w in rec["cluster"]["workers"].values()}
    wa, wb = workers[f"{a.host}-{a.port}"], workers[f"{b.host}-{b.port}"]
    assert (wa["host"], wa["nthreads"], wa["resources"]) == (a.host, 1, {})
    assert wa["memory_limit"] == 2**30
    assert (wb["host"], wb["nthreads"], wb["resources"]) == (b.host, 2, {"GPU": 1.0})
    assert {s["status"] for s in rec["steps"].values()} == {"completed"}
    assert [n["threads"] for n in rec["plan"]["layout"]["nodes"]] == [1, 2]
    # node b advertises a GPU this machine does not have: said before the cluster starts (a
    # task that asks for one would be sent there), not refused
    gpu = f"node {b.host}:{b.port}: resources.gpus is 1 but the node has 0 NVIDIA GPU(s)"
    said = " ".join(result.stderr.split())
    assert (gpu in said) == (GPUS_HERE == 0), said
    if GPUS_HERE == 0:
        assert said.index(gpu) < said.index("dashboard:"), said


def test_cluster_up_status_down_on_ssh(rig: SshRig, tmp_path: Path) -> None:
    a, b, _ = hosts(rig)
    config = rig.config([rig.node(a, **NODE_A), rig.node(b, **NODE_B)], tmp_path / "ssh.config")
    up = cli("cluster", "up", "--config", str(config))
    assert up.returncode == 0, up.stderr[-3000:]
    state = read_state()
    assert state and state["address"].startswith(f"tcp://{a.host}:")
    try:
        status = cli("cluster", "status")
        assert status.returncode == 0, status.stderr
        # host -> row; columns: worker, threads, cores, allocator, memory limit, resources
        # (the config hash they share is in the title)
        rows = {get_address_host(r[0]): r for r in table_rows(status.stdout)}
        assert set(rows) == {a.host, b.host}
        assert rows[a.host][1] == "1" and rows[a.host][5] == "-"
        assert rows[b.host][1] == "2" and rows[b.host][5] == "GPU=1"
        assert rows[a.host][4] == "1.00 GiB"
        assert ", config " in status.stdout.splitlines()[0]
        # the plan's dask config (here QUIET_MONITORS) reaches the scheduler and remote workers
        with Client(state["address"], timeout="10s", set_as_default=False) as client:
            for key, value in QUIET_MONITORS.items():
                assert set(client.run(dask.config.get, key).values()) == {value}, key
                assert client.run_on_scheduler(dask.config.get, key) == value, key
    finally:
        down = cli("cluster", "down")
    assert down.returncode == 0, down.stderr
    assert read_state() is None


#: A client that holds an ssh cluster until it is killed.
HOLDING_CLIENT = """
import sys, time
from openclaw_dask import load_config, start_cluster
if __name__ == "__main__":
    with start_cluster(load_config(sys.argv[1]), attach_running=False) as client:
        print(len(client.scheduler_info()["workers"]), flush=True)
        time.sleep(600)
"""


def test_a_killed_client_leaves_nothing_running_on_the_nodes(rig: SshRig, tmp_path: Path) -> None:
    """sshd neither stops a command without a terminal when its connection drops nor honours
    Dask's kill request: the remote scheduler and nannies stop when their session's input
    ends (runtime/hangup.py). Without that, all of them still ran a minute later."""
    a, b, _ = hosts(rig)
    config = rig.config([rig.node(a, **NODE_A), rig.node(b, **NODE_B)], tmp_path / "ssh.config")
    script = tmp_path / "client.py"
    script.write_text(HOLDING_CLIENT)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, str(script), str(config)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "2", proc.wait()
        remote = rig.session_processes()
        # the scheduler's and both nannies' dask_spec, and each nanny's worker
        specs = [p for p in remote if "distributed.cli.dask_spec" in command_line(p)]
        assert len(specs) == 3, [command_line(p) for p in remote]
    finally:
        proc.kill()
        proc.wait()
    left = wait_gone(remote, timeout=GRACE + 20)
    names = [command_line(p)[:120] for p in left]
    for p in left:  # orphans outlive the rig's sshd: stop them here, even when failing
        with contextlib.suppress(psutil.NoSuchProcess):
            p.kill()
    assert names == []


def test_remote_output_is_read_for_the_whole_run(
    rig: SshRig, tmp_path: Path, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture
) -> None:
    """Dask reads a remote process's stderr only until it has started, and never its stdout
    (dask/distributed#9033): a worker that wrote 4 MB blocked for good. The scheduler and
    workers' output is now read all along: warnings are shown, prints go to stdout."""

    def chatter(lines: int) -> int:
        """Print and log ``lines`` lines of 1 kB each (3 MB: past the SSH window)."""
        import logging
        import sys

        sys.stderr.buffer.write(b"not utf-8: \xff\n")  # shown escaped; closed the connection
        sys.stderr.flush()
        log = logging.getLogger("distributed.worker")
        for i in range(lines):
            print(f"printed {i} " + "x" * 1000, flush=i == lines - 1)  # a pipe buffers
            log.warning("logged %d %s", i, "y" * 1000)
        return lines

    a, _, _ = hosts(rig)
    config = load_config(rig.config([rig.node(a, **NODE_A)], tmp_path / "ssh.config"))
    with start_cluster(config, attach_running=False) as client:
        # a local function travels by value: the nodes cannot import the tests
        done = client.submit(chatter, 3000, pure=False).result(timeout=120)
        assert done == 3000
        client.run_on_scheduler(lambda: print("scheduler says hello", flush=True))
        printed = ""
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not (
            "logged 2999" in caplog.text and "scheduler says hello" in printed
        ):
            time.sleep(0.1)
            printed += capsys.readouterr().out
    name = f"{a.host}-{a.port}"
    forwarded = [r for r in caplog.records if r.name == "distributed.deploy.ssh"]
    warnings = [r for r in forwarded if "logged 2999" in r.getMessage()]
    assert [r.levelname for r in warnings] == ["WARNING"]
    assert any(r.getMessage().endswith("not utf-8: \\xff") for r in forwarded)
    assert warnings[0].getMessage().startswith(f"{name}: ")
    assert " - WARNING - " not in warnings[0].getMessage()  # the local record says it once
    assert f"{name}: printed 2999 " in printed
    assert ": scheduler says hello" in printed


def _nobody(rig: SshRig, tmp_path: Path) -> dict[str, Any]:
    a, b, _ = hosts(rig)
    return {"nodes": [rig.node(a, **NODE_A), rig.node(b, user="openclaw-nobody")]}


def _wrong_host_key(rig: SshRig, tmp_path: Path) -> dict[str, Any]:
    a, b, _ = hosts(rig)
    other = keygen(tmp_path / "other_host_key", "someone-else")
    mark = f"[{b.host}]:{b.port}"
    lines = [ln for ln in rig.known_hosts.read_text().splitlines() if mark not in ln]
    known = tmp_path / "known_hosts"
    known.write_text("\n".join([*lines, f"{mark} {other}"]) + "\n")
    return {
        "nodes": [rig.node(a, **NODE_A), rig.node(b)],
        "extra": {"distributed.ssh.known_hosts": str(known)},
    }


def _no_openclaw(rig: SshRig, tmp_path: Path) -> dict[str, Any]:
    a, b, _ = hosts(rig)
    return {"nodes": [rig.node(a, **NODE_A), rig.node(b, python="/usr/bin/python3")]}


def _no_python(rig: SshRig, tmp_path: Path) -> dict[str, Any]:
    a, b, _ = hosts(rig)
    return {"nodes": [rig.node(a, **NODE_A), rig.node(b, python="/opt/nowhere/bin/python")]}


def _other_numerics(rig: SshRig, tmp_path: Path) -> dict[str, Any]:
    """Node b's python compiles numba's kernels for another CPU (its workers would too)."""
    a, b, _ = hosts(rig)
    python = tmp_path / "python-generic-cpu"
    python.write_text(f'#!/bin/sh\nNUMBA_CPU_NAME=generic exec {rig.python} "$@"\n')
    python.chmod(0o755)
    return {
        "nodes": [rig.node(a, **NODE_A), rig.node(b, python=str(python))],
        "extra": {"parallel.deterministic_mode": True},
    }


def _too_many_threads(rig: SshRig, tmp_path: Path) -> dict[str, Any]:
    """A typo's thread count: it had gone to the node's workers as their nthreads."""
    a, b, _ = hosts(rig)
    return {"nodes": [rig.node(a, **NODE_A), rig.node(b, resources={"cpus": 10**20})]}


def _too_much_memory(rig: SshRig, tmp_path: Path) -> dict[str, Any]:
    """A unit typed wrong: Dask ignores a budget beyond the node's memory (the plan's said)."""
    a, b, _ = hosts(rig)
    return {"nodes": [rig.node(a, **NODE_A), rig.node(b, resources={"memory": "100TiB"})]}


#: The NVIDIA GPUs of this machine (its driver's list; none here).
GPUS_HERE = len(os.listdir(NVIDIA)) if os.path.isdir(NVIDIA := "/proc/driver/nvidia/gpus") else 0


def _port_taken(rig: SshRig, tmp_path: Path) -> dict[str, Any]:
    """Node b's worker fixed on its sshd's own port: the worker had failed at the start
    ("SshStartError: ... Address already in use", exit 1, run.json written)."""
    a, b, _ = hosts(rig)
    return {"nodes": [rig.node(a, **NODE_A), rig.node(b, port=b.port)]}


def _one_machine_twice(rig: SshRig, tmp_path: Path) -> dict[str, Any]:
    """Two entries for node b, each at the per-core bound: twice it together."""
    a, b, _ = hosts(rig)
    most = 8 * len(os.sched_getaffinity(0))  # (two dicts: one twice is a YAML alias)
    twice = [rig.node(b, resources={"cpus": most}) for _ in range(2)]
    return {"nodes": [rig.node(a, **NODE_A), *twice]}


def _odd_config(rig: SshRig, tmp_path: Path) -> dict[str, Any]:
    a, _, odd = hosts(rig)
    return {"nodes": [rig.node(a, **NODE_A), rig.node(odd)]}


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        (_odd_config, "differs from this one: distributed.sync_interval: node 50, here 5000"),
        (_nobody, "refused the login as openclaw-nobody"),
        (_wrong_host_key, "its host key is not trusted"),
        (_no_openclaw, "its python /usr/bin/python3 cannot import"),
        (_no_python, "its python /opt/nowhere/bin/python does not exist"),
        (_other_numerics, "computes unlike the others: cpu generic (node "),
        (_port_taken, "is taken there (Address already in use): pick another, or leave port"),
        (
            _one_machine_twice,
            "distributed.nodes[1] and distributed.nodes[2] are one machine, and together run "
            f"{16 * len(os.sched_getaffinity(0))} worker threads",
        ),
        (
            _too_many_threads,
            f"{10**20} worker threads (resources.cpus) but only {len(os.sched_getaffinity(0))} "
            "usable core(s) there: use at most",
        ),
        (
            _too_much_memory,
            f"resources.memory {100 * 2**40 / 1e9:,.1f} GB (each of its 1 worker(s) "
            f"{100 * 2**40 / 1e9:,.1f} GB) is more than the node's "
            f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 1e9:,.1f} GB",
        ),
    ],
    ids=[
        "mismatched-sync-interval",
        "login-refused",
        "wrong-host-key",
        "no-openclaw-dask",
        "no-python",
        "deterministic-mode-other-cpu",
        "worker-port-taken",
        "one-machine-twice",
        "threads-beyond-its-cores",
        "memory-beyond-the-node",
    ],
)
def test_bad_node_fails_before_any_work_naming_it(
    rig: SshRig, tmp_path: Path, case: Any, expected: str
) -> None:
    spec = case(rig, tmp_path)
    bad = spec["nodes"][1]
    config = rig.config(spec["nodes"], tmp_path / "ssh.config", spec.get("extra"))
    run_dir = tmp_path / "run"
    result = cli("submit", str(EXAMPLE), "--config", str(config), "--run-dir", str(run_dir), *SMALL)
    assert result.returncode == 2, result.stderr[-3000:]
    errors = [ln for ln in result.stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1, result.stderr
    assert f"distributed.nodes[1]: node {bad['host']}:{bad['ssh_port']}: " in errors[0]
    assert expected in errors[0]
    assert "Traceback" not in result.stderr
    assert "Scheduler at" not in result.stderr  # nothing was launched
    # nothing ran: the run directory made for it goes (the same --run-dir can be used again)
    assert not run_dir.exists()


def _shipped_bytes(rig: SshRig, config: Path, size: int) -> tuple[int, int]:
    """Bytes host a's interface sent while a worker on b summed ``size`` bytes made on a.

    The array is int64 with 4 bits of information per element (compresses well), made by a
    numpy method so that the remote workers need no test code.
    """
    a, b, _ = hosts(rig)
    with start_cluster(config) as client:
        workers = {f["host"]: addr for addr, f in inspect_workers(client).items()}
        before = a.tx_bytes()
        rng = np.random.default_rng(7)
        made = client.submit(rng.integers, 0, 16, size // 8, workers=[workers[a.host]], pure=False)
        total = client.submit(np.sum, made, workers=[workers[b.host]])
        result = int(total.result())
        return a.tx_bytes() - before, result


def test_a_worker_lost_on_a_node_mid_run_costs_one_window_and_changes_no_bit(
    rig: SshRig, tmp_path: Path, uninterrupted_banded_run: dict[str, Any]
) -> None:
    """Node b's worker is killed mid-way through the banded climate run: its nanny (on node b,
    started over SSH) starts a new one, and the run continues from its last checkpoint with the
    checksums of an uninterrupted run."""
    a, b, _ = hosts(rig)
    config = rig.config([rig.node(a, **NODE_A), rig.node(b, **NODE_B)], tmp_path / "ssh.config")
    banded = _banded(tmp_path)
    run_dir = tmp_path / "killed"
    args = ["--config", str(config), "--no-report", "--set", *KILLED_RUN_SETS]
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
    proc = start_in_own_group(run_dir, args, banded, **pipes)
    try:
        seen = wait_for_checkpoint(proc, run_dir, 300, name="simulate")
        # node b's nanny runs `python -m distributed.cli.dask_spec` with the worker's name,
        # and its worker is the nanny's spawned child
        name = f"{b.host}-{b.port}"
        nannies = [
            p
            for p in psutil.process_iter(["cmdline"])
            if "distributed.cli.dask_spec" in " ".join(p.info["cmdline"] or [])
            and name in " ".join(p.info["cmdline"] or [])
        ]
        workers = [c for n in nannies for c in n.children() if "spawn_main" in command_line(c)]
        assert seen >= 300 and len(workers) == 1, (seen, nannies, workers, proc.poll())
        workers[0].send_signal(signal.SIGKILL)
        _, stderr = proc.communicate(timeout=240)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 0, stderr[-3000:]
    assert "simulate: lost worker tcp://" in stderr and "(recovery 1 of 3 from it)" in stderr, (
        stderr
    )
    assert "DSA is deprecated" not in stderr  # asyncssh's import under cryptography 51
    # the remote scheduler's list of the keys it lost: the line above says the loss
    assert "caused the cluster to lose" not in stderr, stderr
    killed = json.loads((run_dir / "run.json").read_text())
    [recovery] = killed["steps"]["simulate"]["recoveries"]
    assert recovery["from_step"] >= 300 and recovery["lost"][0].startswith(f"tcp://{b.host}:")

    # the same bands on a local cluster: the outputs do not depend on where the bands ran
    whole = uninterrupted_banded_run
    for step in ("simulate", "analyse"):
        assert killed["steps"][step]["checksums"] == whole["steps"][step]["checksums"], step


def test_zstd_shrinks_the_bytes_between_hosts(rig: SshRig, tmp_path: Path) -> None:
    if not rig.use_netns:
        pytest.skip("needs network namespaces (root with ip netns) for per-host byte counters")
    a, b, _ = hosts(rig)
    # one worker process a node: two more a node were a nanny and a worker each to start over
    # SSH for each codec (the names of two a node are checked with their GPU shares, below)
    nodes = [rig.node(a, **NODE_A), rig.node(b, **NODE_B)]
    size = 32 * 2**20
    sent = {}
    for codec in ("none", "zstd"):
        extra = {"distributed.compression": codec}
        config = rig.config(nodes, tmp_path / f"{codec}.config", extra)
        sent[codec], total = _shipped_bytes(rig, config, size)
        assert total == np.random.default_rng(7).integers(0, 16, size // 8).sum()
    print(
        f"\n{size / 2**20:.0f} MiB array from {a.host} to {b.host}: "
        f"{sent['none'] / 2**20:.1f} MiB on the wire without compression, "
        f"{sent['zstd'] / 2**20:.1f} MiB with zstd ({sent['none'] / sent['zstd']:.1f}x less)"
    )
    assert sent["none"] > size  # the whole array crossed the veth once
    assert sent["zstd"] < sent["none"] / 3


@pytest.mark.parametrize(
    ("case", "key", "expected"),
    [
        (
            _odd_config,
            "distributed.sync_interval",
            "its openclaw.config differs from the client's: distributed.sync_interval: "
            "worker 50, client 5000",
        ),
        (
            _other_numerics,
            "parallel.deterministic_mode",
            "parallel.deterministic_mode is on and this worker computes unlike the cluster's "
            "workers: cpu generic",
        ),
    ],
    ids=["mismatched-sync-interval", "deterministic-mode-other-cpu"],
)
def test_worker_of_a_disagreeing_node_is_refused_even_without_preflight(
    rig: SshRig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: Any, key: str, expected: str
) -> None:
    """Second line of defence: the node's workers check themselves (the node preload, the
    numerics check), and the error points at the config key they do not honour."""
    from openclaw_dask.config import ConfigError, load_config
    from openclaw_dask.runtime import preflight

    monkeypatch.setattr(preflight, "check_nodes", lambda config: {})
    spec = case(rig, tmp_path)
    odd = spec["nodes"][1]["host"]
    config = load_config(rig.config(spec["nodes"], tmp_path / "c", spec.get("extra")))
    with pytest.raises(ConfigError) as info, start_cluster(config):
        pass
    (problem,) = info.value.problems
    assert problem.key == key, problem
    assert problem.message.startswith(f"worker tcp://{odd}:"), problem
    assert expected in problem.message, problem


def test_tls_between_ssh_nodes(rig: SshRig, tmp_path: Path) -> None:
    """The remote scheduler and workers take their certificates from the dask config they
    inherit (the client's side from its Security): each role must be there, the scheduler's
    too, or the remote scheduler starts without one and nothing connects."""
    a, b, _ = hosts(rig)
    made = create_certificates(tmp_path / "certs", hosts=[a.host, b.host])
    tls = {
        "distributed.communication_backend": "tls",
        "distributed.tls.ca_file": str(made.ca_file),
        "distributed.tls.cert": str(made.nodes[0].cert),
        "distributed.tls.key": str(made.nodes[0].key),
    }
    nodes = [rig.node(a, **NODE_A), rig.node(b, **NODE_B)]
    config = load_config(rig.config(nodes, tmp_path / "tls.config", tls))
    with start_cluster(config) as client:
        assert client.scheduler.address.startswith(f"tls://{a.host}:")
        workers = inspect_workers(client)
        assert len(workers) == 2 and all(w.startswith("tls://") for w in workers)
        assert client.submit(sum, [1, 2, 3]).result() == 6


def test_processes_of_a_node_share_its_gpus_and_leave_its_port_unpinned(
    rig: SshRig, tmp_path: Path
) -> None:
    """``parallel.processes: 2`` on a node with one GPU: each worker process holds half of the
    node's GPU resource (the scheduler would place two GPU tasks at once on it otherwise), its
    share of the threads, and a port of its own (a node's ``port`` pins one worker only)."""
    a, b, _ = hosts(rig)
    # two threads on a: one per worker process (one thread over two processes is refused)
    node_a = {**NODE_A, "resources": {**NODE_A["resources"], "cpus": 2}}
    nodes = [rig.node(a, **node_a), rig.node(b, port=free_port("127.0.0.1"), **NODE_B)]
    extra = {"parallel.processes": 2}
    config = load_config(rig.config(nodes, tmp_path / "two.config", extra))
    with start_cluster(config) as client:
        facts = inspect_workers(client).values()
        # two worker processes per node, each under its own name
        names = sorted(f["name"] for f in facts)
        assert names == [f"{h.host}-{h.port}-{i}" for h in (a, b) for i in (0, 1)]
        on_b = sorted(
            (f["name"], f["nthreads"], f["resources"]) for f in facts if f["host"] == b.host
        )
        name = f"{b.host}-{b.port}"
        assert on_b == [(f"{name}-{i}", 1, {"GPU": 0.5}) for i in (0, 1)]
        assert len(facts) == 4


def test_workers_without_the_allocator_are_refused_in_a_line_each(
    rig: SshRig, tmp_path: Path
) -> None:
    """Nodes without libjemalloc (stood in for by an LD_PRELOAD of a library that is not
    there: the loader skips it and says so): the allocator check refuses their workers, exit 2,
    one line each. A refused worker's closing had raced the plugins' registration (an audit
    saw "error: CommClosedError: ... register_worker_plugin", exit 1, in 4 submits of 5; not
    reproduced here: test_h39_worker_checks forces that race)."""
    a, b, _ = hosts(rig)
    extra = {
        "memory.allocator": "jemalloc",
        "dask.distributed.nanny.pre-spawn-environ": {"LD_PRELOAD": "libjemalloc.so.9"},
        "parallel.deterministic_mode": True,  # one more plugin registered after the refusal
    }
    config = rig.config([rig.node(a, **NODE_A), rig.node(b)], tmp_path / "ssh.config", extra)
    run_dir = tmp_path / "run"
    args = ("submit", str(EXAMPLE), "--config", str(config), "--run-dir", str(run_dir))
    result = cli(*args, *SMALL)
    assert result.returncode == 2, result.stderr[-3000:]
    errors = [ln for ln in result.stderr.splitlines() if ln.startswith("error:")]
    assert errors, result.stderr[-3000:]
    for line in errors:
        assert ": memory.allocator: worker " in line and " refused: " in line, line
    # our own lines; the remote scheduler's log is forwarded at its level by design, and it may
    # log the connection a refused worker's closing cut (seen once in CI, 2026-12-06)
    forwarded = "distributed.deploy.ssh - "
    ours = "\n".join(ln for ln in result.stderr.splitlines() if forwarded not in ln)
    assert "CommClosedError" not in ours and "Traceback" not in ours, result.stderr[-3000:]
