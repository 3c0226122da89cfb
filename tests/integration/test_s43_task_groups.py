"""A long iterative step does not leave the scheduler holding the task groups of every window."""

from __future__ import annotations

from pathlib import Path

from openclaw_dask.workflows.runner import run_workflow
from tests.integration.test_climate_workflow import CLIMATE, KILLED_RUN_SETS

#: An op beside the workflow: the climate model, writing down before each window how many task
#: groups of forgotten tasks the scheduler's spans and computations still hold, with the
#: finished groups these name as their dependencies, beyond the one a span keeps to date its
#: end. (A live group's own dependencies are the scheduler's to keep: they weigh in its choice
#: of where tasks run.)
GROUPS_PROBE = """
from pathlib import Path

from openclaw_dask.workflows.ops.climate import EnergyBalanceModel


def _held(dask_scheduler):
    live = dask_scheduler.task_groups
    spans = dask_scheduler.extensions["spans"].spans.values()
    held = [tg for span in spans for tg in span.groups]
    held += [tg for computation in dask_scheduler.computations for tg in computation.groups]
    todo, seen = [tg for tg in held if live.get(tg.name) is not tg], set()
    while todo:
        tg = todo.pop()
        if id(tg) not in seen:
            seen.add(id(tg))
            todo += [dep for dep in tg.dependencies if live.get(dep.name) is not dep]
    return len(seen) - len(spans)


class Counted(EnergyBalanceModel):
    def advance(self, state, step0, nsteps):
        held = self.ctx.client.run_on_scheduler(_held)
        with open(Path(__file__).with_name("held.txt"), "a") as f:
            f.write(f"{held}\\n")
        return super().advance(state, step0, nsteps)
"""


def test_the_scheduler_forgets_the_task_groups_of_finished_windows(tmp_path: Path) -> None:
    """Every window makes new task groups, and the spans and computations of the scheduler
    (in submit's own process, on a local cluster) had kept each one with its dependencies to the
    end of the run: at 0.25° ~115 windows a model year, gigabytes in a long run. After each
    checkpoint the finished ones are dropped, so what is held stays flat as the run goes on."""
    workflow = tmp_path / "groups.yaml"
    model = CLIMATE.read_text().split("  analyse:")[0]  # (the analysis has no windows)
    workflow.write_text(model.replace("op: climate.ebm", "op: openclaw_test_groups:Counted"))
    (tmp_path / "openclaw_test_groups.py").write_text(GROUPS_PROBE)
    rec = run_workflow(workflow, overrides=KILLED_RUN_SETS, run_dir=tmp_path / "run", report=False)
    assert rec["status"] == "completed"
    held = [int(n) for n in (tmp_path / "held.txt").read_text().split()]
    windows = len(held)
    assert windows > 15, held
    # kept, they grew by ~5 a window (4°, 100-step windows): 4 to 124 in 23 windows
    assert max(held[windows // 2 :]) <= max(held[: windows // 2]) + 5, held
