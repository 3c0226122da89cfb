"""User ops for the workflow tests, named by import path (tests.integration.user_ops:...)."""

from __future__ import annotations

import os
import signal
import sys
import time
from typing import Any

import numpy as np
import xarray as xr

from openclaw_dask.workflows.context import IterativeOp, StepContext
from openclaw_dask.workflows.ops.example import Diffuse, field

#: A workflow whose second step fails with the op's own message ("kaboom").
FAILING_WORKFLOW = (
    "name: fails\nsteps:\n"
    "  field:\n    op: example.field\n    with: {size: 64, chunk: 32}\n"
    "    outputs: [field.zarr]\n"
    "  bad:\n    op: tests.integration.user_ops:explode\n    needs: [field]\n"
    "    with: {message: kaboom}\n    outputs: [nothing.zarr]\n"
)


def double(ctx: StepContext, *, factor: float = 2.0) -> dict[str, xr.Dataset]:
    """A user op: scale the example field (and report a metric it cannot define)."""
    field = ctx.input("field")
    ctx.metrics.update(factor=factor, undefined=float("nan"))
    return {"doubled": (field * factor).assign_attrs(factor=factor)}


def explode(ctx: StepContext, *, message: str = "boom") -> dict[str, xr.Dataset]:
    """A user op that fails with its own message."""
    raise ValueError(f"the op's own error: {message}")


def refuses(ctx: StepContext) -> dict[str, xr.Dataset]:
    """A user op that refuses its input as bad input (a ConfigError), once it runs."""
    from openclaw_dask.config import ConfigError
    from openclaw_dask.config.errors import Problem

    raise ConfigError([Problem("the field is not what this op takes", "steps.bad")])


def explode_at_length(ctx: StepContext, *, length: int = 20_000) -> dict[str, xr.Dataset]:
    """A user op whose message is ``length`` characters long, with rich markup at both ends."""
    raise ValueError("[bold]the head[/] " + "x" * length + " the end [/]")


class UnprintableError(Exception):
    """An exception whose message cannot be made: its ``__str__`` raises."""

    def __str__(self) -> str:
        raise RuntimeError("cannot str")


def raises_unprintable(ctx: StepContext) -> dict[str, xr.Dataset]:
    """A user op that fails with an exception that cannot say what it is."""
    raise UnprintableError


def returns_nothing(ctx: StepContext) -> None:
    """A user op that forgets its return statement."""


def returns_a_data_array(ctx: StepContext) -> dict[str, xr.DataArray]:
    """A user op that returns a variable where a dataset is expected."""
    return {"nothing": ctx.input("field")["temperature"]}


def returns_an_array(ctx: StepContext) -> Any:
    """A user op that returns the values where a dict of datasets is expected."""
    return ctx.input("field")["temperature"].data


def calls_sys_exit(ctx: StepContext) -> None:
    """A user op that ends the process its own way."""
    sys.exit(4)


def returns_a_dataset(ctx: StepContext) -> dict[str, xr.Dataset]:
    """A user op that returns a dataset (a Zarr output), declaring no outputs."""
    return {"nothing": ctx.input("field")}


def returns_one_output_more(ctx: StepContext) -> dict[str, xr.Dataset]:
    """A user op that returns its output and one its step does not list."""
    return {"nothing": ctx.input("field"), "bonus": ctx.input("field")}


def returns_a_misnamed_output(ctx: StepContext) -> dict[str, xr.Dataset]:
    """A user op that returns its output under a name one letter off."""
    return {"nothin": ctx.input("field")}


def fills_a_folder(ctx: StepContext) -> dict[str, xr.Dataset]:
    """A user op that writes a file into its ``nothing/`` folder output, declaring no outputs."""
    (ctx.output_dir("nothing") / "note.txt").write_text("written by the op\n")
    # as the workflow lists it: the same folder
    assert ctx.output_dir("nothing/") == ctx.output_dir("nothing")
    return {}


def returns_a_bare_dataset(ctx: StepContext) -> Any:
    """A user op that returns its one dataset without naming the output."""
    return ctx.input("field")


class AdvancesWithoutRecords(IterativeOp):
    """An iterative user op whose ``advance`` returns the state alone."""

    outputs = ("nothing",)
    total_steps = 2

    def initial_state(self) -> xr.Dataset:
        return self.ctx.input("field")

    def advance(self, state: xr.Dataset, step0: int, nsteps: int) -> Any:
        return state


def _explode_block(block: np.ndarray, message: str) -> np.ndarray:
    raise ValueError(f"the task's own error: {message}")


def explode_in_task(ctx: StepContext, *, message: str = "boom") -> dict[str, xr.Dataset]:
    """A user op whose Dask tasks fail on the workers (its graph builds fine)."""
    field = ctx.input("field")["temperature"]
    broken = field.copy(data=field.data.map_blocks(_explode_block, message, dtype=float))
    return {"nothing": broken.to_dataset()}


def _log_and_exit(block: np.ndarray) -> np.ndarray:
    import logging
    import os

    if block.size:  # not dask's call on an empty block in the client, for the result's type
        logging.getLogger("distributed.worker").warning("a worker's own warning, then exit")
        os._exit(3)
    return block


def exits_in_task(ctx: StepContext) -> dict[str, xr.Dataset]:
    """A user op whose tasks end their worker process (a crash, a C library's ``exit``)."""
    field = ctx.input("field")["temperature"]
    data = field.data.map_blocks(_log_and_exit, dtype=float)
    return {"nothing": field.copy(data=data).to_dataset()}


#: A workflow whose second step's tasks each need ``megabytes`` of memory for a second.
HUNGRY_WORKFLOW = (
    "name: hungry\nsteps:\n"
    "  field:\n    op: example.field\n    with: {size: 64, chunk: 32}\n"
    "    outputs: [field.zarr]\n"
    "  hungry:\n    op: tests.integration.user_ops:hungry\n    needs: [field]\n"
    "    with: {megabytes: 600}\n    outputs: [nothing.zarr]\n"
)


def _hold_memory(block: np.ndarray, megabytes: int) -> np.ndarray:
    import time

    held = np.ones(megabytes * 1_000_000 // 8)  # touched: resident, not just reserved
    time.sleep(1.0)  # long enough for the nanny's memory monitor (every 100 ms)
    return block + held[0]


def hungry(ctx: StepContext, *, megabytes: int = 600) -> dict[str, xr.Dataset]:
    """A user op whose tasks each hold ``megabytes`` of memory for a second."""
    field = ctx.input("field")["temperature"]
    data = field.data.map_blocks(_hold_memory, megabytes, dtype=float)
    return {"nothing": field.copy(data=data).to_dataset()}


#: A workflow whose second step's tasks each keep ``megabytes`` for good (a leak).
LEAKY_WORKFLOW = HUNGRY_WORKFLOW.replace("hungry", "leaky").replace("600", "300")

#: What the leaky tasks keep, per worker process: memory Dask cannot spill or free.
_KEPT: list[np.ndarray] = []


def _keep_memory(block: np.ndarray, megabytes: int) -> np.ndarray:
    import time

    _KEPT.append(np.ones(megabytes * 1_000_000 // 8))  # touched: resident, not just reserved
    time.sleep(0.5)  # the worker's memory monitor (every 100 ms) pauses it before the next task
    return block + 1.0


def leaky(ctx: StepContext, *, megabytes: int = 300) -> dict[str, xr.Dataset]:
    """A user op whose tasks each keep ``megabytes`` of memory in their worker for good."""
    field = ctx.input("field")["temperature"]
    data = field.data.map_blocks(_keep_memory, megabytes, dtype=float)
    return {"nothing": field.copy(data=data).to_dataset()}


def leaky_sum(ctx: StepContext, *, megabytes: int = 300) -> dict[str, xr.Dataset]:
    """:func:`leaky`, computed by the op itself (``dask.compute``, as an analysis step does),
    where no wait of the runner's sees the cluster."""
    import dask

    field = ctx.input("field")["temperature"]
    (total,) = dask.compute(field.data.map_blocks(_keep_memory, megabytes, dtype=float).sum())
    return {"nothing": xr.Dataset({"total": float(total)})}


class _CountsSteps(IterativeOp):
    """An iterative op of 4 steps whose state is the field and the steps taken."""

    outputs = ("nothing",)
    total_steps = 4

    def initial_state(self) -> xr.Dataset:
        return self.ctx.input("field").assign(steps=0)

    def advance(self, state: xr.Dataset, step0: int, nsteps: int) -> Any:
        return state.assign(steps=step0 + nsteps), {}


class RecordsWithoutTime(_CountsSteps):
    """Its records lack the dimension they are appended along (``time``)."""

    def advance(self, state: xr.Dataset, step0: int, nsteps: int) -> Any:
        return state, {"nothing": state[["temperature"]].mean("x")}


class FinishesWithADataset(_CountsSteps):
    """Its ``finish`` returns the state instead of ``{output: state}``."""

    def finish(self, state: xr.Dataset) -> Any:
        return state


class FinishesWithAnotherName(_CountsSteps):
    """Its ``finish`` returns an output the step does not have."""

    def finish(self, state: xr.Dataset) -> Any:
        return {"final": state}


class FinishesWithNothing(_CountsSteps):
    """Neither its records nor its ``finish`` write its output."""


class StartsInNumpy(_CountsSteps):
    """Its initial state holds numpy arrays, not dask ones."""

    def initial_state(self) -> xr.Dataset:
        return self.ctx.input("field").compute()


class StartsWithAnArray(_CountsSteps):
    """Its initial state is the field's values, not a Dataset."""

    def initial_state(self) -> Any:
        return self.ctx.input("field")["temperature"].values


class StepsInHalves(_CountsSteps):
    """Its ``total_steps`` is not a whole number."""

    total_steps = 4.5  # type: ignore[assignment]


class StepsNone(_CountsSteps):
    """Its ``total_steps`` is 0."""

    total_steps = 0


class AdvancesToNone(_CountsSteps):
    """Its ``advance`` loses the state."""

    def advance(self, state: xr.Dataset, step0: int, nsteps: int) -> Any:
        return None, {}


def _dies_in_window(
    block: np.ndarray,
    step0: int,
    markers: str,
    deaths: int,
    hangs: bool,
    linger: float = 0.0,
    block_info: Any = None,
) -> np.ndarray:
    """End this worker's process, as the kernel's OOM killer would (or stop it: ``hangs``, as a
    node stuck in the kernel), while it computes the first band of the window that starts at
    ``step0``: the first ``deaths`` times only (one marker file a death, made before it, so that
    the windows run again after it go on), ``linger`` seconds into the task."""
    if block_info is not None and block_info[0]["chunk-location"][0] == 0:
        for i in range(deaths):
            try:
                fd = os.open(f"{markers}/{step0}-{i}", os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                continue
            os.write(fd, str(os.getpid()).encode())  # which process it was
            os.close(fd)
            time.sleep(linger)
            if hangs:
                os.kill(os.getpid(), signal.SIGSTOP)
            os._exit(3)
    return block


class DiesInWindows(Diffuse):
    """The example's diffusion, whose worker dies ``deaths`` times in each window of ``die_at``
    (the window's first step): a node that fails now and then in a run of days, or a worker
    killed again and again in one window."""

    def __init__(
        self,
        ctx: StepContext,
        *,
        die_at: list[int],
        markers: str,
        deaths: int = 1,
        hangs: bool = False,
        linger: float = 0.0,
        **kw: Any,
    ) -> None:
        super().__init__(ctx, **kw)
        self.die_at, self.markers, self.deaths, self.hangs = die_at, markers, deaths, hangs
        self.linger = linger

    def advance(self, state: xr.Dataset, step0: int, nsteps: int) -> Any:
        new, records = super().advance(state, step0, nsteps)
        if step0 in self.die_at:
            u = new["temperature"]
            dying = u.data.map_blocks(
                _dies_in_window,
                step0,
                self.markers,
                self.deaths,
                self.hangs,
                self.linger,
                dtype=u.dtype,
            )
            new["temperature"] = (u.dims, dying, u.attrs)
        return new, records


def field_dies(ctx: StepContext, *, markers: str, deaths: int = 1, **kw: Any) -> Any:
    """The example's field, sent to the workers in row bands (as the climate model's forcing
    sends its fields), whose worker dies the first ``deaths`` times it computes the first
    band: a map step that loses a worker and, with it, an input Dask cannot compute again."""
    from openclaw_dask.workflows.climate.stepper import band_homes, place_bands

    ds = field(ctx, **kw)["field"]
    u = ds["temperature"]
    homes = band_homes(ctx.client.nthreads(), len(u.chunks[0]))
    placed = place_bands(ctx.client, u.values, homes)
    dying = placed.map_blocks(_dies_in_window, 0, markers, deaths, False, dtype=u.dtype)
    return {"field": ds.assign(temperature=(u.dims, dying.rechunk(u.data.chunks), u.attrs))}


#: Every state :class:`KeepsItsStates` was given, in the process that runs the workflow.
KEPT_STATES: list[xr.Dataset] = []


class KeepsItsStates(DiesInWindows):
    """:class:`DiesInWindows` that keeps every state it is given (a list for a diagnostic,
    say): the futures of a lost window live on in the run's process."""

    def advance(self, state: xr.Dataset, step0: int, nsteps: int) -> Any:
        KEPT_STATES.append(state)
        return super().advance(state, step0, nsteps)


#: The example's field and a diffusion that loses a worker: ``die_at`` and ``markers`` to fill
#: in; with Dask's ``allowed-failures`` 0 a death fails the window at once.
DYING_WORKFLOW = (
    "name: dies\nsteps:\n"
    "  field:\n    op: example.field\n    with: {size: 64, chunk: 32}\n"
    "    outputs: [field.zarr]\n"
    "  diffuse:\n    op: tests.integration.user_ops:DiesInWindows\n    needs: [field]\n"
    "    with: {steps: 100, record_every: 20, die_at: DIE_AT, markers: MARKERS,\n"
    "           deaths: DEATHS, hangs: HANGS}\n"
    "    outputs: [history.zarr, smoothed.zarr]\n"
)


class _WritesItsState(_CountsSteps):
    """:class:`_CountsSteps` whose final state is its output: a run of it completes."""

    def finish(self, state: xr.Dataset) -> Any:
        return {"nothing": state}


class AdvancesToFewerColumns(_WritesItsState):
    """Its ``advance`` drops a column of the state (an off-by-one in a halo trim)."""

    def advance(self, state: xr.Dataset, step0: int, nsteps: int) -> Any:
        return state.isel(x=slice(0, -1)), {}


class AdvancesToSinglePrecision(_WritesItsState):
    """Its ``advance`` returns the state in float32 (an ``astype`` in a helper)."""

    def advance(self, state: xr.Dataset, step0: int, nsteps: int) -> Any:
        return state.assign(temperature=state["temperature"].astype("float32")), {}


class AdvancesToAnotherVariable(_WritesItsState):
    """Its ``advance`` returns a state whose variable is named anew."""

    def advance(self, state: xr.Dataset, step0: int, nsteps: int) -> Any:
        return state.rename(temperature="t"), {}


class RecordsInTwoDtypes(_CountsSteps):
    """Its first window records an int, the later ones a float (0.5 more than the step)."""

    def advance(self, state: xr.Dataset, step0: int, nsteps: int) -> Any:
        level = np.array([step0 + nsteps]) if step0 == 0 else np.array([step0 + nsteps + 0.5])
        rec = xr.Dataset({"level": ("time", level)}, coords={"time": [step0 + nsteps]})
        return state, {"nothing": rec.chunk()}


class RecordsLosingAVariable(_CountsSteps):
    """Its first window records ``level`` and ``peak``, the later ones ``level`` alone."""

    def advance(self, state: xr.Dataset, step0: int, nsteps: int) -> Any:
        rec = xr.Dataset({"level": ("time", [2.0])}, coords={"time": [step0 + nsteps]})
        if step0 == 0:
            rec["peak"] = ("time", [3.0])
        return state, {"nothing": rec.chunk()}


def columns(ctx: StepContext) -> dict[str, xr.Dataset]:
    """A user op that rechunks its input from rows to columns (an all-to-all rechunk, as a
    time series per pixel needs)."""
    return {"columns": ctx.input("field").chunk({"y": -1, "x": 8})}


def _refused_for_memory(block: np.ndarray) -> np.ndarray:
    # the scheduler's own words when a task's inputs exceed a worker's budget (it raises
    # this MemoryError for the task before it runs)
    raise MemoryError(
        "Task ('rechunk-merge-1', 0) has 512.00 MiB worth of input dependencies, but worker "
        "tcp://127.0.0.1:1 has memory_limit set to 256.00 MiB."
    )


def needs_more(ctx: StepContext) -> dict[str, xr.Dataset]:
    """A user op whose task is refused by the scheduler as needing more than a worker has."""
    field = ctx.input("field")["temperature"]
    data = field.data.map_blocks(_refused_for_memory, dtype=float)
    return {"nothing": field.copy(data=data).to_dataset()}
