"""Settings a plan must carry to the workers, or say it does not: what no other test pinned.

Found by a mutation audit: each test here failed to notice a plausible change to the
translation (a key dropped from a list, a branch taken the other way).
"""

from __future__ import annotations

from pathlib import Path

from openclaw_dask.config import load_config
from openclaw_dask.translate import ClusterPlan, plan_cluster
from tests.conftest import make_hardware

ADDRESS = "cluster.scheduler_address=tcp://127.0.0.1:8786"


def plan(*sets: str, gpus: int = 0) -> ClusterPlan:
    config = load_config(None, list(sets), use_search_path=False)
    return plan_cluster(config, make_hardware(gpus=gpus), strict=False)


def test_attaching_names_every_worker_setting_the_running_cluster_keeps() -> None:
    """A running cluster's workers keep their own memory fractions, budgets and pinning: a
    user who set them for this run is told at submit (the plan's unapplied list)."""
    asked = ("memory.spill.pause", "memory.per_thread_pool_size", "parallel.thread_affinity")
    p = plan(ADDRESS, "memory.spill.pause=0.75", "memory.per_thread_pool_size=1GiB",
             "parallel.thread_affinity=compact")  # fmt: skip
    assert p.backend == "attach"
    [said] = p.unapplied
    assert said.startswith("not applied, the running cluster keeps its own workers: ")
    for key in asked:
        assert f"{key} (--set)" in said, key
    # a value that does not shape the workers applies, and is not said
    assert not plan(ADDRESS, "distributed.compression=lz4").unapplied


def test_gpu_workers_get_per_thread_default_streams_for_cupy_and_numba() -> None:
    """Each of a GPU worker's ``gpu.stream_count`` threads runs its own CUDA stream, for CuPy
    and for numba's kernels alike; without it numba's share the legacy default stream."""
    p = plan("gpu.devices=[0]", "gpu.stream_count=2", gpus=1)
    assert p.backend == "cuda"
    spawned = p.dask_config["distributed.nanny.pre-spawn-environ"]
    for name in ("CUPY_CUDA_PER_THREAD_DEFAULT_STREAM", "NUMBA_CUDA_PER_THREAD_DEFAULT_STREAM"):
        assert p.worker_env[name] == spawned[name] == 1, name


def test_skipping_the_host_key_check_wins_over_a_known_hosts_file(tmp_path: Path) -> None:
    """``insecure_skip_host_key_check`` is the loud switch: a known_hosts file set beside it
    (a shared config) must not turn verification back on."""
    known = tmp_path / "known_hosts"
    known.write_text("")
    nodes = "distributed.nodes=[{host: 10.0.0.1}, {host: 10.0.0.2}]"
    p = plan(nodes, f"distributed.ssh.known_hosts={known}",
             "distributed.ssh.insecure_skip_host_key_check=true")  # fmt: skip
    specs = [p.cluster_kwargs["scheduler"], *p.cluster_kwargs["workers"].values()]
    for spec in specs:
        assert spec["options"]["connect_options"]["known_hosts"] is None
    checked = plan(nodes, f"distributed.ssh.known_hosts={known}")
    for spec in checked.cluster_kwargs["workers"].values():
        assert spec["options"]["connect_options"]["known_hosts"] == str(known)


def test_a_node_port_that_several_worker_processes_cannot_share_is_said_unapplied() -> None:
    """A node's ``port`` pins its one worker; with ``parallel.processes: 2`` each process is a
    worker that takes a free port, and the port had been dropped without a word."""
    nodes = "distributed.nodes=[{host: 10.0.0.1, port: 9000}, {host: 10.0.0.2}]"
    one = plan(nodes)
    assert one.cluster_kwargs["workers"]["10.0.0.1-22"]["options"]["kwargs"]["worker_port"] == 9000
    assert not one.unapplied
    two = plan(nodes, "parallel.processes=2")
    for name in ("10.0.0.1-22-0", "10.0.0.1-22-1"):
        assert "worker_port" not in two.cluster_kwargs["workers"][name]["options"]["kwargs"]
    [said] = two.unapplied
    assert said.startswith("distributed.nodes port not applied (10.0.0.1:9000): the 2 worker ")


def test_rdma_turns_on_infiniband_and_its_connection_manager_together() -> None:
    """``distributed.rdma`` is InfiniBand with RDMA-CM for UCX (hardware this machine lacks,
    so pinned as translation): one switch without the other does not connect over IB."""
    p = plan("distributed.communication_backend=ucx", "distributed.rdma=true")
    assert p.dask_config["distributed-ucxx.infiniband"] is True
    assert p.dask_config["distributed-ucxx.rdmacm"] is True
    off = plan("distributed.communication_backend=ucx")
    assert off.dask_config["distributed-ucxx.rdmacm"] is False
