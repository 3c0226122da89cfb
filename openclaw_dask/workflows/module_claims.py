"""Op modules of runs that share one cluster: one version of a module name at a time.

A worker (and the scheduler, which unpickles each graph) holds one module per name in
``sys.modules``, and a task names its op's function by module and name. Two runs on one
``cluster up`` cluster whose workflows have their own ``my_ops.py`` of different code would each
ship theirs over the other's (:func:`~openclaw_dask.workflows.registry.ship_modules`), and every
graph sent after that runs the last one shipped: measured, a run's second step multiplied by
the other run's factor while its run.json recorded its own file's sha256, status completed.

So a run claims the names of its modules on the scheduler, with the content of each, before it
ships them. A name held at other content by a run whose client is still connected is refused
(:class:`~openclaw_dask.config.errors.ConfigError`: bad input, before any step runs), naming
that run. The claim and the check are one function on the scheduler's event loop, so two runs
starting at the same instant cannot both pass. A claim of a run that has ended (its client
gone) is void: the next run may ship an edited file, as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from openclaw_dask.config.errors import ConfigError, Problem
from openclaw_dask.workflows.registry import file_sha256

#: The scheduler metadata key under which the claims are kept (``Scheduler.set_metadata``).
CLAIMS = "openclaw-op-module-claims"


def claim_modules(client: Any, files: Sequence[str], run: str) -> None:
    """Claim the op modules ``files`` of run ``run`` on ``client``'s scheduler, or refuse.

    Parameters
    ----------
    client
        The run's ``distributed.Client``.
    files
        Paths of the ``.py`` files the run ships (``Workflow.op_files``).
    run
        What names the run to another one refused by it (its run directory).

    Raises
    ------
    ConfigError
        A module of the same name with other content belongs to a run still connected.
    """
    if not files:
        return
    wanted = {Path(f).name: (file_sha256(f), f) for f in files}
    held = client.run_on_scheduler(_claim, wanted, client.id, run)
    if not held:
        return
    name, other = held[0], held[1]
    problem = (
        f"op module {name} is not the {name} that the run {other} sent to this cluster, and "
        "that run is still going: a worker holds one module of a name, so one run would "
        f"execute the other's code. Rename {name} (and the op: names that use it), or submit "
        "once that run has ended"
    )
    raise ConfigError([Problem(problem, file=wanted[name][1])])


def _claim(
    wanted: dict[str, list[str]], client_id: str, run: str, dask_scheduler: Any = None
) -> list[str]:
    """On the scheduler: ``[module file name, run]`` of a conflicting live claim, else claim all.

    ``wanted`` maps a file name to its sha256 (and path). Runs without a conflict add themselves
    to each name's claim; a name whose claimants have all gone takes the new content.
    """
    claims: dict[str, Any] = dask_scheduler.get_metadata([CLAIMS], default={})
    live = dask_scheduler.clients
    for name, (digest, _) in wanted.items():
        claim = claims.get(name)
        if claim is None or claim["sha256"] == digest:
            continue
        for other, label in claim["runs"].items():
            if other != client_id and other in live:
                return [name, label]
    for name, (digest, _) in wanted.items():
        claim = claims.get(name)
        if claim is None or claim["sha256"] != digest:
            claim = claims[name] = {"sha256": digest, "runs": {}}
        # the ended runs' entries go, so that a long-lived cluster does not gather them
        claim["runs"] = {c: r for c, r in claim["runs"].items() if c in live}
        claim["runs"][client_id] = run
    dask_scheduler.set_metadata([CLAIMS], claims)
    return []
