"""A step's fingerprint counts the ``with:`` arguments that differ from the op's defaults.

A ``with:`` line added or removed at the op's default value had changed the fingerprint, so a
resume ran the step (and every step after it) again for a bit-identical result.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from openclaw_dask.config import load_config
from openclaw_dask.workflows.runner import same_step, same_value, step_fingerprint
from openclaw_dask.workflows.spec import StepSpec, load_workflow
from tests.conftest import ROOT

#: an op whose defaults are of every kind a signature may give
DEFAULTS_OP = """
import numpy as np

MARK = object()


def op(
    ctx,
    *,
    alpha: float = np.float64(0.5),
    shape: tuple = (2, 3),
    count: int = 4,
    scale: float = 1.0,
    flag: bool = False,
    name: str = "x",
    nothing=None,
    loose=1,
    mark=MARK,
):
    return {}
"""

RECORD = {"steps": {}}


def _step(folder: Path, args: str) -> StepSpec:
    """The one step of a workflow in ``folder`` whose ``with:`` is ``args``."""
    (folder / "h41_defaults.py").write_text(DEFAULTS_OP)
    wf = folder / "wf.yaml"
    wf.write_text(
        f"name: defaults\nsteps:\n  s:\n    op: h41_defaults:op\n    with: {args}\n"
        "    outputs: [out.zarr]\n"
    )
    return load_workflow(wf).steps["s"]


@pytest.fixture
def config():  # type: ignore[no-untyped-def]
    return load_config(None, use_search_path=False)


def test_arguments_at_the_op_s_defaults_leave_the_fingerprint_as_it_was(
    tmp_path: Path, config
) -> None:  # type: ignore[no-untyped-def]
    bare = step_fingerprint(_step(tmp_path, "{}"), RECORD, config)
    at_defaults = (
        "{alpha: 0.5, shape: [2, 3], count: 4, scale: 1.0, flag: false, name: x, nothing: null}"
    )
    assert step_fingerprint(_step(tmp_path, at_defaults), RECORD, config) == bare
    # as the op would see it: another type, or another float, is another argument
    for other in ("{loose: 1.0}", "{loose: true}", "{scale: 1}", "{scale: -0.0}", "{shape: [3]}"):
        assert step_fingerprint(_step(tmp_path, other), RECORD, config) != bare, other
    # a default JSON has no form for is never taken as given
    assert step_fingerprint(_step(tmp_path, "{mark: null}"), RECORD, config) != bare


def test_a_record_made_with_the_arguments_as_written_is_still_this_step(
    tmp_path: Path, config
) -> None:  # type: ignore[no-untyped-def]
    """A run interrupted before the change recorded the fingerprint of every argument as
    written: its resume skips what it completed, and continues its checkpoint."""
    step = _step(tmp_path, "{count: 4, scale: 2.0}")
    now = step_fingerprint(step, RECORD, config)
    for legacy in (False, True):
        before = step_fingerprint(step, RECORD, config, legacy=legacy, as_written=True)
        assert before != now
        assert same_step(step, {"fingerprint": before}, now, RECORD, config)
    other = _step(tmp_path, "{count: 5, scale: 2.0}")
    was = step_fingerprint(other, RECORD, config, as_written=True)
    assert not same_step(step, {"fingerprint": was}, now, RECORD, config)
    assert not same_step(step, {}, now, RECORD, config)


def test_equal_values_are_equal_in_type_and_bits() -> None:
    np = pytest.importorskip("numpy")
    assert same_value(0.5, np.float64(0.5)) and same_value(3, np.int64(3))
    assert same_value([1, 2], (1, 2)) and same_value({"a": [1.5]}, {"a": (1.5,)})
    assert same_value(float("nan"), float("nan"))
    assert not same_value(0.1, np.float32(0.1))  # the op gets another number
    assert not same_value(True, 1) and not same_value(1, 1.0) and not same_value(0.0, -0.0)
    assert not same_value(None, object())


def test_a_fingerprint_is_the_same_in_every_python_session() -> None:
    """No hash randomisation (``PYTHONHASHSEED``): a resume runs in another process."""
    code = (
        "from openclaw_dask.config import load_config\n"
        "from openclaw_dask.workflows.runner import step_fingerprint\n"
        "from openclaw_dask.workflows.spec import load_workflow\n"
        f"wf = load_workflow({str(ROOT / 'workflows/example.yaml')!r}, {{'steps': 120}})\n"
        "cfg = load_config(None, use_search_path=False)\n"
        "record = {'steps': {'field': {'checksums': {'field': 'abc'}}}}\n"
        "print([step_fingerprint(s, record, cfg) for s in wf.steps.values()])\n"
    )
    seen = set()
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(ROOT)}
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
        )
        seen.add(out.stdout)
    assert len(seen) == 1, seen
