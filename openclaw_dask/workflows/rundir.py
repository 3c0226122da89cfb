"""A run's directory: made (and claimed) for a first run, cleaned up after one refused before
any step ran, and where each attempt writes its performance report.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import shutil
from collections.abc import Sequence
from pathlib import Path

from openclaw_dask.config import ConfigError
from openclaw_dask.config.errors import Problem
from openclaw_dask.workflows import lock as run_dir_lock
from openclaw_dask.workflows.resume import RUN_RECORD
from openclaw_dask.workflows.spec import Workflow

PERFORMANCE_REPORT = "performance-report.html"
#: The folder of a run directory that keeps the workflow file and its op modules as the last
#: attempt ran them (a dot name: no output can be called so)
SOURCES = ".source"


def keep_sources(directory: Path, files: Sequence[str]) -> list[str]:
    """Copy ``files`` (the workflow file, the op modules beside it and the config file) into
    ``directory``'s :data:`SOURCES` folder, in place of an earlier attempt's copies.

    run.json had kept their paths and hashes only: a colleague given the run directory could
    check a module but not read it, and the author's next edit lost the code that made the
    outputs. With the copies, ``submit DIR/.source/WORKFLOW.yaml`` runs the same ops again
    (the modules are beside it, and so is a workflow's ``config: NAME`` beside its file).
    Files the ops read themselves are not copied, nor a file whose name an earlier one of
    ``files`` took (the config may come from anywhere).

    Returns
    -------
    list of str
        The copies' paths, relative to ``directory``.
    """
    folder = directory / SOURCES
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    kept: list[str] = []
    for file in files:
        target = folder / Path(file).name
        if f"{SOURCES}/{target.name}" not in kept:
            shutil.copyfile(file, target)
            kept.append(f"{SOURCES}/{target.name}")
    return kept


def report_path(directory: Path, attempt: int) -> Path:
    """Where an attempt of the run in ``directory`` writes its performance report.

    ``performance-report.html``, unless an earlier attempt wrote that: then
    ``performance-report-<attempt>.html`` beside it (a resume had written over the report of
    the attempt that did most of the work with one of the steps it had left).
    """
    plain = (directory / PERFORMANCE_REPORT).resolve()
    if attempt <= 1 or not plain.exists():
        return plain
    return plain.with_name(f"{plain.stem}-{attempt}{plain.suffix}")


def _new_run_dir(workflow: Workflow, run_dir: str | Path | None) -> Path:
    if run_dir is not None:
        path = _given_run_dir(run_dir)
        _make_for_writing(path)
        return path
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    base = Path("runs") / workflow.name
    path = base / stamp
    n = 1
    # claimed by making it: two runs started in the same second had both chosen the first
    # free name, and the second was refused as a run directory in use
    while not _claimed(path):
        n += 1
        path = base / f"{stamp}-{n}"
    _write_test(path)
    return path


def check_run_dir(run_dir: str | os.PathLike[str]) -> None:
    """Refuse ``run_dir`` (``--run-dir``) as a first run there would, leaving nothing behind.

    For ``submit --dry-run``: it had accepted a run directory that is not empty, below a
    file, in use or not writable (``/proc/x``), which the run then refused. The write test is
    the run's own, so that the refusal is the same: the folders it makes are removed again.

    Raises
    ------
    ConfigError
        What :func:`_new_run_dir` would raise for it.
    """
    path = _given_run_dir(run_dir)
    outermost = _outermost_missing(path)
    _make_for_writing(path)
    if outermost is not None:
        _unmake(path, outermost)


def check_runs_folder(workflow: Workflow) -> None:
    """Refuse ``runs/<workflow>`` as a first run without ``--run-dir`` would (a ``runs`` that
    is a file, a folder it may not write in), leaving nothing behind: the dry run had said
    nothing, and the run was then refused.

    Raises
    ------
    ConfigError
        What :func:`_new_run_dir` would raise there.
    """
    base = Path("runs") / workflow.name
    outermost = _outermost_missing(base)
    try:
        _write_test(base)
    finally:
        if outermost is not None:
            _unmake(base, outermost)


def _given_run_dir(run_dir: str | os.PathLike[str]) -> Path:
    """``run_dir`` as a path, unless it is no folder a new run may write in (what is there is
    only looked at)."""
    if isinstance(run_dir, str) and not run_dir.strip():  # Path("") is the current folder
        raise ConfigError([Problem("expected a folder, got an empty path", origin="--run-dir")])
    path = Path(run_dir)
    if not _there(path):  # (said by the write test, if it cannot be made)
        return path
    if not path.is_dir():
        raise ConfigError([Problem("is a file, not a folder", "", str(path))])
    using = run_dir_lock.holder(path)
    if using is not None:  # a run started there a moment ago: not one to resume
        raise run_dir_lock.in_use(path, using)
    if any(path.iterdir()):
        raise ConfigError(
            [
                Problem(
                    "run directory exists and is not empty; pass --resume to continue that "
                    "run, or choose another --run-dir (nothing there is overwritten)",
                    "",
                    str(path),
                )
            ]
        )
    return path


def _make_for_writing(path: Path) -> None:
    """:func:`_write_test` of a given run directory; the folders made for it before it is
    refused are removed (``a/b`` of ``--run-dir a/b/NAME`` with a name too long had stayed)."""
    outermost = _outermost_missing(path)
    try:
        _write_test(path)
    except ConfigError:
        if outermost is not None:
            _unmake(path, outermost)
        raise


def _write_test(path: Path) -> None:
    """Make ``path`` (and its parents) and write in it, or refuse it as no place to write."""
    probe = path / ".openclaw-write-test"
    try:  # write something, as root may not write everywhere os.access says it can
        path.mkdir(parents=True, exist_ok=True)
        probe.touch()
        probe.unlink()
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise ConfigError(
            [Problem(f"cannot write a run directory here: {reason}", "", str(path))]
        ) from None


def _unmake(path: Path, outermost: Path) -> None:
    """Remove the empty folders from ``path`` up to ``outermost``, those that are there (a
    failed ``mkdir(parents=True)`` may have made only the outer ones)."""
    with contextlib.suppress(OSError):  # not empty after all (something else wrote): kept
        for folder in (path, *path.parents):
            if _there(folder):
                folder.rmdir()
            if folder == outermost:
                break


def _discard(directory: Path, made: bool, outermost: Path | None = None) -> None:
    """Remove what a first run wrote in ``directory`` before it was refused, and ``directory``
    itself if the run ``made`` it, with the folders made for it up to ``outermost`` (a first
    run's ``runs/<workflow>``, and ``runs``; an empty ``runs/<workflow>/`` had stayed)."""
    for name in (RUN_RECORD, run_dir_lock.LOCK):
        (directory / name).unlink(missing_ok=True)
    shutil.rmtree(directory / SOURCES, ignore_errors=True)
    if not made:
        return
    with contextlib.suppress(OSError):  # not empty after all (another run's): leave it
        for folder in (directory, *directory.parents):
            folder.rmdir()
            if outermost is None or folder == Path(outermost):
                break


def free_bytes(path: str | os.PathLike[str]) -> int | None:
    """The free space of the disk ``path`` is on, or would be made on (its nearest existing
    parent's); ``None`` where it cannot be read."""
    for folder in (Path(path), *Path(path).absolute().parents):
        if _there(folder):
            with contextlib.suppress(OSError):
                return shutil.disk_usage(folder).free
            return None
    return None


def _outermost_missing(path: str | os.PathLike[str]) -> Path | None:
    """The outermost of ``path`` and its parents that does not exist yet (``None``: it exists)."""
    missing = None
    for folder in (Path(path), *Path(path).parents):
        if _there(folder):
            break
        missing = folder
    return missing


def _there(path: Path) -> bool:
    """Whether ``path`` exists. One that cannot even be looked up (a name too long for the
    file system, a parent this user may not search) does not, and the write test says why:
    ``Path.exists`` raised there, an internal error with exit 1."""
    try:
        path.stat()
    except OSError:
        return False
    return True


def _claimed(path: Path) -> bool:
    """Make ``path`` unless it exists (an error to make it is said by the write test after)."""
    try:
        path.mkdir(parents=True)
    except FileExistsError:
        return False
    except OSError:
        pass
    return True
