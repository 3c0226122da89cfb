"""SSH pre-flight: which nodes are visited, and what makes a node incompatible (no sshd here).

The real logins, refusals and remote interpreters are exercised on real sshd servers in
``tests/integration/test_ssh.py``.
"""

from __future__ import annotations

import asyncio
import copy
import getpass
import json
import sys
from typing import Any

import pytest

from openclaw_dask.config import ConfigError, load_config
from openclaw_dask.config.layout import MAX_THREADS_PER_CORE
from openclaw_dask.runtime.preflight import (
    check_nodes,
    compare,
    fixed_ports,
    gpu_warnings,
    local_facts,
    node_targets,
    numerics_outliers,
    probe_text,
    shared_machine_problem,
    too_many_gpus_there,
    too_many_threads_there,
    too_much_memory_there,
    wait_for_ssh_workers,
)
from openclaw_dask.runtime.preload import has_own_config
from openclaw_dask.translate import plan_cluster
from openclaw_dask.translate.ssh import HANGUP_PRELOAD, NODE_PRELOAD
from tests.conftest import make_hardware

NODES = (
    "distributed.nodes=[{host: 10.0.0.1, resources: {cpus: 2}},"
    " {host: 10.0.0.1, port: 9000},"
    " {host: 10.0.0.2, ssh_port: 2222, user: bob, python: /opt/py/bin/python}]"
)


def config(*sets: str) -> Any:
    return load_config(None, [NODES, *sets], env={}, use_search_path=False)


def remote_like(local: dict[str, Any]) -> dict[str, Any]:
    """What a compatible node reports: the same versions, no config of its own."""
    out = {k: copy.deepcopy(local[k]) for k in ("python", "dask", "distributed", "openclaw_dask")}
    return {**out, "compressions": ["auto", "lz4", "zstd"], "executable": "/x/python"}


def test_targets_follow_the_nodes_once_per_login(write_config: Any) -> None:
    known = write_config("", "known_hosts")
    targets = node_targets(config(f"distributed.ssh.known_hosts={known}"))
    assert [(t.index, t.label) for t in targets] == [(0, "10.0.0.1:22"), (2, "10.0.0.2:2222")]
    first, second = targets
    assert first.user == getpass.getuser() and first.python == sys.executable
    assert second.user == "bob" and second.python == "/opt/py/bin/python"
    assert second.options == {"port": 2222, "username": "bob", "known_hosts": str(known)}


def test_a_compatible_node_passes() -> None:
    local = local_facts(config())
    assert compare(remote_like(local), local, "/x/python") == []
    # a node with a config of its own that agrees passes too
    agreeing = {**remote_like(local), "config": {"file": "/n.config", "env": []}}
    agreeing["config"] |= {"fingerprint": local["fingerprint"], "values": local["values"]}
    assert compare(agreeing, local, "/x/python") == []


def test_each_incompatibility_is_named() -> None:
    local = local_facts(config("distributed.compression=zstd"))
    missing = compare({"python": [3, 11, 2], "missing": "openclaw_dask"}, local, "/usr/bin/py")
    assert missing and "its python /usr/bin/py cannot import openclaw_dask" in missing[0]

    old = {**remote_like(local), "dask": "2020.1.0", "python": [3, 9, 1], "compressions": []}
    reasons = compare(old, local, "/x/python")
    assert any("is Python 3.9" in r for r in reasons)
    assert any(r.startswith("it has dask 2020.1.0, this machine") for r in reasons)
    assert any("distributed.compression is zstd" in r and "zstandard" in r for r in reasons)

    odd = load_config(None, [NODES, "distributed.sync_interval=50"], env={})
    fingerprint, values = odd.fingerprint()
    own = {"file": None, "env": ["OPENCLAW_DISTRIBUTED__SYNC_INTERVAL"]}
    node = {**remote_like(local), "config": {**own, "fingerprint": fingerprint, "values": values}}
    (reason,) = compare(node, local, "/x/python")
    assert reason == (
        "its own openclaw.config (env OPENCLAW_DISTRIBUTED__SYNC_INTERVAL) differs from this "
        "one: distributed.compression: node 'auto', here 'zstd'; "
        "distributed.sync_interval: node 50, here 5000"
    )
    broken = {**remote_like(local), "config_error": ["x.config:3: unknown key"]}
    assert compare(broken, local, "/x/python") == [
        "its own openclaw.config is invalid: x.config:3: unknown key"
    ]


def test_unreachable_nodes_fail_naming_each_node(write_config: Any) -> None:
    path = write_config(
        "cluster: {backend: ssh}\n"
        "distributed:\n"
        "  nodes:\n"
        "    - {host: 127.0.0.1, ssh_port: 1}\n"
        "    - {host: 127.0.0.1, ssh_port: 2, scheduler: true}\n"
    )
    with pytest.raises(ConfigError) as info:
        check_nodes(load_config(path, env={}))
    first, second = info.value.problems
    assert (first.key, first.line) == ("distributed.nodes[0]", 4)
    assert first.message.startswith("node 127.0.0.1:1: not reachable: Connection refused")
    assert second.message.startswith("node 127.0.0.1:2: not reachable")


def test_the_probe_leaves_the_caller_s_event_loop_in_place(write_config: Any) -> None:
    """The nodes were probed with ``asyncio.run``, which leaves its thread without an event
    loop: from Python, after an ssh config's start (or refusal), the loop a script had set was
    gone and ``asyncio.get_event_loop()`` raised "There is no current event loop"."""
    path = write_config(
        "cluster: {backend: ssh}\ndistributed:\n  nodes: [{host: 127.0.0.1, ssh_port: 1}]\n"
    )
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        with pytest.raises(ConfigError, match="not reachable"):
            check_nodes(load_config(path, env={}))
        assert asyncio.get_event_loop_policy().get_event_loop() is loop
    finally:
        asyncio.set_event_loop(None)
        loop.close()


def test_unconfigured_nodes_adopt_and_workers_read_their_node_config() -> None:
    assert not has_own_config(load_config(None, env={}, use_search_path=False))
    env = {"OPENCLAW_DISTRIBUTED__SYNC_INTERVAL": "5"}
    assert has_own_config(load_config(None, env=env, use_search_path=False))
    plan = plan_cluster(config(), make_hardware(), backend="ssh", strict=False)
    for spec in plan.cluster_kwargs["workers"].values():
        kwargs = spec["options"]["kwargs"]
        assert kwargs["preload"][-1] == NODE_PRELOAD
        assert kwargs["preload_argv"][-1] == ["--openclaw-adopt-unconfigured"]


def test_remote_schedulers_and_nannies_stop_with_their_ssh_session() -> None:
    sets = ("dask.distributed.nanny.preload=[mine]", "dask.distributed.scheduler.preload=[own]")
    plan = plan_cluster(config(*sets), make_hardware(), backend="ssh", strict=False)
    scheduler = plan.cluster_kwargs["scheduler"]["options"]["kwargs"]
    assert scheduler["preload"] == ["own", HANGUP_PRELOAD]
    for spec in plan.cluster_kwargs["workers"].values():
        assert spec["options"]["worker_class"] == "distributed.Nanny"
        kwargs = spec["options"]["kwargs"]
        assert kwargs["preload_nanny"] == ["mine", HANGUP_PRELOAD]
        assert kwargs["preload_nanny_argv"] == [[], []]
        assert HANGUP_PRELOAD not in kwargs["preload"]  # the worker's stdin is not the session's


def test_workers_that_never_join_are_named() -> None:
    class Stub:
        def wait_for_workers(self, n: int, timeout: float) -> None:
            assert n == 3
            raise TimeoutError

        def scheduler_info(self) -> dict[str, Any]:
            return {"workers": {"tcp://10.0.0.1:1": {"name": "10.0.0.1-22"}}}

    plan = plan_cluster(config(), make_hardware(), backend="ssh", strict=False)
    with pytest.raises(ConfigError) as info:
        wait_for_ssh_workers(Stub(), plan, timeout=1)
    assert "workers 10.0.0.1-22-node1, 10.0.0.2-2222 started but did not join" in str(info.value)


def test_deterministic_mode_names_the_nodes_that_compute_unlike_most() -> None:
    assert "numerics_kind" not in probe_text(config())
    assert "numerics_kind" in probe_text(config("parallel.deterministic_mode=true"))
    kind = {"cpu": "znver4", "vector": "avx2 fma", "numpy": "2.3.0", "numba": "0.62.0"}
    assert numerics_outliers({"a:22": kind, "b:22": dict(kind)}) == {}
    generic = {**kind, "cpu": "generic", "vector": "none"}
    odd = numerics_outliers({"a:22": generic, "b:22": kind, "c:22": kind})
    assert list(odd) == ["a:22"]
    assert "computes unlike the others: cpu generic (node b:22 and 1 more: znver4); " in odd["a:22"]
    assert "vector none (node b:22 and 1 more: avx2 fma)." in odd["a:22"]
    # a tie: the first node by host:port sets the kind
    assert list(numerics_outliers({"a:22": generic, "b:22": kind})) == ["b:22"]


def test_each_package_a_task_travels_through_is_compared_distributed_too() -> None:
    """Mutation audit: dropping distributed from the compared packages went unseen (only a
    dask mismatch was tested); its wire protocol is what the nodes speak to each other."""
    local = local_facts(config())
    for package in ("openclaw_dask", "dask", "distributed"):
        other = {**remote_like(local), package: "0.0.1"}
        (reason,) = compare(other, local, "/x/python")
        assert reason.startswith(f"it has {package.replace('_', '-')} 0.0.1, this machine "), reason


def test_a_node_s_threads_are_bounded_per_core_as_here() -> None:
    """The bound a probe's core count sets: at most MAX_THREADS_PER_CORE per core, the same
    rule as on this machine (mutation audit: twice the bound went unseen beside 10**20)."""
    node = load_config(None, [NODES], env={}, use_search_path=False)["distributed.nodes"][0]
    cores = 2
    at_most = {**node, "resources": {**node["resources"], "cpus": MAX_THREADS_PER_CORE * cores}}
    assert too_many_threads_there(config(), at_most, {"cores": cores}) is None
    over = {**node, "resources": {**node["resources"], "cpus": MAX_THREADS_PER_CORE * cores + 1}}
    reason = too_many_threads_there(config(), over, {"cores": cores})
    assert reason and f"use at most {MAX_THREADS_PER_CORE * cores} " in reason, reason


def test_a_node_s_memory_is_bounded_per_worker_as_here() -> None:
    """``resources.memory``, the node's budget split over its workers, must fit in the memory
    the probe found: Dask ignores a larger ``memory_limit`` and lets the worker take the node,
    and shares that add up to more let the workers outgrow the node before any spills (they
    were allowed until 2026-12-05, as on this machine). No probe figure: no check."""
    node = load_config(None, [NODES], env={}, use_search_path=False)["distributed.nodes"][0]
    twelve = {**node, "resources": {**node["resources"], "memory": 12 * 10**9}}
    eight = {"memory": 8 * 10**9}
    reason = too_much_memory_there(config(), twelve, eight)
    assert reason and "more than the node's 8.0 GB" in reason and "use at most 8.0 GB" in reason
    split = config("parallel.processes=2", "parallel.thread_pool_size=2")
    reason = too_much_memory_there(split, twelve, eight)  # 6 GB a worker, 12 in all
    assert reason and "(each of its 2 worker(s) 6.0 GB) is more than the node's 8.0" in reason
    assert (
        too_much_memory_there(split, {**twelve, "resources": {"memory": 8 * 10**9}}, eight) is None
    )
    assert too_much_memory_there(config(), twelve, {}) is None
    assert too_much_memory_there(config(), node, eight) is None  # no budget: Dask's auto


def test_the_probe_binds_only_the_worker_ports_the_plan_uses() -> None:
    """Node 1 fixes port 9000: one worker process uses it (its host's address; every address
    with an interface); several processes each take a free one, so nothing is checked."""
    assert fixed_ports(config(), [0, 1]) == [("10.0.0.1", 9000)]
    assert fixed_ports(config("cluster.interface=lo"), [1]) == [("", 9000)]
    assert fixed_ports(config("parallel.processes=2"), [0, 1, 2]) == []
    text = probe_text(config(), [("10.0.0.1", 9000)])
    assert "PORTS = [('10.0.0.1', 9000)]" in text and "sock.bind(address)" in text
    assert "PORTS" not in probe_text(config())
    # the probe as a node runs it: a port taken there is reported by its number
    import socket
    import subprocess

    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        text = probe_text(config(), [("127.0.0.1", port), ("127.0.0.1", 0)])
        run = subprocess.run([sys.executable, "-"], input=text, capture_output=True, text=True)
    [line] = [ln for ln in run.stdout.splitlines() if ln.startswith("OPENCLAW-PROBE ")]
    assert json.loads(line.removeprefix("OPENCLAW-PROBE "))["ports_taken"] == {
        str(port): "Address already in use"
    }


def test_entries_that_log_in_to_one_machine_are_counted_together() -> None:
    """Two entries of 10 threads on a 2-core machine: each within 8 a core, 20 together (the
    audit's pair ran 32 threads and 40 GiB of budgets on 2 cores and 25 GB)."""
    two = (
        "distributed.nodes=[{host: 10.0.0.1, resources: {cpus: 10, memory: 3GB}},"
        " {host: 10.0.0.1, resources: {cpus: 10, memory: 3GB}}, {host: 10.0.0.2}]"
    )
    cfg = load_config(None, [two], env={}, use_search_path=False)
    shared, alone = node_targets(cfg)
    assert shared.indices == (0, 1) and alone.indices == (2,)
    facts = {"cores": 2, "memory": 8 * 10**9}
    assert too_many_threads_there(cfg, cfg["distributed.nodes"][0], facts) is None
    assert shared_machine_problem(cfg, shared, facts) == (
        "node 10.0.0.1:22: distributed.nodes[0] and distributed.nodes[1] are one machine, and "
        "together run 20 worker threads on its 2 usable core(s): at most 16 (8 per core) in "
        "all, or one entry for the machine"
    )
    assert shared_machine_problem(cfg, alone, facts) is None
    roomy = {"cores": 4, "memory": 5 * 10**9}  # 20 threads fit 4 cores; 6 GB of 5 do not
    assert shared_machine_problem(cfg, shared, roomy) == (
        "node 10.0.0.1:22: distributed.nodes[0] and distributed.nodes[1] are one machine, and "
        "their resources.memory add up to 6.0 GB, more than its 5.0 GB: at most 5.0 GB in "
        "all, or one entry for the machine"
    )
    assert shared_machine_problem(cfg, shared, {"cores": 4, "memory": 6 * 10**9}) is None


def _probe_gpus(env: dict[str, str]) -> dict[str, Any]:
    """What the probe reports run as a node's python, with ``env`` in its login."""
    import os
    import subprocess

    run = subprocess.run(
        [sys.executable, "-"],
        input=probe_text(config()),
        capture_output=True,
        text=True,
        env={**os.environ, **env},
    )
    [line] = [ln for ln in run.stdout.splitlines() if ln.startswith("OPENCLAW-PROBE ")]
    return json.loads(line.removeprefix("OPENCLAW-PROBE "))


def test_the_probe_counts_the_gpus_a_node_s_workers_can_use() -> None:
    """As the workers would see them: none without NVIDIA's driver (this machine), and no more
    than the login's CUDA_VISIBLE_DEVICES names."""
    import os

    here = (
        len(os.listdir("/proc/driver/nvidia/gpus"))
        if os.path.isdir("/proc/driver/nvidia/gpus")
        else 0
    )
    facts = _probe_gpus({})
    assert facts["gpus"] >= here and "cuda_visible_devices" not in facts, facts
    hidden = _probe_gpus({"CUDA_VISIBLE_DEVICES": ""})
    assert hidden["gpus"] == 0 and hidden["cuda_visible_devices"] == "", hidden


def test_a_node_s_gpus_beyond_the_ones_it_has_are_warned_of() -> None:
    """``resources.gpus`` had been advertised to the scheduler unchecked: a node of 0 GPUs
    offered 2, and a task asking for one would be sent there to fail in CUDA once the cluster
    ran. Warned of, not refused (a container may hide the driver's list); no count from the
    probe (not Linux, no NVML): no word."""
    node = load_config(None, [NODES], env={}, use_search_path=False)["distributed.nodes"][0]
    two = {**node, "resources": {**node["resources"], "gpus": 2}}
    assert too_many_gpus_there(two, {"gpus": 0}) == (
        "node 10.0.0.1:22: resources.gpus is 2 but the node has 0 NVIDIA GPU(s) its workers "
        "can use: a task that asks for a GPU may be sent there and fail; 0 for a node without "
        "GPUs"
    )
    reason = too_many_gpus_there(two, {"gpus": 1, "cuda_visible_devices": "3"})
    assert reason and "its workers can use (its CUDA_VISIBLE_DEVICES='3'): " in reason
    assert reason.endswith("; at most 1")
    assert too_many_gpus_there(two, {"gpus": 2}) is None
    assert too_many_gpus_there(two, {"gpus": None}) is None and too_many_gpus_there(two, {}) is None
    assert too_many_gpus_there(node, {"gpus": 0}) is None  # none asked for


def test_entries_on_one_machine_share_its_gpus() -> None:
    both = (
        "distributed.nodes=[{host: 10.0.0.1, resources: {gpus: 1}},"
        " {host: 10.0.0.1, resources: {gpus: 1}}]"
    )
    cfg = load_config(None, [both], env={}, use_search_path=False)
    [shared] = node_targets(cfg)
    assert gpu_warnings(cfg, [shared], {shared.label: {"gpus": 1}}) == [
        "node 10.0.0.1:22: distributed.nodes[0] and distributed.nodes[1] are one machine, and "
        "together advertise 2 GPUs (resources.gpus) of its 1: a task that asks for a GPU may "
        "wait for one that is not there; at most 1 in all"
    ]
    assert gpu_warnings(cfg, [shared], {shared.label: {"gpus": 2}}) == []
    assert gpu_warnings(cfg, [shared], {}) == []
