"""Values of the raw ``dask:`` section that Dask itself would refuse only once a cluster starts.

The section is passed to ``dask.config`` as it is (experts' escape hatch), and Dask reads most
values only where it uses them: ``distributed.comm.timeouts.connect: banana`` passed
``config validate`` and then failed ``submit`` with ``KeyError: 'Invalid time unit: banana.
Valid units are: ...'`` (sixty of them) after the run directory was made. A key whose Dask
default is a duration (``10s``) or a size (``64MiB``) must hold one too, checked with Dask's
own parsers; one whose default is a bool, an integer or a number holds one of those (a worker
memory fraction lies in 0..1 or is false); a key Dask does not know is refused when it is a
near miss of one it does (``distribted``). Other keys and values are left to Dask, and to the
libraries that add keys of their own.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from openclaw_dask.config.errors import did_you_mean, quote
from openclaw_dask.config.types import quantity_text

_MISSING = object()


def _flat(raw: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    """``(dotted key, value)`` of a mapping that may nest or dot its keys, as dask.config does."""
    for key, value in raw.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            yield from _flat(value, f"{path}.")
        else:
            yield path, value


def _kind(default: Any) -> str | None:
    """``"duration"`` or ``"size"`` when Dask's default is one and cannot be the other."""
    from dask.utils import parse_bytes, parse_timedelta

    if not isinstance(default, str) or not default.strip() or default.strip()[-1].isdigit():
        return None  # a bare number reads as both; other strings are names ("auto", "lz4")
    kinds = []
    for kind, parse in (("duration", parse_timedelta), ("size", parse_bytes)):
        try:
            parse(default)
        except (ValueError, KeyError, TypeError):
            continue
        kinds.append(kind)
    return kinds[0] if len(kinds) == 1 else None  # "1m" is a minute and a megabyte


#: Dask's memory fractions: a share of the worker's budget, or false for "never"
_FRACTIONS = ("target", "spill", "pause", "terminate")


def _near_miss(key: str, config: Mapping[str, Any]) -> str | None:
    """For a key Dask does not know: ``"unknown dask key; did you mean ..."`` when a part of
    it is a near miss of a key Dask has there (``distribted``), else ``None`` (a key of a
    library not imported here is left to that library)."""
    from dask.config import canonical_name

    node: Any = config
    for part in key.split("."):
        if not isinstance(node, Mapping):
            return None
        name = canonical_name(part, node)
        if name not in node:
            hint = did_you_mean(part, [str(k) for k in node])
            return f"unknown dask key{hint}" if hint else None
        node = node[name]
    return None


def _as_number(value: Any, kind: type) -> float | None:
    """``value`` as a number of ``kind`` (a string Dask would convert, such as ``inf``, too)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float) and (kind is float or isinstance(value, int)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(kind(value))
        except ValueError:
            return None
    return None


def _scalar_problem(key: str, default: Any, value: Any) -> str | None:
    """Why ``value`` cannot stand where Dask's default is ``True``, an integer or a number.

    A default of ``False`` says nothing of the type (``comm.compression`` takes names), and
    the environment a nanny sets takes any text; neither is checked.
    """
    leaf = key.rsplit(".", 1)[-1]
    if value is None or ".environ." in key or key.endswith("environ"):
        return None  # null: Dask's "none", which Dask refuses itself where it must
    if default is True:
        ok, expected = isinstance(value, bool), "true or false"
    elif isinstance(default, bool):
        return None
    elif key.startswith("distributed.worker.memory.") and leaf in _FRACTIONS:
        number = _as_number(value, float)
        ok = value is False or (number is not None and 0 <= number <= 1)
        expected = "a fraction of the worker's memory between 0 and 1, or false"
    elif isinstance(default, int):
        ok, expected = _as_number(value, int) is not None, "an integer"
    elif isinstance(default, float):
        ok, expected = _as_number(value, float) is not None, "a number"
    else:
        return None  # names, sizes, durations, lists: Dask's own parsers and _kind
    if ok:
        return None
    return f"expected {expected} (Dask's default {default}), got {quote(value)}"


def _compression_problem(key: str, value: Any) -> str | None:
    """A ``comm.compression`` that names no compressor distributed has."""
    if key != "distributed.comm.compression" or value is None or value is False:
        return None
    from distributed.protocol.compression import compressions

    names = [str(k) for k in compressions if isinstance(k, str)]
    if value in names:
        return None
    return f"expected one of {', '.join(names)} or false, got {quote(value)}" + did_you_mean(
        str(value), names
    )


def memory_fractions(raw: Mapping[str, Any]) -> dict[str, tuple[str, float | bool]]:
    """The worker memory fractions the ``dask:`` section sets, each valid one as Dask reads it.

    Returns
    -------
    dict
        ``{"target": ("distributed.worker.memory.target", 0.9), ...}``: the dotted key as
        written and the fraction (or ``False``); values :func:`dask_value_problems` refuses
        are left out.
    """
    out: dict[str, tuple[str, float | bool]] = {}
    for key, value in _flat(raw or {}):
        head, _, leaf = key.rpartition(".")
        if head != "distributed.worker.memory" or leaf not in _FRACTIONS:
            continue
        number = None if value is False else _as_number(value, float)
        if value is False or (number is not None and 0 <= number <= 1):
            out[leaf] = (key, False if value is False else number)
    return out


def dask_value_problems(raw: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(dotted dask key, problem)`` for each duration or size value Dask would refuse.

    Parameters
    ----------
    raw
        The ``dask:`` section of an ``openclaw.config``.

    Returns
    -------
    list of (str, str)
        Empty when every checked value parses; ``null``/``false`` (Dask's "none") pass.
    """
    if not raw:
        return []
    import dask
    import distributed  # noqa: F401  # registers distributed's defaults with dask.config
    from dask.utils import parse_bytes, parse_timedelta

    problems = []
    seen: dict[str, str] = {}
    for key, value in _flat(raw):
        # dotted and nested forms of one key (Dask reads "-" and "_" alike): the later one
        # had won without a word
        canonical = key.replace("_", "-")
        if canonical in seen:
            problems.append((key, f"given twice in the dask section (as {seen[canonical]} too)"))
            continue
        seen[canonical] = key
        default = dask.config.get(key, default=_MISSING)
        if default is _MISSING:
            unknown = _near_miss(key, dask.config.config)
            if unknown:
                problems.append((key, unknown))
            continue
        scalar = _scalar_problem(key, default, value) or _compression_problem(key, value)
        if scalar:
            problems.append((key, scalar))
            continue
        kind = _kind(default)
        if kind is None or value is None or value is False:
            continue
        parse = parse_timedelta if kind == "duration" else parse_bytes
        # Dask reads text that is no number and unit wrongly ("" as 1 byte, "GiB" as one)
        text = quantity_text(value) if isinstance(value, str) else value
        try:
            ok = text is not None and not isinstance(value, bool) and parse(text) is not None
        except (ValueError, KeyError, TypeError):
            ok = False
        if ok and isinstance(value, str) and value.strip().startswith("."):
            # Dask would read ".5s" as 1.5 s: the value is passed to it as written
            problems.append((key, f"Dask reads {quote(value)} as 1{value.strip()}: write {text}"))
        elif not ok:
            example = "10s, 500ms or 2 minutes" if kind == "duration" else "64MiB or 1GB"
            default = dask.config.get(key)
            problems.append(
                (
                    key,
                    f"expected a {kind} such as {example} (Dask's default {default}), "
                    f"got {quote(value)}",
                )
            )
    return problems


def transport_problems(raw: Mapping[str, Any], transport: str) -> list[tuple[str, str]]:
    """``(dotted dask key, problem)`` for raw settings the config's transport cannot meet.

    ``distributed.comm.require-encryption: true`` beside a ``tcp`` (or ``ucx``) transport
    passed every check, then the scheduler refused its own listener: "RuntimeError: Cluster
    failed to start: Scheduler failed to start.", exit 1, no key named.
    """
    out = []
    for key, value in _flat(raw or {}):
        if key == "distributed.comm.require-encryption" and value is True and transport != "tls":
            out.append(
                (
                    key,
                    f"true makes every connection need TLS, but distributed."
                    f"communication_backend is {transport}: set it to tls (with the "
                    "distributed.tls files), or leave this key out",
                )
            )
    return out
