"""Whether a running cluster can run openclaw-dask's code: its scheduler and workers import it.

A user may point ``submit --address`` (or ``cluster status``) at a Dask cluster wired by hand,
in an environment without openclaw-dask. Every task of a run, the scheduler's unpickling of its
graphs and the looks at the workers name functions of this package, so such a cluster failed
at the first of them with ``error: Exception: ModuleNotFoundError("No module named
'openclaw_dask.runtime'")``, exit 1, and a run directory left behind. Asked first, it is bad
input said in one line (exit 2), before anything is written.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from openclaw_dask.config.errors import ConfigError, Problem
from openclaw_dask.runtime.inspect import ask_workers


def check_openclaw_there(client: Any, where: Problem) -> None:
    """Refuse a cluster whose scheduler or workers cannot import openclaw-dask.

    Parameters
    ----------
    client : distributed.Client
        Connected to the cluster.
    where : Problem
        Where its address came from (a config key's location, ``--address``); its message is
        replaced.

    Raises
    ------
    ConfigError
        Naming the scheduler and the workers that lack it, with the first one's reason.

    Notes
    -----
    The probe is a closure, so that it travels by value (a function of this package would
    need the package there to be unpickled). Workers get the bounded wait of
    :func:`~openclaw_dask.runtime.inspect.ask_workers`: one that does not answer (stopped, or
    busy in a task that holds the GIL) is passed over, not refused.
    """
    import openclaw_dask

    def probe(dask_scheduler: Any = None, dask_worker: Any = None) -> str | None:
        try:
            import openclaw_dask.runtime.inspect  # noqa: F401  # what the first looks use
        except Exception as exc:  # a broken install as much as a missing one
            return f"{type(exc).__name__}: {exc}"
        return None

    lacking: dict[str, str] = {}
    reason = client.run_on_scheduler(probe)
    if reason:
        lacking["its scheduler"] = reason
    answers, _ = ask_workers(client, probe)
    workers = sorted(w for w, why in answers.items() if why)
    lacking.update((w, answers[w]) for w in workers)
    if not lacking:
        return
    total = len(client.nthreads())
    who = [*(["its scheduler"] if "its scheduler" in lacking else [])]
    if workers:
        shown = ", ".join(workers[:2]) + (", ..." if len(workers) > 2 else "")
        who.append(f"{len(workers)} of its {total} workers ({shown})")
    first = next(iter(lacking.values()))
    message = (
        f"the cluster at {client.scheduler.address} cannot run openclaw-dask's code: "
        f"{' and '.join(who)} cannot import openclaw_dask ({first}); install openclaw-dask "
        f"({openclaw_dask.__version__}, as here) in the environment they run in"
    )
    raise ConfigError([replace(where, message=message)])
