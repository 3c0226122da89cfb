"""Strict YAML reading with line numbers, shared by the config and workflow loaders.

PyYAML's ``safe_load`` silently keeps the last of two duplicate keys and forgets where values
came from. We compose the node tree ourselves so that every value keeps its line, duplicate keys
and non-standard tags (``!!python/object``) are refused, and a syntax error becomes one
``file:line`` problem instead of a traceback.

Anchors and aliases (``&a``, ``*a``) are refused as well: each alias is a copy of its anchor's
value, so a few lines of nested aliases (a "billion laughs") expand into gigabytes. Numbers in
scientific notation are floats as in YAML 1.2 (``2e0``, ``1.0e4``, ``6e-1``); PyYAML's YAML 1.1
rules read them as strings unless they have a dot and a signed exponent.
"""

from __future__ import annotations

import re
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from openclaw_dask.config.errors import ConfigError, Problem, quote

_STD = "tag:yaml.org,2002:"
_SAFE_SCALAR_TAGS = {_STD + t for t in ("str", "int", "float", "bool", "null")}

#: PyYAML's YAML 1.1 float pattern with YAML 1.2's exponents: the sign of an exponent is
#: optional and a dot is not needed when there is one (``2e0``). A float still needs a dot or an
#: exponent, so ``3`` stays an int; ``.inf``, ``.nan`` and base 60 (``1:30.0``) are unchanged.
_FLOAT_RE = re.compile(
    r"""^(?:[-+]?[0-9][0-9_]*\.[0-9_]*(?:[eE][-+]?[0-9]+)?
    |[-+]?[0-9][0-9_]*[eE][-+]?[0-9]+
    |[-+]?\.[0-9][0-9_]*(?:[eE][-+]?[0-9]+)?
    |[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*
    |[-+]?\.(?:inf|Inf|INF)
    |\.(?:nan|NaN|NAN))$""",
    re.X,
)
_ANCHORS_REFUSED = "YAML anchors and aliases are not supported: write the value out"


class _AnchorError(Exception):
    """An anchor or alias event; carries where it is."""

    def __init__(self, mark: yaml.Mark | None) -> None:
        super().__init__(_ANCHORS_REFUSED)
        self.line = mark.line + 1 if mark else None


class _Loader(yaml.SafeLoader):
    """SafeLoader that stops at the first anchor or alias, with YAML 1.2 floats.

    The check is made while composing, before any alias is expanded: the composed tree shares
    one node per anchor and stays small, but building Python values from it copies each alias.
    """

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        event = self.peek_event()
        # an anchor always comes before its first alias, so this names the anchor's line
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise _AnchorError(event.start_mark)
        return super().compose_node(parent, index)  # type: ignore[no-any-return]


# a copy per first character, the float pattern swapped in where it was (order matters: the
# first pattern that matches wins)
_Loader.yaml_implicit_resolvers = {
    first: [(tag, _FLOAT_RE if tag == _STD + "float" else regexp) for tag, regexp in resolvers]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


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
        except ValueError:
            # PyYAML's int() on what its patterns let through: a number of more digits than
            # Python converts (its own guard against slow conversions), or none at all (0b_)
            message = (
                f"bad YAML value: cannot read {quote(node.value)} as a number (more than "
                f"{sys.get_int_max_str_digits()} digits, or none)"
            )
            self.problems.append(Problem(message, path, self.file, line))
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
        On syntax errors, duplicate keys, disallowed tags, anchors or aliases, or a top level
        that is not a mapping.
    """
    try:
        node = yaml.compose(text, Loader=_Loader)
    except _AnchorError as exc:
        raise ConfigError([Problem(_ANCHORS_REFUSED, "", file, exc.line)]) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        what = exc.problem or "invalid YAML"
        if exc.context and exc.context_mark:
            what = f"{what} ({exc.context} started on line {exc.context_mark.line + 1})"
        if "'\\t'" in what:
            what += ": YAML indents with spaces, not tabs"
        raise ConfigError([Problem(f"YAML syntax error: {what}", "", file, line)]) from None
    except yaml.reader.ReaderError as exc:
        # a character YAML refuses (NUL, other control characters): PyYAML names only its
        # offset, over two lines, with "<unicode string>" for the file
        raise ConfigError([_bad_character(text, exc, file)]) from None
    except yaml.YAMLError as exc:
        message = " ".join(str(exc).split())  # one line, whatever PyYAML wrote
        raise ConfigError([Problem(f"YAML error: {message}", "", file)]) from None
    if node is None:
        return YamlDocument({}, file)
    builder = _Builder(file)
    data = builder.build(node, "")
    if builder.problems:
        raise ConfigError(builder.problems)
    if not isinstance(data, dict):
        kind = "a list" if isinstance(data, list) else f"the value {quote(data)}"
        raise ConfigError(
            [Problem(f"the top level must be a mapping of sections, found {kind}", "", file, 1)]
        )
    return YamlDocument(data, file, builder.lines)


def _bad_character(text: str, exc: yaml.reader.ReaderError, file: str) -> Problem:
    """The problem of a character YAML does not allow, at its line and column."""
    position = min(max(exc.position, 0), len(text))
    line = text.count("\n", 0, position) + 1
    column = position - (text.rfind("\n", 0, position) + 1) + 1
    code = int(exc.character)  # PyYAML gives the code point of a str input
    what = "a NUL character (U+0000)" if code == 0 else f"the control character U+{code:04X}"
    return Problem(f"YAML error: {what} at column {column} is not allowed", "", file, line)


def _not_utf8(path: Path) -> ConfigError:
    """A file that is not UTF-8, at the line of its first undecodable byte."""
    data = path.read_bytes()
    try:  # decoded here again: a text-mode read's error offset need not be the file's
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        byte = data[exc.start : exc.start + 1].hex()
        message = f"cannot read: not UTF-8 text (byte 0x{byte}: {exc.reason})"
        return ConfigError([Problem(message, "", str(path), line)])
    return _unreadable(path, "cannot read: not UTF-8 text")


def read_yaml(path: str | Path) -> YamlDocument:
    """Read and :func:`parse_yaml` a file; an unreadable file is a :class:`ConfigError`.

    Only a regular file is read: a device such as ``/dev/zero`` never ends, and a pipe may not.
    """
    p = Path(path)
    text = None
    try:
        mode = p.stat().st_mode
        if stat.S_ISREG(mode):
            try:
                text = p.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                # the codec names a byte offset only; the line is what an editor shows
                raise _not_utf8(p) from None
    except FileNotFoundError:
        raise _unreadable(p, "file not found") from None
    except IsADirectoryError:
        raise _unreadable(p, "is a directory, expected a YAML file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise _unreadable(p, f"cannot read: {exc}") from None
    if stat.S_ISDIR(mode):
        raise _unreadable(p, "is a directory, expected a YAML file")
    if text is None:
        raise _unreadable(
            p, "is not a regular file (a device, pipe or socket), expected a YAML file"
        )
    return parse_yaml(text, str(p))


def _unreadable(path: Path, message: str) -> ConfigError:
    return ConfigError([Problem(message, "", str(path))])


def nothing_typed(text: Any, expected: str) -> str | None:
    """The message for a ``--set``/environment value with nothing after ``=``, else ``None``.

    YAML reads an empty value as null, and a refusal then said "got null" (or Python's
    "None"): words for what the user never typed (an unset shell variable, say). Config keys
    and workflow parameters both say it this way.

    Parameters
    ----------
    text
        The value as typed after ``=``; anything but a blank string is ``None`` here.
    expected
        What the key or parameter takes (``int``, ``an integer >= 1``).
    """
    if isinstance(text, str) and not text.strip():
        return f"expected {expected}, got nothing after '='"
    return None


def parse_scalar(text: str) -> Any:
    """Interpret a ``--set``/environment value the way YAML would (``3`` -> 3, ``[0,1]``).

    Only plain YAML is allowed here too: a value that fails to parse stays a string.
    """
    try:
        return parse_yaml(f"v: {text}", "<value>").data["v"]
    except ConfigError:
        return text
