"""JSON that every reader accepts: what run records and benchmark reports are written as."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any


def finite(value: Any) -> Any:
    """``value`` with every non-finite float replaced by ``None``.

    Python writes them as ``NaN``/``Infinity``, which JSON does not have: ``jq``, browsers and
    most JSON libraries then refuse the whole file (a value may be undefined for a run, such as
    the ice edge of a hemisphere without an ice cap, or a ratio of a failed measurement).
    A numpy scalar or array (an op's metric from ``ds.mean().values``) becomes its Python
    values first: ``default=str`` had written it as text ("273.5", a float32 NaN as "nan").
    """
    if type(value).__module__ == "numpy" and hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v) for v in value]
    return value


def dumps(value: Any, indent: int | None = 2) -> str:
    """Strict JSON of ``value`` (non-finite floats as null, other objects as ``str``)."""
    return json.dumps(finite(value), indent=indent, default=str, allow_nan=False)


def json_kind(value: Any) -> str:
    """What JSON calls ``value``'s type, with its article (``an object``, ``null``), as a
    message about a damaged record or checkpoint says it."""
    kinds = {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}
    return kinds.get(type(value), "a number" if isinstance(value, int | float) else "null")
