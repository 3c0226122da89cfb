"""``openclaw-dask cluster up/status/down`` and ``memory compact`` from the shell."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil
import pytest
from click.testing import CliRunner, Result
from dask.utils import parse_timedelta

from openclaw_dask.cli.cluster_cmd import DOWN_GRACE
from openclaw_dask.runtime.cluster import CONNECT_TIMEOUT
from openclaw_dask.runtime.processes import running
from openclaw_dask.runtime.state import clear_state, read_state, state_file, write_state
from tests.conftest import ROOT
from tests.integration.hangs_closing import HANGS_CLOSING_SETS
from tests.integration.hangs_starting import HANGS_STARTING_SETS
from tests.integration.procs import command_line
from tests.integration.test_workflow_run import foreground
from tests.unit.test_state import fake_daemon

EXE = Path(sys.executable).with_name("openclaw-dask")


def sh(
    *args: str, timeout: float = 180, cwd: Path | None = None, exe: list[str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*(exe or [str(EXE)]), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=os.environ.copy(),
        cwd=cwd,
    )


#: ``openclaw-dask`` with module constants set first, from the JSON object ``sys.argv[1]``
#: (``{"module.NAME": value}``); a name the module lacks (renamed) is an error, not a no-op.
SETS_CONSTANTS = """
import importlib, json, sys
for dotted, value in json.loads(sys.argv.pop(1)).items():
    module, name = dotted.rsplit(".", 1)
    owner = importlib.import_module(module)
    getattr(owner, name)  # (AttributeError)
    setattr(owner, name, value)
sys.argv[0] = "openclaw-dask"
from openclaw_dask.cli import main
main()
"""


def patched(constants: dict[str, object]) -> list[str]:
    """The command line of an ``openclaw-dask`` with ``constants`` (``{"module.NAME": value}``)
    set: a test of what follows a grace or timeout waits out a short one, not the product's."""
    return [sys.executable, "-c", SETS_CONSTANTS, json.dumps(constants)]


#: The grace of the tests of what follows it: what they check (SIGTERM first, then SIGKILL to
#: the daemon and what it started) does not depend on its length, and waiting out the product's
#: 20 s took 2 x 20 s of the suite's time.
SHORT_GRACE = 4.0
#: ``openclaw-dask`` whose `cluster up`/`down` kill a daemon after :data:`SHORT_GRACE`.
SHORT_GRACE_EXE = patched({"openclaw_dask.cli.cluster_cmd.DOWN_GRACE": SHORT_GRACE})
#: The connect window (seconds) of the tests of what is said once it is out.
SHORT_CONNECT = 3.0


def blocks_ctrl_c(pid: int) -> bool:
    """Whether process ``pid``'s main thread blocks SIGINT.

    `cluster up` spawns its daemon with Ctrl-C held: the daemon must unblock it, or a SIGINT
    sent to it would wait forever (a local cluster's start happened to unblock it, through
    multiprocessing's resource tracker; an ssh cluster's did not).
    """
    status = Path(f"/proc/{pid}/status").read_text()
    return bool(int(re.findall(r"^SigBlk:\s*(\w+)$", status, re.M)[0], 16) & 1 << signal.SIGINT - 1)


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
        cores = sorted(r.split("│")[3].strip() for r in rows)
        assert cores == ["0", "1"]
        assert "\nruns: 0\n" in status.stdout  # no submit on it

        compact = sh("memory", "compact")
        assert compact.returncode == 0 and compact.stdout.count("mallctl(arena.all.purge)") == 2

        assert not blocks_ctrl_c(state["pid"])
    finally:
        down = sh("cluster", "down")
    assert down.returncode == 0 and "stopped" in down.stdout
    # the daemon removed its state file as it exited: not left for the next command to find
    # stale (mutation audit: the daemon's clear_state dropped went unseen)
    assert not state_file().exists()
    assert read_state() is None
    assert sh("cluster", "status").returncode == 1
    assert os.environ.get("LD_PRELOAD") is None


def test_bad_input_exits_2_and_starts_nothing(tmp_path: Path) -> None:
    nonexistent_cores = sh("cluster", "up", "--set", "parallel.thread_affinity=[[0],[64]]")
    assert nonexistent_cores.returncode == 2
    assert "parallel.thread_affinity[1]: core 64 does not exist" in nonexistent_cores.stderr
    assert "Traceback" not in nonexistent_cores.stderr
    assert read_state() is None

    # each below waits out the connect window (a short one: what they say does not depend on
    # its length, and 10 s each was most of this test): run at once, not one after the other
    quick = patched({"openclaw_dask.runtime.cluster.CONNECT_TIMEOUT": f"{SHORT_CONNECT:g}s"})
    with (
        ThreadPoolExecutor(3) as pool,
        socket.socket() as mute,
        fake_daemon(tmp_path) as daemon,
    ):
        # a port that takes connections and never speaks (a stopped scheduler, another
        # program): distributed's handshake read has no deadline, and status waited for ever
        mute.bind(("127.0.0.1", 0))
        mute.listen()
        address = f"tcp://127.0.0.1:{mute.getsockname()[1]}"
        # the address of a `cluster up` whose scheduler stopped answering: said as such
        state = {"address": "tcp://127.0.0.1:1", "pid": daemon.pid, "started": time.time()}
        write_state({**state, "backend": "local"})
        try:
            unreachable, silent, hung = pool.map(
                lambda args: sh(*args, exe=quick),
                [
                    ("cluster", "status", "--address", "tcp://127.0.0.1:1"),
                    ("cluster", "status", "--address", address),
                    ("cluster", "status"),
                ],
            )
        finally:
            clear_state()
    assert unreachable.returncode == 2
    assert (
        f"no scheduler answers at tcp://127.0.0.1:1: connection refused for {SHORT_CONNECT:g} s "
        "(nothing listens on port 1)"
    ) in unreachable.stderr  # (it had said the port took connections and did not answer)
    assert "Traceback" not in unreachable.stderr
    assert silent.returncode == 2, silent.stderr
    assert (
        f"--address: no scheduler answers at {address}: it takes connections but did not "
        f"answer within {SHORT_CONNECT:g} s"
    ) in silent.stderr
    assert parse_timedelta(CONNECT_TIMEOUT) == 10  # the product's window, as the user meets it
    assert hung.returncode == 2
    assert f"cluster up (pid {daemon.pid}): no scheduler answers" in hung.stderr, hung.stderr
    assert "--address" not in hung.stderr


def test_down_never_signals_a_process_that_is_not_the_daemon() -> None:
    # a stale state file whose pid was reused by an unrelated process of this user
    sleeper = subprocess.Popen(["sleep", "300"])
    try:
        write_state({"address": "tcp://127.0.0.1:1", "pid": sleeper.pid, "backend": "local"})
        down = sh("cluster", "down")
        time.sleep(0.2)  # a signal, had one been sent, has landed
        assert sleeper.poll() is None, "cluster down signalled a process that is not its daemon"
    finally:
        sleeper.kill()
        sleeper.wait()
    assert down.returncode == 1 and down.stdout == ""
    assert down.stderr.splitlines() == [
        f"no cluster is running (removed the stale state file {state_file()}: "
        f"pid {sleeper.pid} is not its cluster daemon)"
    ]
    assert read_state() is None and not state_file().exists()


def test_a_cluster_of_another_host_is_left_to_that_host() -> None:
    # a login node's `cluster up`, seen from a compute node that shares the home directory
    content = {"address": "tcp://10.0.0.9:8786", "pid": os.getpid(), "host": "login-1"}
    write_state(content)
    up = sh("cluster", "up")
    assert up.returncode == 2 and "Traceback" not in up.stderr
    assert "is of a cluster started on host login-1" in up.stderr
    assert "set OPENCLAW_STATE_DIR to a directory of this host's own" in up.stderr
    down = sh("cluster", "down")
    assert down.returncode == 1 and down.stdout == ""
    assert "`openclaw-dask cluster down` on login-1 stops it" in down.stderr
    assert json.loads(state_file().read_text()) == content


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ('{"address": "tcp://127.0.0.1:1"}', "it names no pid"),
        ('{"address": "tcp://127.0.0.1:1", "pid": "x"}', 'pid "x" is not an integer'),
        ('{"address": "tcp://127.0.0.1:1", "pid": -1}', "pid -1 cannot be a cluster daemon"),
        ('["tcp://127.0.0.1:1"]', "expected a JSON object, found list"),
        ("{", "it is not JSON"),
    ],
)
def test_a_damaged_state_file_is_one_line(content: str, reason: str) -> None:
    path = state_file()
    path.parent.mkdir(parents=True)
    path.write_text(content)
    for command in (["cluster", "status"], ["cluster", "down"], ["memory", "compact"]):
        done = sh(*command, timeout=30)
        assert done.returncode == 2, done.stderr
        assert "Traceback" not in done.stderr
        line, count = done.stderr.splitlines()
        assert line.startswith(f"error: the cluster state file {path} is damaged: {reason}")
        assert line.endswith("; remove it") and count == "1 problem found"
    assert path.read_text() == content  # left for the user to remove


# '' had been taken for no --address: "no cluster is running; ... or pass --address"
@pytest.mark.parametrize("address", ["foo", "xyz://127.0.0.1:8786", "tcp://[::1", ""])
def test_a_malformed_address_is_refused_at_once(address: str) -> None:
    for command in (["cluster", "status"], ["memory", "compact"]):
        start = time.monotonic()
        done = sh(*command, "--address", address, timeout=30)
        assert time.monotonic() - start < 5  # Dask waited 20 s on it, then printed a traceback
        assert done.returncode == 2
        assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr
        assert done.stderr.startswith(
            "error: --address: expected a scheduler address such as tcp://10.0.0.1:8786, "
            f"got {address!r}"
        ), done.stderr


def test_no_cluster_says_how_to_get_one() -> None:
    for command in (["cluster", "status"], ["memory", "compact"]):
        done = sh(*command, timeout=30)
        assert done.returncode == 1
        assert done.stderr.splitlines() == [
            "no cluster is running; start one with `openclaw-dask cluster up`, or pass --address"
        ]
    down = sh("cluster", "down", timeout=30)
    assert down.returncode == 1 and down.stderr.splitlines() == ["no cluster is running"]


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "error: my.config: file not found"),
        ("foo: 1\n", "error: my.config:1: foo: unknown key"),
    ],
)
def test_a_bad_config_is_said_when_no_cluster_runs_too(
    content: str | None, expected: str, tmp_path: Path
) -> None:
    """It was not read at all then: "no cluster is running", exit 1, and the config's problem
    met only once a cluster ran."""
    if content is not None:
        (tmp_path / "my.config").write_text(content)
    for command in (["cluster", "status"], ["memory", "compact"]):
        done = sh(*command, "--config", str(tmp_path / "my.config"), timeout=30)
        assert done.returncode == 2, done.stderr
        assert done.stderr.replace(str(tmp_path / "my.config"), "my.config").splitlines() == [
            expected,
            "1 problem found",
        ]


def in_process(*args: str) -> Result:
    """``openclaw-dask args`` run in this process (click's runner): what a command plans and
    says, without the 1.5-2 s of CPU a new Python spends importing Dask, numba and xarray."""
    from openclaw_dask.cli.main import cli

    return CliRunner().invoke(cli, list(args))


def test_commands_run_on_the_running_cluster_only_when_they_plan_it(tmp_path: Path) -> None:
    up = sh("cluster", "up", "--set", "cluster.dashboard_address=127.0.0.1:0")
    assert up.returncode == 0, up.stderr
    state = read_state()
    assert state and state["backend"] == "local"
    try:
        # submit runs on it, says so, and names the value it could not apply
        small = ["params.size=128", "params.chunk=64", "params.steps=40"]
        run_dir = tmp_path / "run"
        args = ["submit", str(ROOT / "workflows/example.yaml"), "--run-dir", str(run_dir)]
        done = sh(*args, "--no-report", "--set", *small, "parallel.processes=1")
        assert done.returncode == 0, done.stderr
        origin = f"cluster up (pid {state['pid']})"
        assert (
            f"cluster: the running scheduler at {state['address']} ({origin}): "
            "2 workers, 2 threads" in done.stderr
        )
        assert (
            "not applied, the running cluster keeps its own workers: "
            "parallel.processes (--set); `openclaw-dask cluster down`" in done.stderr
        )
        assert "was taken" not in done.stderr  # the running cluster's dashboard, as it is
        # config init's starter file writes every key: those at the running cluster's values
        # are in force there, and only a value that differs is said (19 keys had been)
        starter = tmp_path / "starter.config"
        assert in_process("config", "init", "-o", str(starter)).exit_code == 0
        dry = in_process(
            *args[:2], "--dry-run", "--config", str(starter), "--set", "parallel.processes=1"
        )
        assert dry.exit_code == 0, dry.output
        said = " ".join(dry.stdout.split())
        unapplied = said.split("keeps its own workers: ")[1].split("; `openclaw-dask")[0]
        # (the cluster was started with another dashboard address: that one is not in force)
        keys = [item.split(" (")[0] for item in unapplied.split(", ")]
        assert keys == ["cluster.dashboard_address", "parallel.processes"], unapplied
        assert f"dashboard: {state['dashboard']}" in done.stderr
        record = json.loads((run_dir / "run.json").read_text())
        assert record["dashboard"] == state["dashboard"]
        assert record["plan"]["backend"] == "attach"  # as the dry run says, and as it ran
        assert len(record["cluster"]["workers"]) == 2
        dry = in_process(*args[:2], "--dry-run")
        assert f"cluster: attach to {state['address']}" in dry.stdout, dry.stdout

        # another node-relevant value: its workers would refuse it, and the dry run says so as
        # the run does, naming the key, before a run directory is made
        other = ["--set", "distributed.sync_interval=7"]
        refused_dry = in_process(*args[:2], "--dry-run", *other)
        refused = in_process(*args[:2], "--run-dir", str(tmp_path / "refused"), *other)
        for result in (refused_dry, refused):
            assert result.exit_code == 2, result.output
            assert f"error: {origin}: cluster.scheduler_address: the running cluster's " in (
                result.stderr
            )
            assert "distributed.sync_interval 5000 there, 7 here" in result.stderr
        assert not (tmp_path / "refused").exists()

        # a config that plans another kind of cluster (ssh nodes) does not run on it
        (tmp_path / "ssh.config").write_text("distributed:\n  nodes:\n    - {host: 127.0.0.1}\n")
        ssh = in_process(*args[:2], "--dry-run", "--config", str(tmp_path / "ssh.config"))
        assert ssh.exit_code == 0 and "cluster: ssh (" in ssh.stdout, ssh.output
        # and says so: a cluster of its own starts beside the running one
        assert (
            f"note: the `cluster up` cluster at {state['address']} is a local cluster and this "
            "config plans an ssh one, so a cluster of its own starts beside it" in ssh.stdout
        ), ssh.stdout
        # a forced backend never attaches, and says so: it had started a second local
        # cluster without a word
        forced = in_process(*args[:2], "--dry-run", "--backend", "local")
        assert forced.exit_code == 0 and "cluster: local (" in forced.stdout, forced.output
        assert (
            f"note: the `cluster up` cluster at {state['address']} is a local cluster and "
            "--backend local starts a local cluster of its own beside it (without --backend a "
            "config that plans a local cluster runs on it;" in " ".join(forced.stdout.split())
        ), forced.stdout

        # the benchmark measures the cluster its config plans, never the running one
        out = tmp_path / "bench.json"
        bench = sh(
            "benchmark", "--quick", "--suite", "matmul", "--json", str(out),
            "--set", "parallel.processes=1", "cluster.dashboard_address=127.0.0.1:0",
        )  # fmt: skip
        assert bench.returncode == 0, bench.stderr
        assert json.loads(out.read_text())["cluster"]["workers"] == 1
        assert f"the `cluster up` cluster at {state['address']}" in bench.stderr
    finally:
        assert sh("cluster", "down").returncode == 0


def test_a_cluster_without_a_dashboard_links_none_and_down_continues_its_stopped_daemon(
    tmp_path: Path,
) -> None:
    """Dask formats a dashboard link from the scheduler's HTTP port, which answers 404 on
    every page when the dashboard is off: submit printed and recorded that dead link.

    A daemon stopped with SIGSTOP (Ctrl-Z) acts on SIGTERM only once continued: `cluster
    down` waited its whole 60 s, then killed it without closing the cluster. (The two share
    one cluster: each had started one of its own, ~5 s with its `down`.)"""
    up = sh("cluster", "up", "--set", "cluster.dashboard_address=null")
    assert up.returncode == 0, up.stderr
    # nor does cluster up print one (mutation audit: the daemon recording the dead link)
    assert "dashboard:" not in up.stdout, up.stdout
    state = read_state()
    assert state is not None
    daemon = psutil.Process(state["pid"])
    try:
        run_dir = tmp_path / "run"
        small = ["params.size=128", "params.chunk=64", "params.steps=40"]
        args = ["submit", str(ROOT / "workflows/example.yaml"), "--run-dir", str(run_dir)]
        done = sh(*args, "--no-report", "--set", *small)
        status = sh("cluster", "status", "--address", state["address"])
        daemon.suspend()
        start = time.monotonic()
        down = sh("cluster", "down", timeout=30)
        took = time.monotonic() - start
    finally:
        if daemon.is_running():
            daemon.resume()
            daemon.terminate()
            psutil.wait_procs([daemon], timeout=30)
    assert done.returncode == 0, done.stderr
    assert "cluster: the running scheduler at" in done.stderr
    assert "dashboard:" not in done.stderr, done.stderr
    assert json.loads((run_dir / "run.json").read_text())["dashboard"] is None
    assert status.returncode == 0 and "dashboard:" not in status.stdout, status.stdout

    assert down.returncode == 0 and took < 15, (took, down.stderr)
    assert down.stdout.splitlines() == [
        f"cluster down: {state['address']} stopped; its daemon, pid {daemon.pid}, was stopped "
        "(SIGSTOP or Ctrl-Z): continued it to close"
    ]
    assert not state_file().exists() and not _daemons_here()


@pytest.mark.parametrize("report", [False, True], ids=["no-report", "report"])
def test_a_cluster_stopped_mid_run_is_one_line_and_resume_continues(
    tmp_path: Path, report: bool
) -> None:
    """With the performance report on (the default) the report's end, on a closed client,
    had replaced the run's one line with ``AttributeError: 'NoneType' object has no attribute
    'performance_report'``, and run.json named a report never written."""
    from tests.integration.test_workflow_run import start_in_own_group, wait_for_checkpoint

    sync = "distributed.sync_interval=100"  # the run's workers are the cluster's: the same
    up = sh("cluster", "up", "--set", "cluster.dashboard_address=127.0.0.1:0", sync)
    assert up.returncode == 0, up.stderr
    run_dir = tmp_path / "run"
    # 2000 steps (~25 s here): stopping the cluster (~4 s) lands mid-run
    args = ["--set", "params.size=128", "params.chunk=64", "params.steps=2000"]
    args += [sync] + ([] if report else ["--no-report"])
    proc = start_in_own_group(run_dir, args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        seen = wait_for_checkpoint(proc, run_dir, 200)
        assert 200 <= seen < 2000, f"mid-way? checkpoint at {seen}: {proc.poll()}"
    finally:
        began = time.monotonic()
        down = sh("cluster", "down")
        took = time.monotonic() - began
    assert down.returncode == 0, down.stderr
    # the runs its close ended, named by the daemon (down had said only "stopped")
    assert "it ended 1 run (each continues with openclaw-dask submit --resume DIR once a " in (
        down.stdout
    )
    assert f"{run_dir.resolve()} (workflow example-smoothing, since " in down.stdout
    stdout, stderr = proc.communicate(timeout=120)
    # once (CI on a machine loaded by others, 2026-12-06) the run completed first: say when
    assert proc.returncode == 1, (f"down after step {seen}, took {took:.1f} s", stdout, stderr)
    # the cluster's fault, said as such: not futures' cancellation reasons and "fix the step"
    assert "failed: step 'diffuse': the " in stderr, stderr
    assert f"--resume {run_dir} continues once a cluster runs" in stderr
    # nor a worker "lost" and the run "continuing" as the cluster closes worker by worker
    for noise in ("Traceback", "cancelled", "fix the step", "continuing from step", "Error:"):
        assert noise not in stderr, stderr
    record = json.loads((run_dir / "run.json").read_text())
    assert record["steps"]["diffuse"]["error"].startswith("ClusterLostError: the ")
    assert "recoveries" not in record["steps"]["diffuse"], record["steps"]["diffuse"]
    assert record["performance_report"] is None and not list(run_dir.glob("performance-report*"))

    example = str(ROOT / "workflows/example.yaml")
    resumed = sh("submit", example, "--resume", str(run_dir))
    assert resumed.returncode == 0, resumed.stderr
    record = json.loads((run_dir / "run.json").read_text())
    assert record["status"] == "completed"
    if not report:
        # the run was started with --no-report: its resume is the same run, without one too
        assert record["report"] is False and record["performance_report"] is None
        assert not list(run_dir.glob("performance-report*"))
        return
    html = Path(record["performance_report"])
    assert html == run_dir.resolve() / "performance-report.html"
    text = html.read_text()
    # BokehJS inline (the CDN's script left a blank page offline), and the run named where
    # Dask had shown the source of contextlib's ExitStack.__exit__
    assert "cdn.bokeh.org" not in text and "Bokeh" in text
    assert "# run directory: " in text and "(attempt 2)" in text
    assert "received_exc" not in text  # (a line of ExitStack.__exit__)


def starting_daemon(proc: subprocess.Popen[str]) -> psutil.Process:
    """The cluster daemon the ``cluster up`` of ``proc`` starts, as soon as it exists."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        for child in psutil.Process(proc.pid).children():
            if "openclaw_dask.runtime.daemon" in command_line(child):
                return child
        time.sleep(0.05)
    raise AssertionError(f"no cluster daemon started: {proc.communicate()}")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_while_the_cluster_starts_leaves_no_cluster(sig: signal.Signals) -> None:
    """The cluster process has a session of its own (it outlives the terminal), so a Ctrl-C on
    `cluster up` reached only the command: it said "interrupted" and the cluster came up in
    the background all the same. A SIGTERM (``kill``) ended it silently (exit 143), with the
    same cluster left behind."""
    proc = foreground([str(EXE), "cluster", "up", "--set", "cluster.dashboard_address=null"])
    daemon = starting_daemon(proc)
    os.killpg(proc.pid, sig)  # while the cluster starts (~2 s)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130 and stderr.strip() == "interrupted", stderr
    assert not daemon.is_running() and read_state() is None
    status = sh("cluster", "status")
    assert status.returncode == 1 and "no cluster is running" in status.stderr


#: ``cluster up`` with a Ctrl-C pressed just as the daemon process has been spawned, before
#: ``subprocess.Popen`` returned it to the command (the daemon's command line is already there:
#: a test that waits for it and then presses Ctrl-C lands here now and then).
CTRL_C_AS_THE_DAEMON_SPAWNS = """
import os, signal, subprocess, sys
signal.signal(signal.SIGINT, signal.default_int_handler)  # (a background CI job ignores it)
spawn = subprocess.Popen
class Pressed(spawn):
    def __init__(self, args, *more, **kw):
        super().__init__(args, *more, **kw)
        if "openclaw_dask.runtime.daemon" in args:
            os.kill(os.getpid(), signal.SIGINT)
subprocess.Popen = Pressed
sys.argv[0] = "openclaw-dask"
from openclaw_dask.cli import main
main()
"""


def test_ctrl_c_as_cluster_up_spawns_its_daemon_leaves_no_cluster() -> None:
    """The Ctrl-C escaped ``Popen`` before ``cluster up`` held the process it had started: the
    command said "interrupted" and exited 130, and the daemon went on to start its cluster in
    the background (seen in a CI run: a daemon left after the test above)."""
    command = [sys.executable, "-c", CTRL_C_AS_THE_DAEMON_SPAWNS, "cluster", "up"]
    command += ["--set", "cluster.dashboard_address=null"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)
        left = _daemons_here()
        state = read_state()
    finally:
        sh("cluster", "down", timeout=90)
        for proc in _daemons_here():
            proc.terminate()
    assert done.returncode == 130 and done.stderr.strip() == "interrupted", done.stderr
    assert not left and state is None, (left, state)


def test_ctrl_c_on_a_cluster_up_stuck_starting_kills_its_daemon_after_the_grace() -> None:
    """A start that never ends (a scheduler or node that never answers) ignores the SIGTERM
    that stops it: the command waited a minute and then killed the daemon alone."""
    command = [*SHORT_GRACE_EXE, "cluster", "up", "--set", "cluster.dashboard_address=null"]
    proc = foreground([*command, *HANGS_STARTING_SETS])
    daemon = starting_daemon(proc)
    time.sleep(2)  # into the scheduler's start, where it stays
    t0 = time.monotonic()
    os.killpg(proc.pid, signal.SIGINT)
    _, stderr = proc.communicate(timeout=120)
    waited = time.monotonic() - t0
    assert proc.returncode == 130 and stderr.strip() == "interrupted", stderr
    assert SHORT_GRACE < waited < SHORT_GRACE + 20, waited  # the grace, not a minute
    assert 15 < DOWN_GRACE < 40, DOWN_GRACE  # the product's grace (20 s), not a minute
    assert not daemon.is_running() and read_state() is None


def _daemons_here() -> list[psutil.Process]:
    """The cluster daemons of this test's state directory (any parent)."""
    from openclaw_dask.runtime.state import runs_daemon

    found = []
    for proc in psutil.process_iter():
        try:
            here = proc.environ().get("OPENCLAW_STATE_DIR") == os.environ["OPENCLAW_STATE_DIR"]
            if here and runs_daemon(proc.cmdline()):
                found.append(proc)
        except psutil.Error:  # gone, or not ours to read
            continue
    return found


def test_two_cluster_ups_at_once_start_one_cluster() -> None:
    """The second of two `cluster up` started together waited 120 s for a state file that named
    the other's daemon, truncated its log, and said 'did not start'; it now says at once that
    another `cluster up` is starting (or has started) one, and starts nothing."""
    command = [str(EXE), "cluster", "up", "--set", "cluster.dashboard_address=null"]
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True}
    procs = [subprocess.Popen(command, **pipes) for _ in range(2)]  # type: ignore[call-overload]
    try:
        done = [(p, *p.communicate(timeout=30)) for p in procs]
        state = read_state()
        daemons = _daemons_here()
    finally:
        for p in procs:
            p.kill()
            p.wait()
        sh("cluster", "down", timeout=90)
        left = _daemons_here()  # a second daemon, as the loser started one
        for proc in left:
            proc.terminate()
        psutil.wait_procs(left, timeout=60)
    assert sorted(p.returncode for p, _, _ in done) == [0, 2], done
    (_, won, _), (_, _, said) = sorted(done, key=lambda d: d[0].returncode)
    assert state and won.startswith(f"cluster up: {state['address']} (local, pid {state['pid']})")
    assert [d.pid for d in daemons] == [state["pid"]]
    starting = "error: cluster up: another `openclaw-dask cluster up` is starting a cluster with "
    running = f"error: cluster up: a cluster is already running at {state['address']}"
    assert said.startswith((starting, running)) and "Traceback" not in said, said
    assert said.count("\n") == 2  # the line and its count


def test_cluster_up_refuses_at_once_while_another_starts() -> None:
    from openclaw_dask.runtime.state import hold_lock, lock_file

    log = state_file().with_name("cluster.log")
    # this process stands in for a `cluster up` whose cluster is still starting
    lock = hold_lock("`cluster up`")
    assert lock is not None
    log.write_text("the starting cluster's log\n")
    try:
        start = time.monotonic()
        up = sh("cluster", "up", "--set", "cluster.dashboard_address=null", timeout=60)
        took = time.monotonic() - start
    finally:
        lock.close()
        if read_state():
            sh("cluster", "down", timeout=90)
    assert up.returncode == 2 and took < 15, (took, up.stdout, up.stderr)
    assert up.stderr.splitlines() == [
        "error: cluster up: another `openclaw-dask cluster up` is starting a cluster with this "
        f"state directory: `cluster up` (pid {os.getpid()} on {socket.gethostname()} since "
        + up.stderr.split(" since ", 1)[1].split(")", 1)[0]
        + f") holds {lock_file()}; `openclaw-dask cluster status` shows it once it is up",
        "1 problem found",
    ]
    assert log.read_text() == "the starting cluster's log\n" and not _daemons_here()


def test_down_of_a_daemon_that_hangs_closing_kills_it_and_its_workers() -> None:
    """A daemon whose cluster never finishes closing (here its scheduler's close blocks its
    event loop, before the workers are closed): `cluster down` waited 60 s, then killed the
    daemon alone, and a worker busy in a GIL-holding call outlived it, spinning for ever."""
    up = sh("cluster", "up", "--set", "cluster.dashboard_address=null", *HANGS_CLOSING_SETS)
    assert up.returncode == 0, up.stderr
    state = read_state()
    assert state
    daemon = psutil.Process(state["pid"])
    under = daemon.children(recursive=True)
    try:
        from distributed import Client

        with Client(state["address"], timeout=30) as client:
            pids = client.run(os.getpid)
            workers = {psutil.Process(pid) for pid in pids.values()}
            # a task stuck in a C call that never lets go of the GIL (a regex that backtracks
            # for ages): no other thread of its worker runs, not even the one that ends the
            # worker when its parent dies
            busy = client.submit(re.match, r"(a+)+$", "a" * 64 + "b", pure=False)
            while not any(client.processing().values()):
                assert not busy.done(), busy  # (an error: it would never run)
                time.sleep(0.05)
            [stuck] = [pids[w] for w, keys in client.processing().items() if keys]
            time.sleep(0.5)  # in the worker's thread by now (its heartbeats stop)
            del busy
        start = time.monotonic()
        down = sh("cluster", "down", timeout=120, exe=SHORT_GRACE_EXE)
        took = time.monotonic() - start
    finally:
        left = [p for p in [daemon, *under] if running(p)]
        for p in left:
            p.kill()
    assert down.returncode == 0 and took < SHORT_GRACE + 10, (took, down.stdout, down.stderr)
    assert 15 < DOWN_GRACE < 40, DOWN_GRACE  # the product's grace (20 s), not a minute
    [line] = down.stdout.splitlines()
    assert line.startswith(
        f"cluster down: {state['address']} stopped; its daemon, pid {daemon.pid}, had not "
        f"closed its cluster after {SHORT_GRACE:g} s (its log: "
        f"{state_file().with_name('cluster.log')}): killed it and the "
    ), line
    # the idle worker may have closed; the stuck one had not, and was killed with the daemon
    killed = line.rsplit(" (pids ", 1)[1].removesuffix(")").split(", ")
    assert str(stuck) in killed and {str(p.pid) for p in under} >= set(killed), line
    assert workers <= set(under) and not left, left  # nothing was left running
    assert not state_file().exists() and not _daemons_here()


def test_down_of_a_daemon_whose_scheduler_is_gone_is_quick(tmp_path: Path) -> None:
    """The scheduler refuses connections while its daemon lives on and does not end on SIGTERM
    (a daemon hanging while it closes a cluster that is gone): `cluster down` waited 60 s."""
    with fake_daemon(tmp_path, ignore_term=True) as daemon:
        state = {"address": "tcp://127.0.0.1:1", "pid": daemon.pid, "started": time.time()}
        write_state({**state, "backend": "local"})
        start = time.monotonic()
        down = sh("cluster", "down", timeout=30)
        took = time.monotonic() - start
        killed = daemon.wait(timeout=5) == -signal.SIGKILL
    assert down.returncode == 0 and took < 10 and killed, (took, down.stderr)
    assert down.stdout.splitlines() == [
        "cluster down: tcp://127.0.0.1:1 stopped; its scheduler was gone already (connection "
        f"refused); killed its daemon, pid {daemon.pid}, after 3 s"
    ]
    assert not state_file().exists()


def test_down_after_the_daemon_was_killed_says_it_exited(tmp_path: Path) -> None:
    """A killed daemon stays a zombie until its parent reaps it (a container's init may never),
    and `cluster down` said that its pid 'is not its cluster daemon'."""
    with fake_daemon(tmp_path) as daemon:
        write_state({"address": "tcp://127.0.0.1:1", "pid": daemon.pid, "backend": "local"})
        os.kill(daemon.pid, signal.SIGKILL)  # never reaped here: a zombie, as under a lax init
        zombie = psutil.Process(daemon.pid)
        while zombie.status() != psutil.STATUS_ZOMBIE:  # (psutil's wait would reap it)
            time.sleep(0.01)
        down = sh("cluster", "down", timeout=30)
    assert down.returncode == 1 and down.stdout == ""
    assert down.stderr.splitlines() == [
        f"no cluster is running (removed the stale state file {state_file()}: its cluster "
        f"daemon (pid {daemon.pid}) exited)"
    ]
    assert not state_file().exists()


@pytest.mark.parametrize(
    ("content", "reason"),
    [("{", "it is not JSON"), ('["tcp://127.0.0.1:1"]', "expected a JSON object, found list")],
)
def test_a_damaged_state_file_is_a_warning_where_no_cluster_is_needed(
    content: str, reason: str
) -> None:
    """submit (and its dry run) attach to a `cluster up` cluster when one runs, and start their
    own otherwise: a damaged state file refused them (exit 2), although they need none."""
    path = state_file()
    path.parent.mkdir(parents=True)
    path.write_text(content)
    dry = sh("submit", str(ROOT / "workflows/example.yaml"), "--dry-run", timeout=60)
    assert dry.returncode == 0, dry.stderr
    assert "cluster: local (" in dry.stdout
    [line] = dry.stderr.splitlines()
    assert line.startswith(f"warning: the cluster state file {path} is damaged: {reason}")
    assert line.endswith("; remove it (ignored: no `cluster up` cluster is used)")
    assert path.read_text() == content  # left for the user to remove


def test_a_damaged_state_file_is_a_warning_for_the_benchmark() -> None:
    from openclaw_dask.cli.bench_cmd import _note_running_cluster
    from openclaw_dask.runtime.state import StateFileWarning

    state_file().parent.mkdir(parents=True)
    state_file().write_text("[]")
    with pytest.warns(StateFileWarning, match="is damaged: expected a JSON object, found list"):
        _note_running_cluster()


def test_the_benchmark_of_the_running_cluster_does_not_call_it_another(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``benchmark --set cluster.scheduler_address=<the cluster up cluster>`` measures that
    cluster, and was told it "keeps running beside the clusters measured here"."""
    from openclaw_dask.cli.bench_cmd import _note_running_cluster

    with fake_daemon(tmp_path) as daemon:
        write_state({"address": "tcp://127.0.0.1:1", "pid": daemon.pid, "backend": "local"})
        _note_running_cluster("tcp://127.0.0.1:1")
        assert capsys.readouterr().err == ""
        _note_running_cluster(None)  # another cluster is measured: it runs beside it
        assert "keeps running beside the clusters measured here" in capsys.readouterr().err


def test_a_state_dir_that_is_a_file_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It was called a damaged state file (…/cluster.json, which does not exist): 'remove it'."""
    file = tmp_path / "a-file"
    file.write_text("")
    for where, said in ((file, "it is a file"), (file / "sub", f"{file} is a file")):
        monkeypatch.setenv("OPENCLAW_STATE_DIR", str(where))
        for command in (["cluster", "up"], ["cluster", "status"], ["cluster", "down"]):
            done = sh(*command, timeout=60)
            assert done.returncode == 2, done.stderr
            assert done.stderr.splitlines() == [
                f"error: OPENCLAW_STATE_DIR: {where} is not a directory ({said}); set "
                "OPENCLAW_STATE_DIR to a directory",
                "1 problem found",
            ], command
    assert file.read_text() == ""


def test_a_relative_state_dir_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """It named another directory from each folder: `cluster status` from another folder had
    said no cluster ran while one did (and `down` left it running)."""
    monkeypatch.setenv("OPENCLAW_STATE_DIR", "state")
    for command in (["cluster", "up"], ["cluster", "status"], ["cluster", "down"]):
        done = sh(*command, timeout=60, cwd=tmp_path)
        assert done.returncode == 2, done.stderr
        assert done.stderr.splitlines() == [
            "error: OPENCLAW_STATE_DIR: expected an absolute path, got 'state' (a relative one "
            "names another directory from each folder a command runs in); set "
            f"OPENCLAW_STATE_DIR to {tmp_path / 'state'}",
            "1 problem found",
        ], command
    assert list(tmp_path.iterdir()) == []


def _read_only(folder: Path) -> list[str] | None:
    """A command prefix under which ``folder`` is read-only, or ``None`` where none works.

    Permissions do not stop root: root gets a read-only bind mount in a mount namespace of its
    own (nothing outside the command sees it).
    """
    if os.geteuid() != 0:
        folder.chmod(0o555)
        return []
    script = 'mount --bind "$0" "$0" && mount -o remount,ro,bind "$0" && exec "$@"'
    prefix = ["unshare", "-m", "sh", "-c", script, str(folder)]
    probe = subprocess.run([*prefix, "touch", str(folder / "x")], capture_output=True, text=True)
    return prefix if "Read-only file system" in probe.stderr else None


def test_a_read_only_state_dir_is_one_line(tmp_path: Path) -> None:
    """`cluster up` ended in 'error: OSError: [Errno 30] Read-only file system: …' (exit 1)."""
    folder = tmp_path / "read-only"
    folder.mkdir()
    prefix = _read_only(folder)
    if prefix is None:
        pytest.skip("no way to make a read-only directory here (root without unshare -m)")
    env = {**os.environ, "OPENCLAW_STATE_DIR": str(folder)}
    try:
        up = subprocess.run(
            [*prefix, str(EXE), "cluster", "up"], capture_output=True, text=True, env=env
        )
    finally:
        folder.chmod(0o755)
    assert up.returncode == 2, up.stderr
    reason = "read-only file system" if prefix else "permission denied"
    assert up.stderr.splitlines() == [
        f"error: OPENCLAW_STATE_DIR: {folder} cannot be written ({reason}); set "
        "OPENCLAW_STATE_DIR to a writable directory",
        "1 problem found",
    ]
    assert not _daemons_here()


@pytest.mark.parametrize("name", ["cluster.lock", "cluster.log"])
def test_a_folder_in_place_of_a_state_file_is_named(name: str) -> None:
    """A folder named cluster.lock was said to make the whole state directory "cannot be
    written"; one named cluster.log ended in Python's IsADirectoryError, exit 1."""
    where = state_file().parent
    (where / name).mkdir(parents=True)
    up = sh("cluster", "up", timeout=60)
    assert up.returncode == 2, up.stderr
    assert up.stderr.splitlines() == [
        f"error: OPENCLAW_STATE_DIR: {where / name} cannot be written (is a directory); remove "
        "it, or set OPENCLAW_STATE_DIR to another directory",
        "1 problem found",
    ]
    assert not _daemons_here() and not state_file().exists()


def test_status_and_compact_name_a_worker_that_does_not_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A stopped worker (or one in a task that holds the GIL) hung `cluster status` and
    `memory compact` until it was continued: Client.run waits for every worker for ever."""
    from click.testing import CliRunner

    from openclaw_dask.cli.main import cli
    from openclaw_dask.runtime import inspect

    monkeypatch.setattr(inspect, "ANSWER_TIMEOUT", 1.0)
    up = sh("cluster", "up", "--set", "parallel.processes=2", "cluster.dashboard_address=")
    assert up.returncode == 0, up.stderr
    state = read_state()
    assert state
    workers = [
        p for p in psutil.Process(state["pid"]).children() if "spawn_main" in str(p.cmdline())
    ]
    stopped = workers[0]
    stopped.suspend()
    try:
        status = CliRunner().invoke(cli, ["cluster", "status"])
        compact = CliRunner().invoke(cli, ["memory", "compact"])
    finally:
        stopped.resume()
        down = sh("cluster", "down")
    assert down.returncode == 0, down.stderr
    for done in (status, compact):
        assert done.exit_code == 1, done.output
        [said] = [line for line in done.stderr.splitlines() if "did not answer" in line]
        assert said.startswith("worker tcp://127.0.0.1:")
        assert said.endswith(
            " did not answer within 1 s (stopped, or busy in a task that holds the GIL)"
        )
    assert status.stdout.count("│ tcp://127.0.0.1:") == 1  # the worker that answered
    assert compact.stdout.count("malloc_trim") == 1


def test_status_and_down_say_that_a_cluster_up_is_starting() -> None:
    """While `cluster up` started its cluster (no state file yet) they said "no cluster is
    running", and the cluster came up a moment later."""
    from openclaw_dask.runtime.state import UP_ROLE, hold_lock

    lock = hold_lock(UP_ROLE)  # as a `cluster up` holds it before its daemon takes it over
    assert lock is not None
    try:
        status, down = sh("cluster", "status"), sh("cluster", "down")
    finally:
        lock.close()
    for done in (status, down):
        assert done.returncode == 1
        assert done.stderr.strip() == (
            f"no cluster is running; `cluster up` (pid {os.getpid()}) is starting one; run this "
            "again once it is up"
        )


#: ``cluster up`` whose daemon is killed as soon as it is spawned.
DAEMON_KILLED_AS_IT_STARTS = """
import os, signal, subprocess, sys
spawn = subprocess.Popen
class Killed(spawn):
    def __init__(self, args, *more, **kw):
        super().__init__(args, *more, **kw)
        if "openclaw_dask.runtime.daemon" in args:
            os.kill(self.pid, signal.SIGKILL)
subprocess.Popen = Killed
sys.argv[0] = "openclaw-dask"
from openclaw_dask.cli import main
main()
"""


def test_a_daemon_stopped_as_it_starts_is_said_to_be() -> None:
    """It said "error: cluster up: the cluster process exited: " (nothing after), exit 2."""
    command = [sys.executable, "-c", DAEMON_KILLED_AS_IT_STARTS, "cluster", "up"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1, done.stderr
    [line] = done.stderr.splitlines()
    assert re.fullmatch(
        r"cluster up: the cluster process \(pid \d+\) was killed \(SIGKILL\) as it started", line
    )
    assert not _daemons_here() and read_state() is None


#: Mounts a 64 KiB tmpfs on "$0" with one 4 KiB page left (the lock file's), then runs "$@".
NEARLY_FULL = (
    'mount -t tmpfs -o size=64k tmpfs "$0" && mkdir "$0/state" && '
    'dd if=/dev/zero of="$0/fill" bs=1k count=58 2>/dev/null && exec "$@"'
)


def test_a_full_state_disk_is_said_and_leaves_no_half_file(tmp_path: Path) -> None:
    """With room for the lock but not for the state file, the daemon's error could not be
    written to its log either: `cluster up` said "the cluster process exited: " and no more,
    and a half-written cluster.tmp stayed behind."""
    disk = tmp_path / "disk"
    disk.mkdir()
    prefix = ["unshare", "-m", "sh", "-c", NEARLY_FULL, str(disk)]
    if subprocess.run([*prefix, "true"], capture_output=True).returncode != 0:
        pytest.skip("no tmpfs of its own here (root with unshare -m needed)")
    env = {**os.environ, "OPENCLAW_STATE_DIR": str(disk / "state")}
    up = [str(EXE), "cluster", "up", "--set", "parallel.processes=1", "cluster.dashboard_address="]
    then = f"echo left: $(ls -A {shlex.quote(str(disk / 'state'))})"
    done = subprocess.run(
        [*prefix, "sh", "-c", f"{shlex.join(up)}; {then}"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    log = disk / "state" / "cluster.log"
    assert "the cluster process exited: code " in done.stderr, done.stderr
    assert f", and its log {log} is empty (is that disk full?)" in done.stderr
    assert done.stdout.strip() == "left: cluster.lock cluster.log"  # no cluster.tmp
    assert not _daemons_here()


def test_a_cluster_without_workers_is_said_so_and_one_without_its_state_file_is_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With its workers retired, `cluster status` printed an empty table (exit 0), and a submit
    said "0 workers, 0 threads" and then waited for ever.

    A damaged state file's message says "remove it": with the file gone, `status` and
    `down` said "no cluster is running" and `up` that another `cluster up` was starting one,
    and the cluster ran on until killed by hand. (The two share one cluster: each had started
    one of its own, ~5 s with its `down`.)"""
    from distributed import Client

    from openclaw_dask.cli.main import cli
    from openclaw_dask.runtime import cluster

    monkeypatch.setattr(cluster, "WORKERS_RETURN", 1.0)
    up = sh("cluster", "up", "--set", "parallel.processes=1", "cluster.dashboard_address=")
    assert up.returncode == 0, up.stderr
    state = read_state()
    assert state
    try:
        with Client(state["address"]) as client:
            client.retire_workers(list(client.nthreads()))
        status = sh("cluster", "status")
        workflow = str(ROOT / "workflows/example.yaml")
        params = ["params.size=32", "params.chunk=16", "params.steps=2"]
        run = CliRunner().invoke(
            cli, ["submit", workflow, "--run-dir", str(tmp_path / "run"), "--set", *params]
        )
        state_file().unlink()
        status_gone, again = sh("cluster", "status"), sh("cluster", "up")
    finally:
        down = sh("cluster", "down")
    assert status.returncode == 1
    assert status.stderr.strip() == f"the cluster at {state['address']} has no workers"
    assert run.exit_code == 2, run.output
    assert (
        f"error: cluster up (pid {state['pid']}): cluster.scheduler_address: the running "
        f"cluster at {state['address']} has no workers (none came within 1 s); "
        "`openclaw-dask cluster down`, then `openclaw-dask cluster up` starts new ones"
    ) in run.stderr
    assert not (tmp_path / "run").exists()

    gone = (
        f"a cluster daemon (pid {state['pid']}) runs with this state directory, but its state "
        f"file {state_file()} is gone"
    )
    assert status_gone.returncode == 1
    assert status_gone.stderr.strip() == (
        f"no cluster is running; {gone}: `openclaw-dask cluster down` stops it"
    )
    assert again.returncode == 2
    assert f"{gone}; stop it with `openclaw-dask cluster down` first" in again.stderr
    assert down.returncode == 0, down.stderr
    assert down.stdout.startswith(f"cluster down: the cluster of daemon pid {state['pid']} (")
    assert not _daemons_here()
