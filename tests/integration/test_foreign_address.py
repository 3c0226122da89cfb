"""``--address`` of something that is not a plain Dask scheduler: real servers on 127.0.0.1
(an HTTP server, a TLS server), reached through the command line as a user reaches them."""

from __future__ import annotations

import socket
import ssl
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from openclaw_dask.config.tls import create_certificates

EXE = Path(sys.executable).with_name("openclaw-dask")


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
