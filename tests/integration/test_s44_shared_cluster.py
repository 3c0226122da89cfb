"""Runs that share one cluster: each run's op modules are its own, or the run is refused; the
runs on a cluster are listed by ``cluster status`` and told to each other."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import numpy as np
import xarray as xr

from openclaw_dask.runtime.cluster import start_cluster
from tests.integration.test_workflow_run import (
    EXAMPLE,
    EXE,
    QUIET,
    ROOT,
    SMALL,
    record_of,
    submit,
)

#: the same module name in both workflows' folders, with other code in each
OPS = """
import time
from pathlib import Path

import numpy as np

FACTOR = {factor}


def _scale(block):
    Path({started!r}).touch()
    deadline = time.monotonic() + 180  # a test that fails must still end
    while {gate!r} and not Path({gate!r}).exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    return block * FACTOR


def scale(ctx, *, source="field", out="scaled"):
    field = ctx.input(source)["temperature"]
    data = field.data.map_blocks(_scale, meta=np.empty((0, 0)))
    return {{out: field.copy(data=data).to_dataset()}}
"""

#: two steps of the module: the second's graph is sent after the other run has started
WORKFLOW = """\
name: shared
steps:
  field:
    op: example.field
    with: {size: 64, chunk: 32}
    outputs: [field.zarr]
  first:
    op: shared_ops:scale
    needs: [field]
    with: {out: first}
    outputs: [first.zarr]
  second:
    op: shared_ops:scale
    needs: [first]
    with: {source: first}
    outputs: [scaled.zarr]
"""


def _workflow(folder: Path, factor: float, gate: Path | None) -> Path:
    folder.mkdir()
    started = folder / "started"
    text = OPS.format(factor=factor, started=str(started), gate=str(gate) if gate else "")
    (folder / "shared_ops.py").write_text(text)
    (folder / "shared.yaml").write_text(WORKFLOW)
    return folder / "shared.yaml"


def _assert_scaled_twice(run_dir: Path, factor: float) -> None:
    """Both steps of the run multiplied by ``factor``: the code of the run's own module."""
    field = xr.open_zarr(run_dir / "field.zarr")["temperature"].values
    scaled = xr.open_zarr(run_dir / "scaled.zarr")["temperature"].values
    np.testing.assert_array_equal(scaled, field * factor * factor)


def test_a_run_whose_op_module_another_live_run_holds_at_other_code_is_refused(
    tmp_path: Path,
) -> None:
    """Two runs on one cluster with their own ``shared_ops.py`` of other code: the second
    shipped its module over the first's, and the first's later graphs ran it (measured: its
    second step multiplied by the other's factor, status completed, run.json naming its own
    file's sha256). The second is now refused (exit 2, naming the first run) and leaves no run
    directory; once the first has ended, it runs with its own code.

    A third run without op modules starts beside the first: it is told that the first is on
    the cluster and records it (``cluster.shared_with``), and ``cluster status`` lists both
    (a group's shared cluster had shown no sign of the runs a ``cluster down`` would end)."""
    gate = tmp_path / "gate"
    first_flow = _workflow(tmp_path / "a", 2.0, gate)
    second_flow = _workflow(tmp_path / "b", 3.0, None)
    first_dir, second_dir, third_dir = tmp_path / "run-a", tmp_path / "run-b", tmp_path / "run-c"
    with start_cluster(overrides=QUIET[1:]) as client:
        address = client.scheduler.address
        args = [str(first_flow), "--address", address, "--run-dir", str(first_dir), *QUIET]
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        first = subprocess.Popen(
            [str(EXE), "submit", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        try:
            deadline = time.monotonic() + 120
            while not (tmp_path / "a" / "started").exists():  # its first step's tasks run
                assert first.poll() is None, first.communicate()
                assert time.monotonic() < deadline, "the first run's step never started"
                time.sleep(0.1)
            second = submit(
                str(second_flow), "--address", address, "--run-dir", str(second_dir), *QUIET
            )
            third_args = [str(EXAMPLE), *SMALL, "--address", address, "--no-report", *QUIET]
            third = subprocess.Popen(
                [str(EXE), "submit", *third_args, "--run-dir", str(third_dir)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
            )
            while not (third_dir / "run.json").exists() or "cluster" not in record_of(third_dir):
                assert third.poll() is None, third.communicate()  # registered, then recorded
                assert time.monotonic() < deadline, "the third run never started"
                time.sleep(0.1)
            status = subprocess.run(
                [str(EXE), "cluster", "status", "--address", address],
                capture_output=True,
                text=True,
                env=env,
                timeout=120,
            )
        finally:
            gate.touch()
            _, err = first.communicate(timeout=300)
        _, third_err = third.communicate(timeout=300)
        assert third.returncode == 0, third_err
        a, c = first_dir.resolve(), third_dir.resolve()
        said = f"note: 1 other run is on this cluster: {a} (workflow shared, since "
        assert said in third_err and "The runs share its workers\n" in third_err, third_err
        assert record_of(third_dir)["cluster"]["shared_with"] == [str(a)]
        assert record_of(first_dir)["cluster"]["shared_with"] == []  # alone when it started
        assert status.returncode == 0, status.stderr
        listed = f"runs: 2: {a} (workflow shared, since "
        assert listed in status.stdout and f"; {c} (workflow example-smoothing, since " in (
            status.stdout
        ), status.stdout
        assert first.returncode == 0, err
        _assert_scaled_twice(first_dir, 2.0)
        assert second.returncode == 2, second.stderr
        assert "Traceback" not in second.stderr
        assert f"the run {first_dir.resolve()} sent to this cluster" in second.stderr
        assert "shared_ops.py" in second.stderr and "Rename" in second.stderr
        assert not second_dir.exists(), list(second_dir.rglob("*"))  # a refused first run
        # the first run has ended: its claim is void, and the other module is shipped
        again = submit(str(second_flow), "--address", address, "--run-dir", str(second_dir), *QUIET)
        assert again.returncode == 0, again.stderr
        _assert_scaled_twice(second_dir, 3.0)
