"""Text forms of the schema: the commented starter config and the Markdown key reference.

``configs/openclaw.config`` is exactly :func:`starter_config` without a machine, and
``docs/config.md`` is exactly :func:`markdown_reference`; tests regenerate both and compare, so
the schema, the shipped defaults and the docs cannot drift apart. Regenerate them with
``python -m openclaw_dask.config.render``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml

from openclaw_dask.config.hardware import Hardware, format_cpu_list
from openclaw_dask.config.schema import KEYS, NODE, SECTIONS, Key
from openclaw_dask.config.types import FieldSpec, Record

ROOT = Path(__file__).resolve().parents[2]
SHIPPED_DEFAULT = ROOT / "configs" / "openclaw.config"
DOCS = ROOT / "docs" / "config.md"

NODES_EXAMPLE = """\
  # nodes:
  #   - {host: node1.example.org, scheduler: true, resources: {cpus: 32, memory: 120GiB}}
  #   - {host: node2.example.org, user: alice, resources: {cpus: 64, memory: 250GiB, gpus: 4}}
"""


def yaml_value(value: Any) -> str:
    """One YAML value in flow style (``[0, 1]``, ``null``, ``'127.0.0.1:8787'``)."""
    text = yaml.safe_dump(value, default_flow_style=True, width=1000).strip()
    return text.removesuffix("\n...").removesuffix("...").strip()


def _describe(key: Key) -> str:
    unit = f" [{key.unit}]" if key.unit else ""
    return f"{key.doc}{unit}"


def machine_header(hw: Hardware) -> list[str]:
    """Comment lines that describe the machine a starter config was written on."""
    from dask.utils import format_bytes  # (here: importing dask costs every command ~0.1 s)

    gpus = ", ".join(f"{g.index}: {g.name}" for g in hw.gpus) or "none"
    numa = "; ".join(f"node {n}: {format_cpu_list(c)}" for n, c in sorted(hw.numa_nodes.items()))
    alloc = ", ".join(sorted(hw.allocators)) or "none"
    return [
        "# Written by `openclaw-dask config init` for this machine:",
        f"#   cores: {hw.logical_cores} logical ({hw.cpulist()} usable), "
        f"{hw.physical_cores} physical; NUMA {numa}",
        f"#   memory: {format_bytes(hw.memory)}; GPUs: {gpus}; allocators found: {alloc}",
    ]


def starter_config(hw: Hardware | None = None) -> str:
    """A complete, commented ``openclaw.config`` holding every key at its default.

    Parameters
    ----------
    hw
        When given, a header describes this machine (``config init``); without it the text is
        the portable shipped default ``configs/openclaw.config``.
    """
    lines = [
        "# openclaw.config: how openclaw-dask runs (threads, workers, transport, memory, storage).",
        "# Every key is shown at its default; delete what you do not change. Reference:",
        "# docs/config.md. Check it with `openclaw-dask config validate`.",
    ]
    if hw is not None:
        lines += machine_header(hw)
    open_groups: list[str] = []
    for key in KEYS:
        parts = key.path.split(".")
        section = parts[0]
        if not open_groups or open_groups[0] != section:
            lines += [""] if section == "dask" else ["", f"# {SECTIONS[section]}"]
            open_groups = []
        if key.path == "dask":
            lines += [f"# {_describe(key)}", "dask: {}"]
            open_groups = ["dask"]
            continue
        parents = parts[:-1]
        common = 0
        while (
            common < min(len(open_groups), len(parents)) and open_groups[common] == parents[common]
        ):
            common += 1
        for depth in range(common, len(parents)):
            lines.append("  " * depth + f"{parents[depth]}:")
        open_groups = parents
        indent = "  " * len(parents)
        lines.append(f"{indent}# {_describe(key)}")
        lines.append(f"{indent}{parts[-1]}: {yaml_value(key.type.render(key.default))}")
        if key.path == "distributed.nodes":
            lines.append(NODES_EXAMPLE.rstrip("\n"))
    return "\n".join(lines) + "\n"


def markdown_reference() -> str:
    """The key reference table of ``docs/config.md``."""
    rows = [
        "# openclaw.config reference",
        "",
        "Generated from `openclaw_dask/config/schema.py` by "
        "`python -m openclaw_dask.config.render`; a test keeps it in step.",
        "Every key can be overridden by an environment variable (shown) or `--set key=value`.",
        "A relative file path is relative to the config file that gives it (from a variable "
        "or `--set`: to the current directory); `~` is the home directory.",
        "",
        "| key | default | accepts | meaning | env |",
        "|---|---|---|---|---|",
    ]
    for key in KEYS:
        accepts = key.type.describe().replace("|", "\\|")
        default = yaml_value(key.type.render(key.default)).replace("|", "\\|")
        rows.append(
            f"| `{key.path}` | `{default}` | {accepts} | {_describe(key)} | `{key.env_var}` |"
        )
    rows += [
        "",
        "## A node of `distributed.nodes`",
        "",
        "Each entry of the list is a mapping with these fields (`resources` holds three of its "
        "own); `configs/ssh-cluster.config` is an example.",
        "",
        "| field | default | accepts | meaning |",
        "|---|---|---|---|",
    ]
    rows += [
        f"| `{name}` | {default} | {accepts} | {doc} |"
        for name, default, accepts, doc in _fields(NODE.fields)
    ]
    return "\n".join(rows) + "\n"


def _fields(fields: dict[str, FieldSpec], prefix: str = "") -> list[tuple[str, str, str, str]]:
    """Rows of a record's fields, a nested record's own fields after it (``resources.cpus``)."""
    out = []
    for name, spec in fields.items():
        if isinstance(spec.type, Record):
            out += _fields(dict(spec.type.fields), f"{prefix}{name}.")
            continue
        default = "required" if spec.required else f"`{yaml_value(spec.default)}`"
        accepts = spec.type.describe().replace("|", "\\|")
        out.append((prefix + name, default, accepts, spec.doc))
    return out


def main() -> None:
    """Regenerate the shipped default config and the docs reference."""
    SHIPPED_DEFAULT.write_text(starter_config())
    DOCS.write_text(markdown_reference())
    sys.stdout.write(f"wrote {SHIPPED_DEFAULT} and {DOCS}\n")


if __name__ == "__main__":
    main()
