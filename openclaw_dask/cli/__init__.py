"""The ``openclaw-dask`` command line: thin click commands over the library.

:func:`main` is the console script. It imports the commands itself, so that a Ctrl-C in the
half second that takes (click, rich, Dask's config) is the same one line and exit code as a
Ctrl-C later, not Python's traceback of an interrupted import.
"""

from __future__ import annotations

import sys

from openclaw_dask.exitcodes import EXIT_INTERRUPTED


def main() -> None:
    """Console-script entry point (see :func:`openclaw_dask.cli.main.main`)."""
    try:
        from openclaw_dask.cli.main import main as run
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        sys.exit(EXIT_INTERRUPTED)
    run()
