"""Values of the raw ``dask:`` section that Dask itself would refuse only once a cluster starts.

The section is passed to ``dask.config`` as it is (experts' escape hatch), and Dask reads most
values only where it uses them: ``distributed.comm.timeouts.connect: banana`` passed
``config validate`` and then failed ``submit`` with ``KeyError: 'Invalid time unit: banana.
Valid units are: ...'`` (sixty of them) after the run directory was made. A key whose Dask
default is a duration (``10s``) or a size (``64MiB``) must hold one too, checked with Dask's
own parsers; other keys and values are left to Dask, which may add keys of its own.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from openclaw_dask.config.errors import quote

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
    for key, value in _flat(raw):
        kind = _kind(dask.config.get(key, default=_MISSING))
        if kind is None or value is None or value is False:
            continue
        parse = parse_timedelta if kind == "duration" else parse_bytes
        try:
            # dask reads "" as 1 byte, and fails on it with an IndexError as a duration
            blank = isinstance(value, str) and not value.strip()
            ok = not blank and not isinstance(value, bool) and parse(value) is not None
        except (ValueError, KeyError, TypeError, IndexError):
            ok = False
        if not ok:
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
