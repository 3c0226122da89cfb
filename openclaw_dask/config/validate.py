"""Cross-field rules and checks against the detected hardware.

Type checks happen as values are read (:mod:`openclaw_dask.config.loader`); here are the rules
that involve several keys (:func:`check_static`) or this machine (:func:`check_hardware`). Both
return every problem rather than stopping at the first, each pointing at where the offending
value came from.
"""

from __future__ import annotations

import math
import os
import socket
from collections import Counter
from collections.abc import Collection, Mapping
from itertools import pairwise
from typing import Any

from openclaw_dask.config.dask_section import (
    dask_value_problems,
    memory_fractions,
    transport_problems,
)
from openclaw_dask.config.errors import Problem, did_you_mean, not_a_file, quote
from openclaw_dask.config.hardware import ALLOCATOR_INSTALL, Hardware, format_cpu_list
from openclaw_dask.config.layout import (
    MAX_THREADS_PER_CORE,
    Layout,
    max_threads,
    resolve_backend,
    resolve_layout,
    too_many_threads,
)
from openclaw_dask.config.schema import BACKEND_ALIASES
from openclaw_dask.config.tls import tls_problems


def source_of(path: str, sources: Mapping[str, str]) -> str:
    """Where the value at ``path`` came from (``"default"`` where nothing set it); a path
    inside a key (``parallel.thread_affinity[1]``, ``dask.x.y``) has its key's source."""
    key = path
    while key not in sources and ("." in key or "[" in key):
        key = key[: max(key.rfind("."), key.rfind("["))]
    return sources.get(key, "default")


def locate(
    path: str, sources: Mapping[str, str], message: str, lines: Mapping[str, int] | None = None
) -> Problem:
    """A :class:`Problem` for ``path`` placed where its value came from.

    ``path`` may point inside a key (``parallel.thread_affinity[1]``); the source is that of the
    key, and for values from a file the line of the element itself when ``lines`` has it.
    """
    source = source_of(path, sources)
    if source in ("default", "api"):
        return Problem(message, path, origin=source if source == "api" else None)
    if source.startswith(("env ", "--set")):
        return Problem(message, path, origin=source)
    file, _, line = source.rpartition(":")
    number = (lines or {}).get(path) or (int(line) if line.isdigit() else None)
    return Problem(message, path, file or source, number)


#: Resident memory of a worker process before its first task: Python, NumPy, Dask, Zarr and
#: xarray loaded (119 MiB measured on the 2-core development VM, Python 3.11, dask 2026.8).
WORKER_FOOTPRINT = 128 * 2**20
#: The least room for task data a worker needs below the fraction where it stops taking tasks.
MIN_TASK_ROOM = 64 * 2**20


#: The transport that each scheduler address scheme is spoken over.
ADDRESS_TRANSPORTS = {"tcp": "tcp", "tls": "tls", "ucx": "ucx", "ucxx": "ucx"}


def transport(values: Mapping[str, Any]) -> str:
    """The canonical transport after resolving seed aliases (``grpc`` -> ``tls``)."""
    name = values["distributed.communication_backend"]
    return BACKEND_ALIASES.get(name, name)


def check_static(
    values: Mapping[str, Any],
    sources: Mapping[str, str],
    lines: Mapping[str, int] | None = None,
    refused: Collection[str] = (),
) -> list[Problem]:
    """Rules between keys that hold on any machine.

    Parameters
    ----------
    values, sources
        Flat resolved values and their sources (see :class:`~openclaw_dask.config.Config`).
    lines
        Line of every dotted path of the config file, to place problems inside a value.
    refused
        Keys (or paths inside them) whose values failed their own check and stand at their
        defaults here: a rule that would only restate that failure is not applied.

    Returns
    -------
    list of Problem
    """
    out: list[Problem] = []
    v = values

    def bad(path: str, message: str) -> None:
        out.append(locate(path, sources, message, lines))

    threads, procs = v["parallel.thread_pool_size"], v["parallel.processes"]
    if isinstance(threads, int) and isinstance(procs, int):
        if procs > threads:
            bad(
                "parallel.processes",
                f"{procs} processes but only {threads} threads (parallel.thread_pool_size): "
                "each process needs at least one thread",
            )
        elif threads % procs:
            bad(
                "parallel.thread_pool_size",
                f"{threads} threads do not split evenly over {procs} processes; "
                f"use a multiple of {procs}",
            )

    if v["gpu.unified_memory"] and v["gpu.peer_access"]:
        bad(
            "gpu.peer_access",
            "cannot be combined with gpu.unified_memory (RMM managed memory does not support "
            "NVLink peer transfers); turn one of them off",
        )
    if v["gpu.peer_access"] and transport(v) != "ucx":
        bad(
            "gpu.peer_access",
            "needs distributed.communication_backend: ucx (NVLink goes through UCX)",
        )
    if v["distributed.rdma"] and transport(v) != "ucx":
        bad("distributed.rdma", "needs distributed.communication_backend: ucx")

    # the raw dask: section wins over memory.spill, so the order holds for what Dask gets
    raw = {k: (f"dask.{key}", f) for k, (key, f) in memory_fractions(v["dask"]).items()}
    parts = ("target", "spill", "pause", "terminate")
    spill = [raw.get(k, (f"memory.spill.{k}", v[f"memory.spill.{k}"])) for k in parts]
    active = [(k, f) for k, f in spill if f is not False]
    rise = "the fractions must rise: target <= spill <= pause <= terminate"
    for (k1, f1), (k2, f2) in pairwise(active):
        if f1 <= f2:
            continue
        # blame the value someone set, where it came from: a --set target of 1 was said as
        # "memory.spill.spill: 0.7 is below ..." of the built-in defaults
        if source_of(k2, sources) == "default" and source_of(k1, sources) != "default":
            bad(k1, f"{f1} is above {k2} ({f2}, its default); {rise}")
        else:
            bad(k2, f"{f2} is below {k1} ({f1}); {rise}")

    if v["memory.per_thread_pool_size"] != "auto" and v["memory.global_pool"] != "auto":
        bad(
            "memory.global_pool",
            "set either memory.per_thread_pool_size or memory.global_pool, not both",
        )

    backend, nodes = v["cluster.backend"], v["distributed.nodes"]
    nodes_refused = any(k.startswith("distributed.nodes") for k in refused)
    if backend == "ssh" and not nodes and not nodes_refused:
        bad("cluster.backend", "ssh needs at least one entry in distributed.nodes")
    if nodes and backend in ("local", "cuda", "mpi"):
        bad(
            "distributed.nodes",
            f"nodes are used by the ssh backend only, but cluster.backend is {backend}",
        )
    if sum(1 for n in nodes if n["scheduler"]) > 1:
        bad("distributed.nodes", "more than one node has scheduler: true")
    # each node against every earlier one on its machine: compared with the first node of a
    # host only, a third node on the second one's port passed (and failed to bind at start)
    seen: dict[tuple[str, int, int], int] = {}
    for i, n in enumerate(nodes):
        if n["port"] is None:  # a port Dask picks: never taken twice
            continue
        ident = (n["host"], n["ssh_port"], n["port"])
        if ident in seen:
            bad(
                f"distributed.nodes[{i}]",
                f"same host, ssh_port and port as distributed.nodes[{seen[ident]}]",
            )
        seen.setdefault(ident, i)
    # as for parallel.thread_pool_size above: each worker process of a node got
    # max(1, cpus // processes) threads, so cpus 1 over 2 processes ran 2 threads and cpus 3
    # over 2 ran 2, while the plan's layout said 1 and 3
    for i, n in enumerate(nodes):
        cpus = (n.get("resources") or {}).get("cpus")  # a hand-made values dict
        if not isinstance(cpus, int) or not isinstance(procs, int) or procs == 1:
            continue
        if procs > cpus:
            bad(
                f"distributed.nodes[{i}].resources.cpus",
                f"{cpus} worker thread(s) cannot be split over the node's {procs} worker "
                "processes (parallel.processes): each process needs at least one thread",
            )
        elif cpus % procs:
            bad(
                f"distributed.nodes[{i}].resources.cpus",
                f"{cpus} worker threads do not split evenly over the node's {procs} worker "
                f"processes (parallel.processes); use a multiple of {procs}, such as "
                f"{cpus - cpus % procs} or {cpus - cpus % procs + procs}",
            )

    if transport(v) == "mpi" and backend not in ("auto", "mpi"):
        bad(
            "distributed.communication_backend",
            f"mpi launches through dask-mpi and needs cluster.backend: mpi (not {backend})",
        )
    devices = v["gpu.devices"]
    twice = (
        sorted(d for d, n in Counter(devices).items() if n > 1) if isinstance(devices, list) else []
    )
    if twice:
        bad(
            "gpu.devices",
            f"GPU {', '.join(map(str, twice))} listed more than once; one worker runs per GPU",
        )
    if devices and backend in ("local", "mpi"):
        bad(
            "gpu.devices",
            f"GPUs are used by the cuda (or ssh) backend, but cluster.backend is {backend}",
        )
    # an address a command took from the `cluster up` cluster is not the user's second request:
    # it was chosen because that cluster is the kind this backend plans (an ssh or cuda config
    # with its backend spelled out was refused here, so it never ran on its own cluster up)
    from_cluster_up = sources.get("cluster.scheduler_address", "").startswith("cluster up")
    if v["cluster.scheduler_address"] and backend not in ("auto", "local") and not from_cluster_up:
        bad(
            "cluster.scheduler_address",
            f"attaches to a running scheduler, but cluster.backend: {backend} starts one; "
            "remove one of them",
        )

    address = v["cluster.scheduler_address"]
    scheme = address.partition("://")[0] if isinstance(address, str) else ""
    speaks = ADDRESS_TRANSPORTS.get(scheme)
    if speaks and transport(v) != speaks:
        # the client speaks the config's transport: a tls scheduler without this client's
        # certificate was a TypeError from Dask after a 20 s wait
        bad(
            "cluster.scheduler_address",
            f"a {scheme}:// scheduler is reached over {speaks}, but "
            f"distributed.communication_backend is {transport(v)}: set it to {speaks}"
            + (" (with the distributed.tls files)" if speaks == "tls" else ""),
        )
    if transport(v) == "tls":  # set, present, PEM, key matches, issued by the CA, valid now
        tls_problems(v, bad)
    # checked where SSH logs in, as the tls files are for tls: one site config on a workstation
    # and on a cluster's login node had failed on the workstation for a key only ssh reads
    ssh = backend == "ssh" or (backend == "auto" and v["distributed.nodes"])
    for part in ("known_hosts", "identity_file") if ssh else ():
        path = v[f"distributed.ssh.{part}"]
        if path and not os.path.isfile(os.path.expanduser(path)):
            bad(f"distributed.ssh.{part}", not_a_file(path))
    out += _node_memory_floor(v, sources, lines)
    for key, message in dask_value_problems(v["dask"]):
        bad(f"dask.{key}", message)
    for key, message in transport_problems(v["dask"], transport(v)):
        bad(f"dask.{key}", message)
    return out


def check_hardware(
    values: Mapping[str, Any],
    sources: Mapping[str, str],
    hw: Hardware,
    backend: str | None = None,
    lines: Mapping[str, int] | None = None,
) -> list[Problem]:
    """Rules that depend on this machine: GPUs, cores, allocator libraries, packages.

    Parameters
    ----------
    values, sources, lines
        Flat resolved values, their sources and the file's line numbers (see
        :func:`check_static`).
    hw
        The machine the cluster will start on.
    backend
        Backend to check for (default: the one the config resolves to on ``hw``). SSH clusters
        run on other machines, so only the client-side packages are checked for them.

    Returns
    -------
    list of Problem
    """
    out: list[Problem] = []

    def bad(path: str, message: str) -> None:
        out.append(locate(path, sources, message, lines))

    backend = backend or resolve_backend(values, hw)
    t = transport(values)
    if t == "ucx" and not hw.has_package("distributed-ucxx"):
        bad(
            "distributed.communication_backend",
            "ucx needs distributed-ucxx, which pins its own dask release: "
            "scripts/setup-ucx-env.sh makes .venv-ucx with it, or pip install "
            "'openclaw-dask[ucx]' (conda: distributed-ucxx from conda-forge)",
        )
    if backend == "ssh":
        if not hw.has_package("asyncssh"):
            bad("cluster.backend", "ssh needs asyncssh: pip install 'openclaw-dask[ssh]'")
        return out
    if backend == "mpi" and not hw.has_package("dask-mpi"):
        bad("cluster.backend", "mpi needs dask-mpi and mpi4py: pip install 'openclaw-dask[mpi]'")

    interface = values["cluster.interface"]
    if interface and hw.interfaces and interface not in hw.interfaces:
        bad(
            "cluster.interface",
            f"no network interface {quote(interface)} with an IPv4 address here, which Dask "
            f"listens on (have: {', '.join(hw.interfaces)})"
            + did_you_mean(interface, hw.interfaces),
        )
    if backend in ("local", "cuda"):  # served here (ssh: on the scheduler's node)
        problem = _dashboard_host_problem(values["cluster.dashboard_address"], hw.addresses)
        if problem:
            bad("cluster.dashboard_address", problem)
    devices = values["gpu.devices"]
    if backend == "cuda":
        if not hw.gpus:
            bad(
                "cluster.backend" if values["cluster.backend"] == "cuda" else "gpu.devices",
                "the cuda backend needs an NVIDIA GPU, and none was found (NVML)",
            )
        if not hw.has_package("dask-cuda"):
            bad(
                "cluster.backend",
                "the cuda backend needs dask-cuda: pip install 'openclaw-dask[gpu]'",
            )
    if isinstance(devices, list):
        missing = sorted({d for d in devices if d >= len(hw.gpus)})
        if missing:
            bad(
                "gpu.devices",
                f"GPU {', '.join(map(str, missing))} not present: this machine has "
                f"{len(hw.gpus)} GPU(s)",
            )

    allocator = values["memory.allocator"]
    if allocator != "system" and hw.allocator_path(allocator) is None:
        bad(
            "memory.allocator",
            f"{allocator} library not found on this machine; install it: "
            f"{ALLOCATOR_INSTALL[allocator]}",
        )

    threads = check_threads(values, sources, hw, backend, lines)
    out += threads
    # the layout of a refused thread count would be meaningless (and slow to work out)
    layout = None if threads else resolve_layout(values, hw, backend)
    if layout is not None:
        out += _layout_problems(values, sources, layout, backend, hw.memory, lines)
    out += _affinity_problems(values, sources, hw, layout, backend, lines)
    return out


def _dashboard_host_problem(address: Any, addresses: Collection[str]) -> str | None:
    """Why a local cluster's dashboard cannot bind to ``address`` here, or ``None``.

    An address of another machine (a typo, a copied config) passed every check and then
    stopped the cluster's start: "RuntimeError: Cluster failed to start: [Errno 99] Cannot
    assign requested address", exit 1, no key named. ``addresses`` empty: not known.
    """
    if not isinstance(address, str) or not addresses:
        return None
    host = address.rpartition(":")[0].strip("[]")
    if host in ("", "0.0.0.0", "::", "*"):  # every interface
        return None
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError):
        return f"{quote(host)} does not resolve to an address (a typo?); 127.0.0.1 is the default"
    found = {str(info[4][0]).split("%")[0] for info in infos}
    # all of 127.0.0.0/8 is this machine's on Linux, though lo lists 127.0.0.1 alone
    if any(a in addresses or a.startswith("127.") for a in found):
        return None
    have = ", ".join(a for a in addresses if ":" not in a) or ", ".join(addresses)
    return (
        f"{quote(host)} is no address of this machine (its addresses: {have}), so the "
        "dashboard cannot be served there: use one of them, 0.0.0.0 for every interface, "
        "or the default 127.0.0.1 (through ssh -L from elsewhere)"
    )


def check_threads(
    values: Mapping[str, Any],
    sources: Mapping[str, str],
    hw: Hardware,
    backend: str,
    lines: Mapping[str, int] | None = None,
) -> list[Problem]:
    """A ``parallel.thread_pool_size`` beyond what ``hw`` can run, as processes are refused.

    The bound is :func:`~openclaw_dask.config.layout.max_threads`: a few threads per usable
    core (I/O-bound tasks may want more threads than cores), not thousands. SSH nodes are other
    machines and the cuda backend runs one thread per stream, so neither is checked here.

    Parameters
    ----------
    values, sources, lines
        See :func:`check_hardware`.
    hw
        The machine the workers start on.
    backend
        The resolved backend.

    Returns
    -------
    list of Problem
        Empty, or the one problem.
    """
    threads = values["parallel.thread_pool_size"]
    if backend in ("ssh", "cuda") or not isinstance(threads, int) or threads <= max_threads(hw):
        return []
    return [locate("parallel.thread_pool_size", sources, too_many_threads(threads, hw), lines)]


def _layout_problems(
    values: Mapping[str, Any],
    sources: Mapping[str, str],
    layout: Layout,
    backend: str,
    ram: int,
    lines: Mapping[str, int] | None,
) -> list[Problem]:
    """Processes that do not fit the threads, and worker budgets too small or too large."""
    out: list[Problem] = []
    if layout.processes > layout.threads:
        out.append(
            locate(
                "parallel.processes",
                sources,
                f"{layout.processes} processes but only {layout.threads} threads on this "
                "machine: each process needs at least one thread",
                lines,
            )
        )
    elif layout.threads % layout.processes:
        out.append(
            locate(
                "parallel.thread_pool_size",
                sources,
                f"{layout.threads} threads do not split evenly over {layout.processes} processes",
                lines,
            )
        )
    out += _memory_floor(values, sources, layout, lines)
    if backend in ("local", "cuda"):  # one machine: this one
        out += _memory_ceiling(values, sources, layout, ram, lines)
    return out


def _affinity_problems(
    values: Mapping[str, Any],
    sources: Mapping[str, str],
    hw: Hardware,
    layout: Layout | None,
    backend: str,
    lines: Mapping[str, int] | None,
) -> list[Problem]:
    """Core lists naming absent cores, sharing a core, or not one per worker of ``layout``."""
    affinity = values["parallel.thread_affinity"]
    if not isinstance(affinity, list):
        return []
    out: list[Problem] = []

    def bad(path: str, message: str) -> None:
        out.append(locate(path, sources, message, lines))

    usable = set(hw.usable_cores)
    for i, cores in enumerate(affinity):
        absent = [c for c in cores if c not in usable]
        if absent:
            bad(
                f"parallel.thread_affinity[{i}]",
                f"core {format_cpu_list(absent).replace(',', ', ')} does not exist or is not "
                f"usable here (usable: {hw.cpulist()})",
            )
    if layout is not None and backend != "cuda" and len(affinity) != layout.processes:
        bad(
            "parallel.thread_affinity",
            f"{len(affinity)} core lists for {layout.processes} worker process"
            f"{'' if layout.processes == 1 else 'es'}; give one list per worker",
        )
    elif layout is not None and backend != "cuda":
        # the thread bound of the whole machine, per pinned worker: 16 threads pinned to one
        # core passed, although the machine may hold at most 8 a core
        per_worker = layout.threads // layout.processes
        for i, cores in enumerate(affinity):
            if cores and per_worker > MAX_THREADS_PER_CORE * len(set(cores)):
                bad(
                    f"parallel.thread_affinity[{i}]",
                    f"{per_worker} threads a worker pinned to {len(set(cores))} core(s): at "
                    f"most {MAX_THREADS_PER_CORE} a core; give it more cores or fewer threads",
                )
    # counted in one pass: a core list may hold thousands of ids
    counts = Counter(c for cores in affinity for c in cores)
    dup = [c for c, n in counts.items() if n > 1]
    if dup:
        bad(
            "parallel.thread_affinity",
            f"core {format_cpu_list(dup).replace(',', ', ')} given to more than one worker",
        )
    return out


def _memory_floor(
    values: Mapping[str, Any],
    sources: Mapping[str, str],
    layout: Any,
    lines: Mapping[str, int] | None,
) -> list[Problem]:
    """A worker budget too small for the worker process itself.

    A Dask worker stops taking tasks at ``memory.spill.pause`` of its budget, and its nanny
    restarts it at ``terminate``. Below its own footprint a worker pauses before its first task
    and the run waits for ever (measured: 150 MB per worker here), or it restarts in a loop.
    """
    limit = layout.memory_limit
    if not isinstance(limit, int):
        return []
    need, why = _worker_floor(values, limit)
    if not need:
        return []
    key, need_key = _budget_key(values, layout, need)
    message = (
        f"{_mb(values[key])} gives each worker {_mb(limit)}{why} ({key}: {_mb(need_key)} or more)"
    )
    return [locate(key, sources, message, lines)]


def _worker_floor(values: Mapping[str, Any], limit: int) -> tuple[int, str]:
    """``(least budget, why)`` when a worker budget of ``limit`` bytes is too small for the
    worker itself, else ``(0, "")``."""
    floor = WORKER_FOOTPRINT + MIN_TASK_ROOM
    raw = {k: (f"dask.{key}", f) for k, (key, f) in memory_fractions(values["dask"]).items()}
    fraction, part, source = 1.0, None, ""
    for name in ("pause", "terminate"):
        source, value = raw.get(name, (f"memory.spill.{name}", values[f"memory.spill.{name}"]))
        if value is not False:
            fraction, part = float(value), name
            break
    if limit * fraction >= floor:
        return 0, ""
    need = math.ceil(floor / fraction)
    fate = {
        "pause": "stops taking tasks",
        "terminate": "is restarted",
        None: "runs out of memory",
    }[part]
    at = f" at {fraction:.0%} of it ({source})" if part else ""
    return need, (
        f", and a worker {fate}{at}; a worker process alone holds ~{_mb(WORKER_FOOTPRINT)} "
        "(Python, NumPy, Dask, Zarr), which leaves no room for a task: give each worker at "
        f"least {_mb(need)}"
    )


def _node_memory_floor(
    values: Mapping[str, Any], sources: Mapping[str, str], lines: Mapping[str, int] | None
) -> list[Problem]:
    """:func:`_memory_floor` for each SSH node's ``resources.memory`` (split over its
    ``parallel.processes`` workers); it holds whatever the node's machine."""
    procs = values["parallel.processes"]
    procs = procs if isinstance(procs, int) else 1
    out = []
    for i, node in enumerate(values["distributed.nodes"]):
        memory = (node.get("resources") or {}).get("memory")  # a hand-made values dict
        if not memory:
            continue
        need, why = _worker_floor(values, int(memory) // procs)
        if need:
            key = f"distributed.nodes[{i}].resources.memory"
            message = (
                f"{_mb(memory)} gives each of the node's {procs} worker(s) "
                f"{_mb(int(memory) // procs)}{why} ({_mb(need * procs)} for the node)"
            )
            out.append(locate(key, sources, message, lines))
    return out


def _memory_ceiling(
    values: Mapping[str, Any],
    sources: Mapping[str, str],
    layout: Any,
    ram: int,
    lines: Mapping[str, int] | None,
) -> list[Problem]:
    """Worker budgets that add up to more than the machine's memory (a unit typed wrong?).

    A worker's budget is what Dask's spilling, pausing and restarts measure against; where the
    workers' budgets add up to more than the machine, they can grow together past its memory
    before any of them spills, and the kernel's OOM killer, not Dask, ends one. A single budget
    beyond the machine Dask ignores with a warning (the worker may use the whole machine).
    Until 2026-12-05 only that single budget was refused: 2 x 25 GB passed on a 25 GB machine
    while the message for 2 x 26 GB said "use at most 12.6 GB".
    """
    limit = layout.memory_limit
    if not isinstance(limit, int) or not ram or limit * layout.processes <= ram:
        return []
    share = ram // layout.processes
    key, share_key = _budget_key(values, layout, share)
    many = layout.processes > 1
    each = f"each of its {layout.processes} workers" if many else "its worker"
    total = f" ({_gb(limit * layout.processes)} in all)" if many else ""
    fate = (
        "the kernel instead of Dask would stop a worker that grows"
        if limit <= ram
        else "Dask would ignore it, and the kernel instead of Dask would stop a worker that grows"
    )
    message = (
        f"{_gb(values[key])} gives {each} {_gb(limit)}{total}, more than this machine's "
        f"{_gb(ram)} ({fate}): use at most {_gb(share_key)} (the machine shared by its "
        f"{layout.processes} worker(s)), or auto"
    )
    return [locate(key, sources, message, lines)]


def _budget_key(values: Mapping[str, Any], layout: Any, per_worker: int) -> tuple[str, int]:
    """The key that set the workers' budget, and ``per_worker`` bytes in that key's terms."""
    if values["memory.per_thread_pool_size"] != "auto":
        return "memory.per_thread_pool_size", math.ceil(per_worker / layout.threads_per_worker)
    return "memory.global_pool", per_worker * layout.processes


def _gb(nbytes: float) -> str:
    return f"{nbytes / 1e9:,.1f} GB"


def _mb(nbytes: float) -> str:
    if nbytes < 1e6:  # "1 MB gives each worker 1 MB" was said of 100 bytes
        return f"{int(nbytes):,} bytes"
    return f"{math.ceil(nbytes / 1e6):,} MB"
