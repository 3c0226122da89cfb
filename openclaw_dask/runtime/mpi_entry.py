"""The program every rank of an ``mpirun`` launch runs (the plan's ``launch_command``).

``python -m openclaw_dask.runtime.mpi_entry PLAN.json -- COMMAND...``: every rank applies the
plan's dask config and calls ``dask_mpi.initialize`` with the plan's arguments. Rank 0 becomes
the scheduler and rank 2+ workers (both block until the client finishes); rank 1 returns and runs
``COMMAND`` (an ``openclaw-dask`` command line, e.g. ``submit WORKFLOW``) attached to that
scheduler, then dask-mpi shuts the cluster down.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the client command's exit code on rank 1."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) < 3 or args[1] != "--":
        sys.stderr.write("usage: python -m openclaw_dask.runtime.mpi_entry PLAN.json -- CMD...\n")
        return 2
    plan = json.loads(Path(args[0]).read_text())
    command = args[2:]

    import dask
    from dask_mpi import initialize

    dask.config.set(plan["dask_config"])
    initialize(**plan["cluster_kwargs"])  # ranks 0 and 2+ block here and exit at the end
    address = dask.config.get("scheduler-address")
    os.environ["OPENCLAW_CLUSTER__SCHEDULER_ADDRESS"] = address
    from openclaw_dask.cli.main import cli

    try:
        cli.main(args=command, prog_name="openclaw-dask", standalone_mode=False)
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
