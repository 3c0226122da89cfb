"""``openclaw-dask benchmark``: measure a config on the cluster it plans."""

from __future__ import annotations

import shlex
import time
from pathlib import Path
from typing import Any

import click
from rich.markup import escape

from openclaw_dask.atomicfile import atomic_write_text
from openclaw_dask.cli import args
from openclaw_dask.cli.config_cmd import SET_OPTION, SetCommand
from openclaw_dask.cli.output import clipped, dask_logs_quieted, err, no_space, out
from openclaw_dask.config.errors import ConfigError, Problem
from openclaw_dask.exitcodes import EXIT_FAILED
from openclaw_dask.runtime.terminal import STILL_CLOSING_CLUSTER, interrupts


def _note_running_cluster(measured: str | None = None) -> None:
    """Say so when a ``cluster up`` cluster runs: the measured clusters share the machine.

    Not when it is the one measured (``measured``, the scheduler the config attaches to): it
    had been said to run "beside the clusters measured here".
    """
    from openclaw_dask.runtime.state import read_state_or_warn

    state = read_state_or_warn()  # a damaged file is warned about: it measures its own cluster
    if state and state["address"] != measured:
        err.print(
            f"note: the `cluster up` cluster at {state['address']} (pid {state['pid']}) keeps "
            "running beside the clusters measured here and shares this machine; "
            "`openclaw-dask cluster down` first for figures of this config alone",
            markup=False,
        )


@click.command("benchmark", cls=SetCommand)
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help="Config file.")
@click.option(
    "--suite",
    "suites",
    help="Comma-separated suites: matmul, stencil, reduce, zarr, overhead, graph (default all).",
)
@click.option("--quick", is_flag=True, help="Small sizes, one repeat: every suite in seconds.")
@click.option(
    "--json",
    "json_out",
    help="Write the full report as JSON here (-: stdout, the table on stderr).",
)
@click.option("--plot", "plot_out", help="Write a PNG of the ratios here.")
@click.option(
    "--stress",
    metavar="DURATION",
    help="Instead of the suites: run the climate stencil at full load for DURATION (e.g. 10m).",
)
@SET_OPTION
def benchmark_cmd(
    config_path: str | None,
    suites: str | None,
    quick: bool,
    json_out: str | None,
    plot_out: str | None,
    stress: str | None,
    overrides: tuple[str, ...],
) -> None:
    """Measure the cluster a config plans: each ratio from two timings interleaved in one run."""
    from openclaw_dask.bench.run import (
        BenchmarkInterrupted,
        BenchmarkSuiteError,
        benchmark,
        check_suites,
    )
    from openclaw_dask.config import load_config

    # `--json -` (for jq): the report alone on stdout, what is said for a reader on stderr
    json_path = STDOUT if json_out == "-" else args.output_path(json_out, "--json")
    plot_path = args.output_path(plot_out, "--plot")
    _outputs_apart(json_path, plot_path, config_path)
    config = load_config(config_path, list(overrides))
    _note_running_cluster(config["cluster.scheduler_address"])
    if stress is not None:  # "" is a bad duration, not "no --stress"
        from openclaw_dask.bench.stress import StressError, stress_table, stress_test

        seconds = args.duration(stress, "--stress")
        # they shape the suites, which a stress run replaces: accepted, they changed nothing
        ignored = [
            option
            for option, given in (("--suite", suites), ("--quick", quick), ("--plot", plot_out))
            if given not in (None, False)
        ]
        if ignored:
            message = (
                f"{', '.join(ignored)} shape{'s' if len(ignored) == 1 else ''} the benchmark "
                "suites, which --stress runs instead "
                f"of (it runs the climate stencil at full load): drop {', '.join(ignored)}"
            )
            raise ConfigError([Problem(message, origin="--stress")])
        try:
            with interrupts(STILL_CLOSING_CLUSTER), dask_logs_quieted():
                result = stress_test(config, seconds=seconds)
        except StressError as exc:  # what the tasks said, in one line
            what, _ = clipped(str(exc), chars=600, lines=6)
            err.print(f"[red]failed:[/] stress test: {escape(what)}", highlight=False)
            raise SystemExit(EXIT_FAILED) from None
        said = _said(json_path)
        said.print(stress_table(result))
        _busy_note(result, said)
        _write_json(result, json_path, said)
        if result["interrupted"]:  # what was measured is above (and written): exit 130
            err.print(f"stopped after {result['rounds']} round(s) (Ctrl-C)", markup=False)
            raise KeyboardInterrupt
        return
    names = check_suites(suite_names(suites))
    try:
        # a Ctrl-C is never lost in a finaliser; the report says what happened, not Dask's logs
        with interrupts(STILL_CLOSING_CLUSTER), dask_logs_quieted():
            result = benchmark(
                config,
                suites=names,
                quick=quick,
                on_suite=lambda name: err.print(f"[cyan]suite[/] {name} ...", markup=True),
                on_note=lambda note: err.print(f"[yellow]note[/]: {escape(note)}"),
            )
    except BenchmarkInterrupted as exc:  # the suites that finished are shown and kept
        _show(exc.report, json_path, plot_path)
        err.print(f"not run (Ctrl-C): {', '.join(exc.report['not_run'])}", markup=False)
        raise
    except BenchmarkSuiteError as exc:
        _failed(exc, json_path, plot_path)
    _show(result, json_path, plot_path)


def _config_input(config_path: str | None) -> dict[str, Path | None]:
    """The config file a command reads, by the option that named it (``config`` for one the
    search order found: ``./openclaw.config``, ``$OPENCLAW_CONFIG``)."""
    from openclaw_dask.config.loader import find_config_file

    return {"--config" if config_path else "config": find_config_file(config_path)}


def _outputs_apart(json_path: Path | None, plot_path: Path | None, config: str | None) -> None:
    """Refuse a ``--json`` or ``--plot`` that is the config read, or the other one, and a
    ``--plot`` whose name is not that of an image: each had been found out only after the
    whole run, the config replaced by the report (or the report by the plot) or the plot
    refused with a ValueError and exit 1."""
    from openclaw_dask.bench.report import plot_format

    instead = "benchmark would replace it with its {}: write it to another file"
    if json_path is STDOUT:
        json_path = None
    if json_path:
        args.not_an_input(json_path, "--json", _config_input(config), instead.format("report"))
    if plot_path:
        args.not_an_input(plot_path, "--plot", _config_input(config), instead.format("plot"))
        if json_path and plot_path.resolve() == json_path.resolve():  # (neither there yet)
            message = f"{plot_path} is also the --json file; {instead.format('plot')}"
            raise ConfigError([Problem(message, origin="--plot")])
        try:
            plot_format(plot_path)
        except ValueError as exc:
            message = f"cannot write {plot_path}: {exc}"
            raise ConfigError([Problem(message, origin="--plot")]) from None


def suite_names(value: str | None) -> list[str] | None:
    """The names in ``--suite``'s comma-separated ``value`` (``None``: not given, every suite).

    Given but naming none (``--suite ,``, ``--suite ""``, an unset shell variable) is bad
    input: it used to run every suite, minutes of full load the user did not ask for.
    """
    if value is None:
        return None
    names = [s.strip() for s in value.split(",") if s.strip()]
    if not names:
        from openclaw_dask.bench.suites import NAMES

        message = f"expected suite names separated by commas ({', '.join(NAMES)}), got {value!r}"
        raise ConfigError([Problem(message, origin="--suite")])
    return names


def _failed(exc: Any, json_path: Path | None, plot_path: Path | None) -> None:
    """A suite raised (a ``BenchmarkSuiteError``): show and keep what finished, one line, exit 1.

    An existing ``--json`` file is replaced only when a suite finished: a report of nothing
    measured is not worth an earlier run's figures.
    """
    if exc.report["suites"]:
        _show(exc.report, json_path, plot_path)
    else:
        json_path = None
    # a full disk inside a task comes back without its file name: say which folder filled
    full = no_space(exc.error, exc.workdir)
    if full:
        what = f"{full}: the suites' scratch folder (TMPDIR) is {exc.workdir.parent}"
    else:
        what, _ = clipped(f"{type(exc.error).__name__}: {exc.error}", chars=600, lines=6)
    kept = f"; the suites that finished are above and in {json_path}" if json_path else ""
    if json_path is STDOUT:
        kept = "; the suites that finished are above and on stdout"
    # escaped: "[Errno 28]" in a message is rich markup otherwise, and vanishes
    err.print(f"[red]error:[/] suite {exc.suite} failed: {escape(what + kept)}", highlight=False)
    if exc.report["not_run"]:
        err.print(f"not run: {', '.join(exc.report['not_run'])}", markup=False)
    raise SystemExit(EXIT_FAILED)


# ``--json -``: the report goes to standard output, not to a file named "-"
STDOUT = Path("/dev/stdout")


def _said(json_path: Path | None) -> Any:
    """Where the table and notes go: stderr when the report itself is on stdout."""
    return err if json_path is STDOUT else out


def _write_json(result: dict[str, Any], json_path: Path | None, said: Any) -> None:
    """Write the report's JSON to ``json_path`` (whole or not at all), or print it on stdout."""
    from openclaw_dask.bench import report
    from openclaw_dask.workflows import strictjson

    result["command"] = args.command_line()  # what to type to measure it again
    if json_path is STDOUT:
        click.echo(strictjson.dumps(result))
    elif json_path:
        report.write_json(result, json_path)
        said.print(f"json: {json_path}", markup=False)


def _busy_note(result: dict[str, Any], said: Any) -> None:
    """The note on other processes busy while a benchmark ``result`` was measured, if any."""
    from openclaw_dask.bench.load import load_note

    busy = load_note(result.get("background"), result["machine"]["usable_cores"])
    if busy:
        said.print(f"[yellow]note[/]: {escape(busy)}")


def _show(result: dict[str, Any], json_path: Path | None, plot_path: Path | None) -> None:
    """Print the table and notes of a benchmark ``result``; write its JSON and plot if asked."""
    from openclaw_dask.bench import report

    said = _said(json_path)
    said.print(report.table(result))
    for name, suite in result["suites"].items():
        for note in suite["notes"]:
            said.print(f"  {name}: {note}", markup=False)
    _busy_note(result, said)
    _write_json(result, json_path, said)
    if plot_path:
        report.plot(result, plot_path)
        said.print(f"plot: {plot_path}", markup=False)


@click.command("tune", cls=SetCommand)
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help="Config file.")
@click.option(
    "--workload",
    default="climate",
    show_default=True,
    help="climate, stencil, matmul, or the path of a workflow YAML.",
)
@click.option(
    "--budget",
    default="10m",
    show_default=True,
    help="Wall time of the whole command, e.g. 5m (20s at least).",
)
@click.option("--out", "out_path", default="tuned.config", show_default=True, help="Tuned config.")
@SET_OPTION
def tune_cmd(
    config_path: str | None,
    workload: str,
    budget: str,
    out_path: str,
    overrides: tuple[str, ...],
) -> None:
    """Measure candidate configs for a workload and write the fastest as a commented config.

    The whole command keeps within --budget: its start and its reports count too.
    """
    from openclaw_dask.bench.tune import (
        MIN_BUDGET_S,
        TuneInterrupted,
        check_starts_clusters,
        not_compared,
        pairs_disagree,
        report_notes,
        tune,
        tuned_config_text,
    )
    from openclaw_dask.bench.tune_pairs import failed_note, speedup_text, too_few_pairs
    from openclaw_dask.bench.tune_report import report_paths, write_all
    from openclaw_dask.bench.workloads import workload as check_workload
    from openclaw_dask.config import load_config
    from openclaw_dask.workflows.run import StepFailedError

    seconds = args.duration(budget, "--budget")
    if seconds < MIN_BUDGET_S:  # the baseline alone would overrun it: said before it starts
        message = (
            f"{budget} is too short for a tune: the baseline alone (a cluster's start, a "
            f"warm-up, 3 timed runs) and the reports take ~{MIN_BUDGET_S:.0f} s on a 2-core "
            f"machine; give {MIN_BUDGET_S:.0f}s or more"
        )
        raise ConfigError([Problem(message, origin="--budget")])
    target = args.output_path(out_path, "--out")
    assert target is not None  # out_path has a default
    # --workload run.yaml --out run.yaml replaced the workflow with a config once the tuning
    # was done; --config my.config --out my.config the baseline with a rewrite that keeps its
    # values but not its comments
    args.not_an_input(
        target,
        "--out",
        {"--workload": workload, **_config_input(config_path)},
        "tune would replace it with the tuned config: write it to another file (then compare, "
        "or copy it over)",
    )
    for kind in ("report", "interrupted"):
        for path in report_paths(target, kind).values():
            args.output_path(str(path), "--out")
    check_workload(workload)
    config = load_config(config_path, list(overrides))
    check_starts_clusters(config)  # (tune() checks too; said here before the note below)
    _note_running_cluster()
    try:
        # a Ctrl-C is never lost in a finaliser; the trials say what happened, not Dask's logs
        with interrupts(STILL_CLOSING_CLUSTER), dask_logs_quieted():
            report = tune(
                config,
                workload_name=workload,
                budget=seconds,
                log=lambda line: err.print(line, markup=False),
                # the seconds since the command started (Python, imports, the config) and
                # those its reports will take
                reserve=_since_start() + REPORTS_S,
            )
    except StepFailedError as exc:  # the baseline's: the user's op, not a defect of ours
        err.print(
            f"[red]failed:[/] tune's baseline run of {escape(workload)}: {escape(str(exc))}",
            highlight=False,
        )
        command = f"openclaw-dask submit {shlex.quote(workload)}"
        err.print(
            f"a workflow must run before it is tuned: `{command}` runs it alone and keeps the "
            "step's traceback in its run.json",
            markup=False,
        )
        raise SystemExit(EXIT_FAILED) from None
    except TuneInterrupted as exc:
        # what was measured stays: in files of its own, beside any earlier tuned config
        exc.report["command"] = args.command_line()
        exc.report["wall_s"] = _since_start()
        saved = write_all(exc.report, target, "interrupted")
        measured = sum(1 for t in exc.report["trials"] if t["rate_samples"] and not t["skipped"])
        err.print(
            f"{measured} trial(s) measured before Ctrl-C: {saved['md']} "
            f"(and .json, .png); {target} not written",
            markup=False,
        )
        raise
    report["command"] = args.command_line()  # what to type to measure it again
    # "used" is of the whole command, as --budget is: tune()'s own time had been said ("budget
    # 30 s, used 11 s" of a command that took 14.5 s); only the reports' writing is left out
    report["wall_s"] = _since_start()
    # whole or not at all: a full disk had cut the tuned config of an earlier run
    atomic_write_text(target, tuned_config_text(config, report))
    load_config(target)  # what we write must load: a defect here is ours, not the user's
    paths = write_all(report, target)
    if report["recommended"]:
        changed = ", ".join(f"{k}={v}" for k, v in report["recommended"].items())
        comp = report["comparison"]
        speedup = speedup_text(comp["speedup"])
        out.print(f"[green]tuned[/]: {changed} ({speedup} over {comp['pairs']} pairs)")
    elif report["comparison"] and report["comparison"].get("failed"):
        out.print(f"[yellow]no change[/]: {escape(failed_note(report['comparison']) or '')}")
    elif report["comparison"] and too_few_pairs(report["comparison"]):
        out.print("[yellow]no change[/]: too few final pairs without a worker's death")
    elif report["comparison"] and pairs_disagree(report):
        out.print(f"[yellow]no change[/]: {escape(pairs_disagree(report) or '')}")
    elif report["comparison"]:
        out.print("[yellow]no change[/]: nothing measured faster than the baseline")
    else:
        out.print(f"[yellow]no change[/]: {not_compared(report)}")
    for note in report_notes(report):
        out.print(f"[yellow]note[/]: {escape(note)}")
    out.print(f"config: {target}", markup=False)
    for kind, path in paths.items():
        out.print(f"report ({kind}): {path}", markup=False)


#: seconds kept for what tune writes once it has measured: the config (loaded to check it),
#: the report's Markdown, JSON and PNG (matplotlib's import: ~1 s on the 2-core VM), the exit
REPORTS_S = 3.0


def _since_start() -> float:
    """Seconds since this process started (the interpreter's start and imports count)."""
    import psutil

    return max(0.0, time.time() - psutil.Process().create_time())
