"""The log records local workers and the client leave to submit's own messages."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import subprocess
import sys
import threading
import time
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from openclaw_dask.exitcodes import EXIT_INTERRUPTED
from openclaw_dask.runtime import terminal


def record(name: str, msg: str, error: BaseException | None = None) -> logging.LogRecord:
    exc_info = (type(error), error, error.__traceback__) if error else None
    return logging.LogRecord(name, logging.ERROR, __file__, 1, msg, (), exc_info)


def test_only_the_records_submit_reports_itself_are_dropped() -> None:
    failed = record("distributed.worker", "Compute Failed\nKey: x\nTraceback: '...'")
    assert not terminal._not_a_task_failure(failed)
    assert terminal._not_a_task_failure(record("distributed.worker", "Run out-of-band function"))
    closed = "Async instruction for <Task cancelled name='execute(x)'> ended with CancelledError"
    assert not terminal._not_closed_mid_task(record("distributed.worker.state_machine", closed))
    assert terminal._not_closed_mid_task(record("distributed.worker.state_machine", "other"))
    cut = "failed during get data with tcp://127.0.0.1:40519 -> tcp://127.0.0.1:34815"
    assert not terminal._not_a_cut_transfer(record("distributed.worker", cut))
    fetch = "Worker stream died during communication: %s"  # the fetching side of the same
    assert not terminal._not_a_cut_transfer(record("distributed.worker", fetch))
    assert terminal._not_a_cut_transfer(record("distributed.worker", "Compute Failed"))
    heartbeat = "Failed to communicate with scheduler during heartbeat."
    assert not terminal._not_a_lost_heartbeat(record("distributed.worker", heartbeat))
    unexpected = "Unexpected exception during heartbeat. Closing worker."
    assert terminal._not_a_lost_heartbeat(record("distributed.worker", unexpected))
    # distributed.utils.sync's cancel() on an early Ctrl-C, exactly as Python words it
    bug = NameError("cannot access free variable 'future' where it is not associated with a value")
    assert not terminal._not_the_sync_cancel_bug(record("tornado.application", "Exception", bug))
    other = NameError("name 'x' is not defined")
    assert terminal._not_the_sync_cancel_bug(record("tornado.application", "Exception", other))
    assert terminal._not_the_sync_cancel_bug(record("tornado.application", "no exception"))


def test_a_heartbeat_that_a_closing_worker_cuts_is_dropped_and_a_running_ones_kept() -> None:
    """Dask's race, forced: ``Worker.close`` closes its connection pool under a heartbeat that
    is still waiting for the scheduler's answer (held back here until the worker closed), and
    the worker logs the lost heartbeat with a traceback; seen once at the clean end of an
    mpirun in CI."""
    from distributed import Scheduler, Worker

    lost: list[tuple[logging.LogRecord, bool]] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:  # with the filter's verdict then
            if record.getMessage().startswith(terminal.LOST_HEARTBEAT):
                lost.append((record, terminal._not_a_closing_workers_heartbeat(record)))

    async def main() -> bool:
        async with Scheduler(dashboard_address=":0") as scheduler:
            answer = scheduler.handlers["heartbeat_worker"]
            # the answer waits until the worker has closed: a fixed 0.5 s had let a worker that
            # took longer to close under CI's load get its answer, and nothing was cut
            closed = asyncio.Event()

            async def slow(*args: Any, **kwargs: Any) -> Any:
                await closed.wait()
                return answer(*args, **kwargs)

            scheduler.handlers["heartbeat_worker"] = slow
            # a worker closed before, still held (the stress run's xdist worker held some
            # from earlier tests): it must not make the running worker's lost heartbeat go
            async with Worker(scheduler.address, nthreads=1) as earlier:
                pass
            async with Worker(scheduler.address, nthreads=1) as worker:
                beat = asyncio.create_task(worker.heartbeat())
                await asyncio.sleep(0.05)
                running = terminal._not_a_closing_workers_heartbeat(lost_heartbeat)
            await beat
            closed.set()
            assert earlier.status.name == "closed"
            return running

    lost_heartbeat = record("distributed.worker", f"{terminal.LOST_HEARTBEAT}.")
    handler, logger = Keep(), logging.getLogger("distributed.worker")
    # the record must be logged: an earlier test in this process may have left "distributed"
    # at CRITICAL (terminal.quiet_after_interrupt, an in-process Ctrl-C: CI failed so twice)
    parent = logging.getLogger("distributed")
    levels = (parent.level, logger.level)
    parent.setLevel(logging.WARNING)
    logger.setLevel(logging.NOTSET)
    logger.addHandler(handler)
    try:
        kept_while_running = asyncio.run(main())
    finally:
        logger.removeHandler(handler)
        parent.setLevel(levels[0])
        logger.setLevel(levels[1])
    assert kept_while_running  # its scheduler gone from under a running worker: still said
    ((cut, kept),) = lost
    assert cut.exc_info and not kept  # the traceback the mpirun printed, dropped
    other = record("distributed.worker", "Unexpected exception during heartbeat. Closing worker.")
    assert terminal._not_a_closing_workers_heartbeat(other)


def test_the_client_filter_is_installed_once() -> None:
    logger = logging.getLogger("tornado.application")
    terminal.quiet_interrupted_sync()
    terminal.quiet_interrupted_sync()
    assert logger.filters.count(terminal._not_the_sync_cancel_bug) == 1


def raised_in(name: str) -> BaseException:
    """A CancelledError whose traceback has a frame of a function called ``name``."""

    def cancelled() -> None:
        raise asyncio.CancelledError

    frame = types.FunctionType(cancelled.__code__.replace(co_name=name), {"asyncio": asyncio})
    try:
        frame()
    except asyncio.CancelledError as exc:
        return exc
    raise AssertionError("not raised")


def test_the_client_echoes_of_a_stopped_scheduler_are_dropped_and_nothing_else() -> None:
    keep = terminal._not_a_lost_scheduler_echo
    for cut_short in ("_reconnect", "_close"):
        assert not keep(record("distributed.client", "", raised_in(cut_short)))
    gave_up = "Failed to reconnect to scheduler after %.2f seconds, closing client"
    assert not keep(record("distributed.client", gave_up))
    assert keep(record("distributed.client", "", raised_in("_gather")))
    assert keep(record("distributed.client", "other"))


class _RaisesSigintWhenFinalised:
    def __del__(self) -> None:
        # the handler runs inside this finaliser, as when a Ctrl-C lands in a Dask future's
        # __del__ mid-run: Python cannot raise from here and only prints "Exception ignored"
        signal.raise_signal(signal.SIGINT)


@pytest.fixture
def python_sigint() -> Iterator[None]:
    """Python's own Ctrl-C handler, as the CLI has it, whatever the test process has now
    (pytest started as a shell's background job has SIGINT ignored)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.mark.usefixtures("python_sigint")
def test_an_interrupt_that_lands_in_a_finaliser_is_not_lost() -> None:
    t0, hook = time.monotonic(), sys.unraisablehook
    with pytest.raises(KeyboardInterrupt), terminal.interrupts():
        _RaisesSigintWhenFinalised()  # finalised at once: no reference is kept
        time.sleep(5.0)  # the interrupt must end this, not be swallowed
    assert time.monotonic() - t0 < 4.0
    assert sys.unraisablehook is hook  # put back after the run


def test_a_gather_cut_short_by_ctrl_c_leaves_no_asyncio_traceback() -> None:
    from distributed.client import AllExit

    try:
        raise AllExit()
    except AllExit as exc:
        cut = exc
    message = "Task exception was never retrieved\nfuture: <Task finished coro=<...wait()>>"
    assert not terminal._not_an_unretrieved_gather_exit(record("asyncio", message, cut))
    other = record("asyncio", "Task exception was never retrieved", ValueError("x"))
    assert terminal._not_an_unretrieved_gather_exit(other)
    terminal.quiet_interrupted_sync()
    assert terminal._not_an_unretrieved_gather_exit in logging.getLogger("asyncio").filters


#: A run's shape: the body, then a closing (the cluster's) that takes a while, all inside
#: ``interrupts()`` as in the runner; argv[1] = "ignore" starts it with SIGINT ignored, "nohup"
#: with SIGHUP ignored.
CLOSING_RUN = """
import signal, sys, time
from openclaw_dask.runtime.terminal import interrupts, quit_at_third_interrupt
if sys.argv[2:] == ["cli"]:  # as the console script runs it
    quit_at_third_interrupt()
# as started from a terminal, or as a shell's background job, whatever the test process has
# (pytest itself started in the background inherits SIGINT ignored)
handling = {"default": signal.default_int_handler, "ignore": signal.SIG_IGN}
signal.signal(signal.SIGINT, handling.get(sys.argv[1], signal.default_int_handler))
if sys.argv[1] == "nohup":
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
try:
    with interrupts():
        try:
            print("running", flush=True)
            time.sleep(30)
        finally:
            print("closing", flush=True)
            time.sleep(1.5)
            print("closed", flush=True)
except KeyboardInterrupt:
    sys.exit(7)
"""


def closing_run(
    tmp_path: Path, mode: str = "default", process: str = "cli"
) -> subprocess.Popen[str]:
    script = tmp_path / "run.py"
    script.write_text(CLOSING_RUN)
    proc = subprocess.Popen(
        [sys.executable, str(script), mode, process],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline() == "running\n"
    return proc


def test_a_second_ctrl_c_lets_the_closing_finish_and_a_third_quits(tmp_path: Path) -> None:
    proc = closing_run(tmp_path)
    assert proc.stdout is not None
    proc.send_signal(signal.SIGINT)
    assert proc.stdout.readline() == "closing\n"
    proc.send_signal(signal.SIGINT)  # impatient: the closing goes on
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 7 and out == "closed\n", (out, err)
    assert err == terminal.STILL_CLOSING.format(again="Ctrl-C once more", third="quits at once")
    assert "Traceback" not in err

    proc = closing_run(tmp_path)
    assert proc.stdout is not None
    proc.send_signal(signal.SIGINT)
    assert proc.stdout.readline() == "closing\n"
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)
    time.sleep(0.2)
    proc.send_signal(signal.SIGINT)  # quits at once, before the closing's 1.5 s are over
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == EXIT_INTERRUPTED and out == "", (out, err)
    assert time.monotonic() - t0 < 1.2 and "Traceback" not in err


def test_a_third_ctrl_c_in_a_process_that_goes_on_cuts_the_closing_short_and_raises(
    tmp_path: Path,
) -> None:
    """From Python (a notebook's kernel) a third Ctrl-C had ended the process (``os._exit``),
    the kernel and everything it held with it."""
    proc = closing_run(tmp_path, process="python")
    assert proc.stdout is not None
    proc.send_signal(signal.SIGINT)
    assert proc.stdout.readline() == "closing\n"
    proc.send_signal(signal.SIGINT)
    time.sleep(0.2)
    proc.send_signal(signal.SIGINT)  # raised in the closing: the script goes on to its except
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 7 and out == "", (out, err)
    assert err == terminal.STILL_CLOSING.format(again="Ctrl-C once more", third="cuts it short")


#: tune of a workflow: the tune's block (its closing said as benchmark's) around a run's
#: (``run_workflow``'s own block); the run closes, then the tune closes its clusters.
NESTED_RUN = """
import signal, sys, time
from openclaw_dask.runtime.terminal import STILL_CLOSING_CLUSTER, interrupts
from openclaw_dask.runtime.terminal import quit_at_third_interrupt
quit_at_third_interrupt()
# as started from a terminal: pytest started in the background (CI) passes SIGINT ignored on
signal.signal(signal.SIGINT, signal.default_int_handler)
try:
    with interrupts(STILL_CLOSING_CLUSTER):
        try:
            with interrupts():
                try:
                    print("running", flush=True)
                    time.sleep(30)
                finally:
                    print("run closing", flush=True)
                    time.sleep(0.5)
        finally:
            print("tune closing", flush=True)
            time.sleep(1.5)
            print("closed", flush=True)
except KeyboardInterrupt:
    sys.exit(7)
"""


def test_a_block_inside_another_keeps_the_outer_ones_count_and_words(tmp_path: Path) -> None:
    """The inner block had said the run's "saving run.json ... --resume" of tune's temporary
    runs at a second press, and a press after it ended was a first one again: raised in the
    middle of the tune's closing."""
    script = tmp_path / "nested.py"
    script.write_text(NESTED_RUN)
    proc = subprocess.Popen(
        [sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline() == "running\n"
    proc.send_signal(signal.SIGINT)
    assert proc.stdout.readline() == "run closing\n"
    assert proc.stdout.readline() == "tune closing\n"
    proc.send_signal(signal.SIGINT)  # impatient, once the run has closed: the tune's closing
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 7 and out == "closed\n", (out, err)
    said = terminal.STILL_CLOSING_CLUSTER.format(again="Ctrl-C once more", third="quits at once")
    assert err == said, err


def test_a_second_sigterm_is_answered_in_its_own_words(tmp_path: Path) -> None:
    proc = closing_run(tmp_path)
    assert proc.stdout is not None
    proc.send_signal(signal.SIGTERM)  # kill, or a batch system's end of the job
    assert proc.stdout.readline() == "closing\n"
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 7 and out == "closed\n", (out, err)
    assert err.startswith("still closing") and "; SIGTERM once more quits" in err, err
    assert "Ctrl-C" not in err


@pytest.mark.parametrize(
    ("mode", "sig"), [("ignore", signal.SIGINT), ("nohup", signal.SIGHUP)], ids=["bg", "nohup"]
)
def test_a_run_started_ignoring_an_interrupt_keeps_ignoring_it(
    tmp_path: Path, mode: str, sig: signal.Signals
) -> None:
    """A shell's background job ignores Ctrl-C, a ``nohup`` run the hangup: the run keeps
    ignoring it, and a SIGTERM after it is the first interrupt, not a second press (mutation
    audit: both taken over all the same went unseen: the signal started the closing, whose
    1.5 s outlasted the look at the process)."""
    proc = closing_run(tmp_path, mode)
    proc.send_signal(sig)
    time.sleep(0.5)
    assert proc.poll() is None  # still running
    proc.send_signal(signal.SIGTERM)  # SIGTERM still stops it, cleanly
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 7 and out == "closing\nclosed\n", (out, err)
    assert err == "", err  # not "still closing ...": the SIGTERM was the first


def _sigint_blocked() -> bool:
    return signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, ())


@pytest.mark.usefixtures("python_sigint")
def test_a_ctrl_c_while_workers_start_is_held_for_them_and_raised_after() -> None:
    seen: list[bool] = []
    with pytest.raises(KeyboardInterrupt), terminal.interrupts_held():
        assert _sigint_blocked()
        # a thread started meanwhile (Dask's IO loop) and so the processes it spawns hold it
        # too, also after the resource tracker started (its start unblocks its caller's mask)
        thread = threading.Thread(target=lambda: seen.append(_sigint_blocked()))
        thread.start()
        thread.join()
        signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)
        time.sleep(0.05)  # would have been raised here, in the middle of the start
        seen.append(True)
    assert seen == [True, True]
    assert not _sigint_blocked()


@pytest.mark.usefixtures("python_sigint")
def test_a_ctrl_c_that_another_thread_receives_is_held_too() -> None:
    """Blocking holds a signal back in this thread only: the kernel gives a Ctrl-C sent to the
    process to a thread started before the block, and Python raised it here all the same, in
    the middle of the block (a `cluster up` daemon left starting under load)."""
    started, done = threading.Event(), threading.Event()

    def waiting() -> None:  # started before the block: SIGINT is not blocked in it
        started.set()
        done.wait(10)

    thread = threading.Thread(target=waiting)
    thread.start()
    started.wait(10)
    seen: list[bool] = []
    try:
        with pytest.raises(KeyboardInterrupt), terminal.signals_held():
            os.kill(os.getpid(), signal.SIGINT)  # blocked here: the other thread takes it
            time.sleep(0.05)  # raised here before
            seen.append(True)
    finally:
        done.set()
        thread.join()
    assert seen == [True]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


@pytest.mark.usefixtures("python_sigint")
def test_a_sigterm_while_workers_start_is_noted_and_raised_after() -> None:
    seen: list[bool] = []
    with pytest.raises(KeyboardInterrupt), terminal.interrupts(), terminal.interrupts_held():
        # not blocked: the workers started now would inherit the mask, and their nannies stop
        # them with SIGTERM
        assert signal.SIGTERM not in signal.pthread_sigmask(signal.SIG_BLOCK, ())
        signal.raise_signal(signal.SIGTERM)  # raised here, it cut the nannies' start short
        time.sleep(0.05)
        seen.append(True)
    assert seen == [True]
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # (interrupts() restored it)


FOREIGN_SIGTERM = """
import ctypes, os, signal, sys, time
from openclaw_dask.runtime import terminal

libc = ctypes.CDLL(None)
libc.signal.restype = ctypes.c_void_p
libc.signal.argtypes = (ctypes.c_int, ctypes.c_void_p)
for block in (terminal.interrupts_held, terminal.interrupts):
    # a C function (srand: harmless if it ran) as the handler, set outside Python; Python
    # reads the handlers it did not set as its _signal module is made, so made again it
    # reports this one as None, as a program that embeds Python shows its own
    libc.signal(signal.SIGTERM, ctypes.cast(libc.srand, ctypes.c_void_p))
    del sys.modules["_signal"]
    import _signal  # noqa: F401
    assert signal.getsignal(signal.SIGTERM) is None
    with block():
        pass
    print(signal.getsignal(signal.SIGTERM) is signal.SIG_DFL, flush=True)
os.kill(os.getpid(), signal.SIGTERM)  # and the process has SIGTERM's default action again
time.sleep(5)
print("still running")
"""


def test_a_sigterm_handler_set_outside_python_is_restored_as_the_default() -> None:
    # signal.signal returns None for it, and putting None back raised TypeError as the
    # block ended
    proc = subprocess.run(
        [sys.executable, "-c", FOREIGN_SIGTERM], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == -signal.SIGTERM, proc.stderr
    assert proc.stdout == "True\nTrue\n" and proc.stderr == ""


LEFT_HALF_MADE = """
import atexit
import logging
import sys

import distributed
from openclaw_dask.runtime import terminal

class HalfMade:
    def __del__(self):
        raise AttributeError("no attribute '_debug'")  # a loop cut short in its __init__

async def open_group():
    pass

kept = [HalfMade(), open_group()]  # finalised only at exit, as after the interrupt
# and what Dask logs of a worker process reaped at exit
atexit.register(logging.getLogger("distributed.process").warning, "exit status was already read")
if sys.argv[1] == "reported":
    terminal.quiet_after_interrupt()
"""


def test_objects_an_interrupt_cut_short_say_nothing_at_exit_once_it_was_reported() -> None:
    def run(mode: str) -> str:
        done = subprocess.run(
            [sys.executable, "-c", LEFT_HALF_MADE, mode], capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        return done.stderr

    noisy = run("unreported")
    assert "Exception ignored in" in noisy and "was never awaited" in noisy
    assert "exit status was already read" in noisy
    assert run("reported") == ""


#: A worker's preload run in a process of its own, then what reaches a worker: its logs, and
#: what a terminal sends its foreground group.
WORKER_PRELOAD = """
import logging, os, signal, sys
logging.basicConfig(stream=sys.stdout, format="%(name)s: %(message)s")
from openclaw_dask.runtime import terminal
terminal.dask_setup(None)
worker = logging.getLogger("distributed.worker")
worker.error("Compute Failed\\nKey: x")
worker.error("failed during get data with tcp://127.0.0.1:1 -> tcp://127.0.0.1:2")
worker.error("Worker stream died during communication: tcp://127.0.0.1:2")
worker.error("Failed to communicate with scheduler during heartbeat.")
logging.getLogger("distributed.worker.state_machine").error(
    "Async instruction for <Task cancelled> ended with CancelledError"
)
worker.error("Run out-of-band function 'kept'")
for sig in (signal.SIGINT, signal.SIGHUP):
    os.kill(os.getpid(), sig)
print("still here")
"""


def test_the_worker_preload_drops_what_the_client_reports_and_ignores_the_terminal() -> None:
    """The filters must be installed, not only right (mutation audit: the cut-transfer filter
    left out of dask_setup, and a worker that did not ignore hangups, went unseen here)."""
    proc = subprocess.run(
        [sys.executable, "-c", WORKER_PRELOAD], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "distributed.worker: Run out-of-band function 'kept'\nstill here\n"


#: Start the resource tracker as a local cluster's start does, hang it up, and say whether it
#: is still there (``waitpid``: ``(0, 0)`` while the child runs).
HANGUP_TRACKER = """
import os, signal, time
from multiprocessing import resource_tracker
from openclaw_dask.runtime.terminal import interrupts_held
with interrupts_held():
    pass
pid = resource_tracker._resource_tracker._pid
os.kill(pid, signal.SIGHUP)
time.sleep(0.5)
print(os.waitpid(pid, os.WNOHANG))
"""


def test_the_resource_tracker_outlives_a_terminal_s_hangup() -> None:
    """A hangup sent to the job (a terminal that closed, ``kill -HUP`` of its group) killed
    multiprocessing's resource tracker, which ignores only Ctrl-C and SIGTERM; the one started
    again in its place printed a "KeyError: '/mp-...'" traceback per worker semaphore under a
    benchmark's "interrupted"."""
    proc = subprocess.run(
        [sys.executable, "-c", HANGUP_TRACKER], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "(0, 0)\n"
