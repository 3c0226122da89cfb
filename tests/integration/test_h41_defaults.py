"""A ``with:`` line written at the op's default value changes no step: ``submit --resume``
runs nothing again (it had run the step and every step after it, for the same bits)."""

from __future__ import annotations

import json
from pathlib import Path

from openclaw_dask.config import load_config
from openclaw_dask.workflows.runner import step_fingerprint
from openclaw_dask.workflows.spec import load_workflow
from tests.integration.test_workflow_run import EXAMPLE, QUIET, SMALL, record_of, submit

#: example.yaml's steps with arguments at their ops' defaults written out
AT_DEFAULTS = (
    ("record_every: 80}", "record_every: 80, diffusivity: 1.0e4, source: field}"),
    (
        "    needs: [diffuse]\n",
        "    needs: [diffuse]\n    with: {source: diffuse, output: smoothed}\n",
    ),
)


def _rewritten(text: str, changes: tuple[tuple[str, str], ...]) -> str:
    for old, new in changes:
        assert old in text, old
        text = text.replace(old, new)
    return text


def test_a_with_line_at_the_op_s_default_runs_no_step_again(tmp_path: Path) -> None:
    wf = tmp_path / "example.yaml"
    plain = EXAMPLE.read_text()
    wf.write_text(plain)
    run_dir = tmp_path / "run"
    done = submit(str(wf), "--run-dir", str(run_dir), "--no-report", *QUIET, *SMALL)
    assert done.returncode == 0, done.stderr
    before = (run_dir / "run.json").read_text()
    nothing = f"nothing to run: every step of {run_dir} completed in an earlier attempt"

    # the defaults written out: the same result, nothing to run (diffuse and profile ran again)
    written = _rewritten(plain, AT_DEFAULTS)
    wf.write_text(written)
    again = submit(str(wf), "--resume", str(run_dir), *QUIET)
    assert again.returncode == 0 and nothing in again.stderr, again.stderr
    assert (run_dir / "run.json").read_text() == before

    # a run recorded before the change, with the defaults written: its fingerprints were of
    # every argument as written, and its resume still skips what it completed
    rec = record_of(run_dir)
    workflow = load_workflow(wf, {"size": 128, "chunk": 64, "steps": 120})
    config = load_config(None, ["cluster.dashboard_address=127.0.0.1:0"])
    for name, step in rec["steps"].items():
        old = step_fingerprint(workflow.steps[name], rec, config, as_written=True)
        assert (old != step["fingerprint"]) == (name != "field"), name
        step["fingerprint"] = old
    (run_dir / "run.json").write_text(json.dumps(rec))
    older = submit(str(wf), "--resume", str(run_dir), *QUIET)
    assert older.returncode == 0 and nothing in older.stderr, older.stderr

    # another value is another step
    wf.write_text(written.replace("diffusivity: 1.0e4", "diffusivity: 2.0e4"))
    plan = submit(str(wf), "--resume", str(run_dir), "--dry-run")
    assert "resume: diffuse: run again: its op, arguments or inputs changed" in plan.stdout

    # another parameter value: refused, with the command that starts a new run with it
    other = submit(str(wf), "--resume", str(run_dir), "--set", "params.steps=200")
    assert other.returncode == 2, other.stderr
    new_run = f"`openclaw-dask submit {wf} --set params.size=128 params.chunk=64 params.steps=200`"
    assert f"start a new run for another value: {new_run}\n" in other.stderr, other.stderr
    assert "Traceback" not in other.stderr
