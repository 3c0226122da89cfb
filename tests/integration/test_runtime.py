"""Real LocalClusters from plans; the truth is read back from each worker with Client.run."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from dask.utils import parse_timedelta
from distributed import get_worker

from openclaw_dask.config import ConfigError, detect_hardware, load_config
from openclaw_dask.runtime import inspect_workers, memory_compact, refused_workers, start_cluster
from openclaw_dask.runtime.cluster import cluster_gone, verify_cluster
from openclaw_dask.runtime.plugins import numerics_kind
from openclaw_dask.translate import plan_cluster
from openclaw_dask.translate.plan import QUIET_MONITORS

BASE = ["cluster.dashboard_address=127.0.0.1:0"]


def cluster(*sets: str, **kw: Any) -> Any:
    return start_cluster(overrides=[*BASE, *sets], **kw)


def task_thread_cores() -> tuple[str, list[int]]:
    """Runs as a task: the cores of the task thread itself, and its worker's name."""
    return str(get_worker().name), sorted(os.sched_getaffinity(0))


def pinned(client: Any) -> dict[str, list[int]]:
    """Worker name -> cores, checked for every thread and for task threads."""
    facts = inspect_workers(client)
    by_name = {}
    for f in facts.values():
        assert f["threads_pinned_alike"], f
        by_name[f["name"]] = f["affinity"]
    futures = [client.submit(task_thread_cores, pure=False, workers=[a]) for a in facts]
    for name, cores in client.gather(futures):
        assert by_name[name] == cores, "task threads must carry the worker's pinning"
    return by_name


@pytest.mark.parametrize(
    ("sets", "expected"),
    [
        (["parallel.thread_affinity=compact", "parallel.processes=2"], {"0": [0], "1": [1]}),
        (["parallel.thread_affinity=scatter", "parallel.processes=2"], {"0": [0], "1": [1]}),
        (["parallel.thread_affinity=[[1],[0]]", "parallel.processes=2"], {"0": [1], "1": [0]}),
        (["parallel.thread_affinity=compact", "parallel.processes=1"], {"0": [0, 1]}),
        (
            ["parallel.thread_affinity=[1]", "parallel.processes=1", "parallel.thread_pool_size=1"],
            {"0": [1]},
        ),
    ],
    ids=["compact", "scatter", "explicit", "compact-one-worker", "explicit-one-core"],
)
def test_affinity_is_in_force_in_every_thread(sets: list[str], expected: dict[str, Any]) -> None:
    if len(detect_hardware().usable_cores) < 2:
        pytest.fail("this test needs 2 usable cores")
    with cluster(*sets) as client:
        assert pinned(client) == expected


def test_a_site_preload_in_the_dask_section_leaves_the_pinning_in_force(tmp_path: Path) -> None:
    """A raw ``dask: distributed.worker.preload`` (a site's monitoring, say) had replaced the
    pinning preload: the cluster was refused ("runs on cores [0, 1], planned [0]")."""
    if len(detect_hardware().usable_cores) < 2:
        pytest.fail("this test needs 2 usable cores")
    site = tmp_path / "site_preload.py"
    site.write_text("def dask_setup(worker):\n    worker.site_preloaded = True\n")
    sets = ["parallel.thread_affinity=compact", "parallel.processes=2"]
    with cluster(*sets, f'dask.distributed.worker.preload=["{site}"]') as client:
        assert pinned(client) == {"0": [0], "1": [1]}
        ran = client.run(lambda dask_worker: getattr(dask_worker, "site_preloaded", False))
        assert list(ran.values()) == [True, True]


def test_a_thread_pinned_unlike_its_worker_is_refused_though_the_cores_add_up() -> None:
    """The check reads every thread's mask: one thread on core 0 of a worker planned on
    [0, 1] leaves the union of the masks as planned, and is still refused."""
    if len(detect_hardware().usable_cores) < 2:
        pytest.fail("this test needs 2 usable cores")
    sets = [*BASE, "parallel.thread_affinity=compact", "parallel.processes=1"]
    sets.append("parallel.thread_pool_size=2")
    config = load_config(None, sets)
    plan = plan_cluster(config)
    assert plan.layout["affinity"] == [[0, 1]]
    with start_cluster(config) as client:
        assert verify_cluster(client, plan, config) == []
        # client.run calls this in the worker's event-loop thread: only that thread moves
        client.run(lambda: os.sched_setaffinity(0, [0]))
        [facts] = inspect_workers(client).values()
        assert facts["affinity"] == [0, 1] and not facts["threads_pinned_alike"]
        with pytest.raises(ConfigError, match=r"parallel\.thread_affinity: worker .* planned"):
            verify_cluster(client, plan, config)


def test_unpinned_workers_use_every_core() -> None:
    with cluster("parallel.processes=2") as client:
        usable = sorted(detect_hardware().usable_cores)
        assert set(map(tuple, pinned(client).values())) == {tuple(usable)}


@pytest.mark.parametrize("allocator", ["jemalloc", "tcmalloc"])
def test_allocator_is_loaded_in_workers_not_left_in_client(allocator: str) -> None:
    before = os.environ.get("LD_PRELOAD")
    with cluster(f"memory.allocator={allocator}") as client:
        facts = inspect_workers(client)
        assert {f["allocator"] for f in facts.values()} == {allocator}
        assert os.environ.get("LD_PRELOAD") == before  # the client is not preloaded
        with open("/proc/self/maps") as f:
            assert f"lib{allocator}" not in f.read()
        result = memory_compact(client)  # the allocator's own release call, no crash
        assert {r["allocator"] for r in result.values()} == {allocator}
        assert all(r["rss_after"] > 0 for r in result.values())
        assert client.submit(sum, [1, 2, 3]).result() == 6
    assert os.environ.get("LD_PRELOAD") == before


def test_a_restarted_worker_leaves_nothing_in_the_client_after_the_cluster_closes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A nanny sets its worker's environment in the client again at each restart of the worker
    (``client.restart()``, a worker that died): LD_PRELOAD, the BLAS limits and Dask's own
    PYTHONHASHSEED had stayed in the calling process after the cluster closed, so every program
    a notebook started later ran preloaded."""
    names = ("LD_PRELOAD", "OMP_NUM_THREADS", "PYTHONHASHSEED", "__DASK_PARENT_PID")
    for name in names:
        monkeypatch.delenv(name, raising=False)
    with cluster("memory.allocator=jemalloc", "parallel.processes=1") as client:
        client.restart()
        # the restarted worker still runs preloaded
        assert {f["allocator"] for f in inspect_workers(client).values()} == {"jemalloc"}
    assert {name: os.environ.get(name) for name in names} == dict.fromkeys(names)


def callback_ms(dask_worker: Any = None, dask_scheduler: Any = None) -> dict[str, float]:
    """The periods (ms) a live server's event loop runs its monitors at."""
    server = dask_worker or dask_scheduler
    names = ("tick", "monitor", "profile")
    return {
        n: server.periodic_callbacks[n].callback_time
        for n in names
        if n in server.periodic_callbacks
    }


def test_memory_limit_compression_and_monitor_rates_match_the_plan() -> None:
    with cluster(
        "memory.per_thread_pool_size=1GiB",
        "parallel.processes=2",
        "distributed.compression=zstd",
        "memory.spill.pause=0.85",
    ) as client:
        facts = inspect_workers(client)
        assert [f["memory_limit"] for f in facts.values()] == [2**30, 2**30]
        assert {f["compression"] for f in facts.values()} == {"zstd"}
        pause = client.run(lambda: __import__("dask").config.get("distributed.worker.memory.pause"))
        assert set(pause.values()) == {0.85}
        assert {f["omp_num_threads"] for f in facts.values()} == {"1"}
        # QUIET_MONITORS reach the running loops of workers, nannies and the scheduler
        ms = {k: parse_timedelta(v) * 1000 for k, v in QUIET_MONITORS.items()}
        quiet = {
            "tick": ms["distributed.admin.tick.interval"],
            "monitor": ms["distributed.admin.system-monitor.interval"],
        }
        for periods in client.run(callback_ms).values():
            assert periods == quiet | {"profile": ms["distributed.worker.profile.interval"]}
        for periods in client.run(callback_ms, nanny=True).values():
            assert periods == quiet
        assert client.run_on_scheduler(callback_ms) == quiet


def fragment_and_free(dask_worker: Any) -> int:
    """Allocate ~400 MB in small objects, keep 1 % so the heap cannot shrink from the top."""
    import psutil

    junk = [bytes(1000) for _ in range(400_000)]
    keep = junk[::100]
    del junk
    dask_worker.openclaw_test_keep = keep
    return psutil.Process().memory_info().rss


def test_memory_compact_returns_memory_on_glibc() -> None:
    with cluster("parallel.processes=1") as client:
        rss_freed = client.run(fragment_and_free)
        (result,) = memory_compact(client).values()
        (before,) = rss_freed.values()
        assert result["allocator"] == "system" and result["call"] == "malloc_trim(0)"
        assert result["rss_before"] > 300e6, "the freed memory should still be held"
        assert result["rss_after"] < result["rss_before"] - 200e6
        assert before >= result["rss_before"] - 50e6
    # the client kept past its block: one line saying so, not Dask's "IOLoop is closed"
    with pytest.raises(ValueError) as info:
        memory_compact(client)
    assert str(info.value) == (
        "memory_compact: client must be connected, this one is closed (call it inside the "
        "`with start_cluster(...) as client:` block)"
    )


def kernel_page_faults() -> float:
    """Runs as a task: minor page faults per step of the climate kernel at 1° (warmed up)."""
    import resource

    import numpy as np

    from openclaw_dask.workflows.climate import EBMParams, LatLonGrid, run_reference

    grid = LatLonGrid(1.0)
    start = np.full(grid.shape, 10.0)
    # warmed up twice: the first run in a fresh worker still grows its heap (15 faults a step
    # in a run measured after one 2-step warm-up, 0 in the runs after it)
    run_reference(EBMParams(), grid, 2, start)
    run_reference(EBMParams(), grid, 2, start)
    before = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt
    run_reference(EBMParams(), grid, 20, start)
    return (resource.getrusage(resource.RUSAGE_THREAD).ru_minflt - before) / 20


def test_system_malloc_keeps_a_loop_of_temporaries_off_the_page_fault_path() -> None:
    """Dask's 64 KiB trim threshold alone made the heap shrink and grow every step (~330 page
    faults per step at 1°, the kernel 2x slower); the plan's top pad keeps the slack."""
    with cluster("parallel.processes=1") as client:
        assert client.submit(kernel_page_faults, pure=False).result() < 10


def stranger(address: str, *args: str, quiet: bool = False, **env: str) -> subprocess.Popen[str]:
    """A ``dask worker`` started by hand against ``address``, with ``env`` added; its output
    is read by :func:`refusal`, or dropped (``quiet``) where nothing reads it."""
    dask_cli = Path(sys.executable).with_name("dask")
    return subprocess.Popen(
        [str(dask_cli), "worker", address, "--nthreads", "1", "--name", "stranger", *args],
        env={**os.environ, **env},
        stdout=subprocess.DEVNULL if quiet else subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def refusal(client: Any, proc: subprocess.Popen[str]) -> str:
    """The one refusal the scheduler records, once the refused worker has gone away."""
    deadline = time.monotonic() + 60
    refused: dict[str, str] = {}
    while time.monotonic() < deadline and not refused:
        refused = refused_workers(client)
        time.sleep(0.3)
    (reason,) = refused.values()
    assert proc.wait(timeout=60) is not None  # the worker and its nanny went away
    assert "refused" in proc.stdout.read()  # type: ignore[union-attr]
    return reason


def test_mismatched_worker_is_refused_and_cluster_keeps_working(tmp_path: Path) -> None:
    with cluster("parallel.processes=1") as client:
        address = client.scheduler.address
        preload = ("--preload", "openclaw_dask.runtime.preload", "--no-dashboard")
        proc = stranger(address, *preload, OPENCLAW_DISTRIBUTED__SYNC_INTERVAL="5")
        try:
            reason = refusal(client, proc)
            assert "distributed.sync_interval: worker 5, client 5000" in reason
            # `cluster status` says it under its table (mutation audit: its refused lines
            # dropped went unseen)
            status = subprocess.run(
                [sys.executable, "-m", "openclaw_dask", "cluster", "status", "--address", address],
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert status.returncode == 0, status.stderr
            assert status.stderr.startswith("refused tcp://") and f": {reason}\n" in status.stderr
        finally:
            proc.kill()
        assert len(client.scheduler_info()["workers"]) == 1
        assert client.submit(sum, [4, 5]).result() == 9


def test_deterministic_mode_refuses_a_worker_that_computes_unlike_the_cluster() -> None:
    """Same config, another CPU target for numba's kernels: NUMBA_CPU_NAME=generic changes
    the climate model's bits (2°, 200 steps, on the development VM), so in deterministic
    mode such a worker is refused by what differs; without the mode it is welcome."""
    with cluster("parallel.processes=1", "parallel.deterministic_mode=true") as client:
        (kind,) = client.run(numerics_kind).values()
        proc = stranger(client.scheduler.address, "--no-dashboard", NUMBA_CPU_NAME="generic")
        try:
            reason = refusal(client, proc)
        finally:
            proc.kill()
        assert f"cpu generic (cluster: {kind['cpu']})" in reason, reason
        assert "parallel.deterministic_mode: false" in reason
        assert client.submit(sum, [4, 5]).result() == 9
    with cluster("parallel.processes=1") as client:
        proc = stranger(
            client.scheduler.address, "--no-dashboard", quiet=True, NUMBA_CPU_NAME="generic"
        )
        try:
            client.wait_for_workers(2, timeout=60)
            time.sleep(1)
            assert refused_workers(client) == {}
        finally:
            proc.terminate()
            proc.wait(timeout=30)


def test_matching_hand_started_worker_is_accepted() -> None:
    with cluster("parallel.processes=1") as client:
        preload = ("--preload", "openclaw_dask.runtime.preload", "--no-dashboard")
        proc = stranger(client.scheduler.address, *preload, quiet=True)
        try:
            client.wait_for_workers(2, timeout=60)
            time.sleep(1)
            assert refused_workers(client) == {}
            hashes = {f["config_hash"] for f in inspect_workers(client).values()}
            assert len(hashes) == 1

            def closing_heartbeat_quieted() -> bool:  # (nested: sent by value, not by name)
                from openclaw_dask.runtime import terminal

                filters = logging.getLogger("distributed.worker").filters
                return terminal._not_a_closing_workers_heartbeat in filters

            # the preload every SSH worker runs also drops a closing worker's lost heartbeat
            quiet = client.run(closing_heartbeat_quieted)
            assert sorted(quiet.values()) == [False, True]  # the cluster's own worker: no preload
        finally:
            proc.terminate()
            proc.wait(timeout=30)


def test_allocator_that_does_not_load_is_refused_and_nothing_is_left() -> None:
    from dataclasses import replace

    hw = replace(detect_hardware(), allocators={"jemalloc": "/nonexistent/libjemalloc.so.2"})
    with pytest.raises(ConfigError) as info, cluster("memory.allocator=jemalloc", hardware=hw):
        pass
    message = str(info.value)
    assert "memory.allocator" in message and "runs with system" in message
    assert os.environ.get("LD_PRELOAD") is None


def test_clock_skew_beyond_tolerance() -> None:
    skew = r"distributed\.clock_skew_tolerance: worker .* ms off"
    with pytest.raises(ConfigError, match=skew), cluster("distributed.clock_skew_tolerance=1e-9"):
        pass
    with cluster(
        "distributed.clock_skew_tolerance=1e-9",
        "distributed.clock_skew_action=warn",
        "parallel.processes=1",
    ) as client:
        assert client.submit(sum, [1]).result() == 1


def test_clock_skew_is_compared_in_seconds_both_ways() -> None:
    """A worker 300 ms off the scheduler (either way) is refused at the default 100 ms; 30 ms
    is within it. The offsets are given to the check (no test can skew a clock here); the rest
    of each worker's facts is read from the running worker."""
    config = load_config(None, [*BASE, "parallel.processes=1"])
    plan = plan_cluster(config)
    assert config["distributed.clock_skew_tolerance"] == 0.1
    with start_cluster(config) as client:
        facts = inspect_workers(client)
        for offset in (0.3, -0.3):
            off = {a: {**f, "clock_offset": offset} for a, f in facts.items()}
            said = r"worker .* clock is 300 ms off the scheduler's \(tolerance 100 ms\)"
            with pytest.raises(ConfigError, match=said):
                verify_cluster(client, plan, config, off)
        near = {a: {**f, "clock_offset": 0.03} for a, f in facts.items()}
        assert verify_cluster(client, plan, config, near) == []
        warn = config.with_values(distributed__clock_skew_action="warn")
        off = {a: {**f, "clock_offset": 0.3} for a, f in facts.items()}
        [warning] = verify_cluster(client, plan, warn, off)
        assert "300 ms off" in warning


def test_unreachable_scheduler_is_bad_input() -> None:
    """Nothing listens there: said so after one retrying window (10 s), where the client's own
    retries then took as long again (20 s)."""
    t0 = time.monotonic()
    unreachable = (
        r"no scheduler answers at tcp://127\.0\.0\.1:1: connection refused for 10 s "
        r"\(nothing listens on port 1\)"
    )
    with pytest.raises(ConfigError, match=unreachable), start_cluster(address="tcp://127.0.0.1:1"):
        pass
    assert time.monotonic() - t0 < 16


def test_attach_to_running_cluster_checks_the_config() -> None:
    with cluster("parallel.processes=1") as client:
        address = client.scheduler.address
        with start_cluster(address=address) as other:
            assert other.submit(sum, [2, 2]).result() == 4
        config = load_config(overrides=["distributed.sync_interval=7"])
        other_config = r"started from another openclaw\.config"
        with pytest.raises(ConfigError, match=other_config), start_cluster(config, address=address):
            pass
        assert len(client.scheduler_info()["workers"]) == 1  # nobody was refused for it


def test_a_cluster_whose_workers_all_died_at_once_is_not_called_lost() -> None:
    """Their nannies restart them: the step's own failure is the one to report (it had been
    'the cluster has no workers left', with advice to resume once a cluster runs)."""
    with cluster() as client:
        pids = client.run(os.getpid)
        for pid in pids.values():
            os.kill(pid, 9)
        deadline = time.monotonic() + 30
        while client.nthreads() and time.monotonic() < deadline:  # the scheduler saw them go
            time.sleep(0.01)
        assert not client.nthreads()
        assert cluster_gone(client) is None
        assert client.nthreads()  # restarted ones (the other may still be starting)
        assert set(client.run(os.getpid).values()).isdisjoint(pids.values())


def _where_it_ran() -> str:
    """Runs as a task: the address of its worker (raises on dask's local threads)."""
    return str(get_worker().address)


def test_compute_in_the_block_runs_on_its_cluster_and_a_notebook_s_client_comes_back() -> None:
    """A collection's ``compute()`` inside ``with start_cluster(...)`` ran on dask's local
    threads, or on the notebook's own client, not on the cluster the block had started."""
    import dask
    from distributed import Client, LocalCluster, get_client

    ran_at = dask.delayed(_where_it_ran, pure=False)
    with (
        LocalCluster(n_workers=1, processes=False, dashboard_address=":0") as theirs,
        Client(theirs) as notebook,  # the global default, as in a notebook
    ):
        with cluster("parallel.processes=1") as client:
            assert ran_at().compute() in client.nthreads()
            assert get_client() is client
        assert get_client() is notebook
        assert ran_at().compute() in notebook.nthreads()


def test_a_notebook_s_client_still_says_its_scheduler_is_gone_after_a_cluster_of_ours() -> None:
    """``start_cluster`` dropped the client's "Failed to reconnect to scheduler" (what a run
    reports itself as a lost cluster) for the rest of the process: after one run, a notebook's
    own client whose scheduler went away was never said to be lost."""
    seen: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: seen.append(record.getMessage())  # type: ignore[method-assign]
    logger = logging.getLogger("distributed.client")
    logger.addHandler(handler)
    gave_up = "Failed to reconnect to scheduler after %.2f seconds, closing client"
    try:
        with cluster("parallel.processes=1"):
            logger.error(gave_up, 1.0)  # a run's own lost scheduler: said by the run instead
        logger.error(gave_up, 2.0)  # a notebook's client, after the run
    finally:
        logger.removeHandler(handler)
    assert seen == ["Failed to reconnect to scheduler after 2.00 seconds, closing client"]


def test_an_allocator_the_attached_cluster_s_workers_lack_is_refused_leaving_them_be() -> None:
    """Attached to a plain Dask cluster (a notebook's own LocalCluster) with a config asking for
    an allocator its workers lack, the allocator plugin closed every worker (and its nanny) as
    it refused it, and the attach went on with none; the user's cluster was left empty."""
    from distributed import Client, LocalCluster

    allocator = next(iter(detect_hardware().allocators), None)
    if allocator is None:  # (the config is refused before attaching: nothing to test)
        pytest.skip("neither jemalloc nor tcmalloc is installed")
    with (
        LocalCluster(n_workers=1, threads_per_worker=1, dashboard_address=":0") as theirs,
        Client(theirs) as notebook,
    ):
        with (
            pytest.raises(ConfigError) as info,
            cluster(f"memory.allocator={allocator}", address=theirs.scheduler_address),
        ):
            pass
        assert str(info.value).startswith(
            f"--set: memory.allocator: {allocator} here, but 1 of the running cluster's 1 "
            "workers run with system (tcp://"
        )
        time.sleep(0.5)  # (a refused worker was closed a moment after the refusal)
        assert len(notebook.nthreads()) == 1
