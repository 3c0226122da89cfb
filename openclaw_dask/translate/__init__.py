"""Pure translation of a validated config (+ hardware) into a :class:`ClusterPlan`.

One module per backend, like distributed's ``deploy/``: user-facing classes only translate
options onto specs; here the translation is explicit, printable and testable.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from openclaw_dask.config.arguments import check_backend, check_hardware_arg, check_instance
from openclaw_dask.config.errors import ConfigError
from openclaw_dask.config.hardware import Hardware, detect_hardware
from openclaw_dask.config.layout import resolve_backend
from openclaw_dask.config.loader import Config, load_config
from openclaw_dask.config.validate import check_hardware, check_threads, locate
from openclaw_dask.translate.cuda import plan_cuda
from openclaw_dask.translate.local import plan_local
from openclaw_dask.translate.mpi import plan_mpi
from openclaw_dask.translate.plan import ClusterPlan, user_set, worker_plugins
from openclaw_dask.translate.ssh import plan_ssh

PLANNERS = {"local": plan_local, "cuda": plan_cuda, "ssh": plan_ssh, "mpi": plan_mpi}

#: Keys that shape the workers a cluster starts with; a running scheduler's workers keep
#: theirs (the result-relevant ones, such as the allocator, are checked when attaching).
WORKER_SHAPE = (
    "parallel.thread_pool_size",
    "parallel.processes",
    "parallel.thread_affinity",
    "memory.per_thread_pool_size",
    "memory.global_pool",
    "memory.spill.",
    "gpu.",
    "cluster.dashboard_address",
    "cluster.interface",
    "distributed.nodes",
    "distributed.communication_backend",
    "distributed.rdma",
)


def worker_shape(config: Config) -> dict[str, Any]:
    """The values of ``config`` that shape its cluster's workers (:data:`WORKER_SHAPE`): what a
    config that attaches to that cluster cannot change."""
    return {k: v for k, v in config.values.items() if k.startswith(WORKER_SHAPE)}


def plan_cluster(
    config: Config,
    hardware: Hardware | None = None,
    backend: str | None = None,
    strict: bool = True,
    *,
    running: Mapping[str, Any] | None = None,
) -> ClusterPlan:
    """Translate ``config`` into the plan of the cluster it asks for.

    Parameters
    ----------
    config
        A loaded config (:func:`openclaw_dask.load_config`).
    hardware
        The machine to plan for (default: this one). Pass another machine's description to
        plan for it, e.g. a GPU workstation from a laptop.
    backend
        Force a backend (``local``, ``cuda``, ``ssh``, ``mpi``) instead of ``cluster.backend``.
    strict
        Raise :class:`ConfigError` when the config does not fit the machine (missing GPUs,
        cores or allocator library). When false, those problems become ``plan.warnings``
        (``config plan`` is a dry run and may describe a cluster for another machine).
    running
        When ``config`` attaches to a ``cluster up`` cluster: the worker-shaping values that
        cluster was started with (its state file's ``shape``). A value given here that equals
        the running cluster's is in force there, and is not said to be unapplied: `config
        init`'s starter file, which writes every key, had a run name 19 keys so.

    Returns
    -------
    ClusterPlan

    Raises
    ------
    ConfigError
        The config does not fit the machine (with ``strict``), or it attaches to a running
        scheduler (``cluster.scheduler_address``) while ``backend`` forces one to start.
    """
    check_instance(
        "plan_cluster",
        "config",
        config,
        Config,
        "an openclaw_dask.Config",
        " (load_config(path) reads one from a file)",
    )
    check_hardware_arg("plan_cluster", hardware)
    check_backend(backend)
    hw = hardware or detect_hardware()
    values = config.values
    # a forced backend never attaches: the address the user gave (run_workflow(address=A,
    # backend="local"), submit --address A --backend local) had been dropped in silence and a
    # cluster started; config.validate refuses the same for cluster.backend (an address taken
    # from the `cluster up` cluster is not the user's: see there)
    theirs = not config.sources.get("cluster.scheduler_address", "").startswith("cluster up")
    if backend is not None and values["cluster.scheduler_address"] and theirs:
        message = (
            f"attaches to a running scheduler, but backend {backend} starts one; remove one of them"
        )
        problem = locate("cluster.scheduler_address", config.sources, message, config.line_of)
        raise ConfigError([problem])
    attach = backend is None and values["cluster.scheduler_address"]
    chosen = "local" if attach else backend or resolve_backend(values, hw)
    too_many = check_threads(values, config.sources, hw, chosen, config.line_of)
    if too_many and not attach:
        # fatal even for a dry run: no layout can be worked out for such a count (Dask's
        # factor search alone may take hours), so there is no plan to show
        raise ConfigError(too_many)
    if attach:
        # the running cluster keeps its own workers (the note below says thread_pool_size is
        # not applied), so a count this machine could not run must not stop the attach plan
        if too_many:
            config = replace(config, values={**values, "parallel.thread_pool_size": "auto"})
        plan = plan_local(config, hw)
        plan.backend, plan.cluster_class, plan.cluster_kwargs = "attach", None, {}
        plan.address = values["cluster.scheduler_address"]
        origin = config.sources.get("cluster.scheduler_address", "default")
        plan.notes.append(f"attaching to the running scheduler ({origin}); nothing is started")
        theirs = running or {}
        ignored = [
            f"{key} ({config.sources[key]})"
            for key in sorted(config.values)
            if key.startswith(WORKER_SHAPE)
            and user_set(config, key)
            and (key not in theirs or theirs[key] != values[key])
        ]
        if ignored:
            hint = "; `openclaw-dask cluster down` lets this config start its own"
            plan.unapplied.append(
                "not applied, the running cluster keeps its own workers: "
                + ", ".join(ignored)
                + (hint if origin.startswith("cluster up") else "")
            )
        return plan
    if chosen == "ssh" and not values["distributed.nodes"]:
        raise ConfigError(
            [
                locate(
                    "distributed.nodes",
                    config.sources,
                    "the ssh backend needs at least one node here",
                )
            ]
        )
    problems = check_hardware(values, config.sources, hw, chosen, config.line_of)
    if problems and strict:
        raise ConfigError(problems)
    plan = PLANNERS[chosen](config, hw)
    plan.warnings += [str(p) for p in problems]
    if values["cluster.backend"] == "auto" and backend is None:
        plan.notes.insert(0, f"cluster.backend: auto resolved to {chosen!r} on this machine")
        if values["gpu.devices"] and not hw.gpus:
            plan.unapplied.insert(0, "gpu.devices is set but no GPU was found: using CPU workers")
            if values["memory.global_pool"] != "auto":
                plan.unapplied.insert(
                    1,
                    "memory.global_pool: the RMM pool of each GPU worker, not applied to the "
                    "CPU workers (their budget: memory.per_thread_pool_size, or Dask's auto)",
                )
    return plan


def load_and_plan(
    path: str | None = None,
    overrides: Iterable[str] | None = None,
    hardware: Hardware | None = None,
    backend: str | None = None,
) -> tuple[Config, ClusterPlan]:
    """Load a config and plan it strictly, reporting file *and* machine problems together.

    :func:`load_config` stops before the hardware checks when the file itself has problems;
    here the machine is still checked against what could be read, so a user fixing a config
    sees every problem in one run.

    Raises
    ------
    ConfigError
        With every problem found.
    """
    hw = hardware or detect_hardware()
    try:
        config = load_config(path, overrides)
    except ConfigError as exc:
        partial = exc.partial
        if partial is not None and not partial.values["cluster.scheduler_address"]:
            chosen = backend or resolve_backend(partial.values, hw)
            known = {p.key for p in exc.problems}
            extra = check_hardware(partial.values, partial.sources, hw, chosen, partial.line_of)
            # a count beyond the machine is said beside a file rule on the same key (1000
            # threads over 3 processes): fixing only "a multiple of 3" would meet it next run
            limit = check_threads(partial.values, partial.sources, hw, chosen, partial.line_of)
            exc.problems += [p for p in extra if p.key not in known or p in limit]
        raise
    return config, plan_cluster(config, hw, backend=backend)


__all__ = [
    "PLANNERS",
    "ClusterPlan",
    "load_and_plan",
    "plan_cluster",
    "worker_plugins",
    "worker_shape",
]
