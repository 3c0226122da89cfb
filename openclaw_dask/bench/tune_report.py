"""The tuning report: Markdown, JSON and a PNG of every trial and of the final pairs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from openclaw_dask.atomicfile import atomic_write_text
from openclaw_dask.bench.machine import values_set
from openclaw_dask.bench.report import save_figure, write_json
from openclaw_dask.bench.tune import not_compared, pairs_disagree, report_notes
from openclaw_dask.bench.tune_pairs import death_notes, failed_note, speedup_text, too_few_pairs
from openclaw_dask.bench.workloads import describe_rate


def report_paths(out: Path, kind: str = "report") -> dict[str, Path]:
    """``tuned.config`` -> ``tuned.report.md``, ``.json``, ``.png`` beside it.

    ``kind="interrupted"`` names those of an interrupted tune (``tuned.interrupted.md``, ...),
    which leave a previous run's config and report as they were.
    """
    stem = out.with_suffix("") if out.suffix else out
    return {ext: stem.with_name(f"{stem.name}.{kind}.{ext}") for ext in ("md", "json", "png")}


def markdown(report: dict[str, Any]) -> str:
    """The report as Markdown: trials, skipped stages, baseline vs tuned pairs."""
    unit = report["workload"]["unit"]
    lines = [
        f"# Tuning report: {report['workload']['name']}",
        "",
        f"Workload: {report['workload']['description']}.  ",
        f"Machine: {report['machine']['host']}, {report['machine']['usable_cores']} cores; "
        f"budget {report['budget_s']:.0f} s, used {report['wall_s']:.0f} s.  ",
        f"Baseline: {report['config_file'] or 'defaults'}{_overrides(report)} "
        f"(config hash {report['config_hash']}).",
        "",
    ]
    if report.get("command"):  # (absent from the Python API's reports and older ones)
        lines += [f"Command: `{report['command']}`", ""]
    if report.get("interrupted"):
        lines += [
            "**Interrupted** (Ctrl-C): the trials measured until then; no final comparison and "
            "no recommendation, and no tuned config was written.",
            "",
        ]
    lines += [
        "## Trials (median of repeats after a warm-up)",
        "",
        "| stage | changes | throughput | context switches per run, per worker |",
        "|---|---|---|---|",
    ]
    for t in report["trials"]:
        changes = ", ".join(f"`{k}={v}`" for k, v in t["changes"].items()) or "baseline"
        rate = f"skipped: {t['skipped']}" if t["skipped"] else describe_rate(t["rate_median"], unit)
        if t.get("workers_lost"):  # (absent from reports written before it was recorded)
            rate += f" ({len(t['workers_lost'])} worker(s) died during it)"
        ctx = ", ".join(str(v) for v in t["ctx_switches_per_worker"].values())
        lines.append(f"| {t['stage']} | {changes} | {rate} | {ctx} |")
    if report["skipped"]:
        lines += ["", "## Not tuned", ""] + [f"- {s}" for s in report["skipped"]]
    comp = report["comparison"]
    lines += ["", "## Baseline vs tuned, interleaved pairs", ""]
    if comp:
        challenger = ", ".join(f"`{k}={v}`" for k, v in comp["candidate"].items())
        lines += [
            f"Candidate: {challenger}.",
            "",
            "| pair | baseline | candidate |",
            "|---|---|---|",
        ]
        # in the order measured: a pair a worker's death hit is shown, marked, and not counted
        counted = zip(comp["rates"]["baseline"], comp["rates"]["tuned"], strict=True)
        hits = {hit["pair"]: hit for hit in comp.get("dropped", [])}
        for i in range(1, comp["pairs"] + len(hits) + 1):
            b, t = (
                (hits[i]["rates"]["baseline"], hits[i]["rates"]["tuned"])
                if i in hits
                else next(counted)
            )
            mark = " (not counted: a worker died)" if i in hits else ""
            lines.append(f"| {i}{mark} | {describe_rate(b, unit)} | {describe_rate(t, unit)} |")
        if comp["speedup"] is not None:
            lines += [
                "",
                f"Median speedup {speedup_text(comp['speedup'])}; the candidate was faster in "
                f"{comp['tuned_wins']} of {comp['pairs']} pairs"
                + (" without a death" if hits else "")
                + ".",
            ]
        notes = death_notes(comp)
        if notes:
            lines += ["", *(f"- {n[0].upper()}{n[1:]}." for n in notes)]
    elif report.get("interrupted"):
        lines.append("Not measured: tune was interrupted first.")
    elif report.get("final_skipped"):
        lines.append(f"Not measured: {not_compared(report)}.")
    else:
        lines.append("No candidate could be measured within the budget.")
    lines += ["", "## Recommendation", ""]
    if report.get("interrupted"):
        lines.append("None: tune was interrupted before the final comparison.")
    elif report["recommended"]:
        for key, value in report["recommended"].items():
            lines.append(f"- `{key}: {value}`: {report['reasons'].get(key, '')}")
    elif comp and comp.get("failed"):
        lines.append(f"Keep the baseline: {failed_note(comp)}.")
    elif comp and too_few_pairs(comp):
        lines.append("Keep the baseline: too few final pairs without a worker's death.")
    elif comp and pairs_disagree(report):
        lines.append(f"Keep the baseline: {pairs_disagree(report)}.")
    elif comp:
        lines.append("Keep the baseline: no change measured faster in the final pairs.")
    else:
        lines.append(f"Keep the baseline: {not_compared(report)}.")
    for note in report_notes(report):
        lines += ["", f"{note[0].upper()}{note[1:]}."]
    return "\n".join(lines) + "\n"


def _overrides(report: dict[str, Any]) -> str:
    """`` with `a.b=1` (--set)``: the baseline's values from neither its file nor the defaults."""
    shown = [f"`{key}={value}` ({source})" for key, value, source in values_set(report)]
    return f" with {', '.join(shown)}" if shown else ""


def plot(report: dict[str, Any], path: Path) -> None:
    """Bars of every measured trial, and the final pairs."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    trials = [t for t in report["trials"] if not t["skipped"]]
    comp = report["comparison"]
    fig, axes = plt.subplots(
        1, 2 if comp else 1, figsize=(12, 0.4 * len(trials) + 2), squeeze=False
    )
    ax = axes[0, 0]
    labels = [
        f"{t['stage']}: "
        + (", ".join(f"{k.split('.')[-1]}={v}" for k, v in t["changes"].items()) or "baseline")
        for t in trials
    ]
    ax.barh(labels, [t["rate_median"] for t in trials], color="tab:blue")
    ax.set_xlabel(f"{report['workload']['unit']} per second")
    ax.tick_params(labelsize=7)
    ax.set_title("trials", fontsize=9)
    if comp:
        ax2 = axes[0, 1]
        n = range(1, comp["pairs"] + 1)
        ax2.plot(n, comp["rates"]["baseline"], "o-", label="baseline")
        ax2.plot(n, comp["rates"]["tuned"], "s-", label="candidate")
        ax2.set_xlabel("interleaved pair")
        speedup = comp["speedup"]  # None: a worker died in every pair
        shown = speedup_text(speedup) if speedup is not None else "no pair without a death"
        ax2.set_title(f"baseline vs tuned: {shown}", fontsize=9)
        ax2.legend()
    fig.tight_layout()
    save_figure(fig, path)
    plt.close(fig)


def write_all(report: dict[str, Any], out: Path, kind: str = "report") -> dict[str, Path]:
    """Write the Markdown, JSON and PNG beside ``out`` (see :func:`report_paths`)."""
    paths = report_paths(out, kind)
    atomic_write_text(paths["md"], markdown(report))
    write_json(report, paths["json"])
    plot(report, paths["png"])
    return paths
