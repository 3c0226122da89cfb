"""What a completed step's result depends on, and whether a step record or checkpoint is of
the step a run has now.

A run records each step's fingerprint (:func:`step_fingerprint`: its op, the arguments that
differ from the op's defaults, its inputs' checksums, the result-relevant config and its
outputs) and, for a user op, its source. A resume compares both with the step as the workflow
has it now (:func:`same_step`, :func:`code_changed`) to decide which steps it skips or
continues from their checkpoint (:mod:`~openclaw_dask.workflows.resume_steps`).
"""

from __future__ import annotations

import hashlib
import inspect
import json
from collections.abc import Mapping
from typing import Any

import numpy as np

from openclaw_dask.config import Config
from openclaw_dask.workflows.spec import StepSpec


def step_fingerprint(
    step: StepSpec,
    record: Mapping[str, Any],
    config: Config,
    legacy: bool = False,
    as_written: bool = False,
) -> str:
    """What a completed step's result depends on: op, arguments, inputs, result config.

    The arguments are those that differ from the op's defaults (:func:`effective_args`): a
    ``with:`` line added or removed at the op's default value leaves the fingerprint as it
    was, and a workflow that writes none at its default has the fingerprint it always had.

    ``legacy``: the fingerprint runs recorded before the allocator and transport compression
    left the result config (:data:`~openclaw_dask.config.loader.RUN_ONLY_KEYS`).
    ``as_written``: the one recorded before the arguments at their defaults left it (every
    ``with:`` argument, as written).
    """
    inputs = {need: record["steps"].get(need, {}).get("checksums") for need in step.needs}
    fingerprint = config.fingerprint() if legacy else config.result_fingerprint()
    blob = json.dumps(
        {
            "op": step.op,
            "args": step.args if as_written else effective_args(step),
            "inputs": inputs,
            "config": fingerprint[0],
            "outputs": step.outputs,
        },
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def effective_args(step: StepSpec) -> dict[str, Any]:
    """``step``'s ``with:`` arguments less those equal to the op's default (:func:`same_value`):
    what the op receives that it would not have without them."""
    params = step.info.parameters
    kept = {}
    for name, value in step.args.items():
        default = getattr(params.get(name), "default", inspect.Parameter.empty)
        if default is inspect.Parameter.empty or not same_value(value, default):
            kept[name] = value
    return kept


def same_value(given: Any, default: Any) -> bool:
    """Whether an argument's value is its default, as the op would see it: equal in type and
    value as JSON writes them (``1`` is not ``1.0``, nor ``true``; ``-0.0`` is not ``0.0``: an
    op may tell them apart, and an output's attributes do), numpy scalars as Python's and a
    tuple as a list (a record keeps both so). A default JSON has no form for (an object of the
    op's own) is never equal: its text may change from one Python session to the next."""
    a, b = _plain(given), _plain(default)
    if a is _NOT_PLAIN or b is _NOT_PLAIN:
        return False
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


_NOT_PLAIN = object()


def _plain(value: Any) -> Any:
    """``value`` in the types JSON writes (numpy scalars unwrapped), or ``_NOT_PLAIN``."""
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple):
        items = [_plain(v) for v in value]
        return _NOT_PLAIN if any(v is _NOT_PLAIN for v in items) else items
    if isinstance(value, Mapping) and all(isinstance(k, str) for k in value):
        pairs = {k: _plain(v) for k, v in value.items()}
        return _NOT_PLAIN if any(v is _NOT_PLAIN for v in pairs.values()) else pairs
    return _NOT_PLAIN


def same_step(
    step: StepSpec,
    recorded: Mapping[str, Any],
    fingerprint: str,
    record: Mapping[str, Any],
    config: Config,
) -> bool:
    """Whether a step record or checkpoint is of this step (its ``fingerprint``).

    A run recorded before :data:`~openclaw_dask.config.loader.RUN_ONLY_KEYS` left the step
    fingerprint, or before the arguments at their defaults did, has an older one: accepted
    too, so its resume skips and continues as it did.
    """
    was = recorded.get("fingerprint")
    if was is None:
        return False
    if was == fingerprint:
        return True
    written = effective_args(step) != step.args  # else both ways are the same fingerprint
    return any(
        was == step_fingerprint(step, record, config, legacy, as_written)
        for legacy, as_written in ((True, False), (False, True), (True, True))
        if not as_written or written
    )


def code_changed(step: StepSpec, recorded: Mapping[str, Any]) -> bool:
    """Whether the source of ``step``'s op changed since its record or checkpoint was made.

    A record without ``code`` (a built-in op's, or one made before the code was recorded)
    has nothing to compare: not changed. The code is compared apart from the step
    fingerprint so that a checkpoint of an edited op can still be continued from (the fix of
    a crash late in a long step), which its fingerprint would forbid.
    """
    was = recorded.get("code")
    return was is not None and was != step.info.code
