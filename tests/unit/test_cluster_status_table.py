"""`cluster status`'s table on an 80-column terminal: eight columns cut every worker's address
and config hash to "tcp://…" and "dc0eb…", the two things a user copies out of it."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from openclaw_dask.cli.cluster_cmd import workers_table

HASH = "dc0ebbf48f5553ac"


def facts(
    cores: list[int], config_hash: str | None = HASH, resources: dict[str, float] | None = None
) -> dict[str, Any]:
    return {
        "nthreads": 1,
        "affinity": cores,
        "allocator": "jemalloc",
        "memory_limit": 12 * 2**30,
        "resources": resources or {},
        "config_hash": config_hash,
    }


def shown(address: str, workers: dict[str, dict[str, Any]], width: int = 80) -> str:
    console = Console(width=width, record=True)
    console.print(workers_table(address, workers))
    text = console.export_text()
    assert "…" not in text and max(map(len, text.splitlines())) <= width, text
    return text


def rows(text: str) -> dict[str, list[str]]:
    """The table's rows by worker, each cell's folded lines joined again (a cell wrapped at a
    space loses it: "12.00GiB")."""
    found: list[list[str]] = []
    for line in text.split("┩", 1)[1].splitlines()[1:-1]:
        parts = [c.strip() for c in line.strip().strip("│").split("│")]
        if parts[0].startswith("tcp://"):
            found.append(parts)
        else:
            found[-1] = [a + b for a, b in zip(found[-1], parts, strict=True)]
    return {row[0]: row for row in found}


def test_a_shared_config_hash_is_in_the_title_and_each_worker_on_one_line() -> None:
    workers = {"tcp://10.231.1.2:40123": facts([0, 1, 2, 3]), "tcp://10.231.1.3:41123": facts([4])}
    text = shown("tcp://10.231.1.2:8786", workers)
    assert f"cluster at tcp://10.231.1.2:8786, config {HASH}" in text
    shown_rows = rows(text)
    assert set(shown_rows) == set(workers)
    assert shown_rows["tcp://10.231.1.2:40123"] == [
        "tcp://10.231.1.2:40123",
        "1",
        "0-3",
        "jemalloc",
        "12.00 GiB",
    ]
    assert shown_rows["tcp://10.231.1.3:41123"][2] == "4"
    assert "resources" not in text and "config hash" not in text


def test_hashes_that_differ_and_resources_have_their_columns_uncut() -> None:
    workers = {
        "tcp://10.231.1.2:40123": facts([0], resources={"GPU": 1}),
        "tcp://10.231.1.3:41123": facts([1], config_hash=None),  # a worker not started by us
        "tcp://10.231.1.4:42123": facts([2], config_hash="0123456789abcdef"),
    }
    text = shown("tcp://10.231.1.2:8786", workers)
    shown_rows = rows(text)
    assert set(shown_rows) == set(workers), text
    assert [shown_rows[w][-1] for w in sorted(workers)] == [HASH, "-", "0123456789abcdef"]
    assert shown_rows["tcp://10.231.1.2:40123"][1:] == [
        "1",
        "0",
        "jemalloc",
        "12.00GiB",
        "GPU=1",
        HASH,
    ]


def test_a_long_address_folds_and_keeps_every_character() -> None:
    long = "tcp://compute-node-017.cluster.example.org:40123"
    text = shown("tcp://compute-node-017.cluster.example.org:8786", {long: facts([0, 1])})
    [(address, row)] = rows(text).items()
    assert address == long and row[1:] == ["1", "0-1", "jemalloc", "12.00 GiB"], text
    assert HASH in text
