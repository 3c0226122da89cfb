"""Shared fixtures: machine descriptions and config files."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from openclaw_dask.config.hardware import Gpu, Hardware

ROOT = Path(__file__).resolve().parents[1]


def make_hardware(
    cores: int = 8,
    numa: int = 1,
    gpus: int = 0,
    smt: int = 1,
    allocators: tuple[str, ...] = ("jemalloc", "tcmalloc"),
    packages: tuple[str, ...] = ("asyncssh", "dask-mpi", "mpi4py", "dask-cuda", "distributed-ucxx"),
    memory: int = 64 * 2**30,
) -> Hardware:
    """A machine with ``cores`` logical cores split evenly over ``numa`` nodes.

    With ``smt=2`` cores 2k and 2k+1 are hyper-thread siblings.
    """
    per_node = cores // numa
    return Hardware(
        logical_cores=cores,
        usable_cores=tuple(range(cores)),
        physical_cores=cores // smt,
        numa_nodes={n: list(range(n * per_node, (n + 1) * per_node)) for n in range(numa)},
        memory=memory,
        gpus=tuple(Gpu(i, "NVIDIA H200", 141 * 2**30) for i in range(gpus)),
        packages={p: "1.0" for p in packages},
        allocators={a: f"/usr/lib/lib{a}.so" for a in allocators},
        siblings={c: [c - c % smt + s for s in range(smt)] for c in range(cores)},
        interfaces=("lo", "eth0"),
    )


def pytest_configure(config: pytest.Config) -> None:
    """pytest-xdist's workers run with ``COLUMNS=80`` in their environment, which the CLI's
    subprocesses inherit: their tables, piped to the tests, were cut to 80 columns
    ("10.231…") where a run without workers gives them 200."""
    os.environ.pop("COLUMNS", None)


@pytest.fixture
def hw() -> Callable[..., Hardware]:
    """Factory of machine descriptions (see :func:`make_hardware`)."""
    return make_hardware


@pytest.fixture
def write_config(tmp_path: Path) -> Callable[[str], Path]:
    """Write YAML text to a config file in a temp dir and return its path."""

    def write(text: str, name: str = "openclaw.config") -> Path:
        path = tmp_path / name
        path.write_text(text)
        return path

    return write


def values_with(**overrides: Any) -> dict[str, Any]:
    """Default flat values with ``a__b=value`` overrides (for rule tests)."""
    from openclaw_dask.config.schema import defaults

    values = defaults()
    for key, value in overrides.items():
        values[key.replace("__", ".")] = value
    return values


#: A Python process that spins for the given seconds.
SPIN = "import sys, time\nt = time.time()\nwhile time.time() - t < float(sys.argv[1]): pass\n"


@pytest.fixture
def stranger() -> Iterator[int]:
    """A spinning process outside this process tree (its shell parent exits at once, so it
    is adopted by init), as a build or another user's job would be; its pid."""
    shell = subprocess.run(
        ["sh", "-c", f'{sys.executable} -c "$0" 300 >/dev/null 2>&1 & echo $!', SPIN],
        capture_output=True,
        text=True,
        check=True,
    )
    pid = int(shell.stdout)
    yield pid
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
