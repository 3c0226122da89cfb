"""What this machine has: cores, NUMA nodes, RAM, GPUs, optional packages, allocators.

Everything is read from ``/sys``, ``/proc``, NVML and package metadata without importing heavy
packages. :class:`Hardware` is plain data (``to_dict``/``from_dict``) so that plans for another
machine (a GPU workstation, an HPC node) can be built and tested here by passing its description.
"""

from __future__ import annotations

import glob
import importlib.metadata
import os
import platform
import socket
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from openclaw_dask.config.types import parse_cpu_list

#: Optional distributions whose presence changes what we can do.
OPTIONAL_PACKAGES = (
    "dask-cuda",
    "cupy",
    "cupy-cuda12x",
    "distributed-ucxx",
    "distributed-ucxx-cu12",
    "asyncssh",
    "dask-mpi",
    "mpi4py",
    "nvidia-ml-py",
    "pynvml",
)

#: Shared-library names of each allocator, most preferred first.
ALLOCATOR_LIBS = {
    "jemalloc": ("libjemalloc.so.2", "libjemalloc.so"),
    "tcmalloc": ("libtcmalloc.so.4", "libtcmalloc_minimal.so.4", "libtcmalloc.so"),
}
ALLOCATOR_INSTALL = {
    "jemalloc": "apt-get install libjemalloc2 (Debian/Ubuntu) or conda install -c conda-forge "
    "jemalloc",
    "tcmalloc": "apt-get install libgoogle-perftools4 (Debian/Ubuntu) or conda install -c "
    "conda-forge gperftools",
}


@dataclass(frozen=True)
class Gpu:
    """One GPU as NVML reports it."""

    index: int
    name: str
    memory: int


@dataclass(frozen=True)
class Hardware:
    """A machine description.

    Parameters
    ----------
    logical_cores
        Logical CPUs in the machine.
    usable_cores
        Core ids this process may run on (``sched_getaffinity``; containers and batch systems
        restrict it).
    physical_cores
        Distinct (package, core) pairs among the usable cores.
    numa_nodes
        ``{node id: [core ids]}`` restricted to usable cores.
    memory
        Total RAM in bytes.
    gpus
        GPUs found through NVML.
    packages
        ``{distribution: version}`` of the optional packages that are installed.
    allocators
        ``{allocator: path to its shared library}`` for those found on disk.
    siblings
        ``{core id: its hyper-thread siblings}``, used to pin to physical cores.
    interfaces
        Network interface names (``lo``, ``eth0``, ``ib0``).
    """

    logical_cores: int
    usable_cores: tuple[int, ...]
    physical_cores: int
    numa_nodes: dict[int, list[int]]
    memory: int
    gpus: tuple[Gpu, ...] = ()
    packages: dict[str, str] = field(default_factory=dict)
    allocators: dict[str, str] = field(default_factory=dict)
    siblings: dict[int, list[int]] = field(default_factory=dict)
    interfaces: tuple[str, ...] = ()

    def has_package(self, name: str) -> bool:
        """True if ``name`` (or one of its CUDA-suffixed wheels) is installed."""
        return any(p == name or p.startswith(name + "-cu") for p in self.packages)

    def allocator_path(self, name: str) -> str | None:
        """Path of the allocator library, or ``None`` when it is not installed."""
        return self.allocators.get(name)

    def cpulist(self) -> str:
        """Usable cores in Linux cpulist notation (``0-3,8``)."""
        return format_cpu_list(self.usable_cores)

    def physical_core_ids(self) -> list[int]:
        """One logical core per physical core (the lowest sibling), usable ones only."""
        if not self.siblings:
            return list(self.usable_cores)
        return sorted({min(self.siblings.get(c, [c])) for c in self.usable_cores})

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able form."""
        d = asdict(self)
        d["usable_cores"] = list(self.usable_cores)
        d["numa_nodes"] = {str(k): v for k, v in self.numa_nodes.items()}
        d["siblings"] = {str(k): v for k, v in self.siblings.items()}
        d["interfaces"] = list(self.interfaces)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Hardware:
        """Inverse of :meth:`to_dict` (also accepts hand-written descriptions)."""
        usable = tuple(d.get("usable_cores") or range(d["logical_cores"]))
        numa = {int(k): list(v) for k, v in (d.get("numa_nodes") or {0: list(usable)}).items()}
        return cls(
            logical_cores=int(d["logical_cores"]),
            usable_cores=usable,
            physical_cores=int(d.get("physical_cores", len(usable))),
            numa_nodes=numa,
            memory=int(d["memory"]),
            gpus=tuple(Gpu(**g) for g in d.get("gpus", ())),
            packages=dict(d.get("packages", {})),
            allocators=dict(d.get("allocators", {})),
            siblings={int(k): list(v) for k, v in d.get("siblings", {}).items()},
            interfaces=tuple(d.get("interfaces", ())),
        )


def format_cpu_list(cores: Any) -> str:
    """Format core ids as a Linux cpulist (``[0,1,2,5]`` -> ``"0-2,5"``)."""
    cores = sorted(set(cores))
    parts: list[str] = []
    start = prev = None
    for c in [*cores, None]:
        if c is not None and prev is not None and c == prev + 1:
            prev = c
            continue
        if start is not None:
            parts.append(str(start) if start == prev else f"{start}-{prev}")
        start = prev = c
    return ",".join(parts)


def _read(path: str | Path) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def _numa_nodes(usable: set[int], sys_root: str) -> dict[int, list[int]]:
    nodes: dict[int, list[int]] = {}
    for path in sorted(glob.glob(f"{sys_root}/devices/system/node/node[0-9]*")):
        text = _read(f"{path}/cpulist")
        if text:
            cores = [c for c in parse_cpu_list(text) if c in usable]
            if cores:
                nodes[int(path.rsplit("node", 1)[1])] = cores
    return nodes or {0: sorted(usable)}


def _topology(usable: set[int], sys_root: str) -> tuple[int, dict[int, list[int]]]:
    """Physical core count and hyper-thread siblings among the usable cores."""
    cores: set[tuple[str, str]] = set()
    siblings: dict[int, list[int]] = {}
    for c in sorted(usable):
        base = f"{sys_root}/devices/system/cpu/cpu{c}/topology"
        package, core = _read(f"{base}/physical_package_id"), _read(f"{base}/core_id")
        sib = _read(f"{base}/thread_siblings_list")
        if package is None or core is None:
            return len(usable), {}
        cores.add((package, core))
        if sib:
            siblings[c] = [s for s in parse_cpu_list(sib) if s in usable]
    return len(cores), siblings


def _gpus() -> tuple[Gpu, ...]:
    try:
        import pynvml  # provided by nvidia-ml-py
    except ImportError:
        return ()
    try:
        pynvml.nvmlInit()
    except Exception:  # NVMLError_LibraryNotFound / DriverNotLoaded: no usable GPU
        return ()
    try:
        out = []
        for i in range(pynvml.nvmlDeviceGetCount()):
            h = pynvml.nvmlDeviceGetHandleByIndex(i)
            name = pynvml.nvmlDeviceGetName(h)
            name = name.decode() if isinstance(name, bytes) else name
            out.append(Gpu(i, name, int(pynvml.nvmlDeviceGetMemoryInfo(h).total)))
        return tuple(out)
    finally:
        pynvml.nvmlShutdown()


def package_versions(names: Iterable[str]) -> dict[str, str]:
    """Installed versions of the distributions ``names`` (missing ones left out)."""
    found = {}
    for name in names:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return found


#: What a result depends on: recorded in run.json and in benchmark reports.
CORE_PACKAGES = ("openclaw-dask", "dask", "distributed", "numpy", "xarray", "zarr", "numcodecs")


def software_versions() -> dict[str, str]:
    """Python and the core packages' versions."""
    return {"python": platform.python_version(), **package_versions(CORE_PACKAGES)}


def _packages() -> dict[str, str]:
    return package_versions(OPTIONAL_PACKAGES)


def _library_dirs() -> list[str]:
    dirs = [os.path.join(sys.prefix, "lib")]
    if os.environ.get("CONDA_PREFIX"):
        dirs.append(os.path.join(os.environ["CONDA_PREFIX"], "lib"))
    dirs += [
        "/usr/lib/x86_64-linux-gnu",
        "/usr/lib/aarch64-linux-gnu",
        "/usr/lib64",
        "/usr/lib",
        "/usr/local/lib",
        "/lib/x86_64-linux-gnu",
        "/lib64",
    ]
    return dirs


def _ldconfig() -> dict[str, str]:
    try:
        text = subprocess.run(
            ["ldconfig", "-p"], capture_output=True, text=True, timeout=10, check=False
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    out: dict[str, str] = {}
    for line in text.splitlines():
        name, _, path = line.strip().partition(" => ")
        if path:
            out.setdefault(name.split(" ", 1)[0], path)
    return out


def find_allocators() -> dict[str, str]:
    """``{allocator: library path}`` for jemalloc/tcmalloc found on disk."""
    known = _ldconfig()
    found = {}
    for allocator, names in ALLOCATOR_LIBS.items():
        for name in names:
            path = next(
                (
                    os.path.join(d, name)
                    for d in _library_dirs()
                    if os.path.isfile(os.path.join(d, name))
                ),
                known.get(name),
            )
            if path:
                found[allocator] = path
                break
    return found


def _memory() -> int:
    text = _read("/proc/meminfo") or ""
    for line in text.splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) * 1024
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


@lru_cache(maxsize=1)
def detect_hardware(sys_root: str = "/sys") -> Hardware:
    """Describe this machine (cached: the answer does not change within a process).

    Parameters
    ----------
    sys_root
        Root of the sysfs tree (tests point it at a fake tree of another machine).
    """
    usable = set(os.sched_getaffinity(0))
    physical, siblings = _topology(usable, sys_root)
    return Hardware(
        logical_cores=os.cpu_count() or len(usable),
        usable_cores=tuple(sorted(usable)),
        physical_cores=physical,
        numa_nodes=_numa_nodes(usable, sys_root),
        memory=_memory(),
        gpus=_gpus(),
        packages=_packages(),
        allocators=find_allocators(),
        siblings=siblings,
        interfaces=tuple(name for _, name in socket.if_nameindex()),
    )
