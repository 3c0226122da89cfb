"""The CPU time other processes took while a benchmark or tune measured: a busy machine, said.

A benchmark on a machine where something else runs (a build, a test suite, another user's job
on a shared login node) measures that machine's leftovers: its rates come out low and its
parallel efficiency lower still, and ``tune`` chooses fewer threads (on this project's 2-core
machine, beside a test suite, it chose one thread at 1.2x the baseline's two). Nothing in the
figures themselves tells such a run from one on an idle machine, so the report says how many
cores the rest of the machine took while it measured.

How: the busy CPU time of the cores this process may use (``/proc/stat``, through psutil)
less this process tree's over the same wall time. The tree's time is every live process's own
user and system time plus that of its children that have been waited for (``cutime``,
``cstime``), which holds a reaped nanny's worker: a process that ends moves from the live sum
into its parent's children sum with its whole time, so the difference of two snapshots counts
each process once. Two snapshots, no sampling thread: the figures are not perturbed by the
watch. The hypervisor's ``steal`` time (a VM's cores given to other VMs) is counted apart: not
busy inside the machine, but the same loss to the measurement.

The tree holds the clusters a command starts itself (local and CUDA workers are its
children); the workers of an SSH or mpirun cluster are not, even on this host, so the check
is made for local and CUDA clusters only.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any

import psutil

from openclaw_dask.config import Config, ConfigError, Hardware

__all__ = [
    "BUSY_CORES",
    "CpuSnapshot",
    "background_load",
    "early_note",
    "load_note",
    "snapshot",
    "watch_end",
    "watch_start",
]

#: Other processes' use, in cores, from which a report says the machine was busy: on the idle
#: 2-core development VM, a 7.6 s quick benchmark measured 0.0 (its busiest other process, a
#: kernel thread, 0.003), and one beside a test suite 1.0.
BUSY_CORES = 0.25

#: Processes named in the note, the busiest first.
TOP = 3


@dataclass(frozen=True)
class CpuSnapshot:
    """CPU times at one moment: the machine's, this process tree's, and every other
    process's (by pid and start time, so a reused pid is another process)."""

    wall: float
    busy: float
    steal: float
    ours: float
    #: (pid, start time) -> (name, CPU seconds, parent pid)
    others: dict[tuple[int, float], tuple[str, float, int]] = field(default_factory=dict)


def _cpu(times: Any) -> float:
    """A process's own and waited-for children's user and system seconds."""
    return times.user + times.system + times.children_user + times.children_system


def snapshot() -> CpuSnapshot:
    """The machine's busy and steal seconds, this process tree's CPU seconds and every other
    process's, now."""
    me = psutil.Process()
    tree = {me.pid}
    ours = _cpu(me.cpu_times())
    for child in me.children(recursive=True):
        try:
            ours += _cpu(child.cpu_times())
            tree.add(child.pid)
        except psutil.Error:  # ended between the listing and the read: in its parent's now
            pass
    others = {}
    for proc in psutil.process_iter(["name", "cpu_times", "create_time", "ppid"]):
        info = proc.info
        if proc.pid in tree or info["cpu_times"] is None:
            continue
        key = (proc.pid, info["create_time"])
        others[key] = (info["name"] or "?", _cpu(info["cpu_times"]), info["ppid"] or 0)
    busy = steal = 0.0
    for cpu in _usable(psutil.cpu_times(percpu=True)):
        idle = cpu.idle + getattr(cpu, "iowait", 0.0)
        stolen = getattr(cpu, "steal", 0.0)
        # user and nice already hold guest and guest_nice (Linux counts them twice)
        total = sum(getattr(cpu, f) for f in cpu._fields if f not in ("guest", "guest_nice"))
        busy, steal = busy + total - idle - stolen, steal + stolen
    return CpuSnapshot(time.monotonic(), busy, steal, ours, others)


def _usable(per_cpu: list[Any]) -> list[Any]:
    """The CPUs this process may run on (its workers run on them too): in a container or a
    batch job's cpuset, ``/proc/stat`` still counts the whole host's, whose other tenants do
    not take these cores."""
    try:
        allowed = os.sched_getaffinity(0)
    except (AttributeError, OSError):  # (not Linux)
        return per_cpu
    return [cpu for i, cpu in enumerate(per_cpu) if i in allowed] or per_cpu


def background_load(start: CpuSnapshot, end: CpuSnapshot, top: int = TOP) -> dict[str, Any]:
    """What the rest of the machine took between two snapshots, in cores.

    Returns
    -------
    dict
        ``seconds`` (wall), ``other_cores`` (busy CPU time outside this process tree per wall
        second), ``steal_cores`` (the hypervisor's) and ``top``: the busiest other processes
        that lived at the end, ``{"pid", "name", "cores"}``, at most ``top`` of them.
    """
    wall = max(end.wall - start.wall, 1e-9)
    other = max(0.0, (end.busy - start.busy) - (end.ours - start.ours)) / wall
    # a process that ended was reaped by its parent (or the nearest living ancestor), whose
    # children's time then holds all of its time: what it had used before the start is not
    # that parent's use in the interval
    before = {key: cpu for key, (_, cpu, _) in start.others.items()}
    started = {key[0]: key for key in start.others}
    for key, (_, cpu, ppid) in start.others.items():
        if key in end.others:
            continue
        parent, steps = started.get(ppid), len(started)  # (a scan is not atomic: no cycles)
        while parent is not None and parent not in end.others and steps:  # up past ended ones
            parent, steps = started.get(start.others[parent][2]), steps - 1
        if parent in end.others:
            before[parent] += cpu
    used = []
    for key, (name, cpu, _) in end.others.items():
        delta = cpu - before.get(key, 0.0)  # started since: all of its time
        if delta > 0:
            used.append({"pid": key[0], "name": name, "cores": delta / wall})
    used.sort(key=lambda p: -p["cores"])
    return {
        "seconds": wall,
        "other_cores": other,
        "steal_cores": max(0.0, end.steal - start.steal) / wall,
        "top": used[:top],
    }


def load_note(load: dict[str, Any] | None, cores: int, so_far: bool = False) -> str | None:
    """A line for the terminal when other processes, or the hypervisor, took a share of the
    machine while it measured; ``None`` when it was idle. ``so_far``: said while it still
    measures (the first seconds), so that a long tune on a busy machine can be stopped."""
    if not load:
        return None
    parts = []
    if load["other_cores"] >= BUSY_CORES:
        top = ", ".join(
            f"{p['name']} (pid {p['pid']}) {p['cores']:.2f}" for p in load["top"] if p["cores"]
        )
        used = "are using" if so_far else "used"
        parts.append(
            f"other processes {used} {load['other_cores']:.2f} of this machine's {cores} cores"
            + ("" if so_far else " while it measured")
            + (f" ({top})" if top else "")
        )
    if load["steal_cores"] >= BUSY_CORES:
        gave = "is giving" if so_far else "gave"
        parts.append(
            f"the hypervisor {gave} {load['steal_cores']:.2f} cores of this VM's time to others"
        )
    if not parts:
        return None
    if so_far:
        return "; ".join(parts) + ": the figures will be of what they leave, not of an idle machine"
    return "; ".join(parts) + ": the figures are of what they left, not of an idle machine"


def watch_start(config: Config, hw: Hardware) -> CpuSnapshot | None:
    """A snapshot to measure the machine's background load from, when the clusters ``config``
    plans are this process's children (local and CUDA clusters); else ``None``."""
    from openclaw_dask.translate import plan_cluster

    try:
        backend = plan_cluster(config, hw).backend
    except ConfigError:  # said as starting the cluster says it
        return None
    return snapshot() if backend in ("local", "cuda") else None


def watch_end(start: CpuSnapshot | None) -> dict[str, Any] | None:
    """:func:`background_load` since ``start`` (``None`` when nothing was watched)."""
    return None if start is None else background_load(start, snapshot())


def early_note(start: CpuSnapshot | None, cores: int) -> str | None:
    """:func:`load_note` of the first seconds since ``start`` (the cluster's start, say), to
    say at once that the machine is busy: a tune takes minutes."""
    return load_note(watch_end(start), cores, so_far=True)
