"""System tables: every name, its schema and its contents; unknown names are typed errors."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import minipaimon_core as mp
from minipaimon_core.metadata.consumer import ConsumerManager
from minipaimon_core.system_tables import SYSTEM_TABLES
from tests.conftest import Storage
from tests.helpers import SCHEMA, rows


@pytest.fixture
def table(storage: Storage) -> mp.Table:
    """The same history on local disk and on S3 (moto)."""
    t = mp.create_table(storage.path("t"), SCHEMA, primary_key=["id", "dt"], partition_by=["dt"],
                        options={"bucket": "2"})
    t.write(rows(0, 6, "d1"))
    t.write(rows(0, 4, "d2"))
    t.write(pa.table({"id": pa.array([1], pa.int64()), "k": ["gone"], "v": [0.0], "dt": ["d1"],
                      "_row_kind": ["-D"]}))
    t.create_tag("first", 1)
    ConsumerManager(t.io, t.layout).write("reader", 2)
    return t


def test_every_system_table_has_rows_and_a_fixed_schema(table):
    assert SYSTEM_TABLES == ("snapshots", "schemas", "options", "files", "manifests", "partitions",
                             "buckets", "tags", "branches", "consumers", "audit_log", "health", "history")
    table.create_branch("b", "first")
    empty = mp.create_table(table.path + "-empty", SCHEMA)
    for name in SYSTEM_TABLES:
        full = table.system_table(name)
        assert full.num_rows > 0, name
        if name != "audit_log":  # audit_log follows the table's own columns
            assert empty.system_table(name).schema == full.schema, name


def test_snapshots_schemas_options(table):
    snaps = table.system_table("snapshots").to_pylist()
    assert [s["snapshot_id"] for s in snaps] == [s.id for s in table.snapshots()]
    assert snaps[0]["commit_kind"] == "APPEND" and snaps[0]["total_record_count"] == 6
    table.add_column("extra", pa.int32())
    schemas = table.system_table("schemas").to_pylist()
    assert [s["schema_id"] for s in schemas] == [0, 1]
    assert [f["name"] for f in json.loads(schemas[1]["fields"])][-1] == "extra"
    assert json.loads(schemas[0]["primary_keys"]) == ["id", "dt"]
    assert table.system_table("options").to_pylist() == [{"key": "bucket", "value": "2"}]


def test_files_partitions_buckets_manifests(table):
    files = table.system_table("files").to_pylist()
    assert sum(f["record_count"] for f in files) == 11  # physical rows, the -D included
    assert {f["partition"] for f in files} == {"dt=d1", "dt=d2"}
    assert all(f["file_path"].startswith(table.path) and f["file_format"] == "parquet" for f in files)
    one = next(f for f in files if f["partition"] == "dt=d2")
    assert json.loads(one["null_value_counts"]) == {"id": 0, "k": 0, "v": 0, "dt": 0}
    assert json.loads(one["min_value_stats"])["dt"] == "d2"
    parts = table.system_table("partitions").to_pylist()
    assert [(p["partition"], p["record_count"]) for p in parts] == [("dt=d1", 7), ("dt=d2", 4)]
    buckets = table.system_table("buckets").to_pylist()
    assert sum(b["file_count"] for b in buckets) == len(files)
    assert {(b["partition"], b["bucket"]) for b in buckets} == {(f["partition"], f["bucket"]) for f in files}
    manifests = table.system_table("manifests").to_pylist()
    assert sum(m["num_added_files"] for m in manifests) == len(files)
    at_1 = table.system_table("files", snapshot_id=1)
    assert at_1.num_rows == len({f["bucket"] for f in files if f["partition"] == "dt=d1"})


def test_tags_consumers_audit_log(table):
    assert table.system_table("tags").to_pylist()[0]["tag_name"] == "first"
    assert table.system_table("consumers").to_pylist() == [{"consumer_id": "reader", "next_snapshot_id": 2}]
    audit = table.system_table("audit_log")
    assert audit.column_names == ["rowkind", "id", "k", "v", "dt"]
    assert set(audit.column("rowkind").to_pylist()) == {"+I"}
    assert audit.num_rows == 9  # merged rows: (1, d1) was deleted
    assert table.system_table("audit_log", snapshot_id=1).num_rows == 6


@pytest.mark.parametrize("engine", ["deduplicate", "first-row", "partial-update"])
def test_audit_log_gives_each_row_its_stored_kind(tmp_path, engine):
    """Paimon's PrimaryKeySimpleTableTest.testAuditLog (0.9: PrimaryKeyFileStoreTableTest):
    with changelog-producer=input, +I (1, 10, 100), +I (2, 20, 200), then +U (1, 30, 300)
    read as "+I[+I, 2, 20, 200]", "+I[+U, 1, 30, 300]", "+I[+I, 1, 10, 100]". The data file
    stores the +U as 2 (was 0: +I), and a compaction keeps it; a merge that builds a row
    (partial-update of several rows) gives +I."""
    schema = pa.schema([pa.field("pt", pa.int32(), nullable=False),
                        pa.field("a", pa.int32(), nullable=False), ("b", pa.int64())])
    t = mp.create_table(str(tmp_path / "t"), schema, primary_key=["pt", "a"], partition_by=["pt"],
                        options={"bucket": "1", "changelog-producer": "input", "merge-engine": engine})

    def write(kinds, pts, a, b):
        t.write(pa.table({"pt": pa.array(pts, pa.int32()), "a": pa.array(a, pa.int32()),
                          "b": pa.array(b, pa.int64()), "_row_kind": kinds}))

    write(["+I", "+I"], [1, 2], [10, 20], [100, 200])
    write(["+U"], [1], [30], [300])
    want = [("+I", 1, 10, 100), ("+I", 2, 20, 200), ("+U", 1, 30, 300)]

    def audit():
        return sorted(tuple(r.values()) for r in t.system_table("audit_log").to_pylist())

    assert audit() == sorted(want)
    stored = [k for f in sorted((tmp_path / "t" / "pt=1" / "bucket-0").glob("data-*.parquet"))
              for k in pq.read_table(f, columns=["_VALUE_KIND"]).column(0).to_pylist()]
    assert sorted(stored) == [0, 2]
    write(["+I"], [1], [30], [301])  # the key written again: its latest (first-row: first) row
    again = ("+U", 1, 30, 300) if engine == "first-row" else ("+I", 1, 30, 301)
    want = [*want[:2], again]
    assert audit() == sorted(want)
    t.compact(full=True)
    assert audit() == sorted(want)
    write(["+U"], [2], [20], [None])
    want[1] = ("+I", 2, 20, 200) if engine == "partial-update" else \
        ("+I", 2, 20, 200) if engine == "first-row" else ("+U", 2, 20, None)
    assert audit() == sorted(want)


def test_unknown_name_lists_the_names(table):
    with pytest.raises(mp.InvalidArgumentError, match="one of: snapshots, schemas"):
        table.system_table("snapshot")
    with pytest.raises(mp.SnapshotNotFoundError):
        table.system_table("files", snapshot_id=99)
