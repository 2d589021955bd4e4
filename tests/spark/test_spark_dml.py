"""Row-level changes from Spark: ``minipaimon_spark.merge`` and the SQL procedures
``minipaimon_delete`` / ``minipaimon_update``, checked with chispa against the same
operation done in pandas."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pytest

pytest.importorskip("pyspark")

from chispa import assert_df_equality  # noqa: E402

import minipaimon_core as mp  # noqa: E402
import minipaimon_spark  # noqa: E402

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    pa.field("status", pa.string()), pa.field("amount", pa.int64())])


def seed(path: str, primary_key: bool) -> tuple[mp.Table, pd.DataFrame]:
    frame = pd.DataFrame({"id": range(40), "dt": [f"d{i % 3}" for i in range(40)],
                          "status": ["open"] * 40, "amount": [i * 10 for i in range(40)]})
    t = mp.create_table(path, SCHEMA, partition_by=["dt"], primary_key=["id", "dt"] if primary_key else None,
                        options={"bucket": "2"} if primary_key else {})
    t.write(pa.Table.from_pandas(frame, schema=SCHEMA, preserve_index=False))
    return t, frame


def spark_rows(spark: Any, path: str) -> Any:
    return spark.read.format("minipaimon").load(path).orderBy("id")


def expected(spark: Any, frame: pd.DataFrame) -> Any:
    table = pa.Table.from_pandas(frame.sort_values("id"), schema=SCHEMA, preserve_index=False)
    return spark.createDataFrame(table.to_pandas(), schema=spark_rows_schema(spark)).orderBy("id")


def spark_rows_schema(spark: Any) -> Any:
    from minipaimon_spark.types import to_spark_schema

    return to_spark_schema(SCHEMA)


@pytest.mark.smoke
@pytest.mark.parametrize("primary_key", [False, True], ids=["append", "primary-key"])
def test_merge_a_dataframe_like_pandas_would(spark: Any, tmp_path: Path, primary_key: bool) -> None:
    path = str(tmp_path / "t")
    _, frame = seed(path, primary_key)
    changes = pd.DataFrame({"id": [1, 2, 3, 100], "dt": ["d1", "d2", "d0", "d1"],
                            "status": ["paid", "void", "x", "new"], "amount": [1, 0, 3, 4]})
    source = spark.createDataFrame(changes)
    result = (minipaimon_spark.merge(spark, path, source, on=["id", "dt"])
              .when_matched_delete(condition=pc.field("source.status") == "void")
              .when_matched_update(set={"status": "source.status", "amount": pc.field("target.amount") + 1})
              .when_not_matched_insert_all()
              .execute())
    # the same in pandas: the join, then the first clause that holds
    merged = frame.merge(changes, on=["id", "dt"], how="left", suffixes=("", "_s"), indicator=True)
    matched = merged["_merge"] == "both"
    deleted = matched & (merged["status_s"] == "void")
    want = merged[~deleted].copy()
    upd = matched[~deleted]
    want.loc[upd, "status"] = want.loc[upd, "status_s"]
    want.loc[upd, "amount"] = want.loc[upd, "amount"] + 1
    unmatched = changes.merge(frame[["id", "dt"]], on=["id", "dt"], how="left", indicator=True)
    inserts = unmatched[unmatched["_merge"] == "left_only"][list(changes.columns)]
    want = pd.concat([want[list(frame.columns)], inserts], ignore_index=True)
    assert (result.inserted, result.updated, result.deleted) == (len(inserts), int(upd.sum()), int(deleted.sum()))
    assert_df_equality(spark_rows(spark, path), expected(spark, want), ignore_nullable=True)


@pytest.mark.parametrize("primary_key", [False, True], ids=["append", "primary-key"])
def test_delete_and_update_procedures_like_pandas(spark: Any, tmp_path: Path, primary_key: bool) -> None:
    minipaimon_spark.register(spark)
    path = str(tmp_path / "t")
    _, frame = seed(path, primary_key)
    row = spark.sql(f"SELECT * FROM minipaimon_delete('{path}', \"dt = 'd1' AND amount < 200 OR id IN (0, 2)\")"
                    ).collect()[0]
    gone = ((frame.dt == "d1") & (frame.amount < 200)) | frame.id.isin([0, 2])
    assert row.rows_deleted == int(gone.sum()) and row.snapshot_id == 2
    frame = frame[~gone]
    row = spark.sql(f"SELECT * FROM minipaimon_update('{path}', \"status = 'void', amount = 0\", 'amount >= 300')"
                    ).collect()[0]
    hit = frame.amount >= 300
    assert row.rows_updated == int(hit.sum())
    frame = frame.copy()
    frame.loc[hit, "status"] = "void"
    frame.loc[hit, "amount"] = 0
    assert_df_equality(spark_rows(spark, path), expected(spark, frame), ignore_nullable=True)
    nothing = spark.sql(f"SELECT * FROM minipaimon_delete('{path}', 'id > 1000')").collect()[0]
    assert nothing.rows_deleted == 0 and nothing.snapshot_id is None


@pytest.mark.parametrize("primary_key", [False, True], ids=["append", "primary-key"])
def test_merge_with_a_by_source_clause_changes_every_piece_like_pandas(spark: Any, tmp_path: Path,
                                                                        primary_key: bool) -> None:
    """A by-source clause reaches the pieces (files, buckets) no source row matched too."""
    path = str(tmp_path / "t")
    t, frame = seed(path, primary_key)
    t.write(pa.Table.from_pandas(frame.assign(id=frame.id + 40), schema=SCHEMA, preserve_index=False))
    frame = pd.concat([frame, frame.assign(id=frame.id + 40)], ignore_index=True)
    changes = pd.DataFrame({"id": [1, 41, 7, 200], "dt": ["d1", "d2", "d1", "d0"],
                            "status": ["a", "b", "c", "d"], "amount": [5, 6, 7, 8]})
    result = (minipaimon_spark.merge(spark, path, spark.createDataFrame(changes).repartition(3), on=["id", "dt"])
              .when_matched_update_all(condition=pc.field("target.amount") < 300)
              .when_not_matched_insert(values={"id": "source.id", "dt": "source.dt", "status": pc.scalar("new")})
              .when_not_matched_by_source_delete(condition=pc.field("target.amount") >= 350)
              .execute())
    merged = frame.merge(changes, on=["id", "dt"], how="left", suffixes=("", "_s"), indicator=True)
    matched = merged["_merge"] == "both"
    upd = matched & (merged["amount"] < 300)
    gone = ~matched & (merged["amount"] >= 350)
    want = merged[~gone].copy()
    for c in ("status", "amount"):
        want.loc[upd[~gone], c] = want.loc[upd[~gone], c + "_s"]
    known = changes.merge(frame[["id", "dt"]], on=["id", "dt"], how="left", indicator=True)
    new = known[known["_merge"] == "left_only"][["id", "dt"]].assign(status="new", amount=None)
    want = pd.concat([want[list(frame.columns)], new], ignore_index=True)
    want["amount"] = want["amount"].astype("Int64")
    assert (result.inserted, result.updated, result.deleted) == (len(new), int(upd.sum()), int(gone.sum()))
    assert_df_equality(spark_rows(spark, path), expected(spark, want), ignore_nullable=True)


def table_files(path: Path) -> set[str]:
    return {str(p.relative_to(path)) for p in path.rglob("*") if p.is_file()}


@pytest.mark.parametrize("primary_key", [False, True], ids=["append", "primary-key"])
def test_merge_errors_from_the_executors_are_typed_and_leave_nothing(spark: Any, tmp_path: Path,
                                                                      primary_key: bool) -> None:
    """Duplicate source rows for one target row, and a value that does not fit, raised
    typed on the driver; every file the tasks wrote is deleted, no snapshot is made."""
    path = tmp_path / "t"
    seed(str(path), primary_key)
    before = table_files(path)
    dupes = spark.createDataFrame([(1, "d1", "x", 1), (1, "d1", "y", 2), (5, "d2", "z", 3)],
                                  "id long, dt string, status string, amount long")
    with pytest.raises(mp.InvalidArgumentError, match="several source rows match one target row"):
        minipaimon_spark.merge(spark, str(path), dupes, on=["id", "dt"]).when_matched_update_all().execute()
    words = spark.createDataFrame([(2, "d2", "x", 2), (300, "d0", "n", 1)],
                                  "id long, dt string, status string, amount long")
    with pytest.raises(mp.SchemaMismatchError, match="do not fit column 'amount'"):
        (minipaimon_spark.merge(spark, str(path), words, on=["id", "dt"])
         .when_matched_update(set={"amount": "source.status"})
         .when_not_matched_insert_all().execute())
    assert table_files(path) == before
    assert mp.open_table(str(path)).latest_snapshot().id == 1  # type: ignore[union-attr]


def test_merge_into_a_primary_key_table_on_other_columns_merges_on_the_driver(spark: Any, tmp_path: Path) -> None:
    """Joined on a column that is not the key, rows of one key could change in several
    tasks: the merge runs on the driver instead, with the same result."""
    path = str(tmp_path / "t")
    _, frame = seed(path, True)
    source = spark.createDataFrame([(30, "paid")], "amount long, status string")
    result = (minipaimon_spark.merge(spark, path, source, on="amount")
              .when_matched_update(set={"status": "source.status"}).execute())
    assert (result.inserted, result.updated, result.deleted) == (0, 1, 0)
    frame.loc[frame.amount == 30, "status"] = "paid"
    assert_df_equality(spark_rows(spark, path), expected(spark, frame), ignore_nullable=True)


def test_changes_of_an_append_table_with_deletion_vectors_read_alike_by_spark(spark: Any, tmp_path: Path) -> None:
    """With ``deletion-vectors.enabled`` an append table's rows are marked, not rewritten:
    Spark's reads (the source, and ``minipaimon_spark.table``, which hands files without
    vectors to Spark's own Parquet reader) leave the marked rows out."""
    path = str(tmp_path / "t")
    frame = pd.DataFrame({"id": range(40), "dt": [f"d{i % 3}" for i in range(40)],
                          "status": ["open"] * 40, "amount": [i * 10 for i in range(40)]})
    t = mp.create_table(path, SCHEMA, partition_by=["dt"], options={"deletion-vectors.enabled": "true"})
    t.write(pa.Table.from_pandas(frame, schema=SCHEMA, preserve_index=False))
    files = set(t.system_table("files").column("file_path").to_pylist())
    changes = pd.DataFrame({"id": [1, 2, 100], "dt": ["d1", "d2", "d1"], "status": ["paid", "void", "new"],
                            "amount": [1, 2, 3]})
    (minipaimon_spark.merge(spark, path, spark.createDataFrame(changes), on=["id", "dt"])
     .when_matched_delete(condition=pc.field("source.status") == "void")
     .when_matched_update(set={"status": "source.status"})
     .when_not_matched_insert_all().execute())
    minipaimon_spark.register(spark)
    spark.sql(f"SELECT * FROM minipaimon_delete('{path}', 'amount >= 300')").collect()
    frame.loc[frame.id == 1, "status"] = "paid"
    frame = frame[(frame.id != 2) & (frame.amount < 300)]
    frame = pd.concat([frame, changes[changes.id == 100]], ignore_index=True)
    assert files <= set(mp.open_table(path).system_table("files").column("file_path").to_pylist())
    assert_df_equality(spark_rows(spark, path), expected(spark, frame), ignore_nullable=True)
    native = minipaimon_spark.table(spark, path).orderBy("id")
    assert_df_equality(native, expected(spark, frame), ignore_nullable=True, ignore_column_order=True)


def test_merge_on_a_timestamp_key_in_another_session_time_zone(spark: Any, tmp_path: Path) -> None:
    """Spark hands timestamps back in the session's time zone: the merge must not prune the
    target by such bounds (every matched row is found, none becomes an insert)."""
    import datetime as dt

    schema = pa.schema([pa.field("ts", pa.timestamp("us", tz="UTC"), nullable=False), ("v", pa.int64())])
    times = [dt.datetime(2025, 1, 1, h, tzinfo=dt.timezone.utc) for h in range(6)]
    t = mp.create_table(str(tmp_path / "t"), schema)
    t.write(pa.table({"ts": times, "v": list(range(6))}, schema=schema))
    zone = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/Los_Angeles")
    try:
        source = spark.createDataFrame(pa.table({"ts": times[2:4], "v": [20, 30]}, schema=schema).to_pandas())
        result = (minipaimon_spark.merge(spark, t.path, source, on="ts")
                  .when_matched_update_all().when_not_matched_insert_all().execute())
    finally:
        spark.conf.set("spark.sql.session.timeZone", zone)
    assert (result.inserted, result.updated, result.deleted) == (0, 2, 0)
    assert t.refresh().to_arrow().sort_by("ts").column("v").to_pylist() == [0, 1, 20, 30, 4, 5]


@pytest.mark.parametrize("primary_key", [False, True], ids=["append", "primary-key"])
def test_a_spark_merge_takes_not_matched_by_source_update(spark: Any, tmp_path: Path, primary_key: bool) -> None:
    """The core's when_not_matched_by_source_update passes through minipaimon_spark.merge:
    its units apply it to the target rows no source row matches (issue 32 item 22)."""
    path = str(tmp_path / "t")
    _, frame = seed(path, primary_key)
    source = spark.createDataFrame(pd.DataFrame({"id": [1, 2], "dt": ["d1", "d2"], "status": ["x", "y"],
                                                 "amount": [0, 0]}))
    result = (minipaimon_spark.merge(spark, path, source, on=["id", "dt"])
              .when_not_matched_by_source_update(set={"status": pc.scalar("stale")},
                                                 condition=pc.field("target.amount") >= 300)
              .execute())
    want = frame.copy()
    stale = ~want["id"].isin([1, 2]) & (want["amount"] >= 300)
    want.loc[stale, "status"] = "stale"
    assert (result.inserted, result.updated, result.deleted) == (0, int(stale.sum()), 0)
    assert_df_equality(spark_rows(spark, path), expected(spark, want), ignore_nullable=True)


@pytest.mark.parametrize("primary_key", [False, True], ids=["append", "primary-key"])
def test_a_spark_merge_and_native_read_take_any_column_name(spark: Any, tmp_path: Path, primary_key: bool) -> None:
    """Column names holding '.', '`' or ' ' are plain names to a table (and to Spark's own
    writers): a merge joined on one and the native read of an evolved schema take them as
    such (PySpark's applyInArrow/mapInArrow, and unquoted names, parsed them as paths)."""
    key, value, other = "id.no", "e`f", "g h"
    schema = pa.schema([pa.field(key, pa.int64(), nullable=False), (value, pa.string()), (other, pa.int64())])
    path = str(tmp_path / "t")
    t = mp.create_table(path, schema, primary_key=[key] if primary_key else None,
                        options={"bucket": "2"} if primary_key else {})
    t.write(pa.table({key: [1, 2, 3], value: ["a", "b", "c"], other: [10, 20, 30]}, schema=schema))
    source = spark.createDataFrame(pa.table({key: [2, 4], value: ["B", "D"], other: [21, 41]}, schema=schema))
    minipaimon_spark.merge(spark, path, source, on=[key]).when_matched_update_all().when_not_matched_insert_all() \
        .execute()
    want = [(1, "a", 10), (2, "B", 21), (3, "c", 30), (4, "D", 41)]
    assert sorted(zip(*mp.open_table(path).to_arrow().to_pydict().values())) == want
    t.rename_column(value, "e`g")
    assert sorted(tuple(r) for r in minipaimon_spark.table(spark, path).collect()) == want
    assert sorted(tuple(r) for r in minipaimon_spark.table(spark, path, columns="e`g,id.no").collect()) == \
        sorted((v, k) for k, v, _ in want)


def test_a_merge_sources_timestamp_of_the_other_kind_is_cast_whatever_its_name(spark: Any) -> None:
    from datetime import datetime

    from minipaimon_spark.zones import align_source

    source = spark.createDataFrame([(datetime(2020, 1, 1, 12), 1)], "`t``s.u` timestamp, `n` int")
    aligned = align_source(source, pa.schema([("t`s.u", pa.timestamp("us")), ("n", pa.int32())]))
    assert [f.dataType.typeName() for f in aligned.schema.fields] == ["timestamp_ntz", "integer"]
    assert aligned.count() == 1


def test_merge_multiple_clauses_stores_values_by_spark_store_assignment(spark: Any, tmp_path: Path) -> None:
    """paimon-spark MergeIntoTableTestBase.scala, "Paimon MergeInto: multiple clauses" (and
    "only update": SET a = source.a of the join column): ``b * 1.1`` into the INT column b
    is stored as Spark stores it (990), not refused (minipaimon_core.dml.assignment)."""
    schema = pa.schema([pa.field("a", pa.int32(), nullable=False), ("b", pa.int32()), ("c", pa.string())])
    t = mp.create_table(str(tmp_path / "target"), schema, primary_key=["a"])
    t.write(pa.Table.from_pylist([{"a": a, "b": a * 10, "c": f"c{a}"} for a in range(1, 6)], schema=schema))
    source = spark.createDataFrame([(1, 100, "c11"), (3, 300, "c33"), (5, 500, "c55"), (7, 700, "c77"),
                                    (9, 900, "c99")], "a INT, b INT, c STRING").repartition(2)
    (minipaimon_spark.merge(spark, t.path, source, on=["a"])
     .when_matched_update(set={"b": pc.field("source.b") + pc.field("target.b")},
                          condition=pc.field("target.a") == 5)
     .when_matched_update_all(condition=pc.field("source.c") > pc.scalar("c2"))
     .when_matched_delete()
     .when_not_matched_insert(values={"a": "source.a", "b": pc.field("source.b") * 1.1, "c": "source.c"},
                              condition=pc.field("source.c") > pc.scalar("c9"))
     .when_not_matched_insert_all()
     .execute())
    rows = [tuple(r.values()) for r in mp.open_table(t.path).to_arrow().sort_by("a").to_pylist()]
    assert rows == [(2, 20, "c2"), (3, 300, "c33"), (4, 40, "c4"), (5, 550, "c5"), (7, 700, "c77"), (9, 990, "c99")]
    (minipaimon_spark.merge(spark, t.path, spark.createDataFrame([(2, 21, "x")], "a INT, b INT, c STRING"), on=["a"])
     .when_matched_update(set={"a": "source.a", "b": "source.b"}).execute())
    assert mp.open_table(t.path).to_arrow().sort_by("a").column("b").to_pylist()[0] == 21
