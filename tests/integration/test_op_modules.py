"""A user op's module in a file beside the workflow file, on a cluster that was not started
with that folder on its path: found, and sent to the scheduler and the workers."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import xarray as xr

from openclaw_dask.runtime.cluster import start_cluster
from tests.integration.test_workflow_run import QUIET, submit

#: a name no environment has: the module can only come from beside the workflow file
MODULE = "openclaw_test_beside_ops"

#: a helper module beside it that the op module imports (a name bound at its import)
HELPERS = "openclaw_test_beside_helpers"

OPS = '''
import numpy as np

from HELPERS import FACTOR


def _triple(block):
    return block * FACTOR


def triple(ctx):
    """Runs its own function in every task: a worker must unpickle it."""
    field = ctx.input("field")["temperature"]
    data = field.data.map_blocks(_triple, meta=np.empty((0, 0)))
    return {"tripled": field.copy(data=data).to_dataset()}
'''.replace("HELPERS", HELPERS)

WORKFLOW = f"""\
name: beside
steps:
  field:
    op: example.field
    with: {{size: 64, chunk: 32}}
    outputs: [field.zarr]
  triple:
    op: {MODULE}:triple
    needs: [field]
    outputs: [tripled.zarr]
"""


def test_an_op_module_beside_the_workflow_runs_on_an_attached_cluster(tmp_path: Path) -> None:
    """It was "cannot import ... No module named" (exit 2) unless PYTHONPATH named its folder
    for the command and every worker."""
    (tmp_path / "flows").mkdir()
    (tmp_path / "flows" / f"{MODULE}.py").write_text(OPS)
    (tmp_path / "flows" / f"{HELPERS}.py").write_text("FACTOR = 3.0\n")
    workflow = tmp_path / "flows" / "beside.yaml"
    workflow.write_text(WORKFLOW)
    run_dir = tmp_path / "run"
    # the scheduler and workers of a cluster started elsewhere (here: this test process), with
    # no idea of the workflow's folder
    with start_cluster(overrides=QUIET[1:]) as client:
        address = client.scheduler.address
        done = submit(str(workflow), "--address", address, "--run-dir", str(run_dir), *QUIET)
        assert done.returncode == 0, done.stderr
        # one copy per module on a long-lived cluster, not one more per run: the same files
        # are not sent again, an edited helper replaces them (the op module too, which bound
        # the helper's old value at its import)
        for n, factor in enumerate(("3.0", "3.0", "4.0")):
            (tmp_path / "flows" / f"{HELPERS}.py").write_text(f"FACTOR = {factor}\n")
            args = ["--address", address, "--run-dir", str(tmp_path / f"again{n}")]
            again = submit(str(workflow), *args, *QUIET)
            assert again.returncode == 0, again.stderr
        for module in (MODULE, HELPERS):
            prefix = f"openclaw-op-module-{module}.py-"
            for names in client.run(lambda dask_worker: list(dask_worker.plugins)).values():
                assert len([n for n in names if n.startswith(prefix)]) == 1, names
            held = client.run_on_scheduler(lambda dask_scheduler: list(dask_scheduler.plugins))
            assert len([n for n in held if n.startswith(prefix)]) == 1, held
    quadrupled = xr.open_zarr(tmp_path / "again2" / "tripled.zarr")["temperature"].values
    field = xr.open_zarr(run_dir / "field.zarr")["temperature"].values
    tripled = xr.open_zarr(run_dir / "tripled.zarr")["temperature"].values
    np.testing.assert_array_equal(tripled, field * 3.0)
    np.testing.assert_array_equal(quadrupled, field * 4.0)  # the edited module ran
    record = json.loads((run_dir / "run.json").read_text())
    assert record["steps"]["triple"]["status"] == "completed"
