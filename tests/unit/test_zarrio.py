"""Output checksums: what a resume compares a step's outputs by, on real Zarr stores."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import xarray as xr
import zarr
from xarray.coding.variables import SerializationWarning

from openclaw_dask.config import load_config
from openclaw_dask.workflows import zarrio


def _store(
    path: Path,
    values: np.ndarray,
    chunks: int,
    codec: str = "lz4",
    attrs: dict[str, Any] | None = None,
) -> dict[str, str]:
    """``values`` written as a run writes an output (chunked, the config's codec), with the
    dataset's ``attrs``; its checksums."""
    config = load_config(overrides={"storage.codec": codec}, use_search_path=False)
    dims = ("y", "x")[: values.ndim]
    ds = xr.Dataset({"t": (dims, values)}, attrs=attrs or {}).chunk({dims[0]: chunks})
    zarrio.write(ds, path, config).compute()
    return zarrio.checksums(path)


def test_checksums_see_every_value_and_the_shape_but_not_the_chunks_or_codec(
    tmp_path: Path,
) -> None:
    """A resume skips a step whose input's checksums came out as before, so a checksum must
    change with any value of the array, and with its shape or dtype, and with nothing else: a
    checksum that left out the last row of each slab, or the shape, let a changed input pass
    as the old one (mutation audit: both went unseen, every test compared a run with itself).
    """
    values = np.arange(48, dtype=np.float64).reshape(8, 6)
    base = _store(tmp_path / "base.zarr", values, chunks=4)
    assert set(base) == {"t", zarrio.ATTRS_CHECKSUM}
    # the same values in other chunks and with another codec: the same checksum
    assert _store(tmp_path / "rechunked.zarr", values, chunks=3, codec="none") == base
    # any one value changed, wherever it sits in its chunk: another checksum
    for row in (0, 3, 4, 7):
        changed = values.copy()
        changed[row, 5] += 1.0
        assert _store(tmp_path / f"row{row}.zarr", changed, chunks=4) != base, row
    # the same bytes in another shape or type: another checksum
    assert _store(tmp_path / "flat.zarr", values.reshape(48), chunks=24) != base
    assert _store(tmp_path / "ints.zarr", values.view(np.int64), chunks=4) != base
    # the same values under other attributes (an op reads its input's meaning from them: the
    # climate model its physics): another checksum of the attributes, the same of the values
    other = _store(tmp_path / "attrs.zarr", values, chunks=4, attrs={"A": 230.0})
    assert other[zarrio.ATTRS_CHECKSUM] != base[zarrio.ATTRS_CHECKSUM]
    assert other["t"] == base["t"]
    # the store on disk changed after the write (a chunk rewritten): the checksum says so
    zarr.open_array(tmp_path / "base.zarr/t", mode="r+")[7, 0] = -1.0
    assert zarrio.checksums(tmp_path / "base.zarr") != base


def test_the_config_s_codec_level_and_shuffle_are_those_of_the_stores(tmp_path: Path) -> None:
    """``storage.codec``, ``level`` and ``shuffle`` are what the outputs are compressed with,
    as the store's own metadata says to any reader (mutation audit: a fixed level and swapped
    byte/bit shuffles went unseen: the outputs read back the same either way)."""
    for codec, level, shuffle, blosc in [
        ("zstd", 7, "bit", "bitshuffle"),
        ("lz4", 2, "byte", "shuffle"),
        ("zlib", 9, "none", "noshuffle"),
    ]:
        sets = {"storage.codec": codec, "storage.level": level, "storage.shuffle": shuffle}
        config = load_config(overrides=sets, use_search_path=False)
        path = tmp_path / f"{codec}.zarr"
        ds = xr.Dataset({"t": (("y", "x"), np.ones((4, 4)))}).chunk({"y": 2})
        zarrio.write(ds, path, config).compute()
        [compressor] = zarr.open_array(path / "t", mode="r").metadata.codecs[1:]
        said = compressor.to_dict()["configuration"]
        assert (said["cname"], said["clevel"], said["shuffle"]) == (codec, level, blosc)
    config = load_config(overrides={"storage.codec": "none"}, use_search_path=False)
    zarrio.write(ds, tmp_path / "none.zarr", config).compute()
    assert len(zarr.open_array(tmp_path / "none.zarr/t", mode="r").metadata.codecs) == 1


def test_each_dask_chunk_is_one_zarr_chunk_of_the_largest_size(tmp_path: Path) -> None:
    """Zarr chunks are as large as the dask chunks, the last one shorter, so each task writes
    whole chunks of its own: sized by the short last chunk they had been 2 rows where a task
    wrote 4 (each task several files), or a write xarray refuses when the sizes do not divide
    (mutation audit: ``c[-1]`` for ``c[0]`` went unseen; every test grid divided evenly)."""
    config = load_config(use_search_path=False)
    ds = xr.Dataset({"t": (("y", "x"), np.arange(60.0).reshape(10, 6))})
    for chunks in [(4, 4, 2), (3, 4, 1, 2)]:  # regular with a short end; irregular
        path = tmp_path / f"{len(chunks)}.zarr"
        zarrio.write(ds.chunk({"y": chunks}), path, config).compute()
        stored = zarr.open_array(path / "t", mode="r")
        assert stored.chunks == (4, 6), chunks
        assert (stored[:] == ds["t"].values).all()
        assert zarrio.open_output(path)["t"].chunks == ((4, 4, 2), (6,))


def test_a_variable_s_own_dtype_and_time_units_are_written_as_xarray_writes_them(
    tmp_path: Path,
) -> None:
    """An op that asks for float32 storage, or dates in given CF units, gets them, as from
    ``to_zarr``: the codec and chunks the write passes per variable had replaced each
    variable's whole ``.encoding``, so a float32 request was stored as float64 and a time
    axis got xarray's own units."""
    config = load_config(use_search_path=False)
    field = xr.DataArray(np.linspace(0.0, 1.0, 12).reshape(3, 4), dims=("time", "x"))
    field.encoding["dtype"] = "float32"
    time = xr.date_range("0001-01-16", periods=3, freq="MS", calendar="julian", use_cftime=True)
    ds = xr.Dataset({"field": field}, coords={"time": time}).chunk({"time": 2})
    ds["time"].encoding.update(units="days since 0001-01-01", calendar="julian")
    # an input store's storage keys travel with what an op read, and must not clash
    ds["field"].encoding.update(chunks=(3, 4), preferred_chunks={"time": 3})
    zarrio.write(ds, tmp_path / "out.zarr", config).compute()
    assert zarr.open_array(tmp_path / "out.zarr/field", mode="r").dtype == np.float32
    assert zarr.open_array(tmp_path / "out.zarr/field", mode="r").chunks == (2, 4)
    raw = xr.open_zarr(tmp_path / "out.zarr", decode_times=False, consolidated=False)
    assert raw["time"].attrs["units"] == "days since 0001-01-01"
    back = zarrio.open_output(tmp_path / "out.zarr")
    assert back["field"].dtype == np.float32
    assert list(back.indexes["time"]) == list(time)


def test_records_that_do_not_fit_a_store_are_named_and_fitting_ones_are_not(
    tmp_path: Path,
) -> None:
    """xarray appends what it is given: a cast with a loss (2.5 into an int store was kept
    as 2), a variable missing or new (the store then no longer opened) or of another size.
    A lossless cast (float32 into float64), a variable cast on purpose by its own encoding
    and CF-encoded times are not named."""
    config = load_config(use_search_path=False)
    path = tmp_path / "rec.zarr"
    first = xr.Dataset(
        {
            "count": ("time", np.array([1])),
            "mean": ("time", np.array([1.0])),
            "low": ("time", np.array([1.0], dtype="float32")),
            "packed": ("time", np.array([1.0], dtype="float32")),
            "gone": ("time", np.array([1.0])),
            "profile": (("time", "y"), np.zeros((1, 3))),
        },
        coords={"time": np.array(["2000-01-01"], dtype="datetime64[ns]")},
    ).chunk()
    zarrio.write(first, path, config).compute()
    later = xr.Dataset(
        {
            "count": ("time", np.array([2.5])),  # float into int: named
            "mean": ("time", np.array([2.0], dtype="float32")),  # float32 into float64: not
            "low": ("time", np.array([2.0])),  # float64 into float32: named
            "packed": ("time", np.array([2.0])),
            "fresh": ("time", np.array([2.0])),  # new: named; "gone" missing: named
            "profile": (("time", "y"), np.zeros((1, 4))),  # another size: named
        },
        coords={"time": np.array(["2000-01-02"], dtype="datetime64[ns]")},
    ).chunk()
    later["packed"].encoding["dtype"] = "float32"  # the op's own choice of stored dtype
    assert sorted(zarrio.append_problems(later, path, "time")) == [
        "'count' is float64, stored as int64",
        "'fresh' is new",
        "'gone' is not in the records",
        "'low' is float64, stored as float32",
        "'profile' has (y: 4) besides time, stored with (y: 3)",
    ]
    assert zarrio.append_problems(first, path, "time") == []  # the same again: fits
    assert zarrio.append_problems(later, tmp_path / "none.zarr", "time") == []  # none yet


def test_a_variable_of_python_objects_is_named_in_the_refusal(tmp_path: Path) -> None:
    """xarray refuses it as "unable to infer dtype on variable None": the op's author could
    not tell which of their variables it was (found writing an own workflow, session 44)."""
    config = load_config(use_search_path=False)
    held = np.array([{"a": 1}, None, 3], dtype=object)
    ds = xr.Dataset({"label": ("x", held), "t": ("x", np.arange(3.0))}).chunk({"x": 3})
    # (the warning is xarray's, as it loads the objects to look at them)
    with pytest.warns(SerializationWarning), pytest.raises(ValueError) as refused:
        zarrio.write(ds, tmp_path / "objects.zarr", config)
    assert str(refused.value) == (
        "'label' in objects.zarr holds Python objects (dtype object) that Zarr cannot store "
        "(object array contains mixed native types: dict, int): give it numbers or text "
        "(.astype(float), .astype(str))"
    )


def test_each_variable_keeps_its_own_chunks_when_written(tmp_path: Path) -> None:
    """A small variable in one chunk along a dim does not make a big one a single chunk.

    The dataset's largest chunk of each dim had been applied to every variable: an op that
    returned ``temperature(time, y, x)`` in 32 MiB chunks beside a ``weight(time)`` in one
    chunk had its temperature written as one chunk of the whole array (1 GiB), which no
    worker of a 512 MiB budget could hold (out-of-core audit, 2026-12-06). Irregular chunks
    are still made regular, per variable, keeping its largest chunk.
    """
    import dask.array as da

    config = load_config(overrides={"storage.codec": "lz4"}, use_search_path=False)
    big = da.arange(8 * 3 * 2, dtype=np.float64).reshape(8, 3, 2).rechunk((2, 3, 2))
    weight = da.from_array(np.linspace(0.5, 1.5, 8), chunks=8)
    uneven = da.arange(8.0, chunks=((3, 2, 3),))
    ds = xr.Dataset(
        {
            "temperature": (("time", "y", "x"), big),
            "weight": (("time",), weight),
            "uneven": (("time",), uneven),
        }
    )
    regular = zarrio.regular_chunks(ds)
    assert regular["temperature"].data.chunks == big.chunks  # as the op made them
    assert regular["weight"].data.chunks == ((8,),)
    assert regular["uneven"].data.chunks == ((3, 3, 2),)
    zarrio.write(ds, tmp_path / "out.zarr", config).compute()
    group = zarr.open_group(tmp_path / "out.zarr", mode="r", zarr_format=3)
    assert group["temperature"].chunks == (2, 3, 2)
    assert group["weight"].chunks == (8,)
    assert group["uneven"].chunks == (3,)
    np.testing.assert_array_equal(group["temperature"][:], big.compute())
    np.testing.assert_array_equal(group["uneven"][:], np.arange(8.0))


def test_checksums_read_a_store_chunked_whole_along_its_first_dim_in_bounded_slabs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A time series per pixel (chunks whole along time) had been read and copied whole: 2.55
    GB resident for a 1 GiB array. The slabs stay within SLAB_BYTES; the hash is the one of
    any slab size."""
    values = np.arange(64 * 6 * 4, dtype=float).reshape(64, 6, 4)
    path = tmp_path / "pixels.zarr"
    config = load_config(use_search_path=False)
    ds = xr.Dataset({"t": (("time", "y", "x"), values)}).chunk({"time": -1, "y": 2})
    zarrio.write(ds, path, config).compute()
    whole = zarrio.checksums(path)
    read: list[int] = []
    value_bytes = zarrio._value_bytes
    monkeypatch.setattr(zarrio, "SLAB_BYTES", 10 * 6 * 4 * 8)  # ten rows of the 64
    monkeypatch.setattr(zarrio, "_value_bytes", lambda v: read.append(v.nbytes) or value_bytes(v))
    assert zarrio.checksums(path) == whole
    assert max(read) == 10 * 6 * 4 * 8 and sum(read) == values.nbytes
