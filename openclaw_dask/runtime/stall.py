"""Work that stands still: tasks running and none finishing, said once, with where they are.

Dask has no task timeout: a task that hangs (a deadlock in an op, a read from a file system
that stopped answering) while its worker goes on answering keeps the run waiting for ever, the
progress bar frozen and nothing said. :class:`StallWatch` polls the scheduler from a thread:
when tasks are processing and the scheduler has made no transition at all for ``after``
seconds, it asks the workers for those tasks' call stacks (``Client.call_stack``) and queues a
note naming the tasks, their workers and the line each is at. The run's own thread says it
(:func:`say`, from the runner's waits; the CLI's console is written from that thread only)
and the run goes on: a task may be merely long. Once work moves again, a later
stall is said again.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["STALL_SECONDS", "StallWatch"]

#: Seconds with tasks processing and no transition on the scheduler before a run says so.
#: A step's tasks take well under a minute each (the climate model's ~0.1-1 s); ten minutes
#: of nothing is a hang far more often than one long task, and costs a user no more than that.
STALL_SECONDS = 600.0
#: How many of the processing tasks a note names (their call stacks are asked for).
NAMED = 3


def _processing(dask_scheduler: Any = None) -> tuple[int, int, list[tuple[str, str]]]:
    """On the scheduler: its transition count, how many tasks are processing, and the first
    :data:`NAMED` of them with their workers (not the whole list, every poll)."""
    # each worker's own set: not a pass over every task of the graph, five times a minute
    workers = dask_scheduler.workers.values()
    named = list(
        itertools.islice(((ts.key, ws.address) for ws in workers for ts in ws.processing), NAMED)
    )
    return dask_scheduler.transition_counter, sum(len(ws.processing) for ws in workers), named


class StallWatch:
    """Notices a cluster whose tasks run and none finishes; queues one note a stall.

    Parameters
    ----------
    client : distributed.Client
    after : float, optional
        Seconds of standstill before the note; default :data:`STALL_SECONDS`.
    every : float, optional
        Seconds between polls (default: 5, or a quarter of ``after`` when that is less).
    files : sequence of str, optional
        The run's op modules that were shipped to the workers: a frame in a worker's copy of
        one (in its scratch folder) is said at the user's own file.
    """

    def __init__(
        self,
        client: Any,
        after: float | None = None,
        every: float | None = None,
        files: Sequence[str] = (),
    ) -> None:
        self.client = client
        self.files = {Path(file).name: str(file) for file in files}
        self.after = STALL_SECONDS if after is None else after
        self.every = min(5.0, self.after / 4) if every is None else every
        self._notes: list[str] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="openclaw-stall-watch")
        self._thread.daemon = True

    def __enter__(self) -> StallWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=self.every + 1.0)

    def notes(self) -> list[str]:
        """The notes queued since the last call (said by the run's own thread)."""
        with self._lock:
            notes, self._notes = self._notes, []
        return notes

    def _watch(self) -> None:
        last, since, said = -1, time.monotonic(), False
        while not self._stop.wait(self.every):
            try:
                count, busy, named = self.client.run_on_scheduler(_processing)
            except Exception:  # a closing cluster: the next poll, or the end
                continue
            if count != last or not busy:
                last, since, said = count, time.monotonic(), False
                continue
            still = time.monotonic() - since
            if not said and still >= self.after:
                said = True
                note = self._note(busy, named, still)
                with self._lock:
                    self._notes.append(note)

    def _note(self, busy: int, named: list[tuple[str, str]], still: float) -> str:
        where: dict[str, str] = {}
        with contextlib.suppress(Exception):  # a worker that does not answer: named alone
            stacks = self.client.call_stack(keys=[key for key, _ in named])
            for tasks in stacks.values():
                for key, frames in tasks.items():
                    if frames:
                        where[str(key)] = _frame(frames[-1], self.files)
        tasks = "; ".join(
            f"{key} on {worker}" + (f", at {where[str(key)]}" if str(key) in where else "")
            for key, worker in named
        )
        more = f" (and {busy - len(named)} more)" if busy > len(named) else ""
        return (
            f"no task has finished for {_minutes(still)}, {busy} running: "
            f"{tasks}{more}. A task may hang (the dashboard's call stacks show them); Ctrl-C "
            "stops the run and `submit --resume` continues it"
        )


def _frame(frame: str, files: Mapping[str, str]) -> str:
    """``/path/user_ops.py, line 88, in sleepy`` of a call-stack line
    (``  File "/path/user_ops.py", line 88, in sleepy\\n\\tcode``); a worker's copy of a
    shipped op module (``files``, by name) is said as the user's file."""
    head = frame.strip().splitlines()[0].removeprefix("File ")
    path, _, rest = head.partition(", ")
    if not rest:
        return head
    path = path.strip('"')
    if "dask-scratch-space" in path:  # where a worker keeps the files uploaded to it
        path = files.get(Path(path).name, path)
    return f"{path}, {rest}"


def _minutes(seconds: float) -> str:
    """``10 min`` (or ``45 s`` under a minute)."""
    return f"{seconds / 60:.0f} min" if seconds >= 60 else f"{seconds:.0f} s"


def say(
    watch: StallWatch | None, announce: Callable[[str], None] | None, step: str, record: Any
) -> None:
    """Say ``watch``'s queued notes of ``step`` with ``announce`` (both optional), and keep
    them in its ``record`` (``stalls``): a batch job's run.json says it too."""
    for note in watch.notes() if watch is not None else []:
        record.setdefault("stalls", []).append(note)
        if announce is not None:
            announce(f"note: step {step!r}: {note}")
