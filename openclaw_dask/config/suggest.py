"""The "did you mean" of an unknown config key.

Our users come from wiring Dask by hand, so an unknown key is as often Dask's name for a setting
(``n_workers``, ``memory_limit``, ``protocol``) or one of our keys under the wrong section
(``parallel.batch_size``) as it is a typo. Spelling distance alone answers the typos and
misleads on the rest (it offered ``distributed.tls.cert`` for ``distributed.transport``), so
names are tried in order: our key's own name under another section, the Dask name of a
setting, then the closest spelling.

A workflow parameter given as a config key (``--set size=128``, ``--set param.size=128``,
``OPENCLAW_PARAMS__SIZE``) is pointed at ``--set params.NAME=VALUE``, the only way to set one;
a near miss of one of our own ``OPENCLAW_*`` variables (``OPENCLAW_DEBUGG``) at that variable.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection

from openclaw_dask.config.schema import KEYS, KEYS_BY_PATH, groups

#: How a workflow parameter is set; said when one is given some other way.
PARAMS_HINT = "workflow parameters are set with submit --set params.NAME=VALUE"

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

#: Words that mean a key only in one section, by the whole unknown path (``key`` is the tls
#: key file in ``distributed.tls`` but the login key under ``distributed.ssh``).
IN_SECTION: dict[str, str] = {
    "distributed.ssh.key": "distributed.ssh.identity_file",
    "distributed.ssh.key_file": "distributed.ssh.identity_file",
    "distributed.ssh.private_key": "distributed.ssh.identity_file",
    "distributed.ssh.identity": "distributed.ssh.identity_file",
    "storage.compression": "storage.codec",
    "storage.compressor": "storage.codec",
    "storage.compression_level": "storage.level",
}

#: Why a Dask name maps to a key that is not a plain rename.
_NOTES: dict[str, str] = {
    "memory.per_thread_pool_size": "here per worker thread, or memory.global_pool per node",
    "parallel.thread_pool_size": "here the threads of all workers on a node",
}


def suggest_key(path: str, params: Collection[str] = ()) -> str:
    """``"; did you mean 'x'?"`` for an unknown dotted config key, or ``""``.

    Parameters
    ----------
    path
        The unknown dotted key.
    params
        Parameter names of the workflow being submitted, if any: a key that is one of them
        (or close to one) is pointed at ``params.NAME``.

    Returns
    -------
    str
        The hint, to append to ``"unknown key"``, or ``""``.

    Examples
    --------
    >>> suggest_key("distributed.protocol")
    "; did you mean 'distributed.communication_backend'? (Dask's protocol)"
    >>> suggest_key("parallel.batch_size")
    "; did you mean 'distributed.batch_size'?"
    >>> suggest_key("parallel.procesess")
    "; did you mean 'parallel.processes'?"
    >>> suggest_key("params")
    '; workflow parameters are set with submit --set params.NAME=VALUE'
    >>> suggest_key("size", params=["size", "seed"])[:31]
    "; did you mean 'params.size'? ("
    """
    as_param = _suggest_param(path, params)
    if as_param is not None:
        return as_param
    if path.lower() in IN_SECTION:
        return f"; did you mean '{IN_SECTION[path.lower()]}'?"
    section, _, leaf = path.lower().rpartition(".")
    # a key of the same section that the name begins (distributed.tls.ca: ca_file); the
    # spelling distance had offered the section itself
    begun = [k.path for k in KEYS if section and k.path.startswith(f"{section}.{leaf}")]
    if leaf and len(begun) == 1:
        return f"; did you mean '{begun[0]}'?"
    by_leaf = [k.path for k in KEYS if k.path.rsplit(".", 1)[-1] == leaf and k.path != path]
    if len(by_leaf) == 1:
        return f"; did you mean '{by_leaf[0]}'?"
    target = DASK_NAMES.get(leaf) or WORDS.get(leaf)
    if target:
        notes = ([f"Dask's {leaf}"] if leaf in DASK_NAMES else []) + [_NOTES.get(target, "")]
        note = "; ".join(n for n in notes if n)
        return f"; did you mean '{target}'?" + (f" ({note})" if note else "")
    # not a section the key is inside: it is there already, and the key is what is unknown
    choices = [k.path for k in KEYS] + sorted(
        g for g in groups() if not f"{path}.".startswith(f"{g}.")
    )
    close = difflib.get_close_matches(path, choices, n=1, cutoff=0.6)
    if close:
        return f"; did you mean '{close[0]}'?"
    # a misspelt parameter only after every config key: `--set procesess=3` means the config
    near = difflib.get_close_matches(path, list(params), n=1, cutoff=0.6) if "." not in path else []
    return f"; did you mean 'params.{near[0]}'? ({PARAMS_HINT})" if near else ""


def _suggest_param(path: str, params: Collection[str]) -> str | None:
    """The hint for a key that names a workflow parameter, or ``None`` when it does not.

    ``params.x`` itself (from the environment or a config file, where parameters are not
    read), a misspelt ``params`` section (``param.size``, ``parameters.size``) and a bare
    parameter name (``size``) count; a key or section of ours never does.
    """
    head, dot, leaf = path.partition(".")
    if path in KEYS_BY_PATH or (not dot and path in groups()):
        return None
    if head == "params":
        return f"; {PARAMS_HINT}"
    # "params" misspelt, when no section of ours is closer ("parall.processes" is parallel)
    sections = [g for g in groups() if "." not in g] + ["params"]
    closest = difflib.get_close_matches(head.lower(), sections, n=1, cutoff=0.65)
    if not dot and path in params:
        # exact: the name is the workflow's own, whatever config word it resembles
        return f"; did you mean 'params.{path}'? ({PARAMS_HINT})"
    if closest == ["params"] and not dot:
        return f"; {PARAMS_HINT}"
    if closest == ["params"] and "." not in leaf:
        near = difflib.get_close_matches(leaf, list(params), n=1, cutoff=0.6)
        return f"; did you mean 'params.{near[0] if near else leaf}'? ({PARAMS_HINT})"
    return None


def suggest_env(name: str, variables: Collection[str]) -> str:
    """``"; did you mean 'OPENCLAW_X'?"`` for an unknown ``OPENCLAW_*`` variable, or ``""``.

    Parameters
    ----------
    name
        The variable, ``OPENCLAW_`` prefix included.
    variables
        The ``OPENCLAW_*`` variables the program reads that are not config keys
        (``OPENCLAW_DEBUG``, ``OPENCLAW_CONFIG``, ...).

    Returns
    -------
    str
        The hint, to append to ``"unknown key"``.
    """
    dotted = name.removeprefix("OPENCLAW_").lower().replace("__", ".")
    if dotted.partition(".")[0] == "params":
        return f"; {PARAMS_HINT}, not environment variables"
    if "__" not in name:
        # without __ a name is a whole section, never a key: a typo of a variable of ours is
        # likelier than a section given a single value
        close = difflib.get_close_matches(name, sorted(variables), n=1, cutoff=0.8)
        if close:
            return f"; did you mean '{close[0]}'?"
    return suggest_key(dotted)
