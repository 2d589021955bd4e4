"""The connector's DataSource, reader and writer objects driven directly, without Spark.

Each step is called the way Spark calls it (and through pickle, as Spark ships objects
between processes): ``writer()`` -> ``write()`` per task -> ``commit()``/``abort()``;
``schema()`` -> ``reader()`` -> ``pushFilters()`` -> ``partitions()`` -> ``read()``.
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

pytest.importorskip("pyspark")

from pyspark.sql.types import (  # noqa: E402
    DoubleType,
    LongType,
    StringType,
    StructField,
    StructType,
)

import minipaimon_core as mp  # noqa: E402
from minipaimon_core.errors import (  # noqa: E402
    InvalidArgumentError,
    SchemaMismatchError,
    TableNotFoundError,
    UnsupportedOptionError,
)
from minipaimon_spark.common.types import to_arrow_schema  # noqa: E402
from minipaimon_spark.read.reader import MiniPaimonReader, PushdownReader  # noqa: E402
from minipaimon_spark.source import MiniPaimonDataSource  # noqa: E402
from minipaimon_spark.write.writer import MiniPaimonCommitMessage, MiniPaimonWriter  # noqa: E402

SPARK_SCHEMA = StructType([
    StructField("id", LongType()),
    StructField("dt", StringType()),
    StructField("v", DoubleType()),
])


def batch(ids: list[int], dt: str = "d1", v: float | None = None) -> pa.RecordBatch:
    return pa.RecordBatch.from_pydict({
        "id": pa.array(ids, pa.int64()),
        "dt": [dt] * len(ids),
        "v": [float(i) if v is None else v for i in ids],
    })


def roundtrip(obj: Any) -> Any:
    """What Spark does between processes."""
    return pickle.loads(pickle.dumps(obj))


def new_writer(path: Path, overwrite: bool = False, **options: str) -> MiniPaimonWriter:
    source = roundtrip(MiniPaimonDataSource({"path": str(path), **options}))
    return roundtrip(source.writer(SPARK_SCHEMA, overwrite))


def write_job(path: Path, tasks: list[list[pa.RecordBatch]], overwrite: bool = False,
              **options: str) -> None:
    writer = new_writer(path, overwrite, **options)
    messages = [roundtrip(writer).write(iter(t)) for t in tasks]
    roundtrip(writer).commit([roundtrip(m) for m in messages])


def read_all(path: Path, schema: StructType | None = None, filters: list[Any] | None = None,
             **options: str) -> pa.Table:
    source = roundtrip(MiniPaimonDataSource({"path": str(path), **options}))
    schema = schema or source.schema()
    source = roundtrip(source)
    reader = source.reader(schema)
    if filters is not None:
        reader = PushdownReader(reader.options, reader.schema)
        left = reader.pushFilters(filters)
        assert all(any(f is g for g in filters) for f in left)
    planned = roundtrip(reader)
    partitions = planned.partitions()
    target = to_arrow_schema(schema)
    batches = []
    for p in partitions:
        for b in roundtrip(planned).read(roundtrip(p)):
            assert b.schema.equals(target), (b.schema, target)
            batches.append(b)
    return pa.Table.from_batches(batches, schema=target)


def data_files(path: Path) -> set[str]:
    return {f for _, _, fs in os.walk(path) for f in fs if f.startswith("data-")}


# -- writing --------------------------------------------------------------------------------


def test_first_write_creates_table_and_commits_once(tmp_path: Path) -> None:
    path = tmp_path / "t"
    write_job(path, [[batch([1, 2])], [batch([3], "d2")], []],
              **{"primary-key": "id,dt", "partition-keys": "dt", "bucket": "2"})
    table = mp.open_table(str(path))
    assert table.primary_keys() == ["id", "dt"]
    assert table.partition_keys() == ["dt"]
    assert table.options()["bucket"] == "2"
    assert [s.id for s in table.snapshots()] == [1]
    assert sorted(read_all(path).column("id").to_pylist()) == [1, 2, 3]


def test_every_task_returns_a_message_even_for_empty_input(tmp_path: Path) -> None:
    writer = new_writer(tmp_path / "t")
    message = writer.write(iter([]))
    assert isinstance(message, MiniPaimonCommitMessage)
    assert message.core_messages() == [] and message.num_rows == 0
    writer.commit([message])
    assert mp.open_table(str(tmp_path / "t")).latest_snapshot() is None


def test_upserts_and_deletes_with_row_kind(tmp_path: Path) -> None:
    path = tmp_path / "t"
    write_job(path, [[batch([1, 2, 3])]], **{"primary-key": "id", "bucket": "1"})
    schema = StructType([*SPARK_SCHEMA.fields, StructField("_row_kind", StringType())])
    writer = roundtrip(MiniPaimonDataSource({"path": str(path)}).writer(schema, False))
    changes = pa.RecordBatch.from_pydict({
        "id": pa.array([1, 2, 4], pa.int64()), "dt": ["d1"] * 3, "v": [10.0, 0.0, 4.0],
        "_row_kind": ["+U", "-D", "+I"],
    })
    writer.commit([writer.write(iter([changes]))])
    got = read_all(path).sort_by("id")
    assert got.column("id").to_pylist() == [1, 3, 4]
    assert got.column("v").to_pylist() == [10.0, 3.0, 4.0]


def test_overwrite_replaces_the_table(tmp_path: Path) -> None:
    path = tmp_path / "t"
    write_job(path, [[batch([1, 2], "d1")], [batch([3], "d2")]], **{"partition-keys": "dt"})
    write_job(path, [[batch([9], "d1")]], overwrite=True)
    assert read_all(path).column("id").to_pylist() == [9]
    assert mp.open_table(str(path)).latest_snapshot().commitKind == "OVERWRITE"  # type: ignore[union-attr]


def test_overwrite_with_no_rows_empties_the_table(tmp_path: Path) -> None:
    path = tmp_path / "t"
    write_job(path, [[batch([1, 2])]])
    write_job(path, [[]], overwrite=True)
    assert read_all(path).num_rows == 0


def test_dynamic_partition_overwrite_keeps_other_partitions(tmp_path: Path) -> None:
    path = tmp_path / "t"
    write_job(path, [[batch([1], "d1"), batch([2], "d2")]], **{"partition-keys": "dt"})
    write_job(path, [[batch([7], "d1")]], overwrite=True,
              **{"dynamic-partition-overwrite": "true"})
    got = read_all(path).sort_by("id")
    assert list(zip(got.column("id").to_pylist(), got.column("dt").to_pylist())) == [
        (2, "d2"), (7, "d1")]


def test_abort_deletes_files_of_an_uncommitted_job(tmp_path: Path) -> None:
    path = tmp_path / "t"
    write_job(path, [[batch([1])]])
    before = data_files(path)
    writer = new_writer(path)
    messages = [writer.write(iter([batch([2, 3])])), None]
    assert data_files(path) != before
    roundtrip(writer).abort(messages)
    assert data_files(path) == before
    assert len(mp.open_table(str(path)).snapshots()) == 1


def test_abort_after_a_commit_that_landed_deletes_nothing(tmp_path: Path) -> None:
    """Spark calls abort after a commit that raised; the commit may have landed."""
    path = tmp_path / "t"
    writer = new_writer(path)
    messages = [writer.write(iter([batch([1, 2])]))]
    roundtrip(writer).commit(messages)
    files = data_files(path)
    roundtrip(writer).abort(messages)
    assert data_files(path) == files
    assert sorted(read_all(path).column("id").to_pylist()) == [1, 2]


def test_a_failing_task_deletes_what_it_wrote(tmp_path: Path) -> None:
    path = tmp_path / "t"
    write_job(path, [[batch([0])]], **{"write-buffer-size": "1 b"})  # flush every batch
    before = data_files(path)

    def failing() -> Iterator[pa.RecordBatch]:
        yield batch([1, 2])
        yield batch([3, 4])
        assert data_files(path) != before  # the task has flushed files by now
        raise RuntimeError("task killed")

    with pytest.raises(RuntimeError, match="task killed"):
        new_writer(path).write(failing())
    assert data_files(path) == before


def test_schema_mismatch_fails_in_writer_before_any_file(tmp_path: Path) -> None:
    path = tmp_path / "t"
    write_job(path, [[batch([1])]])
    before = data_files(path)
    other = StructType([*SPARK_SCHEMA.fields, StructField("extra", LongType())])
    with pytest.raises(SchemaMismatchError, match="extra"):
        MiniPaimonDataSource({"path": str(path)}).writer(other, False)
    wrong_type = StructType([StructField("id", StringType()), *SPARK_SCHEMA.fields[1:]])
    with pytest.raises(SchemaMismatchError, match="'id'"):
        MiniPaimonDataSource({"path": str(path)}).writer(wrong_type, False)
    assert data_files(path) == before
    assert len(mp.open_table(str(path)).snapshots()) == 1


def test_options_that_contradict_the_table_are_rejected(tmp_path: Path) -> None:
    path = tmp_path / "t"
    write_job(path, [[batch([1])]], **{"primary-key": "id", "bucket": "2"})
    with pytest.raises(InvalidArgumentError, match="primary-key"):
        new_writer(path, **{"primary-key": "dt"})
    with pytest.raises(InvalidArgumentError, match="bucket"):
        new_writer(path, bucket="4")
    new_writer(path, bucket="2", **{"Merge-Engine": "deduplicate"})  # same as the table


def test_unknown_table_option_on_first_write(tmp_path: Path) -> None:
    with pytest.raises(UnsupportedOptionError, match="no-such-option"):
        new_writer(tmp_path / "t", **{"no-such-option": "1"})


def test_field_options_get_their_column_case_back(tmp_path: Path) -> None:
    """Spark lower-cases option keys; ``fields.<col>.*`` must still name the column."""
    path = tmp_path / "t"
    schema = StructType([StructField("id", LongType()), StructField("Total", DoubleType())])
    source = MiniPaimonDataSource({
        "path": str(path), "primary-key": "id", "bucket": "1", "merge-engine": "aggregation",
        "fields.total.aggregate-function": "sum",
    })
    writer = source.writer(schema, False)
    for values in ([1.0, 2.0], [10.0, 20.0]):
        rows = pa.RecordBatch.from_pydict({"id": pa.array([1, 2], pa.int64()), "Total": values})
        writer = source.writer(schema, False)
        writer.commit([writer.write(iter([rows]))])
    table = mp.open_table(str(path))
    assert table.options()["fields.Total.aggregate-function"] == "sum"
    assert table.to_arrow().sort_by("id").column("Total").to_pylist() == [11.0, 22.0]


def test_missing_path_is_one_clear_line() -> None:
    """CREATE TABLE ... USING minipaimon reaches reader()/writer() with no options."""
    source = MiniPaimonDataSource({})
    for call in (source.schema, lambda: source.reader(SPARK_SCHEMA),
                 lambda: source.writer(SPARK_SCHEMA, False)):
        with pytest.raises(InvalidArgumentError) as err:
            call()
        assert "TEMPORARY VIEW" in str(err.value) and "\n" not in str(err.value)


def test_a_catalog_tables_options_point_to_temporary_views(tmp_path: Path) -> None:
    """CREATE TABLE t USING minipaimon OPTIONS (path ...) with no columns asks schema() with
    Spark's own table properties among the options (measured: owner, provider, location)."""
    path = tmp_path / "t"
    write_job(path, [[batch([1])]])
    spark_given = {"path": f"file:{path}", "location": f"file:{path}", "owner": "root",
                   "provider": "minipaimon"}
    with pytest.raises(InvalidArgumentError) as err:
        MiniPaimonDataSource(spark_given).schema()
    message = str(err.value)
    assert "CREATE TEMPORARY VIEW" in message and "owner" not in message, message


def test_system_tables_by_name_in_a_warehouse(tmp_path: Path) -> None:
    warehouse = str(tmp_path / "wh")
    mp.catalog(warehouse).create_table("shop.orders", pa.schema([("id", pa.int64())]))
    t = mp.catalog(warehouse).table("shop.orders")
    t.write(pa.table({"id": [1, 2]}))
    t.write(pa.table({"id": [3]}))
    got = read_all(Path("shop.orders$snapshots"), warehouse=warehouse)
    assert got.column("snapshot_id").to_pylist() == [1, 2]


def test_unexpected_commit_message_type(tmp_path: Path) -> None:
    writer = new_writer(tmp_path / "t")
    with pytest.raises(InvalidArgumentError, match="unexpected commit message"):
        writer.commit([object()])  # type: ignore[list-item]


# -- reading --------------------------------------------------------------------------------


def test_schema_of_a_missing_table(tmp_path: Path) -> None:
    with pytest.raises(TableNotFoundError):
        MiniPaimonDataSource({"path": str(tmp_path / "nope")}).schema()


def test_schema_nullability_matches_what_read_yields(tmp_path: Path) -> None:
    path = tmp_path / "t"
    write_job(path, [[batch([1])]], **{"primary-key": "id,dt", "bucket": "1"})
    schema = MiniPaimonDataSource({"path": str(path)}).schema()
    assert [(f.name, f.nullable) for f in schema.fields] == [
        ("id", False), ("dt", False), ("v", True)]
    assert read_all(path).num_rows == 1  # read_all checks every batch's schema


def test_one_partition_per_split(tmp_path: Path) -> None:
    path = tmp_path / "t"
    write_job(path, [[batch([1, 2, 3, 4], "d1"), batch([5, 6], "d2")]],
              **{"primary-key": "id,dt", "partition-keys": "dt", "bucket": "2"})
    reader = MiniPaimonDataSource({"path": str(path)}).reader(SPARK_SCHEMA)
    partitions = reader.partitions()
    splits = mp.open_table(str(path)).scan().plan()
    assert len(partitions) == len(splits) >= 3
    assert len(pickle.dumps(partitions[0])) < 4096
    assert "bucket=" in repr(partitions[0])


def test_append_splits_are_sized_for_the_read_parallelism(tmp_path: Path) -> None:
    path = tmp_path / "t"
    for i in range(4):  # four small files in one bucket
        write_job(path, [[batch([2 * i, 2 * i + 1])]])

    def partitions(**options: str) -> list[Any]:
        source = roundtrip(MiniPaimonDataSource({"path": str(path), **options}))
        return roundtrip(source.reader(SPARK_SCHEMA)).partitions()

    # each small file weighs the 4 mb open-file cost: 16 mb over 2 tasks -> 2 files a split
    assert [len(p.split.files) for p in partitions(**{"scan.parallelism": "2"})] == [2, 2]
    assert len(partitions(**{"scan.parallelism": "1"})) == 1
    assert len(partitions(**{"source.split.target-size": "1 b"})) == 4
    assert len(partitions(**{"scan.parallelism": "4", "source.split.open-file-cost": "0"})) == 4
    ids = read_all(path, SPARK_SCHEMA, **{"source.split.target-size": "1 b"}).column("id").to_pylist()
    assert sorted(ids) == list(range(8))
    assert mp.open_table(str(path)).options() == {"bucket": "-1"}  # read options change no table option


def test_empty_table_reads_nothing(tmp_path: Path) -> None:
    path = tmp_path / "t"
    new_writer(path)  # creates the table, commits nothing
    reader = MiniPaimonDataSource({"path": str(path)}).reader(SPARK_SCHEMA)
    assert reader.partitions() == []
    from pyspark.sql.datasource import InputPartition

    assert list(reader.read(InputPartition(None))) == []


def test_time_travel_options(tmp_path: Path) -> None:
    path = tmp_path / "t"
    write_job(path, [[batch([1])]])
    write_job(path, [[batch([2])]])
    write_job(path, [[batch([3])]])
    table = mp.open_table(str(path))
    table.create_tag("v2", 2)

    def ids(**options: str) -> list[int]:
        return sorted(read_all(path, SPARK_SCHEMA, **options).column("id").to_pylist())

    assert ids() == [1, 2, 3]
    assert ids(**{"scan.snapshot-id": "1"}) == [1]
    assert ids(**{"scan.tag-name": "v2"}) == [1, 2]
    t2 = table.snapshots()[1].timeMillis
    assert ids(**{"scan.timestamp-millis": str(t2)}) == [1, 2]
    assert ids(**{"incremental-between": "1,3"}) == [2, 3]
    with pytest.raises(InvalidArgumentError, match="at most one"):
        ids(**{"scan.snapshot-id": "1", "scan.tag-name": "v2"})
    with pytest.raises(InvalidArgumentError, match="scan.snapshot-id"):
        ids(**{"scan.snapshot-id": "one"})


def test_columns_option_and_user_schema_read_a_subset(tmp_path: Path) -> None:
    path = tmp_path / "t"
    write_job(path, [[batch([1, 2])]])
    subset = MiniPaimonDataSource({"path": str(path), "columns": "v, id"}).schema()
    assert subset.fieldNames() == ["v", "id"]
    assert read_all(path, columns="v, id").column_names == ["v", "id"]
    user = StructType([StructField("v", DoubleType())])
    assert read_all(path, user).to_pydict() == {"v": [1.0, 2.0]}
    with pytest.raises(SchemaMismatchError, match="not in the table"):
        read_all(path, StructType([StructField("nope", DoubleType())]))
    with pytest.raises(SchemaMismatchError, match="'v' is double"):
        read_all(path, StructType([StructField("v", StringType())]))
    with pytest.raises(InvalidArgumentError, match="columns"):
        MiniPaimonDataSource({"path": str(path), "columns": "nope"}).schema()


def test_plain_reader_has_no_push_filters_and_pushdown_reader_has() -> None:
    """Spark refuses a reader overriding pushFilters while pushdown is off."""
    from pyspark.sql.datasource import DataSourceReader

    plain = getattr(MiniPaimonReader, "pushFilters", None)
    assert plain is None or plain is DataSourceReader.pushFilters
    source = MiniPaimonDataSource({"path": "/nowhere"})
    assert type(source.reader(SPARK_SCHEMA)) is MiniPaimonReader


def test_reader_choice_follows_the_calling_planner() -> None:
    source = MiniPaimonDataSource({"path": "/nowhere"})
    planner: dict[str, Any] = {"__name__": "pyspark.sql.worker.data_source_pushdown_filters",
                               "source": source, "schema": SPARK_SCHEMA}
    exec("def _main():\n    return source.reader(schema)\nreader = _main()", planner)
    assert type(planner["reader"]) is PushdownReader
    other: dict[str, Any] = {"__name__": "pyspark.sql.worker.plan_data_source_read",
                             "source": source, "schema": SPARK_SCHEMA}
    exec("reader = source.reader(schema)", other)
    assert type(other["reader"]) is MiniPaimonReader


def test_commit_compacts_when_the_trigger_is_reached(tmp_path: Path) -> None:
    """Each Spark job adds a sorted run per bucket; compaction after commit bounds them."""
    path = tmp_path / "t"
    for i in range(8):
        write_job(path, [[batch([1, 2, 3], v=float(i))]],
                  **{"primary-key": "id", "bucket": "1", "num-sorted-run.compaction-trigger": "3"})
    table = mp.open_table(str(path))
    assert "COMPACT" in {s.commitKind for s in table.snapshots()}
    (split,) = table.scan().plan()
    assert sum(1 for f in split.files if f.level == 0) < 8
    assert read_all(path).column("v").to_pylist() == [7.0] * 3


def test_writes_ignore_read_options(tmp_path: Path) -> None:
    """A temporary view hands its (read) options to INSERT too."""
    path = tmp_path / "t"
    write_job(path, [[batch([1])]], **{"scan.snapshot-id": "1", "columns": "id"})
    assert mp.open_table(str(path)).options() == {"bucket": "-1"}
    write_job(path, [[batch([2])]], **{"scan.tag-name": "x", "incremental-between": "1,2"})
    assert len(mp.open_table(str(path)).snapshots()) == 2


@pytest.mark.parametrize(("options", "message"), [
    ({"incremental-between": "5"}, "incremental-between"),
    ({"scan.timestamp-millis": "yesterday"}, "scan.timestamp-millis"),
    ({"columns": " , "}, "columns"),
    ({"path": "  "}, "TEMPORARY VIEW"),
    ({"scan.parallelism": "0"}, "scan.parallelism"),
    ({"scan.parallelism": "many"}, "scan.parallelism"),
])
def test_bad_read_options_name_the_option(tmp_path: Path, options: dict[str, str],
                                          message: str) -> None:
    with pytest.raises(InvalidArgumentError, match=message):
        MiniPaimonDataSource({"path": str(tmp_path), **options}).reader(SPARK_SCHEMA)


def test_bad_write_option_value(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError, match="dynamic-partition-overwrite"):
        new_writer(tmp_path / "t", **{"dynamic-partition-overwrite": "yes"})


def test_stream_sink_replay_after_its_snapshot_expired_commits_nothing(tmp_path: Path) -> None:
    """Issue 32 item 6, the Spark sink's commit-user path (driven without Spark): batch 5
    committed, then other writers and retention expired its snapshot before the query
    restarted from a checkpoint that had not recorded the commit. The replay of batch 5
    commits nothing."""
    path = tmp_path / "t"
    mp.create_table(str(path), to_arrow_schema(SPARK_SCHEMA), options={
        "snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"})
    options = {"path": str(path), "checkpointLocation": str(tmp_path / "ckpt")}
    sink = roundtrip(MiniPaimonDataSource(options).streamWriter(SPARK_SCHEMA, False))
    sink.commit([roundtrip(sink).write(iter([batch([1, 2])]))], 5)
    for i in range(3):
        mp.open_table(str(path)).write(pa.table(batch([100 + i])))
    assert all(s.commitUser != sink.commit_user for s in mp.open_table(str(path)).snapshots())
    restarted = roundtrip(MiniPaimonDataSource(options).streamWriter(SPARK_SCHEMA, False))
    restarted.commit([roundtrip(restarted).write(iter([batch([1, 2])]))], 5)  # the replay
    assert sorted(read_all(path).column("id").to_pylist()) == [1, 2, 100, 101, 102]
