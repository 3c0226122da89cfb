"""Every translation rule config -> ClusterPlan, and plans that real Dask classes accept."""

from __future__ import annotations

import asyncio
import inspect
import json
from typing import Any

import dask
import distributed
import numpy as np
import pytest
from dask.utils import parse_timedelta
from distributed.utils import import_term

from openclaw_dask.config import load_config
from openclaw_dask.config.layout import pin_cores
from openclaw_dask.config.schema import KEYS_BY_PATH
from openclaw_dask.config.tls import create_certificates
from openclaw_dask.runtime import cluster_class, materialise_kwargs
from openclaw_dask.runtime.plugins import NumericsCheck, common_kind, numerics_kind
from openclaw_dask.translate import ClusterPlan, plan_cluster
from openclaw_dask.translate.cuda import LOCAL_CUDA_CLUSTER_PARAMS
from openclaw_dask.translate.plan import (
    AFFINITY_ENV,
    AFFINITY_PRELOAD,
    QUIET_MONITORS,
    TERMINAL_PRELOAD,
)
from tests.conftest import ROOT, make_hardware


def plan(*sets: str, hw: Any = None, backend: str | None = None, path: Any = None) -> ClusterPlan:
    config = load_config(path, list(sets), use_search_path=False)
    return plan_cluster(config, hw or make_hardware(), backend=backend, strict=False)


def params(func: Any) -> set[str]:
    return set(inspect.signature(func).parameters) - {"self", "kwargs", "worker_kwargs"}


NANNY_PARAMS = params(distributed.Nanny.__init__)
# LocalCluster passes its **worker_kwargs on to the Nanny of each worker
LOCAL_CLUSTER_PARAMS = params(distributed.LocalCluster.__init__) | NANNY_PARAMS
SCHEDULER_PARAMS = params(distributed.Scheduler.__init__)


# ---- local ------------------------------------------------------------------------------------


def test_local_defaults() -> None:
    p = plan(hw=make_hardware(cores=8))
    assert p.backend == "local" and p.cluster_class == "distributed.LocalCluster"
    assert set(p.cluster_kwargs) <= LOCAL_CLUSTER_PARAMS
    kw = p.cluster_kwargs
    assert (kw["n_workers"], kw["threads_per_worker"]) == (4, 2)  # Dask's heuristic for 8
    assert kw["processes"] is True and kw["host"] == "127.0.0.1"
    assert kw["dashboard_address"] == "127.0.0.1:8787" and kw["protocol"] == "tcp://"
    assert "cluster.backend: auto resolved to 'local'" in p.notes[0]


@pytest.mark.parametrize(
    ("sets", "threads", "workers"),
    [
        (["parallel.thread_pool_size=6", "parallel.processes=3"], 6, 3),
        (["parallel.thread_pool_size=physical", "parallel.processes=1"], 4, 1),
        (["parallel.processes=8"], 8, 8),
    ],
)
def test_threads_and_processes(sets: list[str], threads: int, workers: int) -> None:
    p = plan(*sets, hw=make_hardware(cores=8, smt=2))
    assert p.cluster_kwargs["n_workers"] == workers
    assert p.cluster_kwargs["threads_per_worker"] * workers == threads


def test_memory_limits() -> None:
    p = plan("parallel.processes=2", "memory.per_thread_pool_size=1GiB", hw=make_hardware(cores=8))
    assert p.cluster_kwargs["memory_limit"] == 4 * 2**30  # 4 threads per worker x 1 GiB
    p = plan("parallel.processes=4", "memory.global_pool=8GiB", hw=make_hardware(cores=8))
    assert p.cluster_kwargs["memory_limit"] == 2 * 2**30
    assert plan().cluster_kwargs["memory_limit"] == "auto"


def test_interface_and_dashboard_off() -> None:
    kw = plan("cluster.interface=eth0", "cluster.dashboard_address=null").cluster_kwargs
    assert kw["interface"] == "eth0" and "host" not in kw
    assert kw["dashboard_address"] is None
    # Dask's HTTP server (health, metrics) runs anyway: on loopback and a free port, not 8787
    assert kw["scheduler_kwargs"] == {"dashboard": False, "dashboard_address": "127.0.0.1:0"}
    assert set(kw["scheduler_kwargs"]) <= SCHEDULER_PARAMS
    assert "scheduler_kwargs" not in plan().cluster_kwargs


@pytest.mark.parametrize("backend", ["ssh", "mpi"])
def test_dashboard_off_keeps_the_http_server_on_loopback(backend: str) -> None:
    sets = [NODES] if backend == "ssh" else ["cluster.backend=mpi", "parallel.processes=2"]
    p = plan(*sets, "cluster.dashboard_address=null", hw=make_hardware(cores=4))
    kw = p.cluster_kwargs
    kw = kw["scheduler"]["options"]["kwargs"] if backend == "ssh" else kw
    assert kw["dashboard"] is False and kw["dashboard_address"] == "127.0.0.1:0"
    on = plan(*sets, hw=make_hardware(cores=4)).cluster_kwargs
    on = on["scheduler"]["options"]["kwargs"] if backend == "ssh" else on
    assert on["dashboard"] is True and on["dashboard_address"] == "127.0.0.1:8787"


def test_allocator_goes_to_pre_spawn_environ() -> None:
    p = plan("memory.allocator=jemalloc")
    env = p.dask_config["distributed.nanny.pre-spawn-environ"]
    assert env["LD_PRELOAD"] == "/usr/lib/libjemalloc.so"
    assert not any(name.startswith("MALLOC_") for name in env)  # glibc only
    assert p.worker_env == env
    assert {
        "class": "openclaw_dask.runtime.plugins.AllocatorCheck",
        "kwargs": {"allocator": "jemalloc"},
    } in p.worker_plugins
    system = plan().dask_config["distributed.nanny.pre-spawn-environ"]
    assert "LD_PRELOAD" not in system and system["MALLOC_TRIM_THRESHOLD_"] == 65536
    # the trim threshold alone would pin glibc's mmap threshold at 128 KiB (page-fault storms)
    assert system["MALLOC_MMAP_THRESHOLD_"] == 32 * 2**20
    # and its 64 KiB of slack would make a loop of temporaries grow and shrink the heap
    assert system["MALLOC_TOP_PAD_"] == 4 * 2**20


def test_blas_threads_are_one_per_task_thread() -> None:
    env = plan().worker_env
    assert env["OMP_NUM_THREADS"] == env["OPENBLAS_NUM_THREADS"] == env["MKL_NUM_THREADS"] == 1


@pytest.mark.parametrize(
    ("setting", "expected"), [("none", False), ("lz4", "lz4"), ("zstd", "zstd"), ("auto", "auto")]
)
def test_compression(setting: str, expected: Any) -> None:
    p = plan(f"distributed.compression={setting}", "distributed.compression_level=7")
    assert p.dask_config["distributed.comm.compression"] == expected
    assert p.dask_config["distributed.comm.zstd.level"] == 7


def test_spill_fractions() -> None:
    p = plan("memory.spill.target=0.5", "memory.spill.spill=false")
    assert p.dask_config["distributed.worker.memory.target"] == 0.5
    assert p.dask_config["distributed.worker.memory.spill"] is False
    assert p.dask_config["distributed.worker.memory.terminate"] == 0.95


def test_fingerprint_plugin_always_present() -> None:
    (fp,) = [x for x in plan().worker_plugins if x["class"].endswith("ConfigFingerprint")]
    assert fp["kwargs"]["values"]["distributed.sync_interval"] == 5000
    other = [
        x
        for x in plan("distributed.sync_interval=5").worker_plugins
        if x["class"].endswith("ConfigFingerprint")
    ]
    assert other[0]["kwargs"]["fingerprint"] != fp["kwargs"]["fingerprint"]


# ---- affinity ---------------------------------------------------------------------------------


def test_pin_compact_and_scatter_on_two_numa_nodes() -> None:
    numa = {0: [0, 1, 2, 3], 1: [4, 5, 6, 7]}
    pool = list(range(8))
    assert pin_cores("compact", pool, numa, 4, 2) == [[0, 1], [2, 3], [4, 5], [6, 7]]
    assert pin_cores("scatter", pool, numa, 4, 2) == [[0, 1], [4, 5], [2, 3], [6, 7]]
    assert pin_cores("compact", pool, numa, 2, 1) == [[0], [1]]
    assert pin_cores("scatter", pool, numa, 2, 1) == [[0], [4]]
    # more threads than cores wrap around rather than fail
    assert pin_cores("compact", [0, 1], {0: [0, 1]}, 3, 1) == [[0], [1], [0]]


def test_pinning_follows_numa_nodes_whose_cores_are_numbered_alternately() -> None:
    """Two-socket machines often number cores round-robin over the sockets (node 0 even,
    node 1 odd): compact keeps each worker on one node, scatter spreads workers over both."""
    numa = {0: [0, 2, 4, 6], 1: [1, 3, 5, 7]}
    pool = list(range(8))
    assert pin_cores("compact", pool, numa, 2, 4) == [[0, 2, 4, 6], [1, 3, 5, 7]]
    assert pin_cores("compact", pool, numa, 4, 2) == [[0, 2], [4, 6], [1, 3], [5, 7]]
    assert pin_cores("scatter", pool, numa, 4, 2) == [[0, 2], [1, 3], [4, 6], [5, 7]]


def test_affinity_in_plan() -> None:
    p = plan(
        "parallel.thread_affinity=scatter",
        "parallel.processes=2",
        hw=make_hardware(cores=8, numa=2),
    )
    assert p.layout["affinity"] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert json.loads(p.worker_env[AFFINITY_ENV]) == p.layout["affinity"]
    assert p.dask_config["distributed.worker.preload"] == [AFFINITY_PRELOAD, TERMINAL_PRELOAD]
    physical = plan(
        "parallel.thread_affinity=compact",
        "parallel.thread_pool_size=physical",
        "parallel.processes=4",
        hw=make_hardware(cores=8, smt=2),
    )
    assert physical.layout["affinity"] == [[0], [2], [4], [6]]
    explicit = plan("parallel.thread_affinity=[[1],[0]]", "parallel.processes=2")
    assert explicit.layout["affinity"] == [[1], [0]]
    assert AFFINITY_ENV not in plan().worker_env


def test_a_raw_dask_preload_runs_beside_the_pinning_not_instead() -> None:
    """A site's ``dask: distributed.worker.preload`` had replaced the pinning preload: the
    workers then ran on every core and were refused as not pinned as planned."""
    sets = ["parallel.thread_affinity=compact", "parallel.processes=2"]
    site = "dask.distributed.worker.preload=[site_preload]"
    p = plan(*sets, site, hw=make_hardware(cores=8, numa=2))
    wanted = ["site_preload", AFFINITY_PRELOAD, TERMINAL_PRELOAD]
    assert p.dask_config["distributed.worker.preload"] == wanted
    assert p.dask_config["distributed.worker.preload-argv"] == [[], [], []]
    assert not any("preload" in note for note in p.notes)
    # Dask refuses argument lists that do not match the preloads one for one: each of ours
    # gets an empty one, and one list for all is kept for the site's preloads only
    for argv, theirs in (("[[--a], [--b]]", [["--a"], ["--b"]]), ("[--a]", [["--a"], ["--a"]])):
        two = "dask.distributed.worker.preload=[one, two]"
        p = plan(*sets, two, f"dask.distributed.worker.preload-argv={argv}")
        assert p.dask_config["distributed.worker.preload"][:2] == ["one", "two"]
        assert p.dask_config["distributed.worker.preload-argv"] == [*theirs, [], []]


# ---- transports -------------------------------------------------------------------------------


def test_tls_wires_config_and_security(tmp_path: Any) -> None:
    made = create_certificates(tmp_path)
    ca, pem, key = made.ca_file, made.nodes[0].cert, made.nodes[0].key
    p = plan(
        "distributed.communication_backend=grpc",
        f"distributed.tls.ca_file={ca}",
        f"distributed.tls.cert={pem}",
        f"distributed.tls.key={key}",
    )
    assert p.cluster_kwargs["protocol"] == "tls://"
    assert p.dask_config["distributed.comm.require-encryption"] is True
    assert p.dask_config["distributed.comm.tls.worker.cert"] == str(pem)
    assert p.dask_config["distributed.comm.tls.client.key"] == str(key)
    assert p.cluster_kwargs["security"]["tls_ca_file"] == str(ca)
    assert any("'grpc' is a documented alias for 'tls'" in n for n in p.notes)
    sec = materialise_kwargs(p)["security"]
    assert isinstance(sec, distributed.Security) and sec.require_encryption


def test_ucx_and_aliases() -> None:
    p = plan("distributed.communication_backend=ucx", "distributed.rdma=true")
    assert p.cluster_kwargs["protocol"] == "ucx://"
    assert p.dask_config["distributed-ucxx.tcp"] is True
    assert p.dask_config["distributed-ucxx.infiniband"] is True
    assert p.dask_config["distributed-ucxx.nvlink"] is False
    nccl = plan("distributed.communication_backend=nccl-style")
    assert nccl.dask_config["distributed-ucxx.nvlink"] is True
    assert any("'nccl-style' is a documented alias for 'ucx' with NVLink" in n for n in nccl.notes)


def test_raw_dask_section_wins_and_says_so() -> None:
    p = plan(
        "distributed.compression=zstd",
        "dask.distributed.comm.compression=lz4",
        "dask.array.chunk-size=64MiB",
        "dask.distributed.worker.profile.interval=10ms",
    )
    assert p.dask_config["distributed.comm.compression"] == "lz4"
    assert p.dask_config["array.chunk-size"] == "64MiB"
    assert any("overrides 'zstd'" in n for n in p.notes)
    assert p.dask_config["distributed.worker.profile.interval"] == "10ms"
    assert any(
        "profile.interval = '10ms' (raw dask section) overrides '50ms'" in n for n in p.notes
    )


def test_a_raw_key_inside_one_of_ours_is_laid_into_it_and_said() -> None:
    """``pre-spawn-environ.LD_PRELOAD`` sat beside our ``pre-spawn-environ`` in the plan, which
    showed the allocator's library while Dask applied the raw one, without a note
    (exploratory test, 2026-12-05)."""
    p = plan(
        "memory.allocator=jemalloc",
        "dask.distributed.nanny.pre-spawn-environ.LD_PRELOAD=/site/lib.so",
        "dask.distributed.nanny.pre-spawn-environ.SITE_VAR=1",
        hw=make_hardware(allocators=("jemalloc",)),
    )
    environ = p.dask_config["distributed.nanny.pre-spawn-environ"]
    assert environ["LD_PRELOAD"] == "/site/lib.so" and environ["SITE_VAR"] == 1
    assert environ["OMP_NUM_THREADS"] == 1  # ours stay beside it
    assert not any(k.startswith("distributed.nanny.pre-spawn-environ.") for k in p.dask_config)
    [note] = [n for n in p.notes if "LD_PRELOAD" in n]
    assert note.startswith(
        "dask.distributed.nanny.pre-spawn-environ.LD_PRELOAD = '/site/lib.so' (raw dask "
        "section) overrides '"
    )
    assert not any("SITE_VAR" in n for n in p.notes)  # added, not overridden


def test_a_dashboard_served_on_every_interface_is_said_open() -> None:
    """Dask's dashboard asks for no login; widening the default loopback was said nowhere."""
    for address in (":8787", "0.0.0.0:8787"):
        [note] = [n for n in plan(f"cluster.dashboard_address={address}").notes if "login" in n]
        assert note.startswith(f"cluster.dashboard_address {address} serves the dashboard on")
    for address in ("127.0.0.1:8787", "null", "192.0.2.2:0"):
        assert not any("login" in n for n in plan(f"cluster.dashboard_address={address}").notes)


def test_a_compression_level_without_its_compressor_is_said_unused() -> None:
    """Levels given for a compressor not in use were ignored without a word (exploratory
    test, 2026-12-05); Dask's auto never picks zstd."""
    said = "distributed.compression_level not used: it is zstd's, and distributed.compression is"
    assert f"{said} auto" in plan("distributed.compression_level=9").notes
    assert (
        f"{said} lz4"
        in plan("distributed.compression_level=9", "distributed.compression=lz4").notes
    )
    zstd = plan("distributed.compression_level=9", "distributed.compression=zstd").notes
    assert not any("compression_level" in n for n in zstd)
    # the default level is nobody's choice, also written out (config init's starter file)
    assert not any("level" in n for n in plan("distributed.compression_level=3").notes)
    assert (
        "storage.level not used: storage.codec is none"
        in plan("storage.level=5", "storage.codec=none").notes
    )
    assert not any("storage.level" in n for n in plan("storage.level=5").notes)


def test_tls_files_under_another_transport_are_said_unused() -> None:
    # tls files are checked only for tls, so one that went missing would pass unseen
    p = plan("distributed.tls.ca_file=/nope/ca.pem", "distributed.tls.key=/nope/key.pem")
    assert (
        "distributed.tls.ca_file, distributed.tls.key not used: "
        "distributed.communication_backend is tcp, not tls"
    ) in p.notes
    assert not any("not used" in n for n in plan().notes)


# ---- cuda -------------------------------------------------------------------------------------


def test_cuda_kwargs_are_local_cuda_cluster_arguments() -> None:
    p = plan(
        "gpu.devices=[0,2]",
        "gpu.stream_count=3",
        "gpu.unified_memory=true",
        "memory.global_pool=16GiB",
        hw=make_hardware(gpus=4),
    )
    assert p.backend == "cuda" and p.cluster_class == "dask_cuda.LocalCUDACluster"
    assert set(p.cluster_kwargs) <= set(LOCAL_CUDA_CLUSTER_PARAMS) | LOCAL_CLUSTER_PARAMS
    kw = p.cluster_kwargs
    assert kw["CUDA_VISIBLE_DEVICES"] == [0, 2] and kw["n_workers"] == 2
    assert kw["threads_per_worker"] == 3
    assert kw["rmm_managed_memory"] is True and kw["rmm_pool_size"] == 16 * 2**30
    assert kw["memory_limit"] == "auto"  # the global pool is the RMM pool here
    assert p.worker_env["CUPY_CUDA_PER_THREAD_DEFAULT_STREAM"] == 1
    assert p.layout["processes"] == 2
    # said as it is: nothing stages chunks on the device (the note had claimed the runner did)
    [prefetch] = [n for n in p.all_notes if n.startswith("gpu.async_prefetch")]
    assert prefetch.startswith("gpu.async_prefetch: no effect yet: ")
    # its default (on) is a note; said at submit only when the user turned it on
    assert prefetch in p.notes
    asked = plan("gpu.devices=[0]", "gpu.async_prefetch=true", hw=make_hardware(gpus=1))
    assert any(n.startswith("gpu.async_prefetch: no effect yet") for n in asked.unapplied)
    assert not any("async_prefetch" in n for n in plan("gpu.async_prefetch=false").all_notes)


def test_cuda_all_devices_and_nvlink() -> None:
    p = plan(
        "gpu.devices=all",
        "gpu.peer_access=true",
        "distributed.communication_backend=ucx",
        "distributed.rdma=true",
        hw=make_hardware(gpus=8),
    )
    kw = p.cluster_kwargs
    assert kw["CUDA_VISIBLE_DEVICES"] == list(range(8))
    assert kw["protocol"] == "ucx" and kw["enable_tcp_over_ucx"] is True
    assert kw["enable_nvlink"] is True and kw["enable_infiniband"] is True
    assert kw["enable_rdmacm"] is True


def test_cuda_nccl_alias_turns_nvlink_on() -> None:
    """The seed's ``nccl`` names are UCX with NVLink, as the plan's note says: on GPUs that is
    ``enable_nvlink`` for LocalCUDACluster, not only the ``distributed-ucxx`` switch."""
    for alias in ("nccl", "nccl-style"):
        sets = ("gpu.devices=all", f"distributed.communication_backend={alias}")
        p = plan(*sets, hw=make_hardware(gpus=2))
        kw = p.cluster_kwargs
        assert p.backend == "cuda" and kw["protocol"] == "ucx", alias
        assert kw["enable_nvlink"] is True and kw["enable_tcp_over_ucx"] is True, alias
        assert p.dask_config["distributed-ucxx.nvlink"] is True, alias
        assert any("with NVLink (enable_nvlink)" in n for n in p.notes), alias
    plain = plan(
        "gpu.devices=all", "distributed.communication_backend=ucx", hw=make_hardware(gpus=2)
    )
    assert plain.cluster_kwargs["enable_nvlink"] is False


def test_cuda_plan_without_gpu_or_dask_cuda() -> None:
    # a plan for a GPU machine, made here: the machine problems are warnings, not errors
    p = plan(
        path=ROOT / "configs/workstation-gpu.config",
        backend="cuda",
        hw=make_hardware(gpus=0, packages=()),
    )
    assert p.cluster_kwargs["CUDA_VISIBLE_DEVICES"] is None  # all GPUs of that machine
    assert any("needs an NVIDIA GPU" in w for w in p.warnings)
    assert any("needs dask-cuda" in w for w in p.warnings)


def test_a_gpu_config_without_a_gpu_keeps_the_rmm_pool_off_the_cpu_workers() -> None:
    """``memory.global_pool`` is the RMM pool of a GPU worker: where a GPU config falls back
    to CPU workers it became their host budget, 2 x 12 GiB from the example's 24 GiB pool on
    any machine (more than a 16 GB one has), with no word (exploratory test, 2026-12-05)."""
    hw = make_hardware(cores=2, gpus=0, memory=16 * 10**9)
    p = plan(path=ROOT / "configs/workstation-gpu.config", hw=hw)
    assert p.backend == "local" and p.layout["memory_limit"] == "auto"
    assert p.cluster_kwargs["memory_limit"] == "auto"
    assert p.unapplied[:2] == [
        "gpu.devices is set but no GPU was found: using CPU workers",
        "memory.global_pool: the RMM pool of each GPU worker, not applied to the CPU workers "
        "(their budget: memory.per_thread_pool_size, or Dask's auto)",
    ]
    # without GPUs asked for, the pool is the CPU workers' budget
    p = plan("memory.global_pool=8GB", hw=hw)
    assert p.cluster_kwargs["memory_limit"] == 4 * 10**9
    assert not any("global_pool" in u for u in p.unapplied)


def test_cuda_leaves_pinning_to_dask_cuda_as_its_note_says() -> None:
    """Core lists had been preloaded on top of dask-cuda's own pinning while the note said the
    setting was not applied."""
    p = plan("gpu.devices=[0,1]", "parallel.thread_affinity=[[0],[1]]", hw=make_hardware(gpus=2))
    assert p.backend == "cuda" and p.layout["affinity"] is None
    assert AFFINITY_ENV not in p.worker_env
    assert AFFINITY_PRELOAD not in p.dask_config["distributed.worker.preload"]
    assert any(n.startswith("parallel.thread_affinity: dask-cuda pins") for n in p.unapplied)


def test_cuda_says_which_layout_keys_it_does_not_apply() -> None:
    gpus = make_hardware(gpus=2)
    p = plan("gpu.devices=[0,1]", "parallel.thread_pool_size=8", "parallel.processes=4", hw=gpus)
    assert p.cluster_kwargs["threads_per_worker"] == 2 and p.cluster_kwargs["n_workers"] == 2
    assert (
        "parallel.thread_pool_size and parallel.processes not applied: a CUDA cluster runs one "
        "worker per GPU with gpu.stream_count threads"
    ) in p.unapplied
    assert not any("not applied: a CUDA" in n for n in plan("gpu.devices=[0]", hw=gpus).all_notes)
    # each worker gets a pool of rmm_pool_size: the global pool is not split between them
    pooled = plan("gpu.devices=[0,1]", "memory.global_pool=16GiB", hw=gpus)
    assert pooled.cluster_kwargs["rmm_pool_size"] == 16 * 2**30
    assert any(
        n.startswith("memory.global_pool: the RMM pool of each GPU") for n in pooled.unapplied
    )


@pytest.mark.gpu
def test_cuda_signature_matches_dask_cuda_when_installed() -> None:
    dask_cuda = pytest.importorskip("dask_cuda", reason="dask-cuda not importable here")
    real = params(dask_cuda.LocalCUDACluster.__init__)
    assert set(LOCAL_CUDA_CLUSTER_PARAMS) <= real


# ---- ssh --------------------------------------------------------------------------------------

NODES = (
    "distributed.nodes=[{host: 10.0.0.1, resources: {cpus: 2}},"
    " {host: 10.0.0.2, ssh_port: 2222, user: bob, python: /opt/py/bin/python,"
    "  scheduler: true, resources: {cpus: 8, memory: 16GiB, gpus: 2}}]"
)


def test_ssh_spec_has_per_node_options() -> None:
    p = plan(NODES)
    assert p.backend == "ssh" and p.cluster_class == "distributed.SpecCluster"
    sched = p.cluster_kwargs["scheduler"]
    assert sched["cls"] == "openclaw_dask.runtime.ssh_process.Scheduler"
    assert sched["options"]["address"] == "10.0.0.2"  # the node marked scheduler
    assert set(sched["options"]["kwargs"]) <= SCHEDULER_PARAMS
    workers = p.cluster_kwargs["workers"]
    a, b = workers["10.0.0.1-22"]["options"], workers["10.0.0.2-2222"]["options"]
    assert a["kwargs"]["nthreads"] == 2 and a["kwargs"]["memory_limit"] == "auto"
    assert "resources" not in a["kwargs"]
    assert b["kwargs"]["nthreads"] == 8 and b["kwargs"]["memory_limit"] == 16 * 2**30
    assert b["kwargs"]["resources"] == {"GPU": 2}
    assert b["kwargs"]["host"] == "10.0.0.2"  # binds to the node's own address
    assert b["connect_options"] == {"port": 2222, "username": "bob"}
    assert b["remote_python"] == "/opt/py/bin/python"
    # each node starts its workers with its own python, not the scheduler node's
    nodes = load_config(None, [NODES], use_search_path=False)["distributed.nodes"]
    assert a["remote_python"] == nodes[0]["python"] != b["remote_python"]
    for spec in workers.values():
        assert spec["cls"] == "openclaw_dask.runtime.ssh_process.Worker"
        assert set(spec["options"]["kwargs"]) - {"n_workers"} <= NANNY_PARAMS
    assert [n["threads"] for n in p.layout["nodes"]] == [2, 8]


def test_ssh_host_keys_and_processes() -> None:
    insecure = plan(NODES, "distributed.ssh.insecure_skip_host_key_check=true")
    for spec in insecure.cluster_kwargs["workers"].values():
        assert spec["options"]["connect_options"]["known_hosts"] is None
    two = plan(NODES, "parallel.processes=2")
    # one spec per process, each with its own name (ssh.Worker's n_workers would share one)
    workers = two.cluster_kwargs["workers"]
    assert list(workers) == [f"{h}-{i}" for h in ("10.0.0.1-22", "10.0.0.2-2222") for i in (0, 1)]
    kw = workers["10.0.0.2-2222-1"]["options"]["kwargs"]
    assert kw["name"] == "10.0.0.2-2222-1" and "n_workers" not in kw
    assert kw["nthreads"] == 4 and kw["memory_limit"] == 8 * 2**30
    same_host = plan(
        "distributed.nodes=[{host: 10.0.0.1, port: 9000}, {host: 10.0.0.1, port: 9001}]"
    )
    assert list(same_host.cluster_kwargs["workers"]) == ["10.0.0.1-22", "10.0.0.1-22-node1"]
    # remote library paths are unknown here: the allocator is preloaded by soname
    assert plan(NODES, "memory.allocator=tcmalloc").worker_env["LD_PRELOAD"] == "libtcmalloc.so.4"


def test_ssh_says_what_its_nodes_do_not_apply() -> None:
    """Pinning and the memory budgets had been dropped from an SSH plan without a word."""
    assert not plan(NODES).unapplied
    for key, value in (
        ("parallel.thread_affinity", "compact"),
        ("memory.per_thread_pool_size", "1GiB"),
        ("memory.global_pool", "8GiB"),
    ):
        p = plan(NODES, f"{key}={value}")
        workers = p.cluster_kwargs["workers"]
        assert workers["10.0.0.1-22"]["options"]["kwargs"]["memory_limit"] == "auto"
        assert AFFINITY_ENV not in p.worker_env
        assert any(n.startswith(f"{key} not applied on ssh nodes: ") for n in p.unapplied), key
        assert "not ssh" in KEYS_BY_PATH[key].doc  # and the key's doc says so
    # a node without resources.cpus gets Dask's default: one thread per logical core
    bare = "distributed.nodes=[{host: 10.0.0.1}]"
    physical = plan(bare, "parallel.thread_pool_size=physical")
    assert "nthreads" not in physical.cluster_kwargs["workers"]["10.0.0.1-22"]["options"]["kwargs"]
    assert any(
        n.startswith("parallel.thread_pool_size: physical is not known") for n in physical.unapplied
    )
    counted = plan(NODES, "parallel.thread_pool_size=physical")  # every node says its cpus
    assert not any("physical" in n for n in counted.all_notes)
    # each note says what it is about: pinning alone had also spoken of resources.memory
    [note] = plan(NODES, "parallel.thread_affinity=compact").unapplied
    assert note == "parallel.thread_affinity not applied on ssh nodes: workers are not pinned"
    # a thread count where nodes give resources.cpus had been dropped there unsaid
    [note] = plan(NODES, "parallel.thread_pool_size=4").unapplied
    assert note == (
        "parallel.thread_pool_size not applied on ssh nodes: a node's resources.cpus is its "
        "worker threads"
    )
    mixed = "distributed.nodes=[{host: 10.0.0.1}, {host: 10.0.0.2, resources: {cpus: 8}}]"
    p = plan(mixed, "parallel.thread_pool_size=4")
    assert p.unapplied == [
        "parallel.thread_pool_size not applied on 10.0.0.2: a node's resources.cpus is its "
        "worker threads"
    ]
    assert p.cluster_kwargs["workers"]["10.0.0.1-22"]["options"]["kwargs"]["nthreads"] == 4
    assert not plan(bare, "parallel.thread_pool_size=4").unapplied
    assert "(ssh: 1 per node)" in KEYS_BY_PATH["parallel.processes"].doc


def test_the_ssh_plan_names_the_scheduler_s_node_and_its_ssh_port_as_such() -> None:
    """ "scheduler on host:2222" read as the scheduler's address (exploratory test, 2026-12-05)."""
    assert "scheduler on 10.0.0.2 (ssh port 2222); 2 worker process(es) on 2 node(s)" in (
        plan(NODES).notes
    )


def test_ssh_scheduler_binds_to_the_interface_too() -> None:
    """``cluster.interface`` had reached the workers only; the scheduler bound to its host."""
    p = plan(NODES, "cluster.interface=lo", "cluster.dashboard_address=null")
    kwargs = p.cluster_kwargs["scheduler"]["options"]["kwargs"]
    assert kwargs["interface"] == "lo" and "host" not in kwargs
    assert set(kwargs) <= SCHEDULER_PARAMS
    for spec in p.cluster_kwargs["workers"].values():
        assert spec["options"]["kwargs"]["interface"] == "lo"
    # what a node runs (dask_spec makes a distributed.Scheduler of these keywords) listens there
    own = {k: v for k, v in kwargs.items() if not k.startswith("preload")}  # hangup: ssh only

    async def address() -> str:
        async with distributed.Scheduler(**own) as scheduler:
            return scheduler.address

    assert asyncio.run(address()).startswith("tcp://127.0.0.1:")


# ---- mpi --------------------------------------------------------------------------------------


def test_mpi_kwargs_and_command() -> None:
    dask_mpi = pytest.importorskip("dask_mpi")
    p = plan(
        "cluster.backend=mpi",
        "parallel.processes=2",
        "memory.allocator=jemalloc",
        hw=make_hardware(cores=4),
    )
    assert p.cluster_class == "dask_mpi.initialize"
    assert set(p.cluster_kwargs) <= params(dask_mpi.initialize)
    assert p.cluster_kwargs["nthreads"] == 2
    cmd = p.launch_command
    assert cmd[:5] == ["mpirun", "-np", "4", "--bind-to", "none"]
    assert "LD_PRELOAD=/usr/lib/libjemalloc.so" in cmd
    assert cmd[-2:] == ["-m", "openclaw_dask.cli.mpi_entry"]
    assert "--oversubscribe" not in cmd
    assert "4 ranks: rank 0 scheduler, rank 1 client (the workflow), ranks 2-3 workers" in p.notes
    one = plan("cluster.backend=mpi", "parallel.processes=1", hw=make_hardware(cores=4))
    assert "3 ranks: rank 0 scheduler, rank 1 client (the workflow), rank 2 the worker" in one.notes
    assert (
        "--oversubscribe"
        in plan(
            "cluster.backend=mpi", "parallel.processes=4", hw=make_hardware(cores=4)
        ).launch_command
    )


def test_mpi_says_terminate_has_no_nanny_to_act() -> None:
    """Worker ranks run without a nanny, and only a nanny acts on the terminate fraction."""
    p = plan("cluster.backend=mpi", "parallel.processes=2", hw=make_hardware(cores=4))
    assert p.cluster_kwargs["nanny"] is False
    assert any(n.startswith("memory.spill.terminate: no effect under mpi") for n in p.notes)
    assert not p.unapplied  # Dask's default, not the user's: a note, not said at submit
    off = plan("cluster.backend=mpi", "memory.spill.terminate=false", hw=make_hardware(cores=4))
    assert not any("terminate" in n for n in off.all_notes)
    asked = plan("cluster.backend=mpi", "memory.spill.terminate=0.9", hw=make_hardware(cores=4))
    assert any(n.startswith("memory.spill.terminate: no effect") for n in asked.unapplied)
    assert "mpi: no nanny" in KEYS_BY_PATH["memory.spill.terminate"].doc
    assert not any("terminate" in n for n in plan().notes)  # local workers have their nanny


# ---- attach, JSON, and the real classes -------------------------------------------------------


def test_attach_plan_starts_nothing() -> None:
    p = plan("cluster.scheduler_address=tcp://10.1.2.3:8786")
    assert p.backend == "attach" and p.cluster_class is None
    assert p.address == "tcp://10.1.2.3:8786"


@pytest.mark.parametrize("backend", ["local", "cuda", "ssh", "mpi"])
def test_plans_are_json_and_name_real_code(backend: str) -> None:
    p = plan(
        NODES if backend == "ssh" else "memory.allocator=tcmalloc",
        "parallel.thread_affinity=compact",
        backend=backend,
        hw=make_hardware(gpus=1),
    )
    assert json.loads(p.to_json()) == p.to_dict()
    for spec in p.worker_plugins:
        plugin = import_term(spec["class"])(**spec["kwargs"])  # validates its arguments
        assert isinstance(plugin, distributed.WorkerPlugin)
    for module in p.dask_config.get("distributed.worker.preload", []):
        assert callable(import_term(module + ".dask_setup"))
    if p.launch_command:
        import_term(p.launch_command[-1] + ".main")


def test_real_cluster_objects_accept_the_plans() -> None:
    """LocalCluster and SpecCluster (ssh) built from plans, without starting them."""

    async def build() -> list[str]:
        made = []
        for p in (plan(), plan(NODES, "memory.allocator=jemalloc")):
            cluster = cluster_class(p)(**materialise_kwargs(p), asynchronous=True)
            made.append(type(cluster).__name__)
            assert len(cluster.worker_spec) == (p.layout.get("processes") or 2)
            await cluster.close()
        return made

    assert asyncio.run(build()) == ["LocalCluster", "SpecCluster"]


@pytest.mark.parametrize(
    ("backend", "sets"), [("local", []), ("mpi", ["cluster.backend=mpi"]), ("ssh", [NODES])]
)
def test_every_backend_quiets_dask_monitors(backend: str, sets: list[str]) -> None:
    p = plan(*sets)
    assert p.backend == backend
    assert {k: p.dask_config[k] for k in QUIET_MONITORS} == QUIET_MONITORS
    for key, value in QUIET_MONITORS.items():  # slower than Dask's own defaults
        assert parse_timedelta(value) > parse_timedelta(dask.config.get(key)), key


def test_deterministic_mode_checks_that_every_worker_computes_alike() -> None:
    """The numerics check's expected kind is the workers' most common one (filled in when it
    is registered, tests/integration/test_runtime.py runs it); without the mode no check."""
    check = {"class": "openclaw_dask.runtime.plugins.NumericsCheck", "kwargs": {}}
    assert check in plan("parallel.deterministic_mode=true").worker_plugins
    assert check not in plan().worker_plugins
    zen = {"cpu": "znver4", "vector": "avx avx2", "numpy": "2.3.5", "numba": "0.62.1"}
    generic = {**zen, "cpu": "generic"}
    assert common_kind({}) is None
    assert common_kind({"tcp://b:1": zen, "tcp://a:1": generic, "tcp://c:1": zen}) == zen
    assert common_kind({"tcp://b:1": zen, "tcp://a:1": generic}) == generic  # tie: first address
    assert NumericsCheck(zen).expected == zen
    with pytest.raises(TypeError, match="numerics_kind"):
        NumericsCheck({"cpu": "znver4"})
    kind = numerics_kind()  # this process: a real answer, in the same shape
    assert set(kind) == set(zen) and kind["cpu"] and kind["numpy"] == np.__version__


def test_pinning_that_wraps_onto_shared_cores_is_said() -> None:
    """4 threads in 2 workers on 2 cores pin to [[0, 1], [0, 1]], 3 workers of one thread to
    [[0], [1], [0]]: the plan had said nothing, while a core list giving a core twice is
    refused."""
    two_cores = make_hardware(cores=2)
    shared = plan(
        "parallel.thread_affinity=compact",
        "parallel.processes=2",
        "parallel.thread_pool_size=4",
        hw=two_cores,
    )
    assert shared.layout["affinity"] == [[0, 1], [0, 1]]
    assert (
        "parallel.thread_affinity compact: 4 worker threads on 2 core(s), so workers share "
        "cores ([[0, 1], [0, 1]]): each stays on its cores, which are not its own"
    ) in shared.notes
    odd = plan("parallel.thread_affinity=scatter", "parallel.processes=3",
               "parallel.thread_pool_size=3", hw=two_cores)  # fmt: skip
    assert odd.layout["affinity"] == [[0], [1], [0]]
    assert any(n.startswith("parallel.thread_affinity scatter: 3 worker") for n in odd.notes)
    own = plan("parallel.thread_affinity=compact", "parallel.processes=2", hw=two_cores)
    assert own.layout["affinity"] == [[0], [1]]
    assert not any(n.startswith("parallel.thread_affinity") for n in own.notes)
    mpi = plan("parallel.thread_affinity=compact", "parallel.processes=2",
               "parallel.thread_pool_size=4", hw=two_cores, backend="mpi")  # fmt: skip
    assert any(n.startswith("parallel.thread_affinity compact: 4 worker") for n in mpi.notes)
