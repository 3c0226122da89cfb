"""Ops: the registry of built-in steps and the import of user ops (``pkg.module:function``).

An op is either a function ``fn(ctx, **args) -> {output name: xarray.Dataset}`` (a *map* op) or
a subclass of :class:`~openclaw_dask.workflows.context.IterativeOp` (an op that advances a state
and is checkpointed every ``distributed.sync_interval`` steps). Built-in ops register with
:func:`register`; other packages can add theirs through the ``openclaw_dask.ops`` entry-point
group (the xarray-backend idea), and a workflow can name any importable op by path. Nothing is
ever ``eval``-ed.

A user op's module may also be a file beside the workflow file (``op: myops:scale`` with
``myops.py`` in the workflow's folder) that is not importable from the environment: it is
imported from there (the folder joins the end of ``sys.path``, so it never shadows an installed
module), and :func:`ship_modules` uploads it to the cluster's scheduler and workers with Dask's
own upload plugins, so that their processes, which were not started with that folder on their
path (a ``cluster up`` cluster, SSH nodes, mpirun ranks), unpickle its functions. It had
been "No module named 'myops'" unless the user set ``PYTHONPATH`` on every node.

An op may also check its arguments' *values* before anything starts: ``register(...,
check=fn)`` for a function op, or a ``check_args`` static method on an :class:`IterativeOp`.
``fn(args)`` gets the step's ``with:`` values (parameters substituted) and returns ``{argument:
problem}``; the workflow check reports each one at its file, line and dotted key, so a value the
op would refuse (a grid that does not divide the sphere) fails in ``submit --dry-run`` and before
the cluster starts, not after a step has run.

A value that is wrong only with the run's config or another step's arguments (climate.ebm's
``bands``: the forcing step's grid and ``distributed.batch_size``) is checked by
``check_run=fn`` (or a ``check_run`` static method): ``fn(args, run)`` also gets a
:class:`RunFacts`, once the config is loaded: in ``submit --dry-run`` too, and before the run
directory is made or the cluster starts.

An op may also say how big its step is before it runs: ``register(..., describe=fn)`` (or a
``describe`` static method on an :class:`IterativeOp`). ``fn(args, run)`` gets the step's
arguments (the op's defaults for those left out) and the :class:`RunFacts`, and returns a few
lines of text (or ``None``: nothing to say) in exact terms the op knows without running: its
grid, its steps, the bytes its outputs take before compression. ``submit --dry-run`` prints
them under the plan, a real run's start says each as one line, and both records keep them
under ``sizes``. A step size is a count, never a guessed time: the op knows its work, not the
machine's speed.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib
import importlib.metadata
import inspect
import os
import socket
import sys
import threading
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openclaw_dask.config.errors import closest, did_you_mean

ENTRY_POINT_GROUP = "openclaw_dask.ops"
#: Modules whose import registers the built-in ops, by the family their ops' names begin with:
#: a workflow is resolved importing only its families' (the climate model's numba took ~0.4 s
#: of every `submit` of the example workflow, and of each of the test suite's hundreds).
BUILTIN_MODULES = {
    "example": "openclaw_dask.workflows.ops.example",
    "climate": "openclaw_dask.workflows.ops.climate",
}

#: ``check(args) -> {argument: problem}``: an op's check of its ``with:`` values.
ArgsCheck = Callable[[Mapping[str, Any]], Mapping[str, str]]


@dataclass(frozen=True)
class RunFacts:
    """What an op's ``check_run`` and ``describe`` see besides its own arguments.

    Parameters
    ----------
    config
        The run's :class:`~openclaw_dask.config.Config` (``config["distributed.batch_size"]``).
    steps
        Every step of the workflow by name (:class:`~openclaw_dask.workflows.spec.StepSpec`:
        its ``info`` and, by ``arg(name)``, an argument as given or the op's default).
    threads, processes
        The worker threads and processes of the cluster the run plans (a ``cluster up``
        cluster's as it runs), for ``describe``; ``None`` where they are known only once it
        runs (a scheduler given by address, SSH nodes that each decide their own), and always
        for ``check_run``, which runs before the plan.
    free_bytes
        The free space of the disk the run directory is (or will be) on, for ``describe``;
        ``None`` where unknown, and always for ``check_run``.
    """

    config: Any
    steps: Mapping[str, Any]
    threads: int | None = None
    processes: int | None = None
    free_bytes: int | None = None


#: ``check_run(args, run) -> {argument: problem}``: a check that needs the config or the
#: other steps (:class:`RunFacts`).
RunCheck = Callable[[Mapping[str, Any], RunFacts], Mapping[str, str]]

#: ``describe(args, run) -> text | None``: the step's size, said before it runs (lines of
#: text; the first the summary).
Describe = Callable[[Mapping[str, Any], RunFacts], str | None]

_REGISTRY: dict[str, OpInfo] = {}
#: Ops of installed packages (entry points) that cannot be used, and why: said to a workflow
#: that names one, never to the others
_BROKEN: dict[str, str] = {}
_loaded = False
#: set while one thread loads the built-in ops (see :func:`_load_builtins`)
_loading = False
_load_lock = threading.RLock()


class OpError(Exception):
    """An op name that does not resolve (the message lists what is available)."""


@dataclass(frozen=True)
class OpInfo:
    """What the runner and the validator know about an op.

    Parameters
    ----------
    name
        Registered name or import path.
    target
        The function, or the :class:`IterativeOp` subclass.
    iterative
        True for iterative ops.
    outputs
        Output names the op produces, or ``None`` when it does not declare them.
    check
        ``check(args) -> {argument: problem}`` for the ``with:`` values, or ``None``.
    folders
        Which of ``outputs`` are folders the op fills (``plots/``); the others are Zarr stores.
    step_args
        Arguments whose value names a step the op reads (``source``): it must be among the
        step's ``needs:``.
    check_run
        ``check_run(args, run) -> {argument: problem}`` for the values that are wrong only with
        the run's config or another step's arguments (:class:`RunFacts`), or ``None``.
    describe
        ``describe(args, run) -> text | None``: the step's size before it runs, or ``None``
        for an op that says nothing of it.
    """

    name: str
    target: Any
    iterative: bool
    outputs: tuple[str, ...] | None
    check: ArgsCheck | None = None
    folders: tuple[str, ...] = ()
    step_args: tuple[str, ...] = ()
    check_run: RunCheck | None = None
    describe: Describe | None = None

    @property
    def parameters(self) -> Mapping[str, inspect.Parameter]:
        """The op's arguments (what ``with:`` may give), without the context."""
        func = self.target.__init__ if self.iterative else self.target
        params = list(inspect.signature(func).parameters.values())
        skip = 2 if self.iterative else 1  # (self,) ctx
        return {p.name: p for p in params[skip:] if p.kind is not inspect.Parameter.VAR_POSITIONAL}

    @property
    def context_name(self) -> str | None:
        """The name of the parameter that receives the step context (``ctx``), if it has one."""
        func = self.target.__init__ if self.iterative else self.target
        params = list(inspect.signature(func).parameters.values())
        slot = params[1 if self.iterative else 0 : 2 if self.iterative else 1]
        return slot[0].name if slot and slot[0].kind is not slot[0].VAR_POSITIONAL else None

    @property
    def builtin(self) -> bool:
        """Whether the op is one of the package's own (they compute on the host)."""
        module = getattr(self.target, "__module__", None) or ""
        return module.partition(".")[0] == "openclaw_dask"

    @functools.cached_property
    def code(self) -> str | None:
        """A hash of a user op's source: its function, or its class with every method.

        ``None`` for the built-in ops (their code is the package's, whose version run.json
        records) and for an op Python has no source of. Cached: the source as imported, not as
        edited during the run. A resume runs a completed step again when its op's code changed
        since (the fix of a wrong result); only the op's own source counts, so fixing one op
        never runs the completed steps of the others in its module again.
        """
        if self.builtin:
            return None
        try:
            source = inspect.getsource(self.target)
        except (OSError, TypeError):  # made at run time, or compiled
            return None
        return hashlib.sha256(source.encode()).hexdigest()[:16]

    @property
    def hints(self) -> dict[str, Any]:
        """The arguments' resolved type annotations (empty when they cannot be resolved)."""
        func = self.target.__init__ if self.iterative else self.target
        try:
            hints = typing.get_type_hints(func)
        except Exception:  # a name only imported for type checkers: check nothing
            return {}
        return {name: hints[name] for name in self.parameters if name in hints}


#: What an IterativeOp subclass must define (``total_steps`` may be a class attribute).
ITERATIVE_METHODS = ("total_steps", "initial_state", "advance")


def _info(
    name: str,
    target: Any,
    outputs: tuple[str, ...] | None,
    check: ArgsCheck | None = None,
    step_args: tuple[str, ...] = (),
    check_run: RunCheck | None = None,
    describe: Describe | None = None,
) -> OpInfo:
    from openclaw_dask.workflows.context import IterativeOp

    folders = tuple(o[:-1] for o in outputs or () if o.endswith("/"))
    outputs = None if outputs is None else tuple(o.rstrip("/") for o in outputs)

    iterative = inspect.isclass(target) and issubclass(target, IterativeOp)
    if iterative:
        missing = [m for m in ITERATIVE_METHODS if getattr(target, m) is getattr(IterativeOp, m)]
        if missing:  # found when the workflow is read, not as NotImplementedError mid-run
            raise OpError(
                f"{name} does not define {' and '.join(missing)} (an IterativeOp defines "
                f"{', '.join(ITERATIVE_METHODS)}; finish is optional)"
            )
        outputs = _declared_outputs(name, target.outputs)
        check = check or target.check_args
        check_run = check_run or target.check_run
        describe = describe or target.describe
        step_args = step_args or tuple(target.step_args)
        _check_signature(name, target.__init__, 2)  # (self, ctx)
    elif not callable(target):
        raise OpError(f"{name} is not a function or an IterativeOp subclass")
    else:
        _check_signature(name, target, 1)
    return OpInfo(name, target, iterative, outputs, check, folders, step_args, check_run, describe)


def _declared_outputs(name: str, outputs: Any) -> tuple[str, ...]:
    """An :class:`IterativeOp`'s ``outputs`` as names, checked when the workflow is read.

    ``outputs = "rec"`` (a string for a tuple) was read letter by letter, and the workflow's
    ``rec.zarr`` was told "op has no output 'rec'; it writes r, e, c"; a name that is no output
    name (``"../rec"``) asked the user to list it, as the output rule then refused.

    Raises
    ------
    OpError
        ``outputs`` is not a tuple or list of names (a letter, then letters, digits, ``-``
        and ``_``), or lists one twice; the message shows what to write.
    """
    from openclaw_dask.workflows.spec import NAME_LIMIT, NAME_RE

    where = f"{name}.outputs"
    if isinstance(outputs, str):
        raise OpError(
            f"{where} must be a tuple of names, got the string {outputs!r} (write ({outputs!r},))"
        )
    if not isinstance(outputs, tuple | list):
        raise OpError(
            f"{where} must be a tuple of names, got {_plain_type(outputs)} {outputs!r}"
            " (write ('name', ...))"
        )
    for output in outputs:
        if not isinstance(output, str):
            raise OpError(
                f"{where} must be a tuple of names, got {_plain_type(output)} {output!r} in it"
            )
        if not NAME_RE.match(output):
            stem = output.removesuffix(".zarr").rstrip("/")
            hint = (
                f" (write {stem!r}: the workflow lists it as {stem}.zarr)"
                if NAME_RE.match(stem)
                else ""
            )
            raise OpError(
                f"{where}: {output!r} is not an output name (a letter, then letters, digits, - "
                f"and _, at most {NAME_LIMIT} characters: the name of NAME.zarr in the run "
                f"directory){hint}"
            )
    twice = sorted({o for o in outputs if outputs.count(o) > 1})
    if twice:
        raise OpError(f"{where} lists {', '.join(map(repr, twice))} more than once")
    return tuple(outputs)


def _plain_type(value: Any) -> str:
    """``a dict``, ``an int``: a value's type, as a message says it."""
    kind = type(value).__name__
    return f"{'an' if kind[:1] in 'aeiou' else 'a'} {kind}"


def _check_signature(name: str, func: Any, leading: int) -> None:
    """``func`` takes ``leading`` positional arguments (the step context last), then the
    ``with:`` arguments by name.

    Raises
    ------
    OpError
        For a signature Python cannot read (a builtin: its arguments could not be checked),
        no room for the context, or a positional-only argument after it (``with:`` passes
        every argument by name).
    """
    try:
        params = list(inspect.signature(func).parameters.values())
    except (TypeError, ValueError):
        raise OpError(
            f"{name} has no signature Python can read (a builtin or C function), so its "
            "arguments cannot be checked: wrap it in a function `def op(ctx, *, argument=...)`"
        ) from None
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    slots = 0  # how many positional arguments it takes before the first by-name one
    for p in params:
        if p.kind is inspect.Parameter.VAR_POSITIONAL:
            slots = leading
        if p.kind not in positional:
            break
        slots += 1
    if slots < leading:
        raise OpError(
            f"{name} takes no step context: an op is a function "
            "`def op(ctx, *, argument=...)` that receives the step's context first"
        )
    for p in params[leading:]:
        if p.kind is inspect.Parameter.POSITIONAL_ONLY:
            raise OpError(
                f"{name}'s argument {p.name!r} is positional-only, but with: passes arguments "
                f"by name: drop the / from its signature"
            )


def register(
    name: str,
    outputs: tuple[str, ...] | None = None,
    check: ArgsCheck | None = None,
    step_args: tuple[str, ...] = (),
    check_run: RunCheck | None = None,
    describe: Describe | None = None,
) -> Callable[[Any], Any]:
    """Decorator: register a built-in op under ``name`` (``family.op``).

    Parameters
    ----------
    name
        The name workflows use in ``op:``.
    outputs
        The outputs a map op writes: the names of the datasets it returns (Zarr stores) and,
        ending in ``/``, the folders it fills itself (``plots/``). Iterative ops declare
        ``outputs`` as a class attribute (all Zarr stores).
    check
        ``check(args) -> {argument: problem}``: what the op would refuse in its ``with:``
        values, found before the run starts (iterative ops define ``check_args`` instead).
    step_args
        Arguments that name a step whose outputs the op reads (``source``); the workflow check
        requires each among the step's ``needs:`` (iterative ops set ``step_args``).
    check_run
        ``check_run(args, run) -> {argument: problem}``: what the op would refuse given the
        run's config and the other steps (:class:`RunFacts`), found once the config is loaded,
        before the run starts (iterative ops define ``check_run`` instead).
    describe
        ``describe(args, run) -> text | None``: the step's size in exact terms (its grid, its
        steps, its outputs' bytes), said by the dry run and at the start of a run (iterative
        ops define ``describe`` instead).
    """

    def decorate(target: Any) -> Any:
        info = _info(name, target, outputs, check, step_args, check_run, describe)
        target.__openclaw_op__ = info
        _REGISTRY[name] = info
        return target

    return decorate


def _load_builtins() -> None:
    global _loaded, _loading
    if _loaded:
        return
    # marked loaded only once the modules are in, under a lock: marked first, a second thread
    # (two run_workflow calls of a thread pool's sweep) found the registry "loaded" and still
    # empty: "unknown op 'example.field'; available: " (nothing). The same thread coming back
    # from one of these imports finds _loading set and goes on with what is registered.
    with _load_lock:
        if _loaded or _loading:
            return
        _loading = True
        try:
            for module in BUILTIN_MODULES.values():
                importlib.import_module(module)
            _load_entry_points()
            _loaded = True
        finally:
            _loading = False


def _load_entry_points() -> None:
    """Register the installed packages' ops not registered yet (a broken one is tried again)."""
    with _load_lock:  # (resolve_op calls it again for an unknown name, from any thread)
        _register_entry_points()


def _register_entry_points() -> None:
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        if ep.name not in _REGISTRY:
            try:
                _REGISTRY[ep.name] = _info(ep.name, ep.load(), None)
                _BROKEN.pop(ep.name, None)
            except OpError as exc:
                _BROKEN[ep.name] = str(exc)
            except Exception as exc:  # the package's module does not import
                _BROKEN[ep.name] = f"cannot load op {ep.name!r} ({ep.value}): {exc}"


def available_ops() -> dict[str, OpInfo]:
    """Every registered op by name."""
    _load_builtins()
    return dict(sorted(_REGISTRY.items()))


def resolve_op(name: str, beside: Path | None = None) -> OpInfo:
    """Find the op a workflow names.

    Parameters
    ----------
    name
        A registered name, or ``module:attribute``.
    beside
        The workflow file's folder: a top-level module the environment does not have is
        imported from ``beside/<module>.py`` when that file exists (:func:`module_beside`).

    Raises
    ------
    OpError
        Unknown name (with the list of registered ops), a module that does not import, or a
        missing attribute.
    """
    if ":" in name:
        module_name, _, attr = name.partition(":")
        try:
            module = _import(module_name, beside)
        except ImportError as exc:
            raise OpError(
                f"cannot import {module_name!r} for op {name!r}: {exc}"
                + _beside_hint(module_name, exc, beside)
            ) from None
        except (Exception, SystemExit) as exc:  # its own code failed: a syntax error, exit()
            raise OpError(
                f"cannot import {module_name!r} for op {name!r}: {type(exc).__name__}: {exc}"
            ) from None
        missing = object()
        try:
            target = getattr(module, attr, missing)
        except Exception as exc:  # a module __getattr__ that raises
            raise OpError(
                f"cannot get {attr!r} from {module_name!r} for op {name!r}: "
                f"{type(exc).__name__}: {exc}"
            ) from None
        if target is missing:
            # what an op can be: functions and classes defined there, not imports like np
            names = [
                n
                for n, v in vars(module).items()
                if not n.startswith("_") and callable(v) and not inspect.ismodule(v)
            ]
            raise OpError(
                f"module {module_name!r} has no {attr!r}"
                + did_you_mean(attr, names)
                + _shadowed(module, module_name, beside)
            )
        # its own registration only: a subclass of a built-in IterativeOp inherited the
        # attribute, and the built-in ran in its place without a word (its advance unseen)
        info = getattr(target, "__dict__", {}).get("__openclaw_op__")
        return info if isinstance(info, OpInfo) else _info(name, target, None)
    family = BUILTIN_MODULES.get(name.partition(".")[0])
    if family is not None:
        # that family's module alone; importing it registers its ops (Python's import lock
        # holds a second thread until the module, and so its registrations, are whole)
        importlib.import_module(family)
        if name in _REGISTRY:
            return _REGISTRY[name]
    ops = available_ops()
    if name not in ops:
        # read once a process, the installed ops missed a package installed since (a
        # notebook's %pip install) or fixed since: "unknown op" until the kernel restarted
        _load_entry_points()
        ops = available_ops()
    if name in ops:
        return ops[name]
    if name in _BROKEN:
        raise OpError(_BROKEN[name])
    # the family left out ("field" for example.field): the op whose own name it is
    by_leaf = [op for op in ops if op.rpartition(".")[2] == name]
    near = f"; did you mean {by_leaf[0]!r}?" if len(by_leaf) == 1 else did_you_mean(name, ops)
    raise OpError(
        f"unknown op {name!r}{near}; available: "
        f"{', '.join(ops)} (or a user op as pkg.module:function)"
    )


def _beside_hint(module_name: str, exc: ImportError, beside: Path | None) -> str:
    """The module file beside the workflow that a misspelt module name was meant to be.

    ``op: myopz:double`` beside ``myops.py`` had said only "No module named 'myopz'": the
    user's own file, a letter away, went unnamed (a did-you-mean follows every other typo).
    """
    missing = getattr(exc, "name", None)
    if beside is None or not isinstance(exc, ModuleNotFoundError) or missing != module_name:
        return ""  # a dotted package's module, or a module the op's file itself imports
    try:
        names = [p.stem for p in beside.glob("*.py") if p.stem.isidentifier()]
    except OSError:
        return ""
    close = closest(module_name, names)
    if close is None:
        return f" (and there is no {module_name}.py beside the workflow, in {beside})"
    return f"; did you mean '{close}' ({close}.py beside the workflow)?"


def _shadowed(module: Any, module_name: str, beside: Path | None) -> str:
    """What a file beside the workflow that an installed module of its name hides is told.

    ``array.py`` beside the workflow is never imported while Python has an ``array`` (the
    folder comes last on the path, so it never shadows one): "module 'array' has no
    'hot_square'" alone left the user looking for a typo in a file that was not read.
    """
    file = module_beside(module_name, beside)
    loaded = getattr(module, "__file__", None)
    if file is None or (loaded and Path(loaded).resolve() == file):
        return ""
    where = f"the installed module {loaded}" if loaded else "a module built into Python"
    return (
        f" ({module_name!r} is {where}, not {file.name} beside the workflow: rename "
        f"{file.name} (and the op: names that use it))"
    )


#: The modules imported from beside a workflow file: name -> (file, sha256 of it as imported).
_BESIDE: dict[str, tuple[str, str]] = {}


def _import(module_name: str, beside: Path | None) -> Any:
    """``import module_name``, else from the workflow's folder ``beside`` (see the module doc).

    A module of that folder that was edited since this process imported it is imported
    afresh (:func:`_forget_edited`).
    """
    _forget_edited()
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        file = module_beside(module_name, beside)
        if exc.name != module_name or file is None:
            raise
        folder = str(file.parent)
        if folder not in sys.path:
            sys.path.append(folder)  # last: a user's numpy.py must not shadow numpy
        module = importlib.import_module(module_name)
    for file in modules_beside(beside):  # the op module and the helpers it imported there
        _BESIDE.setdefault(Path(file).stem, (file, _sha256(file)))
    return module


def file_sha256(file: str | os.PathLike[str]) -> str:
    """The sha256 of a file's bytes, as run.json, a resume and a shared cluster's module claims
    compare op modules by (raises ``OSError`` for a file that cannot be read)."""
    return hashlib.sha256(Path(file).read_bytes()).hexdigest()


def _sha256(file: str) -> str | None:
    try:
        return file_sha256(file)
    except OSError:  # deleted since
        return None


def _forget_edited() -> None:
    """Drop the modules imported from beside a workflow from ``sys.modules`` once one of them
    was edited, so that they are imported again as they are now.

    In a long-lived process (a notebook) the second run of a workflow whose op module the
    user had fixed in between ran the module as first imported, while ``run.json`` recorded
    the edited file's hash and the op's code as edited (its source is read from the file):
    a record of code that never ran. All of them go, as an op module that imported a name from
    an edited helper must run its import again.
    """
    if not any(_sha256(file) != digest for file, digest in _BESIDE.values()):
        return
    for name, (file, _) in list(_BESIDE.items()):
        module = sys.modules.get(name)
        loaded = getattr(module, "__file__", None)
        if loaded and Path(loaded).resolve() == Path(file):
            del sys.modules[name]
            # its bytecode is checked by the file's mtime (in seconds) and size: an edit in
            # the same second that kept the size ("2" -> "3") had been read from it
            with contextlib.suppress(OSError, TypeError):
                os.unlink(module.__cached__)
        del _BESIDE[name]
    importlib.invalidate_caches()


def shipped_module(module_name: str, beside: Path | None) -> Path | None:
    """The file beside the workflow that module ``module_name`` was imported from, or ``None``
    (an installed module of the same name, imported instead, is never shipped: uploaded, it
    would shadow that module on the workers)."""
    file = module_beside(module_name, beside)
    module = sys.modules.get(module_name)
    loaded = getattr(module, "__file__", None)
    return file if file is not None and loaded and Path(loaded).resolve() == file else None


def module_beside(module_name: str, beside: Path | None) -> Path | None:
    """``beside/<module_name>.py`` when ``module_name`` is a top-level name and the file exists.

    Parameters
    ----------
    module_name
        The module part of a ``module:attribute`` op name.
    beside
        The workflow file's folder, or ``None``.

    Returns
    -------
    Path or None
        The file's resolved path.
    """
    if beside is None or not module_name.isidentifier():  # (a dotted name is a package's)
        return None
    file = (beside / f"{module_name}.py").resolve()
    return file if file.is_file() else None


def modules_beside(beside: Path | None) -> list[str]:
    """The files of the top-level modules this process imported from the folder ``beside``:
    the op modules and the helpers they import from there, imported ones first.

    ``sys.modules`` ends with a module once its import has finished (importlib moves it
    there), after the modules it imported: the order :func:`ship_modules` needs, as a worker
    imports each file as it arrives.
    """
    if beside is None:
        return []
    folder = beside.resolve()
    found = []
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if file and "." not in name:
            path = Path(file).resolve()
            if path.parent == folder and path.name == f"{name}.py":
                found.append(str(path))
    return found


def ship_modules(client: Any, files: Sequence[str]) -> None:
    """Upload op modules found beside the workflow file to ``client``'s scheduler and workers.

    Dask's own upload plugins (what ``Client.upload_file`` registers), named by each file and
    the content of them all rather than ``upload_file``'s new name per call: a long-lived
    ``cluster up`` cluster keeps one copy per module (a run of the same files registers
    nothing; an edit of any of them sends them all again, in order, so that a module that
    imported a name from an edited helper is imported again too), which workers that start
    later (restarted, added) also receive.

    Parameters
    ----------
    client
        The run's ``distributed.Client``.
    files
        Paths of ``.py`` files, the imported before their importers (``Workflow.op_files``).
    """
    from distributed.diagnostics.plugin import SchedulerUploadFile, UploadFile

    if not files:
        return
    content = hashlib.sha256()
    for file in files:
        content.update(Path(file).read_bytes())
    version = content.hexdigest()[:12]
    # a scheduler in this process (a local cluster's) has the modules already: uploaded, they
    # would be imported again here, under the op objects this run has already resolved
    here = tuple(client.run_on_scheduler(_process)) == _process()  # (msgpack: a list)
    for file in files:
        prefix = f"{SHIPPED}{Path(file).name}-"
        name = prefix + version
        held = client.run_on_scheduler(_plugins_named, prefix)
        if name in held:  # these very files, from an earlier run on this cluster
            continue
        for earlier in held:  # an earlier version of the file
            with contextlib.suppress(ValueError):
                client.unregister_scheduler_plugin(earlier)
            with contextlib.suppress(ValueError):
                client.unregister_worker_plugin(earlier)
        if not here:
            client.register_plugin(SchedulerUploadFile(file), name=name)
        client.register_plugin(UploadFile(file), name=name)


#: The start of the plugin names under which :func:`ship_modules` uploads a module.
SHIPPED = "openclaw-op-module-"


def _process() -> tuple[str, int]:
    """This process, as another one on another host would not be."""
    return socket.gethostname(), os.getpid()


def _plugins_named(prefix: str, dask_scheduler: Any = None) -> list[str]:
    """The scheduler's and its workers' plugins whose names start with ``prefix``."""
    names = {*dask_scheduler.plugins, *dask_scheduler.worker_plugins}
    return sorted(n for n in names if n.startswith(prefix))
