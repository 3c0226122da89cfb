"""Checks of command-line values that click cannot express: durations, output paths, backends,
an empty ``--address``.

Both end as a :class:`ConfigError` (exit 2) naming the option, before anything starts.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click

from openclaw_dask.config.errors import ConfigError, Problem, did_you_mean
from openclaw_dask.config.types import Duration, InvalidValueError

#: the key of ``click.Context.meta`` under which the root command keeps the arguments it was
#: given (the CLI's ``GuardedGroup``)
ARGUMENTS = "openclaw_dask.arguments"


def command_line() -> str:
    """The command as typed: ``openclaw-dask`` and its arguments, quoted for a shell.

    A benchmark's or tune's JSON held the config, the machine and the versions, but not the
    options that shaped the run (``--quick``, ``--suite``, ``--budget``, ``--workload``): a
    reader could not rerun it. Outside a command (the Python API), ``sys.argv``.
    """
    ctx = click.get_current_context(silent=True)
    given = ctx.meta.get(ARGUMENTS) if ctx is not None else None
    return shlex.join(["openclaw-dask", *(sys.argv[1:] if given is None else given)])


def duration(value: str, option: str) -> float:
    """Seconds of a duration such as ``10m``, ``90s`` or ``1h`` (must be positive)."""
    try:
        return Duration().check(value)
    except InvalidValueError as exc:
        raise ConfigError([Problem(str(exc), origin=option)]) from None


def _writable(path: Path) -> bool:
    # try it: os.access says yes to root everywhere, even under /proc
    existed = path.exists()
    try:
        with path.open("a"):
            pass
    except OSError:
        return False
    if not existed:
        path.unlink()
    return True


def output_path(value: str | None, option: str) -> Path | None:
    """A file the command will write: in an existing folder, writable, not a folder.

    ``-`` is refused: it had written a file named ``-`` where a user meant standard output
    (``benchmark --json -`` is read before it gets here).
    """
    if value is None:
        return None
    if not value.strip():  # Path("") is the current folder
        raise ConfigError([Problem("expected a file path, got ''", origin=option)])
    if value == "-":
        message = f"expected a file name: {option} does not write to standard output"
        raise ConfigError([Problem(message, origin=option)])
    path = Path(value)
    parent = path.parent if str(path.parent) else Path(".")
    reason = None
    try:
        if path.is_dir():
            reason = "is a folder, not a file"
        elif value.endswith("/"):  # Path drops it: "x.json/" had written the file x.json
            reason = "a name that ends in / is a folder's, not a file's"
        elif not parent.is_dir():
            reason = f"its folder {parent} does not exist"
        elif not _writable(path):
            reason = "is not writable"
    except OSError as exc:  # a name too long: OSError and exit 1, after a whole benchmark too
        reason = (exc.strerror or str(exc)).lower()
    if reason:
        raise ConfigError([Problem(f"cannot write {value}: {reason}", origin=option)])
    return path


def given_address(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """``--address``, refused when empty (a click callback).

    ``--address "$SCHEDULER"`` with the variable unset was taken for no ``--address``:
    ``submit`` started a cluster of its own and ``cluster status`` showed the `cluster up`
    one, both without a word. Other malformed addresses are refused where they are used.
    """
    from openclaw_dask.runtime.state import address_problem

    if value is not None and not value.strip():
        raise ConfigError([Problem(str(address_problem(value)), origin="--address")])
    return value


def not_an_input(
    path: Path, option: str, inputs: Mapping[str, str | Path | None], instead: str
) -> None:
    """Refuse an output ``path`` (given as ``option``) that is one of the command's inputs.

    Parameters
    ----------
    path : Path
        The file the command will write.
    option : str
        The option that named it, for the message.
    inputs : mapping of str to path
        The files the command reads (or another of its outputs), by the option that names
        them (``"config"`` for a config found by the search order); ``None``: not given.
    instead : str
        What the message says after the file's name: what would replace it, what to do.
    """
    for given_option, given in inputs.items():
        try:
            same = bool(given) and Path(given).is_file() and Path(given).samefile(path)
        except OSError:  # the output is not there yet, or a name is too long to be a file's
            same = False
        if same:
            message = f"{path} is also the {given_option} file; {instead}"
            raise ConfigError([Problem(message, origin=option)])


class BackendChoice(click.Choice):
    """``--backend``: a cluster backend, or ``auto`` for what ``cluster.backend`` resolves to.

    A near miss is told its backend (``locl``: did you mean 'local'?); click's own message
    only lists them.
    """

    def __init__(self) -> None:
        super().__init__(["auto", "local", "cuda", "ssh", "mpi"])

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        try:
            chosen = super().convert(value, param, ctx)
        except click.BadParameter as exc:
            hint = did_you_mean(str(value), [str(c) for c in self.choices])
            if hint:
                exc.message = exc.message.rstrip(".") + hint
            raise
        return None if chosen == "auto" else chosen
