"""A climate scientist's own workflow, written with the mistakes users make: each is one
message at the file, line and key, with the did-you-mean a typo deserves."""

from __future__ import annotations

from pathlib import Path

import pytest

from openclaw_dask.config import ConfigError
from openclaw_dask.workflows.spec import load_workflow


def _workflow(folder: Path, op: str) -> Path:
    path = folder / "mine.yaml"
    path.write_text(f"name: mine\nsteps:\n  make:\n    op: {op}\n    outputs: [field.zarr]\n")
    return path


def test_a_misspelt_module_beside_the_workflow_is_named_with_the_file_it_meant(
    tmp_path: Path,
) -> None:
    """``op: myopz:make`` beside ``myops.py`` had said only "No module named 'myopz'"."""
    (tmp_path / "myops.py").write_text("def make(ctx):\n    return {}\n")
    with pytest.raises(ConfigError) as info:
        load_workflow(_workflow(tmp_path, "myopz:make"))
    [problem] = [str(p) for p in info.value.problems]
    assert ":4: steps.make.op: cannot import 'myopz' for op 'myopz:make': " in problem, problem
    assert problem.endswith("; did you mean 'myops' (myops.py beside the workflow)?"), problem


def test_a_module_nowhere_near_says_where_its_file_was_looked_for(tmp_path: Path) -> None:
    """No file a letter away: the message says which folder held no such module file."""
    (tmp_path / "myops.py").write_text("def make(ctx):\n    return {}\n")
    with pytest.raises(ConfigError) as info:
        load_workflow(_workflow(tmp_path, "physics_of_ice:make"))
    [problem] = [str(p) for p in info.value.problems]
    assert problem.endswith(
        f"No module named 'physics_of_ice' (and there is no physics_of_ice.py beside the "
        f"workflow, in {tmp_path})"
    ), problem


def test_a_module_that_its_op_file_imports_is_not_blamed_on_the_op_name(
    tmp_path: Path,
) -> None:
    """The op's file imports a missing package: that package is the problem, not a typo in
    ``op:``, so no file beside the workflow is suggested."""
    (tmp_path / "myops.py").write_text("import myopz_helpers\n\ndef make(ctx):\n    return {}\n")
    (tmp_path / "myopz.py").write_text("import myopz_helpers\n")
    with pytest.raises(ConfigError) as info:
        load_workflow(_workflow(tmp_path, "myops:make"))
    [problem] = [str(p) for p in info.value.problems]
    assert problem.endswith("No module named 'myopz_helpers'"), problem
