"""``openclaw-dask tune``: a short real tuning run, and bad input."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from distributed import Client, LocalCluster

from openclaw_dask.bench.load import TOP
from openclaw_dask.bench.run import lost_workers_note, watch_workers, workers_lost
from openclaw_dask.bench.tune import (
    MIN_BUDGET_S,
    Trial,
    Tuner,
    _report,
    pairs_disagree,
    tune,
    tuned_config_text,
)
from openclaw_dask.bench.tune_pairs import candidate_won
from openclaw_dask.bench.tune_report import markdown
from openclaw_dask.bench.workloads import Workload, workload
from openclaw_dask.config import ConfigError, detect_hardware, load_config
from tests.conftest import ROOT
from tests.integration.conftest import isolated_env
from tests.integration.dies_once import (
    AFTER_RUN_ENV,
    BESIDE_ENV,
    DIES_ONCE_SETS,
    MARKER_ENV,
    dask_log_lines,
)
from tests.integration.procs import check_busiest_named, cpu_seconds
from tests.integration.sshd import free_port
from tests.integration.starts_slowly import STARTS_SLOWLY_SETS
from tests.integration.test_h42_tune_budget import MARGIN_S
from tests.integration.test_workflow_run import EXE, ctrl_c_after, foreground
from tests.unit.test_cli import invoke, run_cli

#: the shortest budget: the baseline, and no time for a candidate and the final pairs after it
#: (while the baseline takes 3.5 s or more, as the stencil's does on the 2-core VM)
BASELINE_ONLY = f"{MIN_BUDGET_S:.0f}s"


@pytest.mark.slow
def test_tune_writes_a_valid_config_and_a_report_with_interleaved_pairs(tmp_path: Path) -> None:
    env = isolated_env(tmp_path)
    out = tmp_path / "tuned.config"
    t0 = time.monotonic()
    proc = run_cli(
        "tune",
        "--workload",
        "stencil",
        "--budget",
        "60s",  # the baseline, a candidate and the pairs, on a busy 2-core machine too
        "--out",
        str(out),
        env=env,
        cwd=tmp_path,
        timeout=600,
    )
    wall = time.monotonic() - t0
    assert proc.returncode == 0, proc.stderr
    assert wall <= 60 + MARGIN_S, wall  # the whole command within its budget (its pairs too)
    config = load_config(out)  # the tuned config is a valid config
    report = json.loads((tmp_path / "tuned.report.json").read_text())
    baseline, *others = report["trials"]
    assert baseline["stage"] == "baseline" and baseline["changes"] == {}
    assert len(baseline["rate_samples"]) == 3 and all(r > 0 for r in baseline["rate_samples"])
    assert baseline["ctx_switches_per_worker"], "context switches are recorded per worker"
    assert any(t["stage"] == "threads" and t["rate_samples"] for t in others)
    comp = report["comparison"]
    assert comp["pairs"] >= 2
    assert len(comp["rates"]["baseline"]) == len(comp["rates"]["tuned"]) == comp["pairs"]
    if report["recommended"]:  # never recommend what lost the final pairs
        assert comp["speedup"] > 1.0
        for key, value in report["recommended"].items():
            assert config[key] == value
            assert "# tuned: " in out.read_text()
    else:  # its header says why: no winner, or (pairs that measured one) the disagreement
        disagree = pairs_disagree(report)  # (a loaded machine: seen once in 3 local runs)
        said = f"# measured: {disagree};" if disagree else "# measured: no candidate"
        assert said in out.read_text(), out.read_text()
    md = (tmp_path / "tuned.report.md").read_text()
    assert "interleaved pairs" in md and "| 1 |" in md
    assert any("compression" in s and "one host" in s for s in report["skipped"])
    # the 1° stencil runs one band at any K: a batch sweep would measure the same thing
    assert any("batch_size" in s for s in report["skipped"])
    assert not any(t["stage"] == "batch" for t in others)
    assert (tmp_path / "tuned.report.png").stat().st_size > 1000


@pytest.mark.slow
def test_ctrl_c_keeps_what_tune_measured_beside_an_earlier_config(tmp_path: Path) -> None:
    out = tmp_path / "tuned.config"
    out.write_text("# an earlier tune's config\n")
    args = ["tune", "--workload", "stencil", "--budget", "5m", "--out", str(out)]
    proc = foreground([str(EXE), *args], env=isolated_env(tmp_path), cwd=tmp_path)
    # once the baseline and one more trial are measured
    _, stderr = ctrl_c_after(proc, lambda line: line.startswith("threads ") and "/s" in line)
    assert proc.returncode == 130, stderr
    assert "trial(s) measured before Ctrl-C: " in stderr and "interrupted" in stderr
    assert "Traceback" not in stderr
    assert out.read_text() == "# an earlier tune's config\n"  # left as it was
    assert not (tmp_path / "tuned.report.json").exists()
    report = json.loads((tmp_path / "tuned.interrupted.json").read_text())
    assert report["interrupted"] and report["comparison"] is None and report["recommended"] == {}
    baseline, second, *rest = report["trials"]
    assert baseline["stage"] == "baseline" and len(baseline["rate_samples"]) == 3
    assert second["stage"] == "threads" and len(second["rate_samples"]) == 3
    # the trial cut short is marked, not reported with the samples it had so far
    assert all(t["skipped"] for t in rest if len(t["rate_samples"]) != 3)
    assert "**Interrupted**" in (tmp_path / "tuned.interrupted.md").read_text()
    assert (tmp_path / "tuned.interrupted.png").stat().st_size > 1000


@pytest.mark.slow
def test_a_budget_spent_on_the_baseline_says_what_was_not_measured(tmp_path: Path) -> None:
    """The baseline always runs; a budget it alone uses up leaves every candidate unmeasured,
    which must not read as "nothing measured faster".

    And the time a tune says it used counts the command's start: the report's "budget 20 s,
    used N s" was tune()'s own time, while --budget is the whole command's: a start of seconds
    (Python, imports, the config) was left out. Here the command's process sleeps 5 s before
    the command runs; its report must count them. (One tune for both: each had its own, of
    12-23 s in CI, and the sleep only leaves a candidate less room.)"""
    out = tmp_path / "tuned.config"
    args = ("tune", "--workload", "stencil", "--budget", BASELINE_ONLY, "--out", str(out))
    start = (
        "import runpy, time; time.sleep(5); "
        "runpy.run_module('openclaw_dask', run_name='__main__', alter_sys=True)"
    )
    # every trial's cluster starts 5 s late: a quick baseline (3.5 s, once in CI) had left a
    # candidate room enough
    began = time.time()
    proc = subprocess.run(
        [sys.executable, "-c", start, *args, *STARTS_SLOWLY_SETS],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
        env={**os.environ, **isolated_env(tmp_path)},
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads((tmp_path / "tuned.report.json").read_text())
    # the 5 s before the command are in the time it says it used
    measured = sum(t["wall_s"] for t in report["trials"])
    assert report["wall_s"] >= 5.0 + measured, report["wall_s"]
    md = (tmp_path / "tuned.report.md").read_text()
    assert f"used {report['wall_s']:.0f} s." in md
    assert began < report["started"] < began + report["wall_s"]  # its date, as run.json's
    # the command to run it again, in the report and atop the config it wrote
    assert report["command"] == shlex.join(["openclaw-dask", *args, *STARTS_SLOWLY_SETS])
    assert out.read_text().startswith(f"# openclaw.config tuned by `{report['command']}`\n")
    assert f"Command: `{report['command']}`" in (tmp_path / "tuned.report.md").read_text()
    baseline, *others = report["trials"]
    assert baseline["rate_samples"] and baseline["wall_s"] > 0
    assert others and all(t["skipped"] == "budget spent" for t in others)
    left = report["unmeasured"]
    assert left["count"] == left["candidates"] == len(others)
    assert left["suggested_budget_s"] >= baseline["wall_s"] * len(report["trials"])
    past = ""  # a baseline slower than the whole budget (a loaded machine) says its time
    if baseline["wall_s"] > MIN_BUDGET_S:
        past = (
            f", the baseline alone took {baseline['wall_s']:.0f} s (its cluster's start, a "
            "warm-up, a timed run: it always runs)"
        )
    note = (
        f"{len(others)} of {len(others)} candidates not measured: the budget "
        f"({MIN_BUDGET_S:.0f} s) left no room for them beside the final comparison{past}; "
        f"--budget {left['suggested_budget_s'] // 60}m or more measures them all here"
    )
    assert "no candidate was measured within the budget" in proc.stdout
    assert note in " ".join(proc.stdout.split())  # rich may wrap the line
    assert "nothing measured faster" not in proc.stdout
    text = out.read_text()
    assert "# measured: no candidate within the budget" in text and f"# {note}" in text
    given = load_config(None, [STARTS_SLOWLY_SETS[1]], use_search_path=False)
    assert load_config(out).config_hash() == given.config_hash()
    assert "no candidate was measured within the budget" in md and note[1:] in md


def test_a_tune_beside_a_busy_process_says_so_in_its_output_config_and_report(
    tmp_path: Path, stranger: int
) -> None:
    """A tune beside a build or a test suite chose one thread on this 2-core machine (its
    leftovers), and nothing in the report told that run from one on an idle machine.

    And `--set gpu.devices=all` without a GPU tuned CPU workers without a word, and the tuned
    config kept `gpu.devices: all` with nothing to say that it had not applied. (One tune for
    both, each note beside the other: each had its own baseline-only tune, ~9 s.)"""
    out = tmp_path / "tuned.config"
    args = ("tune", "--workload", "stencil", "--budget", BASELINE_ONLY, "--out", str(out))
    no_gpu = "gpu.devices is set but no GPU was found: using CPU workers"
    gpus = bool(detect_hardware().gpus)  # a GPU there: gpu.devices applies
    sets = () if gpus else ("--set", "gpu.devices=all")
    spun, began = cpu_seconds(stranger), time.monotonic()
    proc = run_cli(*args, *sets, env=isolated_env(tmp_path), cwd=tmp_path, timeout=600)
    share = (cpu_seconds(stranger) - spun) / (time.monotonic() - began)
    assert proc.returncode == 0, proc.stderr
    if not gpus:
        assert proc.stderr.startswith(f"note: {no_gpu}\n"), proc.stderr  # before the baseline
        assert f"note: {no_gpu}" in proc.stdout  # and with the outcome
        assert f"\n# {no_gpu}\n" in out.read_text()
        assert f"{no_gpu[0].upper()}{no_gpu[1:]}." in (tmp_path / "tuned.report.md").read_text()
    report = json.loads((tmp_path / "tuned.report.json").read_text())
    if not gpus:
        assert report["plan"]["backend"] == "local" and report["plan"]["unapplied"] == [no_gpu]
    load = report["background"]
    named = check_busiest_named(load["top"], stranger, share, TOP)
    assert load["other_cores"] > 0.2, load
    said = " ".join(proc.stdout.split())  # (rich wraps lines)
    assert f"note: other processes used {load['other_cores']:.2f} of this machine's" in said
    python = f"python3 (pid {stranger})" in said or f"python (pid {stranger})" in said
    assert python == named, said
    assert "not of an idle machine" in said
    # said after the baseline too, while the tune goes on (it takes minutes)
    early = " ".join(proc.stderr.split())
    assert "note: other processes are using" in early and "will be of what they leave" in early
    assert early.index("note: other processes are using") > early.index("baseline")
    assert "# other processes used" in out.read_text()
    assert "Other processes used" in (tmp_path / "tuned.report.md").read_text()
    load_config(out)  # the comment keeps it a config


def test_a_worker_restarted_during_a_trial_does_not_end_the_tune(tmp_path: Path) -> None:
    """A worker that died between the trial's two context-switch counts (killed, out of memory)
    came back under another address, and the trial ended in ``error: KeyError: 'tcp://...'``.
    Dask's own log lines (the worker's, its nanny's) came among the trial lines; the trials say
    what was measured (``OPENCLAW_DEBUG=1`` keeps Dask's lines: ``test_benchmark``)."""
    died = tmp_path / "died"
    env = isolated_env(tmp_path) | {MARKER_ENV: str(died), AFTER_RUN_ENV: "_ctx_switches"}
    # the baseline only, with the time a worker's death and restart take (its 3 timed runs)
    args = ["--workload", "matmul", "--budget", "20s", "--out", str(tmp_path / "tuned.config")]
    args += ["--set", "cluster.dashboard_address=127.0.0.1:0", "parallel.processes=2"]
    proc = run_cli("tune", *args, *DIES_ONCE_SETS, env=env, cwd=tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert died.exists()  # a worker did die, in the timed runs
    assert not dask_log_lines(proc.stderr), proc.stderr
    assert "a worker's own warning" not in proc.stderr
    first = proc.stderr.splitlines()[0]
    assert first.startswith("baseline ") and "1 worker(s) died during this trial" in first
    baseline = json.loads((tmp_path / "tuned.report.json").read_text())["trials"][0]
    assert len(baseline["rate_samples"]) == 3
    # the report keeps what the terminal said: its figure includes the loss
    assert len(baseline["workers_lost"]) == 1, baseline
    markdown = (tmp_path / "tuned.report.md").read_text()
    assert "(1 worker(s) died during it)" in markdown
    # of the two workers, the one restarted did not run every timed run: it is not counted
    counted = baseline["ctx_switches_per_worker"]
    assert len(counted) == 1 and all(n >= 0 for n in counted.values()), counted


def test_a_worker_that_dies_in_the_final_pairs_is_noted_as_in_a_trial(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The trials noted a worker's death; the final comparison's figures included one unsaid.
    Its two clusters are the only ones up at once: the preload aims the death there. (The
    comparison alone, without the sweep before it: within ``tune``'s budget, a loaded machine
    measured no challenger and so made no comparison.)"""
    died = tmp_path / "died"
    monkeypatch.setenv(MARKER_ENV, str(died))  # the workers' processes inherit it
    monkeypatch.setenv(BESIDE_ENV, "1")
    sets = [DIES_ONCE_SETS[1], "cluster.dashboard_address=127.0.0.1:0", "parallel.processes=2"]
    lines: list[str] = []
    tuner = Tuner(load_config(None, sets), workload("matmul"), 60, detect_hardware(), lines.append)
    comp = tuner.compare(Trial("threads", {"parallel.processes": 1}), pairs=2)
    assert died.exists()
    assert comp["pairs"] == 2
    # the candidate's cluster starts second: its first task is the first one beside the other
    assert comp["workers_lost"]["baseline"] == [] and len(comp["workers_lost"]["tuned"]) == 1
    [address] = comp["workers_lost"]["tuned"]
    # before the pairs (its placement, its warm-up): back and warmed up again before them
    assert comp["dropped"] == []
    [line] = lines
    assert line.startswith("baseline vs parallel.processes=1, 2 interleaved pairs: ")
    assert line.endswith(
        f"; a worker died before the final pairs (candidate {address}): its cluster's workers "
        "were back and warmed up before they began, so their figures do not include it"
    )


def _kills_the_candidates_worker(at_run: int) -> Workload:
    """A workload that kills the worker of the one-process cluster (the candidate's) at its
    ``at_run``-th run, a real death the scheduler has seen before the run's task goes in."""

    def prepare(client: Client, config: Any) -> Callable[[], float]:
        runs = []

        def run() -> float:
            runs.append(1)
            if config["parallel.processes"] == 1 and len(runs) == at_run:
                [(address, pid)] = client.run(os.getpid).items()
                os.kill(pid, signal.SIGKILL)
                deadline = time.monotonic() + 60
                while address in client.nthreads():
                    assert time.monotonic() < deadline, "the scheduler did not see the death"
                    time.sleep(0.05)
            client.submit(time.sleep, 0.01, pure=False).result()
            return 1.0

        return run

    return Workload("kills", "runs", "kills the candidate's worker once", prepare)


def test_a_pair_a_worker_died_in_does_not_decide_and_the_tuned_config_says_so(
    tmp_path: Path,
) -> None:
    """A death in the final pairs was noted, but its pair counted towards the recommendation,
    and the tuned config's header did not say it. The pair is now measured again in its place
    and left out of the decision; the header names the cluster and the worker."""
    sets = ["cluster.dashboard_address=127.0.0.1:0", "parallel.processes=2"]
    config = load_config(None, sets)
    lines: list[str] = []
    # runs of the candidate: its warm-up, pair 1, pair 2 (the death), the untimed run on the
    # restarted worker, then pair 3 in place of pair 2
    tuner = Tuner(config, _kills_the_candidates_worker(3), 60, detect_hardware(), lines.append)
    winner = Trial("threads", {"parallel.processes": 1})
    comp = tuner.compare(winner, pairs=2)
    [hit] = comp["dropped"]
    [address] = hit["workers_lost"]["tuned"]
    assert hit["pair"] == 2 and hit["workers_lost"]["baseline"] == []
    assert comp["pairs"] == 2 and len(comp["rates"]["tuned"]) == len(comp["rates"]["baseline"]) == 2
    assert comp["workers_lost"] == {"baseline": [], "tuned": [address]}
    noted = f"a worker died during final pair 2 (candidate {address}): not counted"
    [line] = lines
    assert f"; {noted}; the decision rests on the 2 pair(s) without a death" in line
    comp["candidate"] = winner.changes
    recommended = winner.changes if candidate_won(comp) else {}
    report = _report(tuner, config, tuner.work, 60, time.monotonic(), winner, comp, recommended)
    header = tuned_config_text(config, report).split("\nparallel:")[0]
    assert f"# {noted}\n# the decision rests on the 2 pair(s) without a death" in header
    assert "| 2 (not counted: a worker died) |" in markdown(report)


def _restarted(client: Client, address: str, pid: int) -> None:
    """Wait until ``address`` answers from a process other than ``pid``."""
    deadline = time.monotonic() + 60
    while client.run(os.getpid, on_error="ignore").get(address) in (None, pid):
        assert time.monotonic() < deadline, "the worker was not restarted"
        time.sleep(0.05)


def pinned_port_cluster(port: int) -> LocalCluster:
    """One worker process on ``port``: restarted by its nanny, it keeps its address."""
    return LocalCluster(
        n_workers=1,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        worker_port=port,
        dashboard_address="127.0.0.1:0",  # None is Dask's default, 8787: in use meanwhile
    )


def test_a_worker_restarted_on_its_pinned_port_is_lost_all_the_same() -> None:
    """A restarted worker was told from the one it replaced by its new address, but an SSH
    node's ``port`` pins it: the death went unsaid. (Tune's local clusters cannot pin one, so
    this cluster is started here with Dask's own ``worker_port``.)"""
    port = free_port("127.0.0.1")
    with pinned_port_cluster(port) as cluster, Client(cluster) as client:
        before = watch_workers(client)
        [(address, pid)] = client.run(os.getpid).items()
        os.kill(pid, signal.SIGKILL)  # a real death; its nanny starts it again on the same port
        _restarted(client, address, pid)
        assert address.endswith(f":{port}") and set(client.nthreads()) == set(before.ids)
        assert workers_lost(client, before) == [address]


def test_a_worker_that_dies_twice_is_lost_twice() -> None:
    """Workers then and now were compared: a worker that died twice in one measurement was one
    loss (its port pinned: the same address), and its figures said one death."""
    with pinned_port_cluster(free_port("127.0.0.1")) as cluster, Client(cluster) as client:
        before = watch_workers(client)
        for _ in range(2):
            [(address, pid)] = client.run(os.getpid).items()
            os.kill(pid, signal.SIGKILL)
            _restarted(client, address, pid)
        lost = workers_lost(client, before)
    assert lost == [address, address]
    assert f"({address} (2 times))" in lost_workers_note(lost, "trial")


def test_a_worker_that_joins_and_dies_during_a_measurement_is_lost() -> None:
    """Only the workers there at its start were watched: one that joined later (a restarted
    one, under a new address) and died went unsaid."""
    with (
        LocalCluster(n_workers=1, threads_per_worker=1, dashboard_address="127.0.0.1:0") as cluster,
        Client(cluster) as client,
    ):
        before = watch_workers(client)
        cluster.scale(2)
        client.wait_for_workers(2, timeout=60)
        [joined] = set(client.nthreads()) - set(before.ids)
        os.kill(client.run(os.getpid, workers=[joined])[joined], signal.SIGKILL)
        deadline = time.monotonic() + 60
        while joined in client.nthreads():  # until the scheduler has removed it
            assert time.monotonic() < deadline, "the scheduler did not notice the death"
            time.sleep(0.05)
        assert workers_lost(client, before) == [joined]


def test_a_worker_restarted_on_its_pinned_port_is_left_out_of_the_context_switches() -> None:
    """A restarted worker counts its context switches from zero: under a pinned port its
    address is the same, and its per-run figure came out wrong (even negative)."""
    runs = []

    def prepare(client: Client, config: Any) -> Callable[[], float]:
        def run() -> float:
            runs.append(1)
            if len(runs) == 2:  # the first timed run: a real death, and its restart
                [(address, pid)] = client.run(os.getpid).items()
                os.kill(pid, signal.SIGKILL)
                _restarted(client, address, pid)
            return 1.0

        return run

    work = Workload("killing", "runs", "kills its worker once", prepare)
    tuner = Tuner(load_config(None, []), work, 60, detect_hardware(), print, repeats=2)
    with pinned_port_cluster(free_port("127.0.0.1")) as cluster, Client(cluster) as client:
        [address] = client.nthreads()
        samples, per_run, lost = tuner._timed(client, tuner.base)
    assert len(samples) == 2 and lost == [address]
    assert per_run == {}  # not a count from two different processes


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--budget", "0s"], "positive duration"),
        (["--budget", "forever"], "positive duration"),
        (["--budget", "1e309"], "positive duration"),  # an OverflowError, exit 1, before
        (["--out", "/nonexistent-dir/tuned.config"], "does not exist"),
        (["--workload", "climat"], "did you mean 'climate'"),
        (["--workload", "missing.yaml"], "--workload: file not found: missing.yaml"),
        # each was "OSError: [Errno 36] File name too long", exit 1
        (["--workload", "a" * 300 + ".yaml"], "--workload: file not found: aaa"),
        (["--workload", "a" * 300], "--workload: unknown workload 'aaa"),
        (["--out", "a" * 300 + ".config"], ".config: file name too long"),
    ],
)
def test_bad_input_is_refused_before_anything_starts(
    args: list[str], expected: str, tmp_path: Path
) -> None:
    # in this process (the cwd is tmp_path): an interpreter's start and imports for each case
    # cost more than the check; the commands that run do start one (run_cli)
    result = invoke("tune", *args)
    assert result.exit_code == 2, result.output
    assert expected in result.stderr
    assert "Traceback" not in result.stderr  # (an exception would also fail the test here)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("option", ["--workload", "--config"])
def test_an_out_that_is_an_input_is_refused_before_anything_starts(
    option: str, tmp_path: Path
) -> None:
    """``--out`` naming the workflow or the config being tuned: it was replaced by the tuned
    config once the tuning was done (the workflow's steps, the config's comments: gone)."""
    source = ROOT / (
        "workflows/example.yaml" if option == "--workload" else "configs/tuned-example.config"
    )
    given = tmp_path / source.name
    given.write_text(source.read_text())
    args = ["tune", "--budget", BASELINE_ONLY, "--workload", "stencil", option, given.name]
    # another spelling of the same file (mutation audit: paths compared as written: pathlib
    # makes ./NAME and NAME the same path already, so the test had passed without resolve())
    result = invoke(*args, "--out", str(given))  # (in this process, its cwd tmp_path)
    assert result.exit_code == 2, result.output
    assert f"error: --out: {given} is also the {option} file; tune would replace it" in (
        result.stderr
    )
    assert given.read_text() == source.read_text()
    assert list(tmp_path.iterdir()) == [given]


def test_an_out_that_is_the_config_found_by_the_search_is_refused(tmp_path: Path) -> None:
    """``tune --out openclaw.config`` beside the ./openclaw.config it tunes (read without
    --config) replaced it, comments and all, once the tuning was done."""
    (tmp_path / "openclaw.config").write_text("parallel:\n  processes: 1  # mine\n")
    args = ["tune", "--budget", BASELINE_ONLY, "--workload", "stencil", "--out", "openclaw.config"]
    result = invoke(*args, env={"HOME": "/nowhere"})  # (in this process, its cwd tmp_path)
    assert result.exit_code == 2, result.output
    assert "error: --out: openclaw.config is also the config file; tune would" in result.stderr
    assert (tmp_path / "openclaw.config").read_text() == "parallel:\n  processes: 1  # mine\n"


def test_a_workflow_that_fails_in_the_baseline_is_said_as_a_failed_run(tmp_path: Path) -> None:
    """Its step's error had been shown as one of ours: "error: StepFailedError: ..." and
    "(set OPENCLAW_DEBUG=1 for the traceback)"."""
    (tmp_path / "boommod.py").write_text("def boom(ctx):\n    raise RuntimeError('kaboom')\n")
    flow = tmp_path / "my flow.yaml"
    flow.write_text("name: boom\nsteps:\n  a:\n    op: boommod:boom\n    outputs: [a.zarr]\n")
    args = ["tune", "--budget", BASELINE_ONLY, "--workload", flow.name]
    proc = run_cli(*args, env=isolated_env(tmp_path), cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert (
        "failed: tune's baseline run of my flow.yaml: step 'a' (op boommod:boom) failed: "
        "RuntimeError: kaboom\n" in proc.stderr
    )
    assert "`openclaw-dask submit 'my flow.yaml'` runs it alone" in proc.stderr
    assert "Traceback" not in proc.stderr and "OPENCLAW_DEBUG" not in proc.stderr
    assert not (tmp_path / "tuned.config").exists()


def test_a_config_that_attaches_to_a_scheduler_is_refused(tmp_path: Path) -> None:
    """Every trial attached to the one running cluster: a candidate with 4 threads in 4
    processes measured its 2 workers, labelled "thread_pool_size=4, processes=4"."""
    attached = {"cluster.scheduler_address": "tcp://127.0.0.1:1"}
    config = load_config(None, attached, use_search_path=False)
    with pytest.raises(ConfigError, match=r"cluster\.scheduler_address: tune starts a cluster"):
        tune(config, workload_name="matmul", budget=60.0)
    (tmp_path / "att.config").write_text("cluster:\n  scheduler_address: tcp://127.0.0.1:1\n")
    args = ["tune", "--config", "att.config", "--budget", BASELINE_ONLY]
    result = invoke(*args)  # refused before a cluster starts: in this process, its cwd tmp_path
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(
        "error: att.config:2: cluster.scheduler_address: tune starts a cluster of each "
        "candidate config to measure it; an attached cluster's workers stay as they were "
        "started: drop cluster.scheduler_address\n"
    ), result.stderr
    assert not (tmp_path / "tuned.config").exists()


@pytest.mark.parametrize("phase", ["trial", "final pairs"])
def test_a_worker_death_that_fails_the_climate_work_runs_it_again(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, phase: str
) -> None:
    """The climate workload's bands live on their home workers, which Dask cannot recompute
    from: a death ended the whole tune with "FuturesCancelledError ... already forgotten". The
    trial now runs again on the restarted workers (the pair places its bands anew), and says
    so."""
    died = tmp_path / "died"
    monkeypatch.setenv(MARKER_ENV, str(died))  # the workers' processes inherit it
    if phase == "final pairs":
        monkeypatch.setenv(BESIDE_ENV, "1")
    sets = [DIES_ONCE_SETS[1], "cluster.dashboard_address=127.0.0.1:0", "parallel.processes=2"]
    lines: list[str] = []
    work = workload("climate")
    tuner = Tuner(load_config(None, sets), work, 60, detect_hardware(), lines.append)
    if phase == "trial":
        trial = tuner.measure("baseline", {}, strict=True)
        assert died.exists() and trial.samples and trial.skipped is None
        [line] = lines
        [address] = trial.workers_lost
        assert f"1 worker(s) died during this trial's first run ({address}), which failed" in line
    else:
        comp = tuner.compare(Trial("threads", {"parallel.processes": 1}), pairs=2)
        assert died.exists() and comp["pairs"] == 2
        assert all(rate > 0 for rates in comp["rates"].values() for rate in rates)
        assert len(comp["workers_lost"]["tuned"]) == 1
