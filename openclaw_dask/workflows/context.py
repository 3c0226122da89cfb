"""The step contract: what an op receives (:class:`StepContext`) and what an iterative op is.

A **map op** is ``fn(ctx, **args)`` returning ``{output name: xarray.Dataset}`` whose variables
are dask arrays; the runner writes each to ``<run dir>/<name>.zarr`` with the configured codec.
Folder outputs (``plots/``) are filled by the op itself under ``ctx.output_dir(name)``.
The op itself runs in the client process (``submit``'s) and builds a graph; its tasks run on
the workers. Give ``map_blocks`` and ``blockwise`` the result's ``meta=``, or a function
that copes with an empty block: without ``meta`` (``dtype=`` is not enough), Dask calls the
function once in the client on an empty block to learn the result's type, and a function
that crashes or exits there ends ``submit`` with it, with no step to blame.

An **iterative op** subclasses :class:`IterativeOp`. The runner asks it for its initial state,
then calls :meth:`IterativeOp.advance` with at most ``distributed.sync_interval`` steps at a
time; after each call it persists the state, appends the records the op emitted to their Zarr
outputs and writes a checkpoint, so the task graph never grows with the length of the run and
``--resume`` restarts from the last checkpoint. :meth:`IterativeOp.finish` gives the final
outputs.

What an op returns is checked as the runner writes it (:func:`_datasets`): each output a
dataset, named as the workflow lists it, and the error says what came back instead.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import dask
import xarray as xr

from openclaw_dask.config import Config

if TYPE_CHECKING:
    from openclaw_dask.workflows.registry import RunFacts
    from openclaw_dask.workflows.spec import StepSpec


@dataclass
class StepContext:
    """Everything a step may use.

    Parameters
    ----------
    step
        The step's name.
    config
        The resolved ``openclaw.config``.
    client
        The ``distributed.Client`` of the run.
    run_dir
        The run directory (outputs live here).
    params
        The workflow's resolved parameter values.
    inputs
        ``{step: {output: Dataset}}`` of the steps named in ``needs``, opened lazily from Zarr.
    metrics
        Small JSON-able results the op wants in ``run.json`` (e.g. the ice-edge latitude).
    outputs
        The step's ``outputs:`` as the workflow lists them (``None``: not checked), so that
        :meth:`output_dir` of a name the workflow does not list as a folder is refused at once.
    """

    step: str
    config: Config
    client: Any
    run_dir: Path
    params: dict[str, Any]
    inputs: dict[str, dict[str, xr.Dataset]] = field(default_factory=dict)
    metrics: dict[str, Any] = field(default_factory=dict)
    outputs: tuple[str, ...] | None = None

    def input(self, step: str, output: str | None = None) -> xr.Dataset:
        """One input dataset; ``output`` may be left out when the step wrote only one.

        Raises
        ------
        KeyError
            ``step`` is not among the step's ``needs:`` (or wrote no dataset), or ``output``
            is not one of its outputs; the message says which there are.
        """
        if step not in self.inputs:
            # a bare KeyError('diffuse') told the user nothing about the workflow file
            raise KeyError(
                f"no input from step {step!r}: this step needs "
                f"{sorted(self.inputs) or 'no steps'} (add it to needs:, or name one of them)"
            )
        outputs = self.inputs[step]
        if output is None:
            if len(outputs) != 1:
                raise KeyError(f"step {step!r} wrote {sorted(outputs)}; name the output")
            return next(iter(outputs.values()))
        if output not in outputs:
            raise KeyError(f"step {step!r} wrote {sorted(outputs)}, not {output!r}")
        return outputs[output]

    def output_dir(self, name: str) -> Path:
        """The folder of a ``NAME/`` output (created).

        Raises
        ------
        KeyError
            The step's ``outputs:`` do not list ``NAME/`` (with ``NAME.zarr`` listed instead,
            the message says so): the folder had been created and the step failed only after
            the op's work, on what it returned.
        """
        given, name = name, name.rstrip("/")  # "plots/", as the workflow writes it, is plots
        if self.outputs is not None and f"{name}/" not in self.outputs:
            listed = f"{name}.zarr" in self.outputs
            raise KeyError(
                f"output_dir({given!r}): step {self.step!r} "
                + (
                    f"lists {name}.zarr, a Zarr store the runner writes from the dataset the op "
                    f"returns; for a folder the op fills, list {name}/ instead"
                    if listed
                    else f"has no folder output {name}/ (outputs: {list(self.outputs)}): add "
                    f"{name}/ to its outputs:"
                )
            )
        path = self.run_dir / name
        path.mkdir(parents=True, exist_ok=True)
        return path

    @property
    def deterministic(self) -> bool:
        """``parallel.deterministic_mode``: the user asks for the same bits on any layout.

        The built-in ops give them in either setting (seeded blocks, fixed chunk sizes, sums
        that do not depend on the chunking: :func:`~.reductions.sum_rows_first`); an op whose
        chunking follows the cluster (:attr:`worker_threads`) should fix it, or sum that way,
        when this is true. Nothing checks an op's own determinism: one that draws unseeded
        random numbers runs in this mode too, and each run's checksums differ.
        """
        return bool(self.config["parallel.deterministic_mode"])

    @property
    def batch_size(self) -> int:
        """``distributed.batch_size``: work fused per task."""
        return int(self.config["distributed.batch_size"])

    @property
    def worker_threads(self) -> int:
        """Threads of the cluster in total (for choosing how many chunks to make)."""
        if self.client is None:
            return 1
        return max(1, sum(w["nthreads"] for w in self.client.scheduler_info()["workers"].values()))

    @property
    def worker_processes(self) -> int:
        """Worker processes of the cluster (chunks on one process share its memory)."""
        if self.client is None:
            return 1
        return max(1, len(self.client.scheduler_info()["workers"]))


class IterativeOp:
    """Base class of ops that advance a state over many steps.

    Subclasses set ``outputs`` (names of the Zarr outputs), ``append_dim`` (the dimension along
    which records emitted during the run are appended) and implement the four methods. The
    constructor receives the context, then the step's ``with:`` arguments by name, and its
    signature is what ``with:`` is checked against::

        def __init__(self, ctx, *, steps: int, alpha: float = 0.2) -> None:
            super().__init__(ctx)  # sets self.ctx; self.ctx.input("init") reads a needed step
            self.steps, self.alpha = steps, alpha
    """

    #: Output names: records appended during the run and/or outputs written at the end.
    outputs: tuple[str, ...] = ()
    #: Dimension along which emitted records are appended.
    append_dim: str = "time"
    #: Arguments whose value names a step the op reads (checked against ``needs:``).
    step_args: tuple[str, ...] = ()
    #: The ``with:`` arguments that start the op where a completed run of its workflow ended
    #: (``"{run}"``: that run's directory), e.g. ``{"initial": "{run}", "spinup_years": 0}``.
    #: A resume refused for a changed parameter then says the new run that goes on from there.
    start_from_run: ClassVar[Mapping[str, Any]] = {}
    #: Whether Dask may optimise (cull, fuse) the graphs of :meth:`advance`. Its low-level
    #: fusion turns a graph into a plain dict and drops the layers' annotations, so an op that
    #: places its tasks with worker restrictions sets this to False.
    optimize_graphs: bool = True

    def __init__(self, ctx: StepContext) -> None:
        self.ctx = ctx

    @staticmethod
    def check_args(args: Mapping[str, Any]) -> Mapping[str, str]:
        """``{argument: problem}`` for ``with:`` values the op would refuse (none by default).

        Called when the workflow is checked, before anything starts; see
        :mod:`~openclaw_dask.workflows.registry`.
        """
        return {}

    @staticmethod
    def check_run(args: Mapping[str, Any], run: RunFacts) -> Mapping[str, str]:
        """``{argument: problem}`` for values wrong only with the run's config or the other
        steps' arguments (``run``: :class:`~openclaw_dask.workflows.registry.RunFacts`).

        Called once the config is loaded, before the run directory is made or the cluster
        starts (and in ``submit --dry-run``); none by default.
        """
        return {}

    @staticmethod
    def describe(args: Mapping[str, Any], run: RunFacts) -> str | None:
        """The step's size before it runs, in exact terms (``None``: nothing to say, the
        default).

        ``args`` are the step's ``with:`` values, with the op's defaults for those left out;
        ``run`` is the :class:`~openclaw_dask.workflows.registry.RunFacts`. Lines of text, the
        first the summary: ``submit --dry-run`` prints them under the plan, a run's start says
        them as one line, and the records keep them (``sizes``). Counts the op knows (its
        grid, steps, outputs' bytes), never a time it would have to guess.
        """
        return None

    @property
    def total_steps(self) -> int:
        """Steps the run takes in all."""
        raise NotImplementedError

    def initial_state(self) -> xr.Dataset:
        """The state at step 0: a Dataset of dask arrays, in the chunks the op computes in.

        Its chunks are the tasks of every window, and a resume chunks the checkpoint's state
        as these (:meth:`resumed_state`), so the runner does not choose them: a Dataset of
        numpy arrays is refused (``ds.chunk({...})`` makes one of dask arrays), not run whole
        as one task per variable without a word.
        """
        raise NotImplementedError

    def resumed_state(self, stored: xr.Dataset) -> xr.Dataset:
        """The state read back from a checkpoint (``stored``, lazily), made ready to advance.

        By default chunked as :meth:`initial_state`'s, which is built for its chunks alone. An
        op whose initial state reads what may be gone when the run is resumed (another run's
        state to start from) overrides it, so that only a step started over needs that.
        """
        initial = self.initial_state()
        return stored.chunk(dict(initial.chunksizes)) if initial.chunksizes else stored

    def advance(
        self, state: xr.Dataset, step0: int, nsteps: int
    ) -> tuple[xr.Dataset, dict[str, xr.Dataset]]:
        """Lazily advance ``state`` from ``step0`` by ``nsteps`` steps.

        Returns
        -------
        state, records
            The new state, and ``{output: Dataset}`` records to append along ``append_dim``
            (may be empty). Each record has ``append_dim`` among its dimensions (give it its
            coordinate, e.g. the step numbers); the output keeps the chunks along it of the
            first records written (``da.stack`` of scalars makes one chunk, and one file, per
            record: ``.rechunk(-1)`` makes one per window), and each window's records the
            variables, sizes and dtypes of the first (a cast with a loss, a float into an
            int, a variable missing or new, are refused). Everything
            needed to continue, accumulators included, must be in the state: the runner
            checkpoints only the state.
            The new state has the variables of the one given, each with the same dimensions,
            sizes and dtype (new values only): a step whose state changed them is refused.
        """
        raise NotImplementedError

    def finish(self, state: xr.Dataset) -> dict[str, xr.Dataset]:
        """Outputs written once the last step is done (default: none)."""
        return {}


# -- what an op returns: checked as the runner writes it ---------------------------------
def _return_hint(expected: Sequence[str]) -> str:
    """``: return {'field': ds}`` for a single expected output, else nothing."""
    return f": return {{{expected[0]!r}: ds}}" if len(expected) == 1 else ""


def _datasets(value: Any, what: str, step: StepSpec) -> dict[str, xr.Dataset]:
    """``value`` (an iterative op's records or final outputs) as ``{output: Dataset}``.

    Raises
    ------
    TypeError
        Saying what ``what`` returned instead: not a dict (a Dataset is a Mapping of its
        variables, and was written as outputs named after them), a name that is not one of the
        step's Zarr outputs (it was written into the run directory all the same), or a value
        that is not a Dataset.
    """
    outputs = sorted(step.zarr_outputs)
    if value is None:
        return {}
    if not isinstance(value, Mapping) or isinstance(value, xr.Dataset):
        raise TypeError(
            f"{what} returned {_type_name(value)}; expected a dict of output name -> "
            f"xarray.Dataset (may be empty){_return_hint(outputs)}"
        )
    unknown = sorted(set(value) - set(outputs))
    if unknown:
        raise TypeError(f"{what} returned {unknown}, not outputs of the step {outputs}")
    for name, ds in value.items():
        _check_dataset(what, name, ds)
    return dict(value)


def _check_dataset(what: str, name: str, ds: Any) -> None:
    """Raise TypeError unless ``what``'s value ``ds`` for output ``name`` is a Dataset."""
    if not isinstance(ds, xr.Dataset):
        array = type(ds) is xr.DataArray
        hint = " (DataArray.to_dataset(name=...) makes one)" if array else ""
        raise TypeError(
            f"{what} returned {_type_name(ds)} for output {name!r}; expected an "
            f"xarray.Dataset{hint}"
        )
    bad = sorted(str(n) for n in (*ds.variables, *ds.dims) if not _zarr_node_name(n))
    if bad:
        # Zarr reads "/" as a folder: a variable "a/b" was written as a group of its own, and the
        # run completed with an output that opens as an empty dataset
        raise TypeError(
            f"{what} returned output {name!r} with variable or dimension names "
            f"{', '.join(map(repr, bad))}, which a Zarr store cannot hold as written: names "
            "without '/', not '', '.' or '..', not starting with '__'"
        )


def _zarr_node_name(name: Any) -> bool:
    """Whether ``name`` is stored as written by Zarr v3 (a node name of its own)."""
    return (
        isinstance(name, str)
        and "/" not in name
        and name not in ("", ".", "..")
        and not name.startswith("__")
    )


def _state(value: Any, what: str) -> xr.Dataset:
    """``value``, the state that ``what`` (``Op.initial_state``, ``Op.resumed_state``)
    returned, checked to be a Dataset with dask arrays, as the runner persists it.

    Raises
    ------
    TypeError
        Saying what came back instead: Dask's own check had failed with an empty
        ``AssertionError``.
    """
    if not isinstance(value, xr.Dataset):
        hint = " (DataArray.to_dataset(name=...) makes one)" if type(value) is xr.DataArray else ""
        raise TypeError(
            f"{what} returned {'None' if value is None else _type_name(value)}; expected the "
            f"state, an xarray.Dataset of dask arrays{hint}"
        )
    if not dask.is_dask_collection(value):
        names = list(map(str, value.data_vars))
        raise TypeError(
            f"{what} returned a Dataset with numpy (not dask) variables {names}; chunk it "
            "(ds.chunk({dim: size})) or build it with dask.array, in the chunks the op is to "
            "compute in"
            if names
            else f"{what} returned a Dataset without variables; expected the state, an "
            "xarray.Dataset of dask arrays"
        )
    return value


def _same_state(before: xr.Dataset, after: xr.Dataset, what: str) -> None:
    """Check that ``after``, the state ``what`` (``Op.advance(state, 0, 4)``) returned, keeps
    ``before``'s variables, and each one its dimensions, sizes and dtype.

    An advance that dropped a column (a halo trimmed once too often) or cast the state to
    float32 completed without a word: every window after it, the checkpoints and the outputs
    carried the change, and a resume read them back as if they were the model's.

    Raises
    ------
    TypeError
        Naming each variable that changed, as it is and as it was.
    """
    changes = []
    added = sorted(map(str, set(after.data_vars) - set(before.data_vars)))
    dropped = sorted(map(str, set(before.data_vars) - set(after.data_vars)))
    if added or dropped:
        changes.append(f"variables {added or 'none'} added, {dropped or 'none'} dropped")
    for name in before.data_vars:
        if name in after.data_vars:
            was, now = _layout(before[name]), _layout(after[name])
            if was != now:
                changes.append(f"{str(name)!r} is {now}, was {was}")
    if changes:
        raise TypeError(
            f"{what} changed the state: {'; '.join(changes)}; the state keeps the variables, "
            "sizes and dtypes of initial_state from window to window (its checkpoints are "
            "read back as initial_state's), so return it as it came, with new values"
        )


def _layout(variable: xr.DataArray) -> str:
    """``(y: 64, x: 63) float64``: a variable's dimensions, sizes and dtype, as said."""
    sizes = ", ".join(f"{d}: {n}" for d, n in zip(variable.dims, variable.shape, strict=True))
    return f"({sizes}) {variable.dtype}"


def _type_name(value: Any) -> str:
    """``xarray.DataArray``, ``numpy.ndarray``, ``list``: a returned value's type, as said."""
    kind = type(value)
    package = kind.__module__.partition(".")[0]
    return kind.__qualname__ if package == "builtins" else f"{package}.{kind.__name__}"
