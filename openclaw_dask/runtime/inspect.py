"""Read the truth back from every worker: threads, cores, allocator, memory, config, clock.

Everything here runs *inside* the workers through ``Client.run``, so what it reports is what is
in force there, not what was asked for.
"""

from __future__ import annotations

import os
from typing import Any

import dask
from distributed.comm import get_address_host
from distributed.metrics import time
from distributed.protocol.pickle import dumps

from openclaw_dask.runtime.plugins import (
    ADOPTED_FINGERPRINT,
    OWN_FINGERPRINT,
    REFUSED_KEY,
    loaded_allocator,
)


def _thread_affinities() -> list[list[int]]:
    """The CPU mask of every thread of this process (task threads included)."""
    masks = []
    for tid in os.listdir("/proc/self/task"):
        try:
            masks.append(sorted(os.sched_getaffinity(int(tid))))
        except (ProcessLookupError, OSError):
            continue
    return masks


async def clock_offset(dask_worker: Any, samples: int = 5) -> tuple[float, float]:
    """Offset of the scheduler's clock from this worker's, and the round trip it was read in.

    NTP's rule: of several request/response exchanges, trust the one with the shortest round
    trip; its midpoint is the best estimate of when the scheduler read its clock. The scheduler
    reads its clock through its ``run_function`` handler (what ``Client.run_on_scheduler``
    uses), which does nothing else.
    """
    best: tuple[float, float] | None = None
    for _ in range(samples):
        start = time()
        response = await dask_worker.scheduler.run_function(
            function=dumps(time), args=dumps(()), kwargs=dumps({}), wait=True
        )
        end = time()
        if response.get("status") != "OK":
            raise RuntimeError(f"cannot read the scheduler's clock: {response}")
        sample = (end - start, response["result"] - (start + end) / 2)
        if best is None or sample[0] < best[0]:
            best = sample
    assert best is not None
    return best[1], best[0]


async def worker_facts(dask_worker: Any) -> dict[str, Any]:
    """What is in force in this worker process (run with ``Client.run``)."""
    import psutil

    offset, round_trip = await clock_offset(dask_worker)
    with open("/proc/self/maps") as f:
        allocator = loaded_allocator(f.read())
    masks = _thread_affinities()
    own = getattr(dask_worker, OWN_FINGERPRINT, None)
    return {
        "name": str(dask_worker.name),
        "host": get_address_host(dask_worker.address),
        "pid": os.getpid(),
        "nthreads": dask_worker.state.nthreads,
        "memory_limit": dask_worker.memory_manager.memory_limit,
        "resources": dict(dask_worker.state.total_resources),
        "affinity": sorted({c for m in masks for c in m}),
        "threads_pinned_alike": all(m == masks[0] for m in masks),
        "allocator": allocator,
        "ld_preload": os.environ.get("LD_PRELOAD"),
        "compression": dask.config.get("distributed.comm.compression"),
        "config_hash": own[0] if own else None,
        # a label a plain Dask cluster's worker took from a client: no config of its own
        "config_adopted": bool(getattr(dask_worker, ADOPTED_FINGERPRINT, False)),
        "clock_offset": offset,
        "clock_round_trip": round_trip,
        "rss": psutil.Process().memory_info().rss,
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
        # what decides the bits beyond the config (numerics_kind), where deterministic mode's
        # check read it; not read otherwise: importing numba costs ~0.35 s a worker
        "numerics": getattr(dask_worker, "openclaw_numerics", None),
    }


def inspect_workers(client: Any) -> dict[str, dict[str, Any]]:
    """``{worker address: facts}`` for every worker of the cluster."""
    return client.run(worker_facts)


#: Seconds each worker has to answer :func:`ask_workers`: one answers in milliseconds unless it
#: is stopped (Ctrl-Z, SIGSTOP) or busy in a task that holds the GIL, and ``Client.run`` waits
#: for those for ever (`cluster status` hung until the worker was continued).
ANSWER_TIMEOUT = 10.0


def ask_workers(
    client: Any, function: Any, timeout: float | None = None
) -> tuple[dict[str, Any], list[str]]:
    """Run ``function`` in every worker, as ``Client.run``, waiting ``timeout`` s for each.

    Parameters
    ----------
    client : distributed.Client
        A synchronous client.
    function : callable
        Run in each worker (it may take ``dask_worker``).
    timeout : float, optional
        Seconds each worker has to answer (default :data:`ANSWER_TIMEOUT`).

    Returns
    -------
    answers : dict
        ``{worker address: what function returned}`` of the workers that answered.
    silent : list of str
        The workers that did not answer in time (their answers are not waited for).
    """
    import asyncio

    wait = ANSWER_TIMEOUT if timeout is None else timeout
    workers = sorted(client.nthreads())

    silent = object()

    async def ask(worker: str) -> Any:
        try:
            found = await asyncio.wait_for(client._run(function, workers=[worker]), wait)
        except TimeoutError:
            return silent
        return found.get(worker, None)  # (no answer of a worker that left meanwhile)

    async def ask_all() -> list[Any]:
        return await asyncio.gather(*(ask(w) for w in workers))

    found = dict(zip(workers, client.sync(ask_all), strict=True))
    answers = {w: a for w, a in found.items() if a is not None and a is not silent}
    return answers, [w for w, a in found.items() if a is silent]


def refusals(client: Any) -> dict[str, tuple[str, str]]:
    """``{worker address: (config key, reason)}`` of workers our plugins refused."""

    def read(dask_scheduler: Any) -> dict[str, dict[str, str]]:
        meta = dask_scheduler.get_metadata(keys=list(REFUSED_KEY), default={})
        return dict(meta or {})

    return {a: (r["key"], r["reason"]) for a, r in client.run_on_scheduler(read).items()}


def refused_workers(client: Any) -> dict[str, str]:
    """``{worker address: reason}`` of workers our plugins refused."""
    return {address: reason for address, (_, reason) in refusals(client).items()}
