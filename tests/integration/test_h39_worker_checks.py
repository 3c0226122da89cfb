"""Worker checks on real clusters that a mutation audit found unpinned: attaching to workers
that carry no config (a plain ``dask worker``, a scheduler with none yet), a hand-started
worker of a node without a config of its own, compared as built-in defaults, and memory held
only by garbage in reference cycles, which ``memory compact`` returns."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from distributed import Client, LocalCluster
from distributed.diagnostics.plugin import WorkerPlugin

from openclaw_dask.config import detect_hardware
from openclaw_dask.runtime import inspect_workers, memory_compact, start_cluster
from openclaw_dask.runtime.inspect import refusals

BASE = ["cluster.dashboard_address=127.0.0.1:0"]


def hand_started_worker(address: str, home: Path, *options: str) -> subprocess.Popen[bytes]:
    """``dask worker ADDRESS`` with our preload, as a user starts one on a node: no
    ``OPENCLAW_*`` variables, ``home`` as its HOME and folder (no openclaw.config there)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENCLAW_")}
    env["HOME"] = str(home)  # no ~/.config/openclaw/openclaw.config either
    command = [str(Path(sys.executable).with_name("dask")), "worker", address, "--nthreads=1"]
    command += ["--no-dashboard", "--preload", "openclaw_dask.runtime.preload", *options]
    return subprocess.Popen(
        command, env=env, cwd=home, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )


def plain_cluster(workers: int) -> LocalCluster:
    """A cluster started by plain Dask: its workers carry no openclaw config."""
    return LocalCluster(n_workers=workers, threads_per_worker=1, dashboard_address=":0")


def test_workers_that_carry_no_config_are_attached_to_and_adopt_the_client_s() -> None:
    """Mutation audit: workers without a fingerprint refused like workers of another config
    survived (every attach tested went to workers our runtime had started)."""
    with plain_cluster(1) as theirs:
        assert {f["config_hash"] for f in inspect_workers_of(theirs).values()} == {None}
        with start_cluster(overrides=BASE, address=theirs.scheduler_address) as client:
            assert client.submit(sum, [2, 3]).result() == 5
            # the fingerprint plugin gave them this config's (and refused nobody)
            assert len({f["config_hash"] for f in inspect_workers(client).values()} - {None}) == 1
            assert refusals(client) == {}


def test_a_plain_cluster_s_workers_take_each_attaching_config_as_a_label_only() -> None:
    """A notebook's second run with another result-relevant value on its own plain cluster had
    been refused: the workers "were started from another openclaw.config" (the first run's,
    which they had only adopted). Workers openclaw-dask started keep refusing another config."""
    from openclaw_dask.config.errors import ConfigError

    with plain_cluster(1) as theirs:
        address = theirs.scheduler_address
        with start_cluster(overrides=BASE, address=address) as client:
            first = inspect_workers(client)
        with start_cluster(overrides=[*BASE, "distributed.sync_interval=7"], address=address) as c:
            assert c.submit(sum, [2, 3]).result() == 5
            second = inspect_workers(c)
            assert refusals(c) == {}
        assert set(second) == set(first)  # the same workers, none closed
        assert all(f["config_adopted"] for f in [*first.values(), *second.values()])
        [hash_1] = {f["config_hash"] for f in first.values()}
        [hash_2] = {f["config_hash"] for f in second.values()}
        assert hash_1 != hash_2
    # the workers of a cluster openclaw-dask started hold its config: another is refused
    with start_cluster(overrides=[*BASE, "parallel.processes=1"]) as ours:
        address = ours.scheduler.address
        assert not any(f["config_adopted"] for f in inspect_workers(ours).values())
        other = [*BASE, "distributed.sync_interval=7"]
        with pytest.raises(ConfigError, match=r"distributed\.sync_interval"):  # noqa: SIM117
            with start_cluster(overrides=other, address=address):
                pass
        assert ours.submit(sum, [1, 1]).result() == 2


def inspect_workers_of(cluster: LocalCluster) -> dict[str, Any]:
    from distributed import Client

    with Client(cluster, set_as_default=False) as client:
        return inspect_workers(client)


def test_deterministic_mode_attaches_to_a_scheduler_with_no_workers_yet() -> None:
    """The expected numerics are this client's until workers come (mutation audit: without
    that fallback the plugin got none and the attach failed with a TypeError)."""
    with (
        plain_cluster(0) as theirs,
        start_cluster(
            overrides=[*BASE, "parallel.deterministic_mode=true"], address=theirs.scheduler_address
        ) as client,
    ):
        theirs.scale(1)
        client.wait_for_workers(1, timeout=60)
        assert client.submit(sum, [1, 1]).result() == 2
        assert refusals(client) == {}


def wait_for_refusal(client: Any) -> dict[str, tuple[str, str]]:
    """The refusals the scheduler records, once there is one (within a minute)."""
    deadline = time.monotonic() + 60
    found = refusals(client)
    while not found and time.monotonic() < deadline:
        time.sleep(0.2)
        found = refusals(client)
    return found


def test_a_hand_started_worker_of_a_node_without_a_config_is_compared_as_defaults(
    tmp_path: Path,
) -> None:
    """Without ``--openclaw-adopt-unconfigured`` (what only the ssh backend passes) a worker of
    a node with no config of its own is compared as the built-in defaults, and is refused by
    the first differing key in sorted order (mutation audit: adopting regardless, and the last
    key, both survived: the workers tested carried one differing key of their own)."""
    sets = [*BASE, "parallel.processes=1", "storage.level=9", "distributed.sync_interval=7"]
    with start_cluster(overrides=sets, attach_running=False) as client:
        proc = hand_started_worker(client.scheduler.address, tmp_path)
        try:
            [(key, reason)] = wait_for_refusal(client).values()
            assert key == "distributed.sync_interval", (key, reason)
            assert "distributed.sync_interval: worker 5000, client 7" in reason
            assert "storage.level: worker 3, client 9" in reason
            assert proc.wait(timeout=60) is not None
        finally:
            proc.kill()
            proc.wait()


def hold_in_old_cycles(dask_worker: Any) -> int:
    """~300 MB reachable only through reference cycles that an earlier collection moved to
    the oldest generation: what only a full collection frees. The worker's RSS after."""
    import gc

    import psutil

    cycles = []
    for _ in range(300):
        cycle: list[Any] = [bytes(2**20)]
        cycle.append(cycle)
        cycles.append(cycle)
    dask_worker.openclaw_test_cycles = cycles
    gc.collect()  # they survive it: now in the oldest generation
    del dask_worker.openclaw_test_cycles, cycles
    return psutil.Process().memory_info().rss


def test_memory_compact_frees_what_only_reference_cycles_held() -> None:
    """Mutation audit: the garbage collection before the allocator's release dropped survived
    (the memory tested was freed by reference counting as the task ended)."""
    sets = [*BASE, "parallel.processes=1"]
    with start_cluster(overrides=sets, attach_running=False) as client:
        (held,) = client.run(hold_in_old_cycles).values()
        (result,) = memory_compact(client).values()
        assert held > 300e6 and result["rss_before"] > 300e6, (held, result)
        assert result["rss_after"] < result["rss_before"] - 250e6, result


def hold_and_free_in_a_task() -> int:
    """Runs as a task: ~400 MB in small objects, 1 % kept so that the heap cannot shrink from
    the top on its own; the worker's RSS after."""
    import psutil
    from distributed import get_worker

    junk = [bytes(1000) for _ in range(400_000)]
    keep = junk[::100]
    del junk
    get_worker().openclaw_test_keep = keep  # type: ignore[attr-defined]
    return psutil.Process().memory_info().rss


def test_memory_compact_under_tcmalloc_returns_what_a_task_freed() -> None:
    """tcmalloc keeps freed pages until asked (mutation audit: its release call dropped
    survived: the tcmalloc test checked the allocator's name only)."""
    sets = [*BASE, "parallel.processes=1", "memory.allocator=tcmalloc"]
    with start_cluster(overrides=sets, attach_running=False) as client:
        held = client.submit(hold_and_free_in_a_task, pure=False).result()
        (result,) = memory_compact(client).values()
        assert result["call"] == "MallocExtension_ReleaseFreeMemory()"
        assert result["rss_before"] > 300e6 and held > 300e6, (held, result)
        assert result["rss_after"] < result["rss_before"] - 200e6, result


def test_a_dashboard_on_the_port_asked_for_or_any_port_is_not_said_to_be_taken() -> None:
    """Port 0 asks for any free port (mutation audit: the port-0 exemption dropped survived:
    no run checked what it said about a dashboard at :0); another port than the one asked
    for is said, with why."""
    from distributed import Client

    from openclaw_dask.config import load_config
    from openclaw_dask.runtime.cluster import dashboard_link, dashboard_note

    with (
        LocalCluster(n_workers=0, processes=False, dashboard_address="127.0.0.1:0") as cluster,
        Client(cluster, set_as_default=False) as client,
    ):
        # (Dask's own link names the machine's address here, an in-process scheduler's host,
        # where the dashboard, bound to 127.0.0.1, does not listen)
        link = dashboard_link(client)
        assert link.startswith("http://127.0.0.1:"), link
        used = int(link.split("://", 1)[1].split("/", 1)[0].rpartition(":")[2])
        for asked in ("127.0.0.1:0", f"127.0.0.1:{used}"):
            config = load_config(None, [f"cluster.dashboard_address={asked}"], env={})
            assert dashboard_note(link, config) == link, asked
        other = used + 1 if used < 65535 else used - 1
        config = load_config(None, [f"cluster.dashboard_address=127.0.0.1:{other}"], env={})
        said = f"{link} (port {other} was taken: another cluster running?)"
        assert dashboard_note(link, config) == said


def test_the_task_counter_forgets_a_client_that_left_and_keeps_the_others_counts() -> None:
    """Mutation audit: forgetting a departed client dropped (its count kept for the
    scheduler's life), and a second install replacing the first's counter, both survived."""
    import dask
    from distributed import Client

    from openclaw_dask.runtime import counter

    def graph(n: int) -> Any:
        return dask.delayed(sum)([dask.delayed(abs)(-i) for i in range(n)])

    with (
        LocalCluster(n_workers=1, processes=False, dashboard_address=":0") as cluster,
        Client(cluster, set_as_default=False) as first,
    ):
        assert counter.install(first)
        assert first.compute(graph(3)).result() == 3
        said = counter.submitted(first)
        assert said == 4  # three abs and the sum
        with Client(cluster, set_as_default=False) as second:
            assert counter.install(second)  # a second run on the same cluster
            assert second.compute(graph(2)).result() == 1
            assert counter.submitted(first) == said  # kept
            assert counter.submitted(second) == 3
            gone = second.id
        plugin = cluster.scheduler.plugins[counter.NAME]
        deadline = time.monotonic() + 10
        while gone in plugin.submitted and time.monotonic() < deadline:
            time.sleep(0.05)
        assert gone not in plugin.submitted
        assert counter.submitted(first) == said


def test_the_task_counter_counts_what_a_graph_sets_to_run_not_what_it_touches() -> None:
    """distributed hands ``update_graph`` every task a graph reaches, also those in memory (a
    persisted state) and those still running for an earlier graph (the next window); counting
    them gave run.json 339 tasks where the performance report said 286 (audit: 1148 vs 879).
    The count is checked against the scheduler's own log of the tasks it ran."""
    import dask
    from distributed import Event, futures_of

    from openclaw_dask.runtime import counter

    with (
        LocalCluster(n_workers=1, processes=False, dashboard_address=":0") as cluster,
        Client(cluster, set_as_default=False) as client,
    ):
        assert counter.install(client)
        state = client.persist([dask.delayed(abs)(-i) for i in range(3)])
        client.gather(futures_of(state))
        assert counter.submitted(client) == 3
        total = client.compute(dask.delayed(sum)(state))  # its graph reaches the 3 in memory
        assert total.result() == 3
        assert counter.submitted(client) == 4
        release = Event(client=client)
        held = client.submit(release.wait, pure=False)  # still running when ...
        after = client.submit(lambda _: 1, held, pure=False)  # ... a graph needs it
        release.set()
        assert after.result() == 1
        assert counter.submitted(client) == 6
        log = cluster.scheduler.transition_log
        ran = [entry for entry in log if entry[1:3] == ("processing", "memory")]
        assert counter.submitted(client) == len(ran)


def test_a_hand_started_worker_reads_the_config_its_preload_names(tmp_path: Path) -> None:
    """``--openclaw-config FILE`` after the preload (a node whose config is elsewhere):
    mutation audit: the option ignored for the search order survived (no test passed it)."""
    node_config = tmp_path / "node.config"
    node_config.write_text("distributed:\n  sync_interval: 5\n")
    sets = [*BASE, "parallel.processes=1"]
    with start_cluster(overrides=sets, attach_running=False) as client:
        proc = hand_started_worker(
            client.scheduler.address, tmp_path, f"--openclaw-config={node_config}"
        )
        try:
            [(key, reason)] = wait_for_refusal(client).values()
            assert key == "distributed.sync_interval"
            assert "distributed.sync_interval: worker 5, client 5000" in reason
            assert proc.wait(timeout=60) is not None
        finally:
            proc.kill()
            proc.wait()


def test_a_memory_restart_message_names_three_restarts_and_the_workers_own_budget() -> None:
    """The events a nanny logs, read back from a real scheduler: three restarts named, the
    rest counted, and the budget the running workers have, the planned one only when none
    runs (mutation audit: the planned budget preferred, and four named, both survived)."""
    from distributed import Client

    from openclaw_dask.runtime.oom import TOPIC, out_of_memory

    with (
        LocalCluster(
            n_workers=1, processes=False, memory_limit="300MB", dashboard_address=":0"
        ) as cluster,
        Client(cluster, set_as_default=False) as client,
    ):
        since = time.time() - 1
        assert out_of_memory(client, since, planned=10**9) is None
        for i in range(4):
            event = {"worker": f"tcp://10.0.0.{i}:1", "pid": 100 + i, "rss": (500 + i) * 10**6}
            client.log_event(TOPIC, event)
        deadline = time.monotonic() + 10
        while len(client.get_events(TOPIC)) < 4 and time.monotonic() < deadline:
            time.sleep(0.05)
        error = out_of_memory(client, since, planned=10**9)
        assert str(error) == (
            "workers ran out of memory (a 300 MB budget per worker): their nannies restarted "
            "tcp://10.0.0.0:1 at 500 MB, tcp://10.0.0.1:1 at 501 MB, tcp://10.0.0.2:1 at "
            "502 MB and 1 more"
        )
        assert out_of_memory(client, time.time() + 60, planned=10**9) is None


@pytest.mark.parametrize("variable", ["PMI_RANK", "OMPI_COMM_WORLD_RANK"])
def test_local_workers_under_an_mpi_launcher_are_pinned_by_their_names(
    monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    """A local run started by ``srun`` or ``mpirun -np 1`` (a batch script's line): its
    workers inherit the launcher's rank variable and are no ranks. They had all taken the
    core list of rank -2 and the cluster was refused ("runs on cores [0], planned [1]")."""
    if len(detect_hardware().usable_cores) < 2:
        pytest.fail("this test needs 2 usable cores")
    monkeypatch.setenv(variable, "0")
    sets = [*BASE, "parallel.thread_affinity=compact", "parallel.processes=2"]
    with start_cluster(overrides=sets, attach_running=False) as client:
        pinned = {f["name"]: f["affinity"] for f in inspect_workers(client).values()}
        assert pinned == {"0": [0], "1": [1]}


def _plugins_on(scheduler_address: str) -> list[str]:
    """Our worker plugins the scheduler holds (Dask registers its own, ``shuffle``)."""
    with Client(scheduler_address, set_as_default=False) as client:
        names = client.run_on_scheduler(lambda dask_scheduler: [*dask_scheduler.worker_plugins])
    return sorted(n for n in names if n.startswith("openclaw"))


def test_our_worker_checks_leave_a_user_s_cluster_with_the_run() -> None:
    """Left registered on a notebook's own cluster, the config's checks went on refusing the
    workers it added later (a numerics check of a deterministic run closed a worker started
    with other BLAS threads, long after the run). Workers openclaw-dask started keep them."""
    names = ["openclaw-config-fingerprint", "openclaw-numerics-check"]
    with plain_cluster(0) as theirs:
        address = theirs.scheduler_address
        sets = [*BASE, "parallel.deterministic_mode=true"]
        with start_cluster(overrides=sets, address=address) as client:
            assert _plugins_on(address) == names
            theirs.scale(1)
            client.wait_for_workers(1, timeout=60)
            assert client.submit(sum, [1, 1]).result() == 2
        assert _plugins_on(address) == []
        # the cluster goes on as theirs: a worker added now joins and computes
        theirs.scale(2)
        with Client(theirs, set_as_default=False) as own:
            own.wait_for_workers(2, timeout=60)
            assert own.submit(sum, [2, 2]).result() == 4
    # a cluster that had them before the run (ours, or a `cluster up` daemon's) keeps them
    with start_cluster(overrides=[*BASE, "parallel.processes=1"]) as ours:
        address = ours.scheduler.address
        assert _plugins_on(address) == ["openclaw-config-fingerprint"]
        with start_cluster(overrides=[*BASE, "parallel.processes=1"], address=address) as again:
            assert again.submit(sum, [3, 3]).result() == 6
        assert _plugins_on(address) == ["openclaw-config-fingerprint"]


class RefusesAsItCloses(WorkerPlugin):
    """Refuses its worker, and its reply is lost as the worker closes (what a refused SSH
    worker's closing did to the plugin's registration, 4 submits in 5)."""

    name = "openclaw-test-refuses-as-it-closes"

    async def setup(self, worker: Any) -> None:
        from distributed.comm.core import CommClosedError

        from openclaw_dask.runtime.plugins import refuse

        await refuse(worker, "memory.allocator", "the test's allocator is missing")
        raise CommClosedError("in <TCP (closed) ConnectionPool.register_worker_plugin>")


def test_a_worker_closing_as_it_is_refused_is_said_as_the_refusal() -> None:
    from dataclasses import replace

    from openclaw_dask.config import ConfigError, load_config
    from openclaw_dask.runtime.cluster import register_plugins, verify_cluster
    from openclaw_dask.translate import plan_cluster

    config = load_config(None, BASE, env={})
    plan = plan_cluster(config)
    refusing = {"class": f"{__name__}.RefusesAsItCloses", "kwargs": {}}
    plan = replace(plan, worker_plugins=[*plan.worker_plugins, refusing])
    with (
        LocalCluster(n_workers=1, processes=False, dashboard_address=":0") as cluster,
        Client(cluster, set_as_default=False) as client,
    ):
        register_plugins(client, plan)  # had raised the CommClosedError
        with pytest.raises(ConfigError) as info:
            verify_cluster(client, plan, config)
        [problem] = info.value.problems
        assert problem.key == "memory.allocator"
        assert "refused: the test's allocator is missing" in problem.message
