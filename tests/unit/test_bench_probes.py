"""The copy-bandwidth probe (``bench/probes.py``) as a step of an interleaved timing."""

from __future__ import annotations

import numpy as np
import pytest

from openclaw_dask.bench.probes import CopyProbe
from openclaw_dask.bench.timing import interleaved


def test_the_probe_copies_the_whole_buffer_on_each_thread_and_reads_its_fastest_copy() -> None:
    nbytes = 16 * 2**20
    with CopyProbe(threads=2, nbytes=nbytes, tries=3) as probe:
        probe._dst[:] = 0.0
        probe()
        assert np.all(probe._dst == 1.0)  # both threads' slices, end to end
        assert len(probe.readings) == 1
        # read + write of the buffer over a copy's time: at least what a copy took at worst
        # (a whole second) and within what any memory system moves (1 TB/s)
        assert 2 * nbytes / 1.0 < probe.readings[0] < 1e12


def test_in_an_interleaved_timing_the_probe_reads_once_a_round_after_its_warm_up() -> None:
    order: list[str] = []
    with CopyProbe(threads=2, nbytes=2**20, tries=2) as probe:

        def run() -> None:
            order.append("run")

        def read() -> None:
            probe()
            order.append("probe")

        timings = interleaved({"run": run, "copy_probe": read}, repeats=3, warmup=1)
    assert order == ["run", "probe"] * 4
    # the suite keeps the last `repeats` readings: the counted rounds, one beside each run
    assert len(probe.readings) == 4 and len(timings["run"].samples) == 3
    assert all(r > 0 for r in probe.readings)


def test_a_closed_probe_takes_no_more_readings() -> None:
    with CopyProbe(threads=1, nbytes=2**20) as probe:
        probe()
    with pytest.raises(RuntimeError, match="shutdown"):
        probe()
    assert len(probe.readings) == 1
