"""``memory_compact``: give freed memory back to the OS in every worker.

After a large step, Python has freed its arrays but the allocator may keep the pages; RSS stays
high and Dask's memory manager spills or pauses for memory nobody uses. The right release call
depends on the allocator in the process: glibc ``malloc_trim(0)``, jemalloc's
``arena.<all>.purge`` through ``mallctl``, tcmalloc's ``MallocExtension_ReleaseFreeMemory``.
``malloc_trim`` is never called under jemalloc or tcmalloc (it would touch glibc's arenas,
which these allocators do not use).
"""

from __future__ import annotations

import ctypes
import gc
from typing import Any

from openclaw_dask.config.arguments import check_instance
from openclaw_dask.runtime.plugins import loaded_allocator

#: jemalloc's MALLCTL_ARENAS_ALL: "every arena" in ``arena.<i>.purge``.
JEMALLOC_ARENAS_ALL = 4096


def release_free_memory() -> tuple[str, str]:
    """Collect garbage and ask this process's allocator to return free pages.

    Returns
    -------
    (allocator, call)
        The allocator found in ``/proc/self/maps`` and the release call made.
    """
    gc.collect()
    with open("/proc/self/maps") as f:
        allocator = loaded_allocator(f.read())
    process = ctypes.CDLL(None)  # symbols of everything loaded, LD_PRELOADed libraries first
    if allocator == "jemalloc":
        name = f"arena.{JEMALLOC_ARENAS_ALL}.purge".encode()
        process.mallctl(name, None, None, None, ctypes.c_size_t(0))
        return allocator, "mallctl(arena.all.purge)"
    if allocator == "tcmalloc":
        process.MallocExtension_ReleaseFreeMemory()
        return allocator, "MallocExtension_ReleaseFreeMemory()"
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    return allocator, "malloc_trim(0)"


def compact_worker(dask_worker: Any = None) -> dict[str, Any]:
    """Release free memory in this process; RSS before and after (run with Client.run)."""
    import psutil

    proc = psutil.Process()
    before = proc.memory_info().rss
    allocator, call = release_free_memory()
    after = proc.memory_info().rss
    return {"allocator": allocator, "call": call, "rss_before": before, "rss_after": after}


def memory_compact(client: Any) -> dict[str, dict[str, Any]]:
    """Compact memory in every worker of ``client``'s cluster.

    Parameters
    ----------
    client
        A connected ``distributed.Client``.

    Returns
    -------
    dict
        ``{worker address: {"allocator", "call", "rss_before", "rss_after"}}``.

    Raises
    ------
    TypeError
        When ``client`` is not a ``distributed.Client``.
    ValueError
        When ``client`` is closed (used after its ``start_cluster`` block).
    """
    from distributed import Client

    check_instance(
        "memory_compact",
        "client",
        client,
        Client,
        "a distributed.Client",
        " (start_cluster yields one)",
    )
    if client.status != "running":
        # a client used after its `with start_cluster(...)` block: Dask's own error had been
        # "RuntimeError: IOLoop is closed" from six frames down
        raise ValueError(
            f"memory_compact: client must be connected, this one is {client.status} (call it "
            "inside the `with start_cluster(...) as client:` block)"
        )
    return client.run(compact_worker)


#: The name the seed uses.
openclaw_memory_compact = memory_compact
