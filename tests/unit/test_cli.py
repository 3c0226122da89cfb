"""The ``openclaw-dask config`` commands, run as a user runs them."""

from __future__ import annotations

import asyncio
import errno
import inspect
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from openclaw_dask.cli.config_cmd import expand_set_values
from openclaw_dask.cli.main import cli
from openclaw_dask.config import load_config
from tests.conftest import ROOT
from tests.unit.test_translate import LOCAL_CLUSTER_PARAMS, NANNY_PARAMS, SCHEDULER_PARAMS, params

SHIPPED = sorted((ROOT / "configs").glob("*.config"))


def run_cli(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run the command in a subprocess: `python -m openclaw_dask`, the console script's entry."""
    return subprocess.run(
        [sys.executable, "-m", "openclaw_dask", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd or ROOT,
        env={**os.environ, **(env or {})},
    )


def invoke(*args: str, env: dict[str, str] | None = None) -> Any:
    return CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)


def printed_plan(config: str, backend: str) -> dict[str, Any]:
    """What `config plan configs/CONFIG --backend BACKEND --json` prints, parsed."""
    result = invoke(
        "config", "plan", str(ROOT / "configs" / config), "--backend", backend, "--json"
    )
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def accepted_kwargs(backend: str) -> set[str]:
    """The keyword arguments the backend's real cluster class (or function) takes."""
    import dask_mpi
    import distributed

    from openclaw_dask.translate.cuda import LOCAL_CUDA_CLUSTER_PARAMS

    accepted = {
        "local": LOCAL_CLUSTER_PARAMS,
        # dask-cuda's own signature is checked against this list where it is installed (gpu)
        "cuda": set(LOCAL_CUDA_CLUSTER_PARAMS) | LOCAL_CLUSTER_PARAMS,
        "ssh": params(distributed.SpecCluster.__init__),
        "mpi": params(dask_mpi.initialize),
    }
    return accepted[backend]


def test_every_shipped_config_validates() -> None:
    assert len(SHIPPED) >= 6
    result = run_cli("config", "validate", *map(str, SHIPPED))
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("ok ") == len(SHIPPED)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "parallel:\n  thread_pool_sise: 4\n",
            ":2: parallel.thread_pool_sise: unknown key; did you mean 'parallel.thread_pool_size'?",
        ),
        ("parallel:\n  thread_pool_size: -3\n", ":2: parallel.thread_pool_size: expected"),
        ("cluster:\n  backend: kubernetes\n", ":2: cluster.backend: expected one of auto"),
        ("parallel:\n  processes: 1\n  processes: 2\n", ":3: parallel.processes: duplicate key"),
        ("parallel:\n  processes: [1,\n", ":3: YAML syntax error"),
    ],
    ids=["typo", "negative", "backend", "duplicate", "syntax"],
)
def test_bad_configs_exit_2_without_traceback(tmp_path: Path, text: str, expected: str) -> None:
    bad = tmp_path / "bad.config"
    bad.write_text(text)
    result = run_cli("config", "validate", str(bad))
    assert result.returncode == 2
    assert expected in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


def test_env_override_shown_with_its_source() -> None:
    result = run_cli(
        "config",
        "show",
        "--sources",
        env={"OPENCLAW_PARALLEL__THREAD_POOL_SIZE": "3"},
        cwd=ROOT / "docs",
    )
    line = next(x for x in result.stdout.splitlines() if x.startswith("parallel.thread_pool_size"))
    assert line.split()[1] == "3"
    assert line.endswith("# env OPENCLAW_PARALLEL__THREAD_POOL_SIZE")


def test_show_json_and_set() -> None:
    result = invoke("config", "show", "--json", "--sources", "--set", "distributed.batch_size=9")
    data = json.loads(result.output)
    assert data["values"]["distributed"]["batch_size"] == 9
    assert data["sources"]["distributed.batch_size"] == "--set"


def test_one_set_takes_several_assignments() -> None:
    shipped = str(ROOT / "configs/openclaw.config")
    args = ["--set", "distributed.batch_size=9", "distributed.sync_interval=50", shipped]
    data = json.loads(invoke("config", "show", "--json", "--sources", *args).output)
    assert data["values"]["distributed"]["batch_size"] == 9
    assert data["values"]["distributed"]["sync_interval"] == 50
    # the path after them is still the path
    assert data["sources"]["memory.allocator"].startswith(f"{shipped}:")
    # only the tokens right after a --set value, and none after "--"
    assert expand_set_values(["--set", "a.b=1", "c.d=2", "--x", "e.f=3", "--", "g.h=4"]) == (
        ["--set", "a.b=1", "--set", "c.d=2", "--x", "e.f=3", "--", "g.h=4"]
    )
    assert expand_set_values(["--set=a.b=1", "c.d=2"]) == ["--set=a.b=1", "--set", "c.d=2"]


@pytest.mark.parametrize(
    ("config", "backend", "cls"),
    [
        ("openclaw.config", "local", "distributed.LocalCluster"),
        ("workstation-gpu.config", "cuda", "dask_cuda.LocalCUDACluster"),
        ("ssh-cluster.config", "ssh", "distributed.SpecCluster"),
        ("mpi-hpc.config", "mpi", "dask_mpi.initialize"),
    ],
)
def test_plan_json_for_each_backend(config: str, backend: str, cls: str) -> None:
    plan = printed_plan(config, backend)
    assert plan["backend"] == backend and plan["cluster_class"] == cls
    assert (plan["launch_command"] is not None) == (backend == "mpi")
    # the kwargs printed for the example config are ones the real class takes
    kwargs = plan["cluster_kwargs"]
    assert set(kwargs) <= accepted_kwargs(backend), set(kwargs) - accepted_kwargs(backend)
    if backend == "ssh":  # each spec's options are what distributed's ssh classes take
        from distributed.deploy import ssh

        def options(cls: Any) -> set[str]:  # their argument named "kwargs" is a dict
            return set(inspect.signature(cls.__init__).parameters) - {"self", "scheduler"}

        sched = kwargs["scheduler"]
        assert set(sched["options"]) <= options(ssh.Scheduler)
        assert set(sched["options"]["kwargs"]) <= SCHEDULER_PARAMS
        assert len(kwargs["workers"]) == 3
        for spec in kwargs["workers"].values():
            assert set(spec["options"]) <= options(ssh.Worker)
            assert set(spec["options"]["kwargs"]) <= NANNY_PARAMS


def test_real_clusters_are_built_from_the_printed_plans() -> None:
    """The JSON of `config plan` for the shipped local and ssh examples, made into the real
    LocalCluster and SpecCluster objects (asynchronous: built, never started)."""
    from openclaw_dask.runtime import cluster_class, materialise_kwargs
    from openclaw_dask.translate import ClusterPlan

    plans = [
        ClusterPlan(**printed_plan(config, backend))
        for config, backend in (("openclaw.config", "local"), ("ssh-cluster.config", "ssh"))
    ]

    async def build() -> list[tuple[str, int]]:
        made = []
        for plan in plans:
            cluster = cluster_class(plan)(**materialise_kwargs(plan), asynchronous=True)
            made.append((type(cluster).__name__, len(cluster.worker_spec)))
            await cluster.close()
        return made

    local_workers = plans[0].cluster_kwargs["n_workers"]
    assert asyncio.run(build()) == [("LocalCluster", local_workers), ("SpecCluster", 3)]


def test_plan_reports_aliases() -> None:
    result = invoke(
        "config",
        "plan",
        "--set",
        "distributed.communication_backend=nccl",
        "--set",
        "cluster.backend=local",
    )
    assert result.exit_code == 0
    assert "'nccl' is a documented alias for 'ucx' with NVLink" in result.stdout


def test_plan_for_another_machine(tmp_path: Path) -> None:
    from tests.conftest import make_hardware

    desc = tmp_path / "h200.json"
    desc.write_text(json.dumps(make_hardware(cores=16, gpus=1).to_dict()))
    result = invoke(
        "config",
        "plan",
        str(ROOT / "configs/workstation-gpu.config"),
        "--hardware",
        str(desc),
        "--json",
    )
    plan = json.loads(result.stdout)
    assert plan["backend"] == "cuda" and plan["cluster_kwargs"]["CUDA_VISIBLE_DEVICES"] == [0]
    shown = json.loads(invoke("config", "plan", "--show-hardware").stdout)
    assert shown["logical_cores"] >= 1


def test_plan_with_bad_hardware_file(tmp_path: Path) -> None:
    bad = tmp_path / "hw.json"
    bad.write_text("{}")
    result = CliRunner().invoke(cli, ["config", "plan", "--hardware", str(bad)])
    assert result.exit_code == 2 and "not a hardware description" in result.output


def test_init_writes_a_valid_config_and_never_overwrites(tmp_path: Path) -> None:
    target = tmp_path / "openclaw.config"
    result = invoke("config", "init", "-o", str(target))
    assert result.exit_code == 0 and target.is_file()
    assert load_config(target).file == str(target)
    assert "Written by `openclaw-dask config init` for this machine" in target.read_text()
    target.write_text("# mine\n")
    again = CliRunner().invoke(cli, ["config", "init", "-o", str(target)])
    assert again.exit_code == 2 and "already exists" in again.output
    assert target.read_text() == "# mine\n"  # nothing lost
    assert invoke("config", "init", "-o", str(target), "--force").exit_code == 0


def test_init_force_on_a_full_disk_keeps_the_file_it_would_replace(tmp_path: Path) -> None:
    """``--force`` wrote in place: a full disk left the config cut at the point the disk
    filled, and the cut file still validated (exploratory test, 2026-12-05). The temporary
    beside it is /dev/full here."""
    target = tmp_path / "openclaw.config"
    target.write_text("parallel:\n  processes: 1\n# my tuned config\n")
    (tmp_path / f".openclaw.config.tmp{os.getpid()}").symlink_to("/dev/full")
    result = CliRunner().invoke(cli, ["config", "init", "--force", "-o", str(target)])
    assert result.exit_code == 2 and "cannot write: No space left on device" in result.output
    assert target.read_text() == "parallel:\n  processes: 1\n# my tuned config\n"


@pytest.mark.parametrize("output", ["", "  ", "-"])
def test_init_wants_a_file_name(tmp_path: Path, output: str, monkeypatch: Any) -> None:
    """``-o ''`` said "already exists" (of the current directory), ``-o -`` wrote a file
    named ``-``."""
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    result = CliRunner().invoke(cli, ["config", "init", "-o", output])
    assert result.exit_code == 2
    assert "--output: expected a file name to write to" in result.output
    assert list(here.iterdir()) == []


def test_config_commands_take_the_file_as_config_too() -> None:
    """``config show --config FILE`` was "No such option", although every other command takes
    ``--config`` (exploratory test, 2026-12-05)."""
    det, mpi = str(ROOT / "configs/deterministic.config"), str(ROOT / "configs/mpi-hpc.config")
    shown = invoke("config", "show", "--json", "--config", det)
    assert shown.exit_code == 0 and json.loads(shown.output)["parallel"]["deterministic_mode"]
    assert invoke("config", "plan", "--json", "--config", mpi).exit_code == 0
    assert "mpirun" in invoke("config", "plan", "--config", mpi).output
    checked = invoke("config", "validate", det, "--config", mpi)
    assert (
        checked.exit_code == 0 and "ok " + det in checked.output and "ok " + mpi in checked.output
    )
    both = CliRunner().invoke(cli, ["config", "show", det, "--config", mpi])
    assert both.exit_code == 2 and f"--config: give one config file: {det} or {mpi}" in both.output
    assert invoke("config", "show", det, "--config", det).exit_code == 0


def test_unknown_command_and_option_exit_2() -> None:
    assert CliRunner().invoke(cli, ["config", "frobnicate"]).exit_code == 2
    assert CliRunner().invoke(cli, ["config", "plan", "--backend", "k8s"]).exit_code == 2


def test_a_full_disk_or_quota_is_said_in_words(tmp_path: Path) -> None:
    from openclaw_dask.cli.output import no_space

    quota = no_space(OSError(errno.EDQUOT, "Disk quota exceeded", str(tmp_path / "a" / "b.zarr")))
    assert quota is not None and quota.startswith(f"disk quota exceeded for {tmp_path}/a/b.zarr (")
    assert quota.endswith(" free)")  # measured on the nearest folder that exists
    assert no_space(OSError(errno.ENOSPC, "No space left on device"), tmp_path).startswith(
        f"no space left on device for {tmp_path} ("
    )
    assert no_space(OSError(errno.ENOENT, "No such file")) is None
    assert no_space(ValueError("no space")) is None
