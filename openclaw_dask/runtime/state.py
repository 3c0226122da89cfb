"""The state file of the long-lived cluster of ``openclaw-dask cluster up``.

One JSON file, ``$OPENCLAW_STATE_DIR/cluster.json`` (default
``~/.local/state/openclaw-dask/cluster.json``), holds the scheduler address, the kind of
cluster (``backend``: local, cuda or ssh), the dashboard link, the pid of the process that
owns the cluster (the daemon, ``python -m openclaw_dask.runtime.daemon``), the host it runs on
and when it wrote the file (``started``).

A file is trusted only while its pid is that daemon: a process of this user that runs the
daemon module, was started before the file was written and holds this directory's lock (below;
a file copied with its folder names the daemon of the original). A file whose process is gone, or
whose pid now names another process (a reused pid), is stale and is removed when read; nothing
is ever signalled through it. A file that cannot be understood (not a JSON object, no integer
pid, no scheduler address) is damaged: reading it is a :class:`StateError` that says to
remove it, because whether a cluster still runs cannot be told.

A home directory shared by several hosts (a login node and the compute nodes of an HPC
system) shares the file too. A pid means nothing on another host, so a file that names another
host is left alone: no command here attaches to its cluster, removes the file or signals
anything; `cluster up` refuses to replace it and `cluster down` says where to run.

One cluster per state directory: ``cluster up`` takes an exclusive ``flock`` on
``cluster.lock`` beside the state file before it looks at the state file, and hands the locked
file to the daemon it starts, which holds it for its whole life. A second ``cluster up`` started
at the same moment finds the lock taken and says so at once (it used to start a second daemon,
truncate the first one's log and wait 120 s for a state file that named the other daemon). The
kernel drops the lock when the daemon ends, even by SIGKILL, so no stale lock is left behind.
"""

from __future__ import annotations

import datetime as dt
import errno
import fcntl
import json
import os
import socket
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

import psutil

from openclaw_dask.config import KEYS_BY_PATH, ConfigError, Problem
from openclaw_dask.config.errors import quote, shorten
from openclaw_dask.config.types import InvalidValueError

#: The module ``cluster up`` runs as ``python -m``; a process running anything else is not ours.
DAEMON_MODULE = "openclaw_dask.runtime.daemon"

#: Seconds a daemon's start time may seem to lie after its ``started`` stamp: psutil derives
#: start times from the boot time, which the kernel reports in whole seconds.
START_SLACK = 2.0

#: Interpreter options that take their value as the next argument (``-X dev``, ``-W error``).
_OPTIONS_WITH_VALUE = frozenset({"-W", "-X", "--check-hash-based-pycs"})


#: The lock file beside the state file (see the module docstring).
LOCK_NAME = "cluster.lock"


class StateError(ConfigError):
    """The state file or its directory cannot be used: damaged, unreadable or not writable.

    Bad input (exit 2) for the cluster commands; a command that only looks for a running
    cluster to attach to (``submit``, ``benchmark``) warns with :class:`StateFileWarning`
    and goes on without it.
    """


class StateFileWarning(UserWarning):
    """A state file that could not be used was ignored (the message says which and why)."""


def state_dir() -> Path:
    """Directory of the state file (``OPENCLAW_STATE_DIR`` or ``~/.local/state``).

    Raises
    ------
    StateError
        ``OPENCLAW_STATE_DIR`` is a relative path: it named another directory from each folder
        a command ran in, so ``cluster status`` or ``down`` from another folder said no cluster
        ran while one did (XDG's state variables are absolute for the same reason).
    """
    base = os.environ.get("OPENCLAW_STATE_DIR")
    if base and not os.path.isabs(base):
        absolute = Path(base).absolute()
        message = (
            f"expected an absolute path, got {base!r} (a relative one names another directory "
            f"from each folder a command runs in); set OPENCLAW_STATE_DIR to {absolute}"
        )
        raise StateError([Problem(message, origin="OPENCLAW_STATE_DIR")])
    return Path(base) if base else Path.home() / ".local" / "state" / "openclaw-dask"


def state_file() -> Path:
    """Path of the state file."""
    return state_dir() / "cluster.json"


def lock_file() -> Path:
    """Path of the lock that one ``cluster up`` and then its daemon hold."""
    return state_dir() / LOCK_NAME


def state_dir_error(exc: OSError) -> StateError:
    """The error for a state directory that cannot be made, read or written.

    Parameters
    ----------
    exc : OSError
        What the file system said.

    Returns
    -------
    StateError
        One problem that names the directory or the file of it in the way (a folder named
        ``cluster.lock``), ``OPENCLAW_STATE_DIR`` when it is set (the setting to change), and
        what to do.
    """
    where = state_dir()
    origin = "OPENCLAW_STATE_DIR" if os.environ.get("OPENCLAW_STATE_DIR") else None
    what = "the state directory " if origin is None else ""
    file = Path(exc.filename) if isinstance(exc.filename, str) else None
    probe_name = f".probe-{os.getpid()}"  # make_state_dir's own: the directory's fault
    if file is not None and file.parent == where and file.name != probe_name and where.is_dir():
        # one of its files (the lock, the log) is in the way, not the directory: a folder
        # named cluster.lock was said to make the directory itself "cannot be written"
        reason = (exc.strerror or str(exc)).lower()
        message = (
            f"{file} cannot be written ({reason}); remove it, or set OPENCLAW_STATE_DIR to "
            "another directory"
        )
        return StateError([Problem(message, origin=origin)])
    if exc.errno in (errno.ENOTDIR, errno.EEXIST):
        # the directory itself, or a folder above it, is a file: name the file
        probe = where
        while not probe.exists() and probe != probe.parent:
            probe = probe.parent
        file = f" ({probe} is a file)" if probe != where else " (it is a file)"
        message = f"{what}{where} is not a directory{file}"
        todo = "a directory"
    else:
        reason = (exc.strerror or str(exc)).lower()
        message = f"{what}{where} cannot be written ({reason})"
        todo = "a writable directory"
    message += f"; set OPENCLAW_STATE_DIR to {todo}"
    return StateError([Problem(message, origin=origin)])


def make_state_dir() -> Path:
    """Create the state directory if needed and check that files can be made in it.

    Returns
    -------
    Path
        The state directory.

    Raises
    ------
    StateError
        It is a file, or cannot be created or written (a read-only file system, no permission).
    """
    where = state_dir()
    try:
        where.mkdir(parents=True, exist_ok=True)
        # mkdir succeeds on an existing read-only directory: only making a file tells
        probe = where / f".probe-{os.getpid()}"
        probe.touch()
        probe.unlink()
    except OSError as exc:
        raise state_dir_error(exc) from None
    return where


def hold_lock(role: str, handle: IO[str] | None = None) -> IO[str] | None:
    """Take the state directory's lock, or rewrite who holds it.

    Parameters
    ----------
    role : str
        Who holds it, as said to a second ``cluster up`` (`` `cluster up` ``, ``cluster
        daemon``).
    handle : file, optional
        The lock file as already locked (the daemon's, inherited from ``cluster up``): only
        the holder line is rewritten.

    Returns
    -------
    file or None
        The locked file (keep it open while the lock is wanted), or ``None`` when another
        process holds the lock (:func:`lock_holder` says who).

    Raises
    ------
    StateError
        The state directory cannot be used.
    """
    try:
        if handle is None:
            handle = make_state_dir().joinpath(LOCK_NAME).open("a+")
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.close()
                return None
        # the file stays: removing it would let two later commands lock two different files
        handle.seek(0)
        handle.truncate()
        since = dt.datetime.now().isoformat(timespec="seconds")
        handle.write(f"{role} (pid {os.getpid()} on {this_host()} since {since})\n")
        handle.flush()
    except OSError as exc:
        raise state_dir_error(exc) from None
    return handle


def lock_holder() -> str:
    """Who holds the state directory's lock, as its holder wrote it down."""
    try:
        return lock_file().read_text().strip() or "another process"
    except OSError:
        return "another process"


#: The roles :func:`hold_lock` writes down (``cluster up`` while it starts, then its daemon).
UP_ROLE, DAEMON_ROLE = "`cluster up`", "cluster daemon"


def lock_owner() -> tuple[str, psutil.Process] | None:
    """Who holds the state directory's lock now, found without the state file.

    A ``cluster up`` that is still starting its cluster has written no state file yet, and a
    daemon whose state file was removed by hand (as a damaged file's message says to) has none
    any more: ``cluster down`` and ``status`` said "no cluster is running" of both, and the
    daemon could then be stopped only with ``kill``.

    Returns
    -------
    tuple of (str, psutil.Process) or None
        The role the holder wrote down (:data:`UP_ROLE` or :data:`DAEMON_ROLE`) and its
        process: one of this user and host that has the lock file open (it holds the lock as
        long as it does). ``None`` when no such process runs.
    """
    holder = lock_holder()
    role = next((r for r in (UP_ROLE, DAEMON_ROLE) if holder.startswith(f"{r} (pid ")), None)
    if role is None:
        return None
    pid, _, rest = holder.removeprefix(f"{role} (pid ").partition(" on ")
    if not pid.isdigit() or rest.partition(" ")[0] != this_host():
        return None
    try:
        proc = psutil.Process(int(pid))
        holds = proc.uids().real == os.getuid() and _holds_lock(proc)
    except (psutil.NoSuchProcess, psutil.AccessDenied):  # gone, or not this user's
        return None
    return (role, proc) if holds else None


def pid_alive(pid: int) -> bool:
    """True if a process with this pid exists.

    Pids below 1 are never asked about: ``kill(0, ...)`` and ``kill(-1, ...)`` address process
    groups (``-1``: every process this user may signal), not one process.
    """
    if isinstance(pid, bool) or not isinstance(pid, int) or pid < 1:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OverflowError:  # beyond a C pid_t: no such process
        return False
    return True


def address_problem(address: Any) -> str | None:
    """Why ``address`` is not a scheduler address, or ``None`` when it is one.

    The check is the config schema's for ``cluster.scheduler_address``, so ``--address``, the
    state file and ``submit`` accept the same addresses.
    """
    kind = KEYS_BY_PATH["cluster.scheduler_address"].type
    kind = getattr(kind, "inner", kind)  # the key is nullable; an address given must be one
    try:
        kind.check(address)
    except InvalidValueError as exc:
        detail = str(exc)
        whole = f"expected {kind.describe()}"
        if detail.startswith(whole):
            return detail
        # a failed part (the host of host:port) alone would not name the address given
        return f"{whole}, got {quote(address)} ({detail})"
    return None


def runs_daemon(cmdline: list[str]) -> bool:
    """True if ``cmdline`` is a Python interpreter running :data:`DAEMON_MODULE` with ``-m``.

    Parameters
    ----------
    cmdline : list of str
        A process's arguments, the interpreter first (as ``/proc/<pid>/cmdline`` lists them).

    Returns
    -------
    bool
        Whether the module the interpreter runs is the daemon's. Only interpreter options may
        come before ``-m``: the module name elsewhere (an argument of ``-c`` code or of a
        script) does not count.
    """
    args = iter(cmdline[1:])
    for arg in args:
        if arg == "-m":
            return next(args, None) == DAEMON_MODULE
        if arg.startswith("-m"):  # -mmodule, as getopt allows
            return arg[2:] == DAEMON_MODULE
        if arg in _OPTIONS_WITH_VALUE:
            next(args, None)
        elif not arg.startswith("-") or arg == "-" or arg.startswith("-c"):
            return False  # a script, stdin or -c code runs, not a module
    return False


def daemon_process(state: Mapping[str, Any], here: bool = True) -> psutil.Process | None:
    """The live cluster daemon that a checked ``state`` names, or ``None``.

    Parameters
    ----------
    state : Mapping
        The content of a state file that :func:`read_state` accepted (an integer pid > 1).
    here : bool
        Whether the daemon must be this state directory's (it holds the directory's lock);
        ``False`` finds the daemon of another one that a copied state file names.

    Returns
    -------
    psutil.Process or None
        The daemon, or ``None`` when the pid is gone, names another process, or names the
        daemon of another state directory. Signal it through this object: psutil checks that
        the pid still names the same process before it sends.
    """
    try:
        proc = psutil.Process(state["pid"])
        ours = runs_daemon(proc.cmdline()) and proc.uids().real == os.getuid()
        started = state.get("started")
        # a process started after the file was written got the pid of a daemon that ended
        if ours and isinstance(started, int | float) and not isinstance(started, bool):
            ours = proc.create_time() <= started + START_SLACK
        # a state file copied with its folder (a project's OPENCLAW_STATE_DIR) names a live
        # daemon of the original: `submit` attached to that cluster and `down` stopped it
        ours = ours and _holds_lock(proc) == here
    except (psutil.NoSuchProcess, psutil.AccessDenied):  # gone, a zombie, or not this user's
        return None
    return proc if ours else None


def _holds_lock(proc: psutil.Process) -> bool:
    """Whether ``proc`` has this state directory's lock file open (a daemon holds it for its
    whole life: see the module docstring)."""
    lock = os.path.realpath(lock_file())
    return any(f.path == lock for f in proc.open_files())


def _damage(state: Any) -> str | None:
    """What makes a state file's content unusable, or ``None`` when it is usable."""
    if not isinstance(state, dict):
        return f"expected a JSON object, found {type(state).__name__}"
    if "pid" not in state:
        return "it names no pid"
    pid = state["pid"]
    if isinstance(pid, bool) or not isinstance(pid, int):
        return f"pid {shorten(json.dumps(pid))} is not an integer"
    if pid <= 1:  # 0 and -1 address process groups, 1 is init: never a daemon of ours
        return f"pid {pid} cannot be a cluster daemon"
    host = state.get("host", "")
    if not isinstance(host, str):
        return f"host {shorten(json.dumps(host))} is not a host name"
    backend = state.get("backend", "local")  # (a file written before backends were recorded)
    if backend not in ("local", "cuda", "ssh"):  # submit said "a 7 cluster" of a backend 7
        return f"backend {shorten(json.dumps(backend))} is not local, cuda or ssh"
    client = state.get("client", {})  # dask settings the client applies as they are
    if not isinstance(client, dict):
        return f"client settings {shorten(json.dumps(client))} are not a JSON object"
    problem = address_problem(state.get("address"))
    return f"address: {problem}" if problem else None


def this_host() -> str:
    """The name `cluster up` records, and its files are compared with."""
    return socket.gethostname()


def other_host(state: Mapping[str, Any]) -> str | None:
    """The host a state file's daemon runs on when that is not this one, else ``None``.

    A file written before hosts were recorded is taken to be of this host.
    """
    host = state.get("host")
    return host if host and host != this_host() else None


def damaged(path: Path, reason: str) -> StateError:
    """The error for a state file that cannot be understood."""
    return StateError([Problem(f"the cluster state file {path} is damaged: {reason}; remove it")])


def load_state() -> tuple[dict[str, Any] | None, str | None]:
    """The running cluster's state and, when a stale file was removed, why.

    Returns
    -------
    state : dict or None
        The state of the running cluster, or ``None`` when none runs.
    stale : str or None
        One sentence on the stale file that was removed (its daemon exited, or its pid now
        names another process) or on a file of another host (kept), or ``None``.

    Raises
    ------
    StateError
        The file exists but is damaged (see the module docstring), or the state directory is
        a file.
    """
    path = state_file()
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None, None
    except NotADirectoryError as exc:  # OPENCLAW_STATE_DIR (or a folder above it) is a file
        raise state_dir_error(exc) from None
    except OSError as exc:
        raise damaged(path, f"it cannot be read ({exc.strerror or exc})") from None
    try:
        state = json.loads(text)
    except ValueError as exc:  # also bytes that are not UTF-8
        raise damaged(path, f"it is not JSON ({exc})") from None
    reason = _damage(state)
    if reason:
        raise damaged(path, reason)
    host = other_host(state)
    if host:  # its pid is another machine's: neither trusted nor stale from here
        return None, (
            f"the state file {path} is of a cluster started on host {host}, and this is "
            f"{this_host()}: `openclaw-dask cluster down` on {host} stops it"
        )
    if daemon_process(state):
        return state, None
    pid = state["pid"]
    try:
        clear_state(pid)  # only this file: a `cluster up` may have written a new one meanwhile
        done = f"removed the stale state file {path}"
    except OSError as exc:  # a read-only state directory: say it, and go on without a cluster
        done = f"the stale state file {path} could not be removed ({exc.strerror or exc})"
    if daemon_process(state, here=False):  # its daemon, holding another directory's lock
        return None, (
            f"{done}: its cluster daemon (pid {pid}) runs the cluster of another state "
            "directory (the file was copied from there)"
        )
    if _running(pid):
        return None, f"{done}: pid {pid} is not its cluster daemon"
    return None, f"{done}: its cluster daemon (pid {pid}) exited"


def _running(pid: int) -> bool:
    """True if a process with this pid runs; a zombie has exited (its parent has not reaped it
    yet: a daemon killed with SIGKILL, whose parent is a container's init, stays one)."""
    if not pid_alive(pid):
        return False
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def read_state() -> dict[str, Any] | None:
    """The running cluster's state, or ``None`` (stale files are removed).

    Raises
    ------
    StateError
        The state file is damaged, or the state directory is a file.
    """
    return load_state()[0]


def read_state_or_warn() -> dict[str, Any] | None:
    """The running cluster's state for a command that only may attach to it, or ``None``.

    ``submit`` and ``benchmark`` run without a ``cluster up`` cluster as well as with one, so a
    state file they cannot use does not stop them (it did, even for ``submit --dry-run``): it
    is ignored with a :class:`StateFileWarning` that says why and what to do.
    """
    try:
        return read_state()
    except StateError as exc:
        said = "; ".join(str(problem) for problem in exc.problems)
        # once a process: a run asks when it plans and again when it starts its cluster, and
        # Python's own once-per-place memory is reset whenever a library adds a filter
        if said not in _WARNED:
            _WARNED.add(said)
            message = f"{said} (ignored: no `cluster up` cluster is used)"
            warnings.warn(message, StateFileWarning, stacklevel=2)
        return None


#: The state file problems :func:`read_state_or_warn` has warned about in this process.
_WARNED: set[str] = set()


def scheduler_refuses(address: str, timeout: float = 1.0) -> bool:
    """True if nothing listens at a ``tcp://`` or ``tls://`` scheduler address any more.

    Only a refused connection counts: a scheduler that is slow to accept (a busy or stopped
    process still has its socket) is not refusing. Other transports are never said to refuse.
    """
    scheme, _, rest = address.partition("://")
    if scheme not in ("tcp", "tls"):
        return False
    host, _, port = rest.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
            return False
    except ConnectionRefusedError:
        return True
    except (OSError, ValueError):  # unreachable, slow, unresolvable: not known to be gone
        return False


def ended_runs_file() -> Path:
    """Where the daemon, as it closes its cluster, names the runs that ends (a JSON list of
    :func:`~openclaw_dask.runtime.runs.runs_on`'s entries) for ``cluster down`` to say."""
    return state_dir() / "ended-runs.json"


def write_state(state: dict[str, Any]) -> Path:
    """Write the state file atomically (readers never see half a file)."""
    path = state_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    try:
        tmp.write_text(json.dumps(state, indent=2))
        tmp.replace(path)
    except OSError:  # a full disk: no half-written cluster.tmp left behind
        tmp.unlink(missing_ok=True)
        raise
    return path


def clear_state(pid: int | None = None) -> None:
    """Remove the state file (only if it belongs to ``pid`` when given)."""
    path = state_file()
    if pid is not None:
        try:
            state = json.loads(path.read_text())
        except (OSError, ValueError):
            return
        if not isinstance(state, dict) or state.get("pid") != pid:
            return
    path.unlink(missing_ok=True)
