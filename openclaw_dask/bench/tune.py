"""``tune()``: the seed's manual tuning procedure, automated and measured.

1. Baseline: the config as given.
2. Thread pool and process count: total threads around the physical core count (the seed's
   "±2"), each as one process or one thread per process; worker context switches recorded; the
   sweep stops at the first thread count that is not faster than the one before.
3. CPU affinity (``parallel.thread_affinity``: compact, scatter): pinned worker threads ran the
   halo-exchanging climate stencil 8-10 % faster on the 2-core development VM, where an
   unpinned pair of workers finishes each batch at the pace of the slower one.
4. Allocator: system malloc and every allocator installed here.
5. ``distributed.batch_size`` (workloads that use it) and ``distributed.compression`` (only
   when workers are on different hosts: Dask never compresses between processes on one host,
   so there is nothing to measure; the report says so).
6. The best candidate is measured against the baseline again in interleaved pairs (both
   clusters up at once, runs alternating). It is recommended only if it wins; otherwise the
   tuned config is the baseline, and the report says that nothing measured faster. A pair
   during which a worker of either cluster died is measured again and does not count
   (``bench/tune_pairs.py``); the tuned config's header names the cluster and the workers.

Every trial starts a real cluster from a real config (``Config.with_values``), so a candidate
that the config rules refuse on this machine is skipped with the rule's message.

The budget is a promise of wall time. The baseline counts against it; a candidate starts only
when it fits (each is expected to take as long as the longest trial so far, and the final
comparison as long as two) and the final comparison only when it fits what is left; once the
budget is spent a trial's timed runs stop (the baseline keeps one at least). What runs past
the budget is then at most one timed run of the workload and a cluster's shutdown, unless the
baseline alone takes longer than the budget (a cluster slow to start): it always runs whole,
and the report's budget note says how long it took.
"""

from __future__ import annotations

import json
import math
import os
import statistics
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import psutil
from distributed import Client

from openclaw_dask.bench.load import (
    CpuSnapshot,
    early_note,
    load_note,
    watch_end,
    watch_start,
)
from openclaw_dask.bench.machine import config_facts, machine_facts, values_set, versions
from openclaw_dask.bench.run import (
    Watch,
    WorkersDiedError,
    again_if_a_worker_died,
    config_argument,
    failed_first_note,
    lost_workers_note,
    plan_facts,
    watch_workers,
    workers_lost,
)
from openclaw_dask.bench.tune_pairs import (
    MIN_PAIRS,
    candidate_won,
    death_notes,
    failed_note,
    speedup_text,
    summary,
    too_few_pairs,
)
from openclaw_dask.bench.workloads import Workload, describe_rate, workload
from openclaw_dask.config import Config, ConfigError, Hardware, detect_hardware
from openclaw_dask.config.arguments import check_callable, check_instance
from openclaw_dask.config.render import yaml_value
from openclaw_dask.config.schema import KEYS, KEYS_BY_PATH, SECTIONS
from openclaw_dask.config.validate import locate
from openclaw_dask.runtime import start_cluster
from openclaw_dask.translate import plan_cluster
from openclaw_dask.workflows.recovery import prepare_to_continue
from openclaw_dask.workflows.run import StepFailedError

#: a candidate must beat the best so far by this much to count as an improvement
MIN_GAIN = 1.02
#: share of the budget kept for the final interleaved comparison
FINAL_SHARE = 0.3
#: why a candidate was not measured when the sweep's share of the budget ran out
BUDGET_SPENT = "budget spent"
#: the shortest ``tune --budget``: the command's start, the baseline (a cluster's start, a
#: warm-up, 3 timed runs: 4-10 s for the stencil on the 2-core VM, busy or not) and the reports
MIN_BUDGET_S = 20.0


@dataclass
class Trial:
    """One measured candidate config."""

    stage: str
    changes: dict[str, Any]
    samples: list[float] = field(default_factory=list)
    ctx_switches: dict[str, int] = field(default_factory=dict)
    #: the address of each worker that died during the trial, once per death (its figures
    #: include the loss)
    workers_lost: list[str] = field(default_factory=list)
    skipped: str | None = None
    #: seconds the trial took: cluster start, warm-up, repeats, shutdown
    wall_s: float = 0.0

    @property
    def rate(self) -> float:
        """Median work per second (0 when skipped)."""
        return statistics.median(self.samples) if self.samples else 0.0

    def label(self) -> str:
        """``key=value, ...`` of the changes (``baseline`` when none)."""
        return ", ".join(f"{k}={v}" for k, v in self.changes.items()) or "baseline"

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "stage": self.stage,
            "changes": self.changes,
            "rate_median": self.rate,
            "rate_samples": self.samples,
            "ctx_switches_per_worker": self.ctx_switches,
            "workers_lost": self.workers_lost,
            "skipped": self.skipped,
            "wall_s": self.wall_s,
        }


#: what the trial that Ctrl-C cut short says in an interrupted report
CUT_SHORT = "interrupted"


class TuneInterrupted(KeyboardInterrupt):
    """Ctrl-C during :func:`tune`, with the report of the trials measured before it."""

    def __init__(self, report: dict[str, Any]) -> None:
        super().__init__("tune interrupted")
        self.report = report


def _ctx_switches() -> int:
    c = psutil.Process().num_ctx_switches()
    return c.voluntary + c.involuntary


class Tuner:
    """Runs trials within a time budget (see the module docstring for the procedure)."""

    def __init__(
        self,
        base: Config,
        work: Workload,
        budget: float,
        hw: Hardware,
        log: Callable[[str], None],
        repeats: int = 3,
    ) -> None:
        self.base, self.work, self.hw, self.log, self.repeats = base, work, hw, log, repeats
        self.deadline = time.monotonic() + budget
        self.sweep_deadline = time.monotonic() + budget * (1 - FINAL_SHARE)
        #: why the final comparison was not made (the budget left would not hold it)
        self.final_skipped: str | None = None
        self.trials: list[Trial] = []
        self.skips: list[str] = []
        #: identity of each measured cluster -> its trial (no layout is measured twice)
        self.seen: dict[str, Trial] = {}
        #: key -> why it changed (the stage, and the rates before and after)
        self.reasons: dict[str, str] = {}
        self.watched: CpuSnapshot | None = None  # (see openclaw_dask.bench.load)

    def config_for(self, changes: dict[str, Any]) -> Config:
        """The baseline with ``changes`` applied and re-checked."""
        return self.base.with_values(**{k.replace(".", "__"): v for k, v in changes.items()})

    def trial_config(self, changes: dict[str, Any]) -> Config:
        """What a trial's cluster starts from: its dashboard on a free port (two run at once)."""
        config = self.config_for(changes)
        if config["cluster.dashboard_address"] is not None:
            config = config.with_values(cluster__dashboard_address="127.0.0.1:0")
        return config

    def trial_estimate(self) -> float:
        """Seconds a trial is expected to take: the longest measured so far (a candidate's
        cluster starts, warms up and runs as the baseline's did)."""
        return max((t.wall_s for t in self.trials if t.samples and not t.skipped), default=0.0)

    def fits(self) -> bool:
        """Whether one more trial ends within the sweep's share of the budget, leaving the
        final comparison (two clusters at once: about two trials) its time."""
        now, trial = time.monotonic(), self.trial_estimate()
        return now + trial <= min(self.sweep_deadline, self.deadline - 2 * trial)

    def identity(self, config: Config) -> str:
        """What makes two candidates the same run: the planned layout, the tuned keys, and
        the graph ``distributed.batch_size`` makes where the workload says (two values of K
        that give one band and a whole segment per task are one graph)."""
        plan = plan_cluster(config, self.hw)
        keys = ("memory.allocator", "distributed.compression")
        batch: Any = config["distributed.batch_size"]
        if self.work.graph_shape is not None:
            nodes = plan.layout.get("nodes", [plan.layout])  # ssh plans: one layout per node
            threads = sum(int(node["threads"]) for node in nodes)
            processes = sum(int(node["processes"]) for node in nodes)
            batch = self.work.graph_shape(threads, processes, int(batch))
        return json.dumps(
            [plan.layout, [config[k] for k in keys], batch], sort_keys=True, default=str
        )

    def measure(self, stage: str, changes: dict[str, Any], strict: bool = False) -> Trial:
        """Start the candidate's cluster, warm up, time ``repeats`` runs.

        A candidate the config rules refuse, whose workers die under it twice or whose
        workflow's step fails is skipped with what was said (raised with ``strict``: the
        baseline itself must run).
        """
        trial = Trial(stage, dict(changes))
        self.trials.append(trial)
        started = time.monotonic()
        # a trial started just before the sweep's deadline ran a whole trial past it
        if not strict and not self.fits():
            trial.skipped = BUDGET_SPENT
            return trial
        failed: list[str] = []  # workers whose death failed a first try (then run again)
        lost: list[str] = []  # and those that died in the timed runs, which went on
        try:
            config = self.trial_config(changes)
            same = self.seen.get(self.identity(config))
            if same is not None:
                trial.skipped = f"the same cluster and task graph as {same.label()}"
                trial.samples = list(same.samples)
                self.log(f"{stage:<10} {trial.label():<55} {trial.skipped}")
                return trial
            self.seen[self.identity(config)] = trial
            with (
                start_cluster(config, hardware=self.hw, attach_running=False) as client,
                client.as_current(),
            ):
                # a death that fails the work (the bands placed on that worker are gone) runs
                # the trial again on the restarted workers; one it survives is in its figures
                timed, failed = again_if_a_worker_died(client, lambda: self._timed(client, config))
                trial.samples, trial.ctx_switches, lost = timed
                trial.workers_lost = sorted([*failed, *lost])  # each death once, of either try
        except ConfigError as exc:
            if strict:
                raise
            trial.skipped = "; ".join(p.message for p in exc.problems)
        except (WorkersDiedError, StepFailedError) as exc:
            # out of memory each time, say, or a workflow's step that fails with this config
            # (it had ended the tune, and what was measured with it): the next candidate
            if strict:
                raise
            trial.skipped = str(exc)
        trial.wall_s = time.monotonic() - started
        shown = f"skipped: {trial.skipped}" if trial.skipped else self.rate_text(trial.rate)
        # Dask's own logs of a death are kept off the terminal: say it
        if failed:
            shown += f"; {failed_first_note(failed, 'trial')}"
        if lost:
            shown += f"; {lost_workers_note(lost, 'trial')}"
        self.log(f"{stage:<10} {trial.label():<55} {shown}")
        return trial

    def _timed(
        self, client: Client, config: Config
    ) -> tuple[list[float], dict[str, int], list[str]]:
        """Prepare the workload, warm up, time ``repeats`` runs: the rates, each worker's
        context switches per run, and the workers that died meanwhile (the runs went on)."""
        workers = watch_workers(client)
        run = self.work.prepare(client, config)
        run()  # warm-up
        before = client.run(_ctx_switches)
        samples: list[float] = []
        for _ in range(self.repeats):
            if samples and time.monotonic() > self.deadline:  # the budget is spent: stop
                break
            t0 = time.perf_counter()
            amount = run()
            samples.append(amount / (time.perf_counter() - t0))
        after = client.run(_ctx_switches)
        lost = workers_lost(client, workers)
        # a worker restarted meanwhile (killed, out of memory) counts from zero, under another
        # address or (a pinned port) the same: only the workers that ran every timed run count
        ran = set(before) & set(after) - set(lost)
        per_run = {w: (after[w] - before[w]) // len(samples) for w in ran}
        return samples, per_run, lost

    def rate_text(self, rate: float) -> str:
        """A rate of this workload in readable units."""
        return describe_rate(rate, self.work.unit)

    def adopt(self, best: Trial, candidate: Trial) -> Trial:
        """``candidate`` if it beats ``best`` by :data:`MIN_GAIN`, recording why."""
        if not candidate.samples or candidate.rate <= best.rate * MIN_GAIN:
            return best
        for key, value in candidate.changes.items():
            if best.changes.get(key, self.base[key]) != value:
                self.reasons[key] = (
                    f"{candidate.stage} sweep measured {self.rate_text(candidate.rate)} "
                    f"vs {self.rate_text(best.rate)}"
                )
        return candidate

    def best(self, trials: Sequence[Trial]) -> Trial:
        """The fastest measured trial of ``trials``."""
        return max((t for t in trials if t.samples), key=lambda t: t.rate)

    # -- the stages ------------------------------------------------------------------------
    def sweep_threads(self, base: Trial) -> Trial:
        """Total threads from physical cores - 2 to + 2; one process, or one thread each."""
        physical = self.hw.physical_cores
        best = base
        previous_best = None
        for total in range(max(1, physical - 2), physical + 3):
            layouts = {1, total} if total > 1 else {1}
            here = [
                self.measure(
                    "threads", {"parallel.thread_pool_size": total, "parallel.processes": p}
                )
                for p in sorted(layouts)
            ]
            measured = [t for t in here if t.samples]
            if not measured:
                continue
            top = self.best(measured)
            best = self.adopt(best, top)
            if previous_best is not None and total > physical and top.rate <= previous_best:
                self.log(f"threads: {total} is not faster than {total - 1}; stopping the sweep")
                break
            previous_best = top.rate
        return best

    def sweep(self, stage: str, key: str, values: Sequence[Any], best: Trial) -> Trial:
        """Try ``key`` at each value on top of ``best``'s changes."""
        for value in values:
            if best.changes.get(key, self.base[key]) == value:
                continue
            best = self.adopt(best, self.measure(stage, {**best.changes, key: value}))
        return best

    def compare(self, winner: Trial, pairs: int) -> dict[str, Any]:
        """Baseline vs ``winner`` in interleaved pairs, both clusters up at once.

        A pair during which a worker of either cluster died (the scheduler removed one) is
        kept under ``dropped`` and measured again, up to ``pairs`` times: ``rates``, ``pairs``,
        ``speedup`` and ``tuned_wins`` are those of the pairs without a death, which decide
        (:func:`~openclaw_dask.bench.tune_pairs.candidate_won`). Before the next pair, the
        cluster that lost a worker has it back and runs once untimed (the new process is
        cold), as after a death before the first pair. ``workers_lost`` names, for
        ``baseline`` and ``tuned``, every worker that died in that cluster from its start to
        the last pair; the log line says what :func:`~.tune_pairs.death_notes` says.

        A workflow's step that fails in a pair (its trial had run) ends the pairs: ``failed``
        says which cluster's run and what it raised, and nothing is recommended
        (:func:`~openclaw_dask.bench.tune_pairs.candidate_won`). It had ended the whole tune,
        said as the baseline's failure, and the trials measured were lost.
        """
        rates: dict[str, list[float]] = {"baseline": [], "tuned": []}
        dropped: list[dict[str, Any]] = []
        configs = {"baseline": self.trial_config({}), "tuned": self.trial_config(winner.changes)}
        with ExitStack() as stack:
            clients: dict[str, Client] = {}
            started: dict[str, Watch] = {}
            runs: dict[str, Callable[[], float]] = {}
            failed: dict[str, Any] | None = None
            running = ""  # the cluster whose run is under way: a failed step is its

            # a worker's death that fails the work took the data placed on it (the climate
            # workload's bands): placed anew on the restarted workers, then run again
            def place(name: str) -> None:
                with clients[name].as_current():
                    runs[name] = self.work.prepare(clients[name], configs[name])

            def timed(name: str) -> float:
                with clients[name].as_current():
                    t0 = time.perf_counter()
                    amount = runs[name]()
                    return amount / (time.perf_counter() - t0)

            def placed_again(name: str) -> float:
                place(name)
                return timed(name)

            def sample(name: str) -> float:
                nonlocal running
                running = name
                rate, _ = again_if_a_worker_died(
                    clients[name], partial(timed, name), partial(placed_again, name)
                )
                return rate

            def settle(name: str) -> None:
                # a restarted worker joins when its nanny has it up, perhaps within the next
                # pair, and runs its first tasks cold: neither is the config's speed
                prepare_to_continue(clients[name], len(started[name].ids))
                sample(name)

            for name, config in configs.items():  # each placed before the next one starts
                clients[name] = stack.enter_context(
                    start_cluster(config, hardware=self.hw, attach_running=False)
                )
                started[name] = watch_workers(clients[name])
                again_if_a_worker_died(clients[name], partial(place, name))
            measured = 0
            try:
                for name in clients:
                    sample(name)  # warm-up
                hit = {name for name in clients if workers_lost(clients[name], started[name])}
                pair_s = 0.0  # the last pair's time: the next one is not begun past the budget
                # at most `pairs` pairs dropped: a config whose workers keep dying must end
                while len(rates["tuned"]) < pairs and measured < 2 * pairs:
                    if len(rates["tuned"]) >= MIN_PAIRS and (
                        time.monotonic() + pair_s > self.deadline
                    ):
                        break
                    began = time.monotonic()
                    measured += 1
                    window = {name: watch_workers(client) for name, client in clients.items()}
                    for name in sorted(hit):
                        settle(name)
                    here = {name: sample(name) for name in clients}
                    pair_s = time.monotonic() - began
                    died = {
                        name: workers_lost(client, window[name]) for name, client in clients.items()
                    }
                    hit = {name for name, lost in died.items() if lost}
                    if hit:
                        dropped.append({"pair": measured, "rates": here, "workers_lost": died})
                        continue
                    for name, rate in here.items():
                        rates[name].append(rate)
            except StepFailedError as exc:
                failed = {"side": running, "pair": measured, "error": str(exc)}
            lost = {name: workers_lost(client, started[name]) for name, client in clients.items()}
        comparison = {**summary(rates), "dropped": dropped, "workers_lost": lost}
        if failed:
            comparison["failed"] = failed
        speedup = comparison["speedup"]
        line = (
            f"baseline vs {winner.label()}, {comparison['pairs']} interleaved pairs: "
            f"{speedup_text(speedup) if speedup is not None else 'no speedup measured'}, "
            f"candidate faster in {comparison['tuned_wins']}"
        )
        for note in death_notes(comparison):  # as a trial's line says it (Dask's logs are off)
            line += f"; {note}"
        if failed:
            line += f"; {failed_note(comparison)}"
        self.log(line)
        return comparison


def tune(
    config: Config | str | os.PathLike[str] | None = None,
    *,
    overrides: Iterable[str] | Mapping[str, Any] | None = None,
    workload_name: str = "climate",
    budget: float = 600.0,
    log: Callable[[str], None] = print,
    reserve: float = 0.0,
) -> dict[str, Any]:
    """Tune ``config`` for a workload within ``budget`` seconds.

    Parameters
    ----------
    config
        A loaded Config, a path, or ``None`` for the search order.
    overrides
        ``["key=value", ...]`` (or a mapping) applied to the config, loaded or read (as
        :meth:`~openclaw_dask.config.Config.with_overrides` reads them).
    workload_name
        ``climate``, ``stencil``, ``matmul`` or a workflow file.
    budget
        Seconds (``tune --budget 5m`` is 300).
    log
        Called with each line of progress.
    reserve
        Seconds of ``budget`` that are not this call's: spent before it or kept for after it
        (the command line's start and its reports). The report's ``budget_s`` is ``budget``.

    Returns
    -------
    dict
        The report: ``trials``, ``winner`` changes, ``comparison`` (baseline vs tuned in
        interleaved pairs), ``recommended`` changes (empty when nothing was faster),
        ``skipped`` stages with reasons, machine facts and versions. Write the tuned config
        with :func:`tuned_config_text`.

    Raises
    ------
    TuneInterrupted
        On Ctrl-C once at least one trial was measured: its ``report`` holds the trials
        measured so far (the one cut short marked so), no comparison and no recommendation.
    TypeError
        An argument of the wrong type (a string where a list belongs, a budget that is not a
        number of seconds, a ``log`` that is not a function).
    ValueError
        A budget under :data:`MIN_BUDGET_S` seconds, negative or not finite.
    ConfigError
        The config's problems, and a config that attaches to a running scheduler
        (``cluster.scheduler_address``): tune starts the clusters it measures.
    """
    config = config_argument("tune", config, overrides)
    check_instance("tune", "workload_name", workload_name, str, "a str")
    if isinstance(budget, bool) or not isinstance(budget, int | float):
        # "5m" (the CLI's form) had been "unsupported operand type(s) for +: 'float' and 'str'"
        raise TypeError(f"tune: budget must be a number of seconds, got {budget!r}")
    # as `tune --budget` refuses it: 5, -1 or nan had run the whole baseline (~20 s) anyway
    if not math.isfinite(budget) or budget < MIN_BUDGET_S:
        raise ValueError(
            f"tune: budget must be {MIN_BUDGET_S:.0f} seconds or more (the baseline alone takes "
            f"about that), got {budget!r}"
        )
    check_callable("tune", "log", log, "one str")
    if log is None:  # (check_callable lets None through: here there is no default to fall to)
        raise TypeError("tune: log must be a function of one str, such as print, got None")
    check_starts_clusters(config)
    work = workload(workload_name)
    hw = detect_hardware()
    started = time.monotonic()
    tuner = Tuner(config, work, budget - reserve, hw, log)
    for note in plan_cluster(config, hw).unapplied:  # (the baseline's: what it will not do)
        log(f"note: {note}")
    tuner.watched = watch_start(config, hw)  # what the rest of the machine takes meanwhile
    try:
        best, comparison, recommended = _stages(tuner, config, work, hw)
    except KeyboardInterrupt:
        for trial in tuner.trials:
            if trial.skipped is None and not trial.wall_s:  # started, never finished
                trial.skipped = CUT_SHORT
        measured = [t for t in tuner.trials if t.samples and t.skipped is None]
        if not measured:
            raise
        report = _report(tuner, config, work, budget, started, tuner.best(measured), None, {})
        raise TuneInterrupted({**report, "interrupted": True}) from None
    return _report(tuner, config, work, budget, started, best, comparison, recommended)


def check_starts_clusters(config: Config) -> None:
    """Refuse a config that attaches to a running scheduler (``cluster.scheduler_address``).

    Each trial attached to that one cluster: every candidate ("threads=4, processes=4")
    measured the same workers, and a recommendation could rest on it.

    Raises
    ------
    ConfigError
        At the key's file and line (or ``--set``).
    """
    if config["cluster.scheduler_address"]:
        message = (
            "tune starts a cluster of each candidate config to measure it; an attached "
            "cluster's workers stay as they were started: drop cluster.scheduler_address"
        )
        raise ConfigError([locate("cluster.scheduler_address", config.sources, message)])


def _stages(
    tuner: Tuner, config: Config, work: Workload, hw: Hardware
) -> tuple[Trial, dict[str, Any] | None, dict[str, Any]]:
    """The sweeps and the final pairs: the best trial, the comparison, what to recommend."""
    baseline = tuner.measure("baseline", {}, strict=True)
    busy = early_note(tuner.watched, len(hw.usable_cores))  # said now: the tune takes minutes
    if busy:
        tuner.log(f"note: {busy}")
    best = tuner.sweep_threads(baseline)
    best = tuner.sweep("affinity", "parallel.thread_affinity", ("compact", "scatter"), best)
    allocators = ["system", *sorted(hw.allocators)]
    best = tuner.sweep("allocator", "memory.allocator", allocators, best)
    if work.uses_batch_size:
        best = tuner.sweep("batch", "distributed.batch_size", (16, 32, 128), best)
    else:
        tuner.skips.append(f"distributed.batch_size: the {work.name} workload does not use it")
    hosts = {n["host"] for n in config["distributed.nodes"] or []}
    if len(hosts) > 1:
        best = tuner.sweep("compress", "distributed.compression", ("none", "lz4", "zstd"), best)
    else:
        tuner.skips.append(
            "distributed.compression: all workers are on one host, and Dask does not compress "
            "between processes on one host, so there is no wire to measure"
        )
    # the sweep's winner, or (when nothing beat the baseline) its best challenger: the pairs
    # then show that it is not faster, rather than showing nothing
    base_id = tuner.identity(tuner.trial_config({}))
    challengers = [
        t
        for t in tuner.trials
        if t.samples and t.changes and tuner.identity(tuner.trial_config(t.changes)) != base_id
    ]
    candidate = best if best.changes else (tuner.best(challengers) if challengers else None)
    comparison = None
    recommended: dict[str, Any] = {}
    # two clusters, each started and warmed as in its trial, and MIN_PAIRS pairs: within the
    # budget, or not at all (it had run its pairs past the budget)
    needed = baseline.wall_s + (candidate.wall_s if candidate else 0.0)
    left = tuner.deadline - time.monotonic()
    if candidate is not None and needed > left:
        tuner.final_skipped = (
            f"final comparison: not made, the budget had {max(left, 0):.0f} s left and the "
            f"pairs take about {needed:.0f} s; nothing is recommended without it"
        )
        tuner.skips.append(tuner.final_skipped)
        tuner.log(tuner.final_skipped)
    elif candidate is not None:
        comparison = tuner.compare(candidate, pairs=5)
        comparison["candidate"] = candidate.changes
        if best.changes and candidate_won(comparison):
            recommended = best.changes
    return best, comparison, recommended


def _report(
    tuner: Tuner,
    config: Config,
    work: Workload,
    budget: float,
    started: float,
    best: Trial,
    comparison: dict[str, Any] | None,
    recommended: dict[str, Any],
) -> dict[str, Any]:
    return {
        "workload": {"name": work.name, "unit": work.unit, "description": work.description},
        "budget_s": budget,
        # when it began, in seconds since the epoch as run.json's: the stored results had their
        # date only in their file names
        "started": time.time() - (time.monotonic() - started),
        "wall_s": time.monotonic() - started,
        "config_file": str(config.file) if config.file else None,
        "config_hash": config.config_hash(),
        "config": config_facts(config),  # the baseline's values, and any --set among them
        "plan": plan_facts(plan_cluster(config, tuner.hw)),  # the baseline's cluster
        "machine": machine_facts(tuner.hw),
        "versions": versions(),
        "trials": [t.to_dict() for t in tuner.trials],
        "best_trial": best.to_dict(),
        "comparison": comparison,
        "recommended": recommended,
        "skipped": tuner.skips,
        "unmeasured": unmeasured(tuner.trials),
        "reasons": {k: v for k, v in tuner.reasons.items() if k in recommended},
        "interrupted": False,
        "background": watch_end(tuner.watched),
        "final_skipped": tuner.final_skipped,
    }


def not_compared(report: dict[str, Any]) -> str:
    """Why a report has no final comparison (not interrupted): no candidate measured, or the
    budget ran out before the comparison of those measured."""
    if report.get("final_skipped"):  # (absent from reports written before it was recorded)
        return "the budget ran out before the final comparison"
    return "no candidate was measured within the budget"


def pairs_disagree(report: dict[str, Any]) -> str | None:
    """Why nothing is recommended although the final pairs measured their candidate faster.

    When no trial beats the baseline by :data:`MIN_GAIN`, the best challenger still goes
    through the final pairs, to show that it is not faster. When the pairs measure it faster
    all the same (1.105x, faster in 4 of 5, on the shared 2-core VM), the report had said
    "nothing measured faster than the baseline" under that very comparison. Nothing is
    recommended then (its trial did not win), and this says why. ``None``: not that case.
    """
    comp = report.get("comparison")
    if not comp or report.get("recommended") or not candidate_won(comp):
        return None
    unit = report["workload"]["unit"]
    trials = [t for t in report["trials"] if t["rate_samples"] and not t["skipped"]]
    mine = next((t for t in trials if t["changes"] == comp["candidate"]), None)
    label = ", ".join(f"{k}={v}" for k, v in comp["candidate"].items())
    trial = (
        f"its trial measured {describe_rate(mine['rate_median'], unit)} against the "
        f"baseline's {describe_rate(trials[0]['rate_median'], unit)}"
        if mine and trials
        else "its trial did not"
    )
    return (
        f"the final pairs measured {label} {speedup_text(comp['speedup'])} the baseline (faster in "
        f"{comp['tuned_wins']} of {comp['pairs']}), but {trial}, short of the "
        f"{100 * (MIN_GAIN - 1):.0f} % gain a trial needs: the two measurements disagree, "
        "so it is not recommended; tune again on a quieter machine"
    )


def unmeasured(trials: Sequence[Trial]) -> dict[str, Any] | None:
    """How many candidates the budget left unmeasured, and a budget that would measure them.

    ``None`` when every candidate was measured (or skipped for another reason). The budget
    asked for assumes each candidate takes as long as the baseline did.
    """
    left = [t for t in trials if t.skipped == BUDGET_SPENT]
    if not left:
        return None
    per_trial = max(trials[0].wall_s, 1.0)  # the baseline, always measured first
    needed = per_trial * len(trials) / (1 - FINAL_SHARE)
    return {
        "count": len(left),
        "candidates": len(trials) - 1,
        "suggested_budget_s": 60 * math.ceil(needed / 60),
    }


def budget_note(report: dict[str, Any]) -> str | None:
    """One line on candidates the budget left unmeasured (``None`` when there were none), and
    on a baseline that alone took longer than the budget (it always runs whole: a cluster
    that starts slowly, 25 s a worker, made ``--budget 20s`` take 34 s, and nothing said so)."""
    left = report.get("unmeasured")
    if not left:
        return None
    budget = report["budget_s"]
    baseline = report["trials"][0]["wall_s"] if report.get("trials") else 0.0
    past = (
        f", the baseline alone took {baseline:.0f} s (its cluster's start, a warm-up, a timed "
        "run: it always runs)"
        if baseline > budget
        else ""
    )
    return (
        f"{left['count']} of {left['candidates']} candidates not measured: the budget "
        f"({budget:.0f} s) left no room for them beside the final comparison{past}; "
        f"--budget {left['suggested_budget_s'] // 60}m or more measures them all here"
    )


def report_notes(report: dict[str, Any]) -> list[str]:
    """The notes a tune's report carries: the baseline's settings its cluster does not apply
    (``gpu.devices`` without a GPU), candidates the budget left unmeasured
    (:func:`budget_note`), and other processes busy on the machine while it measured
    (:func:`~.load.load_note`)."""
    load = report.get("background")  # (absent from reports written before it was recorded)
    busy = load_note(load, report["machine"]["usable_cores"]) if load else None
    # settings of the baseline its cluster did not apply: every candidate shares them
    unapplied = (report.get("plan") or {}).get("unapplied", [])
    return [note for note in (*unapplied, budget_note(report), busy) if note]


def tuned_config_text(config: Config, report: dict[str, Any]) -> str:
    """The tuned ``openclaw.config``: the baseline's own settings plus the recommended ones.

    Each changed key carries a comment with the measured reason; keys the baseline set
    explicitly (not defaults) are kept as they were.
    """
    changes = report["recommended"]
    tuned = config.with_values(**{k.replace(".", "__"): v for k, v in changes.items()})
    comp = report["comparison"]
    # the baseline said "defaults" even when --set or OPENCLAW_* values made it
    extra = ", ".join(f"{key}={value} ({source})" for key, value, source in values_set(report))
    # the command as typed where the CLI recorded it (its --budget and --set too); a newline in
    # an argument (`--out $'a\nb.config'`) would end the comment, so it continues one
    command = report.get("command") or f"openclaw-dask tune --workload {report['workload']['name']}"
    command = command.replace("\n", "\n#   ")
    lines = [
        f"# openclaw.config tuned by `{command}`",
        f"# on {report['machine']['host']} ({report['machine']['usable_cores']} cores), "
        f"baseline {report['config_file'] or 'defaults'}{f' with {extra}' if extra else ''} "
        f"(config hash {report['config_hash']})",
    ]
    if comp and changes:
        lines.append(
            f"# measured: {speedup_text(comp['speedup'])} the baseline's throughput over "
            f"{comp['pairs']} interleaved pairs (tuned faster in {comp['tuned_wins']})"
        )
    elif comp and comp.get("failed"):
        side = "candidate" if comp["failed"]["side"] == "tuned" else "baseline"
        lines.append(
            f"# measured: the {side}'s workflow run failed in the final pairs; this is the "
            "baseline unchanged"
        )
    elif comp and too_few_pairs(comp):
        lines.append(
            f"# measured: fewer than {MIN_PAIRS} final pairs without a worker's death; "
            "this is the baseline unchanged"
        )
    elif comp and pairs_disagree(report):
        lines.append(f"# measured: {pairs_disagree(report)}; this is the baseline unchanged")
    elif comp:
        lines.append("# measured: no candidate beat the baseline; this is the baseline unchanged")
    elif report.get("final_skipped"):
        lines.append(f"# measured: {not_compared(report)}; this is the baseline unchanged")
    else:
        lines.append("# measured: no candidate within the budget; this is the baseline unchanged")
    # which cluster, which workers, and whether the decision counted the pair: a death hides
    # in a figure, and the config is what a user keeps of the tune
    lines += [f"# {note}" for note in death_notes(comp or {})]
    lines += [f"# {note}" for note in report_notes(report)]
    keep = [k for k in KEYS if config.sources.get(k.path, "default") != "default"]
    wanted = {k.path for k in keep} | set(changes)
    for section in SECTIONS:
        if section in KEYS_BY_PATH:  # `dask:`, one key: the raw mapping the baseline ran with
            if section in wanted:  # (it was dropped: the tuned config lost the user's dask:)
                lines.append(
                    f"{section}: {yaml_value(KEYS_BY_PATH[section].type.render(tuned[section]))}"
                )
            continue
        keys = [k for k in KEYS if k.path.startswith(section + ".") and k.path in wanted]
        if not keys:
            continue
        lines.append(f"{section}:")
        for key in keys:
            leaf = key.path[len(section) + 1 :]
            if key.path in changes:
                was = key.type.render(config[key.path])
                lines.append(
                    f"  # tuned: {yaml_value(was)} -> {yaml_value(changes[key.path])}; "
                    f"{report['reasons'].get(key.path, 'measured faster')}"
                )
            value = key.type.render(tuned[key.path])
            lines.append(f"  {leaf}: {yaml_value(value)}")
    return "\n".join(lines) + "\n"
