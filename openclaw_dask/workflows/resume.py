"""What ``submit --resume DIR`` continues with, and what it refuses.

A resumed run is the same run: the same workflow, the same parameters and the same
result-relevant config (the keys of :meth:`Config.result_fingerprint`), so that its outputs are
those of an uninterrupted run. The recorded run supplies what the user gave it the first time (its
``--set`` values and its config file), so ``--resume DIR`` alone continues a run started with
``--set params.resolution=0.25``; a value given again must agree with the recorded one. Before,
a resume that forgot a ``--set`` (or changed one) silently re-ran completed steps with other
values over the run's outputs, or restarted an iterative step from step 0.

Its workflow file may have been edited since (the fix after a failure): a step it no longer has
(removed, or renamed) has its record moved from ``steps`` to ``dropped_steps``
(:func:`dropped_steps`), so that ``steps`` holds the steps of the workflow that ran.

Values that only shape the cluster (threads, processes, the dashboard) or how it runs (the
allocator, transport compression) may change: a run can be continued on another machine.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from openclaw_dask.config import Config, ConfigError
from openclaw_dask.config.errors import Problem
from openclaw_dask.config.loader import is_set_source
from openclaw_dask.config.render import yaml_value
from openclaw_dask.config.yamlsource import read_yaml
from openclaw_dask.translate.plan import flatten
from openclaw_dask.workflows.registry import file_sha256
from openclaw_dask.workflows.spec import REF_RE, Workflow
from openclaw_dask.workflows.strictjson import json_kind

RUN_RECORD = "run.json"


def read_run(resume: str | Path) -> tuple[Path, dict[str, Any]]:
    """The run directory and its record (``run.json``).

    Raises
    ------
    ConfigError
        Not a run directory, or a record that is not JSON or not shaped like one.
    """
    path = Path(resume)

    def refuse(message: str) -> ConfigError:
        return ConfigError([Problem(message, "", str(path))])

    if not path.exists():
        raise refuse("no such directory: give the run directory that submit printed")
    if path.name == RUN_RECORD and path.is_file():  # the record itself: its run directory
        path = path.parent
    try:
        text = (path / RUN_RECORD).read_text()
    except FileNotFoundError:
        # the folder of a workflow's runs (runs/NAME) given for one of them: name them
        runs = sorted(p.parent.name for p in path.glob(f"*/{RUN_RECORD}")) if path.is_dir() else []
        hint = ""
        if runs:
            more = "..., " if len(runs) > 5 else ""
            hint = f"; it holds the runs {more}{', '.join(runs[-5:])}: give one of them"
        raise refuse(f"no {RUN_RECORD} here: not a run directory{hint}") from None
    except OSError as exc:  # a directory where run.json should be, no permission...
        raise refuse(f"cannot read {RUN_RECORD}: {exc.strerror or exc}") from None
    try:
        record = json.loads(text)
    except ValueError as exc:
        raise refuse(f"{RUN_RECORD} is not valid JSON: {exc}") from None
    damage = record_damage(record)
    if damage:
        raise refuse(f"{RUN_RECORD} is damaged ({damage}); start a new run instead")
    return path, record


#: The parts of a run record that ``--resume`` reads, and the JSON type each must have.
RECORD_SHAPE: dict[str, type] = {
    "workflow": dict,
    "workflow.name": str,
    "workflow.params": dict,
    "config": dict,
    "config.values": dict,
    "steps": dict,
    "status": str,
}

#: The parts it reads where a record has them, and the JSON types each may have then (``*``:
#: each key of an object). A run killed mid-step, or recorded before a part was added, lacks
#: some; null stands where the runner writes it. Parents come before their parts, which are
#: looked at only in an object.
RECORD_PARTS: dict[str, tuple[type, ...]] = {
    "workflow.file": (str, type(None)),
    "workflow.param_sources": (dict,),
    "workflow.param_sources.*": (str, type(None)),
    "config.file": (str, type(None)),
    "config.sources": (dict,),
    "config.sources.*": (str, type(None)),
    "attempts": (int,),
    # the records of steps an edited workflow dropped, carried on by every later attempt
    "dropped_steps": (dict,),
    # the summary of a resume with nothing left to run: the completed attempt's
    "wall_seconds": (int, float),
    # every attempt's together, the earlier ones' carried on
    "wall_seconds_all": (int, float),
    "finished": (int, float),
    "steps.*.files": (dict,),
    "steps.*.metrics": (dict,),
    "steps.*.metrics.plots": (list, type(None)),
}


def record_damage(record: Any) -> str | None:
    """What makes ``record`` unusable as a run record (``None``: nothing).

    A hand-edited or half-written ``run.json`` used to fail deep inside the resume with an
    ``AttributeError`` (a list where an object belongs), or, without ``steps``, silently ran
    every completed step again. Its other parts that the resume reads
    (:data:`RECORD_PARTS`) are checked too: ``param_sources`` as a list, a number for the
    config file or a string for ``attempts`` had ended in an internal error, exit 1.
    """
    if not isinstance(record, dict):
        return f"it holds {json_kind(record)}, not an object"
    for dotted, kind in RECORD_SHAPE.items():
        value: Any = record
        for part in dotted.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        if not isinstance(value, kind):
            found = "missing" if value is None else json_kind(value)
            return f"{dotted} is {found}, not {json_kind(kind())}"
    bad = [name for name, step in record["steps"].items() if not isinstance(step, dict)]
    if bad:
        return f"steps.{bad[0]} is {json_kind(record['steps'][bad[0]])}, not an object"
    for dotted, kinds in RECORD_PARTS.items():
        for name, value in _parts(record, dotted):
            # (JSON's true and false are no numbers, though Python's bool is an int)
            if isinstance(value, kinds) and not (isinstance(value, bool) and bool not in kinds):
                continue
            if kinds == (int,):  # (a number that is not whole is said by its value)
                found = repr(value) if isinstance(value, float) else json_kind(value)
                return f"{name} is {found}, not a whole number"
            return f"{name} is {json_kind(value)}, not {json_kind(kinds[0]())}"
    if record["status"] == "completed" and "wall_seconds" not in record:
        # every attempt that ends records it: a completed run's summary says it
        return "wall_seconds is missing, not a number"
    return None


def _parts(record: dict[str, Any], dotted: str) -> list[tuple[str, Any]]:
    """The values at ``dotted`` in ``record`` with their own dotted names (``*``: each key),
    of those there are; a part below a value that is no object is not there."""
    found: list[tuple[str, Any]] = [("", record)]
    for part in dotted.split("."):
        found = [
            (f"{name}.{key}" if name else key, value[key])
            for name, value in found
            if isinstance(value, dict)
            for key in (value if part == "*" else [part] if part in value else [])
        ]
    return found


def recorded_workflow(record: Mapping[str, Any], directory: Path) -> str:
    """The workflow file the recorded run was started from (``submit --resume DIR`` alone).

    Raises
    ------
    ConfigError
        The record names none, or the file is not there any more.
    """
    file = record.get("workflow", {}).get("file")
    if isinstance(file, str) and Path(file).is_file():
        return file
    where = f"its workflow file {file} is not there any more" if file else "it names no file"
    message = (
        f"--resume without a workflow continues the run's own workflow, but {where}: give it, "
        f"as in `openclaw-dask submit WORKFLOW --resume {directory}`"
    )
    copies = record.get("workflow", {}).get("copies")
    first = copies[0] if isinstance(copies, list) and copies else None
    kept = directory / first if isinstance(first, str) else None  # the workflow's copy
    if kept is not None and kept.is_file():
        message += (
            f"; the copy its last attempt ran, kept with the run: `openclaw-dask submit {kept} "
            f"--resume {directory}`"
        )
    raise ConfigError([Problem(message, "", str(directory))])


def carried_inputs(
    record: Mapping[str, Any],
    directory: Path,
    path: str | Path,
    config: Config | str | None,
    overrides: Sequence[str],
) -> tuple[Config | str | None, list[str]]:
    """The config argument and ``--set`` items of a resumed run of workflow file ``path``.

    The recorded run's ``--set`` values (parameters and config keys) come first, so the ones
    given now win, and its config file is used when none is given and it still exists.

    Raises
    ------
    ConfigError
        ``path`` is another workflow than the recorded run's (checked first: that workflow's
        parameters would not fit).
    """
    name = other = record.get("workflow", {}).get("name")
    with contextlib.suppress(ConfigError):  # an unreadable file is reported where it is loaded
        other = read_yaml(path).data.get("name")
    if other != name:
        message = (
            f"this run directory holds a run of workflow {name!r} "
            f"({record.get('workflow', {}).get('file')}); --resume continues that workflow, "
            f"not {other!r}"
        )
        raise ConfigError([Problem(message, "", str(directory))])
    workflow = record.get("workflow", {})
    recorded = record.get("config", {})
    carried = [
        f"params.{name}={yaml_value(value)}"
        for name, value in workflow.get("params", {}).items()
        if is_set_source(workflow.get("param_sources", {}).get(name))
    ]
    sources = recorded.get("sources", {})
    carried += [
        f"{key}={yaml_value(value)}"
        for key, value in flatten(recorded.get("values", {})).items()
        if is_set_source(sources.get(key))
    ]
    if config is None and recorded.get("file") and Path(recorded["file"]).is_file():
        config = recorded["file"]
    # a key given now replaces the carried one, which would otherwise read as given twice
    now = {item.partition("=")[0].strip() for item in overrides}
    carried = [item for item in carried if item.partition("=")[0] not in now]
    return config, [*carried, *overrides]


def carried_origin(
    problems: Sequence[Problem], given: Sequence[str], overrides: Sequence[str], directory: Path
) -> list[Problem]:
    """``problems`` with those of a carried ``--set`` value said as the recorded run's.

    A value the run was started with, refused now (its workflow or config edited since), had
    read ``--set: params.size: ...`` as if typed with this command.

    Parameters
    ----------
    problems
        What loading the workflow and config found.
    given
        The ``--set`` items given now.
    overrides
        Those and the carried ones (:func:`carried_inputs`).
    directory
        The run being resumed.
    """
    now = {item.partition("=")[0].strip() for item in given}
    carried = {item.partition("=")[0].strip() for item in overrides} - now
    label = f"{directory / 'run.json'} (a --set of the run being resumed)"
    return [
        dataclasses.replace(p, origin=label)
        if is_set_source(p.origin) and any(p.key == k or p.key.startswith(f"{k}.") for k in carried)
        else p
        for p in problems
    ]


def resume_problems(
    record: Mapping[str, Any],
    workflow: Workflow,
    cfg: Config,
    given_params: Mapping[str, str],
    *,
    run_dir: str | Path | None = None,
    path: str | os.PathLike[str] | None = None,
) -> list[Problem]:
    """Why these parameters and config cannot continue the recorded run (empty: they can).

    Parameters
    ----------
    record
        The recorded run (of the same workflow: :func:`carried_inputs` checked).
    workflow, cfg
        What the resumed run would use (after :func:`carried_inputs`).
    given_params
        The ``--set params.x=...`` given now, by name.
    run_dir, path
        The run directory and workflow file, as given: the last refused parameter then says
        the commands that start a new run with the values given (:func:`new_runs`).
    """
    problems = []
    values = record.get("workflow", {}).get("params", {})
    changed = [
        param
        for param in given_params
        if param in values and not _same(values[param], workflow.values.get(param))
    ]
    for param in changed:
        hint = ""
        if param == changed[-1] and run_dir is not None and path is not None:
            hint = new_runs(record, workflow, cfg, changed, run_dir, path)
        problems.append(
            Problem(
                f"the run being resumed used {yaml_value(values[param])}; --resume continues "
                f"it with the same values: drop this --set, or start a new run for another "
                f"value{hint}",
                f"params.{param}",
                origin="--set",
            )
        )
    before = flatten(record.get("config", {}).get("values", {}))
    for key, value in cfg.result_fingerprint()[1].items():
        if key in before and not _same(before[key], value):
            problems.append(
                Problem(
                    f"the run being resumed used {yaml_value(before[key])}, this one would use "
                    f"{yaml_value(value)} (from {cfg.sources.get(key, 'defaults')}); its results "
                    "and checkpoints depend on it: resume with the same value, or start a new run",
                    key,
                    origin="--resume",
                )
            )
    return problems


def new_runs(
    record: Mapping[str, Any],
    workflow: Workflow,
    cfg: Config,
    changed: Sequence[str],
    run_dir: str | Path,
    path: str | os.PathLike[str],
) -> str:
    """``: `openclaw-dask submit ...```, the command that starts a new run as the recorded one
    was started (its ``--set`` parameters, its config file and result-relevant ``--set`` keys)
    with the ``changed`` parameters' values given now; and, where a step's op can start from
    another run (:attr:`~openclaw_dask.workflows.context.IterativeOp.start_from_run`, climate's
    ``params.initial``), the one that starts where this run ended.

    A resume that changes a parameter is refused (the same run keeps its values), and "start
    a new run" had left the user to find how: which of the run's values to give again, and
    that a climate run can go on from another's end state.
    """
    recorded = record.get("workflow", {})
    sources = recorded.get("param_sources", {})
    params = {
        name: value
        for name, value in recorded.get("params", {}).items()
        if is_set_source(sources.get(name)) and name not in changed
    }
    params.update({name: workflow.values[name] for name in changed})
    options = []
    if cfg.file and (not workflow.config_path or Path(cfg.file) != Path(workflow.config_path)):
        options += ["--config", str(cfg.file)]
    keys = [k for k in cfg.result_fingerprint()[1] if is_set_source(cfg.sources.get(k))]

    def command(values: Mapping[str, Any]) -> str:
        items = [f"params.{name}={yaml_value(value)}" for name, value in values.items()]
        items += [f"{key}={yaml_value(cfg[key])}" for key in keys]
        sets = ["--set", *items] if items else []
        return shlex.join(["openclaw-dask", "submit", str(path), *options, *sets])

    said = f": `{command(params)}`"
    start = _start_from_run(workflow, run_dir)
    if start and not set(start) & set(changed):
        # the parameters it sets go last, where a reader looks for them
        going_on = {k: v for k, v in params.items() if k not in start} | start
        ended = "where this run ended"
        if record.get("status") != "completed":
            finish = shlex.join(["openclaw-dask", "submit", "--resume", str(run_dir)])
            ended = f"where this run ends, once finished (`{finish}`)"
        said += f"; or one that starts {ended}: `{command(going_on)}`"
    return said


def _start_from_run(workflow: Workflow, run_dir: str | Path) -> dict[str, Any]:
    """The parameters that start ``workflow`` from the end of the run in ``run_dir``, from the
    first step whose op says how (``start_from_run``) with each of those arguments given by a
    parameter (``${params.NAME}``); empty when there is none."""
    for name in workflow.order:
        step = workflow.steps[name]
        wanted = getattr(step.info.target, "start_from_run", None) or {}
        params = {}
        for arg, value in wanted.items():
            ref = REF_RE.fullmatch(str(step.written.get(arg, "")).strip())
            if ref is None:
                break
            params[ref.group(1)] = str(run_dir) if value == "{run}" else value
        else:
            if params:
                return params
    return {}


def dropped_steps(record: Mapping[str, Any], workflow: Workflow) -> list[str]:
    """The steps of the recorded run that ``workflow`` lacks, in the record's order.

    A resume with an edited workflow (the fix after a failure) may remove or rename steps.
    Their records had stayed in ``steps`` beside those of the workflow that ran: a run that
    completed still said its removed step ``failed``, and a renamed step's old record claimed
    the outputs its new name had written again. The attempt moves them to ``dropped_steps``
    (:func:`move_dropped`) and says so (:func:`dropped_note`).

    Parameters
    ----------
    record
        The recorded run.
    workflow
        The workflow the resume runs.

    Returns
    -------
    list of str
        The names of the recorded steps that are not in ``workflow``.
    """
    steps = record.get("steps", {})
    return [name for name in steps if name not in workflow.steps]


def move_dropped(
    record: Mapping[str, Any], dropped: Sequence[str], attempt: int
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The ``steps`` and ``dropped_steps`` of a resumed attempt's record.

    Parameters
    ----------
    record
        The recorded run.
    dropped
        Its steps that the resume's workflow lacks (:func:`dropped_steps`).
    attempt
        The resumed attempt's number, kept with each record moved (``dropped_in_attempt``):
        a step dropped, added back and dropped again keeps its latest record.

    Returns
    -------
    steps : dict
        The recorded steps that the workflow still has, as recorded.
    dropped_steps : dict
        The earlier attempts' dropped steps, then those of ``dropped``.
    """
    steps = dict(record.get("steps", {}))
    moved = dict(record.get("dropped_steps", {}))
    for name in dropped:
        moved[name] = {**steps.pop(name), "dropped_in_attempt": attempt}
    return steps, moved


def dropped_note(dropped: Sequence[str]) -> str:
    """The line a resume (and its dry run) says of the steps its workflow no longer has."""
    if len(dropped) == 1:
        return (
            f"resume: step {dropped[0]} of the earlier attempt is not in this workflow: its "
            "record moves to dropped_steps"
        )
    return (
        f"resume: steps {', '.join(dropped)} of the earlier attempt are not in this workflow: "
        "their records move to dropped_steps"
    )


def software_changes(record: Mapping[str, Any], now: Mapping[str, str]) -> list[str]:
    """What changed of Python and the core packages since the recorded attempt.

    A resume continues the run with the software it finds (an upgrade in between is allowed:
    the completed steps and the checkpoint stay as they were made), but a run whose parts were
    made by different versions is not the run an uninterrupted one would be, bit for bit, so
    the resume says it and ``run.json`` keeps it.

    Parameters
    ----------
    record
        The recorded run (its ``versions``: those of its last attempt).
    now
        This attempt's versions (:func:`~openclaw_dask.config.hardware.software_versions`).

    Returns
    -------
    list of str
        ``"numpy 2.1.0 -> 2.2.0"`` for each package whose version differs, in ``now``'s order.
    """
    before = record.get("versions")
    if not isinstance(before, Mapping):
        return []
    return [
        f"{name} {before[name]} -> {version}"
        for name, version in now.items()
        if name in before and before[name] != version
    ]


def numerics_changes(record: Mapping[str, Any], cluster: Mapping[str, Any]) -> list[str]:
    """What changed of the workers' numerics since the recorded attempt (deterministic mode).

    The numba target a kernel is compiled for (``NUMBA_CPU_NAME``, another node type) changes
    the climate model's bits, and a resume that continued on such workers had said nothing:
    ``software_changed`` stayed empty. Each attempt's workers record their
    :func:`~openclaw_dask.runtime.plugins.numerics_kind` where deterministic mode's check read
    it (``cluster.workers.<address>.numerics``); the kind most of them have is compared.

    Parameters
    ----------
    record
        The recorded run (its ``cluster``: that of its last attempt).
    cluster
        This attempt's ``cluster`` record.

    Returns
    -------
    list of str
        ``"workers' cpu znver3 -> generic"`` for each part that differs.
    """
    from openclaw_dask.runtime.plugins import common_kind

    def kind(summary: Any) -> dict[str, str] | None:
        workers = summary.get("workers") if isinstance(summary, Mapping) else None
        if not isinstance(workers, Mapping):
            return None
        found = {a: w.get("numerics") for a, w in workers.items() if isinstance(w, Mapping)}
        return common_kind({a: k for a, k in found.items() if isinstance(k, dict)})

    before, now = kind(record.get("cluster")), kind(cluster)
    if not before or not now:
        return []
    return [f"workers' {k} {before[k]} -> {v}" for k, v in now.items() if before.get(k, v) != v]


def _same(a: Any, b: Any) -> bool:
    # the record went through JSON (tuples became lists): compare in that form
    return json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)


def module_changes(record: Mapping[str, Any]) -> list[str]:
    """The op modules beside the workflow that were edited, or removed, since the recorded
    attempt ran them (its ``workflow.op_modules``).

    A resume runs a completed step again when its op's own source changed
    (:attr:`~openclaw_dask.workflows.registry.OpInfo.code`), not for an edit of a helper the op
    calls or of a module constant: a kernel fixed in a helper had resumed as "nothing to run",
    unsaid, and a resume that ran another step recorded the edited module's hash beside
    outputs that the module as it was had made. Said, as an upgrade of the software is.

    Returns
    -------
    list of str
        ``"ops.py edited (sha256 b66976797777 -> c68fa6bcda7e)"`` or ``"ops.py removed"``
        for each module, in the recorded order.
    """
    workflow = record.get("workflow")
    recorded = workflow.get("op_modules") if isinstance(workflow, Mapping) else None
    if not isinstance(recorded, Mapping):
        return []
    said = []
    for file, digest in recorded.items():
        try:
            now = file_sha256(file)
        except OSError:
            said.append(f"{Path(file).name} removed")
            continue
        if now != digest:
            said.append(f"{Path(file).name} edited (sha256 {str(digest)[:12]} -> {now[:12]})")
    return said


def module_note(edits: Sequence[str]) -> str:
    """The line a resume says of :func:`module_changes`."""
    return (
        f"note: {', '.join(edits)} since the run's last attempt: a completed step runs again "
        "only when its op's own code changed, so the steps kept were made by the module as it "
        "was (a new run makes them with the module as it is)"
    )
