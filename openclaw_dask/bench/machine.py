"""Machine facts (and versions) recorded with every benchmark and tuning report."""

from __future__ import annotations

import platform
from typing import Any

from openclaw_dask.config import Hardware
from openclaw_dask.config.hardware import software_versions as versions

__all__ = ["machine_facts", "versions"]


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
