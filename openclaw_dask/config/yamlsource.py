"""Strict YAML reading with line numbers, shared by the config and workflow loaders.

PyYAML's ``safe_load`` silently keeps the last of two duplicate keys and forgets where values
came from. We compose the node tree ourselves so that every value keeps its line, duplicate keys
and non-standard tags (``!!python/object``) are refused, and a syntax error becomes one
``file:line`` problem instead of a traceback.

Anchors and aliases (``&a``, ``*a``) are refused as well: each alias is a copy of its anchor's
value, so a few lines of nested aliases (a "billion laughs") expand into gigabytes.

Numbers and dates follow YAML 1.2's core schema, in config files, workflow files, ``--set``
values and variables alike (PyYAML implements YAML 1.1):

- integers are decimal (``017`` is 17, not 1.1's octal 15), ``0o17`` (15) or ``0x1F`` (31);
  ``1_000``, ``0b101``, ``-0x10`` and base 60 (``1:30``) are text, which a key or parameter
  that takes a number refuses, saying what was read and the number meant (:func:`number_hint`);
- floats have a dot or an exponent (``2e0``, ``1.0e4``, ``6e-1``: 1.1 reads these as text
  unless they have a dot and a signed exponent), or are ``.inf``/``.nan``; no ``_`` either;
- dates (``2026-12-04``) are text, not timestamps (refused before as a disallowed tag).

Booleans keep YAML 1.1's words (``yes``/``no``/``on``/``off``): a number or a name key refuses
them by name ("a YAML boolean"), where reading them as text would let ``on`` through as a word.
So does a mapping key (a step named ``no`` had become ``False``): quoted, it is the name.
"""

from __future__ import annotations

import re
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from openclaw_dask.config.errors import ConfigError, Problem, nearby, quote

_STD = "tag:yaml.org,2002:"
_SAFE_SCALAR_TAGS = {_STD + t for t in ("str", "int", "float", "bool", "null")}

#: YAML 1.2 core schema floats. PyYAML tries its float pattern before its int one, so a float
#: here needs a dot or an exponent (``3`` stays an int, ``2e0`` is a float).
_FLOAT_RE = re.compile(
    r"""^(?:[-+]?(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?
    |[-+]?[0-9]+[eE][-+]?[0-9]+
    |[-+]?\.(?:inf|Inf|INF)
    |\.(?:nan|NaN|NAN))$""",
    re.X,
)
#: YAML 1.2 core schema integers: decimal (leading zeros are decimal too), 0o octal, 0x hex
_INT_RE = re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$")
#: what YAML 1.1 (PyYAML) read as a number and YAML 1.2 reads as text, for the hint when such
#: a text is refused where a number belongs: digits with ``_``, ``0b`` binary, a signed hex or
#: octal number (base 60 gets no hint: ``1:30`` may be a time of day as much as 90)
_YAML11_NUMBER_RE = re.compile(
    r"""^(?P<sign>[-+]?)(?:
        (?P<digits>[0-9][0-9_]*_[0-9_]*(?:\.[0-9_]*)?(?:[eE][-+]?[0-9]+)?)
        |0b(?P<binary>[01_]+)
        |0x(?P<hex>[0-9a-fA-F_]+)
        |0o(?P<octal>[0-7_]+))$""",
    re.X,
)
_ANCHORS_REFUSED = "YAML anchors and aliases are not supported: write the value out"
#: How deep lists and mappings may nest. Composing and building the tree recurse once or more
#: per level, so ~400 levels (``steps: [[[[...]]]]``) ended in a RecursionError, exit 1; no
#: config or workflow file nests a tenth of this.
MAX_DEPTH = 100
_TOO_DEEP = f"nested too deeply (more than {MAX_DEPTH} levels of lists and mappings)"


class _AnchorError(Exception):
    """An anchor or alias event; carries where it is."""

    def __init__(self, mark: yaml.Mark | None) -> None:
        super().__init__(_ANCHORS_REFUSED)
        self.line = mark.line + 1 if mark else None


class _TooDeepError(Exception):
    """A list or mapping nested more than :data:`MAX_DEPTH` levels; carries where it is."""

    def __init__(self, mark: yaml.Mark | None) -> None:
        super().__init__(_TOO_DEEP)
        self.line = mark.line + 1 if mark else None


class _Loader(yaml.SafeLoader):
    """SafeLoader that stops at the first anchor or alias, with YAML 1.2 floats.

    The check is made while composing, before any alias is expanded: the composed tree shares
    one node per anchor and stays small, but building Python values from it copies each alias.
    It stops too at a node nested deeper than :data:`MAX_DEPTH`.
    """

    _depth = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        event = self.peek_event()
        # an anchor always comes before its first alias, so this names the anchor's line
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise _AnchorError(event.start_mark)
        if self._depth >= MAX_DEPTH:  # (the top level is depth 0)
            raise _TooDeepError(event.start_mark)
        self._depth += 1
        try:
            return super().compose_node(parent, index)  # type: ignore[no-any-return]
        finally:
            self._depth -= 1


_CORE = {_STD + "float": _FLOAT_RE, _STD + "int": _INT_RE}
# a copy per first character with YAML 1.2's number patterns swapped in where they were (order
# matters: the first pattern that matches wins) and no timestamps (1.2 has none: a date is text)
_Loader.yaml_implicit_resolvers = {
    first: [(tag, _CORE.get(tag, regexp)) for tag, regexp in resolvers if tag != _STD + "timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _core_int(text: str) -> int:
    """A YAML 1.2 core integer's value (PyYAML's constructor reads ``017`` as octal 15).

    Raises
    ------
    ValueError
        Not such an integer (an explicit ``!!int`` tag on other text), or more digits than
        Python converts.
    """
    if not _INT_RE.match(text):
        raise ValueError(f"expected an integer, got {quote(text)}")
    if text.startswith(("0o", "0x")):
        return int(text[2:], 8 if text[1] == "o" else 16)
    return int(text)


def number_hint(value: Any, integer: bool = False) -> str:
    """What to add to a refusal of ``value`` where a number (``integer``: an int) belongs.

    ``"1_000"`` and ``"0b101"`` were numbers in YAML 1.1 and are text in YAML 1.2; a float
    with no fraction (``1e3`` reads as ``1000.0``) is no integer. The hint says what was
    read and the number meant, in the project's "did you mean" form; ``""`` when none fits.

    Parameters
    ----------
    value
        The value as read (after YAML).
    integer
        Whether an integer is expected (a whole float then gets a hint too).

    Returns
    -------
    str
        ``" (text in YAML 1.2: no _ in numbers); did you mean 1000?"``, or ``""``.
    """
    if integer and isinstance(value, float) and value.is_integer():
        return f" (a float); did you mean {int(value)}?"
    m = _YAML11_NUMBER_RE.match(value) if isinstance(value, str) else None
    if not m:
        return ""
    try:
        return _yaml11_hint(m, integer)
    except ValueError:  # more digits than Python converts: no number to offer
        return ""


def _yaml11_hint(m: re.Match[str], integer: bool) -> str:
    """:func:`number_hint` of a text that YAML 1.1 read as a number (``m``: its match)."""
    sign = -1 if m["sign"] == "-" else 1
    if m["digits"]:
        plain = m["digits"].replace("_", "")
        number: float = float(plain) if any(c in plain for c in ".eE") else int(plain)
        why = "no _ in numbers"
    elif m["binary"]:
        number, why = int(m["binary"].replace("_", ""), 2), "no 0b numbers"
    else:
        digits = (m["hex"] or m["octal"]).replace("_", "")
        number = int(digits, 16 if m["hex"] else 8)
        why = "hex and octal numbers have no sign" if m["sign"] else "no _ in numbers"
        if not m["sign"] and "_" not in m.group(0):
            return ""  # a plain 0x1F is a number, so never refused as text
    if integer and isinstance(number, float):
        return f" (text in YAML 1.2: {why})"
    return f" (text in YAML 1.2: {why}); did you mean {sign * number}?"


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
                if isinstance(key, bool):
                    # a step named "no" or a parameter "on" had become "False" and "True"
                    # (steps in order: False); refused as values are, by name
                    word = key_node.value if isinstance(key_node, yaml.ScalarNode) else key
                    self.problems.append(
                        Problem(
                            f"{quote(word)} is read by YAML as the boolean {str(key).lower()}: "
                            f'quote it ("{word}") to use it as a name',
                            path,
                            self.file,
                            kline,
                        )
                    )
                    continue
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
                if sub in self.lines:
                    # the same key dotted in one place and nested in another ("memory.allocator:"
                    # and "memory: {allocator:}"): the later one had won without a word
                    self.problems.append(
                        Problem(
                            f"duplicate key (first defined on line {self.lines[sub]}, "
                            "dotted there or here)",
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
            if node.tag == _STD + "int":
                return _core_int(node.value)
            return self._scalar.construct_object(node)
        except yaml.YAMLError as exc:  # e.g. an explicit !!float on text
            self.problems.append(Problem(f"bad YAML value: {exc}", path, self.file, line))
            return None
        except ValueError:
            # int() or float() on what the patterns let through: a number of more digits
            # than Python converts (its own guard against slow conversions), or an explicit
            # !!int on text
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
        On syntax errors, duplicate keys, disallowed tags, anchors or aliases, lists and
        mappings nested more than :data:`MAX_DEPTH` levels, or a top level that is not a
        mapping.
    """
    try:
        node = yaml.compose(text, Loader=_Loader)
    except _AnchorError as exc:
        raise ConfigError([Problem(_ANCHORS_REFUSED, "", file, exc.line)]) from None
    except _TooDeepError as exc:
        raise ConfigError([Problem(_TOO_DEEP, "", file, exc.line)]) from None
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
        raise _unreadable(p, f"file not found{nearby(str(p))}") from None
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
