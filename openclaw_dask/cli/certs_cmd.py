"""``openclaw-dask certs create DIR``: a CA and node certificates for the tls transport."""

from __future__ import annotations

import click

from openclaw_dask.cli.output import out
from openclaw_dask.config import ConfigError
from openclaw_dask.config.errors import Problem
from openclaw_dask.config.tls import NODE_DAYS, check_cert_host, check_days, create_certificates


def _hosts_option(
    ctx: click.Context, param: click.Parameter, value: tuple[str, ...]
) -> tuple[str, ...]:
    """Refuse a --host that is neither an IP address nor a DNS name (it would land in the SAN)."""
    try:
        return tuple(check_cert_host(h) for h in value)
    except ValueError as exc:
        raise click.BadParameter(str(exc).removeprefix("--host: "), ctx, param) from None


def _days_option(ctx: click.Context, param: click.Parameter, value: int) -> int:
    """Refuse a validity past year 9999 before anything is written (it overflowed mid-way)."""
    try:
        return check_days(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc).removeprefix(f"--days {value}: "), ctx, param) from None


@click.group("certs")
def certs_group() -> None:
    """TLS certificates for distributed.communication_backend: tls (alias grpc)."""


@certs_group.command("create")
@click.argument("directory", type=click.Path(file_okay=False))
@click.option(
    "--name",
    "names",
    multiple=True,
    metavar="NAME",
    help="A node certificate NAME.pem + NAME-key.pem (repeatable; default: node).",
)
@click.option(
    "--host",
    "hosts",
    multiple=True,
    metavar="HOST",
    callback=_hosts_option,
    help="Another host name or IP address the certificates are valid for (repeatable); "
    "localhost, 127.0.0.1, ::1 and this host's name are always in.",
)
@click.option(
    "--days",
    type=click.IntRange(1),
    default=NODE_DAYS,
    show_default=True,
    callback=_days_option,
    help="Validity of the node certificates (at most until the end of year 9999).",
)
@click.option("--force", is_flag=True, help="Replace existing node files (never the CA).")
def create_cmd(
    directory: str, names: tuple[str, ...], hosts: tuple[str, ...], days: int, force: bool
) -> None:
    """Make a CA (or reuse the one in DIRECTORY) and node certificates signed by it.

    Dask's TLS is mutual: scheduler, workers and clients each need a certificate from the same
    CA. Copy ca.pem and a node's pair to every machine; keep ca-key.pem private.
    """
    try:
        made = create_certificates(directory, names, hosts, overwrite=force, days=days)
    except (FileExistsError, ValueError) as exc:
        raise ConfigError([Problem(str(exc), origin="certs create")]) from None
    except OSError as exc:
        raise ConfigError(
            [Problem(f"cannot write there: {exc.strerror or exc}", file=directory)]
        ) from None
    verb = "reused" if made.ca_reused else "created"
    out.print(f"CA ({verb}): {made.ca_file}  (its key {made.ca_key} signs new nodes: keep it)")
    for node in made.nodes:
        out.print(f"node {node.name}: {node.cert}  key {node.key}", markup=False)
    out.print("\nPut this into openclaw.config (same CA everywhere, one node pair per machine):")
    out.print(made.config_lines(), markup=False, end="")
