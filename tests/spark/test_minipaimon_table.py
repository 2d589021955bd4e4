"""``minipaimon_spark.MiniPaimonTable`` (delta-spark's ``DeltaTable``): each change, with
conditions and values in Spark SQL, against the core's DML on a twin table (the same rows,
the same change in pyarrow expressions), for each kind of table: primary key with each
merge engine that allows it (and ``sequence.field``), deletion vectors, dynamic buckets,
append tables, partitions. The twin is compared after each change (Arrow, exact) and
with chispa at the end; the merge metrics with the core's MergeResult."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

pytest.importorskip("pyspark")

from chispa import assert_df_equality  # noqa: E402

import minipaimon_core as mp  # noqa: E402
from minipaimon_spark import MiniPaimonTable  # noqa: E402

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    pa.field("name", pa.string()), pa.field("b", pa.int32())])
SOURCE = "id long, dt string, name string, b int"

KINDS = {  # name -> (primary key, options): every merge engine that has deletes and updates
    "pk": (True, {"bucket": "2"}),
    "pk-partial-update": (True, {"bucket": "2", "merge-engine": "partial-update",
                                 "partial-update.remove-record-on-delete": "true"}),
    "pk-sequence-field-deletion-vectors": (True, {"bucket": "2", "sequence.field": "b",
                                                  "deletion-vectors.enabled": "true"}),
    "pk-dynamic-buckets": (True, {"bucket": "-1"}),
    "append": (False, {}),
    "append-deletion-vectors": (False, {"deletion-vectors.enabled": "true"}),
}


def rows(ids: range) -> pa.Table:
    return pa.table({"id": list(ids), "dt": [f"d{i % 2}" for i in ids], "name": [f"n{i}" for i in ids],
                     "b": list(ids)}, schema=SCHEMA)


def twins(root: Path, primary_key: bool, options: dict[str, str]) -> tuple[mp.Table, mp.Table]:
    """Two tables with the same rows, written in two commits (two files a bucket)."""
    out = []
    for name in ("core", "spark"):
        t = mp.create_table(str(root / name), SCHEMA, primary_key=["id", "dt"] if primary_key else None,
                            partition_by=["dt"], options=options)
        t.write(rows(range(0, 30)))
        t.write(rows(range(30, 40)))
        out.append(t)
    return out[0], out[1]


def same(core: mp.Table, spark_table: mp.Table) -> None:
    def read(t: mp.Table) -> pa.Table:
        return mp.open_table(t.path).to_arrow().sort_by([("id", "ascending"), ("dt", "ascending")])
    assert read(spark_table).equals(read(core))


@pytest.mark.parametrize("kind", list(KINDS))
def test_update_delete_merge_equal_the_core(spark: Any, tmp_path: Path, kind: str) -> None:
    primary_key, options = KINDS[kind]
    core, target = twins(tmp_path, primary_key, options)
    t = MiniPaimonTable.forPath(spark, target.path)

    # update: Spark SQL condition and values; the core's with a filter and pyarrow expressions
    t.update("id % 3 = 0 AND dt = 'd0'", {"name": "upper(name)", "b": "b - 100"})
    core.update([("id", "in", list(range(0, 40, 3))), ("dt", "=", "d0")],
                set={"name": pc.utf8_upper(pc.field("name")), "b": pc.field("b") - 100})
    same(core, target)

    # delete, a Column condition
    from pyspark.sql import functions as F

    t.delete((F.col("dt") == "d1") & (F.col("id") > 30))
    core.delete([("dt", "=", "d1"), ("id", ">", 30)])
    same(core, target)

    # merge: matched update and delete, inserts, and (primary keys) a by-source update
    source = spark.createDataFrame([(1, "d1", "x", 500), (2, "d0", "y", -500), (3, "d1", "gone", 0),
                                    (100, "d0", "new", 7), (6, "d0", "z", 600)], SOURCE)
    merge = (t.alias("t").merge(source.alias("s"), "t.id = s.id AND t.dt = s.dt")
             .whenMatchedDelete("s.name = 'gone'")
             .whenMatchedUpdate("s.b > t.b", {"name": "s.name", "b": "s.b"})
             .whenNotMatchedInsert("s.name = 'new'", {"id": "s.id", "dt": "s.dt", "name": "'inserted'"})
             .whenNotMatchedInsertAll())
    builder = (core.merge(source.toArrow(), on=["id", "dt"])
               .when_matched_delete(condition=pc.field("source.name") == "gone")
               .when_matched_update(set={"name": "source.name", "b": "source.b"},
                                    condition=pc.field("source.b") > pc.field("target.b"))
               .when_not_matched_insert(values={"id": "source.id", "dt": "source.dt", "name": pc.scalar("inserted")},
                                        condition=pc.field("source.name") == "new")
               .when_not_matched_insert_all())
    if primary_key:  # by-source clauses: every unit is read
        merge = merge.whenNotMatchedBySourceUpdate("t.id >= 35", {"name": "'orphan'"})
        builder = builder.when_not_matched_by_source_update(
            set={"name": pc.scalar("orphan")}, condition=pc.field("target.id") >= 35)
    if kind in ("pk", "append"):
        merge = merge.whenNotMatchedBySourceDelete("t.id = 0")
        builder = builder.when_not_matched_by_source_delete(condition=pc.field("target.id") == 0)
    metrics = merge.execute().collect()[0]
    result = builder.execute()
    assert (metrics.num_inserted_rows, metrics.num_updated_rows, metrics.num_deleted_rows) == \
        (result.inserted, result.updated, result.deleted)
    same(core, target)
    assert_df_equality(spark.createDataFrame(mp.open_table(target.path).to_arrow()),
                       spark.createDataFrame(mp.open_table(core.path).to_arrow()),
                       ignore_row_order=True, ignore_nullable=True)


@pytest.mark.parametrize("engine", ["first-row", "aggregation"])
def test_insert_only_engines_merge_inserts_and_refuse_changes(spark: Any, tmp_path: Path, engine: str) -> None:
    options = {"bucket": "2", "merge-engine": engine}
    if engine == "aggregation":
        options["fields.b.aggregate-function"] = "sum"
    core, target = twins(tmp_path, True, options)
    t = MiniPaimonTable.forPath(spark, target.path)
    source = spark.createDataFrame([(1, "d1", "x", 5), (100, "d0", "new", 7)], SOURCE)
    t.alias("t").merge(source.alias("s"), "t.id = s.id AND t.dt = s.dt").whenNotMatchedInsertAll().execute()
    core.merge(source.toArrow(), on=["id", "dt"]).when_not_matched_insert_all().execute()
    same(core, target)
    before = target.latest_snapshot()
    with pytest.raises(mp.UnsupportedFeatureError, match=engine):
        t.delete("id = 1")
    with pytest.raises(mp.UnsupportedFeatureError, match=engine):
        t.update("id = 1", {"b": "1"})
    assert mp.open_table(target.path).latest_snapshot() == before


def test_a_merge_not_pinned_to_the_key_refuses_to_insert_a_held_key(spark: Any, tmp_path: Path) -> None:
    """As a SQL primary key (and the core's merge on part of the key): an unmatched source
    row whose key the table holds would replace that row."""
    core, target = twins(tmp_path, True, {"bucket": "2"})
    t = MiniPaimonTable.forPath(spark, target.path)
    source = spark.createDataFrame([(1, "d1", "x", 0), (200, "d0", "new", 1)], SOURCE)
    before = target.latest_snapshot()
    with pytest.raises(mp.InvalidArgumentError, match="already has"):
        (t.alias("t").merge(source.alias("s"), "t.id = s.id AND t.dt = s.dt AND s.b > t.b")
         .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())
    assert mp.open_table(target.path).latest_snapshot() == before
    # the same merge inserting only new keys goes through
    fine = source.where("id = 200")
    t.alias("t").merge(fine.alias("s"), "t.id = s.id AND t.dt = s.dt AND s.b > t.b") \
        .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()
    assert mp.open_table(target.path).scan(filter=[("id", "=", 200)]).to_arrow().num_rows == 1


def test_values_are_stored_as_spark_sql_insert_stores_them(spark: Any, tmp_path: Path) -> None:
    """``b * 1.1`` into an INT column: what Spark SQL's INSERT into a Parquet table stores."""
    _, target = twins(tmp_path, True, {"bucket": "2"})
    t = MiniPaimonTable.forPath(spark, target.path)
    want = spark.sql(f"SELECT * FROM VALUES {', '.join(f'({i})' for i in range(0, 40, 7))} AS v(b)")
    spark.sql(f"CREATE TABLE ansi_ref (b INT) USING parquet LOCATION '{tmp_path / 'ref'}'")
    try:
        want.selectExpr("b * 1.1 + 0.45 AS b").write.insertInto("ansi_ref")
        expected = sorted(r.b for r in spark.table("ansi_ref").collect())
    finally:
        spark.sql("DROP TABLE ansi_ref")
    t.update("id % 7 = 0", {"b": "b * 1.1 + 0.45"})
    got = mp.open_table(target.path).scan(filter=[("id", "in", list(range(0, 40, 7)))]).to_arrow()
    assert sorted(got.column("b").to_pylist()) == expected  # 5 * 1.1 + 0.45 = 5.95 -> 5


def job_ids(spark: Any, group: str) -> list[int]:
    return list(spark.sparkContext.statusTracker().getJobIdsForGroup(group))


@pytest.mark.parametrize(("call", "error", "names"), [
    (lambda t: t.delete("id >"), mp.InvalidArgumentError, "PARSE_SYNTAX_ERROR"),
    (lambda t: t.delete("idd > 3"), mp.InvalidArgumentError, "`idd`"),
    (lambda t: t.update("id = 1", {"nme": "'x'"}), mp.InvalidArgumentError, "'nme'"),
    (lambda t: t.update("id = 1", {"b": "upper(nam)"}), mp.InvalidArgumentError, "`nam`"),
    (lambda t: t.update("id = 1", {"b": "'text'"}), mp.SchemaMismatchError, "'b'"),
    (lambda t: t.update("id = 1", {"b": "3000000000"}), mp.SchemaMismatchError, "'b'"),
    (lambda t: t.update(None, {"id": "id + 1"}), mp.InvalidArgumentError, "'id'"),
    (lambda t: t.alias("t").merge(t._spark.createDataFrame([(1,)], "id long").alias("s"), "t.id = s.idx")
     .whenMatchedDelete().execute(), mp.InvalidArgumentError, "`s`.`idx`"),
    (lambda t: t.alias("t").merge(t._spark.createDataFrame([(1, "d")], "id long, n string").alias("s"),
                                  "t.id = s.id").whenMatchedUpdate(set={"b": "s.n"}).execute(),
     mp.SchemaMismatchError, "'b'"),
])
def test_bad_input_fails_on_the_driver_before_any_task_in_one_line(spark: Any, tmp_path: Path, call: Any,
                                                                   error: type, names: str) -> None:
    _, target = twins(tmp_path, True, {"bucket": "2"})
    t = MiniPaimonTable.forPath(spark, target.path)
    before = target.latest_snapshot()
    sc = spark.sparkContext
    group = f"bad-input-{os.getpid()}-{id(call)}"
    sc.setJobGroup(group, "bad input")
    try:
        with pytest.raises(error) as caught:
            call(t)
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    text = str(caught.value)
    assert "\n" not in text and names in text, text
    assert job_ids(spark, group) == []  # no Spark job ran
    assert mp.open_table(target.path).latest_snapshot() == before


def test_a_row_that_does_not_fit_fails_the_change_typed_and_changes_nothing(spark: Any, tmp_path: Path) -> None:
    _, target = twins(tmp_path, False, {})
    t = MiniPaimonTable.forPath(spark, target.path)
    before = target.latest_snapshot()
    with pytest.raises(mp.SchemaMismatchError, match="does not fit column 'b'"):
        t.update("id = 39", {"b": "b * 100000000000"})
    assert mp.open_table(target.path).latest_snapshot() == before


@pytest.mark.parametrize("primary_key", [True, False], ids=["primary-key", "append"])
def test_a_concurrent_commit_makes_the_change_run_again_on_it(spark: Any, tmp_path: Path, primary_key: bool,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Another writer commits between the change's plan and its commit: an upsert of the key
    it updates (ROWS_CHANGED), a copy-on-write delete that rewrites the file it changes
    (FILES_GONE). As in the core's DML the change is planned and run again on the new
    snapshot: neither the other write nor the change is lost."""
    from minipaimon_spark import row_changes

    _, target = twins(tmp_path, primary_key, {"bucket": "2"} if primary_key else {})
    real, planned = row_changes.commit_units, []

    def racing(ctx: Any, plan: Any, results: Any) -> Any:
        if not planned:
            other = mp.open_table(target.path)
            if primary_key:
                other.write(rows(range(3, 4)).set_column(2, "name", pa.array(["concurrent"])))
            else:
                other.delete([("id", "=", 5)])  # rewrites the file of id 3 (d1, first commit)
        planned.append(plan.snapshot_id)
        return real(mp.open_table(target.path).context(), plan, results)

    monkeypatch.setattr(row_changes, "commit_units", racing)
    MiniPaimonTable.forPath(spark, target.path).update("id = 3", {"name": "concat(name, '!')"})
    assert planned == [2, 3]  # planned again on the other writer's snapshot
    after = {r["id"]: r["name"] for r in mp.open_table(target.path).to_arrow().to_pylist()}
    assert after[3] == ("concurrent!" if primary_key else "n3!") and (5 in after) == primary_key


def test_a_delete_reads_only_the_units_its_condition_can_touch(spark: Any, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from minipaimon_spark import row_changes

    core, target = twins(tmp_path, True, {"bucket": "2"})
    real, units = row_changes.plan_units, []

    def counted(*args: Any) -> Any:
        plan = real(*args)
        units.append(len(plan.units))
        return plan

    monkeypatch.setattr(row_changes, "plan_units", counted)
    t = MiniPaimonTable.forPath(spark, target.path)
    t.delete("dt = 'd1' AND id >= 35")  # one partition of two: its two buckets
    core.delete([("dt", "=", "d1"), ("id", ">=", 35)])
    t.delete("id % 10 = 0")  # nothing the planner can use: every bucket
    core.delete([("id", "in", [0, 10, 20, 30])])
    assert units == [2, 4]
    same(core, target)


@pytest.mark.parametrize(("condition", "dnf"), [
    ("dt = 'd1' AND id >= 35", [[("dt", "=", "d1"), ("id", ">=", 35)]]),
    ("id IN (1, 2) OR name IS NULL", [[("id", "in", [1, 2])], [("name", "is null", None)]]),
    ("dt = 'd1' AND f > 1.5", [[("dt", "=", "d1")]]),       # a float column: left out
    ("f > 1.5", None),                                      # nothing left
    ("ts < '2025-01-01 00:00:00'", None),                   # an instant: the session zone
    ("name = 'it''s'", [[("name", "=", "it's")]]),          # a doubled quote, as Spark reads it
    ("name = 'a\\tb'", None),                               # Spark reads escapes
    ("id % 3 = 0", None),                                   # not the core's grammar
])
def test_the_part_of_a_condition_the_planner_uses(condition: str, dnf: Any) -> None:
    from minipaimon_spark.spark_sql import pruning_filter

    schema = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("name", pa.string()), ("f", pa.float64()),
                        ("ts", pa.timestamp("us", tz="UTC"))])
    assert pruning_filter(condition, schema) == dnf


STORE_PAIRS = [  # (value type, column type): Spark's INSERT decides, store_assignment.assignable must agree
    ("int", "bigint"), ("bigint", "int"), ("double", "int"), ("decimal(10,2)", "int"), ("int", "decimal(4,1)"),
    ("string", "int"), ("int", "string"), ("boolean", "int"), ("boolean", "string"), ("date", "timestamp"),
    ("timestamp", "date"), ("timestamp_ntz", "timestamp"), ("string", "date"), ("date", "int"),
    ("binary", "string"), ("string", "binary"), ("array<int>", "array<bigint>"), ("array<string>", "array<int>"),
    ("struct<a:int>", "struct<a:bigint>"), ("map<string,int>", "map<string,double>"),
]


def test_the_store_assignment_rules_are_spark_inserts(spark: Any, tmp_path: Path) -> None:
    """What ``assignable`` lets through is what Spark's INSERT into a Parquet table accepts
    at analysis (EXPLAIN: nothing runs)."""
    from pyspark.sql.types import _parse_datatype_string

    from minipaimon_spark.store_assignment import assignable

    values = {"int": "1", "bigint": "1L", "double": "1.5D", "decimal(10,2)": "1.50BD", "string": "'1'",
              "boolean": "true", "date": "DATE'2024-01-01'", "timestamp": "TIMESTAMP'2024-01-01 00:00:00'",
              "timestamp_ntz": "TIMESTAMP_NTZ'2024-01-01 00:00:00'", "binary": "X'01'",
              "array<int>": "array(1)", "array<string>": "array('a')", "struct<a:int>": "named_struct('a', 1)",
              "map<string,int>": "map('a', 1)"}
    for i, (source, target) in enumerate(STORE_PAIRS):
        name = f"store_{i}"
        spark.sql(f"CREATE TABLE {name} (c {target}) USING parquet LOCATION '{tmp_path / name}'")
        try:
            plan = spark.sql(f"EXPLAIN INSERT INTO {name} SELECT {values[source]}").collect()[0][0]
        finally:
            spark.sql(f"DROP TABLE {name}")
        spark_accepts = "Error occurred during query planning" not in plan
        ours = assignable(_parse_datatype_string(source), _parse_datatype_string(target))
        assert ours == spark_accepts, (source, target, plan[:300])
