"""Issue 16 (items 18, 19, 29): what the first write of a table fixes, and when.

A table that has a schema but no snapshot (a first write that never committed) is
redefined by the next first write; option errors come before anything is written; a
changelog into a new sink needs a primary key said up front.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

pytest.importorskip("pyspark")

from pyspark.sql.types import LongType, StringType, StructField, StructType  # noqa: E402

import minipaimon_core as mp  # noqa: E402
from minipaimon_core.errors import InvalidArgumentError, MiniPaimonError  # noqa: E402
from minipaimon_spark.source import MiniPaimonDataSource  # noqa: E402

SPARK = StructType([StructField("id", LongType(), False), StructField("k", StringType())])
CHANGES = StructType([*SPARK.fields, StructField("_row_kind", StringType(), False)])


def batch(ids: list[int]) -> pa.RecordBatch:
    return pa.RecordBatch.from_pydict({"id": pa.array(ids, pa.int64()),
                                       "k": [f"k{i}" for i in ids]})


def source(path: Path, **options: str) -> MiniPaimonDataSource:
    return MiniPaimonDataSource({"path": str(path), **options})


def test_first_write_that_never_committed_does_not_fix_the_definition(tmp_path: Path) -> None:
    path = tmp_path / "t"
    source(path).writer(SPARK, False)  # the job creates the table, then fails: no commit
    assert mp.open_table(str(path)).primary_keys() == []
    w = source(path, **{"primary-key": "id", "bucket": "2"}).writer(SPARK, False)
    w.commit([w.write(iter([batch([1, 2])]))])
    t = mp.open_table(str(path))
    assert t.primary_keys() == ["id"] and t.options()["bucket"] == "2"
    assert sorted(t.to_arrow().column("id").to_pylist()) == [1, 2]
    # Once a snapshot exists, the definition is fixed.
    with pytest.raises(InvalidArgumentError, match="fixed when the first write"):
        source(path, **{"primary-key": "k"}).writer(SPARK, False)


def test_redefinition_also_replaces_columns(tmp_path: Path) -> None:
    path = tmp_path / "t"
    other = StructType([StructField("x", StringType())])
    source(path).writer(other, False)
    w = source(path).writer(SPARK, False)
    w.commit([w.write(iter([batch([7])]))])
    assert mp.open_table(str(path)).schema().names == ["id", "k"]


def test_changelog_into_a_new_sink_needs_a_primary_key_up_front(tmp_path: Path) -> None:
    path = tmp_path / "t"
    with pytest.raises(InvalidArgumentError, match="primary-key"):
        source(path).writer(CHANGES, False)
    assert not path.exists()  # nothing written


@pytest.mark.parametrize("options", [
    {"bucket": "4", "bucket-key": "nope"},                     # bucket key not a column
    {"primary-key": "id", "sequence.field": "nope"},           # bad sequence.field
    {"primary-key": "id", "merge-engine": "aggregation",
     "fields.k.aggregate-function": "no_such_fn"},             # unknown aggregate
    {"changelog-producer": "input"},                           # append table
])
def test_bad_first_write_options_are_refused_before_anything_is_written(
        tmp_path: Path, options: dict[str, str]) -> None:
    path = tmp_path / "t"
    with pytest.raises(MiniPaimonError):
        source(path, **options).writer(SPARK, False)
    assert not path.exists()


def test_update_output_mode_is_refused_with_a_message(spark: Any, tmp_path: Path) -> None:
    """Spark gives Python sinks no way to accept Update mode (it needs a DSv2 capability a
    Python data source cannot declare): the query stops before anything is written, with
    Spark's message; the README says so and names the alternatives."""
    src, dst = str(tmp_path / "src"), str(tmp_path / "dst")
    t = mp.create_table(src, pa.schema([pa.field("id", pa.int64(), nullable=False),
                                        ("k", pa.string())]))
    t.write(pa.table({"id": [1, 2, 3], "k": ["a", "b", "a"]}))
    counts = spark.readStream.format("minipaimon").load(src).groupBy("k").count()
    q = (counts.writeStream.format("minipaimon").outputMode("update")
         .option("primary-key", "k").option("checkpointLocation", str(tmp_path / "ck"))
         .start(dst))
    try:
        with pytest.raises(Exception, match="minipaimon does not support Update mode"):
            q.processAllAvailable()
    finally:
        q.stop()
    with contextlib.suppress(mp.TableNotFoundError):  # the table may not even exist
        assert mp.open_table(dst).latest_snapshot() is None  # nothing committed
