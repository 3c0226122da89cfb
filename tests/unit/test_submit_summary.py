"""What ``submit`` says a completed run made: plots, folder outputs and metrics."""

from __future__ import annotations

import types
from pathlib import Path

import pytest

from openclaw_dask.cli.submit_cmd import step_lines


def test_a_user_op_s_folder_and_its_small_and_whole_metrics_are_said() -> None:
    """A user op's plots/ went unnamed, an int metric unsaid, and 0.008 was printed 0.01."""
    steps = {
        "field": {"files": {"field.zarr/zarr.json": 10, "field.zarr/T/c/0/0": 99}},
        "stats": {
            "files": {"plots/heat.png": 3, "plots/series.png": 4, "summary.zarr/zarr.json": 9},
            "metrics": {
                "final_mean": 0.008038338,
                "records": 300,
                "ok": True,
                "gone": None,
                "edge": float("nan"),  # run.json's null, as None's: "nan" before
            },
        },
    }
    assert step_lines("runs/r", steps) == [
        "folder:   runs/r/plots/ (2 files)",
        "stats.final_mean: 0.00803834",
        "stats.records: 300",
        "stats.gone: none",
        "stats.edge: none",
    ]


def test_plots_a_step_names_are_listed_one_by_one_and_not_again_as_a_folder() -> None:
    """The climate op names its plots in a ``plots`` metric; its text metric is not printed."""
    steps = {
        "analyse": {
            "files": {"plots/a.png": 1, "plots/b.png": 1, "notes/x.txt": 1},
            "metrics": {"plots": ["a.png", "b.png"], "ice_edge_north": 71.83, "ref": "North"},
        }
    }
    assert step_lines("r", steps) == [
        "plot:     r/plots/a.png",
        "plot:     r/plots/b.png",
        "folder:   r/notes/ (1 file)",
        "analyse.ice_edge_north: 71.83",
    ]


def test_the_line_that_raised_is_the_user_module_s_not_a_library_file_of_the_same_name(
    tmp_path: Path,
) -> None:
    """Frames match a user's op module by name too (a worker's copy of it is elsewhere), but
    a user's ``utils.py`` must not name a line of ``distributed/utils.py``."""
    from distributed.utils import parse_ports

    from openclaw_dask.workflows.runner import raised_in

    path = tmp_path / "utils.py"
    module = _module_from(path, "def boom():\n    raise ValueError('boom')\n")
    with pytest.raises(ValueError) as mine:
        module.boom()
    assert raised_in(mine.value, [str(path)]) == "utils.py, line 2, in boom"
    # the worker's copy: the same name in another folder
    assert raised_in(mine.value, ["/elsewhere/utils.py"]) == "utils.py, line 2, in boom"
    with pytest.raises(ValueError) as theirs:
        parse_ports("not a port")  # raised in distributed/utils.py
    assert raised_in(theirs.value, [str(path)]) is None


def test_the_line_that_raised_is_the_innermost_of_the_user_s_own(tmp_path: Path) -> None:
    """An op that fails in a helper of its own module is told the helper's line, the one
    that raised, not the op's line that called it (mutation audit: the outermost frame of the
    user's module went unseen: every failing test op raised in its own body)."""
    from openclaw_dask.workflows.runner import raised_in

    path = tmp_path / "myops.py"
    module = _module_from(
        path, "def op():\n    return helper()\n\n\ndef helper():\n    raise ValueError(1)\n"
    )
    with pytest.raises(ValueError) as caught:
        module.op()
    assert raised_in(caught.value, [str(path)]) == "myops.py, line 6, in helper"


def _module_from(path: Path, source: str) -> types.ModuleType:
    """A module imported from ``source`` written at ``path`` (a user's op file)."""
    import importlib.util

    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
