"""Worker setup on real LocalClusters: what the workers get, what the client is left with.

Each test here was added by a mutation audit, for a change to the runtime that no other test
noticed: a setting that reached the workers but also stayed in the client, an allocator check
that covered one allocator of two, a numerics check against the wrong side, an allocator's
release call that missed most of the memory.
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any

import numba
import pytest
from distributed import get_worker

from openclaw_dask.config import ConfigError, detect_hardware
from openclaw_dask.runtime import inspect_workers, memory_compact, start_cluster
from openclaw_dask.runtime.plugins import numerics_kind

BASE = ["cluster.dashboard_address=127.0.0.1:0"]
#: a variable a site's raw ``dask:`` section gives its workers (not one of the plan's)
SITE_VAR = "SITE_TEST_VARIABLE_FROM_DASK_SECTION"


def cluster(*sets: str, **kw: Any) -> Any:
    return start_cluster(overrides=[*BASE, *sets], attach_running=False, **kw)


def environ(name: str) -> str | None:
    """``os.environ[name]`` where this runs (``os.environ.get`` itself would travel pickled
    with the client's environment)."""
    return os.environ.get(name)


def test_a_raw_dask_worker_variable_reaches_the_workers_and_leaves_the_client_as_it_was(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A nanny sets its worker's environment in the client process before it spawns it; a
    variable the raw ``dask:`` section adds (beside the plan's own) had stayed in the client."""
    monkeypatch.delenv(SITE_VAR, raising=False)
    raw = f"dask.distributed.nanny.pre-spawn-environ.{SITE_VAR}=site"
    with cluster("parallel.processes=1", raw) as client:
        assert set(client.run(environ, SITE_VAR).values()) == {"site"}
        assert SITE_VAR not in os.environ
    assert SITE_VAR not in os.environ


def test_tcmalloc_that_does_not_load_is_refused() -> None:
    """LD_PRELOAD of a missing library fails silently; the check names the allocator for
    tcmalloc as for jemalloc."""
    hw = replace(detect_hardware(), allocators={"tcmalloc": "/nonexistent/libtcmalloc.so.4"})
    with pytest.raises(ConfigError) as info, cluster("memory.allocator=tcmalloc", hardware=hw):
        pass
    message = str(info.value)
    assert "memory.allocator is tcmalloc but the worker runs with system" in message


def test_deterministic_workers_are_compared_with_each_other_not_with_the_client(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The client computes none of the outputs: a client of another CPU kind (a laptop driving
    a cluster; here numba told to compile for a generic CPU in this process only) has none of
    its workers refused, which agree among themselves."""
    monkeypatch.setattr(numba.config, "CPU_NAME", "generic")
    assert numerics_kind()["cpu"] == "generic"
    with cluster("parallel.processes=2", "parallel.deterministic_mode=true") as client:
        kinds = list(client.run(numerics_kind).values())
        assert len(kinds) == 2 and kinds[0] == kinds[1] and kinds[0]["cpu"] != "generic"
        assert client.submit(sum, [4, 5]).result() == 9


def hold_and_free_in_a_task() -> int:
    """Runs as a task (a task thread, with a jemalloc arena of its own): ~400 MB in small
    objects, 1 % kept so that nothing is returned on its own; the worker's RSS after."""
    import psutil

    junk = [bytes(1000) for _ in range(400_000)]
    keep = junk[::100]
    del junk
    get_worker().openclaw_test_keep = keep  # type: ignore[attr-defined]
    return psutil.Process().memory_info().rss


def test_memory_compact_under_jemalloc_returns_what_task_threads_freed() -> None:
    """Tasks allocate in their threads' arenas, not the main thread's: the purge must reach
    every arena (``arena.<all>.purge``) for ``memory compact`` to return their memory."""
    with cluster("parallel.processes=1", "memory.allocator=jemalloc") as client:
        assert {f["allocator"] for f in inspect_workers(client).values()} == {"jemalloc"}
        held = client.submit(hold_and_free_in_a_task, pure=False).result()
        (result,) = memory_compact(client).values()
        assert result["call"] == "mallctl(arena.all.purge)"
        assert result["rss_before"] > 300e6 and held > 300e6, (held, result)
        assert result["rss_after"] < result["rss_before"] - 200e6, result
