"""Show a benchmark report: a rich table on screen, JSON and a PNG of the ratios on request."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from rich.table import Table

from openclaw_dask.atomicfile import atomic_write_bytes, atomic_write_text
from openclaw_dask.config.errors import did_you_mean
from openclaw_dask.workflows import strictjson


def _fmt(value: float, unit: str) -> str:
    if unit == "B/s":
        return f"{value / 1e9:.2f} GB/s"
    if unit == "B":
        return f"{value / 2**20:.1f} MiB"
    if unit == "cell-updates/s":
        return f"{value / 1e6:.1f} Mcell/s"
    return f"{value:.3g} {unit}"


def table(report: dict[str, Any]) -> Table:
    """One row per throughput figure and per ratio, with goals where the issue sets one, under a
    row that names each suite.

    The spread of a throughput figure is half its repeats' range over their median; that of a
    ratio, the range of its value in each round alone. A figure's name, value and spread are
    never cut (on an 80-column terminal a suite column beside them cut the first and the last:
    "fraction_of_copy_ba…", "0.860-…"); a goal wraps at its spaces instead.
    """
    title = f"openclaw-dask benchmark (config {report['config_hash']})"
    if report.get("quick"):  # its goals were set for full sizes: said where the verdicts are
        title += "\n--quick: small sizes, one repeat; the goals are set for full sizes"
    t = Table(title=title)
    t.add_column("figure", no_wrap=True)
    t.add_column("value", no_wrap=True)
    t.add_column("spread", no_wrap=True)
    t.add_column("goal")
    for name, suite in report["suites"].items():
        t.add_row(f"[bold]{name}[/] suite")
        timings = suite["timings"]
        for fig, tp in suite["throughput"].items():
            timing = timings.get(fig, {})
            t.add_row(fig, _fmt(tp["value"], tp["unit"]), _spread(timing), "")
        for fig, value in suite["ratios"].items():
            goal = suite["goals"].get(fig)
            mark = ""
            if goal:
                sign = "<=" if goal["kind"] == "at_most" else ">="
                ok = "[green]met[/]" if goal["met"] else "[red]missed[/]"
                mark = f"{sign} {goal['target']:g} {ok}"
            shown = "n/a" if value is None else _ratio_text(value, goal)
            rounds = [x for x in suite.get("ratio_rounds", {}).get(fig, []) if x is not None]
            # the range of the rounds alone, when there are several
            span = f"{min(rounds):.3f}-{max(rounds):.3f}" if len(rounds) > 1 else ""
            t.add_row(f"[bold]{fig}[/]", shown, span, mark)
        t.rows[-1].end_section = True
    return t


def _ratio_text(value: float, goal: dict[str, Any] | None) -> str:
    """``value`` to 3 decimals, or as many more as its goal's verdict needs to be read in it.

    0.89996 against ">= 0.9" showed as "0.900 ... missed", and 1.05004 against "<= 1.05" as
    "1.050 ... missed": a verdict the figure shown contradicts. The JSON keeps every digit.
    """
    for decimals in range(3, 10):
        text = f"{value:.{decimals}f}"
        if not goal:
            return text
        shown = float(text)
        met = shown <= goal["target"] if goal["kind"] == "at_most" else shown >= goal["target"]
        if met == goal["met"]:
            return text
    return repr(value)


def _spread(timing: dict[str, Any]) -> str:
    # one run has no spread to show: "±0%" read as a precise figure (every --quick row)
    if len(timing.get("samples_s", ())) == 1:
        return "1 run"
    spread = timing.get("spread")
    return "" if spread is None else f"±{100 * spread / 2:.0f}%"


def write_json(report: dict[str, Any], path: Path) -> None:
    """Write the report as indented, strict JSON (an undefined figure is null), whole or not
    at all: a full disk had left half a report in place of an earlier run's."""
    atomic_write_text(path, strictjson.dumps(report) + "\n")


def plot_format(path: Path) -> str:
    """The image format a plot written to ``path`` has: its suffix's (``png`` without one).

    Raises
    ------
    ValueError
        For a suffix matplotlib writes no image as (``.txt``), naming those it does. It had
        been said only when the plot was written, after the whole run.
    """
    from matplotlib.backend_bases import FigureCanvasBase

    formats = sorted(FigureCanvasBase.get_supported_filetypes())
    suffix = path.suffix[1:].lower() or "png"
    if suffix not in formats:
        raise ValueError(
            f"a plot is an image: expected a file name ending in .png or another of "
            f"matplotlib's formats ({', '.join(formats)}), got .{path.suffix[1:]}"
            f"{did_you_mean(suffix, formats)}"
        )
    return suffix


def save_figure(fig: Any, path: Path) -> None:
    """Save ``fig`` to ``path`` whole or not at all (in :func:`plot_format`'s format)."""
    image = io.BytesIO()
    fig.savefig(image, format=plot_format(path), dpi=100)
    atomic_write_bytes(path, image.getvalue())


def plot(report: dict[str, Any], path: Path) -> None:
    """A PNG with one bar chart of ratios per suite (goals drawn as dashed lines)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    suites = [(n, s) for n, s in report["suites"].items() if s["ratios"]]
    fig, axes = plt.subplots(len(suites), 1, figsize=(8, 2.2 * max(1, len(suites))), squeeze=False)
    for ax, (name, suite) in zip(axes[:, 0], suites, strict=True):
        labels = list(suite["ratios"])
        values = [suite["ratios"][k] or 0.0 for k in labels]
        ax.barh(labels, values, color="tab:blue")
        for i, label in enumerate(labels):
            goal = suite["goals"].get(label)
            if goal:
                ax.plot([goal["target"]] * 2, [i - 0.4, i + 0.4], "r--")
        ax.set_title(name, fontsize=9, loc="left")
        ax.tick_params(labelsize=7)
    fig.suptitle(f"openclaw-dask benchmark, config {report['config_hash']}", fontsize=10)
    fig.tight_layout()
    save_figure(fig, path)
    plt.close(fig)
