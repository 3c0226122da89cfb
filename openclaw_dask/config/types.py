"""Value types of the config schema: each checks one raw YAML value and normalises it.

A type's :meth:`ValueType.check` returns the normalised value (sizes in bytes, durations in
seconds, core lists as lists of ints) or raises :class:`InvalidValueError` with one or more
``(sub_path, message)`` pairs, so nested values (``distributed.nodes[1].ssh_port``) point at the
exact element. YAML booleans are never accepted where a number is expected, although Python
treats ``bool`` as an ``int``: ``threads: yes`` is a mistake, not ``1``.
"""

from __future__ import annotations

import ipaddress
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from openclaw_dask.config.errors import did_you_mean, quote, shorten
from openclaw_dask.config.yamlsource import number_hint


class InvalidValueError(Exception):
    """A value failed its type check; ``issues`` holds ``(sub_path, message)`` pairs."""

    def __init__(self, issues: list[tuple[str, str]]) -> None:
        self.issues = issues
        super().__init__("; ".join(m for _, m in issues))


def _fail(message: str, sub: str = "") -> InvalidValueError:
    return InvalidValueError([(sub, message)])


def yaml_text(value: Any) -> str:
    """A scalar as YAML spells it (``null``, ``false``, ``3``)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _show(value: Any) -> str:
    """Render a raw value the way the user wrote it in YAML, shortened when long."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        # yes/no/on/off are booleans in YAML, a frequent surprise
        return f"{'true' if value else 'false'} (a YAML boolean)"
    if isinstance(value, str):
        return quote(value)
    return shorten(str(value))


class ValueType:
    """Base class: :meth:`check` normalises, :meth:`describe` says what is accepted."""

    def check(self, value: Any) -> Any:  # pragma: no cover - interface
        raise NotImplementedError

    def describe(self) -> str:  # pragma: no cover - interface
        raise NotImplementedError

    def render(self, value: Any) -> Any:
        """Turn a normalised value back into what a user would write in YAML."""
        return value


@dataclass(frozen=True)
class Bool(ValueType):
    def check(self, value: Any) -> bool:
        if isinstance(value, bool):
            return value
        raise _fail(f"expected true or false, got {_show(value)}")

    def describe(self) -> str:
        return "true | false"


@dataclass(frozen=True)
class Int(ValueType):
    min: int | None = None
    max: int | None = None

    def check(self, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            hint = number_hint(value, integer=True)
            raise _fail(f"expected {self.describe()}, got {_show(value)}{hint}")
        if (self.min is not None and value < self.min) or (
            self.max is not None and value > self.max
        ):
            raise _fail(f"expected {self.describe()}, got {value}")
        return value

    def describe(self) -> str:
        if self.min is not None and self.max is not None:
            return f"an integer from {self.min} to {self.max}"
        if self.min is not None:
            return f"an integer >= {self.min}"
        return "an integer"


@dataclass(frozen=True)
class Fraction(ValueType):
    """A float in (0, 1]: Dask's memory thresholds."""

    def check(self, value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _fail(f"expected {self.describe()}, got {_show(value)}{number_hint(value)}")
        if not 0 < value <= 1:
            raise _fail(f"expected {self.describe()}, got {value}")
        return float(value)

    def describe(self) -> str:
        return "a fraction in (0, 1]"


@dataclass(frozen=True)
class Choice(ValueType):
    values: tuple[str, ...]
    aliases: Mapping[str, str] = field(default_factory=dict)

    def check(self, value: Any) -> str:
        if isinstance(value, str) and (value in self.values or value in self.aliases):
            return value
        names = [*self.values, *self.aliases]
        hint = did_you_mean(value, names) if isinstance(value, str) else ""
        raise _fail(f"expected {self.describe()}, got {_show(value)}{hint}")

    def describe(self) -> str:
        names = [*self.values, *self.aliases]
        return "one of " + ", ".join(names)


@dataclass(frozen=True)
class Literal(ValueType):
    """Exactly one YAML value, e.g. ``false`` for "affinity off"."""

    value: Any

    def check(self, value: Any) -> Any:
        if type(value) is type(self.value) and value == self.value:
            return value
        raise _fail(f"expected {self.describe()}, got {_show(value)}")

    def describe(self) -> str:
        return yaml_text(self.value)


#: What a size or duration may be written as: a number (``2``, ``0.5``, ``.5``, ``1e9``), then
#: a unit of letters or none. Dask's parsers read any other text too, and wrongly: they put a
#: 1 in front of text that does not start with a digit (``.5s`` is 1.5 s, ``GiB`` one GiB) and
#: drop the spaces inside it (``2 G i B``).
_QUANTITY = re.compile(
    r"\s*(?P<number>(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)\s*(?P<unit>[A-Za-z]*)\s*"
)


def quantity_text(value: str) -> str | None:
    """``value`` spelled so that Dask's ``parse_bytes`` and ``parse_timedelta`` read it as
    written (``.5s`` as ``0.5s``), or ``None`` where it is not a number and a unit.

    Examples
    --------
    >>> quantity_text(" .5 s"), quantity_text("2GiB"), quantity_text("1e9")
    ('0.5s', '2GiB', '1e9')
    >>> quantity_text("GiB") is None, quantity_text("2 G i B") is None
    (True, True)
    """
    match = _QUANTITY.fullmatch(value)
    if match is None:
        return None
    number = match["number"]
    return ("0" + number if number.startswith(".") else number) + match["unit"]


@dataclass(frozen=True)
class Size(ValueType):
    """Bytes, written as an integer or in human units (``2GiB``, ``512 MB``)."""

    def check(self, value: Any) -> int:
        if isinstance(value, bool):
            raise _fail(f"expected {self.describe()}, got {_show(value)}")
        if isinstance(value, int) and value > 0:
            return value
        text = quantity_text(value) if isinstance(value, str) else None
        if text is not None:
            # imported here: dask costs every CLI command ~0.1 s, and --help reads no size
            from dask.utils import parse_bytes

            try:
                n = parse_bytes(text)
            except (ValueError, TypeError, OverflowError):  # 1e400B: an infinite byte count
                n = 0
            if n > 0:
                return int(n)
        raise _fail(f"expected {self.describe()}, got {_show(value)}")

    def describe(self) -> str:
        return "a size such as 2GiB, 512MB or a byte count"

    def render(self, value: Any) -> Any:
        return format_size(value) if isinstance(value, int) else value


@dataclass(frozen=True)
class Duration(ValueType):
    """Seconds, written with a unit (``100ms``, ``2s``) or as a number of seconds."""

    def check(self, value: Any) -> float:
        if isinstance(value, bool):
            raise _fail(f"expected {self.describe()}, got {_show(value)}")
        seconds: float | None = None
        if isinstance(value, int | float):
            seconds = float(value)
        elif isinstance(value, str) and (text := quantity_text(value)) is not None:
            from dask.utils import parse_timedelta  # (as parse_bytes above)

            try:
                seconds = parse_timedelta(text)
            except (ValueError, KeyError, TypeError, OverflowError):  # 1e400s: infinite
                seconds = None
        # YAML's .inf and .nan are floats: a NaN tolerance compares false with every skew
        if seconds is None or not math.isfinite(seconds) or seconds <= 0:
            raise _fail(f"expected {self.describe()}, got {_show(value)}")
        return float(seconds)

    def describe(self) -> str:
        return "a positive duration such as 100ms or 2s"

    def render(self, value: Any) -> Any:
        if not isinstance(value, float):
            return value
        return f"{value * 1000:g}ms" if value < 1 else f"{value:g}s"


_HOST_RE = re.compile(
    r"^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9-]+)*$"
)


def check_host(host: str) -> str:
    """Return ``host`` if it is an IP address or a valid DNS host name, else raise."""
    try:
        ipaddress.ip_address(host.strip("[]"))
        return host
    except ValueError:
        pass
    if _HOST_RE.match(host) and not host.replace(".", "").isdigit():
        return host
    raise _fail(f"expected a host name or IP address, got {_show(host)}")


@dataclass(frozen=True)
class Host(ValueType):
    def check(self, value: Any) -> str:
        if not isinstance(value, str):
            raise _fail(f"expected a host name or IP address, got {_show(value)}")
        return check_host(value)

    def describe(self) -> str:
        return "a host name or IP address"


@dataclass(frozen=True)
class HostPort(ValueType):
    """``host:port`` (``:port`` binds every interface).

    ``ipv6=False`` for an address Dask reads as ``host:port`` split at every colon (the
    dashboard's): ``[::1]:8893`` passed the check, and the cluster's start then failed with
    "Cluster failed to start: ['[', '', '1]', '8893']", a run directory left behind.
    """

    ipv6: bool = True

    def check(self, value: Any) -> str:
        if not isinstance(value, str) or ":" not in value:
            raise _fail(f"expected {self.describe()}, got {_show(value)}")
        host, _, port = value.rpartition(":")
        if ":" in host and not self.ipv6:
            raise _fail(
                f"expected an IPv4 address or host name before the port: Dask's dashboard "
                f"takes no IPv6 address (':{port}' binds every IPv4 interface), got "
                f"{_show(value)}"
            )
        if ":" in host and not (host.startswith("[") and host.endswith("]")):
            # Dask refuses it at the start ("ipv6 needs brackets"), after the check had passed
            raise _fail(f"an IPv6 address takes brackets: [{host}]:{port}, got {_show(value)}")
        if host:
            check_host(host)
        if not port.isdigit() or not 0 <= int(port) <= 65535:
            raise _fail(f"expected a port from 0 to 65535 in {_show(value)}")
        return value

    def describe(self) -> str:
        return "host:port such as 127.0.0.1:8787"


_ADDRESS_RE = re.compile(r"^(tcp|tls|ucx|ucxx)://(.+)$")


@dataclass(frozen=True)
class SchedulerAddress(ValueType):
    """A Dask scheduler address, ``tcp://host:port`` (also tls://, ucx://)."""

    def check(self, value: Any) -> str:
        if not isinstance(value, str):
            raise _fail(f"expected {self.describe()}, got {_show(value)}")
        if value.startswith("inproc://"):
            # Dask's in-process transport: such a scheduler lives inside another program and
            # no other process reaches it (the client hung in connect, then a traceback)
            raise _fail(
                f"expected {self.describe()}, got {_show(value)} (an inproc:// scheduler lives "
                "inside one Python process; a separate process reaches it only over tcp://)"
            )
        m = _ADDRESS_RE.match(value)
        if not m:
            raise _fail(f"expected {self.describe()}, got {_show(value)}")
        HostPort().check(m.group(2))
        return value

    def describe(self) -> str:
        return "a scheduler address such as tcp://10.0.0.1:8786"


@dataclass(frozen=True)
class Text(ValueType):
    def check(self, value: Any) -> str:
        if isinstance(value, str) and value.strip():
            return value
        raise _fail(f"expected a non-empty string, got {_show(value)}")

    def describe(self) -> str:
        return "a string"


#: a login name as POSIX systems allow one (useradd's rule, with upper case): no spaces and
#: nothing a shell or ssh_config would read as something else
_USER_RE = re.compile(r"^[A-Za-z0-9._][A-Za-z0-9._-]{0,31}\$?$")


@dataclass(frozen=True)
class UserName(Text):
    """A login name (``alice``); ``al ice`` and ``root; rm -rf /`` had passed as users."""

    def check(self, value: Any) -> str:
        name = super().check(value)
        if not _USER_RE.match(name):
            raise _fail(f"expected {self.describe()}, got {_show(value)}")
        return name

    def describe(self) -> str:
        return "a login name (letters, digits, '.', '_', '-')"


@dataclass(frozen=True)
class FilePath(Text):
    """A file's path: the loader makes it absolute (:func:`absolute_path`)."""

    def describe(self) -> str:
        return "a file path"


def absolute_path(path: str, base: str | os.PathLike[str]) -> str:
    """``path`` with ``~`` expanded, made absolute against the directory ``base``.

    A config file's relative paths are relative to the file, wherever the command runs (as a
    workflow's path parameters are relative to the workflow file); ``--set`` and environment
    values are relative to the current directory. Symbolic links are kept as written.
    """
    return os.path.normpath(os.path.join(os.path.abspath(base), os.path.expanduser(path)))


def is_file_path(kind: ValueType) -> bool:
    """Whether values of ``kind`` (possibly nullable) are file paths."""
    return isinstance(kind.inner if isinstance(kind, Nullable) else kind, FilePath)


@dataclass(frozen=True)
class Nullable(ValueType):
    inner: ValueType

    def check(self, value: Any) -> Any:
        if value is None:
            return None
        try:
            return self.inner.check(value)
        except InvalidValueError as exc:
            # the inner type's plain "expected X" becomes "expected null or X"; a message of
            # its own (a port out of range, an IPv6 host without brackets) is kept as it is
            generic = exc.issues[0][1].startswith(f"expected {self.inner.describe()}, got ")
            if len(exc.issues) == 1 and not exc.issues[0][0] and generic:
                raise _fail(
                    f"expected null or {self.inner.describe()}, got {_show(value)}"
                ) from None
            raise

    def describe(self) -> str:
        return f"null or {self.inner.describe()}"

    def render(self, value: Any) -> Any:
        return None if value is None else self.inner.render(value)


@dataclass(frozen=True)
class OneOf(ValueType):
    """The first alternative that accepts the value wins."""

    options: tuple[ValueType, ...]

    def check(self, value: Any) -> Any:
        hints = []
        for option in self.options:
            try:
                return option.check(value)
            except InvalidValueError as exc:
                if all(sub for sub, _ in exc.issues):
                    # the option took the value's shape and refused an item inside it (a list
                    # of core lists with '1-0' in it): that item's own message says more
                    raise
                hints += [m for _, m in exc.issues if "did you mean" in m]
        hint = ""
        if hints:
            hint = hints[0][hints[0].index(";") :]
        raise _fail(f"expected {self.describe()}, got {_show(value)}{hint}")

    def describe(self) -> str:
        return " | ".join(o.describe() for o in self.options)

    def render(self, value: Any) -> Any:
        for option in self.options:
            try:
                option.check(value)
            except InvalidValueError:
                continue
            return value
        for option in self.options:
            rendered = option.render(value)
            if rendered is not value:
                return rendered
        return value


@dataclass(frozen=True)
class ListOf(ValueType):
    item: ValueType
    min_len: int = 0

    def check(self, value: Any) -> list[Any]:
        if not isinstance(value, list):
            raise _fail(f"expected a list of {self.item.describe()}, got {_show(value)}")
        if len(value) < self.min_len:
            raise _fail(f"expected at least {self.min_len} item(s)")
        out, issues = [], []
        for i, v in enumerate(value):
            try:
                out.append(self.item.check(v))
            except InvalidValueError as exc:
                issues += [(join_path(f"[{i}]", s), m) for s, m in exc.issues]
        if issues:
            raise InvalidValueError(issues)
        return out

    def describe(self) -> str:
        return f"a list of {self.item.describe()}"

    def render(self, value: Any) -> Any:
        return [self.item.render(v) for v in value] if isinstance(value, list) else value


_RANGE_RE = re.compile(r"^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$")
#: Largest core id accepted: far above any Linux machine (the kernel numbers at most 8192
#: CPUs), and low enough that a typo such as ``0-99999999999`` is refused at once instead of
#: being expanded into a list of every id in the range.
MAX_CORE_ID = 2**16 - 1


def parse_cpu_list(text: str) -> list[int]:
    """Parse a Linux cpulist (``"0-3,8,10-11"``) into sorted core ids."""
    cores: set[int] = set()
    for part in text.split(","):
        m = _RANGE_RE.match(part)
        if not m:
            raise _fail(f"expected core ids such as '0-3,8', got {_show(text)}")
        lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
        if hi < lo:
            raise _fail(
                f"core range {quote(part.strip())} runs backwards; did you mean '{hi}-{lo}'?"
            )
        if hi > MAX_CORE_ID:
            raise _fail(f"core id {shorten(str(hi))} is beyond {MAX_CORE_ID}, the largest accepted")
        cores.update(range(lo, hi + 1))
    return sorted(cores)


@dataclass(frozen=True)
class CoreSet(ValueType):
    """One worker's cores: ``[0, 1]`` or ``"0-3,8"``."""

    def check(self, value: Any) -> list[int]:
        if isinstance(value, str):
            return parse_cpu_list(value)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return [Int(min=0, max=MAX_CORE_ID).check(value)]
        if isinstance(value, list) and value:
            return sorted({Int(min=0, max=MAX_CORE_ID).check(v) for v in value})
        raise _fail(f"expected {self.describe()}, got {_show(value)}")

    def describe(self) -> str:
        return "a core list such as [0, 1] or '0-3'"


@dataclass(frozen=True)
class AnyMapping(ValueType):
    """Free-form mapping (the raw ``dask:`` section)."""

    def check(self, value: Any) -> dict[str, Any]:
        if isinstance(value, dict):
            return value
        raise _fail(f"expected a mapping, got {_show(value)}")

    def describe(self) -> str:
        return "a mapping of dask config keys"


@dataclass(frozen=True)
class FieldSpec:
    """One field of a :class:`Record`."""

    type: ValueType
    default: Any = None
    required: bool = False
    doc: str = ""


@dataclass(frozen=True)
class Record(ValueType):
    """A mapping with its own fields (one entry of ``distributed.nodes``)."""

    fields: Mapping[str, FieldSpec]
    name: str = "mapping"

    def check(self, value: Any) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise _fail(f"expected a {self.name} with keys {', '.join(self.fields)}")
        out: dict[str, Any] = {}
        issues: list[tuple[str, str]] = []
        for key in value:
            if key not in self.fields:
                issues.append((str(key), "unknown key" + self._hint(str(key))))
        for key, spec in self.fields.items():
            if key not in value:
                if spec.required:
                    issues.append((key, f"missing; expected {spec.type.describe()}"))
                out[key] = spec.default
                continue
            try:
                out[key] = spec.type.check(value[key])
            except InvalidValueError as exc:
                issues += [(join_path(key, s), m) for s, m in exc.issues]
        if issues:
            raise InvalidValueError(issues)
        return out

    def _hint(self, key: str) -> str:
        # a field one level down, written a level too high (a node's gpus: is resources.gpus)
        for name, spec in self.fields.items():
            if isinstance(spec.type, Record) and key in spec.type.fields:
                return f"; did you mean '{name}.{key}'?"
        return did_you_mean(key, self.fields)

    def describe(self) -> str:
        return f"a {self.name}"

    def render(self, value: Any) -> Any:
        if not isinstance(value, dict):
            return value
        return {
            k: self.fields[k].type.render(v) if k in self.fields else v for k, v in value.items()
        }


def format_size(n: int) -> str:
    """Render bytes in the largest binary unit that divides them exactly (``2GiB``)."""
    for unit, factor in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n % factor == 0:
            return f"{n // factor}{unit}"
    return str(n)


def join_path(base: str, sub: str) -> str:
    """Join a dotted key and a sub path from :class:`InvalidValueError` (``a.b`` + ``[1].c``)."""
    if not sub:
        return base
    return f"{base}{sub}" if sub.startswith("[") else f"{base}.{sub}"
