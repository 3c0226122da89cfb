"""Tune's final pairs: what they decide, and what they say of a worker's death.

A pair during which a worker of either cluster died is measured again and does not count: the
recommendation comes from pairs without a death, or there is none (see ``docs/design-notes.md``,
"A worker's death in a benchmark or tune"). These functions read the comparison as
:meth:`~openclaw_dask.bench.tune.Tuner.compare` returns it, and as older reports hold it.
"""

from __future__ import annotations

import statistics
from collections import Counter
from typing import Any

from openclaw_dask.bench.run import addresses_text

#: pairs without a worker's death that a recommendation needs (and that are measured at least,
#: whatever the budget: one pair is a coin toss)
MIN_PAIRS = 2
#: the two clusters of the pairs, as the texts name them
SIDES = {"baseline": "baseline", "tuned": "candidate"}


def summary(rates: dict[str, list[float]]) -> dict[str, Any]:
    """``pairs``, ``median``, ``speedup`` and ``tuned_wins`` of the pairs that count.

    ``median`` and ``speedup`` are ``None`` when no pair counts (a worker died in each).
    """
    counted = len(rates["tuned"])
    median = {k: statistics.median(v) for k, v in rates.items()} if counted else None
    wins = sum(t > b for b, t in zip(rates["baseline"], rates["tuned"], strict=True))
    return {
        "pairs": counted,
        "rates": rates,
        "median": median,
        "speedup": median["tuned"] / median["baseline"] if median else None,
        "tuned_wins": wins,
    }


def speedup_text(speedup: float) -> str:
    """``1.105x``: 3 decimals, more where 3 would read as no change at all.

    A candidate is recommended from a median speedup above 1.0, and 1.0004 was said
    "tuned: ... (1.000x over 5 pairs)"; it is ``1.0004x`` now (0.9996: ``0.9996x``).
    """
    for decimals in range(3, 10):
        text = f"{speedup:.{decimals}f}"
        if float(text) != 1.0 or speedup == 1.0:
            return f"{text}x"
    return f"{speedup!r}x"


def candidate_won(comparison: dict[str, Any]) -> bool:
    """Whether the candidate is faster: in the median and in most of the pairs that count, of
    which there are at least :data:`MIN_PAIRS`, and no workflow step failed in the pairs."""
    pairs = comparison["pairs"]
    speedup = comparison["speedup"]
    return (
        pairs >= MIN_PAIRS
        and not comparison.get("failed")
        and speedup is not None
        and speedup > 1.0
        and comparison["tuned_wins"] * 2 > pairs
    )


def failed_note(comparison: dict[str, Any]) -> str | None:
    """The sentence on a workflow step that failed in the final pairs (``None``: none did)."""
    failed = comparison.get("failed")
    if not failed:
        return None
    when = f"final pair {failed['pair']}" if failed["pair"] else "the final pairs' warm-up"
    return (
        f"the {SIDES[failed['side']]}'s workflow run failed in {when}, after its trial had "
        f"run: {failed['error']}; no recommendation"
    )


def too_few_pairs(comparison: dict[str, Any]) -> bool:
    """Whether deaths left fewer than :data:`MIN_PAIRS` pairs to decide from."""
    return comparison["pairs"] < MIN_PAIRS and bool(comparison.get("dropped"))


def lost_in_pairs(comparison: dict[str, Any]) -> list[str]:
    """The workers that died in the final comparison's clusters, from their start to the last
    pair, each as ``baseline ADDRESS`` or ``candidate ADDRESS`` (empty for reports written
    before it was recorded)."""
    lost = comparison.get("workers_lost") or {}
    return [f"{SIDES[side]} {address}" for side in SIDES for address in lost.get(side, [])]


def _who(lost: dict[str, list[str]]) -> str:
    """``candidate tcp://a, baseline tcp://b``: which cluster, which workers."""
    return ", ".join(
        f"{SIDES[side]} {addresses_text(lost[side])}" for side in SIDES if lost.get(side)
    )


def death_notes(comparison: dict[str, Any]) -> list[str]:
    """Sentences on the workers that died in the final comparison's clusters (none: empty).

    Each pair a death hit (which cluster, which workers), that it was not counted and how many
    pairs the decision rests on; then any deaths before the pairs (cluster start, placement,
    warm-up), whose workers were back and warmed up before the next pair began. A report
    written before pairs were dropped has its deaths in its figures, and says so.
    """
    if "dropped" not in comparison:  # the figures of an older report include them
        lost = lost_in_pairs(comparison)
        if not lost:
            return []
        return [
            f"{len(lost)} worker(s) died during these pairs ({', '.join(lost)}): "
            "their figures include the loss and the restart"
        ]
    notes = [
        f"a worker died during final pair {hit['pair']} ({_who(hit['workers_lost'])}): not counted"
        for hit in comparison["dropped"]
    ]
    if notes:
        notes.append(
            f"the decision rests on the {comparison['pairs']} pair(s) without a death"
            + (f" (it needs {MIN_PAIRS}): no recommendation" if too_few_pairs(comparison) else "")
        )
    before = {side: Counter(comparison["workers_lost"].get(side, [])) for side in SIDES}
    for hit in comparison["dropped"]:
        for side in SIDES:
            before[side] -= Counter(hit["workers_lost"].get(side, []))
    earlier = {side: sorted(c.elements()) for side, c in before.items()}
    if any(earlier.values()):
        notes.append(
            f"a worker died before the final pairs ({_who(earlier)}): its cluster's workers "
            "were back and warmed up before they began, so their figures do not include it"
        )
    return notes
