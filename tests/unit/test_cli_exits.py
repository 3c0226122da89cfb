"""What the command line says and exits with where nothing else pins it down.

Each test here was written for a mutation of ``openclaw_dask/cli`` that the suite let through
(the mutation audit of the command line): an unexpected error shown as a traceback, a Ctrl-C or
SIGTERM exit code other than 130, a refused input that left a file behind or ended in exit 1,
notes and warnings left unsaid, an option combination that was not refused.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, make_hardware
from tests.unit.test_cli import invoke, run_cli

#: The console script's entry with one more command that fails the way ARGV[1] says: the root
#: group's handling of what no command catches itself, as a user meets it.
FAILING_COMMAND = """
import asyncio, os, signal, sys, time
import click
from openclaw_dask.cli import main
from openclaw_dask.cli.main import cli

kept = []

class HalfMade:
    def __del__(self):
        raise AttributeError("no attribute '_debug'")  # a loop cut short in its __init__

@cli.command("fail")
@click.argument("how")
def fail(how):
    if how == "error":
        raise RuntimeError("the bucket is gone")
    if how == "ctrl-c":
        raise KeyboardInterrupt
    if how == "ctrl-c-cutting-short":  # what a Ctrl-C leaves to be finalised at exit
        kept.extend([HalfMade(), asyncio.sleep(0)])
        raise KeyboardInterrupt
    if how == "warnings":  # what the command's worker processes will inherit
        print(os.environ["PYTHONWARNINGS"])
        return
    os.kill(os.getpid(), signal.SIGTERM)  # a batch system ending the job
    time.sleep(30)

sys.argv = ["openclaw-dask", "fail", sys.argv[1]]
main()
"""


def fail(how: str, debug: bool = False, **more: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENCLAW_DEBUG", "PYTHONWARNINGS")}
    if debug:
        env["OPENCLAW_DEBUG"] = "1"
    env.update(more)
    return subprocess.run(
        [sys.executable, "-c", FAILING_COMMAND, how],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env={**env, "PYTHONPATH": str(ROOT)},
    )


def test_an_unexpected_error_is_one_line_and_exit_1_its_traceback_only_on_request() -> None:
    """A bug of ours, or an error nobody foresaw, is one line that says how to see more: a
    traceback had shown on every run (mutation audit: the traceback printed without
    OPENCLAW_DEBUG, and the hint dropped, both went unseen)."""
    proc = fail("error")
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr == (
        "error: RuntimeError: the bucket is gone\n(set OPENCLAW_DEBUG=1 for the traceback)\n"
    )
    debug = fail("error", debug=True)
    assert debug.returncode == 1
    assert "Traceback (most recent call last)" in debug.stderr
    line = FAILING_COMMAND.splitlines().index('        raise RuntimeError("the bucket is gone")')
    assert f'File "<string>", line {line + 1}, in fail\n' in debug.stderr


def test_with_openclaw_debug_set_the_error_does_not_ask_for_it() -> None:
    """With OPENCLAW_DEBUG set the traceback is printed, then the one line; the hint "(set
    OPENCLAW_DEBUG=1 for the traceback)" had followed it all the same (audit: seen under a
    cluster that failed to start)."""
    debug = fail("error", debug=True)
    assert debug.returncode == 1
    assert debug.stderr.endswith(
        "RuntimeError: the bucket is gone\nerror: RuntimeError: the bucket is gone\n"
    ), debug.stderr
    assert "for the traceback" not in debug.stderr


def test_the_user_s_warning_filters_reach_the_workers_beside_the_tracker_s() -> None:
    """The command adds its filter of the resource tracker's cleanup note to PYTHONWARNINGS,
    which worker processes inherit; the user's own filters stay (mutation audit: the
    variable overwritten with the command's filter alone went unseen)."""
    from openclaw_dask.cli.main import QUIET_TRACKER

    mine = fail("warnings", PYTHONWARNINGS="ignore::FutureWarning")
    assert mine.stdout == f"ignore::FutureWarning,{QUIET_TRACKER}\n", mine.stderr
    assert fail("warnings").stdout == f"{QUIET_TRACKER}\n"


@pytest.mark.parametrize("how", ["ctrl-c", "sigterm", "ctrl-c-cutting-short"])
def test_ctrl_c_and_sigterm_in_any_command_exit_130_in_one_line(how: str) -> None:
    """Scripts and batch systems read 130 as "interrupted" (mutation audit: exit 1 for a Ctrl-C
    that no command caught, and SIGTERM left to kill the command silently with 143, both
    went unseen by the unit tests). What the interrupt cut short says nothing as the process
    ends (``quiet_after_interrupt``, now called by the console script's ``main``)."""
    proc = fail(how)
    assert proc.returncode == 130, proc.stderr
    assert proc.stderr == "interrupted\n"


def test_a_refused_benchmark_leaves_no_file_at_its_output_paths(tmp_path: Path) -> None:
    """--json is checked writable by opening it; a later refusal (here --stress) must not leave
    an empty out.json where a result was expected (mutation audit: the probe's file kept)."""
    work = tmp_path / "work"
    work.mkdir()
    proc = run_cli("benchmark", "--json", "out.json", "--stress", "soon", cwd=work)
    assert proc.returncode == 2, proc.stderr
    assert "positive duration" in proc.stderr and "Traceback" not in proc.stderr
    assert list(work.iterdir()) == []


def test_config_init_where_nothing_can_be_written_is_bad_input(tmp_path: Path) -> None:
    """Exit 2 and the file named, not exit 1 and an OSError's repr (mutation audit: the write's
    OSError left to the catch-all went unseen)."""
    result = invoke("config", "init", "-o", "/proc/openclaw.config")
    assert result.exit_code == 2, result.output
    assert "error: /proc/openclaw.config: cannot write: " in result.stderr


@pytest.mark.parametrize(
    "content", [b"logical_cores = 4\n", b"\xff\xfe not text"], ids=["not-json", "not-utf8"]
)
def test_a_hardware_file_that_is_no_json_is_bad_input(tmp_path: Path, content: bytes) -> None:
    """(mutation audit: a JSON or Unicode error there left to the catch-all, exit 1.)"""
    path = tmp_path / "hw.json"
    path.write_bytes(content)
    result = invoke("config", "plan", "--hardware", str(path))
    assert result.exit_code == 2, result.output
    assert f"error: {path}: not a hardware description (JSON from " in result.stderr


def test_plan_warns_of_what_the_machine_cannot_give(tmp_path: Path) -> None:
    """``config plan`` plans a config another machine may run, so a core this one lacks is a
    warning, not a refusal; it must still be said (mutation audit: the warnings dropped)."""
    hardware = tmp_path / "hw.json"
    hardware.write_text(json.dumps(make_hardware(cores=2).to_dict()))
    args = ["--hardware", str(hardware), "--set", 'parallel.thread_affinity=["0-99"]']
    result = invoke("config", "plan", *args)
    assert result.exit_code == 0, result.output
    assert "warning: --set: parallel.thread_affinity[0]: core 2-99 does not exist" in (
        result.stderr
    )


def test_validate_says_the_notes_of_a_valid_config() -> None:
    """What ``auto`` became here is said under the ``ok`` line (mutation audit: ``config
    validate`` without its notes)."""
    result = invoke("config", "validate", "--set", "cluster.backend=auto")
    assert result.exit_code == 0, result.output
    assert "\n   note: cluster.backend: auto resolved to '" in result.stdout


def test_a_path_with_an_equals_sign_after_set_stays_a_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only dotted ``key=value`` tokens after --set are more assignments: ``lr=0.1.config``
    is the file to check (mutation audit: any ``name=`` token taken as an assignment)."""
    monkeypatch.chdir(tmp_path)
    Path("lr=0.1.config").write_text("parallel:\n  processes: 1\n")
    result = invoke("config", "validate", "--set", "parallel.thread_pool_size=1", "lr=0.1.config")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("ok lr=0.1.config: local cluster, 1 worker(s) x 1 thread(s)")


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--resume", "runs/a", "--run-dir", "runs/b"], "drop --run-dir"),
        (["--dry-run"], "Missing argument 'WORKFLOW'"),
    ],
)
def test_submit_refuses_what_it_cannot_do_before_anything(
    args: list[str], said: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(mutation audit: both checks could be dropped unseen.)"""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    result = invoke("submit", *args)
    assert result.exit_code == 2, result.output
    assert said in result.stderr
    assert list(work.iterdir()) == []


def test_a_dry_run_names_what_the_backend_does_not_apply(tmp_path: Path) -> None:
    """(mutation audit: the plan's unapplied settings left out of the dry run's notes.)"""
    args = ["cluster.backend=ssh", "distributed.nodes=[{host: localhost}]"]
    args += ["parallel.thread_affinity=compact"]
    result = invoke("submit", str(ROOT / "workflows/example.yaml"), "--dry-run", "--set", *args)
    assert result.exit_code == 0, result.output
    assert "  note: parallel.thread_affinity not applied on ssh nodes" in result.stdout


@pytest.mark.parametrize("run_dir", ["runs/my run", "runs/it's", "/scratch/$USER/run 1"])
def test_the_resume_command_said_can_be_pasted_as_it_is(run_dir: str) -> None:
    """The line a failed or interrupted run prints to continue it reaches the shell as one
    --resume argument, whatever the run directory's name (mutation audit: unquoted)."""
    from openclaw_dask.cli.submit_cmd import resume_command

    said = resume_command(run_dir)
    assert shlex.split(said) == ["openclaw-dask", "submit", "--resume", run_dir]


@pytest.mark.parametrize(
    ("setting", "said"),
    [
        (
            "cluster.scheduler_address=tcp://127.0.0.1:1",
            "error: --set: cluster.scheduler_address: cluster up starts a new cluster; it "
            "cannot attach to tcp://127.0.0.1:1 (unset this key for cluster up)\n",
        ),
        (
            "cluster.backend=mpi",
            "error: --set: cluster.backend: cluster up starts local, cuda or ssh clusters, "
            "not mpi\n",
        ),
    ],
    ids=["attach", "mpi"],
)
def test_cluster_up_refuses_what_it_cannot_start_before_starting_anything(
    setting: str, said: str, tmp_path: Path
) -> None:
    """Each at the key to change, and no daemon (whose log is made as it starts) (mutation
    audit: without the attach check the address was blamed on cluster.backend; without the
    backend check an mpi daemon was started)."""
    state = tmp_path / "state"
    proc = run_cli("cluster", "up", "--set", setting, env={"OPENCLAW_STATE_DIR": str(state)})
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == f"{said}1 problem found\n"
    assert sorted(p.name for p in state.iterdir()) == ["cluster.lock"]


def test_certs_create_says_what_it_did_with_the_ca_and_a_failed_write_is_bad_input(
    tmp_path: Path,
) -> None:
    """A reused CA is said reused (its key signed the new node), and a write that fails is one
    line and exit 2 (mutation audit: created/reused swapped, and the write's OSError left to
    the catch-all, went unseen)."""
    folder = tmp_path / "certs"
    first = invoke("certs", "create", str(folder))
    assert first.exit_code == 0 and first.stdout.startswith("CA (created): "), first.output
    second = invoke("certs", "create", str(folder), "--name", "other")
    assert second.exit_code == 0 and second.stdout.startswith("CA (reused): "), second.output
    blocked = tmp_path / "blocked"
    (blocked / "node-key.pem").mkdir(parents=True)  # where the node's key goes
    result = invoke("certs", "create", str(blocked), "--force")
    assert result.exit_code == 2, result.output
    assert f"error: {blocked}: cannot write there: " in result.stderr


def test_a_command_under_mpirun_returns_the_exit_code_it_would_exit_with(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rank 1 runs the command in its own process and exits with what it returns: a bad
    option is 2 there too (mutation audit: 1 for a click usage error went unseen)."""
    from openclaw_dask.cli.mpi_entry import run_client

    monkeypatch.chdir(tmp_path)
    assert run_client(["config", "validate", "--no-such-option"]) == 2
    assert run_client(["config", "validate", "missing.config"]) == 2
    assert run_client(["config", "validate"]) == 0


def test_one_option_a_stress_run_does_not_take_is_said_in_the_singular(tmp_path: Path) -> None:
    """It read "--plot shape the benchmark suites"."""
    proc = run_cli("benchmark", "--stress", "4s", "--plot", "p.png", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "error: --stress: --plot shapes the benchmark suites, which --stress runs" in (
        proc.stderr
    )


def test_an_interrupted_command_run_in_a_process_that_goes_on_leaves_its_logging_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An interrupted command set the 'distributed' logger to critical, silenced unraisable
    exceptions and warnings of never-awaited coroutines for the rest of the process: run from
    ``CliRunner`` (or a notebook) it hid a later test's Dask log record (CI failed so twice)."""
    import logging
    import warnings

    from openclaw_dask.workflows import runner

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, "run_workflow", interrupted)
    logger = logging.getLogger("distributed")
    before = (logger.level, sys.unraisablehook, list(warnings.filters))
    result = invoke("submit", str(ROOT / "workflows/example.yaml"))
    assert result.exit_code == 130, result.output
    assert "interrupted before the run began" in result.stderr
    assert (logger.level, sys.unraisablehook, list(warnings.filters)) == before
