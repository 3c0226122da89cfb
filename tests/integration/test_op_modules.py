"""A user op's module in a file beside the workflow file, on a cluster that was not started
with that folder on its path: found, and sent to the scheduler and the workers."""

from __future__ import annotations

import hashlib
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
    # what the cluster was sent, as it was: the helper first (it is imported first)
    sent = {str((tmp_path / "flows" / f"{m}.py").resolve()) for m in (MODULE, HELPERS)}
    assert set(record["workflow"]["op_modules"]) == sent
    first = json.loads((tmp_path / "again2" / "run.json").read_text())["workflow"]["op_modules"]
    assert next(iter(first)).endswith(f"{HELPERS}.py")
    helper = str((tmp_path / "flows" / f"{HELPERS}.py").resolve())
    assert first[helper] == hashlib.sha256(b"FACTOR = 4.0\n").hexdigest()


#: a module of two ops; the second fails until it is fixed
EDITED = "openclaw_test_edited_ops"

EDITED_OPS = """
def scale(ctx):
    field = ctx.input("field")["temperature"]
    return {"scaled": (field * FACTOR).to_dataset()}


def check(ctx):
    BODY
"""


def test_a_resume_runs_again_the_completed_steps_whose_op_code_was_edited(
    tmp_path: Path,
) -> None:
    """A resume skipped a completed step whose op's source had been edited since (a fixed
    wrong result stayed). Only the op's own source counts: fixing the failed op leaves the
    others of its module skipped."""
    folder = tmp_path / "flows"
    folder.mkdir()
    module = folder / f"{EDITED}.py"

    def write(factor: str, body: str) -> None:
        module.write_text(EDITED_OPS.replace("FACTOR", factor).replace("BODY", body))

    write("2.0", 'raise RuntimeError("not written yet")')
    workflow = folder / "edited.yaml"
    workflow.write_text(
        "name: edited\nsteps:\n"
        "  field:\n    op: example.field\n    with: {size: 32, chunk: 16}\n"
        "    outputs: [field.zarr]\n"
        f"  scale:\n    op: {EDITED}:scale\n    needs: [field]\n    outputs: [scaled.zarr]\n"
        f"  check:\n    op: {EDITED}:check\n    needs: [scale]\n    outputs: [checked.zarr]\n"
    )
    run_dir = tmp_path / "run"
    with start_cluster(overrides=QUIET[1:]) as client:
        address = client.scheduler.address
        first = submit(str(workflow), "--address", address, "--run-dir", str(run_dir), *QUIET)
        assert first.returncode == 1 and "not written yet" in first.stderr, first.stderr
        # the fix of the failed op: the step before it, by another op of the module, is kept
        write("2.0", 'return {"checked": ctx.input("scale")}')
        fixed = submit("--resume", str(run_dir), "--address", address, *QUIET)
        assert fixed.returncode == 0, fixed.stderr
        assert "scale: completed in an earlier attempt, skipped" in fixed.stderr
        # a wrong result fixed in a completed step's op: it runs again, and what needs it
        write("5.0", 'return {"checked": ctx.input("scale")}')
        plan = submit("--resume", str(run_dir), "--address", address, "--dry-run", *QUIET)
        assert "resume: scale: run again: its op's code changed since" in plan.stdout
        assert "resume: field: skip" in plan.stdout, plan.stdout
        again = submit("--resume", str(run_dir), "--address", address, *QUIET)
        assert again.returncode == 0, again.stderr
    said = "step 'scale' completed earlier, but its op's code changed since: running it again"
    assert said in again.stderr
    assert "field: completed in an earlier attempt, skipped" in again.stderr
    field = xr.open_zarr(run_dir / "field.zarr")["temperature"].values
    checked = xr.open_zarr(run_dir / "checked.zarr")["temperature"].values
    np.testing.assert_array_equal(checked, field * 5.0)
    steps = json.loads((run_dir / "run.json").read_text())["steps"]
    assert "code" in steps["scale"] and "code" not in steps["field"]  # a built-in op's: none


#: an iterative op beside the workflow that fails at step 4 until it is fixed
COUNTING = "openclaw_test_counting_ops"

COUNTING_OPS = """
from openclaw_dask.workflows.context import IterativeOp


class Count(IterativeOp):
    outputs = ("counted",)
    total_steps = 6

    def initial_state(self):
        return self.ctx.input("field")

    def advance(self, state, step0, nsteps):
        if step0 >= 4:
            BREAK
        return state + nsteps, {}

    def finish(self, state):
        return {"counted": state}
"""


def test_a_checkpoint_of_an_edited_iterative_op_is_continued_and_the_edit_said(
    tmp_path: Path,
) -> None:
    """The fix of a crash late in a long step continues from its checkpoint, as before; the
    resume (and its dry run) now says that the op's code changed since it was written."""
    folder = tmp_path / "flows"
    folder.mkdir()
    module = folder / f"{COUNTING}.py"
    module.write_text(COUNTING_OPS.replace("BREAK", 'raise RuntimeError("not yet")'))
    workflow = folder / "counting.yaml"
    workflow.write_text(
        "name: counting\nsteps:\n"
        "  field:\n    op: example.field\n    with: {size: 16, chunk: 16}\n"
        "    outputs: [field.zarr]\n"
        f"  count:\n    op: {COUNTING}:Count\n    needs: [field]\n    outputs: [counted.zarr]\n"
    )
    run_dir = tmp_path / "run"
    windows = ["--set", "distributed.sync_interval=2"]
    # (a cluster's workers agree on the result config: started with the run's interval)
    with start_cluster(overrides=[QUIET[1], windows[1]]) as client:
        attach = ["--address", client.scheduler.address]
        first = submit(str(workflow), *attach, "--run-dir", str(run_dir), *windows, *QUIET)
        assert first.returncode == 1 and "not yet" in first.stderr, first.stderr
        module.write_text(COUNTING_OPS.replace("BREAK", "pass"))
        plan = submit("--resume", str(run_dir), *attach, "--dry-run", *QUIET)
        edited = "resume: count: continue from its checkpoint at step 4 (its op's code changed"
        assert edited in plan.stdout, plan.stdout
        again = submit("--resume", str(run_dir), *attach, *QUIET)
        assert again.returncode == 0, again.stderr
    said = (
        "count: continuing from its checkpoint at step 4 (its op's code changed since; delete "
        f"{run_dir / '.checkpoints' / 'count'} to run the step from step 0)"
    )
    assert said in again.stderr, again.stderr
    field = xr.open_zarr(run_dir / "field.zarr")["temperature"].values
    counted = xr.open_zarr(run_dir / "counted.zarr")["temperature"].values
    np.testing.assert_array_equal(counted, field + 6)


#: ops whose numbers come from a helper of their module: an edit there is not the op's own
KERNEL = "openclaw_test_kernel_ops"

KERNEL_OPS = """
def _factor():
    return FACTOR


def scale(ctx):
    field = ctx.input("field")["temperature"]
    return {"scaled": (field * _factor()).to_dataset()}


def check(ctx):
    BODY
"""


def test_a_resume_says_an_op_module_edited_outside_the_ops_it_keeps(tmp_path: Path) -> None:
    """A fixed kernel in a helper of a completed step's op resumed as "nothing to run", and a
    resume that ran another step recorded the edited module's hash for outputs the module
    had made before the edit, both unsaid. The steps stay kept (only an op's own code runs it
    again: the design notes' decision); the resume says so, and run.json keeps it."""
    folder = tmp_path / "flows"
    folder.mkdir()
    module = folder / f"{KERNEL}.py"

    def write(factor: str, body: str) -> None:
        module.write_text(KERNEL_OPS.replace("FACTOR", factor).replace("BODY", body))

    write("2.0", 'raise RuntimeError("not written yet")')
    first_digest = hashlib.sha256(module.read_bytes()).hexdigest()
    workflow = folder / "kernel.yaml"
    workflow.write_text(
        "name: kernel\nsteps:\n"
        "  field:\n    op: example.field\n    with: {size: 32, chunk: 16}\n"
        "    outputs: [field.zarr]\n"
        f"  scale:\n    op: {KERNEL}:scale\n    needs: [field]\n    outputs: [scaled.zarr]\n"
        f"  check:\n    op: {KERNEL}:check\n    needs: [scale]\n    outputs: [checked.zarr]\n"
    )
    run_dir = tmp_path / "run"
    note = f"note: {KERNEL}.py edited (sha256 "
    why = "since the run's last attempt: a completed step runs again only when its op's own code"
    with start_cluster(overrides=QUIET[1:]) as client:
        attach = ["--address", client.scheduler.address]
        first = submit(str(workflow), *attach, "--run-dir", str(run_dir), *QUIET)
        assert first.returncode == 1 and "not written yet" in first.stderr, first.stderr
        # the failed op fixed, and the helper of the completed one edited with it
        write("3.0", 'return {"checked": ctx.input("scale")}')
        digest = hashlib.sha256(module.read_bytes()).hexdigest()
        edit = f"{KERNEL}.py edited (sha256 {first_digest[:12]} -> {digest[:12]})"
        plan = submit("--resume", str(run_dir), *attach, "--dry-run", *QUIET)
        assert f"resume: op modules: {edit}" in plan.stdout, plan.stdout
        fixed = submit("--resume", str(run_dir), *attach, *QUIET)
        assert fixed.returncode == 0, fixed.stderr
        assert "scale: completed in an earlier attempt, skipped" in fixed.stderr
        assert f"{note}{first_digest[:12]} -> {digest[:12]}) {why}" in fixed.stderr
        assert "(a new run makes them with the module as it is)" in fixed.stderr, fixed.stderr
        record = json.loads((run_dir / "run.json").read_text())
        assert record["workflow"]["op_modules_changed"] == [f"attempt 2: {edit}"]
        # nothing edited since: nothing said
        again = submit("--resume", str(run_dir), *attach, *QUIET)
        assert again.returncode == 0 and note not in again.stderr, again.stderr
        # edited after the run completed: nothing runs, and the resume says why
        write("4.0", 'return {"checked": ctx.input("scale")}')
        late = submit("--resume", str(run_dir), *attach, *QUIET)
    assert late.returncode == 0, late.stderr
    assert f"{note}{digest[:12]} -> " in late.stderr and why in late.stderr, late.stderr
    assert "nothing to run" in late.stderr
    # the outputs are the module's as it ran: 2.0 (its edits kept the completed step)
    field = xr.open_zarr(run_dir / "field.zarr")["temperature"].values
    checked = xr.open_zarr(run_dir / "checked.zarr")["temperature"].values
    np.testing.assert_array_equal(checked, field * 2.0)


def test_a_run_keeps_its_workflow_and_op_modules_for_a_colleague_to_run_again(
    tmp_path: Path,
) -> None:
    """run.json had kept the op modules' paths and hashes only: once the author's folder was
    edited or gone, nothing in the run directory said what code made its outputs. The run
    keeps copies, and the workflow copy runs again from there alone, to the same checksums."""
    folder = tmp_path / "flows"
    folder.mkdir()
    (folder / f"{MODULE}.py").write_text(OPS)
    (folder / f"{HELPERS}.py").write_text("FACTOR = 3.0\n")
    # a config of its own beside it, as the workflow names it
    (folder / "beside.yaml").write_text(WORKFLOW.replace("steps:", "config: own.config\nsteps:"))
    (folder / "own.config").write_text("cluster:\n  dashboard_address: 127.0.0.1:0\n")
    run_dir = tmp_path / "run"
    with start_cluster(overrides=QUIET[1:]) as client:
        attach = ["--address", client.scheduler.address]
        done = submit(str(folder / "beside.yaml"), *attach, "--run-dir", str(run_dir))
        assert done.returncode == 0, done.stderr
        record = json.loads((run_dir / "run.json").read_text())
        copies = record["workflow"]["copies"]
        assert sorted(copies) == sorted(
            f".source/{name}"
            for name in ("beside.yaml", f"{MODULE}.py", f"{HELPERS}.py", "own.config")
        )
        for copy in copies:
            assert (run_dir / copy).read_bytes() == (folder / Path(copy).name).read_bytes()
        # the author's folder gone: the colleague runs the copy
        for file in folder.iterdir():
            file.unlink()
        again = tmp_path / "again"
        rerun = submit(str(run_dir / ".source/beside.yaml"), *attach, "--run-dir", str(again))
        assert rerun.returncode == 0, rerun.stderr
    theirs = json.loads((again / "run.json").read_text())["steps"]
    assert {k: v["checksums"] for k, v in theirs.items()} == {
        k: v["checksums"] for k, v in record["steps"].items()
    }
