"""The workflow file: parse, resolve parameters and check it as strictly as the config.

A workflow file (YAML)::

    name: example-smoothing              # letters, digits, - and _
    description: what it computes
    config: ../configs/openclaw.config   # optional, relative to this file; --config wins
    params:
      size: {type: int, default: 256, doc: grid points per side, min: 8}
    steps:
      field:
        op: example.field                # a registered op, or pkg.module:function
        with: {size: ${params.size}}     # arguments; ${params.x} is replaced by the value
        outputs: [field.zarr]            # what the op writes into the run directory
      smooth:
        op: example.diffuse
        needs: [field]                   # runs after these steps and reads their outputs
        outputs: [smoothed.zarr]

Parameter types are ``int`` (64-bit: within :data:`INT_RANGE`), ``float`` (finite), ``bool``,
``str`` and ``path``: a string made absolute
when the workflow is read (a ``--set`` value against the current directory, a default against
the workflow file's folder), so the run records, and ``--resume`` reuses, the same file. A
parameter may also give ``min``, ``max``, ``choices``, a ``doc`` line and a ``unit``; a
refused ``--set`` value is told them (``expected float from 0.1 to 10.0, got 70.0;
resolution: grid spacing, in degree``).

Each output is ``NAME.zarr`` (a Zarr store the runner writes) or ``NAME/`` (a folder the op
fills, e.g. plots); ``NAME`` must be one of the outputs the op declares, as the kind it
declares. Names (workflow, steps, outputs, parameters) are at most ``NAME_LIMIT`` characters.
An argument the op reads a step's outputs by (``source``: the op's ``step_args``) names one
of the step's ``needs:``. Every mistake is one
:class:`~openclaw_dask.config.Problem` with file, line and dotted key, all reported together.
"""

from __future__ import annotations

import difflib
import graphlib
import inspect
import math
import re
import typing
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import UnionType
from typing import Any, Union

from openclaw_dask.config.errors import (
    QUOTE_LIMIT,
    ConfigError,
    Problem,
    did_you_mean,
    not_a_file,
    quote,
    shorten,
)
from openclaw_dask.config.loader import is_set_source, repeated_sets, set_source
from openclaw_dask.config.yamlsource import (
    YamlDocument,
    nothing_typed,
    number_hint,
    parse_scalar,
    read_yaml,
)
from openclaw_dask.workflows.registry import (
    OpError,
    OpInfo,
    RunFacts,
    modules_beside,
    resolve_op,
    shipped_module,
)

TOP_FIELDS = ("name", "description", "config", "params", "steps")
STEP_FIELDS = ("op", "with", "needs", "outputs", "description")
PARAM_FIELDS = ("type", "default", "doc", "unit", "min", "max", "choices")
PARAM_TYPES: dict[str, type | tuple[type, ...]] = {
    "int": int,
    "float": (int, float),
    "bool": bool,
    "str": str,
    "path": str,  # made absolute when read, so a --resume from elsewhere finds the same file
}
#: The values an ``int`` parameter holds whatever its ``min`` and ``max``: a 64-bit integer, what
#: numpy, numba and zarr hold. A larger one reached the op as a Python int, to overflow there or
#: to run for ever (``--set params.years=99999999999999999999`` passed the dry run).
INT_RANGE = (-(2**63), 2**63 - 1)
#: names become folder and file names (runs/NAME/, .checkpoints/STEP/, OUTPUT.zarr): at most
#: this many characters, far below the 255 bytes a file name may have
NAME_LIMIT = 100
# \Z, not $: $ also matches before a final newline, and "t\n" made a folder runs/t\n/
NAME_RE = re.compile(rf"^[A-Za-z][A-Za-z0-9_-]{{0,{NAME_LIMIT - 1}}}\Z")
REF_RE = re.compile(r"\$\{params\.([A-Za-z_][A-Za-z0-9_]*)\}")
OUTPUT_RE = re.compile(rf"^([A-Za-z][A-Za-z0-9_-]{{0,{NAME_LIMIT - 1}}})(\.zarr|/)\Z")
#: any ``${...}``: one that is not a ``REF_RE`` reference would reach the op as literal text
ANY_REF_RE = re.compile(r"\$\{([^{}]*)\}")


@dataclass(frozen=True)
class ParamSpec:
    """A typed workflow parameter."""

    name: str
    type: str
    default: Any
    doc: str = ""
    unit: str = ""
    min: float | None = None
    max: float | None = None
    choices: tuple[Any, ...] = ()

    @property
    def about(self) -> str:
        """``; resolution: grid spacing, in degree``: its ``doc`` and ``unit`` for a refusal,
        or nothing."""
        unit = f"in {self.unit}" if self.unit else ""
        said = ", ".join(part for part in (self.doc, unit) if part)
        return f"; {self.name}: {said}" if said else ""

    def check(self, value: Any) -> str | None:
        """``None`` if ``value`` fits, else what was expected (with the allowed range)."""
        problem = _type_of_param(self.type, value)
        if problem:
            return problem
        low, high = self.min, self.max
        if self.type == "float" and not math.isfinite(value):
            # .nan passes every bound (each comparison is false), .inf every missing one
            return f"expected a finite float{_range(low, high)}, got {_said(value)}"
        if (low is not None and value < low) or (high is not None and value > high):
            # "from 1 to 10" when both are declared, else the one bound there is
            return f"expected {self.type}{_range(low, high)}, got {_said(value)}"
        if self.type == "int" and not INT_RANGE[0] <= value <= INT_RANGE[1]:
            within = (
                INT_RANGE[0] if low is None else max(low, INT_RANGE[0]),
                INT_RANGE[1] if high is None else min(high, INT_RANGE[1]),
            )
            return f"expected int{_range(*within)} (a 64-bit integer), got {_said(value)}"
        if self.choices and value not in self.choices:
            listed = shorten(", ".join(map(str, self.choices)), QUOTE_LIMIT * 4)
            near = did_you_mean(str(value), [str(c) for c in self.choices])
            return f"expected one of {listed}, got {_said(value)}{near}"
        return None


def _said(value: Any) -> str:
    """A value as the workflow's YAML spells it: ``null``, ``true``, not Python's words."""
    return (
        "null" if value is None else str(value).lower() if isinstance(value, bool) else quote(value)
    )


def _range(low: float | None, high: float | None) -> str:
    """`` from LOW to HIGH``, `` >= LOW``, `` <= HIGH`` or nothing, as a message says it."""
    if low is not None and high is not None:
        return f" from {low} to {high}"
    if low is not None:
        return f" >= {low}"
    return f" <= {high}" if high is not None else ""


def _type_of_param(kind: str, value: Any) -> str | None:
    """Why ``value`` is not a value of the parameter type ``kind``, if it is not."""
    if isinstance(value, bool) and kind != "bool":
        return f"expected {kind}, got {_said(value)} (a YAML boolean)"
    if not isinstance(value, PARAM_TYPES[kind]):
        hint = number_hint(value, kind == "int") if kind in ("int", "float") else ""
        return f"expected {kind}, got {_said(value)}{hint}"
    return None


@dataclass(frozen=True)
class StepSpec:
    """One step: its op, resolved arguments, dependencies and outputs."""

    name: str
    op: str
    info: OpInfo
    args: dict[str, Any]
    needs: tuple[str, ...]
    outputs: tuple[str, ...]
    description: str = ""
    #: the ``with:`` arguments as written (``${params.x}`` unresolved): a refusal names the
    #: parameter a value came from
    written: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def arg(self, name: str) -> Any:
        """The argument ``name`` as given in ``with:``, else the op's default (``None`` if it
        has neither)."""
        if name in self.args:
            return self.args[name]
        default = getattr(self.info.parameters.get(name), "default", None)
        return None if default is inspect.Parameter.empty else default

    @property
    def zarr_outputs(self) -> tuple[str, ...]:
        """Output names written as Zarr stores (``x.zarr`` -> ``x``)."""
        return tuple(o[:-5] for o in self.outputs if o.endswith(".zarr"))

    @property
    def dir_outputs(self) -> tuple[str, ...]:
        """Output folders the op fills (``plots/`` -> ``plots``)."""
        return tuple(o[:-1] for o in self.outputs if o.endswith("/"))


@dataclass(frozen=True)
class Workflow:
    """A validated workflow with its parameters resolved."""

    name: str
    description: str
    file: str
    config_path: str | None
    params: dict[str, ParamSpec]
    values: dict[str, Any]
    steps: dict[str, StepSpec]
    order: tuple[str, ...]
    param_sources: dict[str, str] = field(default_factory=dict)
    #: op modules imported from beside the workflow file, shipped to the cluster
    #: (:func:`~openclaw_dask.workflows.registry.ship_modules`)
    op_files: tuple[str, ...] = ()
    #: the line of each dotted path in the file, for the problems :func:`run_problems` finds
    lines: Mapping[str, int] = field(default_factory=dict, compare=False, repr=False)


def _substitute(value: Any, values: Mapping[str, Any]) -> Any:
    """Replace ``${params.x}`` in strings (a whole-string reference keeps the value's type)."""
    if isinstance(value, str):
        whole = REF_RE.fullmatch(value.strip())
        if whole:
            return values[whole.group(1)]
        return REF_RE.sub(lambda m: str(values[m.group(1)]), value)
    if isinstance(value, list):
        return [_substitute(v, values) for v in value]
    if isinstance(value, dict):
        return {k: _substitute(v, values) for k, v in value.items()}
    return value


def _strings(value: Any) -> Iterable[str]:
    """Every string inside ``value`` (nested lists and mappings of ``with:`` arguments)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)


def _references(value: Any) -> Iterable[str]:
    """The parameter names of the ``${params.NAME}`` references inside ``value``."""
    for text in _strings(value):
        yield from REF_RE.findall(text)


def _malformed_references(value: Any) -> Iterable[str]:
    """The ``${...}`` in ``value`` that are not ``${params.NAME}`` (``${param.size}``)."""
    for text in _strings(value):
        for m in ANY_REF_RE.finditer(text):
            if not REF_RE.fullmatch(m.group(0)):
                yield m.group(0)


def malformed_reference_problem(ref: str, declared: Iterable[str]) -> str:
    """What is wrong with a ``${...}`` that is not ``${params.NAME}``, with the closest one.

    Parameters
    ----------
    ref
        The reference as written, ``${param.size}``.
    declared
        The workflow's parameter names.

    Returns
    -------
    str
        ``"'${param.size}': references are written ${params.NAME}; did you mean ..."``.
    """
    # the name is what follows the last dot: a misspelt "params." is the usual mistake
    name = ref[2:-1].strip().rsplit(".", 1)[-1].strip()
    # case folded, as did_you_mean does; the name itself is kept: ${param.size} means size
    folded = {str(n).casefold(): str(n) for n in declared}
    close = difflib.get_close_matches(name.casefold(), list(folded), n=1, cutoff=0.6)
    hint = f"; did you mean '${{params.{folded[close[0]]}}}'?" if close else ""
    return f"{quote(ref)}: references are written ${{params.NAME}}{hint}"


class _Checker:
    def __init__(self, doc: YamlDocument) -> None:
        self.doc = doc
        self.problems: list[Problem] = []

    def bad(self, path: str, message: str) -> None:
        self.problems.append(Problem(message, path, self.doc.file, self.doc.line_of(path)))

    def text(self, path: str, value: Any) -> str:
        """A free-text field (``description``, a parameter's ``doc`` and ``unit``): text, or
        nothing (``null``); a list or a mapping had been kept as its Python repr."""
        if value is None:
            return ""
        if isinstance(value, str):
            return value
        self.bad(path, f"expected text (quote it if it is meant as text), got {_said(value)}")
        return ""

    def unknown(self, path: str, key: str, allowed: Iterable[str]) -> None:
        self.bad(f"{path}.{key}" if path else key, "unknown field" + did_you_mean(key, allowed))


def _params(chk: _Checker, raw: Any) -> tuple[dict[str, ParamSpec], list[str]]:
    """The parameters whose specs are sound, and the names of every declared one.

    A parameter whose spec is refused still counts as declared, so a step that uses it gets no
    second problem ("is not a parameter") for the same mistake.
    """
    out: dict[str, ParamSpec] = {}
    if raw is None:
        return out, []
    if not isinstance(raw, dict):
        chk.bad("params", "expected a mapping of parameter names to {type, default, ...}")
        return out, []
    for name, spec in raw.items():
        path = f"params.{name}"
        if not NAME_RE.match(name) or "-" in name:
            chk.bad(
                path,
                "parameter names are letters, digits and _ (they appear in ${...}), "
                f"at most {NAME_LIMIT}",
            )
            continue
        if not isinstance(spec, dict):
            chk.bad(path, "expected {type: int|float|bool|str|path, default: ...}")
            continue
        for key in spec:
            if key not in PARAM_FIELDS:
                chk.unknown(path, key, PARAM_FIELDS)
        kind = spec.get("type")
        if not isinstance(kind, str) or kind not in PARAM_TYPES:
            chk.bad(
                f"{path}.type",
                f"expected one of {', '.join(PARAM_TYPES)}, got {quote(kind)}"
                + (did_you_mean(kind, PARAM_TYPES) if isinstance(kind, str) else ""),
            )
            continue
        if "default" not in spec:
            chk.bad(path, "missing default")
            continue
        if not _sound_spec(chk, path, kind, spec):
            continue  # the default cannot be checked against a broken min, max or choices
        default = spec["default"]
        if kind == "float" and isinstance(default, int) and not isinstance(default, bool):
            default = float(default)
        if kind == "path" and isinstance(default, str) and default:
            # a default path is relative to the workflow file, as its config: is
            try:
                default = _absolute(default, Path(chk.doc.file).parent)
            except ValueError as exc:
                chk.bad(f"{path}.default", str(exc))
                continue
        choices = spec.get("choices") or ()
        param = ParamSpec(
            name,
            kind,
            default,
            chk.text(f"{path}.doc", spec.get("doc")),
            chk.text(f"{path}.unit", spec.get("unit")),
            spec.get("min"),
            spec.get("max"),
            tuple(choices),
        )
        problem = param.check(default)
        if problem:
            chk.bad(f"{path}.default", problem)
            continue
        out[name] = param
    return out, [str(name) for name in raw]


def _sound_spec(chk: _Checker, path: str, kind: str, spec: Mapping[str, Any]) -> bool:
    """Check a parameter's ``min``, ``max`` and ``choices`` against its type; ``True`` if sound.

    Bounds are values of an ``int`` or ``float`` parameter's own type with ``min <= max``;
    ``choices`` is a list of values of the parameter's type. ``null`` (or no key) means none.
    """
    sound = True
    for bound in ("min", "max"):
        value = spec.get(bound)
        if value is None:
            continue
        if kind not in ("int", "float"):
            problem: str | None = f"{bound} applies to int and float parameters, not {kind}"
        elif value != value:  # .nan: every comparison with it is false, so no bound at all
            problem = f"expected a {kind} bound, got .nan (leave {bound} out for none)"
        else:
            problem = _type_of_param(kind, value)
        if problem:
            chk.bad(f"{path}.{bound}", problem)
            sound = False
    low, high = spec.get("min"), spec.get("max")
    if sound and low is not None and high is not None and high < low:
        chk.bad(f"{path}.max", f"{high} is below min ({low}): no value would fit")
        sound = False
    choices = spec.get("choices")
    if choices is not None and kind == "path":
        # a path is made absolute when read; the choices as written would never match it
        chk.bad(f"{path}.choices", "choices apply to int, float, bool and str parameters, not path")
        return False
    if choices is not None and not isinstance(choices, list):
        chk.bad(f"{path}.choices", f"expected a list of {kind} values, got {quote(choices)}")
        return False
    for i, choice in enumerate(choices or ()):
        problem = _type_of_param(kind, choice)
        if problem:
            chk.bad(f"{path}.choices[{i}]", problem)
            sound = False
    return sound


def _outputs(chk: _Checker, path: str, raw: Any, info: OpInfo | None) -> tuple[str, ...]:
    if not isinstance(raw, list) or not raw:
        chk.bad(path, "expected a list of outputs such as [result.zarr] or [plots/]")
        return ()
    names = []
    for i, item in enumerate(raw):
        m = OUTPUT_RE.match(item) if isinstance(item, str) else None
        if not m:
            chk.bad(
                f"{path}[{i}]",
                f"expected NAME.zarr or NAME/ (a plain name inside the run "
                f"directory), got {quote(item)}",
            )
            continue
        stem, folder = m.group(1), m.group(2) == "/"
        if info is not None and info.outputs is not None and stem not in info.outputs:
            chk.bad(
                f"{path}[{i}]",
                f"op {info.name} has no output {stem!r}; it writes "
                + ", ".join(info.outputs)
                + did_you_mean(stem, info.outputs),
            )
        elif info is not None and info.outputs is not None and folder != (stem in info.folders):
            # found after the cluster started, as "op returned ['field']; the workflow
            # expects outputs []"
            kind, listed = (
                ("fills a folder", f"{stem}/")
                if not folder
                else ("writes a Zarr store", f"{stem}.zarr")
            )
            chk.bad(f"{path}[{i}]", f"op {info.name} {kind} {stem}: list it as {listed}")
        names.append(item)
    declared = {OUTPUT_RE.match(n).group(1) for n in names}  # type: ignore[union-attr]
    missing = [o for o in (info.outputs if info else None) or () if o not in declared]
    if missing and len(names) == len(raw):
        # the runner refuses an op's result with an undeclared output only after the cluster
        # started and the op ran ("op emitted records for ['history']")
        assert info is not None and info.outputs is not None
        chk.bad(
            path,
            f"op {info.name} writes {', '.join(info.outputs)}: list each as NAME.zarr or "
            f"NAME/ (missing: {', '.join(missing)})",
        )
    return tuple(names)


def _check_args(
    chk: _Checker,
    path: str,
    args: dict[str, Any],
    info: OpInfo,
    raw: dict[str, Any],
    sources: Mapping[str, str],
    unresolved: bool = False,
    settled: bool = False,
) -> None:
    """Argument names against the op's signature, scalar types against its annotations, then
    the values by the op's own check.

    ``raw`` holds the arguments before substitution and ``sources`` where each parameter's
    value came from, so a refused value set by ``--set params.x=...`` says so. ``unresolved``:
    the arguments hold a reference that could not be resolved, so their values are not checked.
    ``settled``: the step completed in the run being resumed, and the resume skips it; the op's
    own check is not asked (see :func:`load_workflow`).
    """

    params = info.parameters
    found = len(chk.problems)
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    for name in args:
        if name not in params and not takes_any:
            if name == info.context_name:  # `def op(size, chunk)`: size would get the context
                func = getattr(info.target, "__name__", "op")
                where = "__init__(self, ctx, *, " if info.iterative else f"{func}(ctx, *, "
                chk.bad(
                    f"{path}.with.{name}",
                    f"op {info.name} takes no argument {name!r}: its parameter {name!r} "
                    f"receives the step context; write `def {where}{name}, ...)`",
                )
                continue
            chk.bad(
                f"{path}.with.{name}",
                f"op {info.name} takes no argument {name!r}"
                + did_you_mean(name, params)
                + f" (it takes: {', '.join(params) or 'none'})",
            )
    for name, p in params.items():
        required = p.default is inspect.Parameter.empty and p.kind in (
            inspect.Parameter.KEYWORD_ONLY,
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
        )
        if required and name not in args:
            chk.bad(f"{path}.with", f"op {info.name} needs argument {name!r}")
    if len(chk.problems) > found or unresolved or any(_references(args)):
        return  # the value checks expect the arguments complete, with values
    hints = info.hints
    refused = {
        name: problem
        for name, value in args.items()
        if name in hints and (problem := _type_problem(hints[name], value))
    }
    if not refused and info.check is not None and not settled:  # it expects the types right
        try:
            refused = dict(info.check(args))
        except Exception as exc:  # a user op's checker that breaks must not hide the workflow
            chk.bad(f"{path}.with", f"op {info.name}'s argument check failed: {exc}")
            return
    for name, problem in refused.items():
        chk.bad(f"{path}.with.{name}", problem + _origin(raw.get(name), sources))


def _origin(raw: Any, sources: Mapping[str, str]) -> str:
    """`` (from params.x, set by --set)`` when an argument's value as written, ``raw``, is a
    parameter; else nothing."""
    ref = REF_RE.fullmatch(str(raw if raw is not None else "").strip())
    if not ref:
        # "${params.size}0" is text with the value inside: 'expected int, got "640"' did not
        # say where the text came from
        inside = isinstance(raw, str) and REF_RE.search(raw)
        return f" (the text {raw!r}, with the parameter's value in it)" if inside else ""
    set_by = ", set by --set" if is_set_source(sources.get(ref.group(1))) else ""
    return f" (from params.{ref.group(1)}{set_by})"


def run_problems(workflow: Workflow, config: Any, settled: Collection[str] = ()) -> list[Problem]:
    """What the ops' ``check_run`` refuse, given the run's ``config`` and the other steps.

    Called once the config is loaded (the workflow is read first: it may name the config
    file), before the dry run's plan, the run directory and the cluster. Each problem is at
    the line of its argument, as :func:`load_workflow`'s are. The ``settled`` steps, which a
    resume skips, are not checked (as in :func:`load_workflow`).
    """
    facts = RunFacts(config, workflow.steps)
    problems = []
    for step in workflow.order:
        spec = workflow.steps[step]
        if spec.info.check_run is None or step in settled:
            continue
        try:
            refused = dict(spec.info.check_run(spec.args, facts))
        except Exception as exc:  # a user op's checker that breaks must not hide the rest
            refused = {"": f"op {spec.op}'s run check failed: {exc}"}
        problems += [argument_problem(workflow, step, n, p) for n, p in refused.items()]
    return problems


def step_sizes(
    workflow: Workflow,
    config: Any,
    settled: Collection[str] = (),
    workers: tuple[int | None, int | None] = (None, None),
    free_bytes: int | None = None,
) -> dict[str, str]:
    """What each step's op says of its size before it runs (its ``describe`` hook).

    Called once the run's checks have passed (:func:`run_problems`), so an op describes only
    arguments it accepts. Each op gets its step's arguments with its defaults for those left
    out and a :class:`RunFacts`; the ``settled`` steps, which a resume skips or continues, are
    not described, as :func:`run_problems` does not check them. ``workers`` is the planned
    cluster's (threads, processes), ``None`` each where unknown (:class:`RunFacts`), and
    ``free_bytes`` the run directory's disk's free space.

    Returns
    -------
    dict
        ``{step: text}`` in the workflow's order, for the steps whose op said something; an
        op whose ``describe`` raised says so in its text (a user op's broken hook must not
        stop a run it would not have changed).
    """
    facts = RunFacts(config, workflow.steps, *workers, free_bytes)
    sizes = {}
    for step in workflow.order:
        spec = workflow.steps[step]
        if spec.info.describe is None or step in settled:
            continue
        defaults = {
            name: p.default
            for name, p in spec.info.parameters.items()
            if p.default is not inspect.Parameter.empty
        }
        try:
            text = spec.info.describe({**defaults, **spec.args}, facts)
        except Exception as exc:
            text = f"op {spec.op}'s describe failed: {type(exc).__name__}: {exc}"
        if text:
            sizes[step] = str(text)
    return sizes


def argument_problem(workflow: Workflow, step: str, name: str, problem: str) -> Problem:
    """``problem`` with argument ``name`` of ``step`` (``""``: its ``with:``), at its line,
    saying the parameter its value came from, as :func:`load_workflow` says its own."""
    key = f"steps.{step}.with.{name}" if name else f"steps.{step}.with"
    message = problem + _origin(workflow.steps[step].written.get(name), workflow.param_sources)
    return Problem(message, key, workflow.file, _line_of(workflow.lines, key))


def _line_of(lines: Mapping[str, int], path: str) -> int | None:
    """The line of ``path``, or of its nearest ancestor that has one."""
    return YamlDocument({}, "", dict(lines)).line_of(path)


def _check_step_args(
    chk: _Checker, path: str, args: Mapping[str, Any], info: OpInfo, needs: list[str]
) -> None:
    """Each argument that names a step to read (``source``), given or by default, is among
    ``needs`` (the op would raise KeyError once the cluster had started)."""
    for name in info.step_args:
        given = name in args
        param = info.parameters.get(name)
        value = args[name] if given else getattr(param, "default", inspect.Parameter.empty)
        if not isinstance(value, str) or value in needs:
            continue  # a reference not resolved, or no default: said elsewhere
        listed = ", ".join(needs) or "no steps"
        if given:
            chk.bad(
                f"{path}.with.{name}",
                f"{value!r} is not a step this step needs (needs: {listed})"
                + did_you_mean(value, needs),
            )
        else:
            chk.bad(
                f"{path}.with",
                f"op {info.name} reads step {value!r} by default ({name}), which this step does "
                f"not need (needs: {listed}): set {name}: to one of them, or add it to needs:",
            )


#: annotations whose values a workflow's YAML can give, and the YAML name of each
_SCALARS = {bool: "bool", int: "int", float: "float", str: "str"}


def _type_problem(hint: Any, value: Any) -> str | None:
    """Why ``value`` does not fit a scalar annotation (``int``, ``float | None``, ...), if not.

    Other annotations (``Any``, lists, datasets) are not checked. ``bool`` is not an ``int``
    here, and an ``int`` is a ``float``, as YAML writes ``1`` for one.
    """
    options = typing.get_args(hint) if typing.get_origin(hint) in (Union, UnionType) else (hint,)
    if value is None and type(None) in options:
        return None
    scalars = [t for t in options if t in _SCALARS]
    if len(scalars) != len([t for t in options if t is not type(None)]):
        return None  # something we do not check
    for t in scalars:
        if t is float and isinstance(value, int | float) and not isinstance(value, bool):
            return None
        if t is int and isinstance(value, int) and not isinstance(value, bool):
            if INT_RANGE[0] <= value <= INT_RANGE[1]:
                return None
            # as for a parameter: written in with:, 99999999999999999999 passed the dry run and
            # failed in the op after the cluster had started, or ran for ever as a step count
            return f"expected int{_range(*INT_RANGE)} (a 64-bit integer), got {_said(value)}"
        if isinstance(value, t) and t is not int:
            return None
    nullable = " or null" if type(None) in options else ""
    names = " or ".join(_SCALARS[t] for t in scalars) + nullable
    hint = ""
    if int in scalars or float in scalars:  # 1_000 or 1e3 where a number belongs
        hint = number_hint(value, integer=float not in scalars)
    return f"expected {names}, got {_said(value)}{hint}"


def apply_param_overrides(
    params: Mapping[str, ParamSpec], overrides: Mapping[str, Any], problems: list[Problem]
) -> tuple[dict[str, Any], dict[str, str]]:
    """Parameter values: defaults, then ``--set params.x=value`` (checked against the type)."""
    values = {name: p.default for name, p in params.items()}
    sources = {name: "default" for name in params}
    for name, raw in overrides.items():
        if name not in params:
            problems.append(
                Problem(
                    "unknown parameter"
                    + did_you_mean(name, params)
                    + f" (parameters: {', '.join(params) or 'none'})",
                    f"params.{name}",
                    origin="--set",
                )
            )
            continue
        value = parse_scalar(raw) if isinstance(raw, str) else raw
        spec = params[name]
        empty = nothing_typed(raw, spec.type)
        if empty and spec.type not in ("str", "path"):  # a string may be empty
            problems.append(Problem(empty, f"params.{name}", origin="--set"))
            continue
        if spec.type == "float" and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if spec.type in ("str", "path") and not isinstance(value, str):
            value = str(raw)
        if spec.type == "path" and value:
            try:  # a --set path is relative to where it is typed
                value = _absolute(value, Path.cwd())
            except ValueError as exc:
                problems.append(Problem(str(exc), f"params.{name}", origin="--set"))
                continue
        problem = spec.check(value)
        if problem:  # what the parameter is, too: its name alone may not say
            problems.append(Problem(problem + spec.about, f"params.{name}", origin="--set"))
            continue
        values[name], sources[name] = value, "--set"
    return values, sources


def _absolute(path: str, base: Path) -> str:
    """``path`` with ``~`` expanded, made absolute against ``base``.

    Raises
    ------
    ValueError
        Saying why ``path`` is not a usable path (an unknown ``~user``, a NUL character).
    """
    if "\0" in path:
        raise ValueError(f"expected a path, got {quote(path)} (it contains a NUL character)")
    try:
        return str((base / Path(path).expanduser()).resolve())
    except RuntimeError:  # expanduser: no such user, or no home directory to put for ~
        user = path.split("/", 1)[0]
        raise ValueError(f"{user}: no such user's home directory here ({quote(path)})") from None


def load_workflow(
    path: str | Path,
    params: Mapping[str, Any] | None = None,
    given: Sequence[str] | None = None,
    settled: Collection[str] = (),
) -> Workflow:
    """Read and check a workflow file.

    Parameters
    ----------
    path
        The workflow YAML.
    params
        ``{name: value}`` overrides (values may be strings, parsed as YAML).
    given
        The ``--set`` items as typed, in order (``params`` holds the last of each): a parameter
        given more than once says so in its source
        (:func:`~openclaw_dask.config.loader.set_source`).
    settled
        Steps that a resume skips (they completed, as they are): their arguments' names and
        types are checked, not their values by the op's own check. Those passed when the run
        started, and a check of what lies outside the run (another run's state that a
        climate step started from, deleted since) would refuse to finish the run.

    Returns
    -------
    Workflow

    Raises
    ------
    ConfigError
        With every problem found.
    """
    doc = read_yaml(path)
    file = str(path)  # (`path` names each step's dotted path below)
    chk = _Checker(doc)
    data = doc.data
    for key in data:
        if key not in TOP_FIELDS:
            chk.unknown("", key, TOP_FIELDS)
    name = data.get("name")
    if not isinstance(name, str) or not NAME_RE.match(name):
        chk.bad(
            "name",
            f"expected a name of letters, digits, - and _ (at most {NAME_LIMIT}), got "
            + quote(name),
        )
    description = chk.text("description", data.get("description"))
    config_path = data.get("config")
    if config_path is not None:
        if not isinstance(config_path, str):
            chk.bad("config", "expected a path to an openclaw.config")
            config_path = None
        else:
            resolved = (Path(path).parent / config_path).resolve()
            if not resolved.is_file():
                chk.bad(
                    "config", f"{not_a_file(str(resolved), config_path)} (looked at {resolved})"
                )
            config_path = str(resolved)
    param_specs, declared = _params(chk, data.get("params"))
    # what a "did you mean" may offer: names that pass their rule (not the refused "size-x")
    named = [d for d in declared if NAME_RE.match(d) and "-" not in d]
    # a --set of a parameter whose spec was refused waits until the spec is fixed
    overrides = {k: v for k, v in (params or {}).items() if k in param_specs or k not in declared}
    values, sources = apply_param_overrides(param_specs, overrides, chk.problems)
    for param, texts in repeated_sets(given, "params.").items():
        if sources.get(param) == "--set":  # the last one, which was taken
            sources[param] = set_source(texts)

    beside = Path(path).parent  # (where a user op's module file may be, and a config:)
    from_beside = False  # an op's module was imported from there: it (and its helpers) go
    steps_raw = data.get("steps")
    steps: dict[str, StepSpec] = {}
    if not isinstance(steps_raw, dict) or not steps_raw:
        chk.bad("steps", "expected a mapping of step names to {op, with, needs, outputs}")
        steps_raw = {}
    output_owner: dict[str, str] = {}
    unimportable: dict[str, str] = {}  # a module whose import failed: the first step that said it
    for step, raw in steps_raw.items():
        path = f"steps.{step}"
        if not NAME_RE.match(step):
            chk.bad(path, f"step names are letters, digits, - and _ (at most {NAME_LIMIT})")
            continue
        if not isinstance(raw, dict):
            chk.bad(path, "expected {op, with, needs, outputs}")
            continue
        for key in raw:
            if key not in STEP_FIELDS:
                chk.unknown(path, key, STEP_FIELDS)
        op_name = raw.get("op")
        info = None
        if op_name is None or op_name == "":
            chk.bad(f"{path}.op", "missing op (a registered name or pkg.module:function)")
        elif not isinstance(op_name, str):
            chk.bad(
                f"{path}.op",
                "expected an op name (a registered name or pkg.module:function), got "
                + quote(op_name),
            )
        else:
            try:
                info = resolve_op(op_name, beside)
                module, colon, _ = op_name.partition(":")  # (as resolve_op splits it)
                if colon and shipped_module(module, beside) is not None:
                    from_beside = True
            except OpError as exc:
                module = op_name.partition(":")[0]
                first = unimportable.setdefault(module, path) if ":" in op_name else path
                said = str(exc)
                if first != path and said.startswith(f"cannot import {module!r}"):
                    # one broken module is one problem, said in full once: a syntax error
                    # in it had been printed again for every step that uses one of its ops
                    said = f"cannot import {module!r} for op {op_name!r}: see {first}.op"
                chk.bad(f"{path}.op", said)
        args = raw.get("with") or {}
        if not isinstance(args, dict):
            chk.bad(f"{path}.with", "expected a mapping of argument names to values")
            args = {}
        malformed = False
        for arg, value in args.items():
            for ref in _malformed_references(value):
                chk.bad(f"{path}.with.{arg}", malformed_reference_problem(ref, named))
                malformed = True
        for arg, value in args.items():
            # at the argument (its own line in block style), not at "with"
            for ref in dict.fromkeys(_references(value)):
                if ref not in declared:
                    chk.bad(
                        f"{path}.with.{arg}",
                        f"${{params.{ref}}} is not a parameter" + did_you_mean(ref, named),
                    )
        needs = raw.get("needs") or []
        if isinstance(needs, str):
            needs = [needs]
        if not isinstance(needs, list) or not all(isinstance(n, str) for n in needs):
            chk.bad(f"{path}.needs", "expected a list of step names")
            needs = []
        for i, need in enumerate(needs):
            if need in needs[:i]:  # as outputs: a name twice is a slip for another step
                chk.bad(f"{path}.needs[{i}]", f"step {need!r} is listed twice")
            elif need not in steps_raw:
                chk.bad(
                    f"{path}.needs[{i}]",
                    f"no step named {need!r}"
                    + did_you_mean(need, [n for n in steps_raw if NAME_RE.match(str(n))]),
                )
        outputs = _outputs(chk, f"{path}.outputs", raw.get("outputs"), info)
        for out in outputs:
            stem = OUTPUT_RE.match(out).group(1)  # type: ignore[union-attr]
            if output_owner.get(stem) == step:
                chk.bad(f"{path}.outputs", f"output {stem!r} is listed twice")
            elif stem in output_owner:
                chk.bad(
                    f"{path}.outputs",
                    f"output {out!r} is also written by step "
                    f"{output_owner[stem]!r}; output names must be unique",
                )
            output_owner.setdefault(stem, step)
        resolved_args = (
            _substitute(args, values)
            if not any(r not in param_specs for r in _references(args))
            else args
        )
        if info is not None:
            # a malformed reference was said above; its text is not a value to type-check
            _check_args(chk, path, resolved_args, info, args, sources, malformed, step in settled)
            if all(n in steps_raw for n in needs):  # else the unknown need is the problem
                _check_step_args(chk, path, resolved_args, info, needs)
        steps[step] = StepSpec(
            step,
            str(op_name),
            info,
            resolved_args,  # type: ignore[arg-type]
            tuple(needs),
            outputs,
            chk.text(f"{path}.description", raw.get("description")),
            args,
        )

    order: tuple[str, ...] = ()
    sorter = graphlib.TopologicalSorter(
        {s: [n for n in st.needs if n in steps] for s, st in steps.items()}
    )
    try:
        order = tuple(sorter.static_order())
    except graphlib.CycleError as exc:
        cycle = exc.args[1]
        chk.bad(
            f"steps.{cycle[0]}.needs",
            "steps depend on each other in a cycle: " + " -> ".join(cycle),
        )
    if chk.problems:
        raise ConfigError(chk.problems)
    return Workflow(
        str(name),
        description,
        file,
        config_path,
        param_specs,
        values,
        steps,
        order,
        sources,
        tuple(modules_beside(beside)) if from_beside else (),
        doc.lines,
    )
