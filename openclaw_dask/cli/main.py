"""``openclaw-dask``: the root command and its error handling.

Exit codes: 0 ok, 1 the run failed, 2 bad input (config, workflow, arguments), 130 interrupted,
141 the reader of the output went away (``| head -1``: quietly, as ``git log | head -1`` ends).
Bad input never shows a traceback; an unexpected error shows one line (and the traceback with
``OPENCLAW_DEBUG=1``).
"""

from __future__ import annotations

import os
import sys
import traceback
from typing import Any

import click
from rich.markup import escape

from openclaw_dask import __version__
from openclaw_dask.cli.args import ARGUMENTS
from openclaw_dask.cli.bench_cmd import benchmark_cmd, tune_cmd
from openclaw_dask.cli.certs_cmd import certs_group
from openclaw_dask.cli.cluster_cmd import cluster_group, memory_group
from openclaw_dask.cli.config_cmd import config_group
from openclaw_dask.cli.output import (
    DEBUG_ENV,
    err,
    no_space,
    print_problems,
    show_state_warnings,
    stop_if_reader_gone,
)
from openclaw_dask.cli.submit_cmd import submit_cmd
from openclaw_dask.config.errors import ConfigError
from openclaw_dask.exitcodes import (
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_STDOUT_CLOSED,
)
from openclaw_dask.runtime.terminal import quiet_after_interrupt, quit_at_third_interrupt


class GuardedGroup(click.Group):
    """A click group that turns our exceptions into messages and exit codes."""

    def make_context(
        self, info_name: str | None, args: list[str], *rest: Any, **kwargs: Any
    ) -> click.Context:
        given = list(args)  # (click consumes the list it parses)
        # `openclaw-dask --help | head -1`: click itself would exit 1 on the closed pipe
        try:
            ctx = super().make_context(info_name, args, *rest, **kwargs)
        except BrokenPipeError:
            stop_if_reader_gone()
            raise
        ctx.meta[ARGUMENTS] = given  # for the reports that record the command (every subcontext)
        return ctx

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except ConfigError as exc:
            print_problems(exc)
            sys.exit(EXIT_BAD_INPUT)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException):
            raise
        except KeyboardInterrupt:
            err.print("[yellow]interrupted[/]")
            sys.exit(EXIT_INTERRUPTED)
        except Exception as exc:
            if isinstance(exc, BrokenPipeError):  # a command's --help, a plain write: as rich's
                stop_if_reader_gone()  # (a socket's goes on: an unexpected error)
            debug = bool(os.environ.get(DEBUG_ENV))
            if debug:
                traceback.print_exc()
            full = no_space(exc)
            if full:  # not a bug of ours: say what to do
                err.print(f"[red]error:[/] {escape(full)}; free space and run the command again")
                sys.exit(EXIT_FAILED)
            err.print(f"[red]error:[/] {escape(f'{type(exc).__name__}: {exc}')}")
            if not debug:  # (with it set the traceback is just above: nothing left to ask for)
                err.print(f"(set {DEBUG_ENV}=1 for the traceback)")
            sys.exit(EXIT_FAILED)


@click.group(cls=GuardedGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="openclaw-dask")
def cli() -> None:
    """openclaw-dask: one checked openclaw.config -> a real Dask cluster -> workflows."""


cli.add_command(config_group)
cli.add_command(cluster_group)
cli.add_command(memory_group)
cli.add_command(submit_cmd)
cli.add_command(benchmark_cmd)
cli.add_command(tune_cmd)
cli.add_command(certs_group)


#: multiprocessing's resource tracker (a child of this process) unlinks the semaphores of worker
#: processes that were killed (for memory, by a signal) at exit, and warns that it did so: a
#: cleanup that worked, printed as "leaked semaphore objects" after the run's own message.
QUIET_TRACKER = "ignore:resource_tracker:UserWarning:multiprocessing.resource_tracker"


def main() -> None:
    """Console-script entry point."""
    # children read the filter from the environment (the tracker starts with the first worker)
    warnings = os.environ.get("PYTHONWARNINGS")
    if QUIET_TRACKER not in (warnings or ""):
        os.environ["PYTHONWARNINGS"] = f"{warnings},{QUIET_TRACKER}" if warnings else QUIET_TRACKER
    show_state_warnings()
    quit_at_third_interrupt()  # this process ends with its command
    try:
        cli(prog_name="openclaw-dask")
    except SystemExit as exc:
        quiet_if_interrupted(exc.code)
        raise


def quiet_if_interrupted(code: Any) -> None:
    """After a command that was interrupted (or lost the reader of its output), as the process
    ends: :func:`~openclaw_dask.runtime.terminal.quiet_after_interrupt`.

    Here, not in the commands: called there, it had left every later Dask log below critical
    and every later unraisable exception unsaid in a process that goes on after the command
    (``CliRunner`` in the tests, which then lost another test's Dask log record; a notebook).
    The interrupt and what it cut short are still alive (the ``SystemExit``'s context).
    """
    if code in (EXIT_INTERRUPTED, EXIT_STDOUT_CLOSED):
        quiet_after_interrupt()


if __name__ == "__main__":
    main()
