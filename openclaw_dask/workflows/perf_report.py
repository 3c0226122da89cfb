"""A run's Dask performance report: readable offline, naming the run, never hiding its error.

Dask's :class:`distributed.performance_report` is used as it is, with three differences, each
from a report a user could not use:

* **Bokeh inline** (``mode="inline"``). Dask's default loads BokehJS from ``cdn.bokeh.org``:
  on a machine without internet (an HPC site's nodes, this project's test machine) the report
  was a white page ("Bokeh is not defined"). Inline, it is ~1.4 MB larger and opens anywhere.
* **The run in place of "Calling Code".** Dask shows the source of the frame that entered the
  report, which for a run is ``ExitStack.__exit__`` of Python's ``contextlib``. The report
  now names the workflow, the run directory and attempt, the config and the parameters set.
* **A report that cannot be written does not replace the run's failure.** After ``cluster
  down`` (or a scheduler lost) the client is closed when the report ends, and Dask's
  ``__exit__`` raised ``AttributeError: 'NoneType' object has no attribute
  'performance_report'`` in place of the run's one-line "the scheduler ... stopped
  answering". The run's own error is said; the report is not written (``run.json`` then
  names none).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from distributed import get_client, performance_report


class RunReport(performance_report):  # type: ignore[misc]  # (distributed is untyped)
    """:class:`distributed.performance_report` for a run (see the module's notes).

    Parameters
    ----------
    filename : pathlib.Path
        Where the HTML goes.
    code : str
        What the report shows as its "Calling Code": :func:`run_text`.
    """

    def __init__(self, filename: Path, code: str) -> None:
        super().__init__(filename=str(filename), mode="inline")
        self.code = code

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            get_client().sync(self.__aexit__, exc_type, exc, tb, code=self.code)
        except Exception:
            if exc_type is None:
                raise
            # the run failed (its cluster gone, often): that is what is said, without a report


def run_text(record: Mapping[str, Any], attempt: int) -> str:
    """The run that a report covers, as the lines its "Calling Code" section shows.

    >>> record = {"workflow": {"name": "w", "file": "/w.yaml", "params": {"n": 2},
    ...           "param_sources": {"n": "--set"}}, "run_dir": "/r", "config": {"file": None}}
    >>> print(run_text(record, 1))
    # openclaw-dask run of the workflow w (/w.yaml)
    # run directory: /r (attempt 1)
    # config: the embedded default
    # parameters not at their defaults: n=2
    """
    workflow = record["workflow"]
    params = workflow.get("params", {})
    sources = workflow.get("param_sources", {})
    given = [f"{k}={v}" for k, v in params.items() if sources.get(k, "default") != "default"]
    return "\n".join(
        [
            f"# openclaw-dask run of the workflow {workflow['name']} ({workflow['file']})",
            f"# run directory: {record['run_dir']} (attempt {attempt})",
            f"# config: {record['config'].get('file') or 'the embedded default'}",
            f"# parameters not at their defaults: {', '.join(given) or 'none'}",
        ]
    )
