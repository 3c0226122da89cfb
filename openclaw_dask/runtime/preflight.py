"""Check every SSH node before a cluster starts on it, and name the node that is wrong.

distributed's SSH deploy reports a node that cannot run a worker as ``Worker failed to start``
(or an asyncssh traceback) after the scheduler is already up. Before anything is launched we
visit each node of ``distributed.nodes`` with the same asyncssh options the cluster will use
(:func:`openclaw_dask.translate.ssh.connect_options`) and check, in this order:

1. it is reachable (a TCP connection to ``ssh_port``);
2. its host key is in ``known_hosts`` (unless ``insecure_skip_host_key_check``);
3. the login works;
4. the node's ``python`` runs and has openclaw-dask, and the same Python (major.minor), dask
   and distributed versions as this machine (Dask only supports a cluster of one version),
   plus the compression library ``distributed.compression`` asks for;
5. the node's own ``openclaw.config``, if it has one (found by the search order in the login
   environment: ``$OPENCLAW_CONFIG``, ``~/openclaw.config`` as the login's working directory,
   ``~/.config/openclaw/openclaw.config``; or ``OPENCLAW_*`` variables), agrees with this one in
   every node-relevant key (:meth:`Config.fingerprint`). A node without a config of its own
   adopts this one, as its workers do (:mod:`openclaw_dask.runtime.preload`).
6. in deterministic mode, the node computes like the others: numba's target CPU and vector
   features and the numpy and numba versions (:func:`~openclaw_dask.runtime.plugins.
   numerics_kind`, read in the login environment the workers start from) are those most nodes
   have. The workers' own check (:class:`~openclaw_dask.runtime.plugins.NumericsCheck`) would
   refuse them after the scheduler started; this names the node before anything starts.
7. the entry's ``resources`` fit what the probe found there: its worker threads its cores,
   ``resources.memory`` its memory (and entries that log in to one machine, together); a
   ``resources.gpus`` beyond the NVIDIA GPUs found there is warned of.

Every failing node becomes one :class:`~openclaw_dask.config.errors.Problem` that starts with
``node HOST:PORT`` (``node HOST:PORT (python P)`` where entries give one host several pythons:
each python is probed and judged on its own) and says what to do; all nodes are checked at
once, in parallel.
"""

from __future__ import annotations

import asyncio
import getpass
import json
import logging
import os
import shlex
import socket
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any

import dask
import distributed

from openclaw_dask.config import Config, ConfigError
from openclaw_dask.config.errors import Problem, shorten
from openclaw_dask.config.layout import MAX_THREADS_PER_CORE
from openclaw_dask.config.validate import locate
from openclaw_dask.runtime.plugins import common_kind
from openclaw_dask.translate.ssh import connect_options, node_threads

logger = logging.getLogger("openclaw_dask.runtime")

#: Seconds allowed for the TCP connection and the SSH handshake of one node.
CONNECT_TIMEOUT = 10.0
#: Seconds allowed for the remote Python probe (it imports dask and openclaw-dask).
PROBE_TIMEOUT = 60.0
PROBE_MARK = "OPENCLAW-PROBE "
#: Seconds the started workers have to join the scheduler.
JOIN_TIMEOUT = 120.0
#: Python modules behind each ``distributed.compression`` setting.
COMPRESSION_MODULES = {"zstd": "zstandard", "lz4": "lz4"}

#: Runs on the node as ``python -``: plain Python 3 that reports, never raises, so that a node
#: without dask or openclaw-dask still answers with what it lacks.
PROBE = """
import json, sys
out = {"python": list(sys.version_info[:3]), "executable": sys.executable}
import os
out["cores"] = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
try:
    out["memory"] = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
except (AttributeError, ValueError, OSError):
    pass
gpus = None
try:
    import pynvml
    pynvml.nvmlInit()
    try:
        gpus = pynvml.nvmlDeviceGetCount()
    finally:
        pynvml.nvmlShutdown()
except Exception:
    pass
if gpus is None and sys.platform.startswith("linux"):
    found = "/proc/driver/nvidia/gpus"
    gpus = len(os.listdir(found)) if os.path.isdir(found) else 0
visible = os.environ.get("CUDA_VISIBLE_DEVICES")
if gpus is not None and visible is not None:
    out["cuda_visible_devices"] = visible
    gpus = min(gpus, len([d for d in visible.split(",") if d.strip()]))
out["gpus"] = gpus
try:
    import dask, distributed
    out["dask"] = dask.__version__
    out["distributed"] = distributed.__version__
    from distributed.protocol.compression import compressions
    out["compressions"] = sorted(k for k in compressions if isinstance(k, str))
    import openclaw_dask
    out["openclaw_dask"] = openclaw_dask.__version__
    from openclaw_dask.config import ConfigError, load_config
    from openclaw_dask.runtime.preload import has_own_config
    try:
        config = load_config()
    except ConfigError as exc:
        out["config_error"] = [str(p) for p in exc.problems]
    else:
        if has_own_config(config):
            fingerprint, values = config.fingerprint()
            out["config"] = {
                "file": config.file,
                "env": sorted(s[4:] for s in config.sources.values() if s.startswith("env ")),
                "fingerprint": fingerprint,
                "values": values,
            }
except ImportError as exc:
    out["missing"] = exc.name or str(exc)
"""
#: Appended to :data:`PROBE` in deterministic mode (it imports numba: ~0.2-0.3 s more a node).
NUMERICS_PROBE = """
if "missing" not in out:
    try:
        from openclaw_dask.runtime.plugins import numerics_kind
        out["numerics"] = numerics_kind()
    except ImportError as exc:
        out["missing"] = exc.name or str(exc)
"""
#: Appended with ``PORTS = [(host, port), ...]`` before it where an entry fixes its worker's
#: port: each is bound as the worker would (``SO_REUSEADDR``, as tornado does), then let go.
PORTS_PROBE = """
import socket
for host, port in PORTS:
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM)[0]
        with socket.socket(family, kind, proto) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(address)
    except OSError as exc:
        out.setdefault("ports_taken", {})[str(port)] = exc.strerror or str(exc)
"""
PROBE_END = """
print("OPENCLAW-PROBE " + json.dumps(out, default=str))
"""


@dataclass(frozen=True)
class NodeTarget:
    """One SSH node as the cluster will reach it.

    Parameters
    ----------
    index
        Position in ``distributed.nodes`` (for the problem's key and file line).
    host, ssh_port, user
        Where and as whom to log in.
    python
        The remote interpreter (the node's ``python``, else this one's path, as distributed
        uses).
    options
        asyncssh ``connect`` keyword arguments.
    indices
        Every entry of ``distributed.nodes`` this login and python stand for.
    python_in_label, user_in_label
        Whether another entry reaches the same ``host:port`` with another python, or as
        another user (then the label names it: each is probed, and reported, on its own).
    """

    index: int
    host: str
    ssh_port: int
    user: str
    python: str
    options: dict[str, Any]
    indices: tuple[int, ...] = ()
    python_in_label: bool = False
    user_in_label: bool = False

    @property
    def label(self) -> str:
        """``host:port``, how every message names the node; ``user@host:port`` when the host
        is reached as more than one user, ``... (python P)`` with more than one python."""
        where = f"{self.user}@" if self.user_in_label else ""
        where += f"{self.host}:{self.ssh_port}"
        return f"{where} (python {self.python})" if self.python_in_label else where


def node_targets(config: Config) -> list[NodeTarget]:
    """The distinct nodes of ``distributed.nodes`` (same login and python: checked once)."""
    out: dict[tuple[Any, ...], NodeTarget] = {}
    for i, node in enumerate(config["distributed.nodes"]):
        user, python = node["user"] or getpass.getuser(), node["python"] or sys.executable
        key = (node["host"], node["ssh_port"], user, python)
        if key in out:
            out[key] = replace(out[key], indices=(*out[key].indices, i))
            continue
        out[key] = NodeTarget(
            index=i,
            host=node["host"],
            ssh_port=node["ssh_port"],
            user=user,
            python=python,
            options=connect_options(config, node),
            indices=(i,),
        )
    pythons: dict[tuple[str, int], set[str]] = {}
    users: dict[tuple[str, int], set[str]] = {}
    for target in out.values():
        pythons.setdefault((target.host, target.ssh_port), set()).add(target.python)
        users.setdefault((target.host, target.ssh_port), set()).add(target.user)
    return [
        replace(
            t,
            python_in_label=len(pythons[t.host, t.ssh_port]) > 1,
            user_in_label=len(users[t.host, t.ssh_port]) > 1,
        )
        for t in out.values()
    ]


def local_facts(config: Config) -> dict[str, Any]:
    """What every node must match: versions here and this config's fingerprint."""
    import openclaw_dask

    fingerprint, values = config.fingerprint()
    return {
        "python": list(sys.version_info[:3]),
        "dask": dask.__version__,
        "distributed": distributed.__version__,
        "openclaw_dask": openclaw_dask.__version__,
        "fingerprint": fingerprint,
        "values": json.loads(json.dumps(values, default=str)),
        "compression": config["distributed.compression"],
    }


def compare(remote: dict[str, Any], local: dict[str, Any], python: str) -> list[str]:
    """Why a node's probe result ``remote`` is not compatible with ``local`` (pure).

    Returns
    -------
    list of str
        One reason per mismatch; empty when the node may run workers.
    """
    if remote.get("missing"):
        return [
            f"its python {python} cannot import {remote['missing']}: install openclaw-dask "
            f"there (pip install 'openclaw-dask[ssh]'), or point the node's python at an "
            "environment that has it"
        ]
    reasons = []
    here_py, there_py = local["python"][:2], remote["python"][:2]
    if here_py != there_py:
        reasons.append(
            f"its python {python} is Python {'.'.join(map(str, there_py))}, this machine runs "
            f"{'.'.join(map(str, here_py))} (pickled tasks need the same minor version)"
        )
    for package in ("openclaw_dask", "dask", "distributed"):
        if remote.get(package) != local[package]:
            reasons.append(
                f"it has {package.replace('_', '-')} {remote.get(package)}, this machine "
                f"{local[package]}: use the same version on every node"
            )
    module = COMPRESSION_MODULES.get(local["compression"])
    if module and local["compression"] not in remote.get("compressions", []):
        reasons.append(
            f"distributed.compression is {local['compression']} but its python has no "
            f"{module}: pip install {module} there"
        )
    if remote.get("config_error"):
        reasons.append("its own openclaw.config is invalid: " + "; ".join(remote["config_error"]))
    own = remote.get("config")
    if own and own["fingerprint"] != local["fingerprint"]:
        keys = sorted(set(own["values"]) | set(local["values"]))
        diff = [
            f"{k}: node {own['values'].get(k)!r}, here {local['values'].get(k)!r}"
            for k in keys
            if own["values"].get(k) != local["values"].get(k)
        ]
        where = own["file"] or "env " + ", ".join(own["env"])
        reasons.append(
            f"its own openclaw.config ({where}) differs from this one: " + "; ".join(diff)
        )
    return reasons


async def _reachable(target: NodeTarget) -> str | None:
    try:
        _, writer = await asyncio.wait_for(
            asyncio.open_connection(target.host, target.ssh_port), CONNECT_TIMEOUT
        )
    except TimeoutError:
        return f"not reachable: no answer on port {target.ssh_port} within {CONNECT_TIMEOUT:g} s"
    except socket.gaierror as exc:
        return f"not reachable: cannot resolve {target.host} ({exc.strerror})"
    except OSError as exc:
        reason = os.strerror(exc.errno) if exc.errno else str(exc) or type(exc).__name__
        return f"not reachable: {reason} on port {target.ssh_port} (is sshd running there?)"
    writer.close()
    return None


def probe_text(config: Config, ports: Sequence[tuple[str, int]] = ()) -> str:
    """The Python a node runs: what every node reports, its numerics when they matter, and
    whether the worker ports its entries fix (``ports``: ``(host, port)``) are free there."""
    numerics = NUMERICS_PROBE if config["parallel.deterministic_mode"] else ""
    bound = f"PORTS = {list(ports)!r}\n{PORTS_PROBE}" if ports else ""
    return PROBE + numerics + bound + PROBE_END


def fixed_ports(config: Config, indices: Sequence[int]) -> list[tuple[str, int]]:
    """``(host, port)`` of the entries ``indices`` whose worker listens on a port they fix.

    Only a node of one worker process uses its ``port`` (several take free ones: the plan
    says so), bound on its ``host`` or, with ``cluster.interface``, on every address.
    """
    procs = config["parallel.processes"]
    if isinstance(procs, int) and procs > 1:
        return []
    nodes = config["distributed.nodes"]
    host = (lambda node: "") if config["cluster.interface"] else (lambda node: node["host"])
    return [(host(nodes[i]), nodes[i]["port"]) for i in indices if nodes[i]["port"]]


def port_problems(config: Config, target: NodeTarget, facts: dict[str, Any]) -> list[Problem]:
    """One problem per entry of ``target`` whose fixed worker port its probe found taken
    (the worker failed at the start with "Address already in use", exit 1, the run directory
    written)."""
    taken = facts.get("ports_taken") or {}
    problems = []
    for i in target.indices:
        for _, port in fixed_ports(config, [i]):
            if str(port) in taken:
                message = (
                    f"node {target.label}: its worker port {port} is taken there "
                    f"({taken[str(port)]}): pick another, or leave port null for a free one"
                )
                key = f"distributed.nodes[{i}]"
                problems.append(locate(key, config.sources, message, config.line_of))
    return problems


def numerics_outliers(kinds: dict[str, dict[str, str]]) -> dict[str, str]:
    """Why each node that computes unlike the others may not run deterministic mode (pure).

    Parameters
    ----------
    kinds
        ``{"host:port": numerics_kind()}`` in the order of ``distributed.nodes``.

    Returns
    -------
    dict
        ``{"host:port": reason}`` for every node whose kind is not the one most nodes have
        (ties: the first node's by ``host:port``, as the workers' own check); empty when all
        compute alike.
    """
    common = common_kind(kinds)
    if common is None:
        return {}
    alike = [label for label, kind in kinds.items() if kind == common]
    others = f" and {len(alike) - 1} more" if len(alike) > 1 else ""
    out = {}
    for label, kind in kinds.items():
        diff = [
            f"{k} {kind.get(k)} (node {alike[0]}{others}: {v})"
            for k, v in common.items()
            if kind.get(k) != v
        ]
        if diff:
            out[label] = (
                "parallel.deterministic_mode is on and this node computes unlike the others: "
                f"{'; '.join(diff)}. Outputs are bit-identical only among workers of one CPU "
                "kind with the same numpy and numba: leave the node out, or set "
                "parallel.deterministic_mode: false"
            )
    return out


async def probe_node(target: NodeTarget, config: Config) -> tuple[str, dict[str, Any] | None]:
    """Visit one node: ``("", facts)`` when the probe ran, else ``(reason, None)``."""
    from openclaw_dask.runtime.quiet_asyncssh import import_asyncssh

    asyncssh = import_asyncssh()

    reason = await _reachable(target)
    if reason:
        return reason, None
    try:
        conn = await asyncio.wait_for(
            asyncssh.connect(target.host, **target.options), CONNECT_TIMEOUT
        )
    except asyncssh.HostKeyNotVerifiable:
        known = config["distributed.ssh.known_hosts"] or "~/.ssh/known_hosts"
        return (
            f"its host key is not trusted: {known} has no key that matches it for "
            f"[{target.host}]:{target.ssh_port}; check the key and add it (ssh-keyscan -p "
            f"{target.ssh_port} {target.host}), or, on a test rig only, set "
            "distributed.ssh.insecure_skip_host_key_check: true"
        ), None
    except asyncssh.PermissionDenied:
        key = config["distributed.ssh.identity_file"] or "the ssh agent and default keys"
        return (
            f"refused the login as {target.user} (tried {key}): put the public "
            "key in that user's authorized_keys on the node, or fix distributed.ssh."
            "identity_file or the node's user"
        ), None
    except TimeoutError:
        return f"the SSH handshake did not finish within {CONNECT_TIMEOUT:g} s", None
    except (asyncssh.Error, OSError) as exc:
        return f"the SSH login failed: {exc} (is an sshd listening on that port?)", None
    async with conn:
        try:
            result = await asyncio.wait_for(
                conn.run(
                    f"{shlex.quote(target.python)} -",
                    input=probe_text(config, fixed_ports(config, target.indices)),
                ),
                PROBE_TIMEOUT,
            )
        except TimeoutError:
            return f"its python {target.python} did not answer within {PROBE_TIMEOUT:g} s", None
    stdout = str(result.stdout or "")
    line = next((ln for ln in stdout.splitlines() if ln.startswith(PROBE_MARK)), None)
    if line is None:
        if result.exit_status == 127:
            return f"its python {target.python} does not exist (set the node's python)", None
        tail = str(result.stderr or stdout).strip().splitlines()[-1:] or ["no output"]
        return f"its python {target.python} failed (exit {result.exit_status}): {tail[0]}", None
    return "", json.loads(line[len(PROBE_MARK) :])


async def _check_all(config: Config, targets: list[NodeTarget]) -> list[tuple[str, Any]]:
    return await asyncio.gather(*(probe_node(t, config) for t in targets))


def _run_sync(config: Config, targets: list[NodeTarget]) -> list[tuple[str, Any]]:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        # asyncio.run's own loop, not made the thread's: asyncio.run left the thread without
        # one, and a caller's later asyncio.get_event_loop() raised "There is no current
        # event loop" (a loop the caller had set was gone)
        with asyncio.Runner(loop_factory=asyncio.new_event_loop) as runner:
            return runner.run(_check_all(config, targets))
    with ThreadPoolExecutor(1) as pool:  # called from inside an event loop (a notebook)
        return pool.submit(asyncio.run, _check_all(config, targets)).result()


def check_nodes(config: Config) -> dict[str, dict[str, Any]]:
    """Check every node of ``distributed.nodes`` before a cluster is started on them.

    Parameters
    ----------
    config
        The resolved config of an SSH cluster.

    Returns
    -------
    dict
        ``{label: what the node reported}`` (versions, its own config if any): one entry per
        login and python; the label is ``host:port``, ``user@host:port`` where one host is
        reached as several users, or ``host:port (python P)`` where one
        ``host:port`` is given several pythons (a node's second environment: each probed and
        checked on its own, not one's packages for both).

    Raises
    ------
    ConfigError
        One problem per failing node, each starting with ``node HOST:PORT`` and placed at that
        node's entry in ``distributed.nodes``.
    """
    from distributed.protocol.compression import compressions

    local = local_facts(config)
    module = COMPRESSION_MODULES.get(local["compression"])
    if module and local["compression"] not in compressions:
        message = f"{local['compression']} needs {module} on this machine: pip install {module}"
        raise ConfigError([locate("distributed.compression", config.sources, message)])
    targets = node_targets(config)
    problems: list[Problem] = []
    found: dict[str, dict[str, Any]] = {}
    for target, (reason, facts) in zip(targets, _run_sync(config, targets), strict=True):
        reasons = [reason] if reason else compare(facts, local, target.python)
        for why in reasons:
            problems.append(
                locate(
                    f"distributed.nodes[{target.index}]",
                    config.sources,
                    f"node {target.label}: {why}",
                    config.line_of,
                )
            )
        if facts is not None:
            found[target.label] = facts
            problems += port_problems(config, target, facts)
    nodes = config["distributed.nodes"]
    # each entry with its own python's probe (keyed by host:port, a second python's overwrote
    # the first's)
    entries = sorted((i, t) for t in targets for i in t.indices)
    for i, target in entries:
        facts = found.get(target.label)
        for why in (
            too_many_threads_there(config, nodes[i], facts),
            too_much_memory_there(config, nodes[i], facts),
        ):
            if why:
                where = f"distributed.nodes[{i}]"
                problems.append(locate(where, config.sources, why, config.line_of))
    if not problems:  # each entry fits its machine: now the entries that share one
        for target in targets:
            why = shared_machine_problem(config, target, found.get(target.label))
            if why:
                where = f"distributed.nodes[{target.indices[0]}]"
                problems.append(locate(where, config.sources, why, config.line_of))
    kinds = {label: facts["numerics"] for label, facts in found.items() if "numerics" in facts}
    index = {t.label: t.index for t in targets}
    for label, why in numerics_outliers(kinds).items():
        where = f"distributed.nodes[{index[label]}]"
        problems.append(locate(where, config.sources, f"node {label}: {why}", config.line_of))
    if problems:
        raise ConfigError(problems)
    for why in gpu_warnings(config, targets, found):
        logger.warning("%s", why)
    return found


def too_many_threads_there(
    config: Config, node: dict[str, Any], facts: dict[str, Any] | None
) -> str | None:
    """Why ``node``'s worker threads are refused on the cores its probe found, or ``None``.

    The bound is the local one (:data:`~openclaw_dask.config.layout.MAX_THREADS_PER_CORE` per
    usable core), checked here because only the probe knows a node's cores: a
    ``resources.cpus`` of 10**20 had passed to the workers' ``nthreads``.
    """
    threads = node_threads(config, node)
    cores = (facts or {}).get("cores")
    if threads is None or not isinstance(cores, int) or threads <= MAX_THREADS_PER_CORE * cores:
        return None
    cpus = node["resources"]["cpus"] is not None
    key = "resources.cpus" if cpus else "parallel.thread_pool_size"
    return (
        f"node {node['host']}:{node['ssh_port']}: {shorten(str(threads))} worker threads "
        f"({key}) but only {cores} usable core(s) there: use at most "
        f"{MAX_THREADS_PER_CORE * cores} ({MAX_THREADS_PER_CORE} per core; more only queue "
        "for the same cores), or leave resources.cpus null for the node's own count"
    )


def too_much_memory_there(
    config: Config, node: dict[str, Any], facts: dict[str, Any] | None
) -> str | None:
    """Why ``node``'s ``resources.memory`` is refused on the memory its probe found, or
    ``None``.

    The local rule (worker budgets that add up to more than the machine), checked here
    because only the probe knows a node's memory. Dask ignores a ``memory_limit`` beyond the
    node with a log line and lets the worker use the whole node (100 GiB on a 23 GiB node ran
    at 23.5 while the plan said 100); budgets that only add up to more let the workers grow
    together past the node's memory before any spills. Either way the kernel, not Dask's
    spilling, would stop a worker that grows.
    """
    memory = node["resources"]["memory"]
    ram = (facts or {}).get("memory")
    if not memory or not isinstance(ram, int) or ram <= 0:
        return None
    procs = config["parallel.processes"]
    procs = procs if isinstance(procs, int) else 1
    if int(memory) <= ram:  # the node's whole budget, split over its workers
        return None
    return (
        f"node {node['host']}:{node['ssh_port']}: resources.memory {int(memory) / 1e9:,.1f} GB "
        f"(each of its {procs} worker(s) {int(memory) // procs / 1e9:,.1f} GB) is more than "
        f"the node's {ram / 1e9:,.1f} GB (the kernel instead of Dask would stop a worker that "
        f"grows): use at most {ram / 1e9:,.1f} GB (the node shared by its workers), or null "
        "for Dask's auto"
    )


def too_many_gpus_there(node: dict[str, Any], facts: dict[str, Any] | None) -> str | None:
    """Why ``node``'s ``resources.gpus`` is more than the GPUs its probe found, or ``None``.

    The node's workers advertise that many ``GPU`` resources to the scheduler, which then
    sends a task that asks for one to a node without it, where it fails in CUDA after the
    cluster has started. The probe counts NVIDIA GPUs as the workers would see them: NVML
    where nvidia-ml-py is installed, else the driver's ``/proc/driver/nvidia/gpus`` (no
    driver: none), cut to ``CUDA_VISIBLE_DEVICES`` where the login sets it. No count (not
    Linux, and no NVML): no word. A warning, not a refusal: a container may hide the
    driver's list from a login whose workers still reach the GPUs.
    """
    wanted, there = node["resources"]["gpus"], (facts or {}).get("gpus")
    if not wanted or not isinstance(there, int) or wanted <= there:
        return None
    visible = (facts or {}).get("cuda_visible_devices")
    seen = "" if visible is None else f" (its CUDA_VISIBLE_DEVICES={visible!r})"
    fix = f"at most {there}" if there else "0 for a node without GPUs"
    return (
        f"node {node['host']}:{node['ssh_port']}: resources.gpus is {wanted} but the node has "
        f"{there} NVIDIA GPU(s) its workers can use{seen}: a task that asks for a GPU may be "
        f"sent there and fail; {fix}"
    )


def gpu_warnings(
    config: Config, targets: Sequence[NodeTarget], found: dict[str, dict[str, Any]]
) -> list[str]:
    """What is said of the nodes' ``resources.gpus`` against the GPUs their probes found: an
    entry's beyond its node's (:func:`too_many_gpus_there`), and entries that log in to one
    machine advertising more together than it has."""
    nodes, said = config["distributed.nodes"], []
    for target in targets:
        facts = found.get(target.label)
        own = [w for i in target.indices if (w := too_many_gpus_there(nodes[i], facts))]
        said += own
        gpus = sum(nodes[i]["resources"]["gpus"] for i in target.indices)
        there = (facts or {}).get("gpus")
        if not own and len(target.indices) > 1 and isinstance(there, int) and gpus > there:
            entries = " and ".join(f"distributed.nodes[{i}]" for i in target.indices)
            said.append(
                f"node {target.label}: {entries} are one machine, and together advertise "
                f"{gpus} GPUs (resources.gpus) of its {there}: a task that asks for a GPU may "
                f"wait for one that is not there; at most {there} in all"
            )
    return said


def shared_machine_problem(
    config: Config, target: NodeTarget, facts: dict[str, Any] | None
) -> str | None:
    """Why the entries of ``distributed.nodes`` that log in to one machine (``target``) are
    refused together, or ``None``: their worker threads beyond the per-core bound, or their
    ``resources.memory`` adding up past the machine's. Each entry alone had been checked, so
    two entries of 16 threads and 20 GiB each ran 32 threads and 40 GiB of budgets on a
    2-core, 25 GB machine."""
    if len(target.indices) < 2 or not facts:
        return None
    nodes = [config["distributed.nodes"][i] for i in target.indices]
    entries = " and ".join(f"distributed.nodes[{i}]" for i in target.indices)
    cores, ram = facts.get("cores"), facts.get("memory")
    if isinstance(cores, int):
        threads = sum(node_threads(config, n) or cores for n in nodes)
        if threads > MAX_THREADS_PER_CORE * cores:
            return (
                f"node {target.label}: {entries} are one machine, and together run {threads} "
                f"worker threads on its {cores} usable core(s): at most "
                f"{MAX_THREADS_PER_CORE * cores} ({MAX_THREADS_PER_CORE} per core) in all, or "
                "one entry for the machine"
            )
    budgets = [int(n["resources"]["memory"]) for n in nodes if n["resources"]["memory"]]
    if isinstance(ram, int) and ram > 0 and sum(budgets) > ram:
        return (
            f"node {target.label}: {entries} are one machine, and their resources.memory add "
            f"up to {sum(budgets) / 1e9:,.1f} GB, more than its {ram / 1e9:,.1f} GB: at most "
            f"{ram / 1e9:,.1f} GB in all, or one entry for the machine"
        )
    return None


def wait_for_ssh_workers(client: Any, plan: Any, timeout: float = JOIN_TIMEOUT) -> None:
    """Wait until every planned SSH worker has joined the scheduler.

    distributed's ``ssh.Worker`` counts a worker as started when it logs its address, which is
    before it registers with the scheduler; plugins registered and checks run before then
    would miss it.

    Raises
    ------
    ConfigError
        Naming the workers that did not join within ``timeout`` seconds.
    """
    names = set(plan.cluster_kwargs["workers"])
    try:
        client.wait_for_workers(len(names), timeout=timeout)
    except TimeoutError:
        joined = {str(w.get("name")) for w in client.scheduler_info()["workers"].values()}
        missing = ", ".join(sorted(names - joined)) or "some"
        raise ConfigError(
            [
                Problem(
                    f"workers {missing} started but did not join the scheduler within "
                    f"{timeout:g} s (a firewall between the nodes? the scheduler's address "
                    "must be reachable from every node)",
                    "distributed.nodes",
                )
            ]
        ) from None
