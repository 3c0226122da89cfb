"""``openclaw-dask config {validate,show,plan,init}``."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import click

from openclaw_dask.atomicfile import atomic_write_text
from openclaw_dask.cli.args import BackendChoice
from openclaw_dask.cli.output import out, print_problems, warn
from openclaw_dask.config import ConfigError, Hardware, detect_hardware, load_config
from openclaw_dask.config.errors import Problem
from openclaw_dask.config.render import starter_config, yaml_value
from openclaw_dask.config.schema import KEYS
from openclaw_dask.config.types import InvalidValueError
from openclaw_dask.exitcodes import EXIT_BAD_INPUT
from openclaw_dask.translate import load_and_plan, plan_cluster

SET_OPTION = click.option(
    "--set",
    "overrides",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override a key, e.g. --set parallel.thread_pool_size=4 (repeatable; "
    "--set a.b=1 c.d=2 sets both).",
)

#: a bare ``section.key=value`` (or ``params.x=value``) token
_ASSIGNMENT = re.compile(r"[A-Za-z_][\w-]*(\.[\w-]+)+=")


class SetCommand(click.Command):
    """A command whose ``--set`` also takes the ``KEY=VALUE`` tokens right after its value.

    ``--set params.resolution=0.25 params.years=50`` (as people write it, and as the issues
    do) would otherwise stop at "unexpected extra argument"; click has no options with a
    variable number of values, so the tokens are rewritten to one ``--set`` each before
    parsing. Only dotted ``key=value`` tokens are taken, so a path argument after them is
    still the path.
    """

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, expand_set_values(args))


def expand_set_values(args: list[str]) -> list[str]:
    """``[--set, a.b=1, c.d=2]`` -> ``[--set, a.b=1, --set, c.d=2]`` (stops at ``--``)."""
    result: list[str] = []
    after_set = False  # the previous token was a --set value
    for i, token in enumerate(args):
        if token == "--":
            return result + args[i:]
        if after_set and _ASSIGNMENT.match(token):
            result += ["--set", token]
            continue
        result.append(token)
        after_set = token.startswith("--set=") or (i > 0 and args[i - 1] == "--set")
    return result


#: ``--config FILE`` beside the positional file, as the other commands take it (a user who
#: typed ``config show --config x`` had got "No such option")
CONFIG_OPTION = click.option(
    "--config",
    "config_file",
    type=click.Path(dir_okay=False),
    help="Config file (the same as giving it as PATH).",
)


def _one_file(path: str | None, config_file: str | None) -> str | None:
    """The config file given as PATH or as ``--config``; both must name one file."""
    if path and config_file and Path(path) != Path(config_file):
        raise ConfigError(
            [Problem(f"give one config file: {path} or {config_file}", origin="--config")]
        )
    return path or config_file


@click.group("config")
def config_group() -> None:
    """Check, show, plan and create openclaw.config files."""


@config_group.command("validate", cls=SetCommand)
@click.argument("paths", nargs=-1, type=click.Path(dir_okay=False))
@CONFIG_OPTION
@SET_OPTION
def validate_cmd(
    paths: tuple[str, ...], config_file: str | None, overrides: tuple[str, ...]
) -> None:
    """Check config files (default: the one the search order finds) against this machine."""
    paths = (*paths, config_file) if config_file else paths
    failed = 0
    for path in paths or (None,):
        try:
            config, plan = load_and_plan(path, overrides)
        except ConfigError as exc:
            failed += 1
            # no path given: the file the search order found ($OPENCLAW_CONFIG, say), or none
            found = getattr(exc.partial, "file", None) or next(
                (p.file for p in exc.problems if p.file), None
            )
            print_problems(exc, title=_invalid_title(exc, str(path or found or "")))
            continue
        name = config.file or "built-in defaults"
        layout = plan.layout
        if "processes" in layout:
            shape = f"{layout['processes']} worker(s) x {layout['threads_per_worker']} thread(s)"
        else:
            shape = f"{len(layout.get('nodes', []))} node(s)"
        out.print(f"[green]ok[/] {name}: {plan.backend} cluster, {shape}")
        for note in plan.all_notes:
            out.print(f"   note: {note}")
    if failed:
        sys.exit(EXIT_BAD_INPUT)


def _invalid_title(exc: ConfigError, file: str) -> str:
    """``LAYER: invalid``, naming each layer a problem came from as its line does (the file,
    ``env OPENCLAW_...``, ``--set``), and the config they were laid on when it is not one.

    It said "built-in defaults: invalid" of a bad ``--set`` or environment variable.
    """
    base = file or "the built-in defaults"
    layers = list(dict.fromkeys(p.file or p.origin or base for p in exc.problems))
    title = f"{', '.join(layers)}: invalid"
    return title if base in layers else f"{title} (on {base})"


@config_group.command("show", cls=SetCommand)
@click.argument("path", required=False, type=click.Path(dir_okay=False))
@click.option("--sources", is_flag=True, help="Show where each value came from.")
@click.option("--json", "as_json", is_flag=True, help="Print the resolved config as JSON.")
@CONFIG_OPTION
@SET_OPTION
def show_cmd(
    path: str | None,
    sources: bool,
    as_json: bool,
    config_file: str | None,
    overrides: tuple[str, ...],
) -> None:
    """Print every resolved value (and, with --sources, its origin)."""
    config = load_config(_one_file(path, config_file), overrides)
    if as_json:
        data = config.to_nested()
        if sources:
            data = {"values": data, "sources": config.sources}
        out.print_json(json.dumps(data, default=str))
        return
    out.print(f"# config file: {config.file or 'none (built-in defaults)'}", markup=False)
    width = max(len(k.path) for k in KEYS)
    for key in KEYS:
        value = yaml_value(key.type.render(config[key.path]))
        line = f"{key.path:<{width}}  {value}"
        if sources:
            line = f"{line:<{width + 24}}  # {config.sources[key.path]}"
        out.print(line, markup=False)


def _load_hardware(path: str | None) -> Hardware:
    if not path:
        return detect_hardware()
    try:
        return Hardware.from_dict(json.loads(Path(path).read_text()))
    except InvalidValueError as exc:
        # one line per field: FILE: field: what was expected, got ...
        raise ConfigError([Problem(message, key, path) for key, message in exc.issues]) from None
    except OSError as exc:
        raise ConfigError([Problem(f"cannot be read: {exc.strerror or exc}", "", path)]) from None
    except ValueError as exc:  # json.JSONDecodeError; UnicodeDecodeError
        raise ConfigError(
            [
                Problem(
                    f"not a hardware description (JSON from `config plan --show-hardware`): {exc}",
                    "",
                    path,
                )
            ]
        ) from None


@config_group.command("plan", cls=SetCommand)
@click.argument("path", required=False, type=click.Path(dir_okay=False))
@click.option(
    "--backend",
    type=BackendChoice(),
    help="Plan for this backend instead of cluster.backend (auto: its own choice).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON.")
@click.option(
    "--hardware",
    "hardware_file",
    type=click.Path(dir_okay=False),
    help="Plan for the machine described in this JSON file (see --show-hardware).",
)
@click.option("--show-hardware", is_flag=True, help="Print this machine's description as JSON.")
@CONFIG_OPTION
@SET_OPTION
def plan_cmd(
    path: str | None,
    backend: str | None,
    as_json: bool,
    hardware_file: str | None,
    show_hardware: bool,
    config_file: str | None,
    overrides: tuple[str, ...],
) -> None:
    """Show the Dask cluster a config becomes, without starting anything."""
    path = _one_file(path, config_file)
    hw = _load_hardware(hardware_file)
    if show_hardware:
        out.print_json(json.dumps(hw.to_dict()))
        return
    config = load_config(path, overrides)
    plan = plan_cluster(config, hw, backend=backend, strict=False)
    for warning in plan.warnings:
        warn(warning)
    if as_json:
        out.print(plan.to_json(), markup=False, highlight=False)
        return
    out.print(f"[bold]backend:[/] {plan.backend}    [bold]class:[/] {plan.cluster_class}")
    for note in plan.all_notes:
        out.print(f"  note: {note}", markup=False)
    sections = [
        ("cluster kwargs", plan.cluster_kwargs),
        ("layout", plan.layout),
        ("worker environment", plan.worker_env),
        ("dask config", plan.dask_config),
    ]
    for title, data in sections:
        out.print(f"[bold]{title}:[/]")
        for key, value in data.items():
            out.print(f"  {key}: {json.dumps(value, default=str)}", markup=False)
    out.print("[bold]worker plugins:[/]")
    for plugin in plan.worker_plugins:
        out.print(f"  {plugin['class']}", markup=False)
    if plan.launch_command:
        from openclaw_dask.runtime.mpi_launch import format_command, launch_env

        out.print("[bold]launch:[/]")
        # a line to paste into a shell: the affinity variable's "[[0], [1]]" split unquoted,
        # and mpirun then took "[1]]" for the program; as root Open MPI wants its permission
        out.print("  " + format_command(plan.launch_command, launch_env()), markup=False)


@config_group.command("init")
@click.option(
    "-o",
    "--output",
    default="openclaw.config",
    show_default=True,
    type=click.Path(dir_okay=False),
    help="Where to write the starter config.",
)
@click.option("--force", is_flag=True, help="Overwrite an existing file.")
def init_cmd(output: str, force: bool) -> None:
    """Write a commented starter config (every key at its default) for this machine."""
    if not output.strip() or output == "-":
        # click takes "" for the current directory's "." and "-" for a file named "-"
        raise ConfigError([Problem("expected a file name to write to", origin="--output")])
    target = Path(output)
    if target.exists() and not force:
        raise ConfigError([Problem("already exists; pass --force to overwrite it", "", output)])
    try:
        # whole or not at all: a full disk must not cut the config that --force replaces
        atomic_write_text(target, starter_config(detect_hardware()))
    except OSError as exc:
        raise ConfigError([Problem(f"cannot write: {exc.strerror}", "", output)]) from None
    out.print(f"wrote {target} (check it with `openclaw-dask config validate {target}`)")
