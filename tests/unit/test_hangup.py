"""The SSH hang-up preload on real processes: a server stops when its standard input ends."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time

from openclaw_dask.runtime.hangup import GRACE
from openclaw_dask.translate.ssh import HANGUP_PRELOAD, with_preload

SCHEDULER = {
    "cls": "distributed.Scheduler",
    "opts": {"host": "127.0.0.1", "port": 0, "dashboard": False, "preload": [HANGUP_PRELOAD]},
}


def start_scheduler(stdin: int) -> subprocess.Popen[str]:
    """``dask_spec`` with a scheduler, as Dask's SSH deploy runs it; returns once it serves."""
    command = [sys.executable, "-m", "distributed.cli.dask_spec", "--spec", json.dumps(SCHEDULER)]
    proc = subprocess.Popen(command, stdin=stdin, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    for line in proc.stderr:
        if "Scheduler at" in line:
            return proc
    raise AssertionError(f"no scheduler: exit {proc.wait()}")


def test_a_scheduler_closes_itself_when_its_session_input_ends() -> None:
    proc = start_scheduler(subprocess.PIPE)
    try:
        assert proc.stdin is not None
        t0 = time.monotonic()
        proc.stdin.close()  # what sshd does when the client's connection is gone
        code = proc.wait(timeout=GRACE + 30)
        took = time.monotonic() - t0
    finally:
        proc.kill()
        proc.wait()
    # the server closed on its loop and dask_spec returned (0), not the backstop exit (1)
    assert code == 0, proc.stderr.read() if proc.stderr else code
    assert took < GRACE


def test_a_process_without_a_session_pipe_is_left_alone() -> None:
    probe = "from openclaw_dask.runtime.hangup import session_pipe; print(session_pipe())"
    for stdin, expected in ((subprocess.DEVNULL, "False"), (subprocess.PIPE, "True")):
        result = subprocess.run(
            [sys.executable, "-c", probe], stdin=stdin, capture_output=True, text=True, check=True
        )
        assert result.stdout.strip() == expected
    # a scheduler started from /dev/null reads end of file at once and still serves
    proc = start_scheduler(subprocess.DEVNULL)
    try:
        time.sleep(1.0)
        assert proc.poll() is None
    finally:
        proc.kill()
        proc.wait()


def test_preload_keywords_keep_the_dask_config_first() -> None:
    assert with_preload({}, "nanny", "m", []) == {"preload": ["m"], "preload_argv": [[]]}
    given = {"distributed.nanny.preload": "a"}
    assert with_preload(given, "nanny", "m", ["-x"]) == {
        "preload": ["a", "m"],
        "preload_argv": [[], ["-x"]],
    }
    shared = {"distributed.nanny.preload": ["a", "b"], "distributed.nanny.preload-argv": ["-q"]}
    assert with_preload(shared, "nanny", "m", [])["preload_argv"] == [["-q"], ["-q"], []]
    each = {"distributed.nanny.preload": ["a", "b"], "distributed.nanny.preload-argv": [["-q"]]}
    assert with_preload(each, "nanny", "m", [])["preload_argv"] == [["-q"], [], []]


def test_a_socket_for_standard_input_is_a_session_too() -> None:
    """An SSH server may hand a command without a terminal a socket rather than a pipe
    (mutation audit: sockets dropped from session_pipe went unseen: the tests use pipes)."""
    probe = "from openclaw_dask.runtime.hangup import session_pipe; print(session_pipe())"
    left, right = socket.socketpair()
    with left, right:
        proc = subprocess.run(
            [sys.executable, "-c", probe], stdin=left, capture_output=True, text=True, timeout=60
        )
    assert proc.stdout == "True\n", proc.stderr
    alone = subprocess.run(
        [sys.executable, "-c", probe],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert alone.stdout == "False\n", alone.stderr
