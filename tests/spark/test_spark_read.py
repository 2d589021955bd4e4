"""End-to-end reads through a real local Spark session (see conftest.py)."""

from __future__ import annotations

import datetime
import math
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

pytest.importorskip("pyspark")
from chispa import assert_df_equality  # noqa: E402

import minipaimon_core as mp  # noqa: E402
from minipaimon_spark import supports_filter_pushdown  # noqa: E402

SCHEMA = pa.schema([
    pa.field("id", pa.int64(), nullable=False),
    pa.field("dt", pa.string(), nullable=False),
    pa.field("k", pa.string()),
    pa.field("v", pa.float64()),
])


def rows(ids: range, dt: str = "d1", v: float | None = None) -> pa.Table:
    return pa.table({
        "id": pa.array(list(ids), pa.int64()),
        "dt": [dt] * len(ids),
        "k": [None if i % 5 == 0 else f"k{i % 7}" for i in ids],
        "v": [float(i) if v is None else v for i in ids],
    }, schema=SCHEMA)


def expected(spark: Any, table: pa.Table) -> Any:
    return spark.createDataFrame(table.to_pylist(), "id long, dt string, k string, v double")


def load(spark: Any, path: Path, **options: str) -> Any:
    reader = spark.read.format("minipaimon")
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load(str(path))


def spark_filter_of(df: Any) -> str:
    """The Filter node Spark still evaluates above the scan ('' if none)."""
    plan = df._jdf.queryExecution().executedPlan().toString()
    return "\n".join(line for line in plan.splitlines() if "Filter" in line and "Runtime" not in line)


@pytest.mark.smoke
def test_read_append_table(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "t"
    t = mp.create_table(str(path), SCHEMA)
    t.write(rows(range(0, 10)))
    t.write(rows(range(10, 15), "d2"))
    want = pa.concat_tables([rows(range(10)), rows(range(10, 15), "d2")])
    assert_df_equality(load(spark, path), expected(spark, want), ignore_row_order=True,
                       ignore_nullable=True)


@pytest.mark.smoke
def test_read_partitioned_bucketed_pk_table(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "t"
    t = mp.create_table(str(path), SCHEMA, primary_key=["id", "dt"], partition_by=["dt"],
                        options={"bucket": "3"})
    t.write(pa.concat_tables([rows(range(30)), rows(range(20), "d2")]))
    t.write(rows(range(5, 10), "d2", v=-1.0))  # upserts: a second sorted run to merge
    df = load(spark, path)
    assert df.schema.simpleString() == "struct<id:bigint,dt:string,k:string,v:double>"
    assert [f.nullable for f in df.schema.fields] == [False, False, True, True]
    assert df.rdd.getNumPartitions() == len(t.scan().plan()) == 6
    want = pa.concat_tables([rows(range(30)), rows(range(5), "d2"), rows(range(5, 10), "d2", -1.0),
                             rows(range(10, 20), "d2")])
    assert_df_equality(df, expected(spark, want), ignore_row_order=True, ignore_nullable=True)


def test_an_append_read_uses_the_cores(spark: Any, tmp_path: Path) -> None:
    """One bucket of four small files: one task before split sizing; now the splits are
    sized for the read's parallelism (default: the cores the planner sees) and
    ``source.split.target-size``."""
    path = tmp_path / "t"
    t = mp.create_table(str(path), SCHEMA)
    for i in range(4):
        t.write(rows(range(10 * i, 10 * i + 10)))
    want = expected(spark, rows(range(40)))
    # each file weighs the 4 mb open-file cost: target max(4 mb, 16 mb / cores)
    cores = len(os.sched_getaffinity(0))
    assert load(spark, path).rdd.getNumPartitions() == {1: 1, 2: 2}.get(cores, 4)
    two = load(spark, path, **{"scan.parallelism": "2"})
    assert two.rdd.getNumPartitions() == 2
    tiny = load(spark, path, **{"source.split.target-size": "1 b"})
    assert tiny.rdd.getNumPartitions() == 4
    for df in (two, tiny):
        assert_df_equality(df, want, ignore_row_order=True, ignore_nullable=True)


@pytest.mark.smoke
def test_time_travel(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "t"
    t = mp.create_table(str(path), SCHEMA, primary_key=["id", "dt"], options={"bucket": "1"})
    for i in range(3):
        t.write(rows(range(i, i + 1)))
    t.write(rows(range(0, 1), v=9.0))  # snapshot 4 updates id 0
    t.create_tag("two", 2)

    def ids(**options: str) -> list[tuple[int, float]]:
        return sorted((r.id, r.v) for r in load(spark, path, **options).collect())

    assert ids() == [(0, 9.0), (1, 1.0), (2, 2.0)]
    assert ids(**{"scan.snapshot-id": "1"}) == [(0, 0.0)]
    assert ids(**{"scan.tag-name": "two"}) == [(0, 0.0), (1, 1.0)]
    at = t.snapshots()[2].timeMillis
    assert ids(**{"scan.timestamp-millis": str(at)}) == [(0, 0.0), (1, 1.0), (2, 2.0)]
    assert ids(**{"incremental-between": "1,3"}) == [(1, 1.0), (2, 2.0)]


def test_filters_same_rows_with_pushdown_on_and_off(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "t"
    t = mp.create_table(str(path), SCHEMA, partition_by=["dt"])
    t.write(pa.concat_tables([rows(range(40)), rows(range(40, 60), "d2")]))
    queries = [
        "dt = 'd2' AND id > 50", "k IS NULL", "k <> 'k3'", "k NOT IN ('k1', 'k2')",
        "k IN ('k1', NULL)", "id BETWEEN 5 AND 8 OR dt = 'd2'", "v > 10.5 AND dt = 'd1'",
        "k LIKE 'k1%'", "NOT (id > 3)",
    ]
    conf = "spark.sql.python.filterPushdown.enabled"
    results = {}
    for setting in ("true", "false"):
        spark.conf.set(conf, setting)
        try:
            results[setting] = [sorted(r.id for r in load(spark, path).where(q).collect())
                                for q in queries]
        finally:
            spark.conf.set(conf, "true")
    local = t.to_arrow().to_pandas()
    assert results["true"] == results["false"]
    assert results["true"][0] == list(range(51, 60))
    assert results["true"][1] == sorted(local[local.k.isna()].id)
    assert results["true"][2] == sorted(local[local.k.notna() & (local.k != "k3")].id)


@pytest.mark.skipif(not supports_filter_pushdown(), reason="pushFilters needs pyspark 4.1+")
def test_pushdown_leaves_spark_only_what_it_must_check(spark: Any, tmp_path: Path,
                                                      pushdown: None) -> None:
    path = tmp_path / "t"
    t = mp.create_table(str(path), SCHEMA, partition_by=["dt"])
    t.write(pa.concat_tables([rows(range(10)), rows(range(10, 20), "d2"), rows(range(20, 30), "d3")]))
    df = load(spark, path).where("dt = 'd1' AND id > 3 AND v > 5.0")
    remaining = spark_filter_of(df)
    assert "v#" in remaining and "dt#" not in remaining and "id#" not in remaining
    assert df.rdd.getNumPartitions() == 1  # partitions d2 and d3 pruned at planning
    assert sorted(r.id for r in df.collect()) == [6, 7, 8, 9]


def test_pushdown_off_still_reads(spark: Any, tmp_path: Path, no_pushdown: None) -> None:
    path = tmp_path / "t"
    mp.create_table(str(path), SCHEMA).write(rows(range(10)))
    df = load(spark, path).where("id > 6")
    assert "id#" in spark_filter_of(df)
    assert sorted(r.id for r in df.collect()) == [7, 8, 9]


def test_nan_and_timestamps_follow_spark_semantics(spark: Any, tmp_path: Path,
                                                   pushdown: None) -> None:
    path = tmp_path / "t"
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("f", pa.float64()),
                        pa.field("ts", pa.timestamp("us", tz="UTC")),
                        pa.field("day", pa.date32())])
    base = datetime.datetime(2024, 5, 1, tzinfo=datetime.timezone.utc)
    data = pa.table({
        "id": [0, 1, 2, 3], "f": [1.0, math.nan, None, -2.0],
        "ts": [base + datetime.timedelta(hours=h) for h in range(4)],
        "day": [datetime.date(2024, 5, d) for d in (1, 2, 3, 4)],
    }, schema=schema)
    mp.create_table(str(path), schema).write(data)
    df = load(spark, path)
    assert sorted(r.id for r in df.where("f > 0").collect()) == [0, 1]  # NaN > everything
    assert sorted(r.id for r in df.where("ts >= timestamp'2024-05-01 02:00:00'").collect()) == [2, 3]
    assert sorted(r.id for r in df.where("day < date'2024-05-03'").collect()) == [0, 1]


@pytest.mark.smoke
def test_user_schema_and_columns_option_read_a_subset(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "t"
    mp.create_table(str(path), SCHEMA).write(rows(range(10)))
    df = spark.read.format("minipaimon").schema("v double, id long").load(str(path))
    assert df.columns == ["v", "id"]
    assert df.agg({"v": "sum"}).collect()[0][0] == 45.0
    assert load(spark, path, columns="k,id").columns == ["k", "id"]


@pytest.mark.smoke
def test_missing_table_is_a_readable_error(spark: Any, tmp_path: Path) -> None:
    with pytest.raises(Exception, match="TableNotFoundError"):
        load(spark, tmp_path / "nothing").collect()


def test_system_tables_read_through_the_dollar_suffix(spark: Any, tmp_path: Path) -> None:
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, partition_by=["dt"])
    t.write(rows(range(3)))
    t.write(rows(range(3, 5), "d2"))
    t.create_tag("first", 1)
    snaps = spark.read.format("minipaimon").load(str(tmp_path / "t") + "$snapshots")
    got = [(r["snapshot_id"], r["commit_kind"]) for r in snaps.orderBy("snapshot_id").collect()]
    assert got == [(1, "APPEND"), (2, "APPEND")]
    tags = spark.read.format("minipaimon").load(str(tmp_path / "t") + "$tags").collect()
    assert [(r["tag_name"], r["snapshot_id"]) for r in tags] == [("first", 1)]
    files = spark.read.format("minipaimon").load(str(tmp_path / "t") + "$files")
    assert files.count() == 2
    with pytest.raises(Exception, match="nope"):
        spark.read.format("minipaimon").load(str(tmp_path / "t") + "$nope").collect()
