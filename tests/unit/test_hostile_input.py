"""Input built to hurt (or typed badly) is one line and exit 2, at once, through the CLI.

Each case once hung, ran out of memory or ended in an internal error: a thread count of 10**18,
a "billion laughs" of YAML aliases, ``/dev/zero`` as the config, a param spec whose ``min`` is a
word. They run through the real command (click's runner) on real files.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from openclaw_dask.cli.main import cli
from tests.conftest import ROOT


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run from a scratch folder, so nothing a command writes lands in the repository."""
    monkeypatch.chdir(tmp_path)


def run(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args))


def refused(result: Any) -> list[str]:
    """The ``error:`` lines of a run that must have exited 2 without a traceback."""
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    assert "Traceback" not in result.output
    return [line for line in result.output.splitlines() if line.startswith("error:")]


def bomb(levels: int) -> str:
    lines = ["a0: &a0 [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]"]
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    return "\n".join(lines) + "\n"


@pytest.mark.timeout(30)
@pytest.mark.parametrize("threads", ["100000", "99999999999999999999999999"])
def test_config_validate_refuses_a_thread_count_the_machine_cannot_run(
    tmp_path: Path, threads: str
) -> None:
    file = tmp_path / "threads.config"
    file.write_text(f"parallel:\n  thread_pool_size: {threads}\n")
    [line] = refused(run("config", "validate", str(file)))
    assert f"threads.config:2: parallel.thread_pool_size: {threads} threads but only" in line
    assert "use at most" in line
    [line] = refused(run("config", "plan", str(file)))
    assert "use at most" in line


@pytest.mark.timeout(30)
def test_config_validate_refuses_aliases(tmp_path: Path) -> None:
    file = tmp_path / "bomb.config"
    file.write_text(bomb(7) + "parallel:\n  thread_affinity: *a6\n")
    [line] = refused(run("config", "validate", str(file)))
    assert line.endswith(
        "bomb.config:1: YAML anchors and aliases are not supported: write the value out"
    )


@pytest.mark.timeout(30)
def test_config_validate_refuses_a_device() -> None:
    [line] = refused(run("config", "validate", "/dev/zero"))
    assert line == (
        "error: /dev/zero: is not a regular file (a device, pipe or socket), expected a YAML file"
    )


def test_set_takes_floats_in_scientific_notation() -> None:
    result = run("config", "show", "--json", "--set", "memory.spill.target=6e-1")
    assert result.exit_code == 0, result.output
    assert '"target": 0.6' in result.output


def _workflow(tmp_path: Path, old: str, new: str) -> Path:
    text = (ROOT / "workflows/example.yaml").read_text()
    assert old in text
    path = tmp_path / "wf.yaml"
    path.write_text(text.replace(old, new))
    return path


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (
            "default: 1024, min: 16",
            "default: 1024, min: sixteen",
            "wf.yaml:7: params.size.min: expected int, got 'sixteen'",
        ),
        (
            "seed:  {type: int, default: 42,",
            "seed:  {type: int, default: 42, choices: 5,",
            "wf.yaml:9: params.seed.choices: expected a list of int values, got 5",
        ),
        (
            "seed:  {type: int, default: 42,",
            "seed:  {type: int, default: x,",
            "wf.yaml:9: params.seed.default: expected int, got 'x'",
        ),
    ],
    ids=["min-a-word", "choices-a-number", "default-a-word"],
)
def test_submit_reports_a_bad_param_spec_once(
    tmp_path: Path, old: str, new: str, expected: str
) -> None:
    wf = _workflow(tmp_path, old, new)
    [line] = refused(run("submit", "--dry-run", str(wf)))  # no "is not a parameter" after it
    assert line.endswith(expected), line


@pytest.mark.timeout(30)
def test_submit_refuses_aliases_in_a_workflow(tmp_path: Path) -> None:
    wf = _workflow(tmp_path, "name: example-smoothing\n", bomb(7) + "name: example-smoothing\n")
    wf.write_text(wf.read_text().replace('{size: "${params.size}"', "{size: *a6"))
    [line] = refused(run("submit", "--dry-run", str(wf)))
    # the first anchor, below the file's three comment lines
    assert line.endswith(
        "wf.yaml:4: YAML anchors and aliases are not supported: write the value out"
    )


def test_submit_takes_a_float_param_in_scientific_notation() -> None:
    result = run(
        "submit",
        "--dry-run",
        str(ROOT / "workflows/climate.yaml"),
        "--set",
        "params.resolution=2e0",
        "--set",
        "params.years=1",
    )
    assert result.exit_code == 0, result.output
    assert "dry run: nothing started" in result.output


def test_an_empty_run_dir_is_not_the_current_folder(tmp_path: Path) -> None:
    """``--run-dir ''`` wrote the run into the folder the command ran in."""
    [line] = refused(run("submit", str(ROOT / "workflows/example.yaml"), "--run-dir", ""))
    assert line == "error: --run-dir: expected a folder, got an empty path"
    assert not (tmp_path / "run.json").exists() and not (tmp_path / "runs").exists()


def test_a_path_param_that_names_an_unknown_user_is_bad_input() -> None:
    """It was a RuntimeError from Path.expanduser: exit 1."""
    [line] = refused(
        run(
            "submit",
            "--dry-run",
            str(ROOT / "workflows/climate.yaml"),
            "--set",
            "params.initial=~nosuchuser/x.zarr",
        )
    )
    assert line.startswith("error: --set: params.initial: ~nosuchuser: no such user's home")


DASK_BAD = {
    "worker:\n      memory:\n        target: abc": "dask.distributed.worker.memory.target: "
    "expected a fraction of the worker's memory between 0 and 1, or false",
    "worker:\n      memory:\n        terminate: 7": "dask.distributed.worker.memory.terminate",
    "worker:\n      daemon: maybe": "dask.distributed.worker.daemon: expected true or false",
    "scheduler:\n      allowed-failures: many": "dask.distributed.scheduler.allowed-failures: "
    "expected an integer (Dask's default 3), got 'many'",
    "comm:\n      compression: zsdt": "dask.distributed.comm.compression: expected one of",
}


@pytest.mark.parametrize("text", sorted(DASK_BAD))
def test_raw_dask_values_of_the_wrong_kind(tmp_path: Path, text: str) -> None:
    """They passed validate and reached Dask (a fraction of 7, allowed-failures 'many')."""
    (tmp_path / "c.config").write_text(f"dask:\n  distributed:\n    {text}\n")
    [line] = refused(run("config", "validate", "c.config"))
    assert f": {DASK_BAD[text]}" in line, line


def test_raw_dask_keys_near_a_known_one_are_refused_others_are_not(tmp_path: Path) -> None:
    (tmp_path / "c.config").write_text("dask:\n  distribted:\n    x: 1\n")
    [line] = refused(run("config", "validate", "c.config"))
    assert line.endswith("dask.distribted.x: unknown dask key; did you mean 'distributed'?")
    # a library's own keys, Dask's strings for numbers, a nanny's environment: accepted
    (tmp_path / "c.config").write_text(
        "dask:\n  jobqueue:\n    slurm: {cores: 4}\n  distributed:\n    scheduler:\n"
        "      worker-saturation: inf\n    nanny:\n      environ:\n"
        '        OMP_NUM_THREADS: "2"\n    comm:\n      compression: zstd\n'
    )
    result = run("config", "validate", "c.config")
    assert result.exit_code == 0, result.output


# found by an exploratory pass of config and command-line input (2026-12-03)
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (  # dask's parse_timedelta("") raised IndexError: exit 1
            'distributed:\n  clock_skew_tolerance: ""\n',
            "c.config:2: distributed.clock_skew_tolerance: expected a positive duration",
        ),
        (
            'dask:\n  distributed:\n    comm:\n      timeouts:\n        connect: ""\n',
            "c.config:5: dask.distributed.comm.timeouts.connect: expected a duration",
        ),
        (  # dask's parse_bytes("") is 1 byte
            'memory:\n  global_pool: ""\n',
            "c.config:2: memory.global_pool: expected one of auto | a size",
        ),
        (
            'dask:\n  array:\n    chunk-size: ""\n',
            "c.config:3: dask.array.chunk-size: expected a size",
        ),
        (  # was "1 MB gives each worker 1 MB"
            "memory:\n  per_thread_pool_size: 100\n",
            "c.config:2: memory.per_thread_pool_size: 100 bytes gives each worker 100 bytes",
        ),
        (
            "distributed:\n  nodes: [{host: a}]\n  ssh:\n    known_hosts: .\n",
            "c.config:4: distributed.ssh.known_hosts: is a folder, not a file:",
        ),
        (
            "parallel:\n\tprocesses: 2\n",
            "c.config:2: YAML syntax error: found character '\\t' that cannot start any token: "
            "YAML indents with spaces, not tabs",
        ),
        (  # a node's budget was planned as it was (memory_limit 100): the local floor holds
            "cluster: {backend: ssh}\ndistributed:\n  nodes:\n    - {host: a}\n"
            "    - {host: b, resources: {memory: 100}}\n",
            "c.config:5: distributed.nodes[1].resources.memory: 100 bytes gives each of the "
            "node's 1 worker(s) 100 bytes",
        ),
        (  # one problem: not also "ssh needs at least one entry in distributed.nodes"
            "cluster: {backend: ssh}\ndistributed:\n  nodes:\n"
            '    - {host: a, resources: {memory: ""}}\n',
            "c.config:4: distributed.nodes[0].resources.memory: expected null or a size",
        ),
        # second part of that pass, mended 2026-12-04
        (  # was the generic "expected false | one of compact, scatter | a list of ..."
            "parallel:\n  thread_affinity: ['1-0']\n",
            "c.config:2: parallel.thread_affinity[0]: core range '1-0' runs backwards; "
            "did you mean '0-1'?",
        ),
        (  # was "GPU 0, 0 not present", or a cluster planning two workers on one GPU
            "gpu:\n  devices: [0, 0]\n",
            "c.config:2: gpu.devices: GPU 0 listed more than once",
        ),
        (  # was "unknown key" and nothing more
            "cluster: {backend: ssh}\ndistributed:\n  nodes:\n    - {host: a, gpus: 2}\n",
            "c.config:4: distributed.nodes[0].gpus: unknown key; did you mean 'resources.gpus'?",
        ),
        (  # memory.spill refused this order, the raw dask: section passed it on to Dask
            "dask:\n  distributed:\n    worker:\n      memory:\n        target: 0.9\n"
            "        spill: 0.5\n",
            "c.config:6: dask.distributed.worker.memory.spill: 0.5 is below "
            "dask.distributed.worker.memory.target (0.9); the fractions must rise",
        ),
        (
            "dask:\n  distributed.worker.memory.pause: 0.5\n",
            "c.config:2: dask.distributed.worker.memory.pause: 0.5 is below memory.spill.spill",
        ),
        (  # a login name with a space (or "root; rm -rf /") had passed
            "distributed:\n  nodes:\n    - {host: a, user: al ice}\n",
            "c.config:3: distributed.nodes[0].user: expected null or a login name (letters, "
            "digits, '.', '_', '-'), got 'al ice'",
        ),
        (  # passed the check, and Dask refused it at the start ("ipv6 needs brackets")
            "cluster:\n  dashboard_address: '::1:8787'\n",
            "c.config:2: cluster.dashboard_address: expected an IPv4 address or host name "
            "before the port: Dask's dashboard takes no IPv6 address (':8787' binds every IPv4 "
            "interface), got '::1:8787'",
        ),
        (  # the form that message had suggested, and Dask's dashboard splits at every colon:
            # "Cluster failed to start: ['[', '', '1]', '8787']", a run directory left behind
            "cluster:\n  dashboard_address: '[::1]:8787'\n",
            "c.config:2: cluster.dashboard_address: expected an IPv4 address or host name "
            "before the port: Dask's dashboard takes no IPv6 address (':8787' binds every IPv4 "
            "interface), got '[::1]:8787'",
        ),
        (  # a nullable key's own message had been replaced by "expected null or host:port"
            "cluster:\n  dashboard_address: 127.0.0.1:99999\n",
            "c.config:2: cluster.dashboard_address: expected a port from 0 to 65535 in "
            "'127.0.0.1:99999'",
        ),
        (  # dotted and nested forms of one key: the later one had won without a word
            "memory.allocator: jemalloc\nmemory:\n  allocator: tcmalloc\n",
            "c.config:3: memory.allocator: duplicate key (first defined on line 1, dotted "
            "there or here)",
        ),
        (
            "memory:\n  spill.target: 0.5\n  spill:\n    target: 0.55\n",
            "c.config:4: memory.spill.target: duplicate key (first defined on line 2",
        ),
        (
            "dask:\n  distributed.comm.timeouts.tcp: 5s\n  distributed:\n"
            "    comm:\n      timeouts: {tcp: 6s}\n",
            "c.config:5: dask.distributed.comm.timeouts.tcp: duplicate key (first defined on "
            "line 2",
        ),
        (  # Dask reads "-" and "_" in its keys alike
            "dask:\n  distributed.worker.memory.monitor_interval: 1s\n"
            "  distributed.worker.memory.monitor-interval: 2s\n",
            "c.config:3: dask.distributed.worker.memory.monitor-interval: given twice in the "
            "dask section (as distributed.worker.memory.monitor_interval too)",
        ),
        (  # was "memory.spill.spill: 0.7 is below ...", a default, and no line
            "memory:\n  spill:\n    target: 0.75\n",
            "c.config:3: memory.spill.target: 0.75 is above memory.spill.spill (0.7, its "
            "default); the fractions must rise",
        ),
        (
            "dask:\n  distributed.worker.memory.target: 0.9\n",
            "c.config:2: dask.distributed.worker.memory.target: 0.9 is above memory.spill.spill "
            "(0.7, its default)",
        ),
        (  # the floor was worked out from memory.spill.pause (0.8), which Dask did not get
            "memory:\n  per_thread_pool_size: 300MB\ndask:\n"
            "  distributed.worker.memory: {target: 0.2, spill: 0.25, pause: 0.3}\n",
            "c.config:2: memory.per_thread_pool_size: 300 MB gives each worker 300 MB, and a "
            "worker stops taking tasks at 30% of it (dask.distributed.worker.memory.pause)",
        ),
        (  # was three lines, none with a file or line
            "distributed:\n  communication_backend: tls\n",
            "c.config:2: distributed.communication_backend: tls needs distributed.tls.ca_file, "
            "distributed.tls.cert and distributed.tls.key set (PEM files)",
        ),
    ],
)
def test_config_values_found_bad_by_exploring(tmp_path: Path, text: str, expected: str) -> None:
    (tmp_path / "c.config").write_text(text)
    [line] = refused(run("config", "validate", "c.config"))
    assert line.startswith(f"error: {expected}"), line


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("tune", "--budget", ""), "error: --budget: expected a positive duration"),
        # "" was taken for no --stress: the whole benchmark ran
        (("benchmark", "--stress", ""), "error: --stress: expected a positive duration"),
        (("benchmark", "--json", ""), "error: --json: expected a file path, got ''"),
    ],
)
def test_empty_option_values_are_bad_input(args: tuple[str, ...], expected: str) -> None:
    [line] = refused(run(*args))
    assert line.startswith(expected), line


def test_the_config_the_search_order_found_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "x1.config").write_text("parallel:\n\tprocesses: 2\n")
    monkeypatch.setenv("OPENCLAW_CONFIG", "x1.config")
    result = run("config", "validate")
    refused(result)
    assert "x1.config: invalid" in result.output and "openclaw.config" not in result.output


def test_no_config_file_found_is_not_called_openclaw_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # no file anywhere in the search order: the bad value is on the built-in defaults, and
    # naming "openclaw.config" sent the user looking for a file that does not exist
    monkeypatch.delenv("OPENCLAW_CONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    result = run("config", "validate", "--set", "distributed.batch_size=0")
    refused(result)
    assert "--set: invalid (on the built-in defaults)" in result.output
    assert "openclaw.config" not in result.output


def test_cluster_up_points_at_the_backend_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENCLAW_STATE_DIR", str(tmp_path / "state"))
    (tmp_path / "c.config").write_text("cluster:\n  backend: mpi\n")
    [line] = refused(run("cluster", "up", "--config", "c.config"))
    assert line.startswith("error: c.config:2: cluster.backend: cluster up starts local, cuda")


def test_a_thread_count_beyond_the_machine_is_said_beside_an_uneven_split(
    tmp_path: Path,
) -> None:
    # "use a multiple of 3" alone was met by 999, which the next run refused as too many
    (tmp_path / "c.config").write_text("parallel:\n  thread_pool_size: 1000\n  processes: 3\n")
    uneven, too_many = refused(run("config", "validate", "c.config"))
    assert "1000 threads do not split evenly over 3 processes" in uneven
    assert "c.config:2: parallel.thread_pool_size: 1000 threads but only" in too_many
    assert "use at most" in too_many


def test_backend_option_suggests_and_takes_auto(tmp_path: Path) -> None:
    for command in (("config", "plan"), ("submit", "--dry-run")):
        result = run(*command, "--backend", "locl")
        assert result.exit_code == 2, result.output
        assert "'locl' is not one of 'auto', 'local'" in result.output
        assert "; did you mean 'local'?" in result.output
    result = run("config", "plan", "--backend", "auto")
    assert result.exit_code == 0, result.output
    assert "auto resolved to 'local'" in result.output


def test_options_naming_the_wrong_kind_of_file_say_so(tmp_path: Path) -> None:
    (tmp_path / "bin.config").write_text("parallel:\n  processes: 1\n")
    [line] = refused(run("tune", "--workload", "bin.config"))
    assert (
        line == "error: --workload: bin.config is a config, not a workload: a config is given "
        "with --config"
    )
    [line] = refused(run("tune", "--workload", "nope.yaml"))
    assert line == "error: --workload: file not found: nope.yaml"
    # "cpus" is nearest "gpus" by spelling; the field it names is logical_cores
    (tmp_path / "hw.json").write_text('{"cpus": 4, "logical_cores": 4, "memory": 8000000000}')
    [line] = refused(run("config", "plan", "--hardware", "hw.json"))
    assert line == "error: hw.json: cpus: unknown field; did you mean 'logical_cores'?"


def _snapshot(folder: Path) -> dict[str, bytes | None]:
    """What is in ``folder``, below it too: each path and a file's bytes."""
    return {
        str(p.relative_to(folder)): p.read_bytes() if p.is_file() else None
        for p in sorted(folder.rglob("*"))
    }


@pytest.mark.parametrize("where", ["not-empty", "below-a-file", "in-use", "proc"])
def test_a_dry_run_refuses_the_run_dir_the_run_refuses_with_the_same_words(
    tmp_path: Path, where: str
) -> None:
    """Found by an exploratory test of workflow submit: ``--dry-run`` said "nothing started"
    with exit 0 for a --run-dir that the run then refused with exit 2. Neither leaves
    anything behind."""
    from openclaw_dask.workflows import lock

    (tmp_path / "afile").write_text("mine")
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "run.json").write_text("{}")
    (tmp_path / "busy").mkdir()
    run_dir = {
        "not-empty": "old",
        "below-a-file": "afile/sub",
        "in-use": "busy",
        "proc": "/proc/openclaw-x",  # root may not make it either
    }[where]
    held = lock.hold(tmp_path / "busy")
    try:
        before = _snapshot(tmp_path)
        args = ["submit", str(ROOT / "workflows/example.yaml"), "--no-report", "--run-dir", run_dir]
        dry = refused(run(*args, "--dry-run"))
        real = refused(run(*args))
        assert _snapshot(tmp_path) == before
    finally:
        held.close()
    said = {
        "not-empty": "error: old: run directory exists and is not empty; pass --resume",
        "below-a-file": "error: afile/sub: cannot write a run directory here: Not a directory",
        "in-use": "error: busy: another openclaw-dask run is using this run directory (pid ",
        "proc": "error: /proc/openclaw-x: cannot write a run directory here: ",
    }[where]
    assert dry == real and len(dry) == 1 and dry[0].startswith(said), dry


def test_a_dry_run_makes_no_run_dir_it_accepts(tmp_path: Path) -> None:
    """Its write test makes the folders the run would make, and removes them again."""
    result = run("submit", str(ROOT / "workflows/example.yaml"), "--dry-run", "--run-dir", "a/b/c")
    assert result.exit_code == 0, result.output
    assert "dry run: nothing started, nothing written" in result.output
    assert not (tmp_path / "a").exists()


@pytest.mark.parametrize("run_dir", ["N", "N/run", "a/b/N"])
def test_a_run_dir_name_too_long_for_the_file_system_is_bad_input(
    tmp_path: Path, run_dir: str
) -> None:
    """``Path.exists`` raised for a name too long (ENAMETOOLONG) where its parent exists: an
    internal error with exit 1, in the run and its dry run; and below a folder that did not
    exist, the refused run left the folders it had made (``a/b``)."""
    run_dir = run_dir.replace("N", "n" * 300)
    args = ["submit", str(ROOT / "workflows/example.yaml"), "--no-report", "--run-dir", run_dir]
    for dry in (["--dry-run"], []):
        [line] = refused(run(*args, *dry))
        assert line == f"error: {run_dir}: cannot write a run directory here: File name too long"
        assert [p.name for p in tmp_path.iterdir()] == ["home"], dry


@pytest.mark.timeout(30)
def test_yaml_nested_hundreds_of_levels_deep_is_refused_at_its_line(tmp_path: Path) -> None:
    """Found by an exploratory test of workflow submit: ``steps: [[[[...]]]]`` 400 levels deep
    (or a config value, or a --set value) was a RecursionError, exit 1."""
    deep = "[" * 400 + "]" * 400
    (tmp_path / "deep.yaml").write_text(f"name: x\nsteps: {deep}\n")
    [line] = refused(run("submit", "--dry-run", "deep.yaml"))
    assert line == (
        "error: deep.yaml:2: nested too deeply (more than 100 levels of lists and mappings)"
    )
    block = "".join(f"{'  ' * i}k{i}:\n" for i in range(1, 400))
    (tmp_path / "deep.config").write_text(f"parallel:\n{block}")
    [line] = refused(run("config", "validate", "deep.config"))
    assert line.startswith("error: deep.config:100: nested too deeply"), line
    # a --set value that is not YAML is its text, which the parameter refuses as such
    [line] = refused(
        run(
            "submit",
            "--dry-run",
            str(ROOT / "workflows/example.yaml"),
            "--set",
            f"params.size={deep}",
        )
    )
    assert line.startswith("error: --set: params.size: expected int, got '[[[["), line


def test_yaml_nested_as_deep_as_allowed_is_read() -> None:
    """The limit refuses only what no file needs: 100 levels, the top one counted, are read."""
    from openclaw_dask.config.yamlsource import MAX_DEPTH, parse_yaml

    inner = MAX_DEPTH - 1  # below the top level's mapping
    data = parse_yaml("v: " + "[" * inner + "]" * inner, "x").data["v"]
    for _ in range(inner - 1):
        [data] = data
    assert data == []


def test_a_dry_run_without_run_dir_refuses_the_runs_folder_the_run_refuses(
    tmp_path: Path,
) -> None:
    """A ``runs`` that is a file: the dry run had said "nothing started" with exit 0, and the
    run then refused ``runs/<workflow>/<time>``. Without ``runs``, the dry run leaves none."""
    args = ["submit", str(ROOT / "workflows/example.yaml"), "--no-report"]
    accepted = run(*args, "--dry-run")
    assert accepted.exit_code == 0, accepted.output
    assert not (tmp_path / "runs").exists()
    (tmp_path / "runs").write_text("mine")
    before = _snapshot(tmp_path)
    [dry] = refused(run(*args, "--dry-run"))
    [real] = refused(run(*args))
    assert (
        dry == "error: runs/example-smoothing: cannot write a run directory here: Not a directory"
    )
    assert real.startswith("error: runs/example-smoothing/") and real.endswith(": Not a directory")
    assert _snapshot(tmp_path) == before
