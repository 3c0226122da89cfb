"""Run records and benchmark reports are JSON that strict readers accept."""

from __future__ import annotations

import json

from openclaw_dask.workflows import strictjson


def test_non_finite_floats_become_null_everywhere() -> None:
    value = {"a": float("nan"), "b": [1.5, float("inf"), (float("-inf"), 2)], "c": {"d": "x"}}
    text = strictjson.dumps(value)

    def refuse(constant: str) -> None:
        raise AssertionError(constant)

    assert json.loads(text, parse_constant=refuse) == {
        "a": None,
        "b": [1.5, None, [None, 2]],
        "c": {"d": "x"},
    }
    assert json.loads(strictjson.dumps({"path": strictjson})) == {"path": str(strictjson)}
