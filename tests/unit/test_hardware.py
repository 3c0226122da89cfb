"""Hardware detection: this machine, and a fake sysfs tree of a bigger one."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from openclaw_dask.config.hardware import Hardware, detect_hardware, format_cpu_list
from openclaw_dask.config.types import InvalidValueError, parse_cpu_list
from tests.conftest import make_hardware


def test_this_machine() -> None:
    hw = detect_hardware()
    assert set(hw.usable_cores) == os.sched_getaffinity(0)
    assert 1 <= hw.physical_cores <= len(hw.usable_cores) <= hw.logical_cores
    assert sorted(c for cores in hw.numa_nodes.values() for c in cores) == sorted(hw.usable_cores)
    assert hw.memory > 2**30
    assert "lo" in hw.interfaces
    for allocator, path in hw.allocators.items():
        assert os.path.isfile(path), (allocator, path)


def test_allocators_installed_by_ci_are_found() -> None:
    # .ci/run installs libjemalloc2 and libgoogle-perftools4; say so if they are missing
    hw = detect_hardware()
    missing = {"jemalloc", "tcmalloc"} - set(hw.allocators)
    assert not missing, f"install {missing} (see .ci/run)"


def _fake_sys(root: Path, nodes: dict[int, str], siblings: dict[int, str]) -> None:
    for node, cpulist in nodes.items():
        d = root / f"devices/system/node/node{node}"
        d.mkdir(parents=True)
        (d / "cpulist").write_text(cpulist + "\n")
    for cpu, sib in siblings.items():
        d = root / f"devices/system/cpu/cpu{cpu}/topology"
        d.mkdir(parents=True)
        (d / "physical_package_id").write_text("0\n")
        (d / "core_id").write_text(f"{min(parse_cpu_list(sib))}\n")
        (d / "thread_siblings_list").write_text(sib + "\n")


def test_numa_and_smt_from_sysfs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # 4 logical cores on 2 NUMA nodes, cores (0,1) and (2,3) are hyper-thread pairs
    _fake_sys(tmp_path, {0: "0-1", 1: "2-3"}, {0: "0-1", 1: "0-1", 2: "2-3", 3: "2-3"})
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    detect_hardware.cache_clear()
    try:
        hw = detect_hardware(str(tmp_path))
    finally:
        detect_hardware.cache_clear()
    assert hw.numa_nodes == {0: [0, 1], 1: [2, 3]}
    assert hw.physical_cores == 2
    assert hw.physical_core_ids() == [0, 2]


def test_cpu_lists_round_trip() -> None:
    assert parse_cpu_list("0-3,8,10-11") == [0, 1, 2, 3, 8, 10, 11]
    assert format_cpu_list([11, 10, 8, 3, 2, 1, 0]) == "0-3,8,10-11"
    for bad in ("3-1", "a", "1,,2"):
        with pytest.raises(InvalidValueError):
            parse_cpu_list(bad)


def test_description_round_trips_through_json() -> None:
    hw = make_hardware(cores=8, numa=2, gpus=2, smt=2)
    assert Hardware.from_dict(hw.to_dict()) == hw
    assert Hardware.from_dict({"logical_cores": 4, "memory": 2**33}).usable_cores == (0, 1, 2, 3)
