"""What benchmark and tune reports say about the config they measured, and about one run."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from openclaw_dask.bench.machine import config_facts, values_set, versions
from openclaw_dask.bench.report import plot, plot_format, table, write_json
from openclaw_dask.bench.tune import pairs_disagree, tuned_config_text
from openclaw_dask.bench.tune_pairs import candidate_won, speedup_text, summary
from openclaw_dask.bench.tune_report import markdown
from openclaw_dask.config import load_config


def _tune_report(config: Any) -> dict[str, Any]:
    # what tune() returns when the budget measured no candidate (the parts these texts read)
    return {
        "workload": {"name": "stencil", "unit": "cell-updates", "description": "a stencil"},
        "budget_s": 1.0,
        "wall_s": 9.0,
        "config_file": None,
        "config_hash": config.config_hash(),
        "config": config_facts(config),
        "machine": {"host": "vm", "usable_cores": 2},
        "trials": [],
        "comparison": None,
        "recommended": {},
        "reasons": {},
        "skipped": [],
        "unmeasured": None,
    }


def test_reports_name_the_values_set_beside_the_file() -> None:
    """The reports gave only a hash and "baseline defaults", even for a --set baseline."""
    config = load_config(None, ["distributed.batch_size=32"], use_search_path=False)
    facts = config_facts(config)
    assert facts["hash"] == config.config_hash() and facts["file"] is None
    assert facts["values"]["distributed"]["batch_size"] == 32
    assert facts["set"] == {"distributed.batch_size": {"value": 32, "source": "--set"}}
    report = _tune_report(config)
    assert values_set(report) == [("distributed.batch_size", 32, "--set")]
    header = tuned_config_text(config, report).splitlines()[1]
    assert header.endswith(
        f"baseline defaults with distributed.batch_size=32 (--set) (config hash {facts['hash']})"
    )
    assert "Baseline: defaults with `distributed.batch_size=32` (--set) (config" in markdown(report)
    plain = load_config(None, use_search_path=False)
    assert values_set(_tune_report(plain)) == [] and config_facts(plain)["set"] == {}
    assert "baseline defaults (config hash" in tuned_config_text(plain, _tune_report(plain))


def test_a_figure_of_one_run_shows_no_spread() -> None:
    """--quick times each figure once; the table showed "±0%", a precision never measured."""
    timing = {"median_s": 0.5, "min_s": 0.5, "max_s": 0.5, "spread": 0.0, "samples_s": [0.5]}
    three = {**timing, "min_s": 0.4, "max_s": 0.6, "spread": 0.4, "samples_s": [0.4, 0.5, 0.6]}
    suite = {
        "timings": {"once": timing, "thrice": three},
        "throughput": {
            "once": {"value": 2e9, "unit": "FLOP/s"},
            "thrice": {"value": 2e9, "unit": "FLOP/s"},
        },
        "ratios": {},
        "goals": {},
        "notes": [],
    }
    console = Console(width=200, record=True)
    console.print(table({"config_hash": "0" * 16, "suites": {"matmul": suite}}))
    lines = [line for line in console.export_text().splitlines() if "│" in line]
    rows = {line.split("│")[1].strip(): line for line in lines}
    assert "matmul suite" in rows
    assert "1 run" in rows["once"] and "±0%" not in rows["once"]
    assert "±20%" in rows["thrice"]


def test_an_80_column_terminal_cuts_no_figure_name_value_or_spread() -> None:
    """Beside a suite column, 80 columns cut the longest figure names and the rounds' range
    ("fraction_of_copy_ba…", "0.860-…"): the names a user looks up in the JSON."""
    name = "independent_copies_vs_reference_1core"  # the longest the stencil suite has
    once = {"median_s": 0.5, "min_s": 0.5, "max_s": 0.5, "spread": 0.0, "samples_s": [0.5]}
    suite = {
        "timings": {"reference_on_every_thread": once},
        "throughput": {"reference_on_every_thread": {"value": 917.3e6, "unit": "cell-updates/s"}},
        "ratios": {name: 1.847, "parallel_efficiency": 0.89},
        "ratio_rounds": {"parallel_efficiency": [0.86, 0.927]},
        "goals": {"parallel_efficiency": {"target": 0.9, "kind": "at_least", "met": False}},
        "notes": [],
    }
    console = Console(width=80, record=True)
    console.print(table({"config_hash": "0" * 16, "suites": {"stencil": suite}}))
    text = console.export_text()
    assert "…" not in text and max(map(len, text.splitlines())) <= 80, text
    rows = {line.split("│")[1].strip(): line for line in text.splitlines() if "│" in line}
    assert "1.847" in rows[name], text
    assert "917.3 Mcell/s" in rows["reference_on_every_thread"], text
    assert "0.860-0.927" in rows["parallel_efficiency"], text
    assert ">= 0.9" in rows["parallel_efficiency"] and "missed" in text, text


def test_values_from_the_config_file_are_not_said_twice(tmp_path: Path) -> None:
    """The baseline names its file; only what came from elsewhere is listed beside it."""
    file = tmp_path / "base.config"
    file.write_text("distributed:\n  batch_size: 16\n")
    config = load_config(file, ["storage.level=5"], use_search_path=False)
    report = {**_tune_report(config), "config_file": str(config.file)}
    assert values_set(report) == [("storage.level", 5, "--set")]


def test_the_tune_report_says_which_cluster_of_the_final_pairs_lost_a_worker() -> None:
    """A worker that died in the final pairs was in their figures, unsaid; reports written
    before the comparison recorded its losses have none to say."""
    config = load_config(None, use_search_path=False)
    comparison = {
        "candidate": {"parallel.processes": 1},
        "pairs": 2,
        "rates": {"baseline": [1e6, 1e6], "tuned": [2e6, 2e6]},
        "speedup": 2.0,
        "tuned_wins": 2,
        "workers_lost": {"baseline": [], "tuned": ["tcp://127.0.0.1:4000"]},
    }
    text = markdown({**_tune_report(config), "comparison": comparison})
    assert (
        "1 worker(s) died during these pairs (candidate tcp://127.0.0.1:4000): their figures "
        "include the loss and the restart." in text
    )
    del comparison["workers_lost"]
    assert "died" not in markdown({**_tune_report(config), "comparison": comparison})


def test_final_pairs_a_death_left_too_few_of_recommend_nothing_and_say_why() -> None:
    """A pair a worker died in decides nothing; with fewer than two pairs left the tuned config
    is the baseline, and its header and the report say which cluster lost which worker,
    rather than "no candidate beat the baseline"."""
    config = load_config(None, use_search_path=False)
    died = {"baseline": [], "tuned": ["tcp://127.0.0.1:4000"]}
    comparison = {
        "candidate": {"parallel.processes": 1},
        **summary({"baseline": [1e6], "tuned": [2e6]}),
        "dropped": [
            {"pair": 1, "rates": {"baseline": 1e6, "tuned": 5e5}, "workers_lost": died},
            {"pair": 3, "rates": {"baseline": 2e5, "tuned": 2e6}, "workers_lost": died},
        ],
        "workers_lost": {"baseline": ["tcp://127.0.0.1:5000"], "tuned": died["tuned"] * 2},
    }
    assert not candidate_won(comparison)  # one pair without a death: a coin toss
    report = {**_tune_report(config), "comparison": comparison}
    header = tuned_config_text(config, report).splitlines()[2:]
    assert header == [
        "# measured: fewer than 2 final pairs without a worker's death; "
        "this is the baseline unchanged",
        "# a worker died during final pair 1 (candidate tcp://127.0.0.1:4000): not counted",
        "# a worker died during final pair 3 (candidate tcp://127.0.0.1:4000): not counted",
        "# the decision rests on the 1 pair(s) without a death (it needs 2): no recommendation",
        "# a worker died before the final pairs (baseline tcp://127.0.0.1:5000): its cluster's "
        "workers were back and warmed up before they began, so their figures do not include it",
    ]
    text = markdown(report)
    assert "| 1 (not counted: a worker died) | 1 Mcell/s | 0.5 Mcell/s |" in text
    assert "| 2 | 1 Mcell/s | 2 Mcell/s |" in text
    assert "| 3 (not counted: a worker died) |" in text
    assert "faster in 1 of 1 pairs without a death." in text
    assert "- A worker died during final pair 3 (candidate tcp://127.0.0.1:4000): not counted." in (
        text
    )
    assert "Keep the baseline: too few final pairs without a worker's death." in text


def _report() -> dict[str, Any]:
    # the parts of a benchmark report its plot reads
    suite = {"ratios": {"dask_vs_blas": 0.9}, "goals": {}}
    return {"config_hash": "abc", "suites": {"matmul": suite}}


@pytest.mark.parametrize(("write", "name"), [(write_json, "b.json"), (plot, "b.png")])
def test_a_report_that_meets_a_full_disk_leaves_the_earlier_one_whole(
    write: Any, name: str, tmp_path: Path
) -> None:
    """``benchmark --json b.json`` on a full disk had cut the earlier b.json to its first 4 kB
    and said "no space left on device (80 GB free)": the free space of another disk, and no
    file. (The temporary is /dev/full here: a write there fails as on a full disk.)"""
    target = tmp_path / name
    target.write_text('{"earlier": true}\n')
    tmp = target.with_name(f".{name}.tmp{os.getpid()}")
    tmp.symlink_to("/dev/full")
    with pytest.raises(OSError) as info:
        write(_report(), target)
    assert info.value.errno == errno.ENOSPC and info.value.filename == str(target)
    assert target.read_text() == '{"earlier": true}\n'
    assert not tmp.is_symlink()


def test_a_report_written_to_a_device_or_through_a_link_leaves_them_be(tmp_path: Path) -> None:
    """Written whole (a temporary, then renamed), a report must not replace ``/dev/null`` or
    ``/dev/stdout`` by a file of its own, nor a link by a file: it goes where they lead."""
    write_json(_report(), Path("/dev/null"))
    assert Path("/dev/null").is_char_device()
    folder = tmp_path / "reports"
    folder.mkdir()
    real, link = folder / "real.json", folder / "link.json"
    link.symlink_to(real)
    write_json(_report(), link)
    assert link.is_symlink() and '"config_hash": "abc"' in real.read_text()
    assert sorted(p.name for p in folder.iterdir()) == ["link.json", "real.json"]


@pytest.mark.parametrize(("name", "expected"), [("a.png", "png"), ("a", "png"), ("a.SVG", "svg")])
def test_a_plot_is_of_the_format_its_name_says(name: str, expected: str) -> None:
    assert plot_format(Path(name)) == expected


def test_a_plot_named_as_no_image_is_refused_with_the_formats() -> None:
    with pytest.raises(ValueError, match=r"got \.pgn; did you mean 'png'\?") as info:
        plot_format(Path("ratios.pgn"))
    assert "(avif, eps," in str(info.value) or "png, " in str(info.value)


@pytest.mark.parametrize(
    ("value", "target", "kind", "shown"),
    [
        (0.89996, 0.9, "at_least", "0.89996"),
        (1.05004, 1.05, "at_most", "1.05004"),
        (0.8996, 0.9, "at_least", "0.8996"),
        (0.9004, 0.9, "at_least", "0.900"),  # met: 3 decimals read as the verdict says
        (0.912, 0.9, "at_least", "0.912"),
    ],
)
def test_a_ratio_is_shown_with_the_digits_its_verdict_needs(
    value: float, target: float, kind: str, shown: str
) -> None:
    """A ratio a hair under its goal showed as "0.900 >= 0.9 missed": the figure on screen
    met the goal the same row said it missed."""
    met = value <= target if kind == "at_most" else value >= target
    suite = {
        "timings": {},
        "throughput": {},
        "ratios": {"r": value},
        "goals": {"r": {"target": target, "kind": kind, "met": met}},
        "notes": [],
    }
    console = Console(width=120, record=True)
    console.print(table({"config_hash": "0" * 16, "suites": {"stencil": suite}}))
    lines = [line for line in console.export_text().splitlines() if "│" in line]
    rows = {line.split("│")[1].strip(): line for line in lines}
    cells = [cell.strip() for cell in rows["r"].split("│")]
    assert cells[2] == shown, rows["r"]
    assert cells[4].endswith("met" if met else "missed"), rows["r"]


def _trial(stage: str, changes: dict[str, Any], rate: float) -> dict[str, Any]:
    return {
        "stage": stage,
        "changes": changes,
        "rate_median": rate,
        "rate_samples": [rate] * 3,
        "ctx_switches_per_worker": {},
        "skipped": None,
    }


def test_final_pairs_that_measured_the_challenger_faster_are_not_called_nothing_faster() -> None:
    """No trial beat the baseline, so its best challenger went through the final pairs, which
    measured it 1.105x faster in 4 of 5 (a real tune on the shared 2-core VM): the report
    said "no change measured faster in the final pairs" under that comparison, and the CLI
    and the tuned config "nothing measured faster" / "no candidate beat the baseline"."""
    config = load_config(None, use_search_path=False)
    one = {"parallel.thread_pool_size": 1, "parallel.processes": 1}
    comparison = {
        "candidate": one,
        **summary(
            {
                "baseline": [354e6, 333e6, 320e6, 357e6, 309e6],
                "tuned": [331e6, 368e6, 418e6, 359e6, 384e6],
            }
        ),
        "dropped": [],
        "workers_lost": {"baseline": [], "tuned": []},
    }
    assert candidate_won(comparison)
    report = {
        **_tune_report(config),
        "trials": [_trial("baseline", {}, 441e6), _trial("threads", one, 380e6)],
        "comparison": comparison,
    }
    said = (
        "the final pairs measured parallel.thread_pool_size=1, parallel.processes=1 "
        f"{comparison['speedup']:.3f}x the baseline (faster in 4 of 5), but its trial measured "
        "380 Mcell/s against the baseline's 441 Mcell/s, short of the 2 % gain a trial needs: "
        "the two measurements disagree, so it is not recommended"
    )
    assert pairs_disagree(report).startswith(said)
    md = markdown(report)
    assert f"Keep the baseline: {said}" in md and "no change measured faster" not in md
    text = tuned_config_text(config, report)
    assert f"# measured: {said}" in text and "no candidate beat the baseline" not in text
    # pairs that measured it slower keep their sentence
    slower = {**comparison, **summary({"baseline": [2.0, 2.0, 2.0], "tuned": [1.0, 1.0, 1.0]})}
    report["comparison"] = slower
    assert pairs_disagree(report) is None
    assert "Keep the baseline: no change measured faster in the final pairs." in markdown(report)


def test_a_quick_table_says_it_is_quick_above_its_verdicts() -> None:
    """A --quick table (1° stencil, 64 steps, one repeat) showed "missed" beside every goal
    under the same title as a full run's: nothing said that its sizes were not the goals'."""
    suite = {
        "timings": {},
        "throughput": {},
        "ratios": {"parallel_efficiency": 0.115},
        "goals": {"parallel_efficiency": {"target": 0.9, "kind": "at_least", "met": False}},
        "notes": [],
    }
    texts = {}
    for quick in (True, False):
        console = Console(width=100, record=True)
        report = {"config_hash": "0" * 16, "quick": quick, "suites": {"stencil": suite}}
        console.print(table(report))
        texts[quick] = " ".join(console.export_text().split())
    said = "--quick: small sizes, one repeat; the goals are set for full sizes"
    assert said in texts[True] and "--quick" not in texts[False]


def test_a_command_with_a_newline_stays_a_comment_atop_the_tuned_config(tmp_path: Path) -> None:
    """The tuned config's first line names the command; a newline in one of its arguments
    (`--out $'a\\nb: 1.config'`) made the rest of it YAML, and the config did not load."""
    config = load_config(None, use_search_path=False)
    report = {**_tune_report(config), "command": "openclaw-dask tune --out 'a\nb: 1.config'"}
    file = tmp_path / "tuned.config"
    file.write_text(tuned_config_text(config, report))
    assert load_config(file).config_hash() == config.config_hash()
    assert file.read_text().startswith(
        "# openclaw.config tuned by `openclaw-dask tune --out 'a\n#   b: 1.config'`\n"
    )


def test_a_report_s_versions_name_the_compiler_and_the_blas_its_kernels_ran_on() -> None:
    """The stencil's figures depend on numba and llvmlite (they compile the climate step) and
    matmul's on numpy's BLAS; a report's versions named neither."""
    import importlib.metadata

    import numpy  # noqa: F401  (its BLAS loaded, as in a benchmark)
    from threadpoolctl import threadpool_info

    found = versions()
    assert found["numba"] == importlib.metadata.version("numba")
    assert found["llvmlite"] == importlib.metadata.version("llvmlite")
    blas = next(i for i in threadpool_info() if i["user_api"] == "blas")
    assert f"{blas['internal_api']} {blas['version']}" in found["blas"]
    assert found["dask"] == importlib.metadata.version("dask")  # the run record's, kept


def test_a_speedup_just_over_one_is_not_said_as_one() -> None:
    """A candidate is recommended from a median speedup above 1.0: 1.0004 had been said
    "1.000x" in the CLI line, the tuned config and the report, as if nothing changed."""
    assert [speedup_text(x) for x in (1.0004, 0.9996, 1.105, 1.0)] == [
        "1.0004x",
        "0.9996x",
        "1.105x",
        "1.000x",
    ]
    config = load_config(None, use_search_path=False)
    comparison = {
        "candidate": {"parallel.processes": 1},
        **summary({"baseline": [1.0, 1.0, 1.0], "tuned": [1.0004, 1.0004, 1.0004]}),
        "dropped": [],
        "workers_lost": {"baseline": [], "tuned": []},
    }
    recommended = {"parallel.processes": 1}
    report = {**_tune_report(config), "comparison": comparison, "recommended": recommended}
    assert "# measured: 1.0004x the baseline's throughput" in tuned_config_text(config, report)
    assert "Median speedup 1.0004x;" in markdown(report)
