"""The runs that share one cluster: who they are, and one version of an op module name.

A ``cluster up`` cluster (or any scheduler given by address) may carry several runs at once.
Each run registers itself in the scheduler's metadata when it starts (its run directory, its
workflow's name, when it began), so that ``cluster status`` can list the runs on the cluster
and a run can say (and record in run.json) which others it shares the cluster with: their
tasks are in its performance report too, and a ``cluster down`` ends them all.

A worker (and the scheduler, which unpickles each graph) holds one module per name in
``sys.modules``, and a task names its op's function by module and name. Two runs on one
cluster whose workflows have their own ``my_ops.py`` of different code would each ship theirs
over the other's (:func:`~openclaw_dask.workflows.registry.ship_modules`), and every graph sent
after that runs the last one shipped: measured, a run's second step multiplied by the other
run's factor while its run.json recorded its own file's sha256, status completed.

So a run also claims the names of its modules, with the content of each, before it ships
them. A name held at other content by a run whose client is still connected is refused
(:class:`~openclaw_dask.config.errors.ConfigError`: bad input, before any step runs), naming
that run. The registration, the claim and the check are one function on the scheduler's event
loop, so two runs starting at the same instant cannot both pass. A run whose client has gone
(it ended, even by SIGKILL) is dropped: its claims are void, and the next run may ship an edited
file, as before.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from openclaw_dask.config.errors import ConfigError, Problem
from openclaw_dask.runtime.runs import RUNS
from openclaw_dask.workflows.registry import file_sha256

#: The scheduler metadata key under which the module claims are kept
#: (``Scheduler.set_metadata``).
CLAIMS = "openclaw-op-module-claims"


def register_run(
    client: Any, files: Sequence[str], run: str, workflow: str
) -> list[dict[str, Any]]:
    """Register run ``run`` on ``client``'s scheduler and claim its op modules, or refuse.

    Parameters
    ----------
    client
        The run's ``distributed.Client``.
    files
        Paths of the ``.py`` files the run ships (``Workflow.op_files``).
    run
        The run's directory (absolute): what names it to other runs and in ``cluster status``.
    workflow
        The workflow's name.

    Returns
    -------
    list of dict
        The other runs on the cluster now (``run``, ``workflow``, ``started``), oldest first.

    Raises
    ------
    ConfigError
        A module of the same name with other content belongs to a run still connected.
    """
    wanted = {Path(f).name: (file_sha256(f), f) for f in files}
    me = {"run": run, "workflow": workflow, "started": time.time()}
    held, others = client.run_on_scheduler(_register, wanted, client.id, me)
    if not held:
        return others
    name, other = held[0], held[1]
    problem = (
        f"op module {name} is not the {name} that the run {other} sent to this cluster, and "
        "that run is still going: a worker holds one module of a name, so one run would "
        f"execute the other's code. Rename {name} (and the op: names that use it), or submit "
        "once that run has ended"
    )
    raise ConfigError([Problem(problem, file=wanted[name][1])])


def _register(
    wanted: dict[str, list[str]], client_id: str, me: dict[str, Any], dask_scheduler: Any = None
) -> list[Any]:
    """On the scheduler: ``[[module file name, run], []]`` for a conflicting live claim, else
    register the run, claim its modules and return ``[[], the other live runs]``.

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
                return [[name, label], []]
    for name, (digest, _) in wanted.items():
        claim = claims.get(name)
        if claim is None or claim["sha256"] != digest:
            claim = claims[name] = {"sha256": digest, "runs": {}}
        # the ended runs' entries go, so that a long-lived cluster does not gather them
        claim["runs"] = {c: r for c, r in claim["runs"].items() if c in live}
        claim["runs"][client_id] = me["run"]
    dask_scheduler.set_metadata([CLAIMS], claims)
    runs = dask_scheduler.get_metadata([RUNS], default={})
    runs = {c: r for c, r in runs.items() if c in live and c != client_id}
    others = sorted(runs.values(), key=lambda r: r["started"])
    dask_scheduler.set_metadata([RUNS], {**runs, client_id: me})
    return [[], others]


def runs_text(runs: Sequence[dict[str, Any]]) -> str:
    """``runs`` (as :func:`~openclaw_dask.runtime.runs.runs_on` gives them) in words, oldest
    first: ``DIR (workflow climate, since 07:40:12); DIR2 (...)``, in local time."""
    return "; ".join(
        f"{r['run']} (workflow {r['workflow']}, since "
        f"{time.strftime('%H:%M:%S', time.localtime(r['started']))})"
        for r in runs
    )
