"""The public Python API as a script or notebook calls it: wrong arguments are refused at once.

Each case had been accepted and ran a cluster (tens of seconds) before it failed or measured
the wrong thing; now it is one ``TypeError``/``ValueError`` naming the argument, before
anything starts.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest

import openclaw_dask as oc
from tests.conftest import ROOT


def _defaults() -> oc.Config:
    return oc.load_config(use_search_path=False)


@pytest.mark.parametrize(
    ("call", "kind", "said"),
    [
        # 5, -1 and nan had each run the whole baseline (~20 s), as `tune --budget` refuses
        (
            lambda: oc.tune(_defaults(), budget=5),
            ValueError,
            "tune: budget must be 20 seconds or more (the baseline alone takes about that), got 5",
        ),
        (
            lambda: oc.tune(_defaults(), budget=-1.0),
            ValueError,
            "tune: budget must be 20 seconds or more (the baseline alone takes about that), "
            "got -1.0",
        ),
        (
            lambda: oc.tune(_defaults(), budget=float("nan")),
            ValueError,
            "tune: budget must be 20 seconds or more (the baseline alone takes about that), "
            "got nan",
        ),
        # had been "'NoneType' object is not callable" once the baseline was measured
        (
            lambda: oc.tune(_defaults(), budget=60, log=None),
            TypeError,
            "tune: log must be a function of one str, such as print, got None",
        ),
        # "no" is true: it had run the quick sizes
        (
            lambda: oc.benchmark(_defaults(), suites=["overhead"], quick="no"),
            TypeError,
            "benchmark: quick must be True or False, got str 'no'",
        ),
        # had run every suite (minutes), where `benchmark --suite ""` is refused
        (
            lambda: oc.benchmark(_defaults(), suites=[], quick=True),
            ValueError,
            "benchmark: suites names none: give some of matmul, stencil, reduce, zarr, overhead, "
            "graph, or None for every suite",
        ),
        # had failed only at the first suite, after the cluster's start
        (
            lambda: oc.benchmark(_defaults(), suites=["overhead"], on_suite="progress"),
            TypeError,
            "benchmark: on_suite must be a function of one str or None, got str 'progress'",
        ),
    ],
)
def test_a_bad_benchmark_or_tune_argument_is_refused_before_a_cluster_starts(
    call: Callable[[], Any], kind: type[Exception], said: str
) -> None:
    with pytest.raises(kind) as info:
        call()
    assert str(info.value) == said


#: a fresh interpreter (the ops are loaded once a process) in which two threads look up a
#: built-in op at the same moment, as two runs of a thread pool's parameter sweep do
TWO_THREADS = """
import threading
from openclaw_dask.workflows.registry import resolve_op

start = threading.Barrier(2)
found = []

def look():
    start.wait()
    try:
        found.append(resolve_op("example.field").name)
    except Exception as exc:
        found.append(f"{type(exc).__name__}: {exc}")

threads = [threading.Thread(target=look) for _ in range(2)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(found)
"""


def test_two_threads_find_the_built_in_ops_at_the_same_time() -> None:
    # the second had seen the registry "loaded" and still empty: two run_workflow calls from
    # a ThreadPoolExecutor, one failed with "unknown op 'example.field'; available: "
    done = subprocess.run(
        [sys.executable, "-c", TWO_THREADS],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['example.field', 'example.field']"


def test_an_address_with_a_forced_backend_is_refused_not_dropped() -> None:
    # the address had been dropped in silence: the dry run planned a local cluster (and the
    # run started one) instead of attaching, as asked, to the scheduler named
    with pytest.raises(oc.ConfigError) as info:
        oc.run_workflow(
            ROOT / "workflows" / "example.yaml",
            address="tcp://127.0.0.1:8786",
            backend="local",
            dry_run=True,
        )
    assert str(info.value) == (
        "--address: cluster.scheduler_address: attaches to a running scheduler, but backend "
        "local starts one; remove one of them"
    )
    attached = oc.load_config(
        overrides=["cluster.scheduler_address=tcp://127.0.0.1:8786"], use_search_path=False
    )
    with pytest.raises(oc.ConfigError, match="but backend cuda starts one; remove one of them"):
        oc.plan_cluster(attached, backend="cuda")
    assert oc.plan_cluster(attached).backend == "attach"  # without a forced one, as before


def test_a_second_run_in_one_process_is_refused_while_the_first_runs(tmp_path: Any) -> None:
    """Two run_workflow calls of a thread pool's sweep left the process with one run's Dask
    settings (its worker preload, compression, malloc environment): a second call while one
    runs is refused in one line, and the refusal, or any failure, leaves the next call free."""
    from openclaw_dask.workflows import runner

    workflow = str(ROOT / "workflows/example.yaml")
    assert runner._RUNNING.acquire(blocking=False)  # as a run in another thread holds it
    try:
        with pytest.raises(RuntimeError, match=r"^run_workflow: another run_workflow is running"):
            oc.run_workflow(workflow, dry_run=True)
    finally:
        runner._RUNNING.release()
    with pytest.raises(ValueError, match="not both"):  # a failed call lets the lock go
        oc.run_workflow(workflow, run_dir=tmp_path / "a", resume=tmp_path / "b")
    plan = oc.run_workflow(workflow, dry_run=True, run_dir=tmp_path / "run")
    assert plan["workflow"] == "example-smoothing" and not runner._RUNNING.locked()
