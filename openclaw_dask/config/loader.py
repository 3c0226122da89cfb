"""Find, read, override and check ``openclaw.config``: the resolved :class:`Config`.

Search order for the file: ``--config``, ``$OPENCLAW_CONFIG``, ``./openclaw.config``,
``~/.config/openclaw/openclaw.config``, then the built-in defaults alone. On top of the file,
``OPENCLAW_SECTION__KEY`` environment variables and then ``--set section.key=value`` win.
Every resolved value remembers where it came from (``config show --sources``).

Dask's own ``dask.config`` merges YAML and ``DASK_*`` variables but keeps neither line numbers
nor sources, and ignores unknown keys; we need all three, so this small loader is ours
(DESIGN.md notes). Values are parsed as YAML scalars in both env and ``--set``, so the same
strict types apply everywhere: ``OPENCLAW_PARALLEL__THREAD_POOL_SIZE=yes`` is an error.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openclaw_dask.config.arguments import check_instance, check_overrides, check_path
from openclaw_dask.config.errors import CONTROL_RE, ConfigError, Problem, quote, shorten
from openclaw_dask.config.schema import KEYS, KEYS_BY_PATH, defaults, groups
from openclaw_dask.config.suggest import suggest_env, suggest_key
from openclaw_dask.config.types import InvalidValueError, absolute_path, is_file_path, join_path
from openclaw_dask.config.validate import check_static
from openclaw_dask.config.yamlsource import YamlDocument, nothing_typed, parse_scalar, read_yaml

ENV_PREFIX = "OPENCLAW_"
#: Environment variables of ours that are not config keys.
ENV_RESERVED = {"OPENCLAW_CONFIG", "OPENCLAW_STATE_DIR", "OPENCLAW_DEBUG"}
USER_CONFIG = Path("~/.config/openclaw/openclaw.config")

#: Keys whose values must agree on every node (the fingerprint of the runtime checks them):
#: what the node computes and how, not where it is or how it is reached.
NODE_RELEVANT_SECTIONS = (
    "parallel.deterministic_mode",
    "distributed.sync_interval",
    "distributed.batch_size",
    "distributed.compression",
    "distributed.compression_level",
    "memory.allocator",
    "storage.",
)
#: Node-relevant keys that change how a run goes, never what it computes: a resumed run may
#: change them (another machine may lack the allocator), and completed steps stay completed.
RUN_ONLY_KEYS = ("memory.allocator", "distributed.compression", "distributed.compression_level")


@dataclass(frozen=True)
class Config:
    """A validated ``openclaw.config``: flat dotted values plus where each came from.

    Parameters
    ----------
    values
        ``{dotted key: normalised value}`` for every key of the schema.
    sources
        ``{dotted key: source}``; a source is ``default``, ``FILE:LINE``, ``env NAME`` or
        ``--set``.
    file
        The config file that was read, if any.
    """

    values: dict[str, Any]
    sources: dict[str, str]
    file: str | None = None
    line_of: dict[str, int] = field(default_factory=dict, compare=False)

    def __getitem__(self, path: str) -> Any:
        """The value of the dotted key ``path`` (``"parallel.processes"``).

        Raises
        ------
        KeyError
            An unknown key, with the near ones (a bare ``KeyError: 'parallel.proceses'`` had
            left the caller to look the spelling up).
        """
        try:
            return self.values[path]
        except KeyError:
            raise KeyError(f"{path!r}: unknown key{suggest_key(path)}") from None

    def to_nested(self, render: bool = True) -> dict[str, Any]:
        """Nested mapping of every key, values rendered in user units when ``render``."""
        out: dict[str, Any] = {}
        for key in KEYS:
            value = self.values[key.path]
            if render:
                value = key.type.render(value)
            node = out
            *parents, leaf = key.path.split(".")
            for p in parents:
                node = node.setdefault(p, {})
            node[leaf] = copy.deepcopy(value)
        return out

    def fingerprint(self) -> tuple[str, dict[str, Any]]:
        """Hash of the node-relevant keys, and those keys' values.

        Two nodes with different ``distributed.sync_interval`` (or allocator, deterministic mode,
        storage codec...) get different hashes, so the runtime can refuse a mismatched worker.
        """
        relevant = {
            k: v
            for k, v in sorted(self.values.items())
            if any(k == s or (s.endswith(".") and k.startswith(s)) for s in NODE_RELEVANT_SECTIONS)
        }
        blob = json.dumps(relevant, sort_keys=True, default=str).encode()
        return hashlib.sha256(blob).hexdigest()[:16], relevant

    def result_fingerprint(self) -> tuple[str, dict[str, Any]]:
        """:meth:`fingerprint` without :data:`RUN_ONLY_KEYS`: what a run's results depend on.

        A completed step, a checkpoint and ``--resume`` compare this one.
        """
        relevant = {k: v for k, v in self.fingerprint()[1].items() if k not in RUN_ONLY_KEYS}
        blob = json.dumps(relevant, sort_keys=True, default=str).encode()
        return hashlib.sha256(blob).hexdigest()[:16], relevant

    def config_hash(self) -> str:
        """Hash of every resolved value (the run record's ``config_hash``)."""
        blob = json.dumps(self.values, sort_keys=True, default=str).encode()
        return hashlib.sha256(blob).hexdigest()[:16]

    def with_values(self, *, source: str = "api", **updates: Any) -> Config:
        """Return a copy with ``{dotted key (with __ for .): value}`` replaced, re-checked.

        Used by the tuner and tests to derive variants programmatically; the source of each
        changed key becomes ``source`` (``api``; ``--address`` for that option), which the
        problems found name.
        """
        values = dict(self.values)
        sources = dict(self.sources)
        problems: list[Problem] = []
        for name, raw in updates.items():
            path = name.replace("__", ".")
            _assign(path, raw, values, sources, source, problems, None)
        problems += check_static(values, sources, self.line_of, [p.key for p in problems if p.key])
        if problems:
            raise ConfigError(problems)
        return Config(values, sources, self.file, self.line_of)

    def with_overrides(
        self, overrides: Iterable[str] | Mapping[str, Any] | None, params: Collection[str] = ()
    ) -> Config:
        """Return a copy with ``--set``-style overrides applied, read as :func:`load_config`
        reads them (the last of a key given twice wins; the source is ``--set``).

        For the Python API's ``overrides`` given with a loaded Config: ``run_workflow``,
        ``start_cluster``, ``benchmark`` and ``tune`` all apply them this way.

        Raises
        ------
        ConfigError
            A malformed item, an unknown key or a wrong value.
        """
        check_overrides("with_overrides", overrides)
        if overrides is not None and not isinstance(overrides, Mapping):
            overrides = list(overrides)  # read twice below: a generator would be used up
            check_overrides("with_overrides", overrides)  # a generator's items, now read
        pairs, problems = parse_overrides(overrides)
        if not pairs and not problems:
            return self
        values, sources = dict(self.values), dict(self.sources)
        _apply_sets(pairs, overrides, values, sources, problems, params)
        problems += check_static(values, sources, self.line_of, [p.key for p in problems if p.key])
        if problems:
            raise ConfigError(problems)
        return Config(values, sources, self.file, self.line_of)


def find_config_file(
    explicit: str | os.PathLike[str] | None = None, env: Mapping[str, str] | None = None
) -> Path | None:
    """Return the config file to read, by the documented search order, or ``None``."""
    env = os.environ if env is None else env
    if explicit:
        return Path(explicit)
    if env.get("OPENCLAW_CONFIG"):
        return Path(env["OPENCLAW_CONFIG"])
    for candidate in (Path("openclaw.config"), USER_CONFIG.expanduser()):
        if candidate.is_file():
            return candidate
    return None


def _assign(
    path: str,
    raw: Any,
    values: dict[str, Any],
    sources: dict[str, str],
    source: str,
    problems: list[Problem],
    doc: YamlDocument | None,
    params: Collection[str] = (),
    text: str | None = None,
) -> None:
    """Type-check ``raw`` for ``path`` and store it, or record problems.

    ``params``: the submitted workflow's parameter names, for the hint of an unknown key.
    ``text``: the value as typed (``--set``, a variable), which ``raw`` was parsed from.
    """

    def problem(message: str, sub_path: str) -> Problem:
        if doc is not None:
            return Problem(message, sub_path, doc.file, doc.line_of(sub_path))
        return Problem(message, sub_path, origin=source)

    if path.startswith("dask."):
        # raw dask passthrough addressed key by key (env or --set). Nothing typed is refused
        # here too rather than stored as null: an unset shell variable would quietly turn a
        # Dask setting off (null is "no limit", "no timeout" to many keys); a typed null passes
        empty = nothing_typed(text, "a value (null for none)")
        if empty:
            problems.append(problem(empty, path))
            return
        names = path.split(".")[1:]
        if not all(name.strip() for name in names):  # it stored a key named '' in Dask's config
            problems.append(
                problem("expected Dask's key names between the dots (dask.a.b=VALUE)", path)
            )
            return
        nested = copy.deepcopy(values["dask"])
        node = nested
        *parents, leaf = names
        for p in parents:
            node = node.setdefault(p, {})
            if not isinstance(node, dict):
                problems.append(problem("conflicts with a non-mapping dask value", path))
                return
        node[leaf] = raw
        values["dask"], sources["dask"] = nested, source
        return
    key = KEYS_BY_PATH.get(path)
    if key is None:
        if path in groups():
            # a --set or variable names one key: "parallel={processes: 2}" was told it gave "a
            # single value", though it gave a mapping
            inside = next(k.path for k in KEYS if k.path.startswith(f"{path}."))
            problems.append(
                problem(f"is a section: set the keys in it one by one, such as {inside}", path)
            )
        else:
            problems.append(problem("unknown key" + suggest_key(path, params), path))
        return
    try:
        value = key.type.check(raw)
        if is_file_path(key.type) and value is not None:
            # relative to the file that says it, wherever the command runs (cluster up's
            # daemon, a submit from another directory); else to the current directory
            value = absolute_path(value, Path(doc.file).parent if doc else ".")
        values[path] = value
        sources[path] = source
    except InvalidValueError as exc:
        empty = nothing_typed(text, key.type.describe())
        if empty:  # not "got null": YAML's word for what nobody typed
            problems.append(problem(empty, path))
            return
        for sub, message in exc.issues:
            problems.append(problem(message, join_path(path, sub)))


def _walk(
    doc: YamlDocument,
    data: Mapping[str, Any],
    prefix: str,
    values: dict[str, Any],
    sources: dict[str, str],
    problems: list[Problem],
) -> None:
    all_groups = groups()
    for name, raw in data.items():
        path = f"{prefix}.{name}" if prefix else name
        source = f"{doc.file}:{doc.line_of(path)}"
        if path in KEYS_BY_PATH:
            _assign(path, raw, values, sources, source, problems, doc)
        elif path in all_groups:
            if isinstance(raw, dict):
                _walk(doc, raw, path, values, sources, problems)
            elif raw is not None:  # an empty section (``gpu:``) is fine
                problems.append(
                    Problem(
                        f"expected a mapping of keys under '{path}'",
                        path,
                        doc.file,
                        doc.line_of(path),
                    )
                )
        else:
            problems.append(
                Problem("unknown key" + suggest_key(path), path, doc.file, doc.line_of(path))
            )


def set_source(texts: Sequence[str]) -> str:
    """The source of a value set by ``--set``: ``--set``, or each value it was given in turn.

    A key given more than once keeps the last value (as helm's and kubectl's ``--set`` do, and
    as an alias that sets a default and a later override on the same line rely on); the
    source shows that it happened, wherever sources are shown (``config show --sources``, the
    dry run, ``run.json``): ``--set twice: 3, then 5``.

    Parameters
    ----------
    texts
        The values as typed, in the order given.
    """
    if len(texts) < 2:
        return "--set"
    # as typed, quoted where that would be unclear (nothing, a comma, a control character)
    plain = [t.strip() and "," not in t and not CONTROL_RE.search(t) for t in texts]
    shown = [shorten(t) if ok else quote(t) for t, ok in zip(texts, plain, strict=True)]
    times = "twice" if len(texts) == 2 else f"{len(texts)} times"
    return f"--set {times}: {', '.join(shown[:-1])}, then {shown[-1]}"


def is_set_source(source: str | None) -> bool:
    """Whether ``source`` (a key's or a parameter's) is ``--set``, given once or more."""
    return source is not None and (source == "--set" or source.startswith("--set "))


def repeated_sets(items: Iterable[str] | None, prefix: str = "") -> dict[str, list[str]]:
    """``{key: [value as typed, ...]}`` of the ``KEY=VALUE`` items that set a key more than once.

    ``prefix``: only keys that start with it, which is cut off (``params.`` for parameters).
    """
    given: dict[str, list[str]] = {}
    for item in items or ():
        key, sep, text = item.partition("=")
        key = key.strip()
        if sep and key.startswith(prefix):
            given.setdefault(key[len(prefix) :], []).append(text)
    return {key: texts for key, texts in given.items() if len(texts) > 1}


def parse_overrides(
    items: Iterable[str] | Mapping[str, Any] | None,
) -> tuple[list[tuple[str, Any, str | None]], list[Problem]]:
    """Turn ``["a.b=1", ...]`` (or a mapping) into ``[(path, value, text)]`` plus problems.

    ``text`` is the value as typed after ``=`` (``None`` for a mapping's values).
    """
    if items is None:
        return [], []
    if isinstance(items, Mapping):
        return [(path, value, None) for path, value in items.items()], []
    out: list[tuple[str, Any, str | None]] = []
    problems = []
    for item in items:
        path, sep, text = item.partition("=")
        if not sep or not path.strip():
            problems.append(Problem(f"expected KEY=VALUE, got {quote(item)}", origin="--set"))
            continue
        out.append((path.strip(), parse_scalar(text), text))
    return out, problems


def _apply_sets(
    pairs: list[tuple[str, Any, str | None]],
    overrides: Iterable[str] | Mapping[str, Any] | None,
    values: dict[str, Any],
    sources: dict[str, str],
    problems: list[Problem],
    params: Collection[str],
) -> None:
    """Store :func:`parse_overrides`' ``pairs`` in ``values`` as ``--set``, or record problems."""
    # a key given twice keeps the last value (set_source), so only that one is checked: a
    # slip corrected later on the same line is not an error, and a bad key given twice is
    # refused once
    last = {dotted: index for index, (dotted, _, _) in enumerate(pairs)}
    for index, (dotted, raw, text) in enumerate(pairs):
        if last[dotted] == index:
            _assign(dotted, raw, values, sources, "--set", problems, None, params, text)
    if not isinstance(overrides, Mapping):
        for dotted, texts in repeated_sets(overrides).items():
            if sources.get(dotted) == "--set":  # the last one was taken (not refused)
                sources[dotted] = set_source(texts)


def load_config(
    path: str | os.PathLike[str] | None = None,
    overrides: Iterable[str] | Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    use_search_path: bool = True,
    params: Collection[str] = (),
) -> Config:
    """Load, override and check ``openclaw.config``.

    Parameters
    ----------
    path
        Config file; ``None`` follows the search order (``$OPENCLAW_CONFIG``,
        ``./openclaw.config``, ``~/.config/openclaw/openclaw.config``, defaults).
    overrides
        ``["section.key=value", ...]`` as given to ``--set``, or a ``{path: value}`` mapping.
        A key given more than once keeps its last value, and only that value is checked.
    env
        Environment to read ``OPENCLAW_*`` overrides from (default ``os.environ``).
    use_search_path
        When false and ``path`` is ``None``, read no file (built-in defaults only).
    params
        Parameter names of the workflow the config is loaded for: an unknown ``--set`` key
        that is one of them (``--set size=128``) is pointed at ``params.size``.

    Returns
    -------
    Config

    Raises
    ------
    ConfigError
        Listing every problem found (unknown keys, wrong types, conflicts).
    TypeError
        When ``path`` is not a path or ``overrides`` not a list of strings or a mapping.
    """
    path = check_path("load_config", "path", path)
    check_overrides("load_config", overrides)
    if overrides is not None and not isinstance(overrides, Mapping):
        # read twice below (the values, then the keys given twice): a generator would be used
        # up by the first reading, and a repeated key's source would say plain "--set"
        overrides = list(overrides)
        check_overrides("load_config", overrides)  # a generator's items, now read
    if env is not None:  # a list of "NAME=value" had been read as names, each one unknown
        check_instance("load_config", "env", env, Mapping, "a mapping like os.environ")
    env = os.environ if env is None else env
    values, sources = defaults(), {k.path: "default" for k in KEYS}
    problems: list[Problem] = []
    file = find_config_file(path, env) if (path or use_search_path) else None
    line_of: dict[str, int] = {}
    if file is not None:
        doc = read_yaml(file)
        line_of = doc.lines
        _walk(doc, doc.data, "", values, sources, problems)
    for name in sorted(env):
        if not name.startswith(ENV_PREFIX) or name in ENV_RESERVED:
            continue
        dotted = name[len(ENV_PREFIX) :].lower().replace("__", ".")
        if dotted not in KEYS_BY_PATH and dotted not in groups() and not dotted.startswith("dask."):
            # the hint of a variable knows it is one: OPENCLAW_DEBUGG is near OPENCLAW_DEBUG,
            # and parameters cannot be set from the environment at all
            problems.append(
                Problem(
                    "unknown key" + suggest_env(name, ENV_RESERVED), dotted, origin=f"env {name}"
                )
            )
            continue
        text = env[name]
        source = f"env {name}"
        if sources.get(dotted, "").startswith("env "):
            # OPENCLAW_PARALLEL__PROCESSES and OPENCLAW_parallel__processes: the one later in
            # sort order had won without a word
            problems.append(
                Problem(
                    f"set by two variables, {sources[dotted][4:]} and {name}: unset one",
                    dotted,
                    origin=source,
                )
            )
            continue
        _assign(dotted, parse_scalar(text), values, sources, source, problems, None, text=text)
    pairs, set_problems = parse_overrides(overrides)
    problems += set_problems
    _apply_sets(pairs, overrides, values, sources, problems, params)
    # cross-field rules run even when some values failed their type check (those stay at their
    # defaults), so the user sees every problem in one go
    problems += check_static(values, sources, line_of, [p.key for p in problems if p.key])
    config = Config(values, sources, str(file) if file else None, line_of)
    if problems:
        raise ConfigError(problems, partial=config)
    return config
