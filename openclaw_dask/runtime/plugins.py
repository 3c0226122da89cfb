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
#: Attribute set beside :data:`OWN_FINGERPRINT` when the fingerprint is only a label that a
#: worker no openclaw-dask started (a notebook's plain ``LocalCluster``) took from a client.
ADOPTED_FINGERPRINT = "openclaw_fingerprint_adopted"
REFUSED_KEY = ("openclaw", "refused")

#: Shared-library name fragments that prove an allocator is mapped into the process.
ALLOCATOR_MARKERS = {"jemalloc": "libjemalloc", "tcmalloc": "libtcmalloc"}


async def refuse(worker: Any, key: str, reason: str) -> None:
    """Record ``reason`` on the scheduler and close ``worker`` and its nanny.

    ``key`` is the dotted config key the worker does not honour: where the client's error
    points in the config file.
    """
    logger.error("openclaw-dask refused worker %s: %s", worker.address, reason)
    try:
        await worker.scheduler.set_metadata(
            keys=[*REFUSED_KEY, worker.address], value={"key": key, "reason": reason}
        )
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
    differing keys named. Workers of a plain Dask cluster (no openclaw-dask preload) were
    started from no config: they take each attaching client's fingerprint as a label
    (:data:`ADOPTED_FINGERPRINT`) and are never refused for it. They had kept the first
    run's, and a notebook's next run with another ``distributed.sync_interval`` was refused
    as if the workers were "started from another openclaw.config".

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
        if own is None or getattr(worker, ADOPTED_FINGERPRINT, False):
            setattr(worker, OWN_FINGERPRINT, (self.fingerprint, self.values))
            setattr(worker, ADOPTED_FINGERPRINT, not started_by_openclaw(worker))
            return
        own_hash, own_values = own
        if own_hash == self.fingerprint:
            return
        diff = fingerprint_difference(own_values, self.values)
        first = diff[0].split(": ", 1)[0] if diff else "distributed.sync_interval"
        await refuse(
            worker, first, "its openclaw.config differs from the client's: " + "; ".join(diff)
        )


def started_by_openclaw(worker: Any) -> bool:
    """Whether ``worker`` was started by openclaw-dask: it runs one of its preloads (every
    backend's workers do; a plain ``LocalCluster``'s or a bare ``dask worker``'s do not)."""
    return any(
        str(getattr(p, "name", "")).startswith("openclaw_dask.")
        for p in getattr(worker, "preloads", ())
    )


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
                "memory.allocator",
                f"memory.allocator is {self.allocator} but the worker runs with {found} "
                f"(LD_PRELOAD did not take effect: is {ALLOCATOR_MARKERS[self.allocator]} "
                "installed on this node?)",
            )


#: CPU features that decide which vector code numba's kernels (LLVM) and numpy's SIMD loops
#: run: a reduction vectorised 2, 4 or 8 wide adds in another order
VECTOR_FEATURES = ("sse4.2", "avx", "avx2", "fma", "avx512f", "avx512dq", "avx512bw", "avx512vl")


def numerics_kind() -> dict[str, str]:
    """What, beyond the config, decides the bits of this process's floating-point results.

    The target CPU numba compiles for (its name and vector features, as numba itself resolves
    them, ``NUMBA_CPU_NAME`` and ``NUMBA_CPU_FEATURES`` included) and the numpy and numba
    versions. The climate kernel's row sums follow LLVM's vector order for that target (on
    the development VM ``NUMBA_CPU_NAME=generic`` changes the 2° model's bits after 200 steps)
    and numpy's ``sin``/``arccos`` its SIMD loops.
    """
    import llvmlite.binding as llvm
    import numba
    import numpy

    features = numba.config.CPU_FEATURES
    if features is None:
        try:  # numba's own resolution (it honours NUMBA_ENABLE_AVX); internal, hence the guard
            from numba.core.codegen import get_host_cpu_features

            features = get_host_cpu_features()
        except ImportError:
            features = llvm.get_host_cpu_features().flatten()
    enabled = {f[1:] for f in features.split(",") if f.startswith("+")}
    return {
        "cpu": numba.config.CPU_NAME or llvm.get_host_cpu_name(),
        "vector": " ".join(f for f in VECTOR_FEATURES if f in enabled) or "none",
        "numpy": numpy.__version__,
        "numba": numba.__version__,
    }


def common_kind(kinds: dict[str, dict[str, str]]) -> dict[str, str] | None:
    """The kind most workers have (ties: the first worker's by address); ``None`` for none."""
    if not kinds:
        return None
    ordered = [kinds[w] for w in sorted(kinds)]
    return max(ordered, key=ordered.count)  # max keeps the first of equal counts


class NumericsCheck(WorkerPlugin):
    """In deterministic mode, refuse a worker whose numerics differ from the cluster's.

    ``parallel.deterministic_mode`` promises the same bits for any worker and thread layout,
    which holds only among workers that compute alike (:func:`numerics_kind`). A node of
    another CPU kind, or with another numpy, would change the bits of whatever runs there,
    silently. The expected kind is the one most workers have when the client registers the
    plugin (:meth:`kwargs_from_cluster`); the client's own counts only when no worker is up
    yet (the client computes none of the outputs).

    Parameters
    ----------
    expected
        :func:`numerics_kind` of the cluster.
    """

    name = "openclaw-numerics-check"

    def __init__(self, expected: dict[str, str]) -> None:
        if not isinstance(expected, dict) or set(expected) != {"cpu", "vector", "numpy", "numba"}:
            raise TypeError("expected must be a numerics_kind() dict")
        self.expected = expected

    @classmethod
    def kwargs_from_cluster(cls, client: Any) -> dict[str, Any]:
        """``expected``: the kind most of ``client``'s workers have (the client's if none)."""
        return {"expected": common_kind(client.run(numerics_kind)) or numerics_kind()}

    async def setup(self, worker: Any) -> None:
        own = numerics_kind()
        worker.openclaw_numerics = own
        diff = [f"{k} {own[k]} (cluster: {v})" for k, v in self.expected.items() if own[k] != v]
        if diff:
            await refuse(
                worker,
                "parallel.deterministic_mode",
                "parallel.deterministic_mode is on and this worker computes unlike the "
                f"cluster's workers: {'; '.join(diff)}. Outputs are bit-identical only among "
                "workers of one CPU kind with the same numpy and numba: start it on such a "
                "node, or set parallel.deterministic_mode: false",
            )
