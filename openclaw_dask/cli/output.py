"""Console output shared by the commands: rich on a terminal, plain text in pipes."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from openclaw_dask.config.errors import ConfigError

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)


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
