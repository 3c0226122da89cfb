"""Which ``tune`` workloads sweep ``distributed.batch_size`` (the sweep itself runs in
tests/integration/test_tune.py)."""

from __future__ import annotations

from pathlib import Path

from openclaw_dask.bench.workloads import workload
from tests.conftest import ROOT, make_hardware

MAP_ONLY = """\
name: field-only
steps:
  field:
    op: example.field
    with: {size: 64, chunk: 32, seed: 1}
    outputs: [field.zarr]
"""


def test_a_workflow_with_an_iterative_step_sweeps_batch_size(tmp_path: Path) -> None:
    assert workload("climate").uses_batch_size  # two bands on 2 threads at K=64, one at 16
    assert not workload("stencil").uses_batch_size  # 1°: one band at any K
    assert not workload("matmul").uses_batch_size
    # both example workflows advance a state batch_size steps per task
    assert workload(str(ROOT / "workflows" / "climate.yaml")).uses_batch_size
    assert workload(str(ROOT / "workflows" / "example.yaml")).uses_batch_size
    fields = tmp_path / "fields.yaml"
    fields.write_text(MAP_ONLY)
    assert not workload(str(fields)).uses_batch_size  # map steps only: nothing to sweep


def test_batch_sizes_that_make_one_graph_are_one_trial() -> None:
    """At 0.25° on 2 threads K = 4, 8 and 16 all run one band a whole segment per task (two
    bands would pay more in batches than they save), so tune measures one of them."""
    from openclaw_dask.bench.tune import Tuner
    from openclaw_dask.config import load_config

    climate = workload("climate")
    assert climate.graph_shape is not None
    whole = 2**31
    shapes = {k: climate.graph_shape(2, 2, k) for k in (4, 8, 16, 32, 64, 128)}
    assert shapes == {
        4: (1, whole),
        8: (1, whole),
        16: (1, whole),
        32: (2, 32),
        64: (2, 64),
        128: (2, 128),
    }

    config = load_config(None, env={}, use_search_path=False)
    tuner = Tuner(config, climate, 60.0, make_hardware(cores=2), print)
    ids = {k: tuner.identity(config.with_values(distributed__batch_size=k)) for k in shapes}
    assert ids[4] == ids[8] == ids[16]
    assert len({ids[k] for k in (16, 32, 64, 128)}) == 4
    # on one worker process a batch costs less (no halo task): two bands from K=16 there
    assert climate.graph_shape(2, 1, 8) == (1, whole) and climate.graph_shape(2, 1, 16) == (2, 16)
    one = config.with_values(parallel__processes=1)
    ids = {k: tuner.identity(one.with_values(distributed__batch_size=k)) for k in (4, 8, 16)}
    assert ids[4] == ids[8] != ids[16]
    # a workload that cannot say keeps every K apart (a workflow's grid is its own business)
    tuner = Tuner(config, workload("matmul"), 60.0, make_hardware(cores=2), print)
    ids = {k: tuner.identity(config.with_values(distributed__batch_size=k)) for k in shapes}
    assert len(set(ids.values())) == len(shapes)


def test_the_overhead_suite_s_example_workflow_is_package_data() -> None:
    """It read the repository's workflows/example.yaml, "file not found" in any install but an
    editable one; that file is now a link to the packaged one."""
    import fnmatch
    import tomllib

    from openclaw_dask.bench.suites import overhead

    package = ROOT / "openclaw_dask"
    assert overhead.EXAMPLE.is_file() and overhead.EXAMPLE.is_relative_to(package)
    shipped = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    globs = shipped["package-data"]["openclaw_dask"]
    inside = str(overhead.EXAMPLE.relative_to(package))
    assert any(fnmatch.fnmatch(inside, g) for g in globs), globs
    assert (ROOT / "workflows" / "example.yaml").samefile(overhead.EXAMPLE)
