"""Machine facts (and versions) recorded with every benchmark and tuning report."""

from __future__ import annotations

import platform
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from openclaw_dask.config import Config, Hardware
from openclaw_dask.config.hardware import package_versions, software_versions

__all__ = ["cpu_model", "machine_facts", "versions"]

#: Vector extensions named in :func:`cpu_model`, widest first: the compiled climate step's
#: speed depends on the vector width more than on anything else a model name shows.
_VECTOR_FLAGS = ("avx512f", "sve", "avx2", "avx", "sse4_2", "asimd")

#: ``/proc/cpuinfo`` keys of the numbers that tell one generation of a CPU name from another.
_NUMBERS = (("cpu family", "family"), ("model", "model"))


def cpu_model(cpuinfo: str | None = None) -> str:
    """The CPU's model name, family and model, and its widest vector extension.

    Two cloud VMs may both call themselves "AMD EPYC" and differ 4x in the climate step
    (a 2017 core at 2 GHz with 128-bit vector units against a 2024 one with AVX-512); the
    family and model numbers and the vector extension tell their results apart.

    Parameters
    ----------
    cpuinfo : str, optional
        The text of ``/proc/cpuinfo``; read from there by default. Without it (not Linux),
        Python's own description of the processor.

    Examples
    --------
    >>> cpu_model("cpu family: 23\\nmodel: 1\\nmodel name: AMD EPYC\\nflags: fma avx2\\n")
    'AMD EPYC (family 23, model 1, avx2)'
    """
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text()
        except OSError:
            cpuinfo = ""
    fields: dict[str, str] = {}
    for line in cpuinfo.splitlines():
        key, sep, value = line.partition(":")
        if not sep:
            if fields:  # the first processor's block is enough
                break
            continue
        fields.setdefault(key.strip(), value.strip())
    name = fields.get("model name") or platform.processor() or platform.machine()
    flags = set(fields.get("flags", fields.get("Features", "")).split())
    details = [f"{label} {fields[key]}" for key, label in _NUMBERS if key in fields]
    details += [f for f in _VECTOR_FLAGS if f in flags][:1]
    return f"{name} ({', '.join(details)})" if details else name


def versions() -> dict[str, str]:
    """The versions a run's record holds, and what computes the suites' kernels besides.

    numba and llvmlite compile the climate step (the stencil suite and tune's workloads), and
    the BLAS numpy calls does the matmul suite's work: a report without them could not tell a
    compiler's or a BLAS's change from one of ours. The BLAS is this process's (the local
    workers load the same; an ssh node's may differ).
    """
    found = {**software_versions(), **package_versions(("numba", "llvmlite"))}
    import numpy  # noqa: F401  (threadpoolctl lists the libraries loaded: numpy's BLAS)
    from threadpoolctl import threadpool_info

    blas = [
        f"{i['internal_api']} {i['version']}" for i in threadpool_info() if i["user_api"] == "blas"
    ]
    if blas:
        found["blas"] = ", ".join(dict.fromkeys(blas))
    return found


def machine_facts(hw: Hardware) -> dict[str, Any]:
    """Cores, memory, NUMA layout, GPUs and allocators of this machine."""
    return {
        "host": platform.node(),
        "cpu": cpu_model(),
        "logical_cores": hw.logical_cores,
        "physical_cores": hw.physical_cores,
        "usable_cores": len(hw.usable_cores),
        "numa_nodes": len(hw.numa_nodes),
        "memory_bytes": hw.memory,
        "gpus": [g.name for g in hw.gpus],
        "allocators": sorted(hw.allocators),
    }


def config_facts(config: Config) -> dict[str, Any]:
    """What a benchmark or tune measured: the config's file, hash and every value.

    A report carried only the hash and the file, so a run with ``--set`` or ``OPENCLAW_*``
    values said neither them nor what the hash stood for. ``set`` holds each value not at
    its default and where it came from (the file, a variable, ``--set``).
    """
    values = config.to_nested()
    chosen = {k: v for k, v in config.sources.items() if v != "default"}
    return {
        "file": str(Path(config.file).resolve()) if config.file else None,
        "hash": config.config_hash(),
        "values": values,
        "set": {k: {"value": _rendered(values, k), "source": v} for k, v in chosen.items()},
    }


def _rendered(nested: dict[str, Any], path: str) -> Any:
    node: Any = nested
    for part in path.split("."):
        node = node[part]
    return node


def values_set(report: Mapping[str, Any]) -> list[tuple[str, Any, str]]:
    """``(key, value, source)`` of a report's config (:func:`config_facts`) for each value set
    neither by its config file nor by default (``--set``, ``OPENCLAW_*``)."""
    facts = report.get("config") or {}
    in_file = f"{report.get('config_file')}:" if report.get("config_file") else None
    return [
        (key, fact["value"], str(fact["source"]))
        for key, fact in facts.get("set", {}).items()
        if not (in_file and str(fact["source"]).startswith(in_file))
    ]
