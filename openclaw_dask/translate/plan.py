"""The :class:`ClusterPlan` and the translation rules every backend shares.

A plan is plain data (strings, numbers, lists, dicts): printable as JSON, comparable in tests,
and it creates no Dask object. Classes are named by import path; the runtime imports them.
Values that Dask wants as objects (``security``) stay dicts here and are materialised by
:func:`openclaw_dask.runtime.materialise_kwargs`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from openclaw_dask.config.hardware import ALLOCATOR_LIBS, Hardware
from openclaw_dask.config.layout import Layout
from openclaw_dask.config.loader import Config
from openclaw_dask.config.schema import BACKEND_ALIASES, KEYS_BY_PATH
from openclaw_dask.config.validate import transport

#: Environment variable that carries the per-worker core lists into worker processes. It does
#: not start with ``OPENCLAW_`` so that the config loader never mistakes it for an override.
AFFINITY_ENV = "_OPENCLAW_AFFINITY"
PLUGINS = "openclaw_dask.runtime.plugins"
AFFINITY_PRELOAD = "openclaw_dask.runtime.affinity"
TERMINAL_PRELOAD = "openclaw_dask.runtime.terminal"
#: glibc malloc settings of workers on the system allocator. The trim threshold is Dask's own
#: ``distributed.nanny.pre-spawn-environ`` default (return freed memory to the OS promptly). But
#: setting it freezes glibc's mmap threshold at 128 KiB, so every larger temporary becomes a
#: fresh mmap whose pages fault in one by one: the climate kernel ran 2.2x slower that way
#: (0.5 of its time in page faults; see docs/design-notes.md). The mmap threshold goes back to
#: the ceiling glibc's own dynamic threshold would reach (32 MiB on 64-bit). With the heap
#: trimmed back to 64 KiB of slack, a loop that frees and reallocates its temporaries (the
#: kernel at 2° to 0.5°) still grows and shrinks the heap every step and faults its pages in
#: again (2x slower there): a top pad of 4 MiB keeps that much slack on each grow and trim.
GLIBC_ENV = {
    "MALLOC_TRIM_THRESHOLD_": 65536,
    "MALLOC_MMAP_THRESHOLD_": 32 * 2**20,
    "MALLOC_TOP_PAD_": 4 * 2**20,
}
BLAS_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
#: Dask's periodic callbacks at slower rates than its defaults (20 ms, 500 ms, 10 ms). Every
#: worker, nanny and scheduler wakes its event loop for them, ~160 times a second per worker,
#: and while tasks keep every core busy each wake-up takes a core and some of its cache from a
#: task: on the 2-core VM the climate stencil ran 1-9 % faster with these (medians of 10
#: interleaved rounds; docs/design-notes.md). The tick only watches for a blocked loop (reported
#: past ``tick.limit``, 3 s), the system monitor feeds the dashboard's CPU and network plots, and
#: 20 samples a second per thread still fill its profile; dask/distributed#5000 names the same
#: knobs for busy clusters. The memory monitors (pause, spill, terminate) keep Dask's 100 ms.
QUIET_MONITORS = {
    "distributed.admin.tick.interval": "200ms",
    "distributed.admin.system-monitor.interval": "2s",
    "distributed.worker.profile.interval": "50ms",
}


@dataclass
class ClusterPlan:
    """Everything needed to start (or attach to) the cluster a config asks for.

    Parameters
    ----------
    backend
        ``local``, ``cuda``, ``ssh``, ``mpi`` or ``attach``.
    cluster_class
        Import path of the class (or function) to call with ``cluster_kwargs``.
    cluster_kwargs
        Keyword arguments, exactly those the class accepts.
    dask_config
        Flat ``{dotted dask key: value}`` to apply with ``dask.config.set`` before starting.
    worker_env
        Environment of each worker process, set before it spawns (allocator, BLAS threads,
        pinning); goes to ``distributed.nanny.pre-spawn-environ`` (or ``mpirun -x``).
    worker_plugins
        ``[{"class": import path, "kwargs": {...}}]`` registered on every worker.
    layout
        Resolved threads, processes, memory limit and core lists per node.
    launch_command
        For ``mpi``: the ``mpirun`` command line.
    address
        For ``attach``: the scheduler address.
    notes
        What was translated and why (aliases, fallbacks), shown by ``config plan``.
    unapplied
        Settings the config asks for that this backend drops, or applies otherwise than their
        doc says. Shown with the notes, and also printed by ``submit`` when a run starts: a
        user who set them should not have to ask ``config plan`` to learn it.
    warnings
        Mismatches with this machine, reported instead of raised in dry runs.
    """

    backend: str
    cluster_class: str | None
    cluster_kwargs: dict[str, Any]
    dask_config: dict[str, Any]
    worker_env: dict[str, Any]
    worker_plugins: list[dict[str, Any]]
    layout: dict[str, Any]
    launch_command: list[str] | None = None
    address: str | None = None
    notes: list[str] = field(default_factory=list)
    unapplied: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def all_notes(self) -> list[str]:
        """The notes, then the settings not applied: what ``config plan`` lists."""
        return [*self.notes, *self.unapplied]

    def to_dict(self) -> dict[str, Any]:
        """Plain dict (what ``config plan --json`` prints)."""
        return asdict(self)

    def to_json(self) -> str:
        """Indented JSON."""
        return json.dumps(self.to_dict(), indent=2, sort_keys=False, default=str)


def layout_dict(layout: Layout) -> dict[str, Any]:
    """JSON form of a :class:`Layout` including the derived threads per worker."""
    return {
        "threads": layout.threads,
        "processes": layout.processes,
        "threads_per_worker": layout.threads_per_worker,
        "memory_limit": layout.memory_limit,
        "affinity": layout.affinity,
    }


def user_set(config: Config, key: str) -> bool:
    """Whether the config's user gave ``key`` (a file, ``--set``, the environment).

    A default that a backend cannot apply is a plan note; a value the user gave and the backend
    drops is also said when a run starts (:attr:`ClusterPlan.unapplied`).
    """
    return config.sources.get(key, "default") != "default"


def protocol(config: Config) -> str:
    """Dask protocol for the configured transport (mpi carries data over tcp)."""
    return {"tcp": "tcp", "tls": "tls", "ucx": "ucx", "mpi": "tcp"}[transport(config.values)]


def alias_notes(config: Config) -> list[str]:
    """Notes that explain how seed transport names were translated."""
    name = config["distributed.communication_backend"]
    if name not in BACKEND_ALIASES:
        return []
    extra = " with NVLink (enable_nvlink)" if name.startswith("nccl") else ""
    return [
        f"distributed.communication_backend: {name!r} is a documented alias for "
        f"{BACKEND_ALIASES[name]!r}{extra}"
    ]


def uses_nvlink(config: Config) -> bool:
    """NVLink is on for ``gpu.peer_access`` and for the ``nccl`` seed aliases."""
    return bool(config["gpu.peer_access"]) or config[
        "distributed.communication_backend"
    ].startswith("nccl")


def allocator_preload(config: Config, hw: Hardware, remote: bool = False) -> str | None:
    """``LD_PRELOAD`` value for the allocator: a full path here, a soname on remote nodes."""
    allocator = config["memory.allocator"]
    if allocator == "system":
        return None
    if remote:
        return ALLOCATOR_LIBS[allocator][0]
    return hw.allocator_path(allocator) or ALLOCATOR_LIBS[allocator][0]


def worker_env(
    config: Config, hw: Hardware, layout: Layout, remote: bool = False
) -> dict[str, Any]:
    """Environment for worker processes, set before they spawn.

    BLAS/OpenMP pools get one thread each: a worker already runs ``threads_per_worker`` tasks at
    once, so more BLAS threads would oversubscribe the cores it is pinned to.
    """
    env: dict[str, Any] = {name: 1 for name in BLAS_VARS}
    preload = allocator_preload(config, hw, remote)
    if preload:
        env["LD_PRELOAD"] = preload
    else:
        env.update(GLIBC_ENV)  # only glibc reads them; jemalloc/tcmalloc ignore them
    if layout.affinity:
        env[AFFINITY_ENV] = json.dumps(layout.affinity)
    return env


def flatten(mapping: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"a": {"b": 1}}`` -> ``{"a.b": 1}`` (the form ``dask.config.set`` accepts)."""
    out: dict[str, Any] = {}
    for key, value in mapping.items():
        path = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, Mapping) and value:
            out.update(flatten(value, path))
        else:
            out[path] = value
    return out


def common_dask_config(config: Config, env: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Dask config every backend gets, with the raw ``dask:`` section laid on top.

    Returns
    -------
    dict, list of str
        The flat dask config and notes about raw keys that override a derived one.
    """
    v = config.values
    compression = {"none": False, "auto": "auto", "lz4": "lz4", "zstd": "zstd"}
    out: dict[str, Any] = {
        "distributed.comm.compression": compression[v["distributed.compression"]],
        "distributed.comm.zstd.level": v["distributed.compression_level"],
        "distributed.nanny.pre-spawn-environ": dict(env),
        **QUIET_MONITORS,
        # an op's rechunk by tasks, not peer-to-peer: a step's outputs are xarray's delayed
        # Zarr writes, and dask cannot run a P2P rechunk wrapped in a delayed ("Cannot block
        # reusing for graphs including a P2PBarrierTask"; the step failed with "_finalize_store
        # ... cancelled for reason: lost dependencies" whatever the memory). A raw dask:
        # array.rechunk.method: p2p is laid on top, as any raw key
        "array.rechunk.method": "tasks",
    }
    for part in ("target", "spill", "pause", "terminate"):
        out[f"distributed.worker.memory.{part}"] = v[f"memory.spill.{part}"]
    if transport(v) == "tls":
        ca, cert, key = tls_files(v)
        out["distributed.comm.require-encryption"] = True
        out["distributed.comm.tls.ca-file"] = ca
        for role in ("scheduler", "worker", "client"):
            out[f"distributed.comm.tls.{role}.cert"] = cert
            out[f"distributed.comm.tls.{role}.key"] = key
    if transport(v) == "ucx":
        out.update(ucx_dask_config(config))
    notes = []
    unused = [f"distributed.tls.{part}" for part in ("ca_file", "cert", "key")]
    unused = [key for key in unused if v[key]]
    if unused and transport(v) != "tls":
        # checked only for tls: a file that went missing would not stop this transport
        notes.append(
            f"{', '.join(unused)} not used: distributed.communication_backend is "
            f"{v['distributed.communication_backend']}, not tls"
        )
    # a level chosen for a compressor that is not used had been ignored without a word (the
    # default level is no choice: config init's starter file writes every key out)
    if (
        v["distributed.compression_level"] != KEYS_BY_PATH["distributed.compression_level"].default
        and v["distributed.compression"] != "zstd"
    ):
        notes.append(
            "distributed.compression_level not used: it is zstd's, and distributed.compression "
            f"is {v['distributed.compression']}"
        )
    if v["storage.level"] != KEYS_BY_PATH["storage.level"].default and v["storage.codec"] == "none":
        notes.append("storage.level not used: storage.codec is none")
    notes += open_dashboard_note(v["cluster.dashboard_address"])
    unused = [f"distributed.ssh.{p}" for p in ("known_hosts", "identity_file")]
    unused = [key for key in unused if v[key]]
    if unused and not v["distributed.nodes"]:  # without nodes: not an ssh plan
        notes.append(f"{', '.join(unused)} not used: no distributed.nodes to log in to")
    for key, value in flatten(v["dask"]).items():
        # a key inside one of ours that holds a mapping (pre-spawn-environ.LD_PRELOAD): laid
        # into that mapping, so the two do not sit side by side in the plan, one of them
        # silently winning in dask.config (the allocator's LD_PRELOAD had)
        parent = next((k for k in out if key.startswith(f"{k}.") and isinstance(out[k], dict)), "")
        into, name = (dict(out[parent]), key[len(parent) + 1 :]) if parent else (out, key)
        if name in into and into[name] != value:
            notes.append(f"dask.{key} = {value!r} (raw dask section) overrides {into[name]!r}")
        into[name] = value
        if parent:
            out[parent] = into
    if env.get(AFFINITY_ENV):
        # after a raw dask: preload, not instead of it: a site's preload had turned the
        # pinning off, and the workers were then refused as running on every core
        out = with_preloads(out, "worker", [AFFINITY_PRELOAD])
    return out, notes


def shared_cores_note(config: Config, layout: Layout) -> list[str]:
    """A note where ``compact`` or ``scatter`` pinning gives two workers the same core.

    With more worker threads than cores the blocks wrap around (4 threads in 2 workers on 2
    cores: ``[[0, 1], [0, 1]]``); the plan had said nothing of it, while a core list that
    gives a core twice is refused.
    """
    mode, cores = config["parallel.thread_affinity"], layout.affinity
    if mode not in ("compact", "scatter") or not cores:
        return []
    given = [c for block in cores for c in block]
    if len(given) == len(set(given)):
        return []
    return [
        f"parallel.thread_affinity {mode}: {layout.threads} worker threads on "
        f"{len(set(given))} core(s), so workers share cores ({cores}): each stays on its "
        "cores, which are not its own"
    ]


def preload_lists(dask_config: dict[str, Any], kind: str) -> tuple[list[str], list[list[str]]]:
    """The preloads ``distributed.KIND.preload`` lists, and one argument list for each.

    Dask takes ``preload-argv`` as one list for every preload or one list per preload, and
    refuses a count that differs from the preloads' ("mismatched lengths"): one list each
    lets another preload be added after them.
    """
    given = dask_config.get(f"distributed.{kind}.preload") or []
    given = [given] if isinstance(given, str) else list(given)
    args = list(dask_config.get(f"distributed.{kind}.preload-argv") or [])
    if not (args and all(isinstance(a, list) for a in args)):
        args = [list(args) for _ in given]
    args = [*args, *([] for _ in range(len(given) - len(args)))][: len(given)]
    return given, args


def with_preloads(dask_config: dict[str, Any], kind: str, modules: list[str]) -> dict[str, Any]:
    """``dask_config`` with ``modules`` preloaded after those it lists for ``kind`` (``worker``,
    ``scheduler``, ``nanny``), without arguments; theirs keep their own."""
    given, args = preload_lists(dask_config, kind)
    return dask_config | {
        f"distributed.{kind}.preload": [*given, *modules],
        f"distributed.{kind}.preload-argv": [*args, *([] for _ in modules)],
    }


#: Where the scheduler's HTTP server listens with ``cluster.dashboard_address: null``. Dask
#: starts one whatever the dashboard setting (it serves /health and the Prometheus /metrics),
#: and without an address it took port 8787 on the scheduler's host (on all interfaces under
#: mpi, the network address of an ssh scheduler node): "off" now keeps it on loopback, on a
#: free port, and the dashboard's own pages are not served.
NO_DASHBOARD = "127.0.0.1:0"


def open_dashboard_note(address: str | None) -> list[str]:
    """A note for a dashboard served on every interface (``:8787``, ``0.0.0.0:8787``).

    The default is loopback; a user who widens it may not know that Dask's dashboard asks for
    no login, so it was said nowhere that the cluster's work is then open to the network.
    """
    if not address or address.rpartition(":")[0] not in ("", "0.0.0.0"):
        return []
    return [
        f"cluster.dashboard_address {address} serves the dashboard on every interface, with no "
        "login: whoever reaches this port sees the cluster's work (127.0.0.1, the default, "
        "with ssh -L from elsewhere keeps it private)"
    ]


def dashboard_kwargs(config: Config) -> dict[str, Any]:
    """``distributed.Scheduler`` keywords for ``cluster.dashboard_address`` (null: off)."""
    address = config["cluster.dashboard_address"]
    if address:
        return {"dashboard": True, "dashboard_address": address}
    return {"dashboard": False, "dashboard_address": NO_DASHBOARD}


def with_child_worker_preload(dask_config: dict[str, Any]) -> dict[str, Any]:
    """Add :data:`TERMINAL_PRELOAD` for workers that are children of the client (local, cuda).

    They share the client's terminal, so Ctrl-C and failed tasks are the client's to report
    (:mod:`openclaw_dask.runtime.terminal`); the preloads the config already asks for (pinning,
    a raw ``dask:`` entry) are kept.
    """
    return with_preloads(dask_config, "worker", [TERMINAL_PRELOAD])


def ucx_dask_config(config: Config) -> dict[str, Any]:
    """distributed-ucxx transport switches: TCP always (works without special hardware)."""
    rdma = bool(config["distributed.rdma"])
    return {
        "distributed-ucxx.tcp": True,
        "distributed-ucxx.nvlink": uses_nvlink(config),
        "distributed-ucxx.infiniband": rdma,
        "distributed-ucxx.rdmacm": rdma,
    }


def tls_files(values: Mapping[str, Any]) -> tuple[str, str, str]:
    """``distributed.tls`` ca_file, cert and key with ``~`` expanded (ssl does not expand it)."""
    ca, cert, key = (
        os.path.expanduser(values[f"distributed.tls.{p}"]) for p in ("ca_file", "cert", "key")
    )
    return ca, cert, key


def security_kwargs(config: Config) -> dict[str, Any] | None:
    """``distributed.Security`` keyword arguments for tls, else ``None``."""
    v = config.values
    if transport(v) != "tls":
        return None
    ca, cert, key = tls_files(v)
    out: dict[str, Any] = {"tls_ca_file": ca, "require_encryption": True}
    for role in ("scheduler", "worker", "client"):
        out[f"tls_{role}_cert"] = cert
        out[f"tls_{role}_key"] = key
    return out


def worker_plugins(config: Config) -> list[dict[str, Any]]:
    """Plugins that make the config real and verified inside every worker."""
    fingerprint, relevant = config.fingerprint()
    plugins = [
        {
            "class": f"{PLUGINS}.ConfigFingerprint",
            "kwargs": {"fingerprint": fingerprint, "values": relevant},
        }
    ]
    if config["memory.allocator"] != "system":
        plugins.append(
            {
                "class": f"{PLUGINS}.AllocatorCheck",
                "kwargs": {"allocator": config["memory.allocator"]},
            }
        )
    if config["parallel.deterministic_mode"]:  # its expected kind comes from the workers
        plugins.append({"class": f"{PLUGINS}.NumericsCheck", "kwargs": {}})
    return plugins
