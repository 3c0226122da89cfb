"""The command line's exit codes, shared by the commands and the ``mpirun`` driver.

0 ok, 1 the run failed, 2 bad input (config, workflow, arguments), 130 interrupted
(128 + SIGINT, as the shell reports one), 141 stopped because the reader of its output went
away (128 + SIGPIPE: ``openclaw-dask config show | head -1`` ends as ``git log | head -1``
does). The ``mpirun`` driver reads a rank's code back with the same meaning, so the numbers
live in one place.
"""

EXIT_FAILED, EXIT_BAD_INPUT, EXIT_INTERRUPTED = 1, 2, 130
EXIT_STDOUT_CLOSED = 141
