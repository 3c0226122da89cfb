"""The ``openclaw-dask`` command line: thin click commands over the library.

:func:`main` is the console script. It imports the commands itself, so that a Ctrl-C in the
half second that takes (click, rich, Dask's config) is the same one line and exit code as a
Ctrl-C later, not Python's traceback of an interrupted import.

SIGTERM (``kill``, a batch system ending the job) is a Ctrl-C from the start too. It had ended
the command silently with exit 143 wherever it landed before a run's own handling began: the
imports (2-3 s on a loaded 2-core machine) and reading the config, and ``cluster up`` waiting
for its cluster, which then came up in the background after all.
"""

from __future__ import annotations

import signal
import sys
from typing import Any

from openclaw_dask.exitcodes import EXIT_INTERRUPTED


def _as_ctrl_c(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main() -> None:
    """Console-script entry point (see :func:`openclaw_dask.cli.main.main`)."""
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:  # (one ignored stays ignored)
        signal.signal(signal.SIGTERM, _as_ctrl_c)
    try:
        from openclaw_dask.cli.main import main as run
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        sys.exit(EXIT_INTERRUPTED)
    run()
