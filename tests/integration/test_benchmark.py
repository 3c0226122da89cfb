"""``openclaw-dask benchmark``: the quick run on a real cluster, and bad input."""

from __future__ import annotations

import json
import math
import os
import re
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
import pytest

from openclaw_dask.bench.load import BUSY_CORES, TOP
from openclaw_dask.bench.machine import cpu_model
from openclaw_dask.bench.run import WorkersDiedError, again_if_a_worker_died
from openclaw_dask.bench.suites.stencil import STATE_BYTES_PER_UPDATE
from openclaw_dask.config import detect_hardware
from openclaw_dask.runtime.cluster import start_cluster
from tests.integration.conftest import isolated_env
from tests.integration.dies_once import DIES_ONCE_SETS, MARKER_ENV, dask_log_lines
from tests.integration.procs import check_busiest_named, cpu_seconds
from tests.integration.test_workflow_run import EXE, ctrl_c_after, foreground
from tests.unit.test_cli import invoke, run_cli

#: per suite, the ratios the issue names
RATIOS = {
    "matmul": {"dask_vs_blas", "speedup_vs_1thread"},
    "stencil": {
        "speedup_vs_reference_1core",
        "parallel_efficiency",
        "efficiency_vs_independent_copies",
        "fraction_of_copy_bandwidth",
        "batch_K4_vs_K1",
        "batch_K16_vs_K1",
    },
    "reduce": {"deterministic_cost"},
    "zarr": {f"compression_{k}_zstd{lv}" for k in ("smooth", "random") for lv in (1, 3, 9)},
    "overhead": {
        "submit_vs_plain_dask",
        "submit_vs_plain_dask_same_report",
        "submit_no_report_vs_plain_dask",
    },
    "graph": {"scheduler_memory_growth", "step_time_long_vs_short"},
}


#: what a benchmark says of `--set gpu.devices=all` on a machine without a GPU
NO_GPU = "gpu.devices is set but no GPU was found: using CPU workers"


def median(suite: dict[str, Any], name: str) -> float:
    return suite["timings"][name]["median_s"]


def samples(suite: dict[str, Any], name: str) -> list[float]:
    return suite["timings"][name]["samples_s"]


@pytest.fixture(scope="module")
def quick_report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("bench")
    env = isolated_env(out)
    before = _outside_now()  # the machine as this test sees it: the benchmark is its child
    proc = run_cli(
        "benchmark",
        "--quick",
        "--json",
        str(out / "out.json"),
        "--plot",
        str(out / "out.png"),
        "--set",
        "cluster.dashboard_address=127.0.0.1:0",
        env=env,
        timeout=600,  # about 40 s alone; a loaded CI machine may take several times that
    )
    assert proc.returncode == 0, proc.stderr
    assert (out / "out.png").stat().st_size > 1000
    report = json.loads((out / "out.json").read_text())
    report["_stdout"], report["_stderr"] = proc.stdout, proc.stderr
    after = _outside_now()
    busy, ours, wall = (b - a for a, b in zip(before, after, strict=True))
    report["_outside_cores"] = (busy - ours) / wall
    return report


def _outside_now() -> tuple[float, float, float]:
    """The machine's busy CPU seconds, this process's and its waited-for children's (the
    kernel's count, not the package's process tree), and the time: what the rest of the
    machine took over a run, measured apart from ``bench/load.py``."""
    cpu = psutil.cpu_times()
    idle = cpu.idle + getattr(cpu, "iowait", 0.0) + getattr(cpu, "steal", 0.0)
    total = sum(getattr(cpu, f) for f in cpu._fields if f not in ("guest", "guest_nice"))
    mine = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    return total - idle, sum(r.ru_utime + r.ru_stime for r in mine), time.monotonic()


def test_quick_json_has_every_suite_and_named_ratio(quick_report: dict[str, Any]) -> None:
    assert set(quick_report["suites"]) == set(RATIOS)
    assert quick_report["quick"] is True
    assert quick_report["machine"]["usable_cores"] >= 1
    assert quick_report["machine"]["cpu"] == cpu_model()  # the model, not just "x86_64"
    assert quick_report["versions"]["dask"]
    assert len(quick_report["config_hash"]) == 16
    for name, wanted in RATIOS.items():
        ratios = quick_report["suites"][name]["ratios"]
        assert wanted <= set(ratios), (name, sorted(ratios))
        for key in wanted:
            value = ratios[key]
            assert isinstance(value, float) and math.isfinite(value), (name, key, value)
            if key != "scheduler_memory_growth":  # a growth may be 0 or slightly negative
                assert value > 0, (name, key, value)
    assert "dask_vs_blas" in quick_report["_stdout"]
    # the other processes' share: the benchmark's own workers, and the submit and reference
    # runs it starts, are its tree, not a background (~2 cores here): what it says is what
    # this test, whose child it is, sees of the rest of the machine over the same run
    load, outside = quick_report["background"], quick_report["_outside_cores"]
    assert load["seconds"] > 1 and load["steal_cores"] >= 0, load
    assert load["other_cores"] < outside + 0.5, (load, outside)
    # and its live workers, in the first seconds' note (said while they run), are its own too
    early = "other processes are using" in " ".join(quick_report["_stderr"].split())
    assert not early or outside >= BUSY_CORES / 2, (quick_report["_stderr"], outside)
    assert ("other processes used" in quick_report["_stdout"]) == (
        load["other_cores"] >= BUSY_CORES
    )


def test_a_benchmark_beside_a_busy_process_says_so_at_once_and_at_the_end(
    tmp_path: Path, stranger: int
) -> None:
    out = tmp_path / "out.json"
    args = ("benchmark", "--quick", "--suite", "reduce", "--json", str(out))
    spun, began = cpu_seconds(stranger), time.monotonic()
    proc = run_cli(*args, "--set", "cluster.dashboard_address=127.0.0.1:0", timeout=600)
    share = (cpu_seconds(stranger) - spun) / (time.monotonic() - began)
    assert proc.returncode == 0, proc.stderr
    load = json.loads(out.read_text())["background"]
    named = check_busiest_named(load["top"], stranger, share, TOP)
    early, said = (" ".join(text.split()) for text in (proc.stderr, proc.stdout))
    # in the cluster's first seconds, before the suite, and with the figures
    assert "note: other processes are using" in early, early
    assert early.index("note: other processes are using") < early.index("suite reduce")
    assert f"note: other processes used {load['other_cores']:.2f} of this machine's" in said
    assert (f"(pid {stranger})" in said) == named, said


def test_json_dash_puts_the_report_alone_on_stdout_and_the_table_on_stderr(
    tmp_path: Path,
) -> None:
    """`--json -` (to pipe into jq) had written a file named "-" in the current folder.

    And `--set gpu.devices=all` on a machine without a GPU measured CPU workers without a word
    (`submit` and `config plan` said it), and the JSON recorded gpu.devices: all. (One run for
    both: each had its own of the reduce suite, ~6 s; its note stays off the JSON's stdout.)"""
    args = ("benchmark", "--quick", "--suite", "reduce", "--json", "-")
    gpus = bool(detect_hardware().gpus)  # a GPU there: gpu.devices applies
    sets = ("--set", "cluster.dashboard_address=127.0.0.1:0")
    sets += () if gpus else ("--set", "gpu.devices=all")
    began = time.time()
    proc = run_cli(*args, *sets, cwd=tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)  # the report alone: nothing else on stdout
    assert began < report["started"] < time.time()  # its date, as run.json's "started"
    assert list(report["suites"]) == ["reduce"]
    # the command to run it again: the JSON had the config and machine but not the options
    assert report["command"] == (
        "openclaw-dask benchmark --quick --suite reduce --json - "
        "--set cluster.dashboard_address=127.0.0.1:0" + ("" if gpus else " --set gpu.devices=all")
    )
    assert report["suites"]["reduce"]["ratios"], report["suites"]["reduce"]
    assert "reduce" in proc.stderr and "json:" not in proc.stderr  # the table, for a reader
    assert list(tmp_path.iterdir()) == []
    if not gpus:
        said = " ".join(proc.stderr.split())
        assert f"note: {NO_GPU}" in said and said.index(NO_GPU) < said.index("suite reduce")
        plan = report["plan"]
        assert plan["backend"] == "local" and plan["unapplied"] == [NO_GPU], plan
        assert plan["layout"]["threads"] >= 1


def test_ratios_are_computed_from_the_measured_times(quick_report: dict[str, Any]) -> None:
    s = quick_report["suites"]
    m = s["matmul"]
    assert m["ratios"]["dask_vs_blas"] == pytest.approx(median(m, "blas") / median(m, "dask"))
    st = s["stencil"]
    k = st["params"]["batch_size"]
    speedup = median(st, "reference_1core") / median(st, f"dask_K{k}")
    assert st["ratios"]["speedup_vs_reference_1core"] == pytest.approx(speedup)
    assert st["ratios"]["parallel_efficiency"] == pytest.approx(speedup / st["params"]["threads"])
    # the independent copies: one whole-globe reference per worker thread, all at once
    copies = st["params"]["threads"] / median(st, "reference_on_every_thread")
    assert st["ratios"]["efficiency_vs_independent_copies"] == pytest.approx(
        (1 / median(st, f"dask_K{k}")) / copies
    )
    # --quick's two 90-row bands compute a 64-row halo cone each: 1 + 65 / 180 cells an owned one
    assert st["ratios"]["halo_work"] == pytest.approx(1 + 65 / 180)
    # climate.ebm would run the 1° grid in one band (band_count): measured beside it
    threads = st["params"]["threads"]
    assert st["params"]["workflow_bands"] == 1
    if threads > 1:
        assert st["ratios"][f"workflow_bands_vs_{threads}_bands"] == pytest.approx(
            median(st, f"dask_K{k}") / median(st, f"dask_K{k}_workflow_bands")
        )
    # the machine's own ceiling is said when one copy per thread runs under the goal
    per_thread = st["ratios"]["independent_copies_vs_reference_1core"] / st["params"]["threads"]
    ceiling = [n for n in st["notes"] if n.startswith("one reference per thread at once")]
    assert len(ceiling) == (st["params"]["threads"] > 1 and per_thread < 0.9), st["notes"]
    # one more run in Dask's task stream: --quick's 64 steps are one batch a band
    profile = st["profile"]
    assert 0 < profile["busy_fraction"] <= 1 and profile["wall_s"] > 0, profile
    assert st["notes"][-1].startswith(f"one more K={k} run in Dask's task stream: threads busy")
    assert st["notes"][-1].endswith("(one batch a band)")
    r = s["reduce"]
    cost = median(r, "deterministic_on") / median(r, "deterministic_off")
    assert r["ratios"]["deterministic_cost"] == pytest.approx(cost)
    # the deterministic sum has the same bits on the cluster's bands and on one band more
    assert r["notes"][0].endswith("on 2 and 3 bands: True"), r["notes"]
    # the graph suite's 4° bands are shorter than the default batch: it says what it measured
    g = s["graph"]
    graph_k = g["params"]["batch_size"]
    assert graph_k < 64 and f"bands: measured at K={graph_k}" in g["notes"][-1], g["notes"]
    # its long run is ten windows or more, whatever the default sync_interval
    assert g["params"]["steps_long"] >= 10 * g["params"]["window"], g["params"]
    o = s["overhead"]
    for name, engine, plain in (
        ("submit_vs_plain_dask", "submit", "plain_dask"),
        ("submit_vs_plain_dask_same_report", "submit", "plain_dask_report"),
        ("submit_no_report_vs_plain_dask", "submit_no_report", "plain_dask"),
    ):
        assert o["ratios"][name] == pytest.approx(median(o, engine) / median(o, plain)), name
    # each round's ratio alone, from the same round's two timings (one round when quick)
    rounds = o["ratio_rounds"]["submit_no_report_vs_plain_dask"]
    pairs = zip(samples(o, "submit_no_report"), samples(o, "plain_dask"), strict=True)
    assert rounds == pytest.approx([engine / plain for engine, plain in pairs])
    pairs = zip(samples(st, "reference_1core"), samples(st, f"dask_K{k}"), strict=True)
    threads = st["params"]["threads"]
    assert st["ratio_rounds"]["parallel_efficiency"] == pytest.approx(
        [ref / dask / threads for ref, dask in pairs]
    )
    assert set(m["ratio_rounds"]) == {"dask_vs_blas"} and set(r["ratio_rounds"]) == {
        "deterministic_cost"
    }
    cost = o["throughput"]["performance_report_cost"]["value"]
    assert cost == pytest.approx(median(o, "plain_dask_report") - median(o, "plain_dask"))
    g = s["graph"]["throughput"]
    growth = g["scheduler_rss_long"]["value"] / g["scheduler_rss_short"]["value"] - 1
    assert s["graph"]["ratios"]["scheduler_memory_growth"] == pytest.approx(growth)
    # every timing is a real measurement: positive and not all repeats identical to the bit
    for suite in s.values():
        for timing in suite["timings"].values():
            assert all(t > 0 for t in timing["samples_s"])
    medians = [t["median_s"] for suite in s.values() for t in suite["timings"].values()]
    assert len(set(medians)) == len(medians)


def test_throughputs_are_the_work_over_the_median_time(quick_report: dict[str, Any]) -> None:
    """The figures beside the ratios: GFLOP/s of 2 n³ flops, bytes/s of the reduced field,
    MB/s (10⁶ B) of the written and read array, stored size against raw, and a spread of the
    repeats' range over their median. Only the ratios had been checked: a matmul counted at n³
    flops, a field at 4 bytes a value or an inverted compression ratio went unseen."""
    s = quick_report["suites"]
    m = s["matmul"]
    flops = 2.0 * m["params"]["n"] ** 3
    for name in ("dask", "blas", "blas_1thread"):
        assert m["throughput"][name]["unit"] == "GFLOP/s"
        assert m["throughput"][name]["value"] == pytest.approx(flops / median(m, name) / 1e9)
    r = s["reduce"]
    rows, cols = r["params"]["shape"]
    for name in ("deterministic_on", "deterministic_off"):
        assert r["throughput"][name] == {
            "value": pytest.approx(rows * cols * 8 / median(r, name)),
            "unit": "B/s",
        }
    z = s["zarr"]
    rows, cols = z["params"]["shape"]
    for name, figure in z["throughput"].items():
        assert figure["value"] == pytest.approx(rows * cols * 8 / median(z, name) / 1e6), name
        assert figure["unit"] == "MB/s"
    # raw over stored: both fields are stored in less than their raw size, a smooth one in
    # less than noise (1.5x and 1.1x at --quick's size)
    for level in (1, 3, 9):
        smooth, noise = (z["ratios"][f"compression_{k}_zstd{level}"] for k in ("smooth", "random"))
        assert smooth > noise > 1.0, z["ratios"]
    st = s["stencil"]
    updates = math.prod(st["params"]["grid"]) * st["params"]["steps"]
    for name in st["timings"]:
        if name == "reference_on_every_thread":  # one run per thread: the work of all of them
            copies = st["params"]["threads"] * updates
            assert st["throughput"][name]["value"] == pytest.approx(copies / median(st, name))
            continue
        assert st["throughput"][name]["value"] == pytest.approx(updates / median(st, name)), name
        assert st["throughput"][name]["unit"] == "cell-updates/s"
    # K steps per halo exchange against one: how many times faster the batched run went
    for name, value in st["ratios"].items():
        if name.startswith("batch_K"):
            k = name.removeprefix("batch_K").removesuffix("_vs_K1")
            assert value == pytest.approx(median(st, "dask_K1") / median(st, f"dask_K{k}")), name
    state = st["throughput"]["state_bytes"]["value"]
    k = st["params"]["batch_size"]
    assert state == pytest.approx(updates / median(st, f"dask_K{k}") * STATE_BYTES_PER_UPDATE)
    bandwidth = st["throughput"]["copy_bandwidth"]["value"]
    assert st["ratios"]["fraction_of_copy_bandwidth"] == pytest.approx(state / bandwidth)
    # the probe reads once a round, beside the runs: --quick's one round is the headline's
    assert st["ratio_rounds"]["fraction_of_copy_bandwidth"] == [pytest.approx(state / bandwidth)]
    assert "copy_probe" not in st["timings"]  # its call's time is not a figure
    o = s["overhead"]
    tasks = o["params"]["tasks"]
    per_task = median(o, f"{tasks}_tasks") / tasks * 1e3
    assert o["throughput"]["per_task_amortised"] == {"value": pytest.approx(per_task), "unit": "ms"}
    assert o["throughput"]["task_round_trip"]["value"] == pytest.approx(
        median(o, "task_round_trip") * 1e3
    )
    # the graph suite's growth of the time per step: the long run's last window over the short
    g = s["graph"]["throughput"]
    growth = g["step_time_long_last_window"]["value"] / g["step_time_short"]["value"]
    assert s["graph"]["ratios"]["step_time_long_vs_short"] == pytest.approx(growth)
    for suite in s.values():
        for timing in suite["timings"].values():
            spread = (timing["max_s"] - timing["min_s"]) / timing["median_s"]
            assert timing["spread"] == pytest.approx(spread)


def test_ctrl_c_shows_and_keeps_the_suites_that_finished(tmp_path: Path) -> None:
    command = [str(EXE), "benchmark", "--quick", "--json", "b.json"]
    proc = foreground(command, env=isolated_env(tmp_path), cwd=tmp_path)
    # once matmul has finished and stencil started
    stdout, stderr = ctrl_c_after(proc, lambda line: line.startswith("suite stencil"))
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr and "Exception ignored" not in stderr
    assert "not run (Ctrl-C): stencil, reduce, zarr, overhead, graph" in stderr
    assert "dask_vs_blas" in stdout  # the table of what finished
    report = json.loads((tmp_path / "b.json").read_text())
    assert report["interrupted"] and list(report["suites"]) == ["matmul"]
    assert report["not_run"] == ["stencil", "reduce", "zarr", "overhead", "graph"]


@pytest.mark.parametrize("debug", [False, True], ids=["quiet", "OPENCLAW_DEBUG"])
def test_a_worker_that_dies_leaves_the_terminal_to_the_benchmark(
    tmp_path: Path, debug: bool
) -> None:
    """A worker killed mid-suite (restarted by its nanny, the suite goes on) put Dask's own log
    lines (the worker's, the nanny's, the scheduler's) between the progress lines, as it did in
    ``submit``; ``OPENCLAW_DEBUG=1`` keeps them."""
    env = isolated_env(tmp_path) | {MARKER_ENV: str(tmp_path / "died")}
    if debug:
        env["OPENCLAW_DEBUG"] = "1"
    args = ["--quick", "--suite", "matmul", "--set", "cluster.dashboard_address=127.0.0.1:0"]
    proc = run_cli("benchmark", *args, *DIES_ONCE_SETS, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "died").exists()  # a worker did die
    assert "dask_vs_blas" in proc.stdout
    assert "  matmul: 1 worker(s) died during this suite (tcp://" in proc.stdout  # said by us
    if debug:
        assert "a worker's own warning, then exit" in proc.stderr
        assert any("Restarting worker" in line for line in dask_log_lines(proc.stderr))
    else:
        # (a note on other processes' load is the benchmark's own: it came when the suite ran
        # beside other work, and failed this test then)
        said = [line for line in proc.stderr.splitlines() if not line.startswith("note: other")]
        assert said == ["suite matmul ..."], proc.stderr


def test_a_worker_death_that_fails_the_stencil_suite_runs_it_again(tmp_path: Path) -> None:
    """The stencil's bands live on their home workers, which Dask cannot recompute from: a
    death failed the suite with "FuturesCancelledError ... already forgotten".

    And a batch deeper than the bands is measured at their height: ``tune`` sweeps K=128; the
    quick grid's bands are 90 rows (a halo comes from the next band only), and the suite failed
    on it with the stepper's ValueError. (One stencil run for both: each had its own, ~14 s;
    the rerun after the death measures the same K.)"""
    env = isolated_env(tmp_path) | {MARKER_ENV: str(tmp_path / "died")}
    args = ["--quick", "--suite", "stencil", "--json", "b.json"]
    args += ["--set", "distributed.batch_size=128"]
    args += ["--set", "cluster.dashboard_address=127.0.0.1:0", *DIES_ONCE_SETS]
    proc = run_cli("benchmark", *args, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "died").exists()
    stencil = json.loads((tmp_path / "b.json").read_text())["suites"]["stencil"]
    notes = stencil["notes"]
    # the others are the batch's, the task-stream profile's and, on a machine whose copies of
    # the kernel run under the goal, the ceiling's
    [note] = [n for n in notes if "died" in n]
    assert re.fullmatch(
        r"1 worker\(s\) died during this suite's first run \(tcp://[0-9.:]+\), which failed: "
        "these figures are its second",
        note,
    ), note
    assert f"  stencil: {note}" in proc.stdout
    # the batch: K=128 measured at the bands' 90 rows
    assert stencil["params"]["batch_size"] == 90
    assert stencil["ratios"]["batch_K90_vs_K1"] > 0
    batch = "distributed.batch_size=128 is deeper than this grid's 90-row bands: measured at K=90"
    assert stencil["notes"][0] == batch and batch in proc.stdout
    # climate.ebm runs the config's K=128, not the cut one: the workflow's layout is timed
    # with it (it had been K=90, which on a many-core grid can mean more, shorter bands)
    assert stencil["params"]["workflow_bands"] == 1
    if stencil["params"]["threads"] > 1:
        assert "dask_K128_workflow_bands" in stencil["timings"], list(stencil["timings"])


def _exit_the_worker() -> None:
    os._exit(1)  # a real death, as the kernel's OOM killer would cause


def test_work_whose_worker_dies_each_time_is_said_in_words_after_two_tries() -> None:
    """A death that fails the work each time (out of memory each time, say) ends in one
    sentence that names the workers, not in Dask's "KilledWorker" or "already forgotten"."""
    tries: list[int] = []

    def work() -> None:
        tries.append(1)
        client.submit(_exit_the_worker, pure=False).result()

    overrides = ["cluster.dashboard_address=127.0.0.1:0", "parallel.processes=1"]
    overrides += ["dask.distributed.scheduler.allowed-failures=0"]  # no retry of the task
    with start_cluster(overrides=overrides) as client:
        with pytest.raises(WorkersDiedError) as caught:
            again_if_a_worker_died(client, work)
        assert client.submit(sum, [1, 2]).result() == 3  # the cluster itself goes on
    assert len(tries) == 2
    message = str(caught.value)
    assert re.match(r"worker\(s\) died under it twice \(tcp://\S+, then tcp://\S+\): ", message)
    assert "out of memory (memory.per_thread_pool_size, memory.global_pool)" in message


def test_no_counted_round_trip_is_a_worker_s_first_task() -> None:
    """The first task a worker runs imports the module of its function; the warm-up round ran
    on one of the 2 workers and the first counted round trip on the other: ~850 ms among
    8-24 ms ones, ``task_round_trip 16.8 ms ±2623%`` (audit). Here the import takes 1.5 s."""
    from openclaw_dask.bench.suites.overhead import task_round_trip
    from tests.integration.imports_slowly import DELAY, noop

    overrides = ["cluster.dashboard_address=127.0.0.1:0", "parallel.processes=2"]
    with start_cluster(overrides=overrides) as client:
        assert len(client.nthreads()) == 2
        timing = task_round_trip(client, repeats=6, task=noop)
        ran_on = client.run(lambda: "tests.integration.imports_slowly" in sys.modules)
    assert all(ran_on.values()), ran_on  # (both workers took part)
    # a warm round trip is ~10 ms here, a first call on a worker over DELAY
    assert max(timing.samples) < DELAY / 2, timing.samples


def test_stress_applies_overrides_given_with_a_loaded_config() -> None:
    """They had been dropped without a word: the run measured the config as loaded."""
    from openclaw_dask.bench.stress import stress_test
    from openclaw_dask.config import load_config

    sets = ["parallel.processes=1", "cluster.dashboard_address=127.0.0.1:0"]
    result = stress_test(load_config(use_search_path=False), overrides=sets, seconds=0.1)
    assert result["config"]["values"]["parallel"]["processes"] == 1
    assert set(result["config"]["set"]) == {"parallel.processes", "cluster.dashboard_address"}
    assert result["rounds"] >= 1 and result["workers_lost"] == []


def _file_size_limit(nbytes: int) -> Callable[[], None]:
    def limit() -> None:  # in the child: its writes past nbytes fail with EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (nbytes, nbytes))

    return limit


def test_a_suite_that_fails_keeps_the_suites_that_finished(tmp_path: Path) -> None:
    """A real failure mid-way: the zarr suite's chunks cannot be written (a file size limit,
    inherited by the workers; Python ignores SIGXFSZ, so a write fails with EFBIG). The matmul
    figures used to be lost with a one-line error; the JSON file kept an earlier run's."""
    out = tmp_path / "b.json"
    out.write_text('{"earlier": true}\n')
    command = [sys.executable, "-m", "openclaw_dask", "benchmark", "--quick", "--json", "b.json"]
    command += ["--suite", "matmul,zarr,graph", "--set", "cluster.dashboard_address=127.0.0.1:0"]
    proc = subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env={**os.environ, **isolated_env(tmp_path)},
        preexec_fn=_file_size_limit(64 * 1024),  # a zarr chunk of random floats is larger
    )
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "error: suite zarr failed: OSError: [Errno 27] File too large; the suites that " in (
        proc.stderr
    )
    assert "not run: graph" in proc.stderr
    assert "dask_vs_blas" in proc.stdout  # the table of what finished
    report = json.loads(out.read_text())
    assert list(report["suites"]) == ["matmul"]
    assert report["failed"] == {"suite": "zarr", "error": "OSError: [Errno 27] File too large"}
    assert report["not_run"] == ["graph"]
    # what was run: the suites asked for and the values measured, the --set among them
    assert report["suites_requested"] == ["matmul", "zarr", "graph"]
    address = {"value": "127.0.0.1:0", "source": "--set"}
    assert report["config"]["set"] == {"cluster.dashboard_address": address}
    assert "1 run" in proc.stdout and "±0%" not in proc.stdout  # --quick: one run a figure


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--suite", "matmull"], "did you mean 'matmul'"),
        (["--suite", "stencil,bogus"], "unknown suite 'bogus'"),
        # "did you mean 'stencil'?" before
        (["--suite", "matmul stencil"], "separate suites with commas: --suite matmul,stencil"),
        (["--suite", "matmul;zarr"], "separate suites with commas: --suite matmul,zarr"),
        (["--suite", ","], "expected suite names separated by commas"),
        (["--suite", ""], "expected suite names separated by commas"),
        (["--json", "/nonexistent-dir/out.json"], "does not exist"),
        (["--plot", "/proc/out.png"], "is not writable"),
        (["--json", "."], "is a folder"),
        # Path drops a trailing /: the report had gone to the file b.json
        (["--json", "b.json/"], "cannot write b.json/: a name that ends in / is a folder's"),
        # a file named "-" had been written
        (["--plot", "-"], "--plot: expected a file name: --plot does not write to standard"),
        # OSError "File name too long", exit 1 (after the whole run, had the check passed)
        (["--json", "a" * 300 + ".json"], ".json: file name too long"),
        (["--stress", "0s"], "positive duration"),
        (["--stress", "soon"], "positive duration"),
        (["--stress", "1e400s"], "positive duration"),  # an OverflowError, exit 1, before
        # what shapes the suites is not taken silently by a stress run (--quick: every case)
        (["--stress", "4s", "--suite", "stencil"], "--stress: --suite, --quick shape the "),
        (["--stress", "4s"], "suites, which --stress runs instead of"),
    ],
)
def test_bad_input_is_refused_before_anything_starts(
    args: list[str], expected: str, tmp_path: Path
) -> None:
    # in this process (the cwd is tmp_path): an interpreter's start and imports for each case
    # cost more than the check; the commands that run do start one (run_cli)
    result = invoke("benchmark", "--quick", *args)
    assert result.exit_code == 2, result.output
    assert expected in result.stderr
    assert "Traceback" not in result.stderr  # (an exception would also fail the test here)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--json", "my.config"], "--json: my.config is also the --config file; benchmark would"),
        (["--plot", "my.config"], "--plot: my.config is also the --config file; benchmark would"),
        (["--json", "b.png", "--plot", "b.png"], "--plot: b.png is also the --json file; bench"),
        (["--plot", "b.txt"], "--plot: cannot write b.txt: a plot is an image: expected a file"),
    ],
)
def test_an_output_that_is_an_input_or_not_an_image_is_refused_before_anything_starts(
    args: list[str], expected: str, tmp_path: Path
) -> None:
    """The config had been replaced by the JSON report (and the report by the plot) once the
    run was done; a plot named ``.txt`` failed after it, with "ValueError: Format 'txt' is not
    supported" and exit 1."""
    config = tmp_path / "my.config"
    config.write_text("parallel:\n  processes: 1  # mine\n")
    result = invoke("benchmark", "--quick", "--config", "my.config", *args)  # (cwd: tmp_path)
    assert result.exit_code == 2, result.output
    assert expected in result.stderr and "Traceback" not in result.stderr
    assert config.read_text() == "parallel:\n  processes: 1  # mine\n"
    assert list(tmp_path.iterdir()) == [config]


def test_a_json_that_is_the_config_found_by_the_search_is_refused(tmp_path: Path) -> None:
    """./openclaw.config is read without --config: it is an input all the same."""
    (tmp_path / "openclaw.config").write_text("parallel:\n  processes: 1\n")
    # in this process, its cwd tmp_path
    result = invoke("benchmark", "--quick", "--json", "openclaw.config", env={"HOME": "/nowhere"})
    assert result.exit_code == 2, result.output
    assert "--json: openclaw.config is also the config file; benchmark would" in result.stderr
    assert (tmp_path / "openclaw.config").read_text() == "parallel:\n  processes: 1\n"


def test_ctrl_c_in_a_stress_run_shows_and_keeps_the_rounds_until_then(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``--stress 10m`` stopped at minute 8 had said "interrupted" and nothing else: no table,
    no --json, the minutes measured lost. (The Ctrl-C lands in the second round's wait, as one
    pressed then would.)"""
    from openclaw_dask.bench import stress

    waits: list[object] = []
    real_wait = stress.wait

    def ctrl_c_in_the_second_round(futures: Any) -> Any:
        waits.append(futures)
        if len(waits) == 3:  # the start's wait, the first round's, then the second round's
            raise KeyboardInterrupt
        return real_wait(futures)

    monkeypatch.setattr(stress, "wait", ctrl_c_in_the_second_round)
    for name, value in isolated_env(tmp_path).items():
        monkeypatch.setenv(name, value)
    out = tmp_path / "stress.json"
    sets = ["--set", "cluster.dashboard_address=127.0.0.1:0"]
    result = invoke("benchmark", "--stress", "10m", "--json", str(out), *sets)
    assert result.exit_code == 130, result.output
    report = json.loads(out.read_text())
    assert report["interrupted"] and report["rounds"] == 1, report
    assert 0 < report["ran_s"] < report["seconds"] == 600
    assert re.search(r"stress test: \d+ s of 600 \(Ctrl-C\), 1 rounds", result.stdout)
    assert "stopped after 1 round(s) (Ctrl-C)\ninterrupted" in result.stderr


def _round_fails(state: Any, *args: Any) -> Any:
    def fail(block: Any) -> Any:
        raise ValueError("this round fails")

    return state.map_blocks(fail, dtype=state.dtype)


def test_a_stress_run_whose_every_round_fails_ends_at_its_duration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It waited for a round that succeeded, for ever: a ``--stress 2s`` whose rounds all
    failed was still running when stopped 25 s later."""
    from openclaw_dask.bench import stress

    monkeypatch.setattr(stress, "advance", _round_fails)
    for name, value in isolated_env(tmp_path).items():
        monkeypatch.setenv(name, value)
    out = tmp_path / "stress.json"
    sets = ["--set", "cluster.dashboard_address=127.0.0.1:0"]
    start = time.monotonic()
    result = invoke("benchmark", "--stress", "2s", "--json", str(out), *sets)
    assert time.monotonic() - start < 30
    assert result.exit_code == 1, result.output
    assert re.fullmatch(
        r"failed: stress test: every round failed \(\d+ failed task\(s\) in \d+ s\); the "
        r"first error: ValueError\('this round fails'\)\n",
        result.stderr,
    ), result.stderr
    assert not out.exists()


def test_stress_reports_failures_memory_drift_and_a_worker_that_died(tmp_path: Path) -> None:
    """A stress run's failed tasks, memory and throughput drift; and a worker that died (at its
    first task, before the rounds: their memory is the restarted worker's), counted instead of
    said in Dask's logs. (One stress run for both: each had its own, ~9 s.)"""
    env = isolated_env(tmp_path) | {MARKER_ENV: str(tmp_path / "died")}
    out = tmp_path / "stress.json"
    args = ["--stress", "4s", "--json", str(out)]
    args += ["--set", "cluster.dashboard_address=127.0.0.1:0", *DIES_ONCE_SETS]
    proc = run_cli("benchmark", *args, env=env, cwd=tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "died").exists()
    assert not dask_log_lines(proc.stderr), proc.stderr
    result = json.loads(out.read_text())
    assert len(result["workers_lost"]) == 1 and result["failed_tasks"] == 0
    assert re.search(r"workers lost \(died, restarted\) +│ 1 ", proc.stdout), proc.stdout
    assert result["failed_tasks"] == 0 and result["errors"] == []
    assert result["rounds"] == len(result["throughput"]) >= 1
    assert all(r > 0 for r in result["throughput"])
    assert len(result["memory"]) >= 1  # one entry per worker
    assert all(m["start"] > 0 and m["end"] > 0 for m in result["memory"].values())
    assert math.isfinite(result["drift"])
    # the last quarter's median rate over the first quarter's: a slowdown is a negative drift
    rates = result["throughput"]
    quarter = max(1, len(rates) // 4)
    drift = statistics.median(rates[-quarter:]) / statistics.median(rates[:quarter]) - 1
    assert result["drift"] == pytest.approx(drift)
    assert "throughput drift" in proc.stdout
    load = result["background"]  # a drift may be another process's doing: the run says
    assert load["seconds"] >= 4 and load["other_cores"] >= 0, load
    assert ("other processes used" in proc.stdout) == (load["other_cores"] >= BUSY_CORES)
