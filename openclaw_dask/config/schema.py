"""The schema of ``openclaw.config``: every key, its type, default, unit and one-line doc.

This table is the single source of truth: the loader, the validator, ``config show``,
``config init`` (the commented starter file), ``docs/config.md`` and the shipped
``configs/openclaw.config`` all derive from it, and a test fails when any of them drifts (the idea
of dask's ``distributed-schema.yaml`` + ``test_schema_is_complete``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from openclaw_dask.config.types import (
    AnyMapping,
    Bool,
    Choice,
    CoreSet,
    Duration,
    FieldSpec,
    FilePath,
    Fraction,
    Host,
    HostPort,
    Int,
    ListOf,
    Literal,
    Nullable,
    OneOf,
    Record,
    SchedulerAddress,
    Size,
    Text,
    UserName,
    ValueType,
)

#: Seed names for transports, accepted and translated (``config plan`` reports the translation).
BACKEND_ALIASES = {"grpc": "tls", "nccl": "ucx", "nccl-style": "ucx"}


@dataclass(frozen=True)
class Key:
    """One config key.

    Parameters
    ----------
    path
        Dotted path, e.g. ``parallel.thread_pool_size``.
    type
        The value type (checks and normalises).
    default
        Normalised default value.
    doc
        One line shown by ``config show`` and written into the starter config.
    unit
        Unit of the value, if any.
    """

    path: str
    type: ValueType
    default: Any
    doc: str
    unit: str = ""

    @property
    def env_var(self) -> str:
        """The environment variable that overrides this key."""
        return "OPENCLAW_" + self.path.upper().replace(".", "__")


NODE = Record(
    name="node",
    fields={
        "host": FieldSpec(Host(), required=True, doc="host name or address to ssh to"),
        "ssh_port": FieldSpec(Int(1, 65535), 22, doc="sshd port"),
        "port": FieldSpec(
            Nullable(Int(0, 65535)),
            None,
            doc="worker port (null: a free one; with parallel.processes above 1 each worker "
            "takes a free one)",
        ),
        "user": FieldSpec(Nullable(UserName()), None, doc="login user (null: current user)"),
        "python": FieldSpec(
            Nullable(Text()),
            None,
            doc="remote python executable (null: the path of this machine's python)",
        ),
        "scheduler": FieldSpec(
            Bool(), False, doc="run the scheduler on this node (none marked: the first node)"
        ),
        "resources": FieldSpec(
            Record(
                name="resources mapping",
                fields={
                    "cpus": FieldSpec(
                        Nullable(Int(1)),
                        None,
                        doc="worker threads on the node (null: parallel.thread_pool_size if "
                        "a number, else one per logical core of the node)",
                    ),
                    "memory": FieldSpec(
                        Nullable(Size()),
                        None,
                        doc="memory limit of the node's workers together (null: Dask's auto)",
                    ),
                    "gpus": FieldSpec(
                        Int(0), 0, doc="GPUs, advertised as Dask resource GPU (at most the node's)"
                    ),
                },
            ),
            {"cpus": None, "memory": None, "gpus": 0},
            doc="what the node offers",
        ),
    },
)

SPILL_FRACTION = OneOf((Fraction(), Literal(False)))

KEYS: tuple[Key, ...] = (
    # cluster
    Key(
        "cluster.backend",
        Choice(("auto", "local", "cuda", "ssh", "mpi")),
        "auto",
        "auto: ssh if distributed.nodes, mpi if the transport is mpi, cuda if GPUs asked and "
        "present, else local",
    ),
    Key(
        "cluster.scheduler_address",
        Nullable(SchedulerAddress()),
        None,
        "attach to this running scheduler instead of starting a cluster",
    ),
    Key(
        "cluster.dashboard_address",
        Nullable(HostPort(ipv6=False)),
        "127.0.0.1:8787",
        "dashboard bind address; loopback by default (not open to the network); null: off",
    ),
    Key(
        "cluster.interface",
        Nullable(Text()),
        None,
        "network interface for scheduler and workers (e.g. ib0); null: 127.0.0.1 (mpi: lo; "
        "ssh: each node's host)",
    ),
    # parallel
    Key(
        "parallel.thread_pool_size",
        OneOf((Choice(("auto", "physical")), Int(1))),
        "auto",
        "worker threads per node (at most 8 per usable core); auto: usable logical cores, "
        "physical: physical cores",
        "threads",
    ),
    Key(
        "parallel.processes",
        OneOf((Choice(("auto",)), Int(1))),
        "auto",
        "worker processes per node; auto: Dask's heuristic for the thread count (ssh: 1 per node)",
        "processes",
    ),
    Key(
        "parallel.thread_affinity",
        OneOf((Literal(False), Choice(("compact", "scatter")), ListOf(CoreSet(), 1))),
        False,
        "pin workers to cores: false, compact, scatter (NUMA-aware), or a core list per worker "
        "(not ssh/cuda)",
    ),
    Key(
        "parallel.deterministic_mode",
        Bool(),
        False,
        "bit-identical outputs on any layout and rerun: refuses unlike workers; own ops: "
        "ctx.deterministic",
    ),
    # distributed
    Key(
        "distributed.nodes",
        ListOf(NODE),
        [],
        "hosts of an SSH cluster: {host, ssh_port, port, user, python, scheduler, resources}",
    ),
    Key(
        "distributed.communication_backend",
        Choice(("tcp", "tls", "ucx", "mpi"), aliases=BACKEND_ALIASES),
        "tcp",
        "transport: tcp, tls, ucx, mpi (aliases: grpc -> tls, nccl/nccl-style -> ucx + NVLink)",
    ),
    Key(
        "distributed.rdma",
        Bool(),
        False,
        "use InfiniBand/RDMA through UCX (needs a UCX built with it)",
    ),
    Key(
        "distributed.sync_interval",
        Int(1),
        5000,
        "steps between global synchronisation points (persist + checkpoint); same on every node",
        "steps",
    ),
    Key(
        "distributed.batch_size",
        Int(1),
        64,
        "work fused per task: time steps per halo exchange of iterative ops (map ops: "
        "ctx.batch_size if read)",
        "steps",
    ),
    Key(
        "distributed.compression",
        Choice(("none", "lz4", "zstd", "auto")),
        "auto",
        "compression of data sent between hosts (Dask skips it between processes on one host)",
    ),
    Key(
        "distributed.compression_level",
        Int(1, 22),
        3,
        "zstd compression level",
    ),
    Key(
        "distributed.clock_skew_tolerance",
        Duration(),
        0.1,
        "largest clock offset allowed between a worker and the scheduler",
        "seconds",
    ),
    Key(
        "distributed.clock_skew_action",
        Choice(("error", "warn")),
        "error",
        "a skew beyond the tolerance at start: error stops the start naming the worker; warn logs",
    ),
    Key(
        "distributed.tls.ca_file",
        Nullable(FilePath()),
        None,
        "CA certificate (PEM) for tls; see `openclaw-dask certs create`",
    ),
    Key(
        "distributed.tls.cert",
        Nullable(FilePath()),
        None,
        "this node's certificate (PEM) for tls",
    ),
    Key(
        "distributed.tls.key",
        Nullable(FilePath()),
        None,
        "this node's private key (PEM) for tls",
    ),
    Key(
        "distributed.ssh.known_hosts",
        Nullable(FilePath()),
        None,
        "known_hosts file used to verify SSH host keys (null: ~/.ssh/known_hosts)",
    ),
    Key(
        "distributed.ssh.identity_file",
        Nullable(FilePath()),
        None,
        "private key for SSH login (null: the ssh agent and default keys)",
    ),
    Key(
        "distributed.ssh.insecure_skip_host_key_check",
        Bool(),
        False,
        "DANGER: accept any SSH host key (test rigs only)",
    ),
    # gpu
    Key(
        "gpu.devices",
        OneOf((Choice(("all",)), ListOf(Int(0)))),
        [],
        "GPU ids to use, all, or [] for none; one worker per GPU",
    ),
    Key(
        "gpu.stream_count",
        Int(1, 16),
        2,
        "concurrent CUDA streams per GPU worker (2-4 overlap copies and kernels)",
        "streams",
    ),
    Key("gpu.unified_memory", Bool(), False, "CPU/GPU shared (managed) memory"),
    Key("gpu.peer_access", Bool(), False, "direct GPU-to-GPU transfers (NVLink/P2P) over UCX"),
    Key(
        "gpu.async_prefetch",
        Bool(),
        True,
        "stage the next chunk on the device while one computes; no effect yet: nothing stages "
        "chunks",
    ),
    # memory
    Key(
        "memory.allocator",
        Choice(("system", "jemalloc", "tcmalloc")),
        "system",
        "malloc used by worker processes (LD_PRELOAD at worker spawn, verified in each worker)",
    ),
    Key(
        "memory.per_thread_pool_size",
        OneOf((Choice(("auto",)), Size())),
        "auto",
        "memory budget per worker thread: worker memory_limit = threads x this (252 MB or more "
        "a worker; not ssh)",
        "bytes",
    ),
    Key(
        "memory.global_pool",
        OneOf((Choice(("auto",)), Size())),
        "auto",
        "one memory budget split over a node's workers (not ssh); with gpu.devices: each GPU "
        "worker's RMM pool instead",
        "bytes",
    ),
    Key(
        "memory.spill.target",
        SPILL_FRACTION,
        0.6,
        "fraction of memory_limit at which a worker starts moving data to disk (false: off)",
    ),
    Key(
        "memory.spill.spill",
        SPILL_FRACTION,
        0.7,
        "fraction of process memory at which a worker spills regardless (false: off)",
    ),
    Key(
        "memory.spill.pause",
        SPILL_FRACTION,
        0.8,
        "fraction of process memory at which a worker stops taking new tasks (false: off)",
    ),
    Key(
        "memory.spill.terminate",
        SPILL_FRACTION,
        0.95,
        "fraction of process memory at which the nanny restarts the worker (false: off; mpi: no "
        "nanny)",
    ),
    # storage
    Key(
        "storage.codec",
        Choice(("zstd", "lz4", "zlib", "none")),
        "zstd",
        "Zarr compressor for outputs (Blosc with shuffle: the workflows' float64 fields 1.3-1.5x)",
    ),
    Key(
        "storage.level",
        Int(0, 9),
        3,
        "Blosc compression level of storage.codec (zstd: 9 is zstd's slowest, a few MB/s a core)",
    ),
    Key(
        "storage.shuffle",
        Choice(("byte", "bit", "none")),
        "byte",
        "Blosc shuffle before compression (byte suits float fields)",
    ),
    # raw dask
    Key("dask", AnyMapping(), {}, "raw dask config passed through (experts; wins over ours)"),
)

KEYS_BY_PATH: dict[str, Key] = {k.path: k for k in KEYS}

#: Section docs, in file order (used for comments in starter configs and docs).
SECTIONS: dict[str, str] = {
    "cluster": "which cluster runs the work, and where to see it",
    "parallel": "threads, processes, pinning and determinism on each node",
    "distributed": "nodes, transport and synchronisation between them",
    "gpu": "GPU workers (dask-cuda)",
    "memory": "allocator and memory budgets of the workers",
    "storage": "how outputs are written to Zarr",
    "dask": "raw dask config for experts",
}


def defaults() -> dict[str, Any]:
    """Return a fresh flat ``{dotted path: default}`` mapping of every key."""
    import copy

    return {k.path: copy.deepcopy(k.default) for k in KEYS}


def groups() -> set[str]:
    """Every dotted prefix that is a mapping rather than a key (``distributed.tls``)."""
    out: set[str] = set()
    for k in KEYS:
        parts = k.path.split(".")
        out.update(".".join(parts[:i]) for i in range(1, len(parts)))
    return out
