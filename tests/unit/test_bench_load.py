"""The machine's background load while a benchmark or tune measures (``bench/load.py``), with
real processes: one outside this process tree, and children of it that end in the window."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

from openclaw_dask.bench.load import BUSY_CORES, background_load, load_note, snapshot

#: One that spins until it has used the given CPU seconds (on a loaded machine, longer).
BURN = "import sys, time\nwhile time.process_time() < float(sys.argv[1]): pass\n"


def test_a_process_outside_the_tree_is_the_background_and_its_own_children_are_not(
    stranger: int,
) -> None:
    time.sleep(0.3)  # (started)
    start = snapshot()
    # a child of this process that spins and ends inside the window: its time is this
    # tree's (its parent waited for it), however much it took
    child = subprocess.run([sys.executable, "-c", BURN, "1.5"], check=True)
    assert child.returncode == 0
    end = snapshot()
    load = background_load(start, end, top=1000)  # (all: the machine may be busy otherwise)
    assert end.ours - start.ours >= 1.4  # the child's 1.5 s of CPU (in clock ticks)
    pids = {p["pid"]: p["cores"] for p in load["top"]}
    assert stranger in pids and pids[stranger] > 0.1, load  # (~0.7 on an idle 2-core machine)
    assert load["other_cores"] >= pids[stranger] - 0.05, load  # the machine's view agrees
    assert os.getpid() not in pids  # nor the child, which ended: only living ones are named
    assert load["seconds"] >= 1.5 and load["steal_cores"] >= 0


def test_a_child_still_running_is_this_tree_s(stranger: int) -> None:
    """Workers alive at a snapshot (the first seconds' note is taken while they run) are
    this tree's, counted from their own time, not the machine's background."""
    child = subprocess.Popen([sys.executable, "-c", BURN, "60"])
    try:
        proc = psutil.Process(child.pid)
        time.sleep(0.2)
        start, used = snapshot(), sum(proc.cpu_times()[:2])
        time.sleep(1.5)
        end, used = snapshot(), sum(proc.cpu_times()[:2]) - used
        load = background_load(start, end, top=1000)
    finally:
        child.kill()
        child.wait()
    assert used > 0.1 and end.ours - start.ours >= used - 0.05, (used, start.ours, end.ours)
    assert child.pid not in {p["pid"] for p in load["top"]}, load
    assert stranger in {p["pid"] for p in load["top"]}, load


def test_a_child_that_ended_is_not_counted_again_in_its_parent(tmp_path: Path) -> None:
    """A shell outside this tree that waited for a child burning CPU since before the window:
    the child's whole time moves into the shell's children's time when it ends, and only
    what it took in the window is the shell's use (its whole life had been)."""
    said = tmp_path / "shell.pid"
    # written whole, then renamed: CI read the file between its creation and the pid (int(''))
    inner = (
        f'echo $$ > {said}.new; mv {said}.new {said}; {sys.executable} -c "$0" 2 & wait; sleep 60'
    )
    subprocess.run(["sh", "-c", f"sh -c '{inner}' \"$0\" >/dev/null 2>&1 &", BURN], check=True)
    try:
        deadline = time.monotonic() + 60
        while not said.exists() or not psutil.Process(int(said.read_text())).children():
            assert time.monotonic() < deadline
            time.sleep(0.05)
        shell = psutil.Process(int(said.read_text()))
        [child] = shell.children()
        while sum(child.cpu_times()[:2]) < 0.7:  # its first 0.7 s of CPU before the window
            assert time.monotonic() < deadline
            time.sleep(0.05)
        start = snapshot()
        while child.is_running() and child.status() != psutil.STATUS_ZOMBIE:  # it ends, the
            assert time.monotonic() < deadline  # shell waits for it
            time.sleep(0.05)
        time.sleep(0.2)
        load = background_load(start, snapshot(), top=1000)
    finally:
        if said.exists():
            os.kill(int(said.read_text()), signal.SIGKILL)
    used = {p["pid"]: p["cores"] * load["seconds"] for p in load["top"]}
    assert shell.pid in used, load  # the child's last ~1.3 s, in the shell's children's time
    assert 0.3 < used[shell.pid] < 1.4, load  # not its whole 2 s


def test_the_note_names_the_busiest_and_is_silent_on_an_idle_machine() -> None:
    idle = {"seconds": 10.0, "other_cores": 0.03, "steal_cores": 0.0, "top": []}
    assert load_note(idle, 2) is None and load_note(None, 2) is None
    busy = {
        **idle,
        "other_cores": 1.62,
        "top": [{"pid": 812, "name": "make", "cores": 1.5}, {"pid": 9, "name": "sh", "cores": 0}],
    }
    assert load_note(busy, 2) == (
        "other processes used 1.62 of this machine's 2 cores while it measured "
        "(make (pid 812) 1.50): the figures are of what they left, not of an idle machine"
    )
    stolen = {**idle, "steal_cores": BUSY_CORES}
    assert load_note(stolen, 16) == (
        "the hypervisor gave 0.25 cores of this VM's time to others: the figures are of what "
        "they left, not of an idle machine"
    )
