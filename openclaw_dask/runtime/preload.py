"""Preload for workers started by hand with ``dask worker ADDR --preload <this module>``.

The worker reads *its node's* ``openclaw.config`` (the usual search order; ``OPENCLAW_*``
variables apply) and carries that config's fingerprint. When the client registers its
:class:`~openclaw_dask.runtime.plugins.ConfigFingerprint`, a worker whose node config differs
(e.g. another ``distributed.sync_interval``) is refused by name instead of silently computing
with other settings.
"""

from __future__ import annotations

from typing import Any

import click

from openclaw_dask.config import load_config
from openclaw_dask.runtime.plugins import OWN_FINGERPRINT


@click.command()
@click.option("--openclaw-config", default=None, help="This node's openclaw.config.")
def dask_setup(worker: Any, openclaw_config: str | None) -> None:
    """Attach this node's config fingerprint to the worker."""
    config = load_config(openclaw_config)
    setattr(worker, OWN_FINGERPRINT, config.fingerprint())
