"""Every key of the schema: its default, one valid and one invalid value; schema <-> files."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from openclaw_dask.config import KEYS, ConfigError, load_config
from openclaw_dask.config.render import DOCS, SHIPPED_DEFAULT, markdown_reference, starter_config
from openclaw_dask.config.schema import KEYS_BY_PATH, NODE, defaults

# key -> (a valid YAML value, what it normalises to, an invalid YAML value)
EXAMPLES: dict[str, tuple[Any, Any, Any]] = {
    "cluster.backend": ("mpi", "mpi", "kubernetes"),
    "cluster.scheduler_address": ("tcp://10.0.0.1:8786", "tcp://10.0.0.1:8786", "10.0.0.1"),
    "cluster.dashboard_address": (":9000", ":9000", "127.0.0.1:99999"),
    "cluster.interface": ("lo", "lo", 7),
    "parallel.thread_pool_size": ("physical", "physical", 0),
    "parallel.processes": (2, 2, True),
    "parallel.thread_affinity": (["0-1", [2, 3]], [[0, 1], [2, 3]], "spread"),
    "parallel.deterministic_mode": (True, True, "yes please"),
    "distributed.nodes": (
        [{"host": "10.0.0.2", "resources": {"cpus": 8, "memory": "4GiB"}}],
        [
            {
                "host": "10.0.0.2",
                "ssh_port": 22,
                "port": None,
                "user": None,
                "python": None,
                "scheduler": False,
                "resources": {"cpus": 8, "memory": 4 * 2**30, "gpus": 0},
            }
        ],
        [{"ssh_port": 22}],
    ),
    "distributed.communication_backend": ("nccl", "nccl", "carrier-pigeon"),
    "distributed.rdma": (False, False, 1),
    "distributed.sync_interval": (10, 10, 0),
    "distributed.batch_size": (16, 16, 2.5),
    "distributed.compression": ("zstd", "zstd", "gzip"),
    "distributed.compression_level": (9, 9, 23),
    "distributed.clock_skew_tolerance": ("250ms", 0.25, "-1s"),
    "distributed.clock_skew_action": ("warn", "warn", "ignore"),
    "distributed.tls.ca_file": (None, None, ""),
    "distributed.tls.cert": (None, None, 3),
    "distributed.tls.key": (None, None, []),
    "distributed.ssh.known_hosts": (None, None, {"a": 1}),
    "distributed.ssh.identity_file": (None, None, False),
    "distributed.ssh.insecure_skip_host_key_check": (True, True, "true"),
    "gpu.devices": ([0, 2], [0, 2], [-1]),
    "gpu.stream_count": (4, 4, 17),
    "gpu.unified_memory": (True, True, None),
    "gpu.peer_access": (False, False, "off"),
    "gpu.async_prefetch": (False, False, 0),
    "memory.allocator": ("jemalloc", "jemalloc", "mimalloc"),
    "memory.per_thread_pool_size": ("2GiB", 2 * 2**30, "lots"),
    "memory.global_pool": ("512 MB", 512 * 10**6, -5),
    "memory.spill.target": (0.5, 0.5, 1.5),
    "memory.spill.spill": (False, False, True),
    "memory.spill.pause": (0.85, 0.85, 0),
    "memory.spill.terminate": (1, 1.0, "most"),
    "storage.codec": ("lz4", "lz4", "bzip2"),
    "storage.level": (5, 5, 10),
    "storage.shuffle": ("bit", "bit", "random"),
    "dask": ({"array": {"chunk-size": "64MiB"}}, {"array": {"chunk-size": "64MiB"}}, [1]),
}


def nested(path: str, value: Any) -> dict[str, Any]:
    """``("a.b.c", v)`` -> ``{"a": {"b": {"c": v}}}``."""
    out: Any = value
    for part in reversed(path.split(".")):
        out = {part: out}
    return out


def test_every_key_has_examples() -> None:
    assert set(EXAMPLES) == set(KEYS_BY_PATH)


@pytest.mark.parametrize("key", KEYS, ids=lambda k: k.path)
def test_key_is_documented_and_default_is_valid(key: Any) -> None:
    assert key.doc and len(key.doc) < 110, "one line of doc"
    # the default survives its own type check, also as written in the starter config
    assert key.type.check(key.default) == key.default
    assert key.type.check(yaml.safe_load(yaml.safe_dump(key.type.render(key.default)))) == (
        key.default
    )
    assert key.env_var == "OPENCLAW_" + key.path.upper().replace(".", "__")


@pytest.mark.parametrize("path", sorted(EXAMPLES))
def test_valid_value_is_accepted_and_normalised(path: str, write_config: Any) -> None:
    valid, normalised, _ = EXAMPLES[path]
    file = write_config(yaml.safe_dump(nested(path, valid)))
    config = load_config(file)
    assert config[path] == normalised
    assert config.sources[path] == f"{file}:{config.line_of[path]}"


@pytest.mark.parametrize("path", sorted(EXAMPLES))
def test_invalid_value_is_refused_with_key_and_line(path: str, write_config: Any) -> None:
    _, _, invalid = EXAMPLES[path]
    file = write_config("# a comment first\n" + yaml.safe_dump(nested(path, invalid)))
    with pytest.raises(ConfigError) as info:
        load_config(file)
    problems = [p for p in info.value.problems if p.key.startswith(path)]
    assert problems, info.value
    assert all(p.file == str(file) and p.line and p.line >= 2 for p in problems)
    assert "expected" in str(problems[0]) or "missing" in str(problems[0])


def test_shipped_default_config_is_the_schema_defaults() -> None:
    assert SHIPPED_DEFAULT.read_text() == starter_config(), (
        "configs/openclaw.config is stale: run python -m openclaw_dask.config.render"
    )
    assert load_config(SHIPPED_DEFAULT).values == defaults()


def test_docs_reference_lists_every_key() -> None:
    assert DOCS.read_text() == markdown_reference(), (
        "docs/config.md is stale: run python -m openclaw_dask.config.render"
    )
    for key in KEYS:
        assert f"`{key.path}`" in DOCS.read_text()


def test_docs_reference_lists_every_node_field() -> None:
    # a node's fields (port, python, resources.memory...) had no line in docs/config.md
    text = DOCS.read_text()
    for name, spec in NODE.fields.items():
        inner = getattr(spec.type, "fields", None)
        for field in [f"{name}.{sub}" for sub in inner] if inner else [name]:
            assert f"| `{field}` |" in text, field


def test_starter_config_for_a_machine_validates(hw: Any, write_config: Any) -> None:
    text = starter_config(hw(cores=4, numa=2, gpus=1))
    assert "4 logical" in text and "NVIDIA H200" in text
    assert load_config(write_config(text)).values == defaults()


def test_starter_config_header_gives_the_memory_in_words(hw: Any) -> None:
    # a machine's RAM is rarely a whole number of GiB: format_size wrote "24683792KiB"
    header = starter_config(hw(memory=24683792 * 2**10)).splitlines()[3:6]
    [line] = [line for line in header if "memory:" in line]
    assert "#   memory: 23.54 GiB;" in line, line


def test_docs_say_what_the_code_does_with_the_key(hw: Any) -> None:
    """Docs that had promised more than the code does (or left out what it does)."""
    from openclaw_dask.config.layout import resolve_backend
    from openclaw_dask.workflows.context import StepContext

    doc = {path: key.doc for path, key in KEYS_BY_PATH.items()}
    # auto picks mpi for the mpi transport, which the doc had left out
    values = {**defaults(), "distributed.communication_backend": "mpi"}
    assert resolve_backend(values, hw()) == "mpi"
    assert "mpi if the transport is mpi" in doc["cluster.backend"]
    # nothing fuses "items per task in map steps": only iterative ops use it, and a map op sees
    # it as StepContext.batch_size
    assert "map steps" not in doc["distributed.batch_size"]
    assert "halo exchange of iterative ops" in doc["distributed.batch_size"]
    assert isinstance(StepContext.batch_size, property)
    # the mode computes nothing differently: it refuses unlike workers and tells an op
    assert "ctx.deterministic" in doc["parallel.deterministic_mode"]
    assert isinstance(StepContext.deterministic, property)


@pytest.mark.parametrize("port", [0, 65535])
def test_every_port_from_0_to_65535_is_a_port(port: int) -> None:
    """The ends of the port range are ports (0: the OS picks one, as tests and a second
    cluster on one machine do); 65536 is not (mutation audit: ``port < 65535`` refused the
    last port unseen)."""
    address = f"127.0.0.1:{port}"
    config = load_config(overrides={"cluster.dashboard_address": address}, use_search_path=False)
    assert config["cluster.dashboard_address"] == address
    with pytest.raises(ConfigError, match=r"cluster\.dashboard_address: .*65536"):
        load_config(overrides={"cluster.dashboard_address": "127.0.0.1:65536"})


@pytest.mark.parametrize("zero", [0, "0 MB", "0"])
def test_a_memory_size_of_nothing_is_refused(zero: Any) -> None:
    """A size of 0 bytes is refused for every size key: Dask reads a memory limit of 0 as no
    limit at all, so a worker budget, or an ssh node's memory, given as 0 was silently
    unbounded (mutation audit: ``value >= 0`` for byte counts went unseen)."""
    for key in ("memory.global_pool", "memory.per_thread_pool_size"):
        with pytest.raises(ConfigError, match=rf"{key}: expected one of auto \| a size such as"):
            load_config(overrides={key: zero}, use_search_path=False)
    node = {"host": "10.0.0.2", "resources": {"memory": zero}}
    with pytest.raises(ConfigError, match=r"distributed\.nodes\[0\]\.resources\.memory: "):
        load_config(overrides={"distributed.nodes": [node]}, use_search_path=False)


@pytest.mark.parametrize("zero", [0, 0.0, "0s", "0ms"])
def test_a_clock_skew_tolerance_of_nothing_is_refused(zero: Any) -> None:
    """Durations are positive: a clock skew tolerance of 0 would refuse (or warn of) every
    worker, whose clock is never off by exactly nothing (mutation audit: ``seconds < 0`` went
    unseen)."""
    key = "distributed.clock_skew_tolerance"
    with pytest.raises(ConfigError, match=rf"{key}: expected a positive duration"):
        load_config(overrides={key: zero}, use_search_path=False)
    assert load_config(overrides={key: "1ms"}, use_search_path=False)[key] == 0.001


@pytest.mark.parametrize("endless", ["1e400s", "1e309", float("inf"), float("nan")])
def test_an_endless_or_undefined_duration_is_refused(endless: Any) -> None:
    """``1e400s`` overflowed in Dask's parser (exit 1, "OverflowError: cannot convert float
    infinity to integer", from ``benchmark --stress`` and ``tune --budget`` too), and YAML's
    ``.inf`` and ``.nan`` were taken: a NaN tolerance compares false with every clock skew."""
    key = "distributed.clock_skew_tolerance"
    with pytest.raises(ConfigError, match=rf"{key}: expected a positive duration"):
        load_config(overrides={key: endless}, use_search_path=False)


def test_a_size_too_large_to_count_is_refused() -> None:
    """``1e400B`` overflowed in Dask's parser: exit 1 with "OverflowError" from any command's
    ``--set memory.per_thread_pool_size=1e400B``."""
    key = "memory.per_thread_pool_size"
    with pytest.raises(ConfigError, match=rf"{key}: expected one of auto \| a size such as"):
        load_config(overrides={key: "1e400B"}, use_search_path=False)
