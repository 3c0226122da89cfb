"""Repeat, warm up, interleave: how every benchmark figure is measured.

A figure is the median over repeats after warm-up runs, with its spread (min and max), and a
ratio is always formed from two timings measured in the same process, interleaved (a, b, a, b,
...) so that machine noise and thermal drift hit both sides alike.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Timing:
    """Wall times in seconds of one measured operation, after warm-up.

    Parameters
    ----------
    samples : tuple of float
        One wall time per repeat.
    """

    samples: tuple[float, ...]

    @property
    def median(self) -> float:
        """Median wall time (s)."""
        return statistics.median(self.samples)

    @property
    def spread(self) -> float:
        """(max - min) / median: how much the repeats disagree."""
        return (max(self.samples) - min(self.samples)) / self.median if self.median else 0.0

    def rate(self, work: float) -> float:
        """``work`` per second at the median time."""
        return work / self.median

    def to_dict(self) -> dict[str, Any]:
        """JSON form: median, min, max, spread and the samples."""
        return {
            "median_s": self.median,
            "min_s": min(self.samples),
            "max_s": max(self.samples),
            "spread": self.spread,
            "samples_s": list(self.samples),
        }


def clock(fn: Callable[[], Any]) -> float:
    """Wall time of one call of ``fn`` (s)."""
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def interleaved(
    fns: Mapping[str, Callable[[], Any]], repeats: int, warmup: int = 1
) -> dict[str, Timing]:
    """Time each function ``repeats`` times, in rounds (a, b, c, a, b, c, ...).

    Parameters
    ----------
    fns : mapping of name to callable
        The operations to compare; each call must do the whole measured work.
    repeats : int
        Counted rounds (at least 1).
    warmup : int
        Uncounted rounds first (imports, caches, worker warm-up).

    Returns
    -------
    dict of name to Timing
    """
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    samples: dict[str, list[float]] = {name: [] for name in fns}
    for round_ in range(warmup + repeats):
        for name, fn in fns.items():
            elapsed = clock(fn)
            if round_ >= warmup:
                samples[name].append(elapsed)
    return {name: Timing(tuple(s)) for name, s in samples.items()}


def ratio(numerator: Timing, denominator: Timing) -> float:
    """``denominator.median / numerator.median``: how many times faster ``numerator`` ran.

    Named from the point of view of throughput: ``ratio(dask, numpy)`` > 1 means the Dask run
    finished the same work sooner.
    """
    return denominator.median / numerator.median


def round_ratios(numerator: Timing, denominator: Timing) -> tuple[float, ...]:
    """:func:`ratio` of each round alone: the two timings of one round of :func:`interleaved`.

    The median ratio is the figure; these show how far a single round strays from it (the
    machine's noise), so a figure close to its goal can be read as such.
    """
    if len(numerator.samples) != len(denominator.samples):
        raise ValueError("round ratios need two timings from the same interleaved rounds")
    return tuple(d / n for n, d in zip(numerator.samples, denominator.samples, strict=True))
