"""``benchmark()``: start the configured cluster once and run the chosen suites on it."""

from __future__ import annotations

import os
import re
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from distributed import Client

from openclaw_dask.bench.load import early_note, watch_end, watch_start
from openclaw_dask.bench.machine import config_facts, machine_facts, versions
from openclaw_dask.bench.suite import BenchContext
from openclaw_dask.bench.suites import NAMES, suite
from openclaw_dask.config import Config, ConfigError, detect_hardware, load_config
from openclaw_dask.config.arguments import (
    check_callable,
    check_flag,
    check_names,
    check_overrides,
    check_path,
)
from openclaw_dask.config.errors import Problem, did_you_mean
from openclaw_dask.runtime import start_cluster
from openclaw_dask.runtime.cluster import dashboard_link
from openclaw_dask.translate import ClusterPlan, plan_cluster
from openclaw_dask.workflows.recovery import prepare_to_continue

T = TypeVar("T")


class BenchmarkSuiteError(Exception):
    """A suite of :func:`benchmark` raised: the report of the suites that finished before it.

    Parameters
    ----------
    report : dict
        As :func:`benchmark` returns, with ``"failed": {"suite", "error"}`` and the names of
        the suites ``"not_run"``.
    suite : str
        The suite that failed.
    error : BaseException
        What it raised.
    workdir : Path
        The suites' scratch folder (removed by now), for a message about its free space.
    """

    def __init__(
        self, report: dict[str, Any], suite: str, error: BaseException, workdir: Path
    ) -> None:
        super().__init__(f"suite {suite} failed: {type(error).__name__}: {error}")
        self.report, self.suite, self.error, self.workdir = report, suite, error, workdir


class BenchmarkInterrupted(KeyboardInterrupt):
    """Ctrl-C during :func:`benchmark`, with the report of the suites that had finished."""

    def __init__(self, report: dict[str, Any]) -> None:
        super().__init__("benchmark interrupted")
        self.report = report


def lost_workers_note(lost: Collection[str], during: str) -> str:
    """One line for workers that died while something was measured.

    Parameters
    ----------
    lost : collection of str
        The address of each worker that died, once per death (:func:`workers_lost`).
    during : str
        What was measured (``suite``, ``trial``, ``final comparison``).
    """
    return (
        f"{len(lost)} worker(s) died during this {during} ({addresses_text(lost)}); "
        "its figures include the loss and the restart"
    )


def addresses_text(lost: Iterable[str]) -> str:
    """``A, B (2 times)``: the addresses of :func:`workers_lost`, one that died again (restarted
    on its pinned port) said once with its count."""
    counts = Counter(lost)
    return ", ".join(
        address if n == 1 else f"{address} ({n} times)" for address, n in sorted(counts.items())
    )


def failed_first_note(lost: Collection[str], during: str) -> str:
    """One line for workers whose death failed the first run of a suite or trial, which was
    then run again (:func:`again_if_a_worker_died`)."""
    return (
        f"{len(lost)} worker(s) died during this {during}'s first run ({addresses_text(lost)}),"
        " which failed: these figures are its second"
    )


@dataclass(frozen=True)
class Watch:
    """A cluster's workers from one moment on (:func:`watch_workers`, :func:`workers_lost`)."""

    #: the scheduler's clock then: the removals its event log holds from then on are deaths
    since: float
    #: each worker's address and ``server_id`` then: a worker restarted by its nanny is a new
    #: process under a new id, and under the same address when its port is pinned
    ids: dict[str, str]


def watch_workers(client: Client) -> Watch:
    """Start watching the cluster's workers: pass the result to :func:`workers_lost` later."""

    # a closure, so that it travels by value: an SSH node's scheduler may run another release
    def mark(dask_scheduler: Any) -> tuple[float, dict[str, str]]:
        from distributed.metrics import time as now  # the clock of the scheduler's events

        return now(), {address: ws.server_id for address, ws in dask_scheduler.workers.items()}

    since, ids = client.run_on_scheduler(mark)
    return Watch(since, dict(ids))


def workers_lost(client: Client, watch: Watch) -> list[str]:
    """The address of each worker that died since ``watch`` (:func:`watch_workers`).

    One entry per death, from the scheduler's ``remove-worker`` events: a worker that died
    twice is there twice (under one address when its port is pinned), and one that joined
    after ``watch`` and died is there too; comparing the workers then and now saw neither.
    That comparison still adds a death the event log no longer holds (it keeps the last
    ``distributed.admin.low-level-log-length`` events): an address whose process changed.
    """

    def removed(dask_scheduler: Any, since: float) -> tuple[list[str], dict[str, str]]:
        deaths = [
            msg["worker"]
            for stamp, msg in dask_scheduler.get_events("all")
            if stamp >= since and isinstance(msg, dict) and msg.get("action") == "remove-worker"
        ]
        ids = {address: ws.server_id for address, ws in dask_scheduler.workers.items()}
        return deaths, ids

    deaths, now = client.run_on_scheduler(removed, since=watch.since)
    missed = [a for a, id_ in watch.ids.items() if now.get(a) != id_ and a not in deaths]
    return sorted([*deaths, *missed])


class WorkersDiedError(RuntimeError):
    """Work that failed twice as workers died under it (:func:`again_if_a_worker_died`)."""


def again_if_a_worker_died(
    client: Client, work: Callable[[], T], redo: Callable[[], T] | None = None
) -> tuple[T, list[str]]:
    """``work()``; if it raised as a worker died, once more once the workers are back.

    Dask recomputes what a dead worker held from its lineage, but not data placed on it by
    hand: the stencil's latitude bands (and the climate workload's) live on their home
    workers, so a death failed the whole suite, or the whole ``tune``, with "FuturesCancelled
    ... already forgotten". A worker dies of something a second run may not meet (killed, the
    machine's memory taken by another process), so the work is done again from the start on
    the restarted workers; a second failure with a death says so in words.

    Parameters
    ----------
    client
        The cluster's client.
    work
        Does the work and returns its result.
    redo
        The second try, when ``work`` uses data placed before it (the bands it ran on are
        gone): places them anew, then does the work. ``None``: ``work`` again, which places
        its own data.

    Returns
    -------
    tuple
        ``work``'s result, and the addresses of the workers whose death failed a first try
        (empty: it went through the first time).

    Raises
    ------
    WorkersDiedError
        Workers died during both tries (out of memory each time, say).
    """
    before = watch_workers(client)
    try:
        return work(), []
    except Exception:
        lost = workers_lost(client, before)
        if not lost:
            raise
    prepare_to_continue(client, len(before.ids))  # (outside the except: no chained traceback)
    before = watch_workers(client)
    try:
        return (redo or work)(), lost
    except Exception as exc:
        again = workers_lost(client, before)
        if not again:
            raise
        raise WorkersDiedError(
            f"worker(s) died under it twice ({addresses_text(lost)}, "
            f"then {addresses_text(again)}): "
            "killed, or out of memory (memory.per_thread_pool_size, memory.global_pool); "
            f"the last error: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        ) from None


def check_suites(names: Sequence[str] | None) -> list[str]:
    """Validate suite names (``None``: all); unknown ones are bad input."""
    if not names:
        return list(NAMES)
    problems = [
        Problem(
            f"unknown suite {name!r}; suites: {', '.join(NAMES)}{_suite_hint(name)}",
            origin="--suite",
        )
        for name in names
        if name not in NAMES
    ]
    if problems:
        raise ConfigError(problems)
    return list(dict.fromkeys(names))


def _suite_hint(name: str) -> str:
    """``; did you mean 'matmul'?``, or for suites joined by another separator than a comma
    (``matmul stencil``, ``matmul;stencil``: "did you mean 'stencil'?" had been said) the
    comma-separated list."""
    parts = [p for p in re.split(r"[\s;:|+/]+", name) if p]
    if len(parts) > 1 and all(p in NAMES for p in parts):
        return f"; separate suites with commas: --suite {','.join(parts)}"
    return did_you_mean(name, NAMES)


def config_argument(func: str, config: Any, overrides: Any) -> Config:
    """The config :func:`benchmark` or :func:`~openclaw_dask.bench.tune.tune` measures, from
    their ``config`` and ``overrides`` arguments.

    A string of overrides had been read a letter at a time, and overrides given with a loaded
    Config were dropped without a word (the run measured the config without them); they are
    applied to it now, as ``run_workflow`` and ``start_cluster`` do.

    Raises
    ------
    TypeError
        ``config`` is neither a Config nor a path, or ``overrides`` not a list of strings or a
        mapping.
    ConfigError
        The config's own problems.
    """
    check_overrides(func, overrides)
    if isinstance(config, Config):
        return config.with_overrides(overrides)
    config = check_path(func, "config (a Config or its file)", config)
    return load_config(config, overrides)


def plan_facts(plan: ClusterPlan) -> dict[str, Any]:
    """What a report records of the cluster its config plans: the backend, the layout, and
    the plan's notes and the settings it does not apply (``config plan`` lists the same)."""
    return {
        "backend": plan.backend,
        "layout": plan.layout,
        "notes": list(plan.notes),
        "unapplied": list(plan.unapplied),
    }


def _measured(ctx: BenchContext, name: str) -> tuple[dict[str, Any], list[str]]:
    """Suite ``name``'s result, and the workers that died while it ran (it went on)."""
    workers = watch_workers(ctx.client)
    result = suite(name)(ctx).to_dict()
    return result, workers_lost(ctx.client, workers)


def benchmark(
    config: Config | str | os.PathLike[str] | None = None,
    *,
    overrides: Iterable[str] | Mapping[str, Any] | None = None,
    suites: Sequence[str] | None = None,
    quick: bool = False,
    on_suite: Callable[[str], None] | None = None,
    on_note: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Run benchmark suites on the cluster ``config`` plans.

    Parameters
    ----------
    config
        A loaded Config, a path, or ``None`` for the search order.
    overrides
        ``["key=value", ...]`` (or a mapping, as :func:`~openclaw_dask.load_config` takes) applied
        to the config, loaded or read.
    suites
        Suite names (default: all of :data:`~openclaw_dask.bench.suites.NAMES`).
    quick
        Small sizes and one repeat (CI).
    on_suite
        Called with each suite's name before it starts (progress display).
    on_note
        Called with a note while it runs: other processes busy on the machine in the cluster's
        first seconds (:func:`~.load.early_note`).

    Returns
    -------
    dict
        ``{"config_hash", "config", "suites_requested", "machine", "versions", "cluster",
        "quick", "suites": {name: ...}, "wall_seconds", "background"}``; each suite as
        :meth:`SuiteResult.to_dict`; ``config`` as :func:`~.machine.config_facts`;
        ``background`` the cores other processes took meanwhile
        (:func:`~.load.background_load`; ``None`` for ssh and mpi clusters).

    Raises
    ------
    BenchmarkInterrupted
        On Ctrl-C after at least one suite finished: its ``report`` holds those suites,
        ``"interrupted": True`` and the names of the suites ``"not_run"``.
    BenchmarkSuiteError
        When a suite raises: its ``report`` holds the suites that finished before it, the
        failure and the suites not run (the suites measure independent things, but a suite
        that failed may have left the cluster short of workers or memory, so none follows).
    TypeError
        An argument of the wrong type (a string where a list belongs, a ``quick`` that is not
        True or False, a callback that is not a function).
    ValueError
        ``suites`` empty: it had run every suite, minutes the caller did not ask for.
    """
    config = config_argument("benchmark", config, overrides)
    check_names("benchmark", "suites", suites)
    if suites is not None:
        suites = list(suites)
        if not suites:  # (a filtered list that came out empty) refused as `--suite ""` is
            raise ValueError(
                f"benchmark: suites names none: give some of {', '.join(NAMES)}, or None for "
                "every suite"
            )
    # quick="no" is true to Python: it had run the quick sizes, and a callback that is not
    # one had failed only once the first suite began, after the cluster's start
    check_flag("benchmark", "quick", quick)
    check_callable("benchmark", "on_suite", on_suite, "one str")
    check_callable("benchmark", "on_note", on_note, "one str")
    names = check_suites(suites)
    hw = detect_hardware()
    plan = plan_cluster(config, hw)
    report: dict[str, Any] = {
        "config_hash": config.config_hash(),
        "config_file": str(config.file) if config.file else None,
        "config": config_facts(config),  # the values measured, and any --set among them
        "suites_requested": names,
        "machine": machine_facts(hw),
        "versions": versions(),
        "quick": quick,
        "started": time.time(),  # seconds since the epoch, as run.json's
        "plan": plan_facts(plan),
        "suites": {},
    }
    # what the config asks for and the cluster will not do (gpu.devices on a machine without
    # a GPU: CPU workers) had been said by `submit` and `config plan`, not here
    for note in plan.unapplied:
        if on_note:
            on_note(note)
    t0 = time.perf_counter()
    watched = watch_start(config, hw)  # what the rest of the machine takes meanwhile
    # the scratch folder outlives the cluster: after a failed suite its other tasks may still
    # write there until the workers stop, and removing it first failed ("Directory not empty"),
    # an error that replaced the suite's own; a leftover file never hides the results either
    with (
        tempfile.TemporaryDirectory(prefix="openclaw-bench-", ignore_cleanup_errors=True) as tmp,
        start_cluster(config, hardware=hw, attach_running=False) as client,
        client.as_current(),
    ):
        report["cluster"] = {
            "workers": len(client.nthreads()),
            "threads": sum(client.nthreads().values()),
            "dashboard": dashboard_link(client),
        }
        ctx = BenchContext(client, config, hw, quick, Path(tmp))
        busy = early_note(watched, len(hw.usable_cores))
        if busy and on_note:
            on_note(busy)
        try:
            for name in names:
                if on_suite:
                    on_suite(name)
                s0 = time.perf_counter()
                measured, failed = again_if_a_worker_died(client, partial(_measured, ctx, name))
                result, lost = measured
                result["wall_seconds"] = time.perf_counter() - s0
                # Dask's own logs of a worker's death are kept off the terminal: say it here
                if failed:
                    result["notes"].append(failed_first_note(failed, "suite"))
                if lost:
                    result["notes"].append(lost_workers_note(lost, "suite"))
                report["suites"][name] = result
        except KeyboardInterrupt:
            if not report["suites"]:
                raise
            report["wall_seconds"] = time.perf_counter() - t0
            report["background"] = watch_end(watched)
            report["not_run"] = [n for n in names if n not in report["suites"]]
            raise BenchmarkInterrupted({**report, "interrupted": True}) from None
        except Exception as exc:  # what finished before stays measured (it used to be lost)
            report["wall_seconds"] = time.perf_counter() - t0
            report["background"] = watch_end(watched)
            report["failed"] = {"suite": name, "error": f"{type(exc).__name__}: {exc}"}
            report["not_run"] = names[names.index(name) + 1 :]
            raise BenchmarkSuiteError(report, name, exc, Path(tmp)) from exc
    report["wall_seconds"] = time.perf_counter() - t0
    report["background"] = watch_end(watched)
    return report
