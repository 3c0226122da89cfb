"""Run a workflow: steps in dependency order on the cluster, outputs to Zarr, a run record.

Every run has a directory ``runs/<workflow>/<run id>/`` holding the outputs, ``run.json`` (the
resolved config and its hash, versions, hardware, the cluster as it really ran, per-step wall
time, task counts, bytes written, output checksums and the status) and Dask's
``performance-report.html`` (unless switched off: rendering it costs 0.3-0.7 s here, 1.3 s
on a 2 GHz core).
``run.json`` is rewritten after every step and every checkpoint, so an interrupted or killed
run leaves a true record behind, and ``--resume`` continues it (with the parameters and
result-relevant config it was started with: :mod:`~openclaw_dask.workflows.resume`): steps
completed with the same op, arguments, inputs and result-relevant config are skipped, and an
iterative step restarts from its last complete checkpoint.

This module prepares a run (its config, workflow, plan, directory and record) and starts its
cluster; the run itself is :class:`~openclaw_dask.workflows.run.Run`, its iterative steps
:mod:`~openclaw_dask.workflows.iterative`, what a resume skips or continues
:mod:`~openclaw_dask.workflows.resume_steps` (by the steps' fingerprints:
:mod:`~openclaw_dask.workflows.fingerprint`) and its directory
:mod:`~openclaw_dask.workflows.rundir`. The names imported from here before they moved there
(``step_fingerprint``, ``StepFailedError``...) still are (``import name as name``).
"""

from __future__ import annotations

import functools
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from openclaw_dask.config import Config, ConfigError, detect_hardware, load_config
from openclaw_dask.config.arguments import (
    check_callable,
    check_flag,
    check_overrides,
    check_path,
)
from openclaw_dask.config.errors import Problem
from openclaw_dask.config.hardware import software_versions
from openclaw_dask.runtime import counter
from openclaw_dask.runtime.cluster import (
    ENCLOSING_SOURCE,
    attach_refusal,
    attached_dashboard,
    cluster_up_beside,
    dashboard_link,
    dashboard_note,
    enclosing_cluster,
    on_running_cluster,
    running_cluster,
    start_cluster,
    with_address,
)
from openclaw_dask.runtime.inspect import inspect_workers
from openclaw_dask.runtime.mpi_launch import mpi_job_scheduler
from openclaw_dask.runtime.oom import PauseWatch
from openclaw_dask.runtime.stall import StallWatch
from openclaw_dask.runtime.terminal import interrupts
from openclaw_dask.translate import ClusterPlan, plan_cluster
from openclaw_dask.translate.plan import flatten
from openclaw_dask.workflows import lock as run_dir_lock
from openclaw_dask.workflows.cluster_runs import register_run, runs_text
from openclaw_dask.workflows.fingerprint import code_changed as code_changed
from openclaw_dask.workflows.fingerprint import same_step as same_step
from openclaw_dask.workflows.fingerprint import same_value as same_value
from openclaw_dask.workflows.fingerprint import step_fingerprint as step_fingerprint
from openclaw_dask.workflows.progress import ProgressNews as ProgressNews
from openclaw_dask.workflows.registry import file_sha256, ship_modules
from openclaw_dask.workflows.resume import RUN_RECORD as RUN_RECORD
from openclaw_dask.workflows.resume import (
    carried_inputs,
    carried_origin,
    dropped_note,
    dropped_steps,
    module_changes,
    module_note,
    move_dropped,
    numerics_changes,
    read_run,
    recorded_workflow,
    resume_problems,
    software_changes,
)
from openclaw_dask.workflows.resume_steps import (
    checkpointed,
    completed_steps,
    continued_steps,
    nothing_left,
    resume_plan,
    skipped_steps,
    starting_over,
)
from openclaw_dask.workflows.resume_steps import read_checkpoint as read_checkpoint
from openclaw_dask.workflows.run import Run, StepFailedError, error_text
from openclaw_dask.workflows.run import raised_in as raised_in
from openclaw_dask.workflows.rundir import (
    _discard,
    _new_run_dir,
    _outermost_missing,
    check_run_dir,
    check_runs_folder,
    free_bytes,
    keep_sources,
    report_path,
)
from openclaw_dask.workflows.spec import Workflow, load_workflow, run_problems, step_sizes

logger = logging.getLogger("openclaw_dask.workflows")


def split_overrides(overrides: Sequence[str] | None) -> tuple[list[str], dict[str, str]]:
    """``--set`` items: config ones, and ``params.x=value`` ones for the workflow."""
    config, params = [], {}
    for item in overrides or ():
        key, sep, value = item.partition("=")
        if sep and key.strip().startswith("params."):
            params[key.strip()[len("params.") :]] = value
        else:
            config.append(item)
    return config, params


def _config_changes(previous: Mapping[str, Any], cfg: Config, attempt: int) -> dict[str, Any]:
    """``{"changed": [...]}``: every attempt's changes of the config's values (the earlier
    attempts' carried on), or nothing. A resume may change what does not change a result (a
    memory budget, the threads): ``config.values`` is the last attempt's alone, and the budget
    an earlier attempt failed with had been lost."""
    old = previous.get("config")
    old = old if isinstance(old, Mapping) else {}
    earlier = old.get("changed") if isinstance(old.get("changed"), list) else []
    was = flatten(old["values"]) if isinstance(old.get("values"), Mapping) else {}
    now = flatten(json.loads(json.dumps(cfg.to_nested(), default=str)))
    said = [
        f"attempt {attempt}: {key}: {was.get(key)!r} -> {now.get(key)!r}"
        for key in sorted(set(was) | set(now))
        if was and was.get(key) != now.get(key)
    ]
    return {"changed": [*earlier, *said]} if earlier or said else {}


def _op_module_edits(
    previous: Mapping[str, Any], edits: Sequence[str], attempt: int
) -> dict[str, list[str]]:
    """``{"op_modules_changed": [...]}``: the earlier attempts' edits of the op modules and
    this one's, or nothing for a run whose modules were never edited between attempts."""
    workflow = previous.get("workflow")
    earlier = workflow.get("op_modules_changed") if isinstance(workflow, Mapping) else None
    said = [
        *(earlier if isinstance(earlier, list) else []),
        *(f"attempt {attempt}: {e}" for e in edits),
    ]
    return {"op_modules_changed": said} if said else {}


def _load_config(
    workflow_config: str | None,
    config_arg: Config | str | None,
    overrides: Sequence[str] | None,
    params: Sequence[str] = (),
) -> Config:
    """The run's config: the argument, else the workflow's ``config:``, else the search order.

    ``params``: the workflow's parameter names, so that ``--set size=128`` suggests
    ``params.size``.
    """
    config_overrides, _ = split_overrides(overrides)
    if not isinstance(config_arg, Config):
        return load_config(config_arg or workflow_config, config_overrides, params=params)
    # read as load_config reads them: an item without '=' had become the key set to null
    return config_arg.with_overrides(config_overrides, params=params)


#: held while a run_workflow call runs (see :func:`_one_run_at_a_time`)
_RUNNING = threading.Lock()


def _one_run_at_a_time(function: Callable[..., Any]) -> Callable[..., Any]:
    """Refuse a call while another runs in this process (another thread, or from inside it).

    Dask's config is one per process and ``dask.config.set`` puts values back in the order it
    set them: two runs of a thread pool's sweep completed, and left the process with one run's
    worker preload, compression and malloc settings (found by an exploratory test of the Python
    API), which a later cluster of the process would start with.
    """

    @functools.wraps(function)
    def once(*args: Any, **kwargs: Any) -> Any:
        if not _RUNNING.acquire(blocking=False):
            raise RuntimeError(
                "run_workflow: another run_workflow is running in this process; Dask's config "
                "is one per process, so runs at once would change each other's settings: run "
                "them one after another, or each in its own process (a sweep's "
                "ProcessPoolExecutor, or `openclaw-dask submit`)"
            )
        try:
            return function(*args, **kwargs)
        finally:
            _RUNNING.release()

    return once


@_one_run_at_a_time
def run_workflow(
    path: str | os.PathLike[str] | None,
    config: Config | str | os.PathLike[str] | None = None,
    overrides: Iterable[str] | None = None,
    *,
    address: str | None = None,
    backend: str | None = None,
    run_dir: str | os.PathLike[str] | None = None,
    resume: str | os.PathLike[str] | None = None,
    dry_run: bool = False,
    progress: bool = False,
    announce: Callable[[str], None] | None = None,
    report: bool | None = None,
) -> dict[str, Any]:
    """Run a workflow file and return its run record.

    Parameters
    ----------
    path
        The workflow YAML; ``None`` with ``resume``: the file the resumed run was started from.
    config
        A :class:`Config`, a config path, or ``None``: the workflow's ``config:``, else the
        usual search order.
    overrides
        ``["section.key=value", "params.name=value", ...]``.
    address
        Attach to this scheduler instead of starting a cluster.
    backend
        Force a backend.
    run_dir
        Where the run writes (default ``runs/<workflow>/<timestamp>``); must be new or empty.
        Not with ``resume``, which continues in the resumed run's directory.
    resume
        A run directory to continue: its ``--set`` values and config file come along, and a
        differing parameter or result-relevant config value is refused
        (:mod:`~openclaw_dask.workflows.resume`). The recorded steps that the workflow no
        longer has (removed or renamed since) move from the record's ``steps`` to its
        ``dropped_steps`` (:func:`~openclaw_dask.workflows.resume.dropped_steps`). A completed
        run with nothing left to run (:func:`nothing_left`) and no step dropped starts no
        cluster: its record comes back as it is.
    dry_run
        Validate and plan only: no cluster, nothing written. A ``run_dir`` is refused as the
        run would refuse it (:func:`~openclaw_dask.workflows.rundir.check_run_dir`).
    progress
        Show rich progress bars.
    announce
        Called with one-line news for the user (run directory, dashboard link).
    report
        Write Dask's ``performance-report.html`` into the run directory (a resumed attempt
        writes ``performance-report-<attempt>.html`` beside an earlier attempt's). Rendering
        it costs 0.3-0.7 s on the scheduler (bokeh); ``False`` skips it (``submit
        --no-report``) for short runs. ``None``: a new run writes one, a resume does as the
        run it continues did.

    Returns
    -------
    dict
        The run record (also in ``run_dir/run.json``): ``status`` ``completed``; ``dry-run``
        (the plan, nothing run) with ``dry_run``. Both have ``sizes``, ``{step: text}``: what
        each op's ``describe`` says of its step's size (the steps a resume skips or continues
        left out). A resume's dry run also has ``resume`` (what
        it does with each step) and ``dropped_steps`` (the names of the steps whose records it
        would move). A run that does not complete raises, and its
        ``run.json`` says ``failed``, ``interrupted`` or ``rejected``.

    Raises
    ------
    ConfigError
        Bad input (workflow, config, overrides, a resume that differs), or workers that do not
        honour the config; nothing has run.
    ValueError
        Both ``run_dir`` and ``resume``.
    StepFailedError
        A step failed (:class:`~openclaw_dask.workflows.run.StepFailedError`): its ``error``
        is what the op raised, a ``ClusterLostError`` (the cluster stopped under it) or a
        ``WorkersOutOfMemoryError`` (past the memory budget); ``run_dir`` is the run to
        resume.
    KeyboardInterrupt
        Ctrl-C, SIGTERM or a hangup; its ``run_dir`` attribute is the run to resume (absent
        when the interrupt came before the run directory had a ``run.json``: nothing to
        resume).
    ClusterLostError
        (mpi backend) ``mpirun`` ended before any step ran: a
        :class:`~openclaw_dask.workflows.mpi_run.MpiRunError`, with its ``returncode``.
    RuntimeError
        Another ``run_workflow`` is running in this process (another thread): Dask's config is
        one per process; run each in its own process.
    """
    path = check_path("run_workflow", "path", path)
    check_overrides("run_workflow", overrides, mapping=False)
    run_dir = check_path("run_workflow", "run_dir", run_dir)
    resume = check_path("run_workflow", "resume", resume)
    if resume is not None and run_dir is not None:
        # as `submit --resume --run-dir` is refused: the run_dir had been ignored in silence,
        # the resume going on in the resumed run's directory
        raise ValueError(
            "run_workflow: resume continues a run in its own directory; pass run_dir or "
            "resume, not both"
        )
    check_flag("run_workflow", "dry_run", dry_run)
    check_flag("run_workflow", "progress", progress)
    check_flag("run_workflow", "report", report, none=True)
    # called first once the run directory exists: a wrong one had left a "failed" run there
    check_callable("run_workflow", "announce", announce, "one str")
    if not isinstance(config, Config):
        config = check_path("run_workflow", "config (a Config or its file)", config)
    if overrides is not None:  # read more than once below: a generator would be used up
        overrides = list(overrides)
    given = list(overrides or ())
    previous: dict[str, Any] = {}
    if resume is not None:  # the same run: what it was started with comes along
        resume_path, previous = read_run(resume)
        if path is None:  # submit --resume DIR alone: the run's own workflow file
            path = recorded_workflow(previous, resume_path)
        config, overrides = carried_inputs(previous, resume_path, path, config, given)
        if report is None:  # a run started with --no-report stays without one
            report = previous.get("report", True) is not False
    elif path is None:
        raise TypeError("run_workflow needs a workflow path, or a run to resume")
    report = report is not False
    _, param_overrides = split_overrides(overrides)
    problems: list[Problem] = []
    workflow = cfg = None
    # the steps a resume skips or continues from their checkpoint: their values were checked
    # when the run started (see load_workflow's `settled`); first those recorded completed or
    # with a checkpoint, then those sure to be skipped or continued
    settled = completed_steps(previous)
    if resume is not None:
        settled |= checkpointed(resume_path, previous)
    try:
        workflow = load_workflow(path, param_overrides, given=overrides, settled=settled)
    except ConfigError as exc:
        problems += exc.problems
        if resume is not None:  # of a step that began: it starts over (or runs again)
            problems = starting_over(problems, previous, resume_path)
    try:  # the config is checked even when the workflow is bad: every problem at once
        names = list(workflow.params) if workflow else []
        cfg = _load_config(workflow.config_path if workflow else None, config, overrides, names)
    except ConfigError as exc:
        problems += exc.problems
    if problems or workflow is None or cfg is None:
        if resume is not None:
            problems = carried_origin(problems, given, overrides or (), resume_path)
        raise ConfigError(problems)
    if resume is not None:
        # first: a changed value is the resume's mistake, whatever a step it changes now needs
        changed = split_overrides(given)[1]
        problems = resume_problems(previous, workflow, cfg, changed, run_dir=resume_path, path=path)
        if problems:
            raise ConfigError(problems)
        sure = skipped_steps(workflow, cfg, previous, resume_path)
        sure |= continued_steps(workflow, cfg, previous, resume_path, sure)
        if sure != settled:  # a completed step that runs again (changed, damaged, or after one
            settled = sure  # that runs), or one started over, has its values checked
            try:
                workflow = load_workflow(path, param_overrides, given=overrides, settled=settled)
            except ConfigError as exc:
                refused = starting_over(exc.problems, previous, resume_path, workflow, cfg)
                raise ConfigError(
                    carried_origin(refused, given, overrides or (), resume_path)
                ) from None
    problems = run_problems(workflow, cfg, settled)  # the ops' checks that need the config too
    if problems:
        raise ConfigError(problems)
    if address:
        cfg = with_address(cfg, address)
    elif backend is None and (enclosing := enclosing_cluster()):
        # inside `with start_cluster() as client:`: that cluster, as the block's compute()
        cfg = with_address(cfg, enclosing, ENCLOSING_SOURCE)
    running = running_cluster(cfg, backend=backend)
    if running:  # decided here, so that the dry run, run.json and the run itself agree
        cfg = on_running_cluster(cfg, running)
        theirs = running.get("fingerprint") or {}
        if theirs.get("hash") not in (None, cfg.fingerprint()[0]):
            # what attaching would refuse (its workers' config), refused before a run
            # directory is made and in the dry run too
            raise ConfigError([attach_refusal(cfg, theirs["hash"], theirs.get("values"))])
    shape = (running or {}).get("shape")  # (absent from a state file written before it was)
    plan = plan_cluster(cfg, backend=backend, running=shape if isinstance(shape, dict) else None)
    plan.unapplied += host_ops_note(workflow, plan)
    # what each step's op knows of its size: said before a run that may take hours, whose
    # length the user had learnt only from the progress bar; the cluster's threads where the
    # plan knows them (a scheduler given by address has its own)
    known = plan.backend != "attach" or bool(running)
    workers = (plan.layout.get("threads"), plan.layout.get("processes")) if known else (None, None)
    where = resume_path if resume is not None else run_dir or Path("runs") / workflow.name
    sizes = step_sizes(workflow, cfg, settled, workers, free_bytes(where))
    beside = None if running else cluster_up_beside(cfg, backend)
    if beside:
        plan.notes.append(beside)
    summary = {
        "workflow": workflow.name,
        "order": list(workflow.order),
        "params": dict(workflow.values),
        "param_sources": dict(workflow.param_sources),
        "plan": plan.to_dict(),
        "sizes": sizes,
    }
    # the run's steps that the (edited) workflow lacks: their records leave `steps`
    dropped = dropped_steps(previous, workflow) if resume is not None else []
    edits = module_changes(previous) if resume is not None else []  # op modules edited since
    if resume is not None and not dry_run:
        with run_dir_lock.hold(resume_path):  # not while another run is using it
            # with steps dropped there is a record to rewrite: "run.json is unchanged" had
            # kept their records in `steps` beside the workflow's
            if not dropped and nothing_left(workflow, cfg, previous, resume_path):
                # no cluster to start (on ssh or mpi, nodes and ranks) to skip every step
                if announce:
                    if edits:
                        announce(module_note(edits))
                    announce(
                        f"nothing to run: every step of {resume_path} completed in an earlier "
                        "attempt; run.json is unchanged"
                    )
                return {**previous, "run_dir": str(resume_path.resolve())}  # if it moved
    if plan.backend == "mpi" and mpi_job_scheduler() is None:
        # this process launches mpirun; its rank 1 runs the workflow (see mpi_run.py)
        from openclaw_dask.workflows import mpi_run

        summary["mpirun"] = mpi_run.mpirun_line(plan, path, config, overrides, backend, report)
        if not dry_run:
            return mpi_run.run_under_mpirun(
                path,
                config,
                overrides,
                cfg,
                workflow,
                plan,
                backend=backend,
                run_dir=run_dir,
                resume=resume,
                announce=announce,
                report=report,
            )
    versions = software_versions()
    changed = software_changes(previous, versions) if resume is not None else []
    if dry_run:
        if resume is None and run_dir is None:  # what the run would refuse, refused now
            check_runs_folder(workflow)
        elif resume is None:
            check_run_dir(run_dir)
        if resume is not None:
            summary["resume"] = resume_plan(workflow, cfg, previous, resume_path)
            summary["dropped_steps"] = dropped
            summary["software_changed"] = changed
            summary["op_modules_changed"] = edits
        return {"status": "dry-run", **summary}

    made = False  # whether this run made its directory (a --resume's, a user's empty one: not)
    outermost = None  # the outermost folder made for it (a first run's runs/<workflow>)
    if resume is not None:
        directory = resume_path
    else:
        outermost = _outermost_missing(Path("runs") / workflow.name if run_dir is None else run_dir)
        # (not Path.exists, which raises for a name too long: the run dir's refusal says it)
        made = run_dir is None or outermost is not None
        directory = _new_run_dir(workflow, run_dir)
    attempt = previous.get("attempts", 0) + 1
    # the earlier attempts' time (a record from before wall_seconds_all: its last attempt's)
    earlier_wall = previous.get("wall_seconds_all", previous.get("wall_seconds", 0.0))
    steps, moved = move_dropped(previous, dropped, attempt)
    record: dict[str, Any] = {
        "workflow": {
            "name": workflow.name,
            # as named (absolute, for a resume from elsewhere): workflows/example.yaml is a
            # link to the packaged example, whose path had stood here
            "file": os.path.abspath(path),
            "sha256": file_sha256(str(path)),
            # the op modules beside it that the cluster was sent, as they were
            "op_modules": {file: file_sha256(file) for file in workflow.op_files},
            # every attempt's edits of them: the steps kept were made by the earlier modules
            **_op_module_edits(previous, edits, attempt),
            "params": workflow.values,
            "param_sources": workflow.param_sources,
        },
        "run_dir": str(directory.resolve()),
        "config": {
            # absolute, so that --resume from another directory finds the same file
            "file": str(Path(cfg.file).resolve()) if cfg.file else None,
            "hash": cfg.config_hash(),
            "fingerprint": cfg.fingerprint()[0],
            "values": cfg.to_nested(),
            "sources": cfg.sources,
            **_config_changes(previous, cfg, attempt),
        },
        "versions": versions,
        # every attempt's changes (the versions above are the last attempt's alone)
        "software_changed": [
            *(earlier if isinstance(earlier := previous.get("software_changed"), list) else []),
            *(f"attempt {attempt}: {c}" for c in changed),
        ],
        "hardware": detect_hardware().to_dict(),
        "plan": {
            "backend": plan.backend,
            "layout": plan.layout,
            "notes": plan.notes,
            "unapplied": plan.unapplied,
        },
        "order": list(workflow.order),
        # a resume describes only the steps it starts (its values are the run's): the
        # earlier attempts' sizes of the others stay
        "sizes": {**_sizes_of(previous), **sizes},
        "steps": steps,
        "attempts": attempt,
        "report": report,
        "performance_report": None,
        "started": time.time(),
        "status": "running",
    }
    if moved:  # (a run that never dropped a step has none)
        record["dropped_steps"] = moved
    run = Run(workflow, cfg, plan, directory, record, progress, announce)
    # from before the first save to after the last: a SIGTERM or hangup in between had
    # ended the process where it stood, run.json still saying "running"
    with interrupts():
        held = run_dir_lock.hold(directory)  # before run.json is touched: it may be another run's
        t0 = time.perf_counter()
        try:
            run.save()
            if announce:  # before the cluster starts: an interrupted start can be resumed too
                announce(f"run directory: {directory}")
                for step, text in sizes.items():  # the summary: the dry run has them all
                    first, *rest = text.splitlines()
                    announce(f"size: {step}: {first}")
                    for line in rest:  # and what the op warns of (a slow setting)
                        if line.startswith("note: "):
                            announce(f"note: {step}: {line.removeprefix('note: ')}")
                if dropped:
                    announce(dropped_note(dropped))
                if changed:
                    announce(
                        f"note: the software changed since the run's last attempt "
                        f"({', '.join(changed)}); the completed steps and the checkpoint are kept "
                        "as the earlier versions made them"
                    )
                if edits:
                    announce(module_note(edits))
                if plan.backend != "attach":  # the attach line below lists its own
                    for note in plan.unapplied:  # set by the user and not done: say so now
                        announce(f"note: {note}")
                if beside:
                    announce(f"note: {beside}")
            with ExitStack() as stack:
                client = stack.enter_context(start_cluster(cfg, backend=backend))
                stack.enter_context(client.as_current())
                # before anything is written: another run on a shared cluster may hold a
                # module of the same name (refused, a first run leaves no directory)
                others = register_run(
                    client, workflow.op_files, str(directory.resolve()), workflow.name
                )
                if report:
                    from openclaw_dask.workflows.perf_report import RunReport, run_text

                    html = report_path(directory, record["attempts"])
                    code = run_text(record, record["attempts"])
                    stack.enter_context(RunReport(html, code))
                    record["performance_report"] = str(html)
                if plan.backend == "attach":  # its dashboard is where that cluster put it, if any
                    link = attached_dashboard(client)
                else:
                    link = dashboard_link(client) if cfg["cluster.dashboard_address"] else None
                record["dashboard"] = link
                if announce:
                    if plan.backend == "attach":
                        announce(_attached_note(client, plan, cfg))
                    if link:
                        note = link if plan.backend == "attach" else dashboard_note(link, cfg)
                        announce(f"dashboard: {note}")
                    if others:  # their tasks are in this run's report, their load on its time
                        many = len(others) > 1
                        seen = ", and this run's performance report shows their tasks too"
                        announce(
                            f"note: {len(others)} other run{'s are' if many else ' is'} on this "
                            f"cluster: {runs_text(others)}. The runs share its workers"
                            + (seen if report else "")
                        )
                record["cluster"] = {
                    **_cluster_summary(client),
                    "shared_with": [r["run"] for r in others],  # the runs on it at the start
                }
                moved = numerics_changes(previous, record["cluster"]) if resume else []
                if moved:
                    record["software_changed"] += [f"attempt {attempt}: {c}" for c in moved]
                    if announce:
                        announce(
                            f"note: the workers compute unlike the run's last attempt's "
                            f"({', '.join(moved)}): the completed steps and the checkpoint "
                            "are kept as those made them, so the outputs will not be an "
                            "uninterrupted run's bits"
                        )
                counter.install(client)
                ship_modules(client, workflow.op_files)  # ops beside the workflow file
                # and their copies, with the workflow's, for whoever reads the run later
                sources = [os.path.abspath(path), *workflow.op_files, *filter(None, [cfg.file])]
                record["workflow"]["copies"] = keep_sources(directory, sources)
                run.watch = stack.enter_context(PauseWatch(client))
                run.stall = stack.enter_context(StallWatch(client, files=workflow.op_files))
                run.save()
                run.run_steps(client)
            record["status"] = "completed"
        except ConfigError as exc:  # refused before any step ran (a bad node, a refused worker)
            record.update(status="rejected", error={"message": str(exc)})
            if resume is None and not record["steps"]:
                # a first run that nothing ran of leaves nothing behind: its run.json had made
                # the directory a run's, and the same --run-dir was then refused as not empty
                held.close()
                _discard(directory, made, outermost)
                if announce:  # its "run directory:" line was said: the reader looks there
                    announce(f"run directory {directory}: nothing kept (refused before any step)")
            raise
        except StepFailedError as exc:
            exc.run_dir = directory
            record.update(
                status="failed",
                error={
                    "step": exc.step,
                    "op": exc.op,
                    "message": error_text(exc.error),
                },
            )
            raise
        except KeyboardInterrupt as exc:
            exc.run_dir = directory  # type: ignore[attr-defined]  # submit's resume hint
            record["status"] = "interrupted"
            for rec in record["steps"].values():
                if rec.get("status") == "running":
                    rec["status"] = "interrupted"
            raise
        except Exception as exc:  # outside any step (starting the cluster): not left "running"
            record.update(status="failed", error={"message": f"{type(exc).__name__}: {exc}"})
            raise
        finally:
            record["wall_seconds"] = time.perf_counter() - t0
            record["wall_seconds_all"] = earlier_wall + record["wall_seconds"]
            record["finished"] = time.time()
            html = record["performance_report"]
            if html and not Path(html).exists():  # not written: the run's cluster was gone
                record["performance_report"] = None
            try:
                if not held.closed:  # (closed: a rejected first run, discarded)
                    run.save()
            except OSError:
                # a full disk: when a step already failed (often of the same full disk), that error
                # is the one to report; run.json keeps its last save, which --resume reads
                if record["status"] not in ("failed", "interrupted", "rejected"):
                    raise
            finally:
                held.close()  # also when the record cannot be saved (a full disk)
    return record


def host_ops_note(workflow: Workflow, plan: ClusterPlan) -> list[str]:
    """What a CUDA cluster does to a workflow's built-in ops: they compute on the host.

    A CUDA cluster runs one worker per GPU with ``gpu.stream_count`` threads, so the built-in
    ops (the climate model's included) get that many CPU threads in all instead of every core,
    and nothing said so but the README. Said with the settings not applied (submit prints it).
    A user op's device is its own: not counted.
    """
    if plan.backend != "cuda":
        return []
    host = [name for name, step in workflow.steps.items() if step.info.builtin]
    if not host:
        return []
    layout = plan.layout
    threads = layout.get("processes", 0) * layout.get("threads_per_worker", 0)
    return [
        f"step(s) {', '.join(host)} compute on the CPU: this CUDA cluster runs them on its "
        f"{threads} worker thread(s) (gpu.stream_count per GPU), not on every core; leave "
        "gpu.devices empty (or --backend local) to give them all cores"
    ]


def _sizes_of(record: Mapping[str, Any]) -> dict[str, str]:
    """The ``sizes`` of an earlier attempt's record (none in a record written before them)."""
    sizes = record.get("sizes")
    return dict(sizes) if isinstance(sizes, Mapping) else {}


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _attached_note(client: Any, plan: ClusterPlan, cfg: Config) -> str:
    """Which running cluster the run went to, its workers, and what the config could not set."""
    threads = client.nthreads()
    origin = cfg.sources.get("cluster.scheduler_address", "default")
    line = (
        f"cluster: the running scheduler at {plan.address} ({origin}): "
        f"{_count(len(threads), 'worker')}, {_count(sum(threads.values()), 'thread')}"
    )
    return "\n".join([line, *(f"  note: {n}" for n in plan.unapplied)])


def _cluster_summary(client: Any) -> dict[str, Any]:
    """The workers as they really run (threads, cores, allocator, memory, resources)."""
    facts = inspect_workers(client)
    keep = (
        "name",
        "host",
        "nthreads",
        "memory_limit",
        "resources",
        "affinity",
        "allocator",
        "config_hash",
        "clock_offset",
        "numerics",
    )
    return {
        "scheduler": client.scheduler.address,
        "workers": {a: {k: f[k] for k in keep} for a, f in sorted(facts.items())},
    }
