"""The package's layers import in one direction only (DESIGN.md, section 2)."""

from __future__ import annotations

import ast
import subprocess
import sys

import pytest

from tests.conftest import ROOT

#: cli -> bench -> workflows -> runtime -> translate -> config; a layer imports only lower ones
RANK = {"config": 0, "translate": 1, "runtime": 2, "workflows": 3, "bench": 4, "cli": 5}


def test_no_layer_imports_a_layer_above_it() -> None:
    package = ROOT / "openclaw_dask"
    upward = []
    for path in sorted(package.rglob("*.py")):
        layer = path.relative_to(package).parts[0]
        if layer not in RANK:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            for name in names:
                top, _, rest = name.partition(".")
                if top == "openclaw_dask" and RANK.get(rest.split(".")[0], -1) > RANK[layer]:
                    upward.append(f"{path.relative_to(ROOT)}:{node.lineno} imports {name}")
    assert len(list(package.rglob("*.py"))) > 40  # the walk saw the package
    assert not upward, upward


def loaded_with(module: str, *names: str) -> list[str]:
    """Which of ``names`` importing ``module`` loads, in a fresh interpreter."""
    probe = f"import sys, {module}; print(sorted(m for m in {names!r} if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return ast.literal_eval(done.stdout.strip())


def test_the_package_imports_its_api_on_first_use() -> None:
    """Every CLI command and every spawned worker imports the package: ``openclaw_dask.config``
    alone must not bring Dask's scheduler, xarray or the benchmarks along (~1 s each time on a
    2 GHz core). The 18 public names all still resolve, to the objects their modules hold."""
    assert loaded_with("openclaw_dask.config", "distributed", "xarray", "openclaw_dask.bench") == []
    import openclaw_dask
    from openclaw_dask.bench import benchmark
    from openclaw_dask.runtime import start_cluster
    from openclaw_dask.workflows.runner import run_workflow

    assert len(openclaw_dask.__all__) == 18
    # the lazy table and __all__ name the same 18 (ruff checks the typing imports against __all__)
    assert set(openclaw_dask.__all__) == {*openclaw_dask._HOMES, "__version__"}
    assert set(openclaw_dask.__all__) <= set(dir(openclaw_dask))
    for name in openclaw_dask.__all__:
        assert getattr(openclaw_dask, name) is not None, name
    found = (openclaw_dask.benchmark, openclaw_dask.start_cluster, openclaw_dask.run_workflow)
    assert found == (benchmark, start_cluster, run_workflow)
    from openclaw_dask.workflows.run import StepFailedError

    assert openclaw_dask.StepFailedError is StepFailedError  # what a script catches
    with pytest.raises(AttributeError, match="has no attribute 'plan'"):
        openclaw_dask.plan  # noqa: B018


def test_the_cli_starts_without_dask() -> None:
    """``--help``, ``config keys`` and ``config init`` need neither Dask nor distributed: importing
    them at start cost every command ~0.3 s of its ~0.6 s on this 2-core machine. The runtime's
    public names still resolve, on first use, to the objects their modules hold."""
    heavy = ("dask", "distributed", "numpy", "openclaw_dask.workflows")
    assert loaded_with("openclaw_dask.cli.main", *heavy) == []
    import openclaw_dask.runtime as runtime
    from openclaw_dask.runtime.cluster import start_cluster
    from openclaw_dask.runtime.memory import memory_compact

    assert set(runtime.__all__) == set(runtime._HOMES)
    assert set(runtime.__all__) <= set(dir(runtime))
    for name in runtime.__all__:
        assert callable(getattr(runtime, name)), name
    assert (runtime.start_cluster, runtime.memory_compact) == (start_cluster, memory_compact)
    with pytest.raises(AttributeError, match="has no attribute 'start'"):
        runtime.start  # noqa: B018
