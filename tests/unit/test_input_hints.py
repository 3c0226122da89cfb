"""Hints on mistaken input: parameters given as config keys, near misses of our variables,
malformed ``${...}`` references, unreadable characters and ``cluster up`` asked to attach."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from openclaw_dask.config import ConfigError, load_config
from openclaw_dask.config.yamlsource import read_yaml
from openclaw_dask.workflows.spec import load_workflow
from tests.conftest import ROOT

WORKFLOW = """\
name: demo
params:
  size: {type: int, default: 64, min: 16}
  seed: {type: int, default: 1}
steps:
  field:
    op: example.field
    with: {size: "${params.size}", chunk: 32, seed: "${params.seed}"}
    outputs: [field.zarr]
"""
HINT = "workflow parameters are set with submit --set params.NAME=VALUE"


def run_cli(*args: str, cwd: Path, env: dict[str, str] | None = None) -> Any:
    """The real console entry point in a subprocess, run from ``cwd``."""
    return subprocess.run(
        [sys.executable, "-m", "openclaw_dask", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
    )


def problems(**kw: Any) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_config(None, use_search_path=False, **kw)
    return [str(p) for p in info.value.problems]


# ---- workflow parameters given as config keys -------------------------------------------------


@pytest.mark.parametrize(
    ("item", "expected"),
    [
        ("param.size=128", f"param.size: unknown key; did you mean 'params.size'? ({HINT})"),
        ("parameters.sise=128", "did you mean 'params.size'?"),
        ("params=3", f"params: unknown key; {HINT}"),
        ("param=3", f"param: unknown key; {HINT}"),
        ("size=128", f"size: unknown key; did you mean 'params.size'? ({HINT})"),
        ("sise=128", "sise: unknown key; did you mean 'params.size'?"),
        # a config word stays a config key, and a section of ours is not taken for params
        ("processes=3", "processes: unknown key; did you mean 'parallel.processes'?"),
        ("parall.processes=3", "did you mean 'parallel.processes'?"),
    ],
)
def test_set_of_a_parameter_points_at_params(item: str, expected: str) -> None:
    (msg,) = problems(overrides=[item], env={}, params=["size", "seed"])
    assert msg.startswith("--set: ") and expected in msg


def test_set_without_the_workflow_still_names_params() -> None:
    (msg,) = problems(overrides=["param.size=128"], env={})
    assert f"did you mean 'params.size'? ({HINT})" in msg
    (msg,) = problems(overrides=["params.size=128"], env={})  # config validate --set params.x
    assert msg.endswith(HINT)


def test_env_parameter_and_near_miss_of_our_variables() -> None:
    msgs = problems(env={"OPENCLAW_PARAMS__SIZE": "128", "OPENCLAW_DEBUGG": "1"})
    assert msgs == [
        "env OPENCLAW_DEBUGG: debugg: unknown key; did you mean 'OPENCLAW_DEBUG'?",
        f"env OPENCLAW_PARAMS__SIZE: params.size: unknown key; {HINT}, not environment variables",
    ]
    (msg,) = problems(env={"OPENCLAW_STATEDIR": "/tmp"})
    assert msg.endswith("did you mean 'OPENCLAW_STATE_DIR'?")
    (msg,) = problems(env={"OPENCLAW_PARALEL__PROCESSES": "2"})  # a key's typo: the key
    assert msg.endswith("did you mean 'parallel.processes'?")


def test_submit_set_param_typo_names_params(tmp_path: Path) -> None:
    wf = tmp_path / "wf.yaml"
    wf.write_text(WORKFLOW)
    result = run_cli("submit", str(wf), "--dry-run", "--set", "param.size=128", cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert "param.size: unknown key; did you mean 'params.size'?" in result.stderr
    assert not (tmp_path / "runs").exists()


# ---- ${...} references --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ref", "hint"),
    [
        ("${param.size}", "; did you mean '${params.size}'?"),
        ("${size}", "; did you mean '${params.size}'?"),
        ("${param.SIZE}", "; did you mean '${params.size}'?"),  # was no hint: case mattered
        ("${HOME}", ""),
    ],
)
def test_malformed_reference_says_how_references_are_written(
    tmp_path: Path, ref: str, hint: str
) -> None:
    wf = tmp_path / "wf.yaml"
    wf.write_text(WORKFLOW.replace("${params.size}", ref))
    with pytest.raises(ConfigError) as info:
        load_workflow(wf)
    (msg,) = [str(p) for p in info.value.problems]
    assert msg == (
        f"{wf}:8: steps.field.with.size: '{ref}': references are written ${{params.NAME}}{hint}"
    )


# ---- characters YAML refuses, bytes that are not UTF-8 ----------------------------------------


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (
            b"parallel:\n  processes: 2\n\x00x: 1\n",
            ":3: YAML error: a NUL character (U+0000) at column 1 is not allowed",
        ),
        (
            b"parallel:\r\n  processes: 2\x01\r\n",
            ":2: YAML error: the control character U+0001 at column 15 is not allowed",
        ),
        (
            b"parallel:\n  processes: 2\n# caf\xe9\n",
            ":3: cannot read: not UTF-8 text (byte 0xe9: invalid continuation byte)",
        ),
    ],
    ids=["nul", "control", "latin-1"],
)
def test_unreadable_character_names_its_line(tmp_path: Path, data: bytes, expected: str) -> None:
    path = tmp_path / "bad.config"
    path.write_bytes(data)
    with pytest.raises(ConfigError) as info:
        read_yaml(path)
    (msg,) = [str(p) for p in info.value.problems]
    assert msg == f"{path}{expected}"
    assert "\n" not in msg and "<unicode string>" not in msg


# ---- cluster up with a scheduler address ------------------------------------------------------


def test_cluster_up_refuses_to_attach_naming_the_address_key(tmp_path: Path) -> None:
    state = tmp_path / "state"
    env = {"OPENCLAW_STATE_DIR": str(state)}
    address = "cluster.scheduler_address"
    result = run_cli(
        "cluster", "up", "--set", f"{address}=tcp://127.0.0.1:8786", cwd=tmp_path, env=env
    )
    assert result.returncode == 2, result.stderr
    assert f"--set: {address}: cluster up starts a new cluster; it cannot attach" in result.stderr
    assert "cluster.backend" not in result.stderr
    config = tmp_path / "attach.config"
    config.write_text("cluster:\n  scheduler_address: tcp://127.0.0.1:8786\n")
    result = run_cli("cluster", "up", "--config", str(config), cwd=tmp_path, env=env)
    assert result.returncode == 2, result.stderr
    assert f"{config}:2: {address}: cluster up starts a new cluster" in result.stderr
    assert not (state / "cluster.json").exists()


def test_a_bare_parameter_name_in_submit_suggests_the_parameter() -> None:
    from openclaw_dask.workflows.runner import run_workflow

    with pytest.raises(ConfigError) as caught:
        run_workflow(ROOT / "workflows/example.yaml", overrides=["size=128"], dry_run=True)
    assert "size: unknown key; did you mean 'params.size'?" in str(caught.value)


def test_a_missing_file_suggests_the_one_beside_it(tmp_path: Path) -> None:
    """A typo in a workflow or config file's name: the near name in its folder, as written."""
    (tmp_path / "flows").mkdir()
    (tmp_path / "flows" / "climate.yaml").write_text(WORKFLOW)
    (tmp_path / "flows" / "climate.yaml.d").mkdir()  # a folder is not offered for a file
    said = run_cli("submit", "flows/climat.yaml", "--dry-run", cwd=tmp_path)
    assert said.returncode == 2, said.stderr
    assert said.stderr == (
        "error: flows/climat.yaml: file not found; did you mean 'flows/climate.yaml'?\n"
        "1 problem found\n"
    )
    said = run_cli("config", "validate", "flows/climate.yaml.", cwd=tmp_path)
    assert "file not found; did you mean 'flows/climate.yaml'?" in said.stderr
    # nothing near: no guess
    said = run_cli("submit", str(tmp_path / "flows" / "weather.yml"), "--dry-run", cwd=tmp_path)
    assert said.stderr.splitlines()[0].endswith("weather.yml: file not found"), said.stderr
