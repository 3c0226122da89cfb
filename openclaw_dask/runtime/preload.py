"""Preload that gives a worker the fingerprint of *its node's* ``openclaw.config``.

For workers started by hand, ``dask worker ADDR --preload openclaw_dask.runtime.preload``; the
SSH backend adds it to every remote worker. The worker reads its node's ``openclaw.config`` (the
usual search order in the worker's environment and working directory; ``OPENCLAW_*`` variables
apply) and carries that config's fingerprint. When the client registers its
:class:`~openclaw_dask.runtime.plugins.ConfigFingerprint`, a worker whose node config differs
(e.g. another ``distributed.sync_interval``) is refused by name instead of silently computing
with other settings.

With ``--openclaw-adopt-unconfigured`` (what the SSH backend passes) a node that has no config
of its own (no file found, no ``OPENCLAW_*`` variable) has nothing to disagree with: its workers
adopt the client's config instead of being compared as built-in defaults.

It also keeps a closing worker's lost heartbeat out of its log
(:func:`~openclaw_dask.runtime.terminal.quiet_closing_heartbeat`): an SSH cluster forwards
a remote worker's log to the client's terminal, where Dask's race in ``Worker.close`` showed a
traceback at a clean end.
"""

from __future__ import annotations

from typing import Any

import click

from openclaw_dask.config import Config, load_config
from openclaw_dask.runtime.plugins import OWN_FINGERPRINT
from openclaw_dask.runtime.terminal import quiet_closing_heartbeat


def has_own_config(config: Config) -> bool:
    """Whether ``config`` came from a file or ``OPENCLAW_*`` variables, not defaults alone."""
    return config.file is not None or any(s.startswith("env ") for s in config.sources.values())


@click.command()
@click.option("--openclaw-config", default=None, help="This node's openclaw.config.")
@click.option(
    "--openclaw-adopt-unconfigured",
    is_flag=True,
    help="A node without a config of its own adopts the client's.",
)
def dask_setup(worker: Any, openclaw_config: str | None, openclaw_adopt_unconfigured: bool) -> None:
    """Attach this node's config fingerprint to the worker; quiet its closing heartbeat."""
    quiet_closing_heartbeat()
    config = load_config(openclaw_config)
    if openclaw_adopt_unconfigured and not has_own_config(config):
        return
    setattr(worker, OWN_FINGERPRINT, config.fingerprint())
