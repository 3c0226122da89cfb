"""What this machine has: cores, NUMA nodes, RAM, GPUs, optional packages, allocators.

Everything is read from ``/sys``, ``/proc``, NVML and package metadata without importing heavy
packages. :class:`Hardware` is plain data (``to_dict``/``from_dict``) so that plans for another
machine (a GPU workstation, an HPC node) can be built and tested here by passing its description.
"""

from __future__ import annotations

import glob
import importlib.metadata
import json
import os
import platform
import socket
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, fields, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from openclaw_dask.config.errors import did_you_mean, shorten
from openclaw_dask.config.types import InvalidValueError, parse_cpu_list

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
        Names of the network interfaces with an IPv4 address (``lo``, ``eth0``, ``ib0``):
        those ``cluster.interface`` may name, as Dask listens on an interface's IPv4 address.
    addresses
        IP addresses of those interfaces (what a server here can bind to); empty: not known.
        Left out of :meth:`to_dict`; a hand-written description may give them.
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
    addresses: tuple[str, ...] = ()

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
        # a list, as a JSON file reads back: run_workflow's record had () where run.json has []
        d["gpus"] = list(d["gpus"])
        # run.json and the benchmark reports record this form: they carry no IP addresses
        # (a description read back has none: the checks that use them are skipped)
        del d["addresses"]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Hardware:
        """Inverse of :meth:`to_dict` (also accepts hand-written descriptions).

        Parameters
        ----------
        d
            A description as :meth:`to_dict` writes it; ``logical_cores`` and ``memory`` are
            required, the other fields default to what a plain machine has.

        Returns
        -------
        Hardware

        Raises
        ------
        InvalidValueError
            ``d`` is not such a description; ``issues`` holds ``(field, message)`` for every
            problem found (see :func:`hardware_issues`).
        """
        issues = hardware_issues(d)
        if issues:
            raise InvalidValueError(issues)
        usable = tuple(d.get("usable_cores") or range(d["logical_cores"]))
        numa = {int(k): list(v) for k, v in (d.get("numa_nodes") or {0: list(usable)}).items()}
        return cls(
            logical_cores=int(d["logical_cores"]),
            usable_cores=usable,
            physical_cores=int(d.get("physical_cores") or len(usable)),
            numa_nodes=numa,
            memory=int(d["memory"]),
            gpus=tuple(Gpu(**g) for g in d.get("gpus") or ()),
            packages=dict(d.get("packages") or {}),
            allocators=dict(d.get("allocators") or {}),
            siblings={int(k): list(v) for k, v in (d.get("siblings") or {}).items()},
            interfaces=tuple(d.get("interfaces") or ()),
            addresses=tuple(d.get("addresses") or ()),
        )


def _got(value: Any) -> str:
    """A value as the JSON file spells it (``true``, ``null``, ``"x"``), shortened when long."""
    return shorten(json.dumps(value, default=repr))


def _is_int(value: Any, least: int) -> bool:
    # bool is an int subclass, but `true` for a core count is a mistake, not 1
    return isinstance(value, int) and not isinstance(value, bool) and value >= least


# lists or tuples: a JSON file has lists, a Hardware built in Python may have tuples


def _core_list_issue(value: Any) -> str | None:
    if isinstance(value, list | tuple) and all(_is_int(c, 0) for c in value):
        return None
    return f"expected a list of core ids (integers >= 0), got {_got(value)}"


def _core_map_issues(field: str, value: Any) -> list[tuple[str, str]]:
    """``{id: [core ids]}`` (numa_nodes, siblings); ids are strings in JSON."""
    if not isinstance(value, dict):
        return [(field, f"expected an object {{id: [core ids]}}, got {_got(value)}")]
    issues = []
    for key, cores in value.items():
        if not (_is_int(key, 0) or (isinstance(key, str) and key.isdecimal())):
            issues.append((field, f"expected ids that are integers >= 0, got {_got(key)}"))
        elif problem := _core_list_issue(cores):
            issues.append((f"{field}.{key}", problem))
    return issues


def _strings_issue(value: Any, mapping: bool) -> str | None:
    if mapping:
        if isinstance(value, dict) and all(
            isinstance(k, str) and isinstance(v, str) for k, v in value.items()
        ):
            return None
        return f"expected an object of strings {{name: text}}, got {_got(value)}"
    if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        return None
    return f"expected a list of strings, got {_got(value)}"


def _gpu_issues(value: Any) -> list[tuple[str, str]]:
    if not isinstance(value, list | tuple):
        return [("gpus", f"expected a list of {{index, name, memory}} objects, got {_got(value)}")]
    issues: list[tuple[str, str]] = []
    for i, gpu in enumerate(value):
        where = f"gpus.{i}"
        if not isinstance(gpu, dict):
            issues.append((where, f"expected an object {{index, name, memory}}, got {_got(gpu)}"))
            continue
        for key in gpu.keys() - {"index", "name", "memory"}:
            issues.append((f"{where}.{key}", "unknown field; a GPU has index, name and memory"))
        checks = {
            "index": (_is_int(gpu.get("index"), 0), "an integer >= 0"),
            "name": (isinstance(gpu.get("name"), str), "a string"),
            "memory": (_is_int(gpu.get("memory"), 0), "bytes as an integer >= 0"),
        }
        for key, (ok, expected) in checks.items():
            if key not in gpu:
                issues.append((f"{where}.{key}", f"missing; expected {expected}"))
            elif not ok:
                issues.append((f"{where}.{key}", f"expected {expected}, got {_got(gpu[key])}"))
    return issues


#: What a hand-written description calls a field ("cpus" is nearest "gpus" by spelling).
FIELD_WORDS = {
    "cpus": "logical_cores",
    "ncpus": "logical_cores",
    "cores": "logical_cores",
    "threads": "logical_cores",
    "ram": "memory",
    "mem": "memory",
}


def _field_hint(key: str, known: set[str]) -> str:
    meant = FIELD_WORDS.get(key.casefold())
    return f"; did you mean '{meant}'?" if meant else did_you_mean(key, known)


def hardware_issues(d: Any) -> list[tuple[str, str]]:
    """Every problem of a machine description, as ``(field, message)`` pairs.

    A description comes from a file (``config plan --hardware FILE``), often hand-written: a
    wrong type used to surface as an ``AttributeError``, and a negative count produced a plan.

    Parameters
    ----------
    d
        What the JSON file holds.

    Returns
    -------
    list of (str, str)
        Empty when :meth:`Hardware.from_dict` can build the description. ``field`` is ``""``
        for the whole description, else a dotted path such as ``gpus.0.memory``.
    """
    what = "not a hardware description (JSON from `config plan --show-hardware`)"
    if not isinstance(d, dict):
        return [("", f"{what}: expected a JSON object, got {_got(d)}")]
    known = {f.name for f in fields(Hardware)}
    issues: list[tuple[str, str]] = [
        (str(key), f"unknown field{_field_hint(str(key), known)}") for key in d if key not in known
    ]
    missing = [key for key in ("logical_cores", "memory") if key not in d]
    if missing:
        issues.append(("", f"{what}: missing {' and '.join(missing)}"))
    present = {k: v for k, v in d.items() if k in known and v is not None}
    numbers = {
        "logical_cores": (1, "a number of logical CPUs (an integer >= 1)"),
        "physical_cores": (1, "a number of physical cores (an integer >= 1)"),
        "memory": (0, "RAM in bytes (an integer >= 0)"),
    }
    for key, (least, expected) in numbers.items():
        if key in present and not _is_int(present[key], least):
            issues.append((key, f"expected {expected}, got {_got(present[key])}"))
    if "usable_cores" in present:
        if problem := _core_list_issue(present["usable_cores"]):
            issues.append(("usable_cores", problem))
        elif not present["usable_cores"]:
            # (it had meant every core: `or range(logical_cores)` below)
            issues.append(
                ("usable_cores", "expected at least one core id; leave it out for every core")
            )
        elif _is_int(logical := present.get("logical_cores"), 1) and (
            len(set(present["usable_cores"])) > logical
        ):
            issues.append(("usable_cores", f"more cores than logical_cores ({logical})"))
    if (
        _is_int(physical := present.get("physical_cores"), 1)
        and _is_int(logical := present.get("logical_cores"), 1)
        and physical > logical
    ):
        # a physical core has one logical CPU at least (the plan had printed "4 physical" of 2)
        issues.append(("physical_cores", f"more than logical_cores ({logical})"))
    for key in ("numa_nodes", "siblings"):
        if key in present:
            issues += _core_map_issues(key, present[key])
    if "gpus" in present:
        issues += _gpu_issues(present["gpus"])
    for key, mapping in (
        ("packages", True),
        ("allocators", True),
        ("interfaces", False),
        ("addresses", False),
    ):
        if key in present and (problem := _strings_issue(present[key], mapping)):
            issues.append((key, problem))
    return issues


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
#: (numba: the climate kernels' compiler, whose version changes their bits)
CORE_PACKAGES = (
    "openclaw-dask",
    "dask",
    "distributed",
    "numpy",
    "numba",
    "xarray",
    "zarr",
    "numcodecs",
)


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


def detect_hardware(sys_root: str = "/sys") -> Hardware:
    """Describe this machine.

    The machine itself is read once a process (cached: it does not change); the optional
    packages and the allocators every time (~7 ms): cached with it, a package installed in a
    running notebook (``%pip install``, as a refusal such as "the cuda backend needs
    dask-cuda: pip install ..." asks) went unseen, the same refusal coming again until the
    kernel restarted.

    Parameters
    ----------
    sys_root
        Root of the sysfs tree (tests point it at a fake tree of another machine).
    """
    return replace(_machine(sys_root), packages=_packages(), allocators=find_allocators())


@lru_cache(maxsize=1)
def _machine(sys_root: str) -> Hardware:
    usable = set(os.sched_getaffinity(0))
    physical, siblings = _topology(usable, sys_root)
    return Hardware(
        logical_cores=os.cpu_count() or len(usable),
        usable_cores=tuple(sorted(usable)),
        physical_cores=physical,
        numa_nodes=_numa_nodes(usable, sys_root),
        memory=_memory(),
        gpus=_gpus(),
        siblings=siblings,
        interfaces=_ipv4_interfaces(),
        addresses=_addresses(),
    )


#: (lru_cache's name, kept for callers that read the machine afresh)
detect_hardware.cache_clear = _machine.cache_clear  # type: ignore[attr-defined]


def _ipv4_interfaces() -> tuple[str, ...]:
    """The names of the interfaces that have an IPv4 address, in the kernel's order.

    Dask's ``interface=`` takes an interface's IPv4 address (``get_ip_interface``): an
    ``ifb0`` without one had passed the config's check and failed the cluster's start. All
    interfaces when psutil cannot tell.
    """
    names = tuple(name for _, name in socket.if_nameindex())
    try:
        import psutil

        found = psutil.net_if_addrs()
    except (ImportError, OSError):
        return names
    return tuple(
        name for name in names if any(a.family == socket.AF_INET for a in found.get(name, ()))
    )


def _addresses() -> tuple[str, ...]:
    """The IPv4 and IPv6 addresses of this machine's interfaces (empty when unknown)."""
    try:
        import psutil

        found = psutil.net_if_addrs()
    except (ImportError, OSError):
        return ()
    families = (socket.AF_INET, socket.AF_INET6)
    return tuple(
        sorted(
            {
                a.address.split("%")[0]
                for nics in found.values()
                for a in nics
                if a.family in families
            }
        )
    )
