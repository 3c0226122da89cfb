"""Throwaway SSH hosts for the SSH-backend tests: real ``sshd`` daemons, real keys.

Each host is an OpenSSH ``sshd`` started from its own ``sshd_config`` in a temp dir, with a
fresh host key, one authorised user key and a ``known_hosts`` line for it. Where the tests run
as root and ``ip netns`` works, every host lives in its own network namespace, joined to the
test process by veth pairs on a private bridge (10.231.N.0/24, a subnet no interface here uses):
scheduler and workers then really are on different addresses, and each namespace's veth has
its own byte counters. Elsewhere (or with ``SSHRIG_LOOPBACK=1``) the hosts fall back to
127.0.0.2, 127.0.0.3, ... on loopback. Only loopback and those private addresses are ever used.

Everything started here is stopped again by :meth:`SshRig.close`: the daemons (and whatever
their sessions left running), the namespaces, the bridge.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import yaml

SSHD = "/usr/sbin/sshd"
SSH_KEYGEN = shutil.which("ssh-keygen") or "/usr/bin/ssh-keygen"
SSH_PORT = 2222


def sshd_available() -> str | None:
    """Why the rig cannot run here, or ``None`` when it can."""
    if not os.path.exists(SSHD):
        return f"{SSHD} is missing (Debian: apt-get install openssh-server)"
    if not os.path.exists(SSH_KEYGEN):
        return "ssh-keygen is missing (Debian: apt-get install openssh-client)"
    return None


def _run(*cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=False)


def netns_available() -> bool:
    """Whether this process may create network namespaces (root with ``ip netns``).

    ``SSHRIG_LOOPBACK=1`` forces the loopback rig (to test the fallback as root).
    """
    if os.environ.get("SSHRIG_LOOPBACK") or os.geteuid() != 0 or not shutil.which("ip"):
        return False
    name = f"ocprobe{os.getpid()}"
    if _run("ip", "netns", "add", name).returncode != 0:
        return False
    _run("ip", "netns", "del", name)
    return True


def keygen(path: Path, comment: str) -> str:
    """Write an ed25519 key pair at ``path``/``path.pub``; return the public key line."""
    subprocess.run(
        [SSH_KEYGEN, "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)],
        check=True,
        capture_output=True,
        timeout=30,
    )
    return path.with_suffix(".pub").read_text().strip()


def wait_for_port(host: str, port: int, timeout: float = 15.0) -> None:
    """Return once ``host:port`` accepts TCP connections."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection((host, port), timeout=1):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


@dataclass
class SshHost:
    """One running sshd: its address, port, namespace (if any) and process."""

    name: str
    host: str
    port: int
    netns: str | None
    veth: str | None
    proc: subprocess.Popen[bytes]
    log: Path

    @property
    def label(self) -> str:
        """``host:port`` as error messages name the node."""
        return f"{self.host}:{self.port}"

    def tx_bytes(self) -> int:
        """Bytes sent so far by this host's veth (read inside its namespace)."""
        if not self.netns or not self.veth:
            raise RuntimeError("byte counters need a network namespace")
        counter = f"/sys/class/net/{self.veth}/statistics/tx_bytes"
        return int(_run("ip", "netns", "exec", self.netns, "cat", counter).stdout)


@dataclass
class SshRig:
    """Throwaway sshd hosts plus the keys and ``known_hosts`` that reach them.

    Parameters
    ----------
    root
        Temp dir for keys, configs and logs.
    use_netns
        One network namespace per host (root only); else 127.0.0.x on loopback.
    """

    root: Path
    use_netns: bool
    hosts: list[SshHost] = field(default_factory=list)
    bridge: str | None = None
    namespaces: list[str] = field(default_factory=list)
    subnet: int = 0

    def __post_init__(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        self.host_key = self.root / "ssh_host_ed25519_key"
        self.host_pub = keygen(self.host_key, "openclaw-test-host")
        self.user_key = self.root / "id_ed25519"
        keygen(self.user_key, "openclaw-test-user")
        self.authorized_keys = self.root / "authorized_keys"
        shutil.copy(self.user_key.with_suffix(".pub"), self.authorized_keys)
        self.known_hosts = self.root / "known_hosts"
        self.known_hosts.write_text("")
        self.python = sys.executable  # the remote python: has openclaw-dask installed
        self.user = psutil.Process().username()
        Path("/run/sshd").mkdir(parents=True, exist_ok=True)  # sshd's privilege separation dir
        if self.use_netns:
            self._make_bridge()

    # ---- network --------------------------------------------------------------------------

    def _make_bridge(self) -> None:
        # the subnet is free once no interface has it: two rigs started at once (the suite's
        # two pytest-xdist workers) both found 10.231.1 free; the lock makes the look and the
        # taking one step
        with open(Path(tempfile.gettempdir()) / "openclaw-sshrig.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            used = _run("ip", "-4", "-o", "addr").stdout
            self.subnet = next(n for n in range(1, 255) if f"10.231.{n}." not in used)
            self.bridge = f"ocbr{os.getpid()}"[:15]
            for cmd in (
                ("ip", "link", "add", self.bridge, "type", "bridge"),
                ("ip", "addr", "add", f"10.231.{self.subnet}.1/24", "dev", self.bridge),
                ("ip", "link", "set", self.bridge, "up"),
            ):
                _check(_run(*cmd), cmd)

    def _make_namespace(self, index: int) -> tuple[str, str, str]:
        """A namespace with a veth into the bridge; returns (namespace, address, veth)."""
        ns = f"oc{os.getpid()}n{index}"
        outer, inner = f"oc{os.getpid()}o{index}"[:15], f"oc{os.getpid()}i{index}"[:15]
        address = f"10.231.{self.subnet}.{index + 2}"
        self.namespaces.append(ns)
        for cmd in (
            ("ip", "netns", "add", ns),
            ("ip", "link", "add", outer, "type", "veth", "peer", "name", inner),
            ("ip", "link", "set", inner, "netns", ns),
            ("ip", "link", "set", outer, "master", str(self.bridge)),
            ("ip", "link", "set", outer, "up"),
            ("ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up"),
            ("ip", "netns", "exec", ns, "ip", "addr", "add", f"{address}/24", "dev", inner),
            ("ip", "netns", "exec", ns, "ip", "link", "set", inner, "up"),
        ):
            _check(_run(*cmd), cmd)
        return ns, address, inner

    # ---- hosts ----------------------------------------------------------------------------

    def add_host(
        self,
        name: str,
        env: dict[str, str] | None = None,
        loopback: bool | None = None,
    ) -> SshHost:
        """Start one more sshd host.

        Parameters
        ----------
        name
            Short label (file names).
        env
            Environment of the host's login sessions (sshd ``SetEnv``), e.g. an
            ``OPENCLAW_CONFIG`` that gives the node a config of its own.
        loopback
            Force a loopback host (127.0.0.1, a free port) even on a namespace rig.
        """
        index = len(self.hosts)
        netns = veth = None
        if self.use_netns and not loopback:
            netns, host, veth = self._make_namespace(index)
            port = SSH_PORT
        else:
            host = "127.0.0.1" if loopback else f"127.0.0.{index + 2}"
            port = free_port(host)
        cfg = self.root / f"sshd_config.{name}"
        lines = [
            f"ListenAddress {host}:{port}",
            f"HostKey {self.host_key}",
            f"AuthorizedKeysFile {self.authorized_keys}",
            f"PidFile {self.root / f'sshd.{name}.pid'}",
            "UsePAM no",
            "StrictModes no",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "PermitRootLogin prohibit-password",
            "AllowTcpForwarding no",
            "X11Forwarding no",
            "PrintMotd no",
            "LogLevel VERBOSE",
        ]
        if env:
            lines.append("SetEnv " + " ".join(f"{k}={v}" for k, v in env.items()))
        cfg.write_text("\n".join(lines) + "\n")
        log = self.root / f"sshd.{name}.log"
        cmd = [SSHD, "-D", "-e", "-f", str(cfg)]
        if netns:
            cmd = ["ip", "netns", "exec", netns, *cmd]
        with open(log, "wb") as sink:
            proc = subprocess.Popen(cmd, stdout=sink, stderr=subprocess.STDOUT)
        ssh_host = SshHost(name, host, port, netns, veth, proc, log)
        self.hosts.append(ssh_host)
        try:
            wait_for_port(host, port)
        except OSError:
            raise RuntimeError(f"sshd {name} did not start: {log.read_text()}") from None
        with open(self.known_hosts, "a") as f:
            f.write(f"[{host}]:{port} {self.host_pub}\n")
        return ssh_host

    # ---- configs --------------------------------------------------------------------------

    def node(self, host: SshHost, **fields: Any) -> dict[str, Any]:
        """A ``distributed.nodes`` entry for ``host`` (python: this interpreter)."""
        return {"host": host.host, "ssh_port": host.port, "python": self.python, **fields}

    def config(
        self, nodes: list[dict[str, Any]], path: Path, extra: dict[str, Any] | None = None
    ) -> Path:
        """Write an ssh ``openclaw.config`` for ``nodes`` at ``path``."""
        data: dict[str, Any] = {
            "cluster": {"backend": "ssh", "dashboard_address": "127.0.0.1:0"},
            "distributed": {
                "nodes": nodes,
                "ssh": {
                    "known_hosts": str(self.known_hosts),
                    "identity_file": str(self.user_key),
                },
            },
        }
        for dotted, value in (extra or {}).items():
            section = data
            *parents, leaf = dotted.split(".")
            for p in parents:
                section = section.setdefault(p, {})
            section[leaf] = value
        path.write_text(yaml.safe_dump(data, sort_keys=False))
        return path

    def session_processes(self) -> list[psutil.Process]:
        """What the hosts' SSH sessions run now (every descendant of an sshd but sshd's own)."""
        found = []
        for h in self.hosts:
            with contextlib.suppress(psutil.NoSuchProcess):
                found += [
                    p
                    for p in psutil.Process(h.proc.pid).children(recursive=True)
                    if p.name() != "sshd"
                ]
        return found

    # ---- teardown -------------------------------------------------------------------------

    def close(self) -> None:
        """Stop every sshd and what its sessions left, delete namespaces and the bridge."""
        for h in self.hosts:
            _kill_tree(h.proc.pid)
            try:
                h.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                h.proc.kill()
                h.proc.wait(timeout=10)
        for ns in self.namespaces:
            for pid in _run("ip", "netns", "pids", ns).stdout.split():
                _kill_tree(int(pid))
            _run("ip", "netns", "del", ns)
        if self.bridge:
            _run("ip", "link", "del", self.bridge)
        self.hosts.clear()
        self.namespaces.clear()


def free_port(host: str) -> int:
    """A TCP port that is free on ``host`` right now."""
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _kill_tree(pid: int) -> None:
    try:
        root = psutil.Process(pid)
        procs = [*root.children(recursive=True), root]
    except psutil.NoSuchProcess:
        return
    for p in procs:
        with contextlib.suppress(psutil.NoSuchProcess):
            p.kill()
    psutil.wait_procs(procs, timeout=10)


def _check(result: subprocess.CompletedProcess[str], cmd: tuple[str, ...]) -> None:
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {result.stderr.strip()}")


@contextlib.contextmanager
def loopback_rig(root: Path, *names: str) -> Any:
    """A rig of sshd hosts ``names`` on the loopback address (no network namespaces: for
    tests of what one host does, not of traffic between hosts); fails without sshd."""
    import pytest

    missing = sshd_available()
    if missing:
        pytest.fail(missing)  # CI installs openssh-server (scripts/setup-env.sh)
    rig = SshRig(root, use_netns=False)
    try:
        for name in names:
            rig.add_host(name)
        yield rig
    finally:
        rig.close()
