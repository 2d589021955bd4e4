"""SQL procedures: every maintenance action as a table function called from ``spark.sql``."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

pytest.importorskip("pyspark")

import minipaimon_core as mp  # noqa: E402
import minipaimon_spark  # noqa: E402

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])


@pytest.fixture(scope="module")
def sql(spark: Any) -> Any:
    minipaimon_spark.register(spark)
    return spark.sql


def pk_table(path: str, writes: int) -> mp.Table:
    table = mp.create_table(path, SCHEMA, primary_key=["id"],
                            options={"bucket": "2", "write-only": "true"})
    for i in range(writes):
        table.write(pa.table({"id": list(range(10)), "v": [f"w{i}"] * 10}, schema=SCHEMA))
    return table


def ids_and_values(table: mp.Table) -> list[tuple[int, str]]:
    t = mp.open_table(table.path).to_arrow().sort_by("id")
    return list(zip(t.column("id").to_pylist(), t.column("v").to_pylist()))


@pytest.mark.smoke
def test_compact_from_sql_commits_one_compaction(sql: Any, tmp_path: Path) -> None:
    table = pk_table(str(tmp_path / "t"), 3)
    before = ids_and_values(table)
    row = sql(f"SELECT * FROM minipaimon_compact('{table.path}')").collect()[0]
    latest = mp.open_table(table.path).latest_snapshot()
    assert latest is not None and latest.commitKind == "COMPACT"
    assert row.snapshot_id == latest.id == 4
    assert row.buckets == 2 and row.files_removed == 6 and row.files_added == 2
    assert ids_and_values(table) == before == [(i, "w2") for i in range(10)]
    again = sql(f"SELECT * FROM minipaimon_compact('{table.path}', 'full')").collect()[0]
    assert again.snapshot_id is None and again.buckets == 0


def test_expire_snapshots_from_sql(sql: Any, tmp_path: Path) -> None:
    table = pk_table(str(tmp_path / "t"), 4)
    row = sql(f"SELECT * FROM minipaimon_expire_snapshots('{table.path}', 2)").collect()[0]
    assert row.snapshots_expired == 2
    assert [s.id for s in mp.open_table(table.path).snapshots()] == [3, 4]
    assert ids_and_values(table) == [(i, "w3") for i in range(10)]


def test_create_rename_and_delete_tags_from_sql(sql: Any, tmp_path: Path) -> None:
    # paimon-spark CreateAndDeleteTagProcedureTest, "create and delete tag" / "delete
    # multiple tags": time_retained, rename_tag, delete_tag of 'a,b' and 'a, b'
    table = pk_table(str(tmp_path / "t"), 2)
    assert sql(f"SELECT * FROM minipaimon_create_tag('{table.path}', 'test_tag', 2, '5 d')").collect() \
        == [("test_tag", 2)]
    assert mp.open_table(table.path).tag_info("test_tag").time_retained_ms == 5 * 86_400_000
    sql(f"SELECT * FROM minipaimon_create_tag('{table.path}', 'test_tag_1', 1)").collect()
    assert sql(f"SELECT * FROM minipaimon_rename_tag('{table.path}', 'test_tag_1', 'test_tag_3')").collect() \
        == [("test_tag_3", 1)]
    assert mp.open_table(table.path).tags() == {"test_tag": 2, "test_tag_3": 1}
    assert sorted(sql(f"SELECT * FROM minipaimon_delete_tag('{table.path}', 'test_tag, test_tag_3')").collect()) \
        == [("test_tag", 2), ("test_tag_3", 1)]
    assert mp.open_table(table.path).tags() == {}


def test_tags_and_rollback_from_sql(sql: Any, tmp_path: Path) -> None:
    table = pk_table(str(tmp_path / "t"), 3)
    assert sql(f"SELECT * FROM minipaimon_create_tag('{table.path}', 'first', 1)").collect() \
        == [("first", 1)]
    assert sql(f"SELECT * FROM minipaimon_create_tag('{table.path}', 'last')").collect() \
        == [("last", 3)]
    assert mp.open_table(table.path).tags() == {"first": 1, "last": 3}
    assert sql(f"SELECT * FROM minipaimon_delete_tag('{table.path}', 'last')").collect() \
        == [("last", 3)]
    row = sql(f"SELECT * FROM minipaimon_rollback('{table.path}', 2)").collect()[0]
    assert row.snapshot_id == 2 and row.snapshots_removed == 1
    assert ids_and_values(table) == [(i, "w1") for i in range(10)]
    row = sql(f"SELECT * FROM minipaimon_rollback('{table.path}', 'first')").collect()[0]
    assert row.snapshot_id == 1
    assert ids_and_values(table) == [(i, "w0") for i in range(10)]


def test_remove_orphan_files_from_sql(sql: Any, tmp_path: Path) -> None:
    table = pk_table(str(tmp_path / "t"), 1)
    orphan = tmp_path / "t" / "bucket-0" / "data-00000000000000000000000000000000-0.parquet"
    orphan.write_bytes(b"left by a crashed writer")
    hour_ago = time.time() - 3600
    os.utime(orphan, (hour_ago, hour_ago))
    cutoff = int(time.time() * 1000) - 60_000  # live files are newer; the orphan is older
    dry = sql(f"SELECT * FROM minipaimon_remove_orphan_files('{table.path}', '1 min', true)")  # an age
    assert [(r.path.endswith(orphan.name), r.dry_run) for r in dry.collect()] == [(True, True)]
    assert orphan.exists()
    done = sql(f"SELECT * FROM minipaimon_remove_orphan_files('{table.path}', {cutoff})").collect()  # deprecated
    assert len(done) == 1 and not orphan.exists()
    assert ids_and_values(table) == [(i, "w0") for i in range(10)]


def test_diff_from_sql(sql: Any, tmp_path: Path) -> None:
    table = pk_table(str(tmp_path / "t"), 1)
    table.write(pa.table({"id": [3, 42], "v": ["new", "x"]}, schema=SCHEMA))
    table.create_tag("now")
    rows = sql(f"SELECT * FROM minipaimon_diff('{table.path}', 1, 'now') ORDER BY id, _row_kind DESC")
    assert [tuple(r) for r in rows.collect()] == [(3, "w0", "-U"), (3, "new", "+U"), (42, "x", "+I")]
    assert rows.columns == ["id", "v", "_row_kind"]


def test_rewrite_manifests_from_sql(sql: Any, tmp_path: Path) -> None:
    table = pk_table(str(tmp_path / "t"), 3)
    row = sql(f"SELECT * FROM minipaimon_rewrite_manifests('{table.path}')").collect()[0]
    assert row.snapshot_id == 4 and row.manifests_before >= 1 and row.manifests_after == 1
    assert ids_and_values(table) == [(i, "w2") for i in range(10)]


def test_tables_of_a_warehouse_from_sql(sql: Any, tmp_path: Path) -> None:
    cat = mp.catalog(str(tmp_path / "wh"))
    cat.create_table("sales.orders", SCHEMA)
    cat.create_table("sales.refunds", SCHEMA)
    cat.create_table("hr.people", SCHEMA)
    rows = sql(f"SELECT namespace, table FROM minipaimon_tables('{tmp_path / 'wh'}')").collect()
    assert [tuple(r) for r in rows] == [("hr", "people"), ("sales", "orders"), ("sales", "refunds")]


@pytest.mark.parametrize("call, error", [
    ("minipaimon_compact('{missing}')", "TableNotFoundError"),
    ("minipaimon_compact(42)", "InvalidArgumentError"),
    ("minipaimon_compact('{path}', 'yes')", "InvalidArgumentError"),
    ("minipaimon_expire_snapshots('{path}', 'two')", "InvalidArgumentError"),
    ("minipaimon_expire_snapshots('{path}', 0)", "InvalidArgumentError"),
    ("minipaimon_rollback('{path}', 99)", "SnapshotNotFoundError"),
    ("minipaimon_rollback('{path}', 'nope')", "SnapshotNotFoundError"),
    ("minipaimon_create_tag('{path}', '../escape')", "InvalidArgumentError"),
    ("minipaimon_create_tag('{path}', 'gold')", "InvalidArgumentError"),  # it exists
    ("minipaimon_create_tag('{path}', 'silver', 99)", "SnapshotNotFoundError"),
    ("minipaimon_delete_tag('{path}', 'nope')", "SnapshotNotFoundError"),
    ("minipaimon_delete_tag('{path}', 'gold,nope')", "SnapshotNotFoundError"),
    ("minipaimon_rename_tag('{path}', 'nope', 'x')", "SnapshotNotFoundError"),
    ("minipaimon_rename_tag('{path}', 'gold', '../x')", "InvalidArgumentError"),
    ("minipaimon_create_tag('{path}', 'silver', NULL, '5')", "InvalidArgumentError"),
    ("minipaimon_remove_orphan_files('{path}', 99999999999999)", "InvalidArgumentError"),
    ("minipaimon_remove_orphan_files('{path}', 0)", "InvalidArgumentError"),  # 1970: nothing
    ("minipaimon_remove_orphan_files('{path}', 'soon')", "InvalidArgumentError"),
    ("minipaimon_rewrite_manifests('{missing}')", "TableNotFoundError"),
    ("minipaimon_diff('{path}', 1, 7)", "SnapshotNotFoundError"),
    ("minipaimon_diff('{missing}', 1, 2)", "TableNotFoundError"),
    ("minipaimon_tables(7)", "InvalidArgumentError"),
    ("minipaimon_delete('{missing}', 'id = 1')", "TableNotFoundError"),
    ("minipaimon_delete('{path}', 'nope = 1')", "InvalidArgumentError"),
    ("minipaimon_delete('{path}', 'id = (1')", "InvalidArgumentError"),
    ("minipaimon_delete('{path}', 'soundex(v) = 1')", "InvalidArgumentError"),  # not covered
    ("minipaimon_update('{path}', 'id = 5', 'id = 1')", "InvalidArgumentError"),  # a key column
    ("minipaimon_update('{path}', 'v = ', 'id = 1')", "InvalidArgumentError"),
    ("minipaimon_update('{path}', 'v = 3', 'nope > 3')", "InvalidArgumentError"),
])
def test_bad_calls_fail_at_analysis_in_one_line_and_change_nothing(
        sql: Any, tmp_path: Path, call: str, error: str) -> None:
    from pyspark.errors import AnalysisException

    table = pk_table(str(tmp_path / "t"), 2)
    table.create_tag("gold")
    before = sorted(p.name for p in (tmp_path / "t").rglob("*"))
    query = "SELECT * FROM " + call.format(path=table.path, missing=tmp_path / "none")
    with pytest.raises(AnalysisException) as raised:
        sql(query)  # analysis only: no task has run
    message = str(raised.value)
    first = message.splitlines()[0]
    assert f"minipaimon_core.errors.{error}: " in first, message
    assert "Traceback" not in message and "File \"" not in message, message
    assert sorted(p.name for p in (tmp_path / "t").rglob("*")) == before


TYPED = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                   pa.field("n", pa.int32())])


@pytest.mark.parametrize("call, error", [
    ("minipaimon_delete('{path}', \"id = 'abc'\")", "InvalidArgumentError"),
    ("minipaimon_delete('{path}', \"n IN (1, 'x')\")", "InvalidArgumentError"),
    ("minipaimon_update('{path}', 'n = 1', \"id > 'x'\")", "InvalidArgumentError"),
    # no row matches these: the value is still checked against its column
    ("minipaimon_update('{path}', \"n = 'x'\", 'id > 100')", "SchemaMismatchError"),
    ("minipaimon_update('{path}', 'n = 99999999999', 'id > 100')", "SchemaMismatchError"),
    ("minipaimon_update('{path}', 'n = 1.5e10', 'id > 100')", "SchemaMismatchError"),
    ("minipaimon_update('{path}', 'n = upper(dt)', 'id > 100')", "SchemaMismatchError"),
    ("minipaimon_update('{path}', 'dt = NULL', 'id = 1')", "InvalidArgumentError"),
])
def test_literals_that_do_not_fit_their_columns_fail_at_analysis(
        sql: Any, tmp_path: Path, call: str, error: str) -> None:
    from pyspark.errors import AnalysisException

    table = mp.create_table(str(tmp_path / "t"), TYPED, partition_by=["dt"])
    table.write(pa.table({"id": [1, 2], "dt": ["a", "b"], "n": [1, 2]}, schema=TYPED))
    before = sorted(p.name for p in (tmp_path / "t").rglob("*"))
    with pytest.raises(AnalysisException) as raised:
        sql("SELECT * FROM " + call.format(path=table.path))  # analysis only: no task has run
    message = str(raised.value)
    assert f"minipaimon_core.errors.{error}: " in message.splitlines()[0], message
    assert "Traceback" not in message and "File \"" not in message, message
    assert sorted(p.name for p in (tmp_path / "t").rglob("*")) == before


def test_comparisons_with_null_match_nothing_as_in_sql(sql: Any, tmp_path: Path) -> None:
    table = mp.create_table(str(tmp_path / "t"), TYPED, partition_by=["dt"])
    table.write(pa.table({"id": [1, 2, 3], "dt": ["a", "b", "b"], "n": [1, None, 3]}, schema=TYPED))
    path = table.path
    assert sql(f"SELECT * FROM minipaimon_delete('{path}', 'n = NULL')").collect()[0].rows_deleted == 0
    assert sql(f"SELECT * FROM minipaimon_delete('{path}', 'n NOT IN (1, NULL)')").collect()[0].rows_deleted == 0
    row = sql(f"SELECT * FROM minipaimon_update('{path}', 'n = 7', 'n <> NULL OR id = 3')").collect()[0]
    assert row.rows_updated == 1
    row = sql(f"SELECT * FROM minipaimon_delete('{path}', 'n IN (1, NULL)')").collect()[0]
    assert row.rows_deleted == 1
    got = mp.open_table(path).to_arrow().sort_by("id")
    assert got.column("id").to_pylist() == [2, 3] and got.column("n").to_pylist() == [None, 7]


def test_an_explicit_compaction_compacts_below_the_automatic_trigger(sql: Any, tmp_path: Path) -> None:
    """Three level-0 files per bucket: below the picker's trigger, compacted when asked."""
    for strategy in ("full", "minor"):
        table = pk_table(str(tmp_path / strategy), 3)
        row = sql(f"SELECT * FROM minipaimon_compact('{table.path}', '{strategy}')").collect()[0]
        assert row.buckets == 2 and row.files_removed == 6, strategy
        assert ids_and_values(table) == [(i, "w2") for i in range(10)]


def test_distributed_compaction_from_sql_spreads_the_buckets_over_tasks(sql: Any, tmp_path: Path) -> None:
    from pyspark.errors import AnalysisException

    table = pk_table(str(tmp_path / "t"), 3)
    query = f"SELECT * FROM minipaimon_compact_distributed('{table.path}')"
    try:
        plan = sql("EXPLAIN " + query).collect()[0][0]
    except AnalysisException:
        pytest.skip("this Spark has no SQL table functions (4.0): minipaimon_compact only")
    assert "RoundRobinPartitioning" in plan and "minipaimon_compact_unit" in plan, plan
    row = sql(query).collect()[0]
    assert row.buckets == 2 and row.files_removed == 6 and row.files_added == 2
    assert mp.open_table(table.path).latest_snapshot().commitKind == "COMPACT"
    assert ids_and_values(table) == [(i, "w2") for i in range(10)]
    assert sql(query).collect()[0].snapshot_id is None  # nothing left to do


def test_procedures_reach_object_store_tables_through_the_session_settings(
        spark: Any, object_store: Any) -> None:
    """Connection settings come from spark.minipaimon.s3.* / spark.minipaimon.azure.* (never
    a SQL literal); a namespace.table name from spark.minipaimon.warehouse."""
    warehouse, options = object_store
    cat = mp.catalog(warehouse, options=options)
    table = cat.create_table("db.t", SCHEMA, primary_key=["id"], options={"bucket": "2", "write-only": "true"})
    for i in range(3):
        table.write(pa.table({"id": list(range(10)), "v": [f"w{i}"] * 10}, schema=SCHEMA))
    conf = {f"spark.minipaimon.{k}": v for k, v in options.items()}
    conf["spark.minipaimon.warehouse"] = warehouse
    for k, v in conf.items():
        spark.conf.set(k, v)
    try:
        minipaimon_spark.register(spark)
        query = "SELECT * FROM minipaimon_compact('db.t')"
        assert not any(v in query for k, v in options.items() if k.endswith("key"))
        row = spark.sql(query).collect()[0]
        assert row.buckets == 2 and row.files_removed == 6
        tags = spark.sql(f"SELECT * FROM minipaimon_create_tag('{table.path}', 'done')").collect()
        assert tags == [("done", 4)]
        assert cat.table("db.t").latest_snapshot().commitKind == "COMPACT"
    finally:
        for k in conf:
            spark.conf.unset(k)
        minipaimon_spark.register(spark)


def test_spark_reads_and_writes_tables_by_name_in_a_warehouse(spark: Any, tmp_path: Path) -> None:
    warehouse = str(tmp_path / "wh")
    df = spark.createDataFrame([(1, "a"), (2, "b")], "id bigint, v string")
    (df.write.format("minipaimon").mode("append").option("warehouse", warehouse)
       .option("primary-key", "id").save("sales.orders"))
    cat = mp.catalog(warehouse)
    assert cat.list_tables("sales") == ["orders"]
    assert "warehouse" not in cat.table("sales.orders").options()
    got = spark.read.format("minipaimon").option("warehouse", warehouse).load("sales.orders")
    assert sorted(tuple(r) for r in got.collect()) == [(1, "a"), (2, "b")]
    snapshots = spark.read.format("minipaimon").option("warehouse", warehouse).load("sales.orders$snapshots")
    assert [r.snapshot_id for r in snapshots.collect()] == [1]


def test_partition_expiration_and_tags_by_hand_from_sql(sql: Any, tmp_path: Path) -> None:
    """minipaimon_expire_partitions / minipaimon_auto_tags / minipaimon_expire_tags, with dry runs."""
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("dt", pa.string())])
    path = str(tmp_path / "t")
    t = mp.create_table(path, schema, partition_by=["dt"],
                        options={"write-only": "true", "tag.automatic-creation": "process-time"})
    t.write(pa.table({"id": [1, 2], "dt": ["2000-01-01", "2999-01-01"]}, schema=schema))
    rows = sql(f"SELECT * FROM minipaimon_expire_partitions('{path}', '30 d', true)").collect()
    assert [(r.partition, r.dry_run) for r in rows] == [("dt=2000-01-01", True)]
    assert len(mp.open_table(path).snapshots()) == 1
    rows = sql(f"SELECT * FROM minipaimon_expire_partitions('{path}', '30 d')").collect()
    assert [r.partition for r in rows] == ["dt=2000-01-01"] and rows[0].snapshot_id == 2
    assert mp.open_table(path).to_arrow().column("dt").to_pylist() == ["2999-01-01"]
    rows = sql(f"SELECT * FROM minipaimon_auto_tags('{path}')").collect()
    assert [r.action for r in rows] == ["created"] and rows[0].tag in mp.open_table(path).tags()
    rows = sql(f"SELECT * FROM minipaimon_expire_tags('{path}', '0s', true)").collect()
    assert [(r.tag, r.action, r.dry_run) for r in rows] == [(rows[0].tag, "deleted", True)]
    with pytest.raises(Exception, match="partition.expiration-time"):
        sql(f"SELECT * FROM minipaimon_expire_partitions('{path}', NULL)").collect()
