"""An output's checksums see the characters of its variable-length strings (a coordinate of
region names, say), not where numpy keeps them."""

from __future__ import annotations

from pathlib import Path

import dask.array as da
import numpy as np
import xarray as xr

from openclaw_dask.config import load_config
from openclaw_dask.workflows import zarrio

LONG = "northern hemisphere extratropics"  # longer than numpy keeps inside the array


def _checksums(path: Path, labels: list[str]) -> dict[str, str]:
    ds = xr.Dataset(
        {"t": ("region", da.from_array(np.arange(float(len(labels))), chunks=2))},
        coords={"region": np.array(labels, dtype=object)},
    )
    zarrio.write(ds, path, load_config(None, [], use_search_path=False)).compute()
    return zarrio.checksums(path)


def test_a_long_string_label_that_changed_changes_the_checksum(tmp_path: Path) -> None:
    """Two outputs whose region names differ in their first letter, or a letter moved from
    one name to the next, had one checksum: the arena offsets of the long strings were hashed,
    not their characters."""
    made = _checksums(tmp_path / "a.zarr", [LONG, "tropics", LONG])
    assert made == _checksums(tmp_path / "again.zarr", [LONG, "tropics", LONG])
    for n, labels in enumerate(
        (
            [LONG.upper(), "tropics", LONG],
            [LONG, "tropics", LONG[:-1] + "S"],
            [LONG + "t", "ropics", LONG],  # the same characters, split otherwise
        )
    ):
        other = _checksums(tmp_path / f"other-{n}.zarr", labels)
        assert other["region"] != made["region"], labels
        assert other["t"] == made["t"]  # the numbers are the same
