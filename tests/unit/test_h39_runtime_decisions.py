"""Runtime decisions a mutation audit found unpinned: which nodes are probed, what a node's
probe may differ in, which core list a worker takes, which cluster a config runs on, and how
an interrupted ``mpirun`` is taken down (real processes, no mpirun needed)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import psutil
import pytest

from openclaw_dask.config import load_config
from openclaw_dask.runtime import mpi_launch
from openclaw_dask.runtime.affinity import worker_index
from openclaw_dask.runtime.cluster import running_cluster
from openclaw_dask.runtime.mpi_launch import MPI_SCHEDULER_ENV, stop
from openclaw_dask.runtime.preflight import compare, local_facts, node_targets, numerics_outliers
from openclaw_dask.runtime.processes import running
from openclaw_dask.runtime.state import write_state
from tests.conftest import make_hardware
from tests.unit.test_state import fake_daemon


def config(*sets: str) -> Any:
    return load_config(None, list(sets), env={}, use_search_path=False)


def test_one_login_with_two_pythons_is_probed_with_each() -> None:
    """Mutation audit: a node's python left out of the login key survived; the second
    environment (another venv on the same machine) went unprobed."""
    nodes = (
        "distributed.nodes=[{host: 10.0.0.1, python: /opt/a/bin/python},"
        " {host: 10.0.0.1, port: 9000, python: /opt/b/bin/python}]"
    )
    targets = node_targets(config(nodes))
    assert [(t.index, t.python) for t in targets] == [
        (0, "/opt/a/bin/python"),
        (1, "/opt/b/bin/python"),
    ]


def test_a_node_of_another_patch_release_of_python_is_compatible() -> None:
    """Pickles need the same major.minor only (mutation audit: the patch compared too
    survived: every probe tested had this machine's exact version)."""
    local = local_facts(config())
    remote = {k: local[k] for k in ("dask", "distributed", "openclaw_dask")}
    remote |= {"python": [*local["python"][:2], local["python"][2] + 1], "compressions": ["auto"]}
    assert compare(remote, local, "/x/python") == []


def test_the_common_numerics_of_a_tie_are_the_first_node_s_by_address() -> None:
    """Not the first listed (mutation audit: the order of distributed.nodes survived, the
    tie tested was listed in address order); one node alike is not 'and 0 more'."""
    kind = {"cpu": "znver4", "vector": "avx2 fma", "numpy": "2.3.0", "numba": "0.62.0"}
    generic = {**kind, "cpu": "generic", "vector": "none"}
    odd = numerics_outliers({"b:22": generic, "a:22": kind})
    assert list(odd) == ["b:22"]
    assert "cpu generic (node a:22: znver4); vector none (node a:22: avx2 fma)." in odd["b:22"]


@pytest.mark.parametrize(
    ("env", "name", "index"),
    [
        ({}, "3", 3),  # LocalCluster: 0, 1, ...
        ({}, "10.0.0.2-2222-1", 1),  # an ssh node's second process
        # a local run under srun or mpirun -np 1: the launcher's variables are inherited by
        # its workers, which are no ranks (dask-mpi's worker ranks are read from mpi4py)
        ({"OMPI_COMM_WORLD_RANK": "0"}, "1", 1),
        ({"PMI_RANK": "0"}, "1", 1),
    ],
)
def test_a_worker_takes_the_core_list_of_its_place(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], name: str, index: int
) -> None:
    """Mutation audit: no test read a worker's index; the launcher's variables had been taken
    for a rank in any process (the fix's test runs real workers: test_h39_worker_checks)."""
    for var in ("OMPI_COMM_WORLD_RANK", "PMI_RANK"):
        monkeypatch.delenv(var, raising=False)
    for var, value in env.items():
        monkeypatch.setenv(var, value)
    assert worker_index(SimpleNamespace(name=name)) == index


@pytest.fixture
def _state_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("OPENCLAW_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.delenv(MPI_SCHEDULER_ENV, raising=False)


@pytest.mark.usefixtures("_state_dir")
def test_a_config_runs_on_the_cluster_up_cluster_only_when_it_asks_for_nothing_else(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Mutation audit: a forced backend, rank 1 of an mpi launch and a state file without a
    backend (written before it was recorded: a local cluster) all survived."""
    hardware = make_hardware(cores=4)
    local = config()
    with fake_daemon(tmp_path) as daemon:
        state = {"address": "tcp://127.0.0.1:1", "pid": daemon.pid, "started": time.time()}
        write_state({**state, "backend": "local"})
        assert running_cluster(local, hardware) == {**state, "backend": "local"}
        assert running_cluster(local, hardware, backend="local") is None
        monkeypatch.setenv(MPI_SCHEDULER_ENV, "tcp://127.0.0.1:2")
        assert running_cluster(local, hardware) is None
        monkeypatch.delenv(MPI_SCHEDULER_ENV)
        write_state(state)  # an older cluster up: no backend recorded, it was local
        assert running_cluster(local, hardware) == state
        assert running_cluster(config("distributed.nodes=[{host: h}]"), hardware) is None


#: A stand-in for mpirun: one rank that names the plan file; mpirun forwards SIGTERM to it
#: and records how the rank ended. ``stubborn``: the rank ignores SIGTERM and mpirun does not
#: wait for it (an Open MPI that gave up on a rank).
FAKE_MPIRUN = """
import signal, subprocess, sys, time
stubborn = sys.argv[2] == "stubborn"
code = "import signal, time\\n"
if stubborn:
    code += "signal.signal(signal.SIGTERM, signal.SIG_IGN)\\n"
code += "print('up', flush=True)\\ntime.sleep(60)\\n"
rank = subprocess.Popen([sys.executable, "-c", code, sys.argv[1]], stdout=subprocess.PIPE)
rank.stdout.readline()
def end(*_):
    rank.terminate()
    if not stubborn:
        open(sys.argv[1] + ".ended", "w").write(str(rank.wait()))
    sys.exit(143)
signal.signal(signal.SIGTERM, end)
print("up", flush=True)
time.sleep(60)
"""


def fake_mpirun(plan_file: Path, how: str) -> tuple[subprocess.Popen[str], psutil.Process]:
    proc = subprocess.Popen(
        [sys.executable, "-c", FAKE_MPIRUN, str(plan_file), how], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline() == "up\n"
    (rank,) = psutil.Process(proc.pid).children()
    return proc, rank


def test_an_interrupted_mpirun_with_a_handle_is_asked_to_end_its_ranks(tmp_path: Path) -> None:
    """The Ctrl-C came after Popen: the running mpirun gets SIGTERM (and forwards it), it is
    not left to be killed after the grace (mutation audit: the poll() test inverted survived:
    the unit test stopped an mpirun it had no handle on)."""
    plan_file = tmp_path / "plan.json"
    proc, rank = fake_mpirun(plan_file, "polite")
    stop(proc, plan_file)
    assert proc.poll() is not None  # mpirun ended (reaped by stop)
    assert not running(rank)
    assert Path(f"{plan_file}.ended").read_text() == "-15"


def test_a_rank_that_outlives_its_mpirun_is_killed_after_the_grace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Mutation audit: the ranks' kill dropped survived (every rank tested ended on its own)."""
    monkeypatch.setattr(mpi_launch, "STOP_GRACE", 1.0)
    plan_file = tmp_path / "plan.json"
    proc, rank = fake_mpirun(plan_file, "stubborn")
    try:
        stop(proc, plan_file)
        # killed (it ignored the SIGTERM): SIGKILL lands a moment after stop() sends it
        deadline = time.monotonic() + 10
        while running(rank) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not running(rank)
    finally:
        if running(rank):
            rank.kill()


def test_a_node_whose_name_does_not_resolve_is_said_so() -> None:
    """Not as an errno-less 'Unknown error -2' (mutation audit: the resolver's own clause
    dropped, left to the OSError one, survived)."""
    from openclaw_dask.config import ConfigError
    from openclaw_dask.runtime.preflight import check_nodes

    nodes = config("cluster.backend=ssh", "distributed.nodes=[{host: no-such-node.invalid}]")
    with pytest.raises(ConfigError) as info:
        check_nodes(nodes)
    (problem,) = info.value.problems
    assert problem.message.startswith(
        "node no-such-node.invalid:22: not reachable: cannot resolve no-such-node.invalid ("
    ), problem.message


def test_a_tls_address_without_a_certificate_is_said_so_at_once() -> None:
    """``cluster status --address tls://...`` from a directory without the config: the
    missing certificate is named before any connection (mutation audit: that check dropped
    survived: the client retried for 10 s, then said the port refused connections)."""
    import dask

    from openclaw_dask.config import ConfigError
    from openclaw_dask.runtime.cluster import connect

    with (
        dask.config.set({"distributed.comm.tls.ca-file": None}),
        pytest.raises(ConfigError) as info,
    ):
        connect("tls://127.0.0.1:1")
    (problem,) = info.value.problems
    assert "tls://127.0.0.1:1 is a tls scheduler: it asks for this client's certificate" in (
        problem.message
    ), problem.message


def test_the_vector_features_are_those_numba_compiles_for_and_only_the_enabled_ones(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """NUMBA_CPU_FEATURES (numba.config.CPU_FEATURES) decides the vector code, and '-avx'
    turns avx off (mutation audit: the setting ignored for the host's features, and every
    listed feature counted as enabled, both survived: only the cpu name was ever varied)."""
    import numba

    from openclaw_dask.runtime.plugins import numerics_kind

    monkeypatch.setattr(numba.config, "CPU_FEATURES", "+sse4.2,-avx,+avx2,+fma,-avx512f")
    assert numerics_kind()["vector"] == "sse4.2 avx2 fma"
    monkeypatch.setattr(numba.config, "CPU_FEATURES", "-sse4.2,-avx")
    assert numerics_kind()["vector"] == "none"


def test_an_mpi_plan_outside_mpirun_is_refused_before_anything_starts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """From the Python API (the command line refuses it itself): mutation audit: the refusal
    dropped survived, and the plan went on to attach to no scheduler."""
    from openclaw_dask.config import ConfigError
    from openclaw_dask.runtime import start_cluster

    monkeypatch.delenv(MPI_SCHEDULER_ENV, raising=False)
    sets = ["cluster.backend=mpi", "cluster.dashboard_address=127.0.0.1:0"]
    with (
        pytest.raises(ConfigError, match=r"cluster\.backend: mpi clusters start under mpirun"),
        start_cluster(overrides=sets, hardware=make_hardware(cores=4), attach_running=False),
    ):
        pass


def test_nodes_are_checked_from_inside_a_running_event_loop_too() -> None:
    """A notebook's cell runs inside an event loop: the checks run in a thread of their own
    there (mutation audit: asyncio.run regardless survived; it raises inside a loop)."""
    import asyncio

    from openclaw_dask.config import ConfigError
    from openclaw_dask.runtime.preflight import check_nodes

    nodes = config("cluster.backend=ssh", "distributed.nodes=[{host: 127.0.0.1, ssh_port: 1}]")

    async def in_a_loop() -> str:
        with pytest.raises(ConfigError) as info:
            check_nodes(nodes)
        return info.value.problems[0].message

    said = asyncio.run(in_a_loop())
    assert said.startswith("node 127.0.0.1:1: not reachable: Connection refused"), said


def test_two_logins_of_one_host_are_labelled_apart() -> None:
    """Each (login, python) is probed on its own and its result kept under its label: two
    users of one ``host:port`` shared the label ``host:port``, so one login's probe stood for
    both (helper-45's review; the python was told apart in 92897c3, the user was not)."""
    nodes = (
        "distributed.nodes=[{host: 10.0.0.1, user: alice},"
        " {host: 10.0.0.1, user: bob}, {host: 10.0.0.2}]"
    )
    labels = [t.label for t in node_targets(config(nodes))]
    assert labels == ["alice@10.0.0.1:22", "bob@10.0.0.1:22", "10.0.0.2:22"]
