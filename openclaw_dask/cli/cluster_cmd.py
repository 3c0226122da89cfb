"""``openclaw-dask cluster {up,down,status}`` and ``openclaw-dask memory compact``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from typing import Any

import click
from dask.utils import format_bytes
from rich.table import Table

from openclaw_dask.cli.config_cmd import SET_OPTION, SetCommand
from openclaw_dask.cli.output import err, out
from openclaw_dask.config import ConfigError
from openclaw_dask.config.errors import Problem
from openclaw_dask.runtime.state import pid_alive, read_state, state_dir
from openclaw_dask.translate import load_and_plan

UP_TIMEOUT = 120.0


@click.group("cluster")
def cluster_group() -> None:
    """Start, inspect and stop a long-lived local cluster that later commands attach to."""


@cluster_group.command("up", cls=SetCommand)
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help="Config file.")
@SET_OPTION
def up_cmd(config_path: str | None, overrides: tuple[str, ...]) -> None:
    """Start the cluster in the background and print its address and dashboard."""
    state = read_state()
    if state:
        raise ConfigError(
            [
                Problem(
                    f"a cluster is already running at {state['address']} (pid {state['pid']}); "
                    "stop it with `openclaw-dask cluster down` first",
                    origin="cluster up",
                )
            ]
        )
    config, plan = load_and_plan(config_path, overrides)  # bad input: exit 2, nothing started
    if plan.backend not in ("local", "cuda", "ssh"):
        raise ConfigError(
            [
                Problem(
                    f"cluster up starts local, cuda or ssh clusters, not {plan.backend}",
                    "cluster.backend",
                    origin="cluster up",
                )
            ]
        )
    log = state_dir() / "cluster.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "openclaw_dask.runtime.daemon"]
    if config.file:
        command += ["--config", config.file]
    for item in overrides:
        command += ["--set", item]
    with open(log, "w") as sink:
        proc = subprocess.Popen(
            command,
            stdout=sink,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    deadline = time.monotonic() + UP_TIMEOUT
    while time.monotonic() < deadline:
        state = read_state()
        if state and state.get("pid") == proc.pid:
            out.print(f"cluster up: {state['address']} ({plan.backend}, pid {proc.pid})")
            if state.get("dashboard"):
                out.print(f"dashboard: {state['dashboard']}")
            return
        if proc.poll() is not None:
            text = log.read_text().strip().splitlines()
            problems = [line.removeprefix("error: ") for line in text if line.startswith("error:")]
            raise ConfigError(
                [Problem(p, origin="cluster up") for p in problems]
                or [
                    Problem(
                        "the cluster process exited: " + " / ".join(text[-3:]), origin="cluster up"
                    )
                ]
            )
        time.sleep(0.2)
    proc.terminate()
    raise ConfigError(
        [
            Problem(
                f"the cluster did not start within {UP_TIMEOUT:g} s; see {log}", origin="cluster up"
            )
        ]
    )


def _state_origin(state: dict[str, Any] | None) -> Problem | None:
    """Where an address read from the state file came from, for connection errors."""
    return Problem("", origin=f"cluster up (pid {state['pid']})") if state else None


@cluster_group.command("down")
def down_cmd() -> None:
    """Stop the cluster started by `cluster up`."""
    state = read_state()
    if not state:
        err.print("no cluster is running")
        sys.exit(1)
    pid = int(state["pid"])
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 60
    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    if pid_alive(pid):
        os.kill(pid, signal.SIGKILL)
    out.print(f"cluster down: {state['address']} stopped")


@cluster_group.command("status")
@click.option("--address", help="Scheduler address (default: the cluster of `cluster up`).")
def status_cmd(address: str | None) -> None:
    """List the workers: threads, pinned cores, allocator, memory limit, config hash."""
    from openclaw_dask.runtime.cluster import connect
    from openclaw_dask.runtime.inspect import inspect_workers, refused_workers

    state = read_state()
    where = _state_origin(state) if not address else None
    address = address or (state or {}).get("address")
    if not address:
        err.print("no cluster is running (start one with `openclaw-dask cluster up`)")
        sys.exit(1)
    with connect(address, where) as client:
        facts = inspect_workers(client)
        refused = refused_workers(client)
        link = client.dashboard_link
    table = Table(title=f"cluster at {address}")
    for column in (
        "worker",
        "host",
        "threads",
        "cores",
        "allocator",
        "memory limit",
        "resources",
        "config hash",
    ):
        table.add_column(column)
    for worker, f in sorted(facts.items()):
        cores = ",".join(map(str, f["affinity"]))
        limit = format_bytes(f["memory_limit"]) if f["memory_limit"] else "none"
        resources = ",".join(f"{k}={v:g}" for k, v in f["resources"].items()) or "-"
        table.add_row(
            worker,
            f["host"],
            str(f["nthreads"]),
            cores,
            f["allocator"],
            limit,
            resources,
            f["config_hash"] or "-",
        )
    out.print(table)
    for worker, reason in refused.items():
        err.print(f"refused {worker}: {reason}", markup=False)
    if link:
        out.print(f"dashboard: {link}")


@click.group("memory")
def memory_group() -> None:
    """Memory tools for running clusters."""


@memory_group.command("compact")
@click.option("--address", help="Scheduler address (default: the cluster of `cluster up`).")
def compact_cmd(address: str | None) -> None:
    """Return freed memory to the OS in every worker; print RSS before and after."""
    from openclaw_dask.runtime.cluster import connect
    from openclaw_dask.runtime.memory import memory_compact

    state = read_state()
    where = _state_origin(state) if not address else None
    address = address or (state or {}).get("address")
    if not address:
        err.print("no cluster is running; pass --address")
        sys.exit(1)
    with connect(address, where) as client:
        result = memory_compact(client)
    for worker, r in sorted(result.items()):
        out.print(
            f"{worker}: {r['allocator']} {r['call']}: RSS "
            f"{format_bytes(r['rss_before'])} -> {format_bytes(r['rss_after'])}",
            markup=False,
        )
