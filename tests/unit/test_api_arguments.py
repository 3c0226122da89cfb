"""A wrong argument to the public API is a ``TypeError`` that names it, before anything runs.

Found by an exploratory pass: a string given as ``overrides`` was read a character at a time
(twenty "expected KEY=VALUE, got 'p'" problems), and ``plan_cluster("x.config")`` or
``memory_compact(None)`` ended in an ``AttributeError`` deep inside.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import openclaw_dask as oc
from openclaw_dask.config.loader import set_source
from tests.conftest import ROOT

EXAMPLE = str(ROOT / "workflows/example.yaml")


@pytest.mark.parametrize(
    ("call", "said"),
    [
        (
            lambda: oc.plan_cluster("x.config"),
            "plan_cluster: config must be an openclaw_dask.Config, got str 'x.config' "
            "(load_config(path) reads one from a file)",
        ),
        (
            lambda: oc.memory_compact(None),
            "memory_compact: client must be a distributed.Client, got NoneType None "
            "(start_cluster yields one)",
        ),
        (
            lambda: oc.load_config(overrides="parallel.processes=2"),
            "load_config: overrides must be a list of 'section.key=value' strings or a mapping, "
            "got str 'parallel.processes=2' (put it in a list)",
        ),
        (
            lambda: oc.load_config(overrides=["parallel.processes=2", 1]),
            "load_config: overrides must be a list of 'section.key=value' strings or a mapping, "
            "an item int 1",
        ),
        (
            lambda: oc.load_config(123),
            "load_config: path must be a file path (str or os.PathLike) or None, got int 123",
        ),
        (
            lambda: oc.run_workflow(EXAMPLE, None, "params.size=64"),
            "run_workflow: overrides must be a list of 'section.key=value' strings, "
            "got str 'params.size=64' (put it in a list)",
        ),
        (
            lambda: oc.start_cluster(123).__enter__(),
            "start_cluster: config (a Config or its file) must be a file path (str or "
            "os.PathLike) or None, got int 123",
        ),
        (
            # iterated, a mapping had given its keys alone: "expected KEY=VALUE, got 'params.size'"
            lambda: oc.run_workflow(EXAMPLE, None, {"params.size": 64}),
            "run_workflow: overrides must be a list of 'section.key=value' strings, "
            "got dict {'params.size': 64}",
        ),
        (
            lambda: oc.run_workflow(None, resume=5),
            "run_workflow: resume must be a file path (str or os.PathLike) or None, got int 5",
        ),
        (
            # a string is true: "no" had written the report
            lambda: oc.run_workflow(EXAMPLE, report="no", dry_run=True),
            "run_workflow: report must be True or False or None, got str 'no'",
        ),
        (
            lambda: oc.run_workflow(EXAMPLE, dry_run="False"),
            "run_workflow: dry_run must be True or False, got str 'False'",
        ),
        (
            # called once the run directory existed: a "failed" run had been left there
            lambda: oc.run_workflow(EXAMPLE, announce="news.txt", dry_run=True),
            "run_workflow: announce must be a function of one str or None, got str 'news.txt'",
        ),
        (
            lambda: oc.start_cluster(verify="no").__enter__(),
            "start_cluster: verify must be True or False, got str 'no'",
        ),
        (
            lambda: oc.start_cluster(hardware="x").__enter__(),
            "start_cluster: hardware must be an openclaw_dask.Hardware or None, got str 'x' "
            "(detect_hardware() describes this machine)",
        ),
        (
            # had been twenty "expected KEY=VALUE, got 'p'" problems
            lambda: oc.benchmark(overrides="parallel.processes=2"),
            "benchmark: overrides must be a list of 'section.key=value' strings or a mapping, "
            "got str 'parallel.processes=2' (put it in a list)",
        ),
        (
            # had been "unknown suite 's'", "unknown suite 't'", ...
            lambda: oc.benchmark(suites="stencil"),
            "benchmark: suites must be a list of names, got str 'stencil' (put it in a list)",
        ),
        (
            lambda: oc.tune(overrides="parallel.processes=2"),
            "tune: overrides must be a list of 'section.key=value' strings or a mapping, "
            "got str 'parallel.processes=2' (put it in a list)",
        ),
        (
            lambda: oc.tune(oc.load_config(use_search_path=False), budget="5m"),
            "tune: budget must be a number of seconds, got '5m'",
        ),
    ],
)
def test_a_wrong_argument_is_a_type_error_naming_it(call: Callable[[], Any], said: str) -> None:
    with pytest.raises(TypeError) as info:
        call()
    assert str(info.value) == said


def test_overrides_with_a_loaded_config_are_applied_by_every_entry_point() -> None:
    """benchmark had dropped them without a word (the run measured the config as is), then
    benchmark, tune and start_cluster refused them while run_workflow applied them."""
    from openclaw_dask.bench.run import config_argument
    from openclaw_dask.runtime.cluster import _resolve

    loaded = oc.load_config(use_search_path=False)
    sets = ["distributed.batch_size=8", "distributed.batch_size=32", "parallel.processes=1"]
    for config in (config_argument("benchmark", loaded, sets), _resolve(loaded, sets, None)):
        assert config["distributed.batch_size"] == 32 and config["parallel.processes"] == 1
        assert config.sources["parallel.processes"] == "--set"
        assert config.sources["distributed.batch_size"] == set_source(["8", "32"])
    assert loaded["distributed.batch_size"] == 64  # a changed copy
    generated = loaded.with_overrides(s for s in ["parallel.processes=2"])
    assert generated["parallel.processes"] == 2
    assert loaded.with_overrides(None) is loaded
    with pytest.raises(oc.ConfigError, match=r"parallel\.procesess.*did you mean"):
        config_argument("tune", loaded, ["parallel.procesess=1"])
    with pytest.raises(TypeError, match="with_overrides: overrides must be"):
        loaded.with_overrides("parallel.processes=2")


def test_a_generator_of_overrides_with_a_non_string_is_a_type_error_too() -> None:
    # its items cannot be checked before it is read: it had been an AttributeError of int
    with pytest.raises(TypeError, match=r"load_config: overrides must be .*, an item int 5"):
        oc.load_config(overrides=(x for x in ["parallel.processes=2", 5]), use_search_path=False)
    loaded = oc.load_config(use_search_path=False)
    with pytest.raises(TypeError, match=r"with_overrides: overrides must be .*, an item int 5"):
        loaded.with_overrides(x for x in [5])


def test_overrides_may_be_any_iterable_of_strings() -> None:
    # a generator is not used up by the check
    config = oc.load_config(overrides=(s for s in ["parallel.processes=2"]), use_search_path=False)
    assert config["parallel.processes"] == 2
    # a key given twice says so as with a list (the generator had been used up before the
    # repeats were read, and its source said "--set"), as Config.with_overrides does
    sets = ["parallel.processes=2", "parallel.processes=1"]
    config = oc.load_config(overrides=(s for s in sets), use_search_path=False)
    loaded = oc.load_config(use_search_path=False).with_overrides(s for s in sets)
    for c in (config, loaded):
        assert c["parallel.processes"] == 1
        assert c.sources["parallel.processes"] == set_source(["2", "1"])


def test_overrides_may_be_a_generator_for_run_workflow_too() -> None:
    # run_workflow reads them more than once: the generator had been used up by the first
    # reading, and the run went on without them
    record = oc.run_workflow(EXAMPLE, None, (s for s in ["params.size=64"]), dry_run=True)
    assert record["params"]["size"] == 64


@pytest.mark.parametrize(
    ("backend", "said"),
    [
        ("lokal", "; did you mean 'local'?"),
        ("auto", "; None is that choice"),  # the CLI's word for it
    ],
)
def test_an_unknown_backend_is_refused_by_name(backend: str, said: str) -> None:
    # it had been a KeyError of the planners' table, from plan_cluster, start_cluster and
    # run_workflow alike
    config = oc.load_config(use_search_path=False)
    for call in (
        lambda: oc.plan_cluster(config, backend=backend),
        lambda: oc.start_cluster(config, backend=backend).__enter__(),
        lambda: oc.run_workflow(EXAMPLE, config, backend=backend, dry_run=True),
    ):
        with pytest.raises(oc.ConfigError) as info:
            call()
        assert str(info.value) == (
            f"backend: unknown backend '{backend}': expected local, cuda, ssh, mpi, or None "
            f"for cluster.backend's choice{said}"
        )


def test_overrides_with_a_loaded_config_are_read_as_with_a_config_file() -> None:
    # with a Config object, "parallel.processes" (no '=') set the key to null, and was
    # refused as "api: parallel.processes: ... got null"
    config = oc.load_config(use_search_path=False)
    with pytest.raises(oc.ConfigError) as info:
        oc.run_workflow(EXAMPLE, config, ["parallel.processes"], dry_run=True)
    assert [str(p) for p in info.value.problems] == [
        "--set: expected KEY=VALUE, got 'parallel.processes'"
    ]
    record = oc.run_workflow(EXAMPLE, config, ["parallel.processes=1"], dry_run=True)
    assert record["plan"]["layout"]["processes"] == 1
    with pytest.raises(oc.ConfigError) as info:
        oc.run_workflow(EXAMPLE, config, ["parallel.processes=0"], dry_run=True)
    assert str(info.value.problems[0]).startswith("--set: parallel.processes: ")


def test_an_unknown_key_of_a_loaded_config_suggests_the_near_one() -> None:
    # a bare KeyError: 'parallel.proceses' left the caller to look the spelling up
    config = oc.load_config(use_search_path=False)
    with pytest.raises(KeyError, match=r"unknown key; did you mean 'parallel\.processes'"):
        config["parallel.proceses"]
    assert config["parallel.processes"] == "auto"


def test_env_must_be_a_mapping() -> None:
    # a list of "NAME=value" was read as variable names, each refused as an unknown key
    with pytest.raises(TypeError, match=r"load_config: env must be a mapping like os\.environ"):
        oc.load_config(use_search_path=False, env=["OPENCLAW_PARALLEL__PROCESSES=2"])
    config = oc.load_config(use_search_path=False, env={"OPENCLAW_PARALLEL__PROCESSES": "2"})
    assert config["parallel.processes"] == 2


def test_a_leading_tilde_is_the_home_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A path given from Python passes no shell: ``run_workflow("~/wf.yaml")`` and
    ``load_config("~/c.config")`` had said "file not found", and a ``run_dir`` of ``~/runs/a``
    would have been a folder named ``~`` in the current one."""
    monkeypatch.setenv("HOME", str(tmp_path / "me"))
    (tmp_path / "me").mkdir()
    monkeypatch.chdir(tmp_path)
    shutil.copy(EXAMPLE, tmp_path / "me/ex.yaml")
    (tmp_path / "me/c.config").write_text("storage:\n  level: 7\n")
    config = oc.load_config("~/c.config")
    assert config["storage.level"] == 7
    assert config.sources["storage.level"].startswith(f"{tmp_path}/me/c.config:")
    plan = oc.run_workflow("~/ex.yaml", "~/c.config", run_dir="~/runs/a", dry_run=True)
    assert plan["status"] == "dry-run" and plan["workflow"] == "example-smoothing"
    with pytest.raises(oc.ConfigError) as info:
        oc.run_workflow(None, resume=Path("~/runs/none"))
    assert str(info.value).startswith(f"{tmp_path}/me/runs/none: no such directory")
    assert not (tmp_path / "~").exists()
