"""Worker plugins that make the config real, and verified, inside every worker.

Following dask-cuda's pattern, plugins check their arguments in ``__init__`` (on the client, so a
bad plan fails before anything is sent) and do their work in ``setup`` (in the worker).

A worker that does not honour the config is *refused*: it logs why, records the reason on the
scheduler (``openclaw.refused`` metadata, which ``cluster status`` and the runner report) and
closes itself together with its nanny, so the nanny does not restart it. The rest of the cluster
keeps working.
"""

from __future__ import annotations

import logging
from typing import Any

from distributed import WorkerPlugin

logger = logging.getLogger("openclaw_dask.runtime")

#: Attribute on a worker that holds the fingerprint of the config it was started from (set by
#: :mod:`openclaw_dask.runtime.preload` for workers started by hand with ``dask worker``).
OWN_FINGERPRINT = "openclaw_fingerprint"
REFUSED_KEY = ("openclaw", "refused")

#: Shared-library name fragments that prove an allocator is mapped into the process.
ALLOCATOR_MARKERS = {"jemalloc": "libjemalloc", "tcmalloc": "libtcmalloc"}


async def refuse(worker: Any, reason: str) -> None:
    """Record ``reason`` on the scheduler and close ``worker`` and its nanny."""
    logger.error("openclaw-dask refused worker %s: %s", worker.address, reason)
    try:
        await worker.scheduler.set_metadata(keys=[*REFUSED_KEY, worker.address], value=reason)
    except Exception:
        logger.exception("could not record the refusal on the scheduler")
    # close after setup returns: closing inside the plugin handler would deadlock it
    worker.loop.add_callback(worker.close, nanny=True, reason="openclaw-refused")


def fingerprint_difference(own: dict[str, Any], expected: dict[str, Any]) -> list[str]:
    """``["distributed.sync_interval: worker 50, client 100", ...]`` for differing keys."""
    keys = sorted(set(own) | set(expected))
    return [
        f"{k}: worker {own.get(k)!r}, client {expected.get(k)!r}"
        for k in keys
        if own.get(k) != expected.get(k)
    ]


class ConfigFingerprint(WorkerPlugin):
    """Refuse workers started from a different node-relevant config than the client's.

    Workers our runtime spawns adopt the client's fingerprint. Workers started elsewhere (by
    hand, on another node) carry the fingerprint of their own ``openclaw.config``; if it
    differs, for example in ``distributed.sync_interval``, the worker is refused with the
    differing keys named.

    Parameters
    ----------
    fingerprint
        Hash of the client's node-relevant config (:meth:`Config.fingerprint`).
    values
        The node-relevant values behind the hash, to name the differences.
    """

    name = "openclaw-config-fingerprint"

    def __init__(self, fingerprint: str, values: dict[str, Any]) -> None:
        if not isinstance(fingerprint, str) or not fingerprint:
            raise TypeError("fingerprint must be a non-empty string")
        if not isinstance(values, dict):
            raise TypeError("values must be a dict of dotted keys")
        self.fingerprint = fingerprint
        self.values = values

    async def setup(self, worker: Any) -> None:
        own = getattr(worker, OWN_FINGERPRINT, None)
        if own is None:
            setattr(worker, OWN_FINGERPRINT, (self.fingerprint, self.values))
            return
        own_hash, own_values = own
        if own_hash == self.fingerprint:
            return
        diff = fingerprint_difference(own_values, self.values)
        await refuse(worker, "its openclaw.config differs from the client's: " + "; ".join(diff))


def loaded_allocator(maps_text: str) -> str:
    """Which allocator a process has mapped, from the text of ``/proc/<pid>/maps``."""
    for name, marker in ALLOCATOR_MARKERS.items():
        if marker in maps_text:
            return name
    return "system"


class AllocatorCheck(WorkerPlugin):
    """Refuse a worker whose process does not have the requested allocator loaded.

    ``LD_PRELOAD`` fails silently (the loader only prints a warning) when the library is
    missing on a node; this check makes that an error.

    Parameters
    ----------
    allocator
        ``jemalloc`` or ``tcmalloc``.
    """

    name = "openclaw-allocator-check"

    def __init__(self, allocator: str) -> None:
        if allocator not in ALLOCATOR_MARKERS:
            raise ValueError(f"allocator must be one of {sorted(ALLOCATOR_MARKERS)}")
        self.allocator = allocator

    async def setup(self, worker: Any) -> None:
        with open("/proc/self/maps") as f:
            found = loaded_allocator(f.read())
        worker.openclaw_allocator = found
        if found != self.allocator:
            await refuse(
                worker,
                f"memory.allocator is {self.allocator} but the worker runs with {found} "
                f"(LD_PRELOAD did not take effect: is {ALLOCATOR_MARKERS[self.allocator]} "
                "installed on this node?)",
            )
