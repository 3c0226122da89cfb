"""Strict YAML reading with line numbers, shared by the config and workflow loaders.

PyYAML's ``safe_load`` silently keeps the last of two duplicate keys and forgets where values
came from. We compose the node tree ourselves so that every value keeps its line, duplicate keys
and non-standard tags (``!!python/object``) are refused, and a syntax error becomes one
``file:line`` problem instead of a traceback.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from openclaw_dask.config.errors import ConfigError, Problem

_STD = "tag:yaml.org,2002:"
_SAFE_SCALAR_TAGS = {_STD + t for t in ("str", "int", "float", "bool", "null")}


@dataclass
class YamlDocument:
    """A parsed YAML mapping plus the line of every dotted path in it.

    ``lines`` maps ``"a.b"`` and ``"a.b[2].c"`` to 1-based line numbers of the value's key.
    """

    data: dict[str, Any]
    file: str
    lines: dict[str, int] = field(default_factory=dict)

    def line_of(self, path: str) -> int | None:
        """Line of ``path`` or of its nearest ancestor that has one."""
        while path:
            if path in self.lines:
                return self.lines[path]
            cut = max(path.rfind("."), path.rfind("["))
            path = path[:cut] if cut > 0 else ""
        return None


class _Builder:
    def __init__(self, file: str) -> None:
        self.file = file
        self.lines: dict[str, int] = {}
        self.problems: list[Problem] = []
        self._scalar = yaml.constructor.SafeConstructor()

    def build(self, node: yaml.Node, path: str) -> Any:
        line = node.start_mark.line + 1
        if isinstance(node, yaml.MappingNode):
            if node.tag != _STD + "map":
                return self._bad_tag(node, path)
            out: dict[str, Any] = {}
            for key_node, value_node in node.value:
                kline = key_node.start_mark.line + 1
                if key_node.tag == _STD + "merge":
                    self.problems.append(
                        Problem("YAML merge keys (<<) are not supported", path, self.file, kline)
                    )
                    continue
                key = self.build(key_node, path)
                if not isinstance(key, str | int | float | bool) or key is None:
                    self.problems.append(
                        Problem("keys must be plain names", path, self.file, kline)
                    )
                    continue
                key = str(key)
                sub = f"{path}.{key}" if path else key
                if key in out:
                    self.problems.append(
                        Problem(
                            f"duplicate key (first defined on line {self.lines.get(sub)})",
                            sub,
                            self.file,
                            kline,
                        )
                    )
                    continue
                self.lines[sub] = kline
                out[key] = self.build(value_node, sub)
            return out
        if isinstance(node, yaml.SequenceNode):
            if node.tag != _STD + "seq":
                return self._bad_tag(node, path)
            items = []
            for i, item in enumerate(node.value):
                sub = f"{path}[{i}]"
                self.lines[sub] = item.start_mark.line + 1
                items.append(self.build(item, sub))
            return items
        if node.tag not in _SAFE_SCALAR_TAGS:
            return self._bad_tag(node, path)
        try:
            return self._scalar.construct_object(node)
        except yaml.YAMLError as exc:  # e.g. an explicit !!int on text
            self.problems.append(Problem(f"bad YAML value: {exc}", path, self.file, line))
            return None

    def _bad_tag(self, node: yaml.Node, path: str) -> None:
        self.problems.append(
            Problem(
                f"YAML tag {node.tag!r} is not allowed (only plain values, lists and mappings)",
                path,
                self.file,
                node.start_mark.line + 1,
            )
        )
        return None


def parse_yaml(text: str, file: str) -> YamlDocument:
    """Parse ``text`` as one YAML mapping, strictly.

    Parameters
    ----------
    text
        YAML source.
    file
        Name used in messages.

    Returns
    -------
    YamlDocument

    Raises
    ------
    ConfigError
        On syntax errors, duplicate keys, disallowed tags or a top level that is not a mapping.
    """
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        what = exc.problem or "invalid YAML"
        if exc.context and exc.context_mark:
            what = f"{what} ({exc.context} started on line {exc.context_mark.line + 1})"
        raise ConfigError([Problem(f"YAML syntax error: {what}", "", file, line)]) from None
    except yaml.YAMLError as exc:
        raise ConfigError([Problem(f"YAML error: {exc}", "", file)]) from None
    if node is None:
        return YamlDocument({}, file)
    builder = _Builder(file)
    data = builder.build(node, "")
    if builder.problems:
        raise ConfigError(builder.problems)
    if not isinstance(data, dict):
        kind = "a list" if isinstance(data, list) else f"the value {data!r}"
        raise ConfigError(
            [Problem(f"the top level must be a mapping of sections, found {kind}", "", file, 1)]
        )
    return YamlDocument(data, file, builder.lines)


def read_yaml(path: str | Path) -> YamlDocument:
    """Read and :func:`parse_yaml` a file; an unreadable file is a :class:`ConfigError`."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError([Problem("file not found", "", str(p))]) from None
    except IsADirectoryError:
        raise ConfigError([Problem("is a directory, expected a YAML file", "", str(p))]) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError([Problem(f"cannot read: {exc}", "", str(p))]) from None
    return parse_yaml(text, str(p))


def parse_scalar(text: str) -> Any:
    """Interpret a ``--set``/environment value the way YAML would (``3`` -> 3, ``[0,1]``).

    Only plain YAML is allowed here too: a value that fails to parse stays a string.
    """
    try:
        return parse_yaml(f"v: {text}", "<value>").data["v"]
    except ConfigError:
        return text
