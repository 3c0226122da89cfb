"""Machine facts and versions recorded with every benchmark and tuning report."""

from __future__ import annotations

import platform
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from openclaw_dask.config import Hardware

PACKAGES = ("openclaw-dask", "dask", "distributed", "numpy", "zarr", "xarray", "numcodecs")


def versions() -> dict[str, str | None]:
    """Installed versions of the packages a figure depends on."""
    out: dict[str, str | None] = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


def machine_facts(hw: Hardware) -> dict[str, Any]:
    """Cores, memory, NUMA layout, GPUs and allocators of this machine."""
    return {
        "host": platform.node(),
        "cpu": platform.processor() or platform.machine(),
        "logical_cores": hw.logical_cores,
        "physical_cores": hw.physical_cores,
        "usable_cores": len(hw.usable_cores),
        "numa_nodes": len(hw.numa_nodes),
        "memory_bytes": hw.memory,
        "gpus": [g.name for g in hw.gpus],
        "allocators": sorted(hw.allocators),
    }
