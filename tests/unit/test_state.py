"""The `cluster up` state file: only the daemon it names is trusted, with real processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil
import pytest

from openclaw_dask.config import ConfigError
from openclaw_dask.runtime.processes import wait_gone
from openclaw_dask.runtime.state import (
    DAEMON_MODULE,
    LOCK_NAME,
    START_SLACK,
    StateFileWarning,
    address_problem,
    clear_state,
    daemon_process,
    load_state,
    pid_alive,
    read_state,
    read_state_or_warn,
    runs_daemon,
    scheduler_refuses,
    state_file,
    this_host,
    write_state,
)

ADDRESS = "tcp://127.0.0.1:1"


@contextmanager
def fake_daemon(
    folder: Path, ignore_term: bool = False, state: Path | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    """A process whose command line is the daemon's (``python -m openclaw_dask.runtime.daemon``)
    but which only sleeps: a cluster daemon whose scheduler does not answer.

    A package of the same name earlier on ``sys.path`` stands in for the real module, which
    would start a cluster; the stand-in writes a marker so that the real one is never mistaken
    for it. ``ignore_term``: it ignores SIGTERM, as a daemon that hangs closing its cluster.
    Like a daemon, it holds the lock of its state directory (``state``, else this process's).
    """
    lock = (state or state_file().parent) / LOCK_NAME
    lock.parent.mkdir(parents=True, exist_ok=True)
    root = folder / "fake-daemon"
    package = root / "openclaw_dask" / "runtime"
    package.mkdir(parents=True)
    (root / "openclaw_dask" / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    marker = root / "started"
    ignore = "import signal\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n" if ignore_term else ""
    hold = f"import fcntl\nheld = open({str(lock)!r}, 'a+')\nfcntl.flock(held, fcntl.LOCK_EX)\n"
    (package / "daemon.py").write_text(
        f"{ignore}{hold}import pathlib, time\npathlib.Path({str(marker)!r}).touch()\n"
        "time.sleep(120)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(root)}
    env.pop("PYTHONSAFEPATH", None)
    proc = subprocess.Popen([sys.executable, "-m", DAEMON_MODULE], cwd=root, env=env)
    try:
        deadline = time.monotonic() + 30
        while not marker.exists():
            assert proc.poll() is None and time.monotonic() < deadline, "the stand-in did not run"
            time.sleep(0.05)
        yield proc
    finally:
        proc.kill()
        proc.wait()


@pytest.fixture(autouse=True)
def _state_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A private state dir: another cluster may run under the default one on this machine."""
    monkeypatch.setenv("OPENCLAW_STATE_DIR", str(tmp_path / "state"))


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    """An unrelated live process of this user."""
    proc = subprocess.Popen(["sleep", "300"])
    yield proc
    proc.kill()
    proc.wait()


def test_pids_that_name_process_groups_are_never_alive() -> None:
    # kill(0, sig) and kill(-1, sig) signal process groups: the old check said "alive" to both
    assert not pid_alive(0)
    assert not pid_alive(-1)
    assert not pid_alive(True)
    assert not pid_alive(2**70)
    assert pid_alive(os.getpid())


@pytest.mark.parametrize(
    ("cmdline", "ours"),
    [
        ([sys.executable, "-m", DAEMON_MODULE], True),
        ([sys.executable, "-m", DAEMON_MODULE, "--config", "x", "--set", "a=b"], True),
        (["python3", "-u", "-X", "dev", "-W", "error", "-m", DAEMON_MODULE], True),
        (["python3", f"-m{DAEMON_MODULE}"], True),
        (["python3", "-m", "openclaw_dask.runtime.daemonx"], False),
        (["python3", "-c", "pass", "-m", DAEMON_MODULE], False),
        (["python3", "-cpass", "-m", DAEMON_MODULE], False),  # code joined to -c, as -m may be
        (["python3", "script.py", "-m", DAEMON_MODULE], False),
        (["sleep", "300"], False),
        ([], False),
    ],
)
def test_the_daemon_is_recognised_by_its_command_line(cmdline: list[str], ours: bool) -> None:
    assert runs_daemon(cmdline) is ours


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ({"address": ADDRESS}, "it names no pid"),
        ({"address": ADDRESS, "pid": "123"}, 'pid "123" is not an integer'),
        ({"address": ADDRESS, "pid": 12.0}, "pid 12.0 is not an integer"),
        ({"address": ADDRESS, "pid": True}, "pid true is not an integer"),
        ({"address": ADDRESS, "pid": -1}, "pid -1 cannot be a cluster daemon"),
        ({"address": ADDRESS, "pid": 0}, "pid 0 cannot be a cluster daemon"),
        ({"address": ADDRESS, "pid": 1}, "pid 1 cannot be a cluster daemon"),
        ({"pid": 4242}, "address: expected a scheduler address"),
        ({"address": "foo", "pid": 4242}, "address: expected a scheduler address"),
        ({"address": ADDRESS, "pid": 4242, "host": 7}, "host 7 is not a host name"),
        ({"address": ADDRESS, "pid": 4242, "client": [1]}, "client settings [1] are not a JSON"),
        ({"address": ADDRESS, "pid": 4242, "backend": 7}, "backend 7 is not local, cuda or ssh"),
        ({"address": ADDRESS, "pid": 4242, "backend": "mpi"}, 'backend "mpi" is not local,'),
        ([ADDRESS, 4242], "expected a JSON object, found list"),
        ("{not json", "it is not JSON"),
    ],
)
def test_a_damaged_file_is_an_error_and_is_kept(content: object, reason: str) -> None:
    path = state_file()
    path.parent.mkdir(parents=True)
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    with pytest.raises(ConfigError) as info:
        read_state()
    (problem,) = info.value.problems
    assert str(problem).startswith(f"the cluster state file {path} is damaged: {reason}")
    assert str(problem).endswith("; remove it")
    assert path.exists()  # whether its cluster still runs cannot be told: the user decides


def test_no_file_is_no_cluster() -> None:
    assert load_state() == (None, None)


def test_a_live_process_that_is_not_the_daemon_is_stale_and_left_alone(
    sleeper: subprocess.Popen[bytes],
) -> None:
    write_state({"address": ADDRESS, "pid": sleeper.pid, "backend": "local"})
    state, stale = load_state()
    assert state is None
    assert stale == (
        f"removed the stale state file {state_file()}: pid {sleeper.pid} is not its cluster daemon"
    )
    assert not state_file().exists()
    assert sleeper.poll() is None


def test_an_exited_daemon_is_stale() -> None:
    gone = subprocess.Popen(["true"])
    gone.wait()
    write_state({"address": ADDRESS, "pid": gone.pid})
    state, stale = load_state()
    assert state is None and stale and f"its cluster daemon (pid {gone.pid}) exited" in stale
    assert not state_file().exists()


@contextmanager
def zombie() -> Iterator[int]:
    """The pid of a child that has exited and is not reaped until the block ends (as an
    orphaned daemon stays under a container's init that reaps nothing)."""
    gone = subprocess.Popen(["true"])
    try:
        deadline = time.monotonic() + 10
        while psutil.Process(gone.pid).status() != psutil.STATUS_ZOMBIE:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        yield gone.pid
    finally:
        gone.wait()


def test_a_daemon_that_exited_and_was_not_reaped_is_said_to_have_exited() -> None:
    """A zombie has exited: not "pid N is not its cluster daemon", which sends the user
    looking for another process (mutation audit: a zombie counted as running)."""
    with zombie() as pid:
        write_state({"address": ADDRESS, "pid": pid})
        state, stale = load_state()
        assert state is None and stale and f"its cluster daemon (pid {pid}) exited" in stale


def test_an_exited_process_that_was_not_reaped_is_not_waited_for() -> None:
    """``cluster down`` waits for its daemon to be gone: a zombie is (mutation audit: one
    counted as running made down wait out its grace, then say the daemon had not closed)."""
    with zombie() as pid:
        t0 = time.monotonic()
        assert wait_gone([psutil.Process(pid)], timeout=5) == []
        assert time.monotonic() - t0 < 1


@pytest.mark.parametrize("address", ["ucx://127.0.0.1:1", "inproc://127.0.0.1/1/1"])
def test_only_tcp_and_tls_schedulers_are_said_to_refuse(address: str) -> None:
    """``cluster down`` gives a daemon whose scheduler refuses connections 3 s, not 20: only a
    transport whose refusal a TCP connect can see is judged by one (mutation audit: a ucx
    scheduler's port tried over TCP, refused, and its cluster killed unclosed)."""
    assert scheduler_refuses("tcp://127.0.0.1:1")
    assert not scheduler_refuses(address)


def test_a_damaged_state_file_is_warned_about_once_a_process() -> None:
    """A run reads the state when it plans and again when it starts its cluster: one warning
    line, not one each time (mutation audit: a warning at every read went unseen, the dry
    run reading it once)."""
    path = state_file()
    path.parent.mkdir(parents=True)
    path.write_text("[]")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert read_state_or_warn() is None and read_state_or_warn() is None
    said = [str(w.message) for w in seen if issubclass(w.category, StateFileWarning)]
    assert len(said) == 1 and "is damaged: expected a JSON object, found list" in said[0]


def test_the_daemon_is_trusted(tmp_path: Path) -> None:
    with fake_daemon(tmp_path) as daemon:
        content = {"address": ADDRESS, "pid": daemon.pid, "started": time.time()}
        write_state(content)
        assert load_state() == (content, None)
        proc = daemon_process(content)
        assert proc is not None and proc.pid == daemon.pid
        # a state file written before the process started names an earlier process (reused pid)
        created = psutil.Process(daemon.pid).create_time()
        write_state({**content, "started": created - START_SLACK - 60})
        state, stale = load_state()
        assert state is None and stale and "is not its cluster daemon" in stale
        assert daemon.poll() is None


def test_a_file_copied_from_another_state_directory_is_not_its_daemon_s(tmp_path: Path) -> None:
    """A project folder copied with its OPENCLAW_STATE_DIR: the copy's file named the live
    daemon of the original, so `submit` there attached to that cluster and `down` stopped it."""
    with fake_daemon(tmp_path, state=tmp_path / "original") as daemon:
        content = {"address": ADDRESS, "pid": daemon.pid, "started": time.time()}
        write_state(content)
        assert daemon_process(content) is None
        state, stale = load_state()
        assert state is None and stale == (
            f"removed the stale state file {state_file()}: its cluster daemon (pid "
            f"{daemon.pid}) runs the cluster of another state directory (the file was copied "
            "from there)"
        )
        assert not state_file().exists() and daemon.poll() is None


def test_a_file_of_another_host_is_neither_trusted_nor_removed(tmp_path: Path) -> None:
    # a home shared with a login node: its daemon's pid may name anything here, even a daemon
    with fake_daemon(tmp_path) as daemon:
        content = {"address": ADDRESS, "pid": daemon.pid, "host": "login-1", "started": 0}
        write_state(content)
        state, note = load_state()
        assert state is None and read_state() is None
        assert note == (
            f"the state file {state_file()} is of a cluster started on host login-1, and this "
            f"is {this_host()}: `openclaw-dask cluster down` on login-1 stops it"
        )
        assert json.loads(state_file().read_text()) == content
        # this host's name, or none recorded (an older file): checked by pid as before
        for host in ({"host": this_host()}, {}):
            write_state({"address": ADDRESS, "pid": daemon.pid, "started": time.time(), **host})
            assert load_state()[0] is not None
        assert daemon.poll() is None


def test_clear_state_for_a_pid_leaves_other_and_odd_files() -> None:
    write_state({"address": ADDRESS, "pid": 4242})
    clear_state(4243)
    assert state_file().exists()
    state_file().write_text("[1, 2]")
    clear_state(4242)  # not an object: not this pid's file (and no AttributeError)
    assert state_file().exists()
    clear_state()
    assert not state_file().exists()


@pytest.mark.parametrize(
    "address",
    [
        "foo",
        "xyz://127.0.0.1:8786",
        "tcp://[::1",
        "tcp://h:99999",
        "127.0.0.1:8786",
        "inproc://127.0.0.1/1/2",
    ],
)
def test_malformed_addresses_are_named(address: str) -> None:
    problem = address_problem(address)
    assert problem and problem.startswith(
        f"expected a scheduler address such as tcp://10.0.0.1:8786, got {address!r}"
    )


@pytest.mark.parametrize("address", [ADDRESS, "tls://[::1]:8786", "ucx://10.0.0.1:13337"])
def test_scheduler_addresses_pass(address: str) -> None:
    assert address_problem(address) is None
