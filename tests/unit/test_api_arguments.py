"""A wrong argument to the public API is a ``TypeError`` that names it, before anything runs.

Found by an exploratory pass: a string given as ``overrides`` was read a character at a time
(twenty "expected KEY=VALUE, got 'p'" problems), and ``plan_cluster("x.config")`` or
``memory_compact(None)`` ended in an ``AttributeError`` deep inside.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import openclaw_dask as oc
from tests.conftest import ROOT

EXAMPLE = str(ROOT / "workflows/example.yaml")


@pytest.mark.parametrize(
    ("call", "said"),
    [
        (
            lambda: oc.plan_cluster("x.config"),
            "plan_cluster: config must be an openclaw_dask.Config, got str 'x.config' "
            "(load_config(path) reads one from a file)",
        ),
        (
            lambda: oc.memory_compact(None),
            "memory_compact: client must be a distributed.Client, got NoneType None "
            "(start_cluster yields one)",
        ),
        (
            lambda: oc.load_config(overrides="parallel.processes=2"),
            "load_config: overrides must be a list of 'section.key=value' strings or a mapping, "
            "got str 'parallel.processes=2' (put it in a list)",
        ),
        (
            lambda: oc.load_config(overrides=["parallel.processes=2", 1]),
            "load_config: overrides must be a list of 'section.key=value' strings or a mapping, "
            "an item int 1",
        ),
        (
            lambda: oc.load_config(123),
            "load_config: path must be a file path (str or os.PathLike) or None, got int 123",
        ),
        (
            lambda: oc.run_workflow(EXAMPLE, None, "params.size=64"),
            "run_workflow: overrides must be a list of 'section.key=value' strings, "
            "got str 'params.size=64' (put it in a list)",
        ),
        (
            lambda: oc.start_cluster(123).__enter__(),
            "start_cluster: config (a Config or its file) must be a file path (str or "
            "os.PathLike) or None, got int 123",
        ),
    ],
)
def test_a_wrong_argument_is_a_type_error_naming_it(call: Callable[[], Any], said: str) -> None:
    with pytest.raises(TypeError) as info:
        call()
    assert str(info.value) == said


def test_overrides_may_be_any_iterable_of_strings() -> None:
    # a generator is not used up by the check
    config = oc.load_config(overrides=(s for s in ["parallel.processes=2"]), use_search_path=False)
    assert config["parallel.processes"] == 2
