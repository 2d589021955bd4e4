"""Issue 16 (items 20, 21, 22, 25, 27, 28): what a read or write refuses, and how.

Connector objects driven directly where Spark adds nothing; real Spark where the point is
how Spark reports the error (a stream's bad option, a VARIANT column).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

pytest.importorskip("pyspark")

from pyspark.sql.types import LongType, StructField, StructType  # noqa: E402

import minipaimon_core as mp  # noqa: E402
from minipaimon_core.errors import (  # noqa: E402
    InvalidArgumentError,
    TableNotFoundError,
    UnsupportedOptionError,
)
from minipaimon_core.stream.stream import StreamOffset  # noqa: E402
from minipaimon_spark.source import MiniPaimonDataSource  # noqa: E402
from minipaimon_spark.stream.stream_reader import (  # noqa: E402
    FailedStreamReader,
    MiniPaimonStreamReader,
)

KV = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.int64())])
SPARK_KV = StructType([StructField("id", LongType(), False), StructField("v", LongType())])


def kv_table(path: Path, snapshots: int = 3) -> mp.Table:
    t = mp.create_table(str(path), KV, primary_key=["id"])
    for i in range(snapshots):
        t.write(pa.table({"id": [i], "v": [i]}, schema=KV))
    return t


def source(**options: Any) -> MiniPaimonDataSource:
    return MiniPaimonDataSource({k: str(v) for k, v in options.items()})


# -- 20: unknown read options --------------------------------------------------------------

@pytest.mark.parametrize("key, suggestion", [
    ("scan.snapshot_id", "scan.snapshot-id"),
    ("snapshot-id", "scan.snapshot-id"),
    ("scan.snapshotid", "scan.snapshot-id"),
    ("scan.mod", "scan.mode"),
    ("SCAN.SNAPSHOT_ID", "scan.snapshot-id"),
])
def test_misspelled_read_option_is_refused_with_a_suggestion(tmp_path: Path, key: str,
                                                             suggestion: str) -> None:
    kv_table(tmp_path / "t")
    ds = source(path=tmp_path / "t", **{key: "1"})
    with pytest.raises(UnsupportedOptionError, match=f"did you mean '{suggestion}'"):
        ds.schema()
    with pytest.raises(UnsupportedOptionError, match="unknown option"):
        ds.reader(SPARK_KV).partitions()


def test_misspelled_stream_option_fails_at_the_first_call_not_in_stream_reader(tmp_path: Path) -> None:
    kv_table(tmp_path / "t")
    reader = source(path=tmp_path / "t", **{"scan.mod": "latest"}).streamReader(SPARK_KV)
    assert isinstance(reader, FailedStreamReader)  # streamReader() itself must not raise
    with pytest.raises(UnsupportedOptionError, match="did you mean 'scan.mode'"):
        reader.initialOffset()


def test_known_options_of_every_kind_are_accepted(tmp_path: Path) -> None:
    kv_table(tmp_path / "t")
    ds = source(path=tmp_path / "t", **{"scan.snapshot-id": 2, "read.changelog": "false",
                                         "bucket": "1", "primary-key": "id",
                                         "maxFilesPerTrigger": "3", "consumer-id": "c",
                                         "fields.v.aggregate-function": "sum",
                                         "s3.endpoint": "http://127.0.0.1:1"})
    assert ds.schema().fieldNames() == ["id", "v"]


# -- 21: a regular file is no table --------------------------------------------------------

def test_load_of_a_regular_file_is_table_not_found(tmp_path: Path) -> None:
    f = tmp_path / "plain.txt"
    f.write_text("not a table")
    with pytest.raises(TableNotFoundError):
        source(path=f).schema()
    with pytest.raises(TableNotFoundError):
        mp.open_table(str(f))


# -- 22: the default streaming mode --------------------------------------------------------

def test_stream_default_mode_is_resolved_by_scan_snapshot_id(tmp_path: Path) -> None:
    kv_table(tmp_path / "t", snapshots=4)
    reader = source(path=tmp_path / "t", **{"scan.snapshot-id": 3}).streamReader(SPARK_KV)
    assert isinstance(reader, MiniPaimonStreamReader)
    start = reader.initialOffset()
    assert StreamOffset.from_dict(start) == StreamOffset(2)  # from-snapshot 3: snapshots 3 and 4 follow
    end = reader.latestOffset()
    rows = [r for p in reader.partitions(start, end) for b in reader.read(p) for r in b.to_pylist()]
    assert sorted(r["id"] for r in rows) == [2, 3]


def test_stream_default_mode_is_resolved_by_scan_timestamp_millis(tmp_path: Path) -> None:
    t = kv_table(tmp_path / "t", snapshots=3)
    ts = t.snapshot(2).timeMillis
    reader = source(path=tmp_path / "t", **{"scan.timestamp-millis": ts}).streamReader(SPARK_KV)
    assert StreamOffset.from_dict(reader.initialOffset()) == StreamOffset(2)


# -- 25: invalid limits are refused where Spark reports them -------------------------------

@pytest.mark.parametrize("value", ["0", "abc", "-3"])
def test_invalid_rate_limit_fails_in_schema(tmp_path: Path, value: str) -> None:
    kv_table(tmp_path / "t")
    with pytest.raises(InvalidArgumentError, match="maxrowspertrigger"):
        source(path=tmp_path / "t", maxRowsPerTrigger=value).schema()
    reader = source(path=tmp_path / "t", maxRowsPerTrigger=value).streamReader(SPARK_KV)
    with pytest.raises(InvalidArgumentError, match="positive integer"):
        reader.initialOffset()


def test_invalid_rate_limit_with_a_user_schema_is_a_clean_spark_error(spark: Any, tmp_path: Path) -> None:
    """With ``.schema(...)`` Spark skips ``schema()``: the error comes from initialOffset()."""
    kv_table(tmp_path / "t")
    q = (spark.readStream.format("minipaimon").schema("id bigint, v bigint")
         .option("maxRowsPerTrigger", "abc").load(str(tmp_path / "t"))
         .writeStream.format("noop").start())
    try:
        with pytest.raises(Exception) as info:
            q.processAllAvailable()
        text = str(info.value)
        assert "InvalidArgumentError" in text and "maxrowspertrigger" in text
        assert "UnboundLocalError" not in text
    finally:
        q.stop()


# -- 27: VARIANT ---------------------------------------------------------------------------

@pytest.mark.smoke
def test_variant_column_is_refused_before_anything_is_written(spark: Any, tmp_path: Path) -> None:
    df = spark.sql("SELECT 1L AS id, parse_json('{\"a\": 1}') AS doc")
    path = tmp_path / "t"
    with pytest.raises(Exception, match="VARIANT") as info:
        df.write.format("minipaimon").mode("append").save(str(path))
    assert "SchemaMismatchError" in str(info.value)
    assert not path.exists()  # no table, no schema file


def test_merge_schema_changes_nothing_when_the_data_does_not_fit(spark: Any, tmp_path: Path) -> None:
    """mergeSchema adds the new columns only once the write is known to fit the table they
    make: a data frame lacking a NOT NULL column fails with the schema unchanged."""
    path = str(tmp_path / "t")
    spark.createDataFrame([(1, 10)], "id long not null, v long").write.format("minipaimon").mode("append").save(path)
    missing_id = spark.createDataFrame([(20, 7)], "v long, extra int")
    with pytest.raises(Exception, match="SchemaMismatchError"):
        missing_id.write.format("minipaimon").mode("append").option("mergeSchema", "true").save(path)
    t = mp.open_table(path)
    assert t.schema().names == ["id", "v"] and os.listdir(os.path.join(path, "schema")) == ["schema-0"]
    spark.createDataFrame([(2, 20, 7)], "id long not null, v long, extra int").write.format("minipaimon") \
        .mode("append").option("mergeSchema", "true").save(path)
    assert mp.open_table(path).schema().names == ["id", "v", "extra"]


@pytest.mark.parametrize("columns", ["ID long not null, v long", "id long not null, v long, V long"])
def test_columns_differing_only_in_case_are_refused(spark: Any, tmp_path: Path, columns: str) -> None:
    """Spark resolves names without case: a column named as a table column in another case
    (which mergeSchema added beside it) or two such columns in the data would make a table
    Spark cannot read back by name (AMBIGUOUS_REFERENCE)."""
    path = str(tmp_path / "t")
    spark.createDataFrame([(1, 10)], "id long not null, v long").write.format("minipaimon").mode("append").save(path)
    rows = [(2, 20, 30)] if columns.count(",") == 2 else [(2, 20)]
    with pytest.raises(Exception, match="differ only in case|in another case"):
        spark.createDataFrame(rows, columns).write.format("minipaimon").mode("append") \
            .option("mergeSchema", "true").save(path)
    assert mp.open_table(path).schema().names == ["id", "v"]
    with pytest.raises(Exception, match="differ only in case"):
        spark.createDataFrame([(1, 2, 3)], "id long, v long, V long").write.format("minipaimon") \
            .mode("append").save(str(tmp_path / "new"))
    assert not (tmp_path / "new").exists()


# -- 28: '$' in a table path ---------------------------------------------------------------

@pytest.mark.smoke
def test_table_path_with_dollar_reads_as_a_table(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "a$b")
    spark.range(3).write.format("minipaimon").mode("append").save(path)
    assert sorted(r.id for r in spark.read.format("minipaimon").load(path).collect()) == [0, 1, 2]
    snaps = spark.read.format("minipaimon").load(path + "$snapshots").collect()
    assert len(snaps) == 1


def test_dollar_suffix_that_is_no_system_table_is_part_of_the_path(tmp_path: Path) -> None:
    kv_table(tmp_path / "t$x")
    assert source(path=tmp_path / "t$x").schema().fieldNames() == ["id", "v"]
    assert os.path.isdir(tmp_path / "t$x")
    with pytest.raises(TableNotFoundError):
        source(path=str(tmp_path / "t") + "$y").schema()
