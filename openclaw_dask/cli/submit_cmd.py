"""``openclaw-dask submit WORKFLOW``: validate, plan, run, record."""

from __future__ import annotations

import math
import shlex
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click
from rich.markup import escape

from openclaw_dask.cli.args import BackendChoice, given_address
from openclaw_dask.cli.config_cmd import SET_OPTION, SetCommand
from openclaw_dask.cli.output import (
    ReaderGone,
    clipped,
    dask_logs_quieted,
    err,
    no_space,
    out,
    run_announcer,
    visible,
)
from openclaw_dask.config.render import yaml_value
from openclaw_dask.exitcodes import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_STDOUT_CLOSED


@click.command("submit", cls=SetCommand)
@click.argument("workflow", type=click.Path(dir_okay=False), required=False)
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False),
    help="openclaw.config (default: the workflow's config:, then the search order).",
)
@click.option(
    "--address",
    callback=given_address,
    help="Attach to this scheduler instead of starting a cluster.",
)
@click.option(
    "--backend", type=BackendChoice(), help="Force a backend (auto: cluster.backend's choice)."
)
@click.option(
    "--run-dir",
    type=click.Path(file_okay=False),
    help="The run's own directory, new or empty (default: runs/WORKFLOW-NAME/RUN-ID here).",
)
@click.option(
    "--resume",
    type=click.Path(exists=False),
    help="Continue the run in this directory (WORKFLOW may then be left out).",
)
@click.option("--dry-run", is_flag=True, help="Validate and print the plan; start nothing.")
@click.option(
    "--no-report",
    is_flag=True,
    help=(
        "Skip Dask's performance-report.html (0.5-1.4 s of rendering; for short runs). "
        "A --resume of such a run skips it too."
    ),
)
@SET_OPTION
def submit_cmd(
    workflow: str | None,
    config_path: str | None,
    address: str | None,
    backend: str | None,
    run_dir: str | None,
    resume: str | None,
    dry_run: bool,
    no_report: bool,
    overrides: tuple[str, ...],
) -> None:
    """Run a workflow on the cluster its config describes (params: --set params.x=...)."""
    from openclaw_dask.runtime.cluster import ClusterLostError
    from openclaw_dask.runtime.mpi_launch import mpi_launcher_reports
    from openclaw_dask.runtime.oom import WorkersOutOfMemoryError
    from openclaw_dask.workflows.mpi_run import MpiRunError
    from openclaw_dask.workflows.recovery import WorkersLostError
    from openclaw_dask.workflows.resume import dropped_note
    from openclaw_dask.workflows.run import error_text
    from openclaw_dask.workflows.runner import StepFailedError, run_workflow

    if resume and Path(resume).name == "run.json" and Path(resume).is_file():
        resume = str(Path(resume).parent)  # the run's record, given for its directory
    if resume and run_dir:
        raise click.UsageError("--resume continues a run in its own directory; drop --run-dir")
    if workflow is None and resume is None:
        raise click.UsageError("Missing argument 'WORKFLOW'.")
    began = time.time()
    try:
        with dask_logs_quieted():  # the run says what happened, in one line
            record = run_workflow(
                workflow,
                config_path,
                list(overrides),
                address=address,
                backend=backend,
                run_dir=run_dir,
                resume=resume,
                dry_run=dry_run,
                progress=sys.stderr.isatty(),
                announce=run_announcer(err),  # the reader gone: stops the run
                report=False if no_report else None,  # None: a resume does as its run did
            )
    except StepFailedError as exc:
        if mpi_launcher_reports():  # rank 1 of a submit's mpirun: that submit says it
            sys.exit(EXIT_FAILED)
        if isinstance(exc.error, ClusterLostError):  # not the step's fault: no traceback
            err.print(f"[red]failed:[/] step {exc.step!r}: {escape(str(exc.error))}", markup=True)
            # lost workers, or an mpi job that ended: --resume starts what it needs itself
            starts = isinstance(exc.error, (WorkersLostError, MpiRunError))
            again = "from it" if starts else "once a cluster runs"
            err.print(
                "completed steps, their outputs and the last checkpoint are kept; "
                f"{resume_command(exc.run_dir)} continues {again}",
                markup=False,
            )
            sys.exit(EXIT_FAILED)
        if isinstance(exc.error, WorkersOutOfMemoryError):  # the budget, not the step's code
            err.print(f"[red]failed:[/] step {exc.step!r}: {escape(str(exc.error))}", markup=True)
            err.print(
                "completed steps, their outputs and the last checkpoint are kept; give each "
                "worker more memory (memory.per_thread_pool_size or memory.global_pool), or "
                f"make the step's chunks smaller, then {resume_command(exc.run_dir)}",
                markup=False,
            )
            sys.exit(EXIT_FAILED)
        full = no_space(exc.error, exc.run_dir)
        if full:  # not the step's fault either
            err.print(f"[red]failed:[/] step {exc.step!r}: {escape(full)}", markup=True)
            err.print(
                "completed steps, their outputs and the last checkpoint are kept; free space "
                f"(or move the run directory), then {resume_command(exc.run_dir)}",
                markup=False,
            )
            sys.exit(EXIT_FAILED)
        # the op's own words, which may be a whole array's repr: bounded here, whole in run.json
        message, cut = clipped(visible(error_text(exc.error)))
        err.print(
            f"[red]failed:[/] step {exc.step!r} (op {exc.op}): {escape(message)}", markup=True
        )
        kept = f"its traceback is in run.json (steps.{exc.step}.traceback)"
        if cut:
            kept = (
                "the whole message and its traceback are in run.json "
                f"(steps.{exc.step}.error, steps.{exc.step}.traceback)"
            )
        if exc.where:  # the line of the user's own module that raised it
            kept = f"raised in {exc.where}; {kept}"
        err.print(
            f"{kept}; completed steps and their outputs are kept; fix the step and "
            f"{resume_command(exc.run_dir)}",
            markup=False,
        )
        sys.exit(EXIT_FAILED)
    except MpiRunError as exc:  # the job ended before any step ran: no step to name
        err.print(f"[red]failed:[/] {escape(str(exc))}", markup=True)
        sys.exit(EXIT_FAILED)
    except ReaderGone:  # run.json says interrupted; nobody is left to read a line about it
        sys.exit(EXIT_STDOUT_CLOSED)
    except KeyboardInterrupt as exc:
        # rank 1 of an mpi launch is stopped by mpirun also when another rank died: the
        # launching submit says which it was
        if not mpi_launcher_reports():
            where = getattr(exc, "run_dir", None)  # set once the run has a directory
            if where is None:
                err.print("[yellow]interrupted[/] before the run began: nothing to resume")
            else:
                err.print(
                    "[yellow]interrupted:[/] run.json says so; continue with "
                    + escape(resume_command(where))
                )
        sys.exit(EXIT_INTERRUPTED)
    if dry_run:
        plan = record["plan"]
        out.print(
            f"workflow {record['workflow']}: steps in order: " + " -> ".join(record["order"]),
            markup=False,
        )
        sources = record["param_sources"]
        params = ", ".join(
            f"{k}={yaml_value(v)}" + ("" if sources.get(k) == "default" else f" ({sources[k]})")
            for k, v in record["params"].items()
        )
        out.print(f"params: {params or 'none'}", markup=False)
        if plan["backend"] == "attach":  # its workers are the running cluster's, not a layout
            out.print(f"cluster: attach to {plan['address']}", markup=False)
        else:
            out.print(
                f"cluster: {plan['backend']} ({plan['cluster_class']}) {plan['layout']}",
                markup=False,
            )
        for note in [*plan["notes"], *plan["unapplied"]]:
            out.print(f"  note: {note}", markup=False)
        if record.get("mpirun"):
            out.print(f"mpirun: {record['mpirun']}", markup=False)
        for step, text in record.get("sizes", {}).items():  # under the plan: what it runs
            first, *more = text.splitlines() or [""]
            out.print(f"size: {step}: {first}", markup=False)
            for line in more:
                out.print(f"  {line}", markup=False)
        for step, what in record.get("resume", {}).items():
            out.print(f"resume: {step}: {what}", markup=False)
        if record.get("dropped_steps"):
            out.print(dropped_note(record["dropped_steps"]), markup=False)
        if record.get("op_modules_changed"):
            edits = ", ".join(record["op_modules_changed"])
            out.print(f"resume: op modules: {edits}", markup=False)
        if record.get("software_changed"):
            changed = ", ".join(record["software_changed"])
            out.print(
                f"resume: the software changed since the last attempt: {changed}", markup=False
            )
        out.print("dry run: nothing started, nothing written")
        return
    if mpi_launcher_reports():  # rank 1 of a submit's mpirun: that submit prints the summary
        return
    run = record["run_dir"]
    # a resume with nothing left to run hands back the record of the attempt that finished it
    name, wall = record["workflow"]["name"], record["wall_seconds"]
    earlier = record.get("finished", began) < began
    earlier_note = " (an earlier attempt: nothing ran now)" if earlier else ""
    attempts, all_wall = record.get("attempts", 1), record.get("wall_seconds_all", wall)
    if not earlier and attempts > 1:  # a resume: the run's whole time too
        earlier_note = f" (this attempt; {all_wall:.1f} s in its {attempts} attempts)"
    out.print(f"[green]completed[/] {name} in {wall:.1f} s{earlier_note}")
    out.print(f"outputs:  {run}", markup=False)
    out.print(f"record:   {run}/run.json", markup=False)
    if record.get("performance_report"):
        out.print(f"report:   {record['performance_report']}", markup=False)
    for line in step_lines(run, record["steps"]):
        out.print(line, markup=False)


def step_lines(run: str, steps: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The summary's lines of what the steps made: plots, folder outputs, numeric metrics.

    Parameters
    ----------
    run
        The run directory, as the summary names it.
    steps
        ``run.json``'s ``steps``.

    Returns
    -------
    list of str
        ``plot:`` for each plot a step names in its ``plots`` metric (the climate op's),
        ``folder:`` for each other folder output with files, and ``STEP.KEY: value`` for each
        number (6 significant digits: ``.2f`` showed a residual of 8e-3 as 0.01, and 1e-5 as
        0.00) or undefined (``none``: ``None``, NaN or infinite, as ``run.json``'s null) metric.
    """
    lines = []
    for name, step in steps.items():
        metrics = step.get("metrics", {})
        plots = metrics.get("plots") or []
        lines += [f"plot:     {run}/plots/{png}" for png in plots]
        folders: dict[str, int] = {}  # a user op's plots/ was not named at all
        for path in step.get("files", {}):
            top, inside, _ = path.partition("/")
            if inside and not top.endswith(".zarr") and not (top == "plots" and plots):
                folders[top] = folders.get(top, 0) + 1
        for folder, count in folders.items():
            lines.append(f"folder:   {run}/{folder}/ ({count} file{'s' * (count != 1)})")
        for key, value in metrics.items():
            if isinstance(value, float) and not math.isfinite(value):
                # run.json has null: the climate op's ice edge of a pole without a cap said
                # "nan", which only the dataset's attributes explained
                lines.append(f"{name}.{key}: none")
            elif isinstance(value, float):
                lines.append(f"{name}.{key}: {value:.6g}")
            elif isinstance(value, int) and not isinstance(value, bool):  # was left out
                lines.append(f"{name}.{key}: {value}")
            elif value is None:  # undefined for this run (run.json has null)
                lines.append(f"{name}.{key}: none")
    return lines


def resume_command(run_dir: str | Path) -> str:
    """The command line that continues the run in ``run_dir`` (its workflow is recorded)."""
    return f"openclaw-dask submit --resume {shlex.quote(str(run_dir))}"
