"""File indexes (``file-index.*``): append data files carry Paimon's bloom filters, embedded
in the manifest when small, else a ``<data file>.index`` file that goes with its data file
through expiration, orphan cleanup and rollback; index types minipaimon does not write are
refused for writes by name and read past. (Byte equality with Java's index files and
Java's filtered reads: tests/interop/test_file_index.py.)"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import minipaimon_core as mp
from minipaimon_core.errors import CorruptMetadataError, UnsupportedFeatureError
from minipaimon_core.file_format import file_index
from minipaimon_core.format import file_index as codec

TYPES = pa.schema([pa.field("id", pa.int64(), nullable=False), ("i8", pa.int8()), ("i16", pa.int16()),
                   ("i32", pa.int32()), ("f32", pa.float32()), ("f64", pa.float64()), ("s", pa.string()),
                   ("b", pa.binary()), ("d", pa.date32()), ("ts_ms", pa.timestamp("ms")),
                   ("ts_us", pa.timestamp("us")), ("ltz", pa.timestamp("us", tz="UTC")),
                   ("t", pa.time32("ms")), ("dec", pa.decimal128(10, 2))])
INDEXED = [n for n in TYPES.names if n != "dec"]


def typed_rows(n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    ints = rng.integers(-(2**40), 2**40, n)
    return pa.table({
        "id": ints, "i8": (ints % 100).astype(np.int8), "i16": (ints % 30000).astype(np.int16),
        "i32": (ints % 2**31).astype(np.int32), "f32": np.where(ints % 7 == 0, np.nan, ints / 3).astype(np.float32),
        "f64": np.where(ints % 5 == 0, np.nan, ints / 7), "s": [f"s{i}" if i % 9 else None for i in ints],
        "b": [str(i).encode() for i in ints], "d": pa.array((ints % 40000).astype(np.int32), pa.int32()).cast(pa.date32()),
        "ts_ms": pa.array(ints // 1000, pa.int64()).cast(pa.timestamp("ms")),
        "ts_us": pa.array(ints, pa.int64()).cast(pa.timestamp("us")),
        "ltz": pa.array(ints, pa.int64()).cast(pa.timestamp("us", tz="UTC")),
        "t": pa.array((ints % 86_400_000).astype(np.int32), pa.int32()).cast(pa.time32("ms")),
        "dec": pa.array([None] * n, pa.decimal128(10, 2)),
    }, schema=TYPES)


def index_of(t: mp.Table) -> tuple[mp.Table, dict[str, dict[str, bytes | None]], list[str]]:
    """The table's one data file's decoded index and extra files."""
    (entry,) = [e for e in t.context().manifests.entries_of(
        t.context().manifests.data_manifests(t.latest_snapshot()))]  # type: ignore[arg-type]
    f = entry.file
    if f.embeddedIndex is not None:
        return t, codec.decode(f.embeddedIndex, f.fileName), list(f.extraFiles)
    (extra,) = f.extraFiles
    data = Path(t.path, "bucket-0", extra).read_bytes()
    return t, codec.decode(data, extra), list(f.extraFiles)


@pytest.mark.parametrize("threshold", ["500 b", "100 mb"])
def test_append_files_carry_bloom_filters_that_hold_every_value(tmp_path: Path, threshold: str) -> None:
    options = {"file-index.bloom-filter.columns": ",".join(INDEXED),
               "file-index.in-manifest-threshold": threshold}
    for c in INDEXED:  # small filters: the embedded case fits the manifest
        options[f"file-index.bloom-filter.{c}.items"] = "1000"
    t = mp.create_table(str(tmp_path / "t"), TYPES, options=options)
    rows = typed_rows(500, seed=1)
    t.write(rows)
    t, index, extra = index_of(mp.open_table(t.path))
    assert (extra == []) == (threshold == "100 mb")
    assert sorted(index) == sorted(INDEXED)
    for column in INDEXED:
        bloom = index[column][file_index.BLOOM]
        assert bloom is not None
        values = rows.column(column).combine_chunks().drop_null()
        hashes = file_index._hasher(TYPES.field(column).type, column)(values)
        assert file_index.bloom_test(bloom, hashes).all(), column  # no false negatives
        other = typed_rows(500, seed=2).column(column).combine_chunks().drop_null()
        other_hashes = file_index._hasher(TYPES.field(column).type, column)(other)
        if column not in ("i8", "i16", "d", "t"):  # narrow types repeat values
            assert not file_index.bloom_test(bloom, other_hashes).all(), column  # it does filter
    assert mp.open_table(t.path).to_arrow().num_rows == 500


def test_the_bloom_filter_shape_is_paimons() -> None:
    # BloomFilter64(items, fpp): bits rounded up past a whole byte, round(bits / items * ln 2)
    assert file_index.bloom_shape(1_000_000, 0.1) == (4792536, 3)
    assert file_index.bloom_shape(1000, 0.01) == (9592, 7)


def test_the_file_index_format_round_trips() -> None:
    indexes = {"ü-col": {"bloom-filter": b"\x00\x00\x00\x01\xff", "bitmap": None}, "x": {"bsi": b""}}
    data = codec.encode(indexes)
    assert codec.decode(data, "x") == indexes
    assert codec.encode(codec.decode(data, "x")) == data
    with pytest.raises(CorruptMetadataError, match="damaged file index"):
        codec.decode(data[:30], "x")


def test_primary_key_files_carry_no_index_as_in_paimon(tmp_path: Path) -> None:
    t = mp.create_table(str(tmp_path / "t"), TYPES, primary_key=["id"],
                        options={"bucket": "1", "file-index.bloom-filter.columns": "s"})
    t.write(typed_rows(10, seed=1))
    _, files = t, mp.open_table(t.path).system_table("files")
    assert files.num_rows == 1
    assert not [n for n in os.listdir(tmp_path / "t" / "bucket-0") if n.endswith(".index")]


@pytest.mark.parametrize(("options", "named"), [
    ({"file-index.bitmap.columns": "s"}, "'bitmap' file indexes"),
    ({"file-index.bsi.columns": "i32"}, "'bsi' file indexes"),
    ({"file-index.bloom-filter.columns": "dec"}, "column 'dec'"),
    ({"file-index.bloom-filter.columns": "nope"}, "'nope'"),
])
def test_an_index_minipaimon_does_not_write_is_refused_for_writes_and_read_past(
        tmp_path: Path, options: dict[str, str], named: str) -> None:
    t = mp.create_table(str(tmp_path / "t"), TYPES)
    t.write(typed_rows(10, seed=1))
    schema_file = tmp_path / "t" / "schema" / "schema-0"  # as Paimon's engine wrote it
    import json
    doc = json.loads(schema_file.read_text())
    doc["options"].update(options)
    doc.pop("checksum", None)
    schema_file.write_text(json.dumps(doc))
    t = mp.open_table(str(tmp_path / "t"))
    assert t.to_arrow().num_rows == 10
    with pytest.raises(UnsupportedFeatureError, match=named):
        t.write(typed_rows(10, seed=2))
    assert len(mp.open_table(t.path).snapshots()) == 1


def index_files(path: str) -> set[str]:
    return {n for _, _, names in os.walk(path) for n in names if n.endswith(".index")}


def test_index_files_go_with_their_data_files(tmp_path: Path) -> None:
    """Expiration deletes a data file's ``.index`` with it; orphan cleanup removes an
    unreferenced one and keeps the live ones; rollback removes those of the removed files."""
    t = mp.create_table(str(tmp_path / "t"), TYPES, options={
        "file-index.bloom-filter.columns": "s", "snapshot.num-retained.min": "1",
        "snapshot.num-retained.max": "100"})
    for seed in range(3):
        t.write(typed_rows(50, seed=seed))
    assert len(index_files(t.path)) == 3
    t.create_tag("before", 2)
    t.compact(full=True)  # 3 files (and their indexes) replaced by one
    assert len(index_files(t.path)) == 4
    t.rollback_to(3)  # the compaction goes: its file and index
    assert len(index_files(t.path)) == 3
    t.compact(full=True)
    t.delete_tag("before")
    t.expire_snapshots(retain_max=1)
    assert len(index_files(t.path)) == 1  # only the compacted file's
    orphan = Path(t.path, "bucket-0", "data-00000000-0000-0000-0000-000000000000-0.parquet.index")
    orphan.write_bytes(b"x")
    os.utime(orphan, (0, 0))
    removed = mp.open_table(t.path).remove_orphan_files(older_than_ms=int(dt.datetime.now().timestamp() * 1000))
    assert [os.path.basename(p) for p in removed.files] == [orphan.name]
    assert len(index_files(t.path)) == 1
    assert mp.open_table(t.path).to_arrow().num_rows == 150


def test_an_extra_file_that_is_not_the_files_index_is_corrupt_metadata(tmp_path: Path) -> None:
    from minipaimon_core.maintenance.files import TableFiles
    t = mp.create_table(str(tmp_path / "t"), TYPES, options={"file-index.bloom-filter.columns": "s"})
    t.write(typed_rows(5, seed=1))
    files = TableFiles.of(mp.open_table(t.path))
    snap = mp.open_table(t.path).latest_snapshot()
    assert snap is not None
    (entry,) = files.manifests.entries_of(files.manifests.data_manifests(snap))
    import msgspec
    bad = msgspec.structs.replace(entry, file=msgspec.structs.replace(entry.file, extraFiles=("../../x",)))
    with pytest.raises(CorruptMetadataError, match="extra file"):
        files.entry_paths(bad)


def test_a_scan_skips_files_whose_embedded_bloom_filters_rule_the_value_out(tmp_path: Path) -> None:
    options = {"file-index.bloom-filter.columns": "s,i32", "file-index.bloom-filter.s.items": "200",
               "file-index.bloom-filter.i32.items": "200", "file-index.in-manifest-threshold": "1 mb"}
    t = mp.create_table(str(tmp_path / "t"), TYPES, options=options)
    evens, odds = typed_rows(100, seed=3), typed_rows(100, seed=4)
    t.write(evens)
    t.write(odds)
    t = mp.open_table(t.path)
    value = odds.column("s").drop_null()[0].as_py()
    for flt, want in (([("s", "=", value)], 1), ([("s", "in", [value, "nowhere"])], 1),
                      ([[("s", "=", "nowhere")], [("s", "=", value)]], 1), ([("s", "=", "nowhere")], 0),
                      ([("s", "=", value), ("id", ">", -(2**62))], 1), ([("id", ">", -(2**62))], 2)):
        scan = t.scan(filter=flt)
        assert sum(len(s.files) for s in scan.plan()) == want, flt
        both = pa.concat_tables([evens, odds])
        import pyarrow.compute as pc
        expected = both.filter(pc.is_in(both.column("s"), pa.array([value]))) if want else both.slice(0, 0)
        if flt != [("id", ">", -(2**62))]:
            assert sorted(scan.to_arrow().column("id").to_pylist()) == sorted(expected.column("id").to_pylist())
    t.set_options({"file-index.read.enabled": "false"})
    assert sum(len(s.files) for s in mp.open_table(t.path).scan(filter=[("s", "=", value)]).plan()) == 2


@pytest.mark.parametrize(("options", "named"), [
    ({"file-index.bitmap.columns": "s"}, "bitmap"),
    ({"file-index.bloom-filter.columns": "dec"}, "dec"),
])
def test_create_and_set_options_refuse_an_index_minipaimon_would_not_write(
        tmp_path: Path, options: dict[str, str], named: str) -> None:
    with pytest.raises(mp.UnsupportedOptionError, match=named):
        mp.create_table(str(tmp_path / "t"), TYPES, options=options)
    t = mp.create_table(str(tmp_path / "u"), TYPES)
    with pytest.raises(mp.UnsupportedOptionError, match=named):
        t.set_options(options)
    assert "file-index.bitmap.columns" not in mp.open_table(t.path).options()
