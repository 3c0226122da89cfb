"""The "did you mean" of an unknown config key.

Our users come from wiring Dask by hand, so an unknown key is as often Dask's name for a setting
(``n_workers``, ``memory_limit``, ``protocol``) or one of our keys under the wrong section
(``parallel.batch_size``) as it is a typo. Spelling distance alone answers the typos and
misleads on the rest (it offered ``distributed.tls.cert`` for ``distributed.transport``), so
names are tried in order: our key's own name under another section, the Dask name of a
setting, then the closest spelling.
"""

from __future__ import annotations

import difflib

from openclaw_dask.config.schema import KEYS, groups

#: Dask's names for a setting (keywords of ``LocalCluster``, ``SSHCluster``, dask-cuda and
#: ``dask worker``), by the last part of the unknown key, with the key that sets it here.
DASK_NAMES: dict[str, str] = {
    "n_workers": "parallel.processes",
    "nprocs": "parallel.processes",
    "threads_per_worker": "parallel.thread_pool_size",
    "nthreads": "parallel.thread_pool_size",
    "protocol": "distributed.communication_backend",
    "enable_infiniband": "distributed.rdma",
    "enable_nvlink": "gpu.peer_access",
    "hosts": "distributed.nodes",
    "cuda_visible_devices": "gpu.devices",
    "rmm_managed_memory": "gpu.unified_memory",
    "rmm_pool_size": "memory.global_pool",
    "memory_limit": "memory.per_thread_pool_size",
    "memory_target_fraction": "memory.spill.target",
    "memory_spill_fraction": "memory.spill.spill",
    "memory_pause_fraction": "memory.spill.pause",
    "memory_terminate_fraction": "memory.spill.terminate",
    "scheduler_file": "cluster.scheduler_address",
}

#: Plain words for a setting, by the last part of the unknown key.
WORDS: dict[str, str] = {
    "workers": "parallel.processes",
    "threads": "parallel.thread_pool_size",
    "affinity": "parallel.thread_affinity",
    "cpu_affinity": "parallel.thread_affinity",
    "pinning": "parallel.thread_affinity",
    "deterministic": "parallel.deterministic_mode",
    "transport": "distributed.communication_backend",
    "comm": "distributed.communication_backend",
    "infiniband": "distributed.rdma",
    "nvlink": "gpu.peer_access",
    "checkpoint_interval": "distributed.sync_interval",
    "gpus": "gpu.devices",
    "limit": "memory.per_thread_pool_size",
    "scheduler": "cluster.scheduler_address",
    "dashboard": "cluster.dashboard_address",
    "dashboard_port": "cluster.dashboard_address",
    "compressor": "storage.codec",
    "compressors": "storage.codec",
}

#: Why a Dask name maps to a key that is not a plain rename.
_NOTES: dict[str, str] = {
    "memory.per_thread_pool_size": "here per worker thread, or memory.global_pool per node",
    "parallel.thread_pool_size": "here the threads of all workers on a node",
}


def suggest_key(path: str) -> str:
    """``"; did you mean 'x'?"`` for an unknown dotted config key, or ``""``.

    Examples
    --------
    >>> suggest_key("distributed.protocol")
    "; did you mean 'distributed.communication_backend'? (Dask's protocol)"
    >>> suggest_key("parallel.batch_size")
    "; did you mean 'distributed.batch_size'?"
    >>> suggest_key("parallel.procesess")
    "; did you mean 'parallel.processes'?"
    """
    leaf = path.rsplit(".", 1)[-1].lower()
    by_leaf = [k.path for k in KEYS if k.path.rsplit(".", 1)[-1] == leaf and k.path != path]
    if len(by_leaf) == 1:
        return f"; did you mean '{by_leaf[0]}'?"
    target = DASK_NAMES.get(leaf) or WORDS.get(leaf)
    if target:
        notes = ([f"Dask's {leaf}"] if leaf in DASK_NAMES else []) + [_NOTES.get(target, "")]
        note = "; ".join(n for n in notes if n)
        return f"; did you mean '{target}'?" + (f" ({note})" if note else "")
    choices = [k.path for k in KEYS] + sorted(groups())
    close = difflib.get_close_matches(path, choices, n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else ""
