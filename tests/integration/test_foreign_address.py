"""``--address`` of something that is not a plain Dask scheduler (real servers on 127.0.0.1:
an HTTP server, a TLS server), or of a Dask cluster without openclaw-dask, reached through the
command line as a user reaches them."""

from __future__ import annotations

import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from openclaw_dask.config.tls import create_certificates

EXE = Path(sys.executable).with_name("openclaw-dask")
ROOT = Path(__file__).resolve().parents[2]


@contextmanager
def serving(reply: bytes = b"", context: ssl.SSLContext | None = None) -> Iterator[int]:
    """A server on a free port of 127.0.0.1 that reads what comes and sends ``reply`` (over
    TLS with ``context``), then hangs up; yields its port."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            with suppress(OSError), conn:
                conn.settimeout(5)
                peer = context.wrap_socket(conn, server_side=True) if context else conn
                peer.recv(65536)
                peer.sendall(reply)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        thread.join()
        listener.close()


def status(address: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(EXE), "cluster", "status", "--address", address],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_an_http_server_is_said_not_to_speak_dask_s_protocol() -> None:
    """Dask read "HTTP/1.1 400" as a frame length and tried to allocate 3 EiB: a MemoryError,
    exit 1 and a traceback after 20 s."""
    http = b"HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\n\r\n"
    with serving(http) as port:
        result = status(f"tcp://127.0.0.1:{port}")
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr and "EiB" not in result.stderr
    (line,) = [ln for ln in result.stderr.splitlines() if ln.startswith("error:")]
    assert f"no scheduler answers at tcp://127.0.0.1:{port}: something answers there" in line
    assert "not in Dask's protocol (its reply read as MemoryError)" in line


def test_a_tls_server_reached_over_tcp_is_said_to_speak_tls(tmp_path: Path) -> None:
    """A TLS scheduler resets Dask's plain handshake: "Connection reset by peer" named
    neither TLS nor the address to use."""
    certs = create_certificates(tmp_path / "certs")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(certs.nodes[0].cert, certs.nodes[0].key)
    context.load_verify_locations(certs.ca_file)
    context.verify_mode = ssl.CERT_REQUIRED  # as Dask's TLS scheduler asks for a client's
    with serving(context=context) as port:
        result = status(f"tcp://127.0.0.1:{port}")
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    (line,) = [ln for ln in result.stderr.splitlines() if ln.startswith("error:")]
    assert f"it speaks TLS: use tls://127.0.0.1:{port} and the cluster's certificates" in line


#: a Dask scheduler or worker (no nanny) in an environment without openclaw-dask: the package
#: is made unimportable in its process
BARE = """
import sys
sys.modules["openclaw_dask"] = None
from distributed.cli import dask_scheduler, dask_worker
(dask_scheduler if sys.argv[1] == "scheduler" else dask_worker).main(sys.argv[2:])
"""


def test_a_cluster_without_openclaw_dask_is_said_before_a_run_starts(tmp_path: Path) -> None:
    """A Dask cluster wired by hand in an environment without openclaw-dask: `cluster status`
    and `submit --address` failed with ``error: Exception: ModuleNotFoundError(...)``, exit 1,
    and the run left its directory. Now both say so in one line (exit 2), nothing written."""
    from distributed import Client

    script, info = tmp_path / "bare.py", tmp_path / "scheduler.json"
    script.write_text(BARE)
    common = ["--scheduler-file", str(info), "--no-dashboard"]
    started = [
        subprocess.Popen(
            [sys.executable, str(script), role, *common, *extra],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for role, extra in (("scheduler", ["--port", "0"]), ("worker", ["--no-nanny"]))
    ]
    try:
        deadline = time.monotonic() + 60
        while not info.exists():
            assert time.monotonic() < deadline, "the bare scheduler never started"
            time.sleep(0.1)
        with Client(scheduler_file=str(info), timeout=30) as client:
            client.wait_for_workers(1, timeout=60)
            address = client.scheduler.address
        said = (
            f"the cluster at {address} cannot run openclaw-dask's code: its scheduler and 1 of "
            "its 1 workers (tcp://"
        )
        install = "); install openclaw-dask (0.1.0, as here) in the environment they run in"
        result = status(address)
        assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
        assert f"error: --address: {said}" in result.stderr and install in result.stderr
        run_dir = tmp_path / "run"
        example = str(ROOT / "workflows/example.yaml")
        args = [example, "--address", address, "--run-dir", str(run_dir)]
        run = subprocess.run(
            [str(EXE), "submit", *args],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr
        assert said in run.stderr and install in run.stderr, run.stderr
        assert not run_dir.exists()
    finally:
        # the worker first: one whose scheduler has gone waits on it to close (CI saw 30 s)
        for proc in reversed(started):
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
