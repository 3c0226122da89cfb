"""An op's metrics computed with numpy reach run.json as JSON numbers, not as their text."""

from __future__ import annotations

import json

import numpy as np

from openclaw_dask.workflows import strictjson


def test_numpy_scalars_and_arrays_are_json_numbers_and_their_nan_is_null() -> None:
    """``ctx.metrics["mean"] = ds.T.mean().values`` (a 0-d array), a float32 or an int64: the
    record held the strings "273.5", "nan" and "5" (``default=str``), so a reader of run.json
    got text where the other metrics are numbers, and a float32 NaN was not null."""
    value = {
        "mean": np.array(273.5),
        "edge": np.float32("nan"),
        "count": np.int64(5),
        "cap": np.bool_(True),
        "zonal": np.array([1.5, np.nan]),
        "inf": np.float64("inf"),
    }

    def refuse(constant: str) -> None:
        raise AssertionError(constant)

    assert json.loads(strictjson.dumps(value), parse_constant=refuse) == {
        "mean": 273.5,
        "edge": None,
        "count": 5,
        "cap": True,
        "zonal": [1.5, None],
        "inf": None,
    }
