"""Which ``tune`` workloads sweep ``distributed.batch_size`` (the sweep itself runs in
tests/integration/test_tune.py)."""

from __future__ import annotations

from pathlib import Path

from openclaw_dask.bench.workloads import workload
from tests.conftest import ROOT

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
