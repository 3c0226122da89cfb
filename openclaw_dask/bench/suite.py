"""What a benchmark suite receives (:class:`BenchContext`) and returns (:class:`SuiteResult`)."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from distributed import Client, futures_of, wait

from openclaw_dask.bench.timing import Timing
from openclaw_dask.config import Config, Hardware


def _known(keys: list[Any], dask_scheduler: Any = None) -> bool:
    return any(key in dask_scheduler.tasks for key in keys)


def run_and_forget(client: Client, collection: Any, optimize_graph: bool = True) -> None:
    """Persist ``collection``, wait for it, release it and wait until the scheduler forgot it.

    Repeats of a benchmark submit the same graph (the same keys). Submitted again while the
    scheduler still holds the last result, it would be found done; cancelled instead, the
    cancellation can race the resubmission and cancel the new futures too. Waiting for the
    release costs a scheduler round trip or two, which counts against Dask (conservative).
    ``optimize_graph=False`` keeps the graph's task annotations (worker restrictions).
    """
    [persisted] = client.persist([collection], optimize_graph=optimize_graph)
    wait(persisted)
    keys = [f.key for f in futures_of(persisted)]
    del persisted
    deadline = time.monotonic() + 30
    while client.run_on_scheduler(_known, keys) and time.monotonic() < deadline:
        time.sleep(0.005)


@dataclass
class BenchContext:
    """The cluster and settings every suite runs with.

    Parameters
    ----------
    client : distributed.Client
        A client of the cluster the config plans (started once for all suites).
    config : Config
        The resolved config (its hash goes into the report).
    hardware : Hardware
        This machine.
    quick : bool
        Small sizes and one repeat: every suite in seconds (CI).
    workdir : Path
        Scratch space (Zarr stores); removed after the run.
    """

    client: Client
    config: Config
    hardware: Hardware
    quick: bool
    workdir: Path

    @property
    def worker_threads(self) -> int:
        """Threads over all workers: the cores the cluster computes on."""
        return sum(self.client.nthreads().values())

    def repeats(self, full: int = 3) -> int:
        """Counted repeats: ``full``, or 1 in quick mode."""
        return 1 if self.quick else full


@dataclass
class SuiteResult:
    """Measurements of one suite.

    Parameters
    ----------
    params : dict
        Sizes and settings the suite ran with.
    timings : dict of name to Timing
        Every measured operation.
    throughput : dict of name to (value, unit)
        Rates derived from ``timings`` (GFLOP/s, cell-updates/s, MB/s).
    ratios : dict of name to float
        The headline comparisons, each from two timings of this run.
    goals : dict of name to float
        Target of a ratio (``>=`` unless the name is in ``goals_at_most``).
    goals_at_most : set of str
        Ratios whose goal is an upper bound (costs, growth).
    rounds : dict of name to tuple of float
        A ratio's value in each measurement round alone (:func:`~.timing.round_ratios`), where
        it comes from interleaved timings; the report shows their range.
    notes : list of str
        What limits a figure, what was skipped and why.
    profile : dict of str to float
        Where an extra, untimed run spent its time (from Dask's task stream), where a suite
        records one.
    """

    params: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, Timing] = field(default_factory=dict)
    throughput: dict[str, tuple[float, str]] = field(default_factory=dict)
    ratios: dict[str, float] = field(default_factory=dict)
    goals: dict[str, float] = field(default_factory=dict)
    goals_at_most: set[str] = field(default_factory=set)
    rounds: dict[str, tuple[float, ...]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    profile: dict[str, float] = field(default_factory=dict)

    def goal_met(self, name: str) -> bool | None:
        """Whether ratio ``name`` meets its goal (``None``: no goal)."""
        if name not in self.goals:
            return None
        value, goal = self.ratios[name], self.goals[name]
        return value <= goal if name in self.goals_at_most else value >= goal

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "params": self.params,
            "timings": {k: v.to_dict() for k, v in self.timings.items()},
            "throughput": {k: {"value": v, "unit": u} for k, (v, u) in self.throughput.items()},
            "ratios": {k: _finite(v) for k, v in self.ratios.items()},
            "ratio_rounds": {k: [_finite(x) for x in v] for k, v in self.rounds.items()},
            "goals": {
                k: {
                    "target": v,
                    "kind": "at_most" if k in self.goals_at_most else "at_least",
                    "met": self.goal_met(k),
                }
                for k, v in self.goals.items()
            },
            "notes": self.notes,
        } | ({"profile": {k: _finite(v) for k, v in self.profile.items()}} if self.profile else {})


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None
