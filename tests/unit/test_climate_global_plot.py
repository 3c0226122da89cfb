"""The global-mean plot shows the annual mean over the monthly series (a long run's monthly
series alone is one solid band of the seasonal cycle)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")

from openclaw_dask.workflows.climate.grid import LatLonGrid  # noqa: E402
from openclaw_dask.workflows.ops import climate  # noqa: E402


class _Ctx:
    def __init__(self, root: Path) -> None:
        self.root = root

    def output_dir(self, name: str) -> Path:
        path = self.root / name
        path.mkdir(parents=True, exist_ok=True)
        return path


def test_the_global_mean_plot_draws_the_annual_mean_over_the_months(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import matplotlib.pyplot as plt

    drawn: list[Any] = []
    savefig = plt.Figure.savefig

    def keep(fig: Any, *args: Any, **kwargs: Any) -> None:
        drawn.append([(line.get_label(), len(line.get_xdata())) for line in fig.axes[0].lines])
        savefig(fig, *args, **kwargs)

    monkeypatch.setattr(plt.Figure, "savefig", keep)
    grid = LatLonGrid(10.0)
    years = 150
    months = np.arange(12 * years)
    series = 14.0 + np.sin(2 * np.pi * months / 12)
    field = np.zeros(grid.shape)
    written = climate._plot(
        _Ctx(tmp_path),
        series,
        (months + 0.5) / 12,
        field,
        field[:, 0],
        field,
        grid,
        annual_series=series.reshape(years, 12).mean(1),
    )
    assert written[0] == "global_mean.png"
    assert ("monthly", 12 * years) in drawn[0]
    assert ("annual mean", years) in drawn[0]
    assert (tmp_path / "plots" / "global_mean.png").stat().st_size > 0
