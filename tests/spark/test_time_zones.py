"""Issue 32 item 12: timestamps in sessions whose time zone is not UTC.

Paimon's TIMESTAMP (no zone) is Spark's TimestampNTZType, TIMESTAMP_LTZ is TimestampType,
as in Paimon's Spark integration; a value written into a column of the other kind is
converted as Spark's own CAST converts it in the session zone. Spark itself is the judge:
every expectation is Spark's CAST of the same values, or a fixed wall-clock time. Each test
runs in two zones (one with daylight saving time, one at a half-hour offset), set per test
on the shared session and restored after.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pyarrow as pa
import pyarrow.compute as pc
import pytest

pytest.importorskip("pyspark")

from chispa import assert_df_equality  # noqa: E402

import minipaimon_core as mp  # noqa: E402
import minipaimon_spark  # noqa: E402
from minipaimon_core.errors import InvalidArgumentError  # noqa: E402

TZ_CONF = "spark.sql.session.timeZone"
UTC = dt.timezone.utc
TIMES = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("ntz", pa.timestamp("us")),
                   pa.field("ltz", pa.timestamp("us", "UTC"))])
NOON = dt.datetime(2024, 6, 1, 12, 0)


@pytest.fixture(params=["America/Los_Angeles", "Asia/Kolkata"])
def zone(spark: Any, request: Any) -> Iterator[str]:
    before = spark.conf.get(TZ_CONF)
    spark.conf.set(TZ_CONF, request.param)
    yield request.param
    spark.conf.set(TZ_CONF, before)


def local(zone: str, wall: dt.datetime) -> dt.datetime:
    """The instant (UTC) of wall-clock time ``wall`` in ``zone``."""
    return wall.replace(tzinfo=ZoneInfo(zone)).astimezone(UTC)


def stored(path: Path) -> dict[int, tuple[Any, Any]]:
    rows = mp.open_table(str(path)).to_arrow().to_pylist()
    return {r["id"]: (r["ntz"], r["ltz"]) for r in rows}


def spark_rows(df: Any) -> Any:
    return df.orderBy("id")


CROSSED = """SELECT * FROM VALUES
  (1L, timestamp'2024-06-01 12:00:00', timestamp_ntz'2024-06-01 12:00:00'),
  (2L, timestamp'2024-03-10 02:30:00', timestamp_ntz'2024-03-10 02:30:00'),
  (3L, timestamp'2024-11-03 01:30:00', timestamp_ntz'2024-11-03 01:30:00'),
  (4L, CAST(NULL AS TIMESTAMP), CAST(NULL AS TIMESTAMP_NTZ))
  AS s(id, ts, wall)"""  # 2 and 3: Los Angeles' spring-forward gap and fall-back overlap


@pytest.mark.smoke
def test_writes_into_the_other_kind_convert_as_spark_casts(spark: Any, zone: str, tmp_path: Path) -> None:
    """A TimestampType value into TIMESTAMP is CAST(ts AS TIMESTAMP_NTZ); a TimestampNTZ
    value into TIMESTAMP_LTZ is CAST(wall AS TIMESTAMP), in the session zone."""
    path = tmp_path / "t"
    mp.create_table(str(path), TIMES)
    source = spark.sql(CROSSED)
    source.selectExpr("id", "ts AS ntz", "wall AS ltz").write.format("minipaimon").mode("append").save(str(path))
    assert stored(path)[1] == (NOON, local(zone, NOON))  # the issue: 12:00 stays 12:00
    # a batch with no TimestampType column: the zone comes from the session alone
    only_wall = "id + 10 AS id", "CAST(NULL AS TIMESTAMP_NTZ) AS ntz", "wall AS ltz"
    source.selectExpr(*only_wall).write.format("minipaimon").mode("append").save(str(path))
    want = source.selectExpr("id", "CAST(ts AS TIMESTAMP_NTZ) AS ntz", "CAST(wall AS TIMESTAMP) AS ltz").union(
        source.selectExpr("id + 10 AS id", "CAST(NULL AS TIMESTAMP_NTZ) AS ntz", "CAST(wall AS TIMESTAMP) AS ltz"))
    got = spark.read.format("minipaimon").load(str(path))
    assert_df_equality(spark_rows(got), spark_rows(want), ignore_nullable=True)


@pytest.mark.smoke
def test_a_new_table_takes_each_kind_as_paimon_spark_does(spark: Any, zone: str, tmp_path: Path) -> None:
    path = tmp_path / "t"
    spark.sql(CROSSED).write.format("minipaimon").mode("append").save(str(path))
    schema = mp.open_table(str(path)).schema()
    assert schema.field("ts").type == pa.timestamp("us", "UTC")  # TIMESTAMP_LTZ
    assert schema.field("wall").type == pa.timestamp("us")  # TIMESTAMP
    got = spark.read.format("minipaimon").load(str(path))
    assert [f.dataType.simpleString() for f in got.schema.fields] == ["bigint", "timestamp", "timestamp_ntz"]
    assert_df_equality(spark_rows(got), spark_rows(spark.sql(CROSSED)), ignore_nullable=True)


def written(path: Path) -> mp.Table:
    """Two snapshots: ids 0-1, then 2-3; ntz 10:00 + id hours, ltz 17:00Z + id hours."""
    t = mp.create_table(str(path), TIMES)
    for ids in ([0, 1], [2, 3]):
        t.write(pa.table({"id": ids, "ntz": [dt.datetime(2024, 6, 1, 10 + i) for i in ids],
                          "ltz": [dt.datetime(2024, 6, 1, 17 + i, tzinfo=UTC) for i in ids]}, schema=TIMES))
    return t


def as_text(df: Any) -> list[tuple[int, str, str]]:
    """The values as Spark renders them in the session zone."""
    return [tuple(r) for r in df.selectExpr("id", "CAST(ntz AS STRING)", "CAST(ltz AS STRING)")
            .orderBy("id").collect()]


@pytest.mark.smoke
def test_reads_python_and_native_time_travel(spark: Any, zone: str, tmp_path: Path) -> None:
    path = tmp_path / "t"
    written(path)
    want = [(i, f"2024-06-01 {10 + i}:00:00",
             dt.datetime(2024, 6, 1, 17 + i, tzinfo=UTC).astimezone(ZoneInfo(zone)).strftime("%Y-%m-%d %H:%M:%S"))
            for i in range(4)]
    python = spark.read.format("minipaimon").load(str(path))
    assert [f.dataType.simpleString() for f in python.schema.fields] == ["bigint", "timestamp_ntz", "timestamp"]
    assert as_text(python) == want
    assert as_text(minipaimon_spark.table(spark, str(path))) == want
    old = spark.read.format("minipaimon").option("scan.snapshot-id", "1").load(str(path))
    assert as_text(old) == want[:2]
    assert as_text(minipaimon_spark.table(spark, str(path), **{"scan.snapshot-id": "1"})) == want[:2]
    infer = "spark.sql.parquet.inferTimestampNTZ.enabled"  # off: Parquet's wall-clock times as instants
    before = spark.conf.get(infer, "true")
    spark.conf.set(infer, "false")
    try:
        assert as_text(minipaimon_spark.table(spark, str(path))) == want
    finally:
        spark.conf.set(infer, before)


def test_filters_with_and_without_pushdown(spark: Any, zone: str, tmp_path: Path) -> None:
    from minipaimon_spark import FILTER_PUSHDOWN_CONF

    path = tmp_path / "t"
    written(path)
    at_19z = dt.datetime(2024, 6, 1, 19, tzinfo=UTC).astimezone(ZoneInfo(zone)).strftime("%Y-%m-%d %H:%M:%S")
    conditions = {
        "ntz >= timestamp_ntz'2024-06-01 12:00:00'": [2, 3],
        "ntz = timestamp'2024-06-01 12:00:00'": [2],  # Spark casts: the wall clock 12:00
        "ntz < '2024-06-01 11:00:00'": [0],
        "ntz IN (timestamp_ntz'2024-06-01 10:00:00', timestamp_ntz'2024-06-01 13:00:00')": [0, 3],
        f"ltz >= timestamp'{at_19z}'": [2, 3],
        "ltz = timestamp'2024-06-01 18:00:00+00:00'": [1],
        "ltz < timestamp_ntz'2024-06-01 12:00:00'": [i for i in range(4)
                                                     if dt.datetime(2024, 6, 1, 17 + i, tzinfo=UTC)
                                                     < local(zone, NOON)],
    }
    before = spark.conf.get(FILTER_PUSHDOWN_CONF, "false")
    try:
        for pushdown in ("true", "false"):
            spark.conf.set(FILTER_PUSHDOWN_CONF, pushdown)
            for condition, ids in conditions.items():
                for df in (spark.read.format("minipaimon").load(str(path)),
                           minipaimon_spark.table(spark, str(path))):
                    got = sorted(r.id for r in df.where(condition).collect())
                    assert got == ids, (pushdown, condition)
    finally:
        spark.conf.set(FILTER_PUSHDOWN_CONF, before)


@pytest.mark.smoke
def test_streams_read_and_write_each_kind(spark: Any, zone: str, tmp_path: Path) -> None:
    """A stream of a table into a sink whose columns are of the other kind: the source reads
    both kinds unchanged, the sink converts as Spark casts."""
    written(tmp_path / "src")
    mp.create_table(str(tmp_path / "dst"), TIMES)
    q = (spark.readStream.format("minipaimon").load(str(tmp_path / "src"))
         .selectExpr("id", "ltz AS ntz", "ntz AS ltz")
         .writeStream.format("minipaimon").option("checkpointLocation", str(tmp_path / "ck"))
         .trigger(availableNow=True).start(str(tmp_path / "dst")))
    q.awaitTermination()
    assert q.exception() is None
    src = spark.read.format("minipaimon").load(str(tmp_path / "src"))
    want = src.selectExpr("id", "CAST(ltz AS TIMESTAMP_NTZ) AS ntz", "CAST(ntz AS TIMESTAMP) AS ltz")
    got = spark.read.format("minipaimon").load(str(tmp_path / "dst"))
    assert_df_equality(spark_rows(got), spark_rows(want), ignore_nullable=True)
    assert stored(tmp_path / "dst")[0] == (
        dt.datetime(2024, 6, 1, 17, tzinfo=UTC).astimezone(ZoneInfo(zone)).replace(tzinfo=None),
        local(zone, dt.datetime(2024, 6, 1, 10)))


MERGE = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("g", pa.int64(), nullable=False),
                   pa.field("ntz", pa.timestamp("us")), pa.field("v", pa.int64())])


@pytest.mark.smoke
@pytest.mark.parametrize("kind", ["append", "primary-key", "primary-key-on-driver"])
def test_merge_compares_and_writes_a_timestamp_source_as_its_wall_clock(
        spark: Any, zone: str, tmp_path: Path, kind: str) -> None:
    """The source's ``ntz`` is a Spark TimestampType (an instant): it meets the target's
    TIMESTAMP column as CAST(ntz AS TIMESTAMP_NTZ), in conditions and in the rows written."""
    keys = {"append": None, "primary-key": ["id"], "primary-key-on-driver": ["id", "g"]}[kind]
    t = mp.create_table(str(tmp_path / "t"), MERGE, primary_key=keys)
    t.write(pa.table({"id": [1, 2], "g": [0, 0], "ntz": [NOON, NOON + dt.timedelta(hours=1)], "v": [0, 0]},
                     schema=MERGE))
    source = spark.sql("""SELECT * FROM VALUES
        (1L, 0L, timestamp'2024-06-01 12:00:00', 10L),
        (2L, 0L, timestamp'2024-06-01 12:30:00', 20L),
        (3L, 0L, timestamp'2024-06-02 08:00:00', 30L) AS s(id, g, ntz, v)""")
    result = (minipaimon_spark.merge(spark, t.path, source, on="id")
              .when_matched_update(set={"v": "source.v"},
                                   condition=pc.field("source.ntz") >= pc.field("target.ntz"))
              .when_not_matched_insert_all()
              .execute())
    assert (result.inserted, result.updated) == (1, 1)
    got = mp.open_table(t.path).to_arrow().sort_by("id").to_pylist()
    assert [(r["id"], r["ntz"], r["v"]) for r in got] == [
        (1, NOON, 10), (2, NOON + dt.timedelta(hours=1), 0), (3, dt.datetime(2024, 6, 2, 8), 30)]


def test_merge_refuses_a_value_of_the_other_kind_from_another_column(spark: Any, zone: str,
                                                                    tmp_path: Path) -> None:
    t = mp.create_table(str(tmp_path / "t"), MERGE)
    t.write(pa.table({"id": [1], "g": [0], "ntz": [NOON], "v": [0]}, schema=MERGE))
    source = spark.sql("SELECT 1L AS id, timestamp'2024-06-01 15:00:00' AS seen")
    before = sorted(p.name for p in (tmp_path / "t").rglob("*"))
    with pytest.raises(InvalidArgumentError, match="'ntz'.*TimestampType.*cast\\('timestamp_ntz'\\)"):
        (minipaimon_spark.merge(spark, t.path, source, on="id")
         .when_matched_update(set={"ntz": "source.seen"}).execute())
    assert sorted(p.name for p in (tmp_path / "t").rglob("*")) == before
    aligned = source.selectExpr("id", "CAST(seen AS TIMESTAMP_NTZ) AS seen")  # what the message says
    minipaimon_spark.merge(spark, t.path, aligned, on="id").when_matched_update(set={"ntz": "source.seen"}).execute()
    assert mp.open_table(t.path).to_arrow().column("ntz").to_pylist() == [dt.datetime(2024, 6, 1, 15)]


def test_the_zone_when_the_session_never_set_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """No session setting reaches the task: the zone Spark gave the batch's TimestampType
    columns, else the machine's (the JVM's default); a zone pyarrow lacks is a typed error."""
    from minipaimon_spark.common.zones import SparkTimes, checked_zone, session_zone

    kolkata = pa.schema([("ts", pa.timestamp("us", "Asia/Kolkata"))])
    assert session_zone(kolkata) == "Asia/Kolkata"
    monkeypatch.setenv("TZ", "America/Los_Angeles")
    assert session_zone(pa.schema([("ntz", pa.timestamp("us"))])) == "America/Los_Angeles"
    batch = pa.record_batch([pa.array([local("Asia/Kolkata", NOON)], pa.timestamp("us", "Asia/Kolkata")),
                             pa.array([NOON], pa.timestamp("us"))], names=["ntz", "ltz"])
    out = SparkTimes(TIMES)(batch)
    assert out.column("ntz").to_pylist() == [NOON] and out.column("ltz").to_pylist() == [local("Asia/Kolkata", NOON)]
    with pytest.raises(InvalidArgumentError, match="Mars/Olympus"):
        checked_zone("Mars/Olympus")
