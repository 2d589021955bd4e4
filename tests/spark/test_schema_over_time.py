"""Issue 16 (item 26): a time-travel read sees its snapshot's schema; a stream whose
columns are renamed or retyped while it runs stops with a typed error naming the column."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

pytest.importorskip("pyspark")

import minipaimon_core as mp  # noqa: E402
from minipaimon_core.errors import SchemaMismatchError  # noqa: E402
from minipaimon_spark.source import MiniPaimonDataSource  # noqa: E402

KV = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.int32())])


def evolved(path: Path) -> mp.Table:
    """Snapshot 1 with (id, v); then v renamed to w, a column added, snapshot 2."""
    t = mp.create_table(str(path), KV, primary_key=["id"])
    t.write(pa.table({"id": [1, 2], "v": pa.array([10, 20], pa.int32())}))
    t.rename_column("v", "w")
    t.add_column("extra", pa.string())
    t = mp.open_table(str(path))
    t.write(pa.table({"id": [3], "w": pa.array([30], pa.int32()), "extra": ["x"]}))
    return t


def batch_read(path: Path, **options: str) -> tuple[list[str], list[dict[str, Any]]]:
    ds = pickle.loads(pickle.dumps(MiniPaimonDataSource({"path": str(path), **options})))
    schema = ds.schema()
    reader = ds.reader(schema)
    out = [r for p in reader.partitions() for b in pickle.loads(pickle.dumps(reader)).read(p)
           for r in b.to_pylist()]
    return schema.fieldNames(), sorted(out, key=lambda r: r["id"])


def test_time_travel_reads_the_snapshots_own_schema(tmp_path: Path) -> None:
    t = evolved(tmp_path / "t")
    t.create_tag("one", 1)
    names, got = batch_read(tmp_path / "t", **{"scan.snapshot-id": "1"})
    assert names == ["id", "v"]
    assert got == [{"id": 1, "v": 10}, {"id": 2, "v": 20}]
    # one rule with the core's scan (Table.as_of): by id, tag and time alike
    at = str(t.snapshot(1).timeMillis)
    for option in ({"scan.snapshot-id": "1"}, {"scan.tag-name": "one"}, {"scan.timestamp-millis": at}):
        core = mp.open_table(str(tmp_path / "t")).scan(options=option).to_arrow()
        assert batch_read(tmp_path / "t", **option) == (core.column_names, sorted(
            core.to_pylist(), key=lambda r: r["id"])) == (names, got)
    names, got = batch_read(tmp_path / "t")
    assert names == ["id", "w", "extra"] and len(got) == 3


@pytest.mark.parametrize("change, message", [
    (lambda t: t.rename_column("v", "w"), "'v' .* renamed or dropped"),
    (lambda t: t.alter_column_type("v", pa.int64()), "'v' .* changed type from int to bigint"),
])
def test_stream_across_a_schema_change_stops_with_a_typed_error(
        tmp_path: Path, change: Any, message: str) -> None:
    t = mp.create_table(str(tmp_path / "t"), KV, primary_key=["id"])
    t.write(pa.table({"id": [1], "v": pa.array([10], pa.int32())}))
    ds = pickle.loads(pickle.dumps(MiniPaimonDataSource({"path": str(tmp_path / "t")})))
    reader = ds.streamReader(ds.schema())
    start = reader.initialOffset()
    end = reader.latestOffset()
    parts = reader.partitions(start, end)
    change(t)
    with pytest.raises(SchemaMismatchError, match=message):
        list(pickle.loads(pickle.dumps(reader)).read(parts[0]))
    with pytest.raises(SchemaMismatchError, match=message):
        reader.latestOffset()


def test_stream_ignores_an_added_column(tmp_path: Path) -> None:
    t = mp.create_table(str(tmp_path / "t"), KV, primary_key=["id"])
    t.write(pa.table({"id": [1], "v": pa.array([10], pa.int32())}))
    ds = pickle.loads(pickle.dumps(MiniPaimonDataSource({"path": str(tmp_path / "t")})))
    reader = ds.streamReader(ds.schema())
    start = reader.initialOffset()
    end = reader.latestOffset()
    t.add_column("extra", pa.string())
    rows = [r for p in reader.partitions(start, end) for r in reader.read(p)]
    assert [b.schema.names for b in rows] == [["id", "v"]]
