"""The machine facts recorded with benchmark and tuning results."""

from __future__ import annotations

from pathlib import Path

import pytest

from openclaw_dask.bench.machine import cpu_model

ZEN1 = """processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 23
model\t\t: 1
model name\t: AMD EPYC
flags\t\t: fpu sse4_2 fma avx avx2

processor\t: 1
vendor_id\t: AuthenticAMD
cpu family\t: 23
model\t\t: 1
model name\t: AMD EPYC
flags\t\t: fpu sse4_2 fma avx avx2
"""


def test_cpu_model_tells_two_cpus_of_one_name_apart() -> None:
    zen5 = ZEN1.replace(": 23", ": 26").replace(": 1\n", ": 2\n").replace("avx2", "avx2 avx512f")
    assert cpu_model(ZEN1) == "AMD EPYC (family 23, model 1, avx2)"
    assert cpu_model(zen5) == "AMD EPYC (family 26, model 2, avx512f)"


def test_cpu_model_of_an_arm_cpuinfo_names_its_widest_vectors() -> None:
    arm = "processor\t: 0\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd sve\nCPU part\t: 0xd40\n"
    assert cpu_model(arm).endswith("(sve)")


def test_cpu_model_of_this_machine_starts_with_its_model_name() -> None:
    info = Path("/proc/cpuinfo")
    if not info.exists():
        pytest.skip("no /proc/cpuinfo (not Linux)")
    names = [
        line.split(":", 1)[1].strip()
        for line in info.read_text().splitlines()
        if line.startswith("model name")
    ]
    text = cpu_model()
    assert text and (not names or text.startswith(names[0])), text
