"""Append tables: writes, overwrites, pruning, projection, time travel, all types."""

from __future__ import annotations

import datetime
import decimal
import time

import pyarrow as pa
import pytest

import minipaimon_core as mp
from tests.helpers import SCHEMA, rows, sorted_ids


def test_append_and_read_back(tmp_path):
    t = mp.create_table(str(tmp_path / "t"), SCHEMA)
    assert t.latest_snapshot() is None
    assert t.scan().to_arrow().num_rows == 0
    s1 = t.write(rows(0, 10))
    s2 = t.write(rows(10, 5))
    assert (s1, s2) == (1, 2)
    out = mp.open_table(str(tmp_path / "t")).scan().to_arrow()
    assert out.schema == t.schema()
    assert sorted_ids(out) == list(range(15))
    assert [s.commit_kind for s in t.snapshots()] == ["APPEND", "APPEND"]
    assert t.latest_snapshot().totalRecordCount == 15


def test_every_supported_type_round_trips(tmp_path):
    schema = pa.schema([
        ("b", pa.bool_()), ("i8", pa.int8()), ("i16", pa.int16()), ("i32", pa.int32()), ("i64", pa.int64()),
        ("f", pa.float32()), ("d", pa.float64()), ("dec", pa.decimal128(12, 3)), ("s", pa.string()),
        ("bin", pa.binary()), ("date", pa.date32()), ("ts", pa.timestamp("us")),
        ("tstz", pa.timestamp("us", "UTC")), ("l", pa.list_(pa.int32())),
        ("m", pa.map_(pa.string(), pa.float64())), ("st", pa.struct([("x", pa.int32()), ("y", pa.string())])),
    ])
    data = pa.table({
        "b": [True, None], "i8": [1, -2], "i16": [300, None], "i32": [70000, 1], "i64": [2**40, -1],
        "f": [1.5, None], "d": [2.25, -0.0], "dec": [decimal.Decimal("123.456"), None], "s": ["é", ""],
        "bin": [b"\x00\x01", None], "date": [datetime.date(2024, 1, 2), None],
        "ts": [datetime.datetime(2024, 1, 2, 3, 4, 5, 6), None],
        "tstz": [datetime.datetime(2024, 1, 2, tzinfo=datetime.timezone.utc), None],
        "l": [[1, 2], None], "m": [[("a", 1.0)], []], "st": [{"x": 1, "y": "q"}, None],
    }, schema=schema)
    t = mp.create_table(str(tmp_path / "t"), schema)
    t.write(data)
    out = mp.open_table(str(tmp_path / "t")).to_arrow()
    assert out.schema == schema
    assert out.to_pylist() == data.to_pylist()
    filtered = t.scan(filter=[("date", "=", datetime.date(2024, 1, 2)), ("dec", ">", decimal.Decimal("1"))]).to_arrow()
    assert filtered.num_rows == 1


def test_partitioned_write_prunes_partitions(tmp_path):
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, partition_by=["dt"])
    t.write(pa.concat_tables([rows(0, 5, "d1"), rows(5, 5, "d2"), rows(10, 5, "d3")]))
    splits = t.scan(filter=[("dt", "=", "d2")]).plan()
    assert [s.partition for s in splits] == [["d2"]]
    assert sorted_ids(t.scan(filter=[("dt", "in", ["d1", "d3"])]).to_arrow()) == [*range(5), *range(10, 15)]
    assert sorted_ids(t.scan(filter=[[("dt", "=", "d1")], [("id", ">=", 13)]]).to_arrow()) == [0, 1, 2, 3, 4, 13, 14]
    assert (tmp_path / "t" / "dt=d2" / "bucket-0").is_dir()


def test_min_max_stats_skip_files(tmp_path):
    t = mp.create_table(str(tmp_path / "t"), SCHEMA)
    for i in range(5):
        t.write(rows(i * 100, 100))
    scan = t.scan(filter=[("id", ">=", 250), ("id", "<", 260)])
    assert sum(len(s.files) for s in scan.plan()) == 1
    assert sorted_ids(scan.to_arrow()) == list(range(250, 260))
    assert t.scan(filter=[("k", "=", "nope")]).to_arrow().num_rows == 0


def test_filters_follow_sql_null_semantics(tmp_path):
    t = mp.create_table(str(tmp_path / "t"), SCHEMA)
    t.write(pa.table({"id": [1, 2, 3], "k": ["a", None, "c"], "v": [1.0, 2.0, None], "dt": ["x"] * 3}, schema=SCHEMA))
    assert sorted_ids(t.scan(filter=[("k", "!=", "a")]).to_arrow()) == [3]
    assert sorted_ids(t.scan(filter=[("k", "not in", ["a"])]).to_arrow()) == [3]
    assert sorted_ids(t.scan(filter=[("k", "is null", None)]).to_arrow()) == [2]
    assert sorted_ids(t.scan(filter=[("v", "is not null", None)]).to_arrow()) == [1, 2]


def test_projection_returns_only_requested_columns_in_order(tmp_path):
    t = mp.create_table(str(tmp_path / "t"), SCHEMA)
    t.write(rows(0, 3))
    out = t.scan(columns=["v", "id"], filter=[("k", "=", "k1")]).to_arrow()
    assert out.column_names == ["v", "id"]
    assert out.to_pylist() == [{"v": 0.5, "id": 1}]


def test_overwrite_whole_table_and_dynamic_partitions(tmp_path):
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, partition_by=["dt"])
    t.write(pa.concat_tables([rows(0, 3, "d1"), rows(3, 3, "d2")]))
    t.write(rows(100, 2, "d1"), mode="overwrite")
    assert sorted_ids(t.to_arrow()) == [100, 101]
    assert t.latest_snapshot().commit_kind == "OVERWRITE"
    t.write(rows(0, 3, "d2"))
    d = mp.create_table(str(tmp_path / "d"), SCHEMA, partition_by=["dt"], options={"dynamic-partition-overwrite": "true"})
    d.write(pa.concat_tables([rows(0, 3, "d1"), rows(3, 3, "d2")]))
    d.write(rows(100, 2, "d1"), mode="overwrite")
    assert sorted_ids(d.to_arrow()) == [3, 4, 5, 100, 101]
    t.write(rows(0, 0), mode="overwrite")
    assert t.to_arrow().num_rows == 0


def test_time_travel_by_id_timestamp_and_tag(tmp_path):
    t = mp.create_table(str(tmp_path / "t"), SCHEMA)
    t.write(rows(0, 2))
    t.create_tag("first")
    time.sleep(0.01)  # distinct commit times for the timestamp lookup, not synchronisation
    t.write(rows(2, 2))
    s2 = t.latest_snapshot()
    assert sorted_ids(t.scan(snapshot_id=1).to_arrow()) == [0, 1]
    assert sorted_ids(t.scan(tag="first").to_arrow()) == [0, 1]
    assert sorted_ids(t.scan(timestamp_ms=s2.timeMillis).to_arrow()) == [0, 1, 2, 3]
    assert sorted_ids(t.scan(timestamp_ms=s2.timeMillis - 1).to_arrow()) == [0, 1]
    assert t.tags() == {"first": 1}
    with pytest.raises(mp.SnapshotNotFoundError):
        t.scan(snapshot_id=9)
    with pytest.raises(mp.SnapshotNotFoundError):
        t.scan(tag="nope")
    with pytest.raises(mp.SnapshotNotFoundError):
        t.scan(timestamp_ms=1)
    assert sorted_ids(t.scan(incremental_between="1,2").to_arrow()) == [2, 3]


def test_plan_and_read_split_and_pandas(tmp_path):
    import pickle

    t = mp.create_table(str(tmp_path / "t"), SCHEMA, partition_by=["dt"])
    t.write(pa.concat_tables([rows(0, 3, "d1"), rows(3, 3, "d2")]))
    splits = t.scan().plan()
    assert len(splits) == 2
    again = [pickle.loads(pickle.dumps(s)) for s in splits]
    got = pa.Table.from_batches([b for s in again for b in mp.open_table(t.path).read_split(s)])
    assert sorted_ids(got) == list(range(6))
    assert list(t.scan().to_pandas().sort_values("id")["id"]) == list(range(6))
    t.write(t.scan().to_pandas())
    assert t.to_arrow().num_rows == 12


def test_files_roll_at_target_file_size(tmp_path):
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, options={"target-file-size": "64 kb"})
    t.write(rows(0, 20000))
    files = [f for s in t.scan().plan() for f in s.files]
    assert len(files) > 3
    assert sorted_ids(t.to_arrow()) == list(range(20000))


def test_bucketed_append_table_splits_by_bucket_key(tmp_path):
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, options={"bucket": "4", "bucket-key": "id"})
    t.write(rows(0, 1000))
    splits = t.scan().plan()
    assert sorted(s.bucket for s in splits) == [0, 1, 2, 3]
    t.write(rows(0, 1000))
    for s in t.scan().plan():  # the same ids always land in the same bucket
        ids = [i for b in t.read_split(s) for i in b.column("id").to_pylist()]
        assert len(ids) == 2 * len(set(ids))


def test_append_small_files_are_compacted(tmp_path):
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, options={"compaction.min.file-num": "3"})
    for i in range(4):
        t.write(rows(i * 10, 10))
    snap = t.compact()
    assert snap is not None and t.latest_snapshot().commit_kind == "COMPACT"
    assert sum(len(s.files) for s in t.scan().plan()) == 1
    assert sorted_ids(t.to_arrow()) == list(range(40))
    assert sorted_ids(t.scan(snapshot_id=4).to_arrow()) == list(range(40))
