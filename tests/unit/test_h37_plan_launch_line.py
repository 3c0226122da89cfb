"""`config plan` prints an mpirun line that a shell reads back as the planned command."""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

from click.testing import CliRunner

from openclaw_dask.cli.main import cli
from tests.conftest import ROOT, make_hardware

MPI_CONFIG = str(ROOT / "configs" / "mpi-hpc.config")


def test_the_printed_launch_line_splits_as_a_shell_splits_it_into_the_plan(
    tmp_path: Path,
) -> None:
    """mpi-hpc.config pins its ranks, so the line carries `-x _OPENCLAW_AFFINITY=[[0, 1, ...`:
    printed unquoted, a pasted line gave mpirun a piece of it as the program to run."""
    machine = tmp_path / "machine.json"
    machine.write_text(json.dumps(make_hardware(cores=16).to_dict()))
    args = ["config", "plan", MPI_CONFIG, "--hardware", str(machine)]
    runner = CliRunner()
    as_json = runner.invoke(cli, [*args, "--json"])
    assert as_json.exit_code == 0, as_json.output
    planned = json.loads(as_json.stdout)["launch_command"]
    assert any(" " in word for word in planned)  # the case that needs quoting is here
    text = runner.invoke(cli, args)
    assert text.exit_code == 0, text.output
    lines = text.stdout.splitlines()
    line = lines[lines.index("launch:") + 1].strip()
    words = shlex.split(line)
    env = []
    while "=" in words[0] and not words[0].startswith("-"):  # VAR=value before the program
        env.append(words.pop(0).partition("=")[0])
    assert words == planned
    # as root Open MPI refuses to start without its permission, which the line then gives
    root_env = ["OMPI_ALLOW_RUN_AS_ROOT", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"]
    assert env == (root_env if os.getuid() == 0 else [])
