"""Console output shared by the commands: rich on a terminal, plain text in pipes."""

from __future__ import annotations

import os
import sys

from rich.console import Console
from rich.markup import escape

from openclaw_dask.config.errors import ConfigError

# In pipes and logs rich would assume 80 columns and fold table rows; give them room instead.
_WIDTH = None if sys.stdout.isatty() else int(os.environ.get("COLUMNS", "200"))
out = Console(highlight=False, soft_wrap=True, width=_WIDTH)
err = Console(stderr=True, highlight=False, soft_wrap=True, width=_WIDTH)


def print_problems(exc: ConfigError, title: str | None = None) -> None:
    """One line per problem on stderr, then a count."""
    if title:
        err.print(f"[bold red]{title}[/]")
    for problem in exc.problems:
        err.print(f"[red]error:[/] {escape(str(problem))}", emoji=False)
    n = len(exc.problems)
    err.print(f"[red]{n} problem{'s' if n != 1 else ''} found[/]")


def warn(message: str) -> None:
    """One warning line on stderr."""
    err.print(f"[yellow]warning:[/] {escape(message)}", emoji=False)
