"""Worker preload for local workers: they share the client's terminal, the client speaks for them.

The worker processes of a ``LocalCluster`` (or ``LocalCUDACluster``) are children of the client,
in its terminal's process group and writing to its stderr. Two things reached the user twice
and badly from there:

* **Ctrl-C.** A terminal sends SIGINT to the whole foreground group. Each worker died of
  ``KeyboardInterrupt`` and printed its traceback, and the scheduler logged lost tasks, while the
  client was still marking the run interrupted and closing the cluster in order. The workers now
  ignore SIGINT and the client closes them through their nannies (SIGTERM and SIGKILL still stop
  a worker). They start with SIGINT blocked (:func:`interrupts_held` around the cluster's
  start; a child inherits its parent thread's signal mask), so a Ctrl-C pressed while they
  import, before this preload runs, is discarded there too: it had printed each worker's
  ``KeyboardInterrupt`` traceback from its imports and Dask's ``AssertionError: Status.init``.
* **A failed task.** Dask's worker logs ``Compute Failed`` with the task, the exception and its
  traceback as one ``repr`` string. The client that waits for the task receives the same
  exception with its traceback; ``submit`` prints one line and keeps the traceback in
  ``run.json``. The worker's copy of that message is dropped, and so is the warning a worker
  logs for a task cut short by its own closing (which Dask says happens only in
  ``Worker.close``: the client closing the cluster after Ctrl-C) and the errors a worker logs
  when a peer closes in the middle of a transfer to or from it (the same closing; a peer that
  died is still reported by its nanny and the scheduler) or when the scheduler closes during
  its heartbeat (the same closing); other worker logs are kept.

On the client side, :func:`quiet_interrupted_sync` drops one log record of a Dask bug: when
Ctrl-C lands in ``distributed.utils.sync`` before its coroutine has started, the ``cancel``
callback reads the not yet assigned ``future`` and tornado logs a ``NameError`` traceback
(distributed 2026.8; dask/distributed#5758 had made ``cancel`` handle that case). The interrupt
itself is unaffected: it still reaches the caller, and there is nothing to cancel yet. And it
drops asyncio's "Task exception was never retrieved" for the ``AllExit`` of a gather cut short
by Ctrl-C (seen in 3 of 5 runs interrupted in the climate workflow's ``analyse`` step, three
tracebacks each). While a cluster of ours runs, :func:`lost_scheduler_quieted` also drops
what the client logs about a scheduler that stopped (``cluster down`` during a run): that it
gives up reconnecting, and the ``CancelledError`` tracebacks of its reconnection or closing cut
short; the run reports the lost cluster in one line (``ClusterLostError``).

:func:`interrupts` makes SIGTERM and a hangup (the terminal closed: an SSH connection that
dropped) a Ctrl-C for the length of a run, keeps any from being lost in a finaliser, and lets the
first one close the cluster and save ``run.json`` in peace. A hangup had killed the client where
it stood: ``run.json`` still said "running" and the step's last minutes were lost. The workers
ignore hangups as they ignore Ctrl-C (:data:`TERMINAL_SIGNALS`).
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
import threading
import traceback
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from multiprocessing import resource_tracker
from typing import Any

from openclaw_dask.exitcodes import EXIT_INTERRUPTED

#: Dask's worker log message for a task that raised (``distributed/worker.py``).
TASK_FAILED = "Compute Failed"


def _not_a_task_failure(record: logging.LogRecord) -> bool:
    return not str(record.msg).startswith(TASK_FAILED)


def _not_closed_mid_task(record: logging.LogRecord) -> bool:
    message = str(record.msg)
    return not (message.startswith("Async instruction for") and "CancelledError" in message)


#: Dask's worker log messages for a transfer cut by the other end: sending to a peer that
#: closed, and fetching from one (``distributed/worker.py``).
CUT_TRANSFERS = ("failed during get data", "Worker stream died during communication")


def _not_a_cut_transfer(record: logging.LogRecord) -> bool:
    # a peer that closed in the middle of a transfer with this worker (the cluster closing
    # after Ctrl-C); a peer that died is still reported by its nanny and the scheduler
    return not str(record.msg).startswith(CUT_TRANSFERS)


#: Dask's worker log for a heartbeat the scheduler did not answer (``distributed/worker.py``).
LOST_HEARTBEAT = "Failed to communicate with scheduler during heartbeat"


def _not_a_lost_heartbeat(record: logging.LogRecord) -> bool:
    # a local worker's scheduler lives in the client's process (or `cluster up`'s): a heartbeat
    # it cannot answer is that process closing the cluster (Ctrl-C, `cluster down`), which the
    # client itself reports; seen in 1 of 6 Ctrl-C'd runs, with the traceback of the read
    return not str(record.msg).startswith(LOST_HEARTBEAT)


def _not_a_closing_workers_heartbeat(record: logging.LogRecord) -> bool:
    # Worker.close closes its connection pool (``rpc.close``) after stopping the heartbeat's
    # timer but without waiting for a heartbeat already on its way, which then fails with
    # "Stream is closed" and a traceback: seen once at the clean end of an mpirun (a CI run of
    # test_example_under_mpirun_equals_local_run_bit_for_bit). A worker that is running still
    # reports a lost heartbeat: its scheduler rank gone from under it. The record does not
    # say which worker logged it: dropped only when every worker of the process is closing
    # or closed (a process that ran workers before, such as a test's, may still hold them)
    if not str(record.msg).startswith(LOST_HEARTBEAT):
        return True
    from distributed import Worker
    from distributed.core import Status

    workers = list(Worker._instances)
    return not workers or any(w.status not in (Status.closing, Status.closed) for w in workers)


def quiet_closing_heartbeat() -> None:
    """Drop the lost-heartbeat log of a worker of this process that is closing (idempotent).

    For workers whose scheduler is a process of their own, an ``mpirun``'s worker ranks and
    SSH workers (the node preload): unlike a local worker (:func:`dask_setup`), a heartbeat
    lost while the worker runs is kept there.
    """
    _add_filter("distributed.worker", _not_a_closing_workers_heartbeat)


#: The scheduler's log of a lost worker's results (``Scheduler.remove_worker``), a warning for
#: results it recomputes and an error for scattered data: a run says each lost worker itself,
#: in one line ("lost worker ...; continuing from step N"), where this one lists every key.
LOST_RESULTS = " caused the cluster to lose "


def _not_a_lost_workers_results(record: logging.LogRecord) -> bool:
    """``False`` for the scheduler's :data:`LOST_RESULTS` record (a logging filter)."""
    return LOST_RESULTS not in str(record.msg)


def quiet_lost_results() -> None:
    """Drop :data:`LOST_RESULTS` from the scheduler of this process (idempotent).

    For a scheduler that logs where the run's terminal sees it but outside the run's own
    quieting (:func:`~openclaw_dask.cli.output.dask_logs_quieted`): an ``mpirun``'s rank 0.
    """
    _add_filter("distributed.scheduler", _not_a_lost_workers_results)


def _not_the_sync_cancel_bug(record: logging.LogRecord) -> bool:
    error = record.exc_info[1] if record.exc_info else None
    return not (isinstance(error, NameError) and "'future'" in str(error))


def _not_an_unretrieved_gather_exit(record: logging.LogRecord) -> bool:
    # Client._gather waits on each future in a task that raises distributed.client.AllExit when
    # the future is cancelled; a Ctrl-C (or a closing client) mid-gather leaves those tasks
    # unawaited and asyncio logs "Task exception was never retrieved" with a traceback each
    error = record.exc_info[1] if record.exc_info else None
    kind = type(error)
    return not (kind.__name__ == "AllExit" and kind.__module__ == "distributed.client")


#: Dask's client log when it gives up on a scheduler that stopped (``distributed/client.py``).
GAVE_UP = "Failed to reconnect to scheduler"


def _not_a_lost_scheduler_echo(record: logging.LogRecord) -> bool:
    # the client's own logs of a scheduler that went away: giving up, and the CancelledError of
    # its reconnection or closing cut short; the run reports the lost cluster in one line
    if str(record.msg).startswith(GAVE_UP):
        return False
    error = record.exc_info[1] if record.exc_info else None
    if not isinstance(error, asyncio.CancelledError):
        return True
    frames = traceback.extract_tb(error.__traceback__)
    return not any(frame.name in ("_reconnect", "_close") for frame in frames)


def quiet_interrupted_sync() -> None:
    """Drop tornado's log of the ``sync``-``cancel`` ``NameError`` and asyncio's of a gather cut
    short, in this process (idempotent): the noise of Dask bugs, whoever's client it is."""
    _add_filter("tornado.application", _not_the_sync_cancel_bug)
    _add_filter("asyncio", _not_an_unretrieved_gather_exit)


#: How many blocks of :func:`lost_scheduler_quieted` are open (threads may run several).
_quieting = 0
_quieting_lock = threading.Lock()


@contextmanager
def lost_scheduler_quieted() -> Iterator[None]:
    """Drop the client's logs of a scheduler that stopped (:func:`_not_a_lost_scheduler_echo`)
    for the block: the run reports a lost cluster itself.

    For the block only: installed for the rest of the process, they also hid from a
    notebook's own client, after a run, that its scheduler had gone ("Failed to reconnect to
    scheduler ... closing client"), which is Dask's only word of it.
    """
    global _quieting
    logger = logging.getLogger("distributed.client")
    with _quieting_lock:
        _quieting += 1
        _add_filter("distributed.client", _not_a_lost_scheduler_echo)
    try:
        yield
    finally:
        with _quieting_lock:
            _quieting -= 1
            if not _quieting:
                logger.removeFilter(_not_a_lost_scheduler_echo)


def _add_filter(name: str, keep: Any) -> None:
    logger = logging.getLogger(name)
    if keep not in logger.filters:
        logger.addFilter(keep)


#: What a terminal sends its foreground group, client and local workers alike: Ctrl-C, and the
#: hangup of a terminal that closed (an SSH connection that dropped, a closed window). The
#: workers ignore both and are closed by the client, which stops the run on either.
TERMINAL_SIGNALS = (signal.SIGINT, signal.SIGHUP)


def dask_setup(worker: Any) -> None:
    """Preload hook: ignore Ctrl-C and hangups, and leave failed tasks to the client, in this
    worker."""
    # signal handlers can only be set from the main thread; a worker run inside a thread of
    # another process (not how our plans start them) keeps that process's handling
    if threading.current_thread() is threading.main_thread():
        for sig in TERMINAL_SIGNALS:  # (also drops one pending since the start)
            signal.signal(sig, signal.SIG_IGN)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, set(TERMINAL_SIGNALS))
    _add_filter("distributed.worker", _not_a_task_failure)
    _add_filter("distributed.worker", _not_a_cut_transfer)
    _add_filter("distributed.worker", _not_a_lost_heartbeat)
    _add_filter("distributed.worker.state_machine", _not_closed_mid_task)


def _restore(sig: int, before: Any) -> None:
    """Put back the handler that ``signal.signal`` returned for ``sig`` when it was replaced.

    ``None`` there is a handler set outside Python (by a program that embeds it, or a C
    library), which Python can neither name nor set again: ``signal.signal(sig, None)`` raises
    TypeError, from the ``finally`` of a block, where it would hide what the block raised.
    That handler was lost when ours replaced it, so the default action is put back instead:
    "ignore" would leave a process that SIGTERM no longer stops.
    """
    signal.signal(sig, signal.SIG_DFL if before is None else before)


@contextmanager
def interrupts_held() -> Iterator[None]:
    """Hold Ctrl-C, a hangup and SIGTERM back while local worker processes are started; raise
    the first when they are.

    SIGINT is blocked in the calling (main) thread for the block. The threads it starts
    meanwhile (Dask's IO loop, which starts the nannies' process watchers) inherit the mask,
    and so do the worker processes those spawn: a Ctrl-C that reaches them while they still
    import stays pending until the preload ignores it (:func:`dask_setup`). In this process a
    Ctrl-C pressed meanwhile is delivered when the block ends, after the cluster exists and can
    be closed in order. The block is short (the local workers' start, about 2 s).

    SIGTERM is not blocked (the workers would inherit that too, and SIGTERM is how a nanny
    stops its worker); it is only noted in this process and sent again when the block ends.
    Raised in the middle of the start, it left a nanny half-started, and asyncio printed
    "Task exception was never retrieved" and its "Nanny failed to start" tracebacks (21 lines)
    under the run's "interrupted" line: 2 of 9 SIGTERMs sent 0-1.2 s after the run directory
    was announced. Outside the main thread nothing is changed.
    """
    if threading.current_thread() is threading.main_thread():
        # multiprocessing starts its resource tracker with the first worker, and that start
        # unblocks SIGINT in the thread that asks for it (Dask's IO loop) whatever its mask
        # was: started here first, the tracker is only checked on later calls. It ignores
        # Ctrl-C and SIGTERM itself but not a hangup, which killed it (a terminal's closing,
        # `kill -HUP` of the job), and the one started again in its place printed a
        # "KeyError: '/mp-...'" traceback for each worker's semaphore: it starts with SIGHUP
        # blocked, and keeps it so
        held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGHUP})
        try:
            resource_tracker.ensure_running()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)
    with signals_held():
        yield


@contextmanager
def signals_held() -> Iterator[None]:
    """Hold Ctrl-C, a hangup and SIGTERM back for the block (in the main thread; elsewhere
    nothing changes); raise the first when it ends.

    :func:`interrupts_held` without the resource tracker: for a block that starts a process
    it must not lose, such as ``cluster up``'s daemon. A Ctrl-C that landed inside
    ``subprocess.Popen``, after the child existed and before the call returned it, left that
    child running unseen. Processes started in the block inherit the blocked SIGINT and SIGHUP.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    noted: list[int] = []
    # Blocking reaches this thread only: a Ctrl-C sent to the process went to another thread
    # that does not block it (one started earlier), and Python raised it here all the same,
    # inside Popen (`cluster up` left its daemon starting in ~1 of 8 tries beside two busy
    # loops). Each held signal is noted by a handler of ours too; one ignored before (nohup,
    # a background job) stays ignored.
    handlers = {}
    for sig in (signal.SIGTERM, *TERMINAL_SIGNALS):
        if signal.getsignal(sig) is not signal.SIG_IGN:
            handlers[sig] = signal.signal(sig, lambda signum, frame: noted.append(signum))
    before = signal.pthread_sigmask(signal.SIG_BLOCK, set(TERMINAL_SIGNALS))
    try:
        yield
    finally:
        for sig, handling in handlers.items():
            _restore(sig, handling)
        signal.pthread_sigmask(signal.SIG_SETMASK, before)  # a held Ctrl-C is raised here
        if noted:
            signal.raise_signal(noted[0])


def quiet_after_interrupt() -> None:
    """Once an interrupt has been reported: drop what objects it cut short say at exit.

    A Ctrl-C lands wherever the main thread is, also in the middle of building an asyncio
    loop or before a coroutine was awaited (zarr's ``open_group``: seen once, in a CI run of
    the test that presses Ctrl-C 1.3 s after the run directory is announced; not in 12 runs by
    hand at 2.3-3.4 s). When the interpreter finalises them at exit
    it printed "Exception ignored in BaseEventLoop.__del__" with a traceback and "coroutine
    ... was never awaited" under the one line that had reported the interrupt.

    Dask's own log records go too (below critical): a SIGTERM while the local workers
    started left one of "process ... exit status was already read, will report exitcode 255"
    under that line in 3 of 8 tries, logged as the half-started worker was reaped at exit.
    """
    sys.unraisablehook = lambda unraisable: None
    warnings.filterwarnings("ignore", r"coroutine .* was never awaited", RuntimeWarning)
    if not os.environ.get("OPENCLAW_DEBUG"):  # (cli.output.DEBUG_ENV: it keeps everything)
        logging.getLogger("distributed").setLevel(logging.CRITICAL)


#: Said once when Ctrl-C (or SIGTERM) comes again while the first one is still being handled;
#: ``{again}`` names the signal that came (:data:`AGAIN`), ``{third}`` what it does
#: (:data:`THIRD`).
STILL_CLOSING = (
    "still closing the cluster and saving run.json; {again} {third} "
    "(run.json may then still say running; --resume continues it all the same)\n"
)

#: Said instead by commands that save nothing while they close (benchmark, tune).
STILL_CLOSING_CLUSTER = "still closing the cluster; {again} {third}\n"

#: What a third Ctrl-C does, by whether the process quits at it (:func:`quit_at_third_interrupt`).
THIRD = {True: "quits at once", False: "cuts it short"}

#: Whether a third Ctrl-C ends the process: the command line's, which ends anyway. From Python
#: (a notebook's kernel) it raises instead: ``os._exit`` had killed the kernel and all it held.
_quit_at_third = False


def quit_at_third_interrupt() -> None:
    """Make a third Ctrl-C (or SIGTERM) in an :func:`interrupts` block end the process at once.

    For the command line's process, which ends after its command anyway: called by the console
    script and the mpi launch's client rank. Elsewhere a third one raises ``KeyboardInterrupt``
    in the closing, as the first did in the run.
    """
    global _quit_at_third
    _quit_at_third = True


#: How the second-signal message names the third: the way the user sent the second (a batch
#: system's or ``kill``'s SIGTERM had been answered "Ctrl-C once more"). A hangup's is not
#: seen: its terminal is gone.
AGAIN = {signal.SIGINT: "Ctrl-C once more", signal.SIGTERM: "SIGTERM once more"}


def off_the_dead_terminal() -> None:
    """Point standard output and error that go to a terminal that hung up at ``/dev/null``.

    Every write to a hung-up terminal fails (``EIO``): after a hangup the run's closing
    lines would raise in the middle of marking ``run.json`` interrupted and closing the
    cluster. An empty write tells a dead terminal from a live one (a ``kill -HUP`` from a
    live terminal keeps its output).
    """
    for fd in (1, 2):
        try:
            os.write(fd, b"")
        except OSError:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, fd)
            os.close(null)


#: Whether an :func:`interrupts` block holds the signal handlers (they are the main thread's).
_interrupts_active = False


@contextmanager
def interrupts(closing: str = STILL_CLOSING) -> Iterator[None]:
    """Ctrl-C, SIGTERM and a hangup stop the run once, cleanly; none gets lost in a finaliser.

    The first one raises ``KeyboardInterrupt`` in the main thread, and the run closes the
    cluster and marks ``run.json`` interrupted. A second one is not raised: raised, it cut that
    closing short, and Dask's exit hook then printed a screen of tracebacks while it closed the
    half-closed cluster again (3 of 3 runs given Ctrl-C four times, 0.4 s apart). It says
    that the run is closing instead; a third quits at once in the command line's process
    (:func:`quit_at_third_interrupt`; ``os._exit``: the workers see their parent go and exit;
    ``run.json`` keeps its last save), and elsewhere (a notebook's kernel, which must live on)
    raises ``KeyboardInterrupt`` in the closing.

    Python raises a signal's ``KeyboardInterrupt`` wherever the main thread is, and when that
    is a finaliser (``__del__`` of a Dask future released mid-run) the exception cannot
    propagate: Python prints "Exception ignored in ..." and goes on. Measured: 1 Ctrl-C in
    about 8 under load was lost that way and the run completed (exit 0). An interrupt that
    lands there is sent again 10 ms later (SIGINT to the main thread), outside the finaliser.
    The same holds for ``benchmark`` and ``tune``, whose clusters run Dask's garbage-collection
    callback in this process: a Ctrl-C that landed in it printed "Exception ignored in
    GCDiagnosis._gc_callback" and two tracebacks, and the benchmark ran on to the end. They
    say ``closing`` (:data:`STILL_CLOSING_CLUSTER`) at a second press.

    A block inside another (``tune`` of a workflow runs ``run_workflow``) leaves the outer
    one's handler in place: the inner one had counted presses anew and said the run's
    "saving run.json ... --resume continues it" of tune's temporary runs, and a press after
    the inner block ended was a first one again, raised in the middle of tune's closing.
    """
    global _interrupts_active
    if _interrupts_active:
        yield
        return
    pressed = 0

    def handler(signum: int, frame: Any) -> None:
        nonlocal pressed
        if signum == signal.SIGHUP:
            off_the_dead_terminal()
        pressed += 1
        if pressed == 1:
            raise KeyboardInterrupt(f"signal {signum}")
        if pressed == 2:
            again = AGAIN.get(signum, "Ctrl-C once more")
            sys.stderr.write(closing.format(again=again, third=THIRD[_quit_at_third]))
            sys.stderr.flush()
        elif _quit_at_third:
            os._exit(EXIT_INTERRUPTED)  # a run quit by a third Ctrl-C
        else:  # a process that goes on (a notebook's kernel): the closing is cut short
            raise KeyboardInterrupt(f"signal {signum}")

    def rearm(unraisable: Any) -> None:
        nonlocal pressed
        if isinstance(unraisable.exc_value, KeyboardInterrupt):
            pressed = 0  # it never reached the run: the signal sent again is a first one
            # a real SIGINT to the main thread (it wakes a blocking call), from another thread
            # a moment later: raised from this hook it would be lost too
            main = threading.main_thread().ident
            assert main is not None
            threading.Timer(0.01, signal.pthread_kill, (main, signal.SIGINT)).start()
        else:
            hook(unraisable)

    # a SIGINT the run was started ignoring (a shell's background job) stays ignored, and so
    # does a SIGHUP (nohup)
    signals = [signal.SIGTERM]
    signals += [s for s in TERMINAL_SIGNALS if signal.getsignal(s) is not signal.SIG_IGN]
    try:
        previous = {sig: signal.signal(sig, handler) for sig in signals}
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    hook, sys.unraisablehook = sys.unraisablehook, rearm
    _interrupts_active = True
    try:
        yield
    finally:
        _interrupts_active = False
        for sig, before in previous.items():
            _restore(sig, before)
        sys.unraisablehook = hook
