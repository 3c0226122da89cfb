"""Type checks of the public API's arguments, so that a wrong one is a ``TypeError`` naming it.

Without them a string given as ``overrides`` was iterated a character at a time (twenty
"expected KEY=VALUE, got 'p'" problems) and ``plan_cluster("x.config")`` ended in an
``AttributeError`` deep inside the planner.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

from openclaw_dask.config.errors import ConfigError, Problem, did_you_mean, quote
from openclaw_dask.config.hardware import Hardware

#: The backends a ``backend`` argument may force (``None``: ``cluster.backend``'s choice).
BACKENDS = ("local", "cuda", "ssh", "mpi")


def _got(value: Any) -> str:
    return f"got {type(value).__name__} {value!r}"[:120]


def check_path(func: str, name: str, value: Any) -> Any:
    """``value`` must be ``None``, a ``str`` or an ``os.PathLike``; returned with a leading
    ``~`` expanded.

    A path given from Python passes no shell: ``run_workflow("~/wf.yaml")`` had said "file not
    found", and a ``run_dir="~/runs/a"`` would have made a folder named ``~`` in the current
    one, where a CLI user's shell expands it.
    """
    if value is None:
        return None
    if not isinstance(value, str | os.PathLike):
        raise TypeError(
            f"{func}: {name} must be a file path (str or os.PathLike) or None, {_got(value)}"
        )
    return os.path.expanduser(value)


def check_overrides(func: str, value: Any, mapping: bool = True) -> None:
    """``value`` must be ``None``, a list of ``"key=value"`` strings or (when allowed) a mapping."""
    if value is None or (mapping and isinstance(value, Mapping)):
        return
    expected = "a list of 'section.key=value' strings" + (" or a mapping" if mapping else "")
    if isinstance(value, str | bytes):
        raise TypeError(f"{func}: overrides must be {expected}, {_got(value)} (put it in a list)")
    if isinstance(value, Mapping):
        # iterated, a mapping gives its keys alone: "expected KEY=VALUE, got 'params.size'"
        raise TypeError(f"{func}: overrides must be {expected}, {_got(value)}")
    if not isinstance(value, Iterable):
        raise TypeError(f"{func}: overrides must be {expected}, {_got(value)}")
    # a generator is left whole: checking its items would use them up
    items = value if isinstance(value, list | tuple) else ()
    bad = [item for item in items if not isinstance(item, str)]
    if bad:
        raise TypeError(f"{func}: overrides must be {expected}, an item {_got(bad[0])[4:]}")


def check_instance(
    func: str, name: str, value: Any, kind: type, shown: str, hint: str = ""
) -> None:
    """``value`` must be a ``kind``; ``shown`` names it (``an openclaw_dask.Config``)."""
    if not isinstance(value, kind):
        raise TypeError(f"{func}: {name} must be {shown}, {_got(value)}{hint}")


def check_flag(func: str, name: str, value: Any, none: bool = False) -> None:
    """``value`` must be ``True`` or ``False`` (or ``None`` where ``none``): a string is true to
    Python, and ``report="no"`` had written the report, ``dry_run="False"`` run nothing."""
    if not (isinstance(value, bool) or (none and value is None)):
        raise TypeError(f"{func}: {name} must be True or False{' or None' * none}, {_got(value)}")


def check_callable(func: str, name: str, value: Any, takes: str) -> None:
    """``value`` must be ``None`` or callable (``takes`` says with what)."""
    if value is not None and not callable(value):
        raise TypeError(f"{func}: {name} must be a function of {takes} or None, {_got(value)}")


def check_names(func: str, name: str, value: Any) -> None:
    """``value`` must be ``None`` or a list of ``str`` (suite names): a lone string was read a
    letter at a time ("unknown suite 's'", "unknown suite 't'", ...)."""
    if value is None:
        return
    expected = f"{func}: {name} must be a list of names"
    if isinstance(value, str | bytes):
        raise TypeError(f"{expected}, {_got(value)} (put it in a list)")
    if not isinstance(value, Iterable) or isinstance(value, Mapping):
        raise TypeError(f"{expected}, {_got(value)}")
    items = value if isinstance(value, list | tuple) else ()
    bad = [item for item in items if not isinstance(item, str)]
    if bad:
        raise TypeError(f"{expected}, an item {_got(bad[0])[4:]}")


def check_backend(value: Any) -> None:
    """``value`` must be ``None`` or one of :data:`BACKENDS`.

    The CLI's ``--backend`` offers only these; from Python another name had ended in a
    ``KeyError`` of the planners' table.

    Raises
    ------
    TypeError
        ``value`` is not a string.
    ConfigError
        An unknown name, with the closest one.
    """
    if value is None or value in BACKENDS:
        return
    expected = f"{', '.join(BACKENDS)}, or None for cluster.backend's choice"
    if not isinstance(value, str):
        raise TypeError(f"backend must be {expected}, {_got(value)}")
    # "auto" is the CLI's word for None
    hint = "; None is that choice" if value == "auto" else did_you_mean(value, BACKENDS)
    message = f"unknown backend {quote(value)}: expected {expected}{hint}"
    raise ConfigError([Problem(message, origin="backend")])


def check_hardware_arg(func: str, value: Any) -> None:
    """``value`` must be ``None`` or a :class:`~openclaw_dask.config.hardware.Hardware`."""
    if value is not None:
        hint = " (detect_hardware() describes this machine)"
        check_instance(func, "hardware", value, Hardware, "an openclaw_dask.Hardware or None", hint)
