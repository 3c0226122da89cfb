"""Worker preload for tests: a task ends its worker's process, once.

Named by file path in a config's ``dask:`` section (``distributed.worker.preload``), it kills
one worker, once, in the middle of whatever a command runs on a cluster it starts itself
(``benchmark``, ``tune``): a real death, as a crash or the kernel's OOM killer would cause,
which the nanny then restarts (under another address).

``DIES_ONCE_MARKER`` names a file that does not exist yet; the worker that creates it is the
one that dies, at the first task it starts (the marker keeps the restarted workers, and the
clusters started after it, alive). With ``DIES_ONCE_AFTER_RUN`` set to a function's name, a
worker dies only at a task it starts after a ``Client.run`` of that function: a place in a
command's sequence, where the first task would be too early. With
``DIES_ONCE_BESIDE_ANOTHER_CLUSTER`` set, a worker dies only at a task it starts while a worker
of another cluster (another scheduler) that loaded this preload is alive: ``tune``'s final
comparison, the one phase with two clusters up at once (its trials run one at a time).
"""

from __future__ import annotations

import logging
import os
import pickle
from pathlib import Path
from typing import Any

import psutil
from distributed import WorkerPlugin

MARKER_ENV = "DIES_ONCE_MARKER"
AFTER_RUN_ENV = "DIES_ONCE_AFTER_RUN"
BESIDE_ENV = "DIES_ONCE_BESIDE_ANOTHER_CLUSTER"

#: ``--set`` arguments that load this preload in the workers of the clusters a command starts.
DIES_ONCE_SETS = ["--set", f'dask.distributed.worker.preload=["{__file__}"]']


class _Beside:
    """Whether a worker of another cluster is alive, from the folder where each worker of
    every cluster writes its scheduler's address (under its pid and start time: a pid that
    came back in another process is not that worker)."""

    def __init__(self, folder: Path, scheduler: str) -> None:
        self.folder, self.scheduler = folder, scheduler
        folder.mkdir(exist_ok=True)
        me = psutil.Process()
        entry = folder / f"{me.pid}-{me.create_time()}"
        # written whole, then renamed: a half-written entry read as another cluster's worker
        # would arm a worker beside its own cluster's siblings
        (folder / f".{entry.name}").write_text(scheduler)
        (folder / f".{entry.name}").replace(entry)

    def __call__(self) -> bool:
        for entry in self.folder.iterdir():
            if entry.name.startswith(".") or entry.read_text() == self.scheduler:
                continue
            pid, started = entry.name.split("-", 1)
            try:
                other = psutil.Process(int(pid))
                alive = other.status() != psutil.STATUS_ZOMBIE
                if alive and other.create_time() == float(started):
                    return True
            except psutil.NoSuchProcess:
                continue
        return False


class _DiesOnce(WorkerPlugin):
    def __init__(self, marker: str, armed: bool, beside: _Beside | None = None) -> None:
        self.marker, self.armed, self.beside = marker, armed, beside

    def transition(self, key: Any, start: str, finish: str, **kwargs: Any) -> None:
        if finish != "executing" or not self.armed or os.path.exists(self.marker):
            return
        if self.beside is not None and not self.beside():
            return
        try:  # O_EXCL: of all the workers of all the clusters, only the first one dies
            os.close(os.open(self.marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return
        logging.getLogger("distributed.worker").warning("a worker's own warning, then exit")
        os._exit(3)


async def dask_setup(worker: Any) -> None:
    """Add the plugin when ``DIES_ONCE_MARKER`` is set (the test's environment)."""
    marker = os.environ.get(MARKER_ENV)
    if not marker:
        return
    after = os.environ.get(AFTER_RUN_ENV)
    beside = None
    if os.environ.get(BESIDE_ENV):
        beside = _Beside(Path(f"{marker}.workers"), worker.scheduler.address)
    plugin = _DiesOnce(marker, armed=not after, beside=beside)
    if after:
        serve_run = worker.handlers["run"]

        def run(comm: Any, function: bytes, *args: Any, **kwargs: Any) -> Any:
            if getattr(pickle.loads(function), "__name__", None) == after:
                plugin.armed = True
            return serve_run(comm, function, *args, **kwargs)

        worker.handlers["run"] = run
    await worker.plugin_add(plugin=plugin, name="dies-once")


def dask_log_lines(stderr: str) -> list[str]:
    """The lines of ``stderr`` in the format of Dask's log records (``... - distributed.x - ``)."""
    return [line for line in stderr.splitlines() if " - distributed." in line]
