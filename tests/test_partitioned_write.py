"""An append write into many partitions: one file a partition, each described as a write
of its rows alone would describe it (stats, size, layout), with the per-file work done once
for the whole input (split, stats, dictionary choice) and no directory made twice."""

from __future__ import annotations

import decimal
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import minipaimon_core as mp
from minipaimon_core.expressions.stats import grouped_stats, table_stats
from minipaimon_core.file_format.parquet import ParquetFormat
from minipaimon_core.io.fileio import LocalFileIO
from minipaimon_core.metadata.manifest_io import live_files
from minipaimon_core.write.write_buffer import WriteBuffer, run_bytes


def _mixed(n: int, seed: int) -> pa.Table:
    """Columns of every stats kind: nulls, NaN, strings past the stats length, temporal,
    decimal, nested (no stats), and a partition column."""
    rng = np.random.default_rng(seed)
    return pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64)),
        "i": pa.array(rng.integers(-100, 100, n), mask=rng.random(n) < 0.1),
        "f": pa.array(np.where(rng.random(n) < 0.02, np.nan, rng.random(n))),
        "s": pa.array([("x" * int(rng.integers(1, 80))) if rng.random() > 0.1 else None for _ in range(n)]),
        "b": pa.array([bytes([int(x)]) for x in rng.integers(0, 255, n)]),
        "ts": pa.array(rng.integers(0, 10**12, n), pa.timestamp("us")),
        "d": pa.array(rng.integers(0, 10**4, n).astype(np.int32), pa.date32()),
        "dec": pa.array([decimal.Decimal(int(x)) / 100 for x in rng.integers(0, 10**6, n)], pa.decimal128(10, 2)),
        "tm": pa.array(rng.integers(0, 86400 * 10**6, n), pa.time64("us")),
        "none": pa.array([None] * n, pa.int32()),
        "p": pa.array(rng.integers(0, 40, n).astype(np.int32)),
    })


def _assert_same_rows(out: pa.Table, data: pa.Table) -> None:
    out = out.sort_by("id")
    assert out.column_names == data.column_names
    for name in data.column_names:
        if pa.types.is_floating(data.schema.field(name).type):  # NaN equals NaN here
            np.testing.assert_array_equal(out.column(name).to_numpy(), data.column(name).to_numpy())
        else:
            assert out.column(name).to_pylist() == data.column(name).to_pylist(), name


def test_grouped_stats_are_table_stats_of_each_run():
    rng = np.random.default_rng(2)
    t = _mixed(3000, 1)
    for name, array in {  # the other units and widths of the stats kinds
            "tsn": pa.array(rng.integers(0, 10**18, 3000), pa.timestamp("ns")),
            "tsz": pa.array(rng.integers(0, 10**15, 3000), pa.timestamp("us", "UTC")),
            "t32": pa.array(rng.integers(0, 86_400_000, 3000).astype(np.int32), pa.time32("ms")),
            "f32": pa.array(rng.random(3000).astype(np.float32)),
            "i8": pa.array(rng.integers(-100, 100, 3000).astype(np.int8)),
            "ls": pa.array(["a" * int(x) for x in rng.integers(0, 70, 3000)], pa.large_string()),
            "bo": pa.array(rng.random(3000) < 0.5),
            "u64": pa.array(rng.integers(2**63, 2**64 - 1, 3000, dtype=np.uint64)),
            "fn": pa.array(np.where(rng.random(3000) < 0.01, np.nan, rng.normal(size=3000)),
                           mask=rng.random(3000) < 0.3),
            "head_null": pa.array(rng.integers(0, 9, 3000), mask=np.arange(3000) < 500)}.items():
        t = t.append_column(name, array)
    t = pa.concat_tables([t.slice(0, 1111), t.slice(1111)])  # two chunks, the second at an offset
    bounds = [0, *sorted(rng.choice(np.arange(1, 3000), 300, replace=False).tolist()), 3000]
    expected = [table_stats(t.slice(a, b - a), t.column_names) for a, b in zip(bounds[:-1], bounds[1:])]
    assert grouped_stats(t, t.column_names, bounds) == expected
    assert any(s.minValues[t.column_names.index("s")] is None for s in expected)  # long strings
    assert any(s.minValues[t.column_names.index("f")] is None for s in expected)  # NaN
    nested = t.append_column("l", pa.array([[1]] * 3000, pa.list_(pa.int32())))
    assert grouped_stats(nested, nested.column_names, bounds) is None  # the caller computes them run by run


def test_every_partition_file_is_described_as_its_rows_alone(tmp_path):
    data = _mixed(4000, 3)
    t = mp.create_table(str(tmp_path / "t"), data.schema, partition_by=["p"])
    t.write(data)
    entries = live_files(t.manifests, t.latest_snapshot())
    assert len(entries) == len(set(data.column("p").to_pylist()))
    names = t.table_schema.field_names
    for e in entries:
        (p,) = e.partition
        path = t.layout.data_file_path(f"p={p}", 0, e.file.fileName)
        assert path == f"{t.path}/p={p}/bucket-0/{e.file.fileName}"
        rows = data.filter(pa.compute.equal(data.column("p"), p))
        stored = pq.read_table(path)
        assert stored.column("id").to_pylist() == rows.column("id").to_pylist()  # input order kept
        assert e.file.valueStats == table_stats(rows, names)
        assert e.file.fileSize == os.path.getsize(path)
        assert e.file.rowCount == rows.num_rows
    _assert_same_rows(t.scan().to_arrow(), data)


def test_small_write_buffer_many_partitions(tmp_path):
    """Buffers flushed in the middle of a batch: every row written once, in its partition."""
    data = _mixed(4000, 4)
    t = mp.create_table(str(tmp_path / "t"), data.schema, partition_by=["p"],
                        options={"write-buffer-size": "16 kb"})
    t.write([data.slice(0, 1500), data.slice(1500)])
    _assert_same_rows(t.scan().to_arrow(), data)
    for e in live_files(t.manifests, t.latest_snapshot()):
        (p,) = e.partition
        stored = pq.read_table(t.layout.data_file_path(f"p={p}", 0, e.file.fileName))
        assert set(stored.column("p").to_pylist()) == {p}
        assert e.file.valueStats == table_stats(stored, t.table_schema.field_names)


def test_run_bytes_are_the_sizes_of_the_runs_copied_out():
    rng = np.random.default_rng(3)
    n = 5_000
    t = pa.table({
        "i": pa.array(rng.integers(0, 9, n), mask=rng.random(n) < 0.2),
        "flag": pa.array(rng.random(n) < 0.5),
        "s": pa.array(["x" * int(k) for k in rng.integers(0, 300, n)]),
        "ls": pa.array(["y" * int(k) for k in rng.integers(0, 30, n)], pa.large_string()),
        "b": pa.array([b"z" * int(k) for k in rng.integers(0, 50, n)]),
        "dec": pa.array([decimal.Decimal(int(k)) for k in rng.integers(0, 99, n)], pa.decimal128(10, 0)),
    }).take(rng.permutation(n)).slice(7)  # one chunk, not at the start of its buffers
    bounds = [0, 1, 400, 401, 2_000, t.num_rows]
    sizes = run_bytes(t, bounds)
    assert sizes is not None
    for size, start, end in zip(sizes, bounds[:-1], bounds[1:]):
        copied = t.slice(start, end - start).take(np.arange(end - start))
        # (a copy may have validity bitmaps where no value is null, and one more offset)
        assert abs(size - copied.nbytes) <= t.num_columns * ((end - start + 7) // 8 + 8)
    nested = t.append_column("l", pa.array([[1]] * t.num_rows))
    assert run_bytes(nested, bounds) is None
    encoded = t.append_column("e", pa.array(["x" * 50] * t.num_rows).dictionary_encode())
    assert run_bytes(encoded, bounds) is None


def test_a_partition_of_long_rows_rolls_at_the_target_size_among_short_ones(tmp_path):
    # the sizes that roll a partition's rows are its own, not the batch's average row
    short = pa.table({"p": pa.array(np.arange(2_000, dtype=np.int32) % 100), "s": ["a"] * 2_000})
    long = pa.table({"p": pa.array([100] * 200, pa.int32()), "s": ["x" * 4_000] * 200})
    data = pa.concat_tables([short, long]).combine_chunks()  # one batch
    t = mp.create_table(str(tmp_path / "t"), data.schema, partition_by=["p"],
                        options={"target-file-size": "100 kb"})
    t.write(data)
    files = [e for e in live_files(t.manifests, t.latest_snapshot())]
    long_files = [e.file for e in files if e.partition == (100,)]
    assert len(long_files) >= 7  # 800 KB of strings
    assert sum(f.rowCount for f in long_files) == 200
    assert len(files) - len(long_files) == 100  # one file each for the short partitions
    assert t.scan().to_arrow().sort_by([("p", "ascending"), ("s", "ascending")]).equals(
        data.sort_by([("p", "ascending"), ("s", "ascending")]))


def test_own_last_copies_a_slice_out_of_its_table():
    big = pa.table({"x": np.arange(1_000_000, dtype=np.int64)})
    buffer = WriteBuffer(1 << 30)
    buffer.add(((1,), 0), big.slice(10, 5))
    buffer.own_last([((1,), 0), ((2,), 0)])  # a key not buffered is passed over
    ((_, pieces, _),) = buffer.drain()
    assert pieces[0].column("x").to_pylist() == list(range(10, 15))
    assert pieces[0].get_total_buffer_size() < 1000  # not the 8 MB it was sliced from


def test_open_output_makes_a_directory_only_when_missing(tmp_path, monkeypatch):
    made: list[str] = []
    real_mkdir = os.mkdir

    def counting_mkdir(path, *args, **kwargs):
        made.append(str(path))
        return real_mkdir(path, *args, **kwargs)

    monkeypatch.setattr(os, "mkdir", counting_mkdir)
    io = LocalFileIO()
    for name in ("a", "b", "c"):
        with io.open_output(f"{tmp_path}/p=1/bucket-0/{name}") as f:
            f.write(b"x")
    assert made == [f"{tmp_path}/p=1", f"{tmp_path}/p=1/bucket-0"]  # once each, for the first file
    os.remove(f"{tmp_path}/p=1/bucket-0/a")
    os.remove(f"{tmp_path}/p=1/bucket-0/b")
    os.remove(f"{tmp_path}/p=1/bucket-0/c")
    os.rmdir(f"{tmp_path}/p=1/bucket-0")  # gone since: made again
    with io.open_output(f"{tmp_path}/p=1/bucket-0/d") as f:
        f.write(b"y")
    with open(f"{tmp_path}/p=1/bucket-0/d", "rb") as f:
        assert f.read() == b"y"


def test_data_file_size_needs_no_stat(tmp_path):
    class Counting(LocalFileIO):
        sizes = 0

        def file_size(self, path: str) -> int:
            Counting.sizes += 1
            return super().file_size(path)

    data = _mixed(500, 5)
    t = mp.create_table(str(tmp_path / "t"), data.schema, partition_by=["p"])
    t2 = mp.open_table(t.path, io=Counting())
    t2.write(data)
    assert Counting.sizes == 0
    for e in live_files(t2.manifests, t2.latest_snapshot()):
        (p,) = e.partition
        assert e.file.fileSize == os.path.getsize(t2.layout.data_file_path(f"p={p}", 0, e.file.fileName))


def test_parquet_writer_takes_the_dictionary_columns_it_is_given(tmp_path):
    t = pa.table({"a": pa.array(["x"] * 100), "b": pa.array(["y"] * 100)})
    path = tmp_path / "f.parquet"
    with pa.OSFile(str(path), "wb") as sink:
        w = ParquetFormat().open_writer(sink, t.schema, t, compression="zstd", file_name="f.parquet",
                                        dictionary=["b"])
        w.write(t)
        w.close()
    meta = pq.read_metadata(str(path))
    encoded = {meta.schema.column(i).path: meta.row_group(0).column(i).has_dictionary_page for i in range(2)}
    assert encoded == {"a": False, "b": True}  # "a" repeats too: the choice was the caller's


def test_a_small_file_has_no_dictionary_page_and_a_large_one_keeps_them(tmp_path):
    """Many partitions make small files: their repeated columns are written plain (a
    dictionary page is one more page to compress, for no fewer bytes); a file of thousands
    of rows keeps the dictionary encoding of its repeated columns."""
    def data(n: int, partitions: int) -> pa.Table:
        return pa.table({"id": pa.array(np.arange(n, dtype=np.int64)),
                         "s": pa.array(["same"] * n),
                         "p": pa.array((np.arange(n) % partitions).astype(np.int32))})

    for rows, partitions, encoded in ((4_000, 40, False), (40_000, 4, True)):
        t = mp.create_table(str(tmp_path / f"t{rows}"), data(1, 1).schema, partition_by=["p"])
        t.write(data(rows, partitions))
        files = live_files(t.manifests, t.latest_snapshot())
        assert len(files) == partitions
        for e in files:
            (p,) = e.partition
            meta = pq.read_metadata(t.layout.data_file_path(f"p={p}", 0, e.file.fileName))
            columns = {meta.schema.column(i).path: meta.row_group(0).column(i) for i in range(meta.num_columns)}
            assert columns["s"].has_dictionary_page is encoded
            assert columns["p"].has_dictionary_page is encoded
            assert not columns["id"].has_dictionary_page  # unique values: never
        assert t.to_arrow().sort_by("id").equals(data(rows, partitions))
