"""Config -> plan for an SSH cluster with per-node options.

``distributed.SSHCluster`` gives every worker the same options (distributed#4714). We build the
same thing it builds, a ``SpecCluster`` of ``distributed.deploy.ssh.Scheduler`` and ``Worker``
specs, but one worker spec per node, so each node gets its own thread count, memory limit and
Dask resources (``GPU: 1``). Nothing of SSHCluster is forked: the spec classes are distributed's,
subclassed only to keep reading the remote output (:mod:`openclaw_dask.runtime.ssh_process`).
"""

from __future__ import annotations

from typing import Any

from openclaw_dask.config.hardware import Hardware
from openclaw_dask.config.layout import Layout
from openclaw_dask.config.loader import Config
from openclaw_dask.translate.plan import (
    ClusterPlan,
    alias_notes,
    common_dask_config,
    dashboard_kwargs,
    preload_lists,
    protocol,
    security_kwargs,
    worker_env,
    worker_plugins,
)

SSH_SCHEDULER = "openclaw_dask.runtime.ssh_process.Scheduler"
SSH_WORKER = "openclaw_dask.runtime.ssh_process.Worker"
#: Preload that gives each remote worker the fingerprint of its node's own openclaw.config.
NODE_PRELOAD = "openclaw_dask.runtime.preload"
#: Preload that stops a remote scheduler or nanny when its SSH session ends (runtime/hangup.py).
HANGUP_PRELOAD = "openclaw_dask.runtime.hangup"


def with_preload(
    dask_config: dict[str, Any], kind: str, module: str, argv: list[str]
) -> dict[str, Any]:
    """``preload`` and ``preload_argv`` keywords: ``distributed.KIND.preload`` plus ``module``.

    A keyword replaces the dask config's list, so that list (and its ``preload-argv``: one
    list per module, or one for all) is kept first.
    """
    given, args = preload_lists(dask_config, kind)
    return {"preload": [*given, module], "preload_argv": [*args, argv]}


def connect_options(config: Config, node: dict[str, Any]) -> dict[str, Any]:
    """asyncssh ``connect`` options for one node.

    Host keys are verified against ``distributed.ssh.known_hosts`` (asyncssh's default,
    ``~/.ssh/known_hosts``, when unset); only the loudly named
    ``insecure_skip_host_key_check`` turns verification off (``known_hosts=None``).
    """
    opts: dict[str, Any] = {"port": node["ssh_port"]}
    if node["user"]:
        opts["username"] = node["user"]
    if config["distributed.ssh.insecure_skip_host_key_check"]:
        opts["known_hosts"] = None
    elif config["distributed.ssh.known_hosts"]:
        opts["known_hosts"] = config["distributed.ssh.known_hosts"]
    if config["distributed.ssh.identity_file"]:
        opts["client_keys"] = [config["distributed.ssh.identity_file"]]
    return opts


def node_threads(config: Config, node: dict[str, Any]) -> int | None:
    """Worker threads on ``node`` in all (``resources.cpus``, else an integer
    ``parallel.thread_pool_size``), or ``None`` for the node's own core count."""
    cpus = node["resources"]["cpus"]
    if cpus is not None:
        return int(cpus)
    setting = config["parallel.thread_pool_size"]
    return setting if isinstance(setting, int) else None  # None: the remote's own core count


def unapplied_notes(config: Config) -> list[str]:
    """What an SSH cluster does instead of the settings it does not apply.

    The nodes are other machines, laid out by their ``resources``: these keys had been dropped
    from the plan without a word.
    """
    v = config.values
    notes = []
    if v["parallel.thread_affinity"] is not False:
        notes.append("parallel.thread_affinity not applied on ssh nodes: workers are not pinned")
    budgets = [k for k in ("memory.per_thread_pool_size", "memory.global_pool") if v[k] != "auto"]
    if budgets:
        notes.append(
            f"{', '.join(budgets)} not applied on ssh nodes: each node's resources.memory "
            "(else Dask's auto) is its workers' memory budget"
        )
    nodes = v["distributed.nodes"]
    own = [n["host"] for n in nodes if n["resources"]["cpus"] is not None]
    if isinstance(v["parallel.thread_pool_size"], int) and own:
        # resources.cpus wins on its node: the thread count had been dropped there unsaid
        where = "ssh nodes" if len(own) == len(nodes) else f"{', '.join(own)}"
        notes.append(
            f"parallel.thread_pool_size not applied on {where}: a node's resources.cpus is "
            "its worker threads"
        )
    procs = v["parallel.processes"]
    pinned = [n for n in v["distributed.nodes"] if n["port"] is not None]
    if isinstance(procs, int) and procs > 1 and pinned:
        # each process is a worker of its own, and they cannot all listen on one port: the
        # port had been dropped without a word
        ports = ", ".join(f"{n['host']}:{n['port']}" for n in pinned)
        notes.append(
            f"distributed.nodes port not applied ({ports}): the {procs} worker processes of a "
            "node (parallel.processes) cannot share one port, so each takes a free one"
        )
    counted = [n for n in v["distributed.nodes"] if n["resources"]["cpus"] is None]
    if v["parallel.thread_pool_size"] == "physical" and counted:
        notes.append(
            "parallel.thread_pool_size: physical is not known here: a node without "
            "resources.cpus runs Dask's default, one thread per logical core"
        )
    return notes


def plan_ssh(config: Config, hw: Hardware) -> ClusterPlan:
    """Plan a SpecCluster over ``distributed.nodes``.

    The scheduler runs on the node marked ``scheduler: true`` (else the first node); every node
    runs ``parallel.processes`` worker processes (1 when ``auto``). Each process binds to the
    node's own address (``host``), which on a loopback test rig keeps it off other interfaces.
    """
    nodes = config["distributed.nodes"]
    sched_node = next((n for n in nodes if n["scheduler"]), nodes[0])
    procs = config["parallel.processes"]
    procs = procs if isinstance(procs, int) else 1
    proto = protocol(config)
    security = security_kwargs(config)
    # one environment for every node: remote library paths differ, so the allocator goes by soname
    env = worker_env(config, hw, Layout(1, 1, "auto", None), remote=True)
    dask_config, notes = common_dask_config(config, env)

    scheduler_kwargs: dict[str, Any] = {
        "host": sched_node["host"],
        "port": 0,
        **dashboard_kwargs(config),
        "protocol": proto,
        # the session's end (Ctrl-C while it starts, a killed client) stops it too
        **with_preload(dask_config, "scheduler", HANGUP_PRELOAD, []),
    }
    if config["cluster.interface"]:
        # the scheduler too, as on the other backends (it had bound to its node's host while
        # the workers used the interface)
        del scheduler_kwargs["host"]
        scheduler_kwargs["interface"] = config["cluster.interface"]
    scheduler = {
        "cls": SSH_SCHEDULER,
        "options": {
            "address": sched_node["host"],
            "connect_options": connect_options(config, sched_node),
            "kwargs": scheduler_kwargs,
            "remote_python": sched_node["python"],
        },
    }
    workers: dict[str, Any] = {}
    per_node = []
    for index, node in enumerate(nodes):
        threads = node_threads(config, node)
        memory = node["resources"]["memory"]
        name = f"{node['host']}-{node['ssh_port']}"
        if any(n["name"] == name for n in per_node):  # another entry for the same host
            name = f"{name}-node{index}"
        kw: dict[str, Any] = {"host": node["host"], "protocol": proto}
        if threads is not None:
            kw["nthreads"] = max(1, threads // procs)
        kw["memory_limit"] = int(memory) // procs if memory else "auto"
        if node["port"] is not None and procs == 1:
            kw["worker_port"] = node["port"]
        if node["resources"]["gpus"]:
            kw["resources"] = {"GPU": node["resources"]["gpus"] / procs}
        if config["cluster.interface"]:
            del kw["host"]
            kw["interface"] = config["cluster.interface"]
        # the worker reads its node's own config, so a node that disagrees is refused by name
        kw |= with_preload(dask_config, "worker", NODE_PRELOAD, ["--openclaw-adopt-unconfigured"])
        # the nanny (and with it its worker) stops when its SSH session ends
        hangup = with_preload(dask_config, "nanny", HANGUP_PRELOAD, [])
        kw |= {"preload_nanny": hangup["preload"], "preload_nanny_argv": hangup["preload_argv"]}
        # one spec per process: ssh.Worker's own n_workers would give them all the same name,
        # which the scheduler refuses ("name taken")
        names = [name] if procs == 1 else [f"{name}-{i}" for i in range(procs)]
        for worker_name in names:
            workers[worker_name] = {
                "cls": SSH_WORKER,
                "options": {
                    "address": node["host"],
                    "connect_options": connect_options(config, node),
                    "kwargs": {**kw, "name": worker_name},
                    "worker_class": "distributed.Nanny",
                    "remote_python": node["python"],
                    "name": worker_name,
                },
            }
        per_node.append(
            {
                "name": name,
                "host": node["host"],
                "ssh_port": node["ssh_port"],
                "processes": procs,
                "workers": names,
                "threads": threads,
                "memory_limit": memory,
                "gpus": node["resources"]["gpus"],
            }
        )
    kwargs: dict[str, Any] = {
        "scheduler": scheduler,
        "workers": workers,
        "name": "openclaw-ssh",
        # the remote processes' logs are shown from warnings up, as LocalCluster shows its
        # workers' (runtime/ssh_process.py forwards them for the cluster's whole life)
        "silence_logs": "warning",
    }
    if security:
        # the client's side; remote processes get TLS from the dask config they inherit
        # (distributed.comm.tls.*), so the certificate paths (absolute, as the loader made
        # them here) must exist on every node too
        kwargs["security"] = security
    notes.append(
        # host:22 read as the scheduler's own address, which is any free port there
        f"scheduler on {sched_node['host']} (ssh port {sched_node['ssh_port']}); "
        f"{len(workers)} worker process(es) on {len(nodes)} node(s)"
    )
    return ClusterPlan(
        backend="ssh",
        cluster_class="distributed.SpecCluster",
        cluster_kwargs=kwargs,
        dask_config=dask_config,
        worker_env=env,
        worker_plugins=worker_plugins(config),
        layout={"nodes": per_node},
        notes=alias_notes(config) + notes,
        unapplied=unapplied_notes(config),
    )
