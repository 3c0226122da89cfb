"""Hardware detection: this machine, and a fake sysfs tree of a bigger one."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from openclaw_dask.cli.main import cli
from openclaw_dask.config import hardware
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


def test_only_interfaces_with_an_ipv4_address_are_listed() -> None:
    """Dask listens on an interface's IPv4 address: ``cluster.interface: ifb0`` (this VM has
    one, without an address) had passed the check and failed the cluster's start with
    "interface 'ifb0' doesn't have an IPv4 address"."""
    import socket

    import psutil
    from distributed.utils import get_ip_interface

    # read afresh, beside the test's own reading: the process's cached machine was read when
    # it began, and CI once saw an interface (ocbr687) that the machine added since
    detect_hardware.cache_clear()  # type: ignore[attr-defined]
    listed = detect_hardware().interfaces
    have = psutil.net_if_addrs()
    every = [name for _, name in socket.if_nameindex()]
    assert listed == tuple(
        n for n in every if any(a.family == socket.AF_INET for a in have.get(n, ()))
    )
    for name in every:
        if name in listed:
            get_ip_interface(name)
        else:
            with pytest.raises(ValueError, match="doesn't have an IPv4 address"):
                get_ip_interface(name)


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


def _plan_with(tmp_path: Path, text: str) -> tuple[int, str]:
    path = tmp_path / "hw.json"
    path.write_text(text)
    result = CliRunner().invoke(cli, ["config", "plan", "--hardware", str(path)])
    return result.exit_code, result.output.replace(str(path), "hw.json")


@pytest.mark.parametrize(
    ("text", "line"),
    [
        (
            "[]",
            "hw.json: not a hardware description (JSON from `config plan --show-hardware`): "
            "expected a JSON object, got []",
        ),
        (
            '{"cpus": "x"}',
            "hw.json: not a hardware description (JSON from `config plan "
            "--show-hardware`): missing logical_cores and memory",
        ),
        (
            '{"logical_cores": 4, "memory": 1, "usable_cores": "x"}',
            'hw.json: usable_cores: expected a list of core ids (integers >= 0), got "x"',
        ),
        (
            '{"logical_cores": 4, "memory": -1}',
            "hw.json: memory: expected RAM in bytes (an integer >= 0), got -1",
        ),
        (
            '{"logical_cores": -4, "memory": 1}',
            "hw.json: logical_cores: expected a number of logical CPUs (an integer >= 1), got -4",
        ),
        (
            '{"logical_cores": 4, "memory": 1, "numa_nodes": []}',
            "hw.json: numa_nodes: expected an object {id: [core ids]}, got []",
        ),
        (
            '{"logical_cores": true, "memory": 1}',
            "hw.json: logical_cores: expected a number of logical CPUs (an integer >= 1), got true",
        ),
        (
            '{"logical_cores": 2, "memory": 1, "usable_cores": [0, 1, 2]}',
            "hw.json: usable_cores: more cores than logical_cores (2)",
        ),
        (
            '{"logical_cores": 2, "memory": 1, "usable_cores": []}',
            "hw.json: usable_cores: expected at least one core id; leave it out for every core",
        ),
        (
            '{"logical_cores": 2, "memory": 1, "physical_cores": 4}',
            "hw.json: physical_cores: more than logical_cores (2)",
        ),
        (
            '{"logical_cores": 2, "memory": 1, "siblings": {"0": [0, -1]}}',
            "hw.json: siblings.0: expected a list of core ids (integers >= 0), got [0, -1]",
        ),
        (
            '{"logical_cores": 2, "memory": 1, "gpus": [{"index": 0, "name": "x"}]}',
            "hw.json: gpus.0.memory: missing; expected bytes as an integer >= 0",
        ),
        (
            '{"logical_cores": 2, "memory": 1, "interfaces": "eth0"}',
            'hw.json: interfaces: expected a list of strings, got "eth0"',
        ),
        (
            "{not json",
            "hw.json: not a hardware description (JSON from `config plan "
            "--show-hardware`): Expecting property name",
        ),
    ],
)
def test_bad_hardware_file_is_one_line_per_problem(tmp_path: Path, text: str, line: str) -> None:
    code, output = _plan_with(tmp_path, text)
    assert code == 2, output
    assert f"error: {line}" in output and "Traceback" not in output


def test_every_problem_of_a_hardware_file_is_reported(tmp_path: Path) -> None:
    code, output = _plan_with(
        tmp_path, '{"logical_cores": 0, "memory": 1.5, "packages": {"a": 1}, "memroy": 2}'
    )
    assert code == 2
    errors = [line for line in output.splitlines() if line.startswith("error: ")]
    assert errors == [
        "error: hw.json: memroy: unknown field; did you mean 'memory'?",
        "error: hw.json: logical_cores: expected a number of logical CPUs (an integer >= 1), got 0",
        "error: hw.json: memory: expected RAM in bytes (an integer >= 0), got 1.5",
        'error: hw.json: packages: expected an object of strings {name: text}, got {"a": 1}',
    ]


def test_hand_written_description_with_nulls_plans(tmp_path: Path) -> None:
    text = '{"logical_cores": 4, "memory": 0, "usable_cores": null, "gpus": null}'
    code, output = _plan_with(tmp_path, text)
    assert code == 0, output
    assert Hardware.from_dict(json.loads(text)).usable_cores == (0, 1, 2, 3)
    with pytest.raises(InvalidValueError) as info:
        Hardware.from_dict({"logical_cores": 4})
    assert info.value.issues == [
        ("", "not a hardware description (JSON from `config plan --show-hardware`): missing memory")
    ]


def test_a_package_installed_in_the_running_process_is_seen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The whole description was cached for the process: in a notebook, a ``%pip install``
    that a refusal asked for ("the cuda backend needs dask-cuda: pip install ...") was not
    seen, and the same refusal came again until the kernel restarted."""
    name = "openclaw-unit-late-package"
    monkeypatch.setattr(hardware, "OPTIONAL_PACKAGES", (*hardware.OPTIONAL_PACKAGES, name))
    assert name not in detect_hardware().packages
    info = tmp_path / "openclaw_unit_late_package-1.2.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.2\n")
    monkeypatch.syspath_prepend(str(tmp_path))  # (what pip's install into site-packages does)
    assert detect_hardware().packages[name] == "1.2"
