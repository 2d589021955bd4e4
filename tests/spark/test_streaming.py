"""Structured Streaming: the minipaimon source and the exactly-once sink.

First the connector objects driven directly (as Spark drives them, through pickle), then
real streaming queries on the shared local session. No test sleeps to wait for Spark: a
query either runs with ``availableNow`` to its end, or the test calls
``processAllAvailable()``. Micro-batches are collected with ``foreachBatch`` so a test sees
each batch's rows in order.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import textwrap
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
    SnapshotExpiredError,
    UnsupportedOptionError,
)
from minipaimon_core.metadata.consumer import ConsumerManager  # noqa: E402
from minipaimon_spark.source import MiniPaimonDataSource  # noqa: E402
from minipaimon_spark.stream import stream_reader  # noqa: E402
from minipaimon_spark.stream.stream_reader import (  # noqa: E402
    ReadAllAvailable,
    ReadMaxFiles,
    ReadMaxRows,
)
from minipaimon_spark.stream.stream_writer import commit_user  # noqa: E402

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("k", pa.string()), ("v", pa.float64())])
KV = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.int64())])
REPO = Path(__file__).resolve().parents[2]


def rows(start: int, n: int) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table({"id": pa.array(ids, pa.int64()), "k": [f"k{i % 3}" for i in ids],
                     "v": [i * 0.5 for i in ids]}, schema=SCHEMA)


def kv(ids: list[int], vs: list[int | None], kinds: list[str] | None = None) -> pa.Table:
    cols: dict[str, Any] = {"id": pa.array(ids, pa.int64()), "v": pa.array(vs, pa.int64())}
    if kinds:
        cols["_row_kind"] = pa.array(kinds)
    return pa.table(cols)


# -- connector objects, without Spark ------------------------------------------------------


def source(path: Path, **options: str) -> MiniPaimonDataSource:
    return MiniPaimonDataSource({"path": str(path), **options})


def stream(ds: MiniPaimonDataSource) -> Any:
    """A stream reader as Spark's planner gets it (after a pickle round trip)."""
    ds = pickle.loads(pickle.dumps(ds))
    return ds.streamReader(ds.schema())


def read_between(reader: Any, start: dict[str, Any], end: dict[str, Any]) -> list[dict[str, Any]]:
    """What the tasks of one batch yield, each task with its own unpickled reader."""
    out: list[dict[str, Any]] = []
    for p in reader.partitions(start, end):
        task = pickle.loads(pickle.dumps(reader))
        for b in task.read(pickle.loads(pickle.dumps(p))):
            out += b.to_pylist()
    return out


@pytest.mark.smoke
def test_reader_offsets_as_spark_calls_them(tmp_path: Path) -> None:
    t = mp.create_table(str(tmp_path / "t"), SCHEMA)
    t.write(rows(0, 3))
    reader = stream(source(tmp_path / "t"))
    first = reader.initialOffset()
    assert first == {"initial": "latest-full"}  # resolved by the first latestOffset
    t.write(rows(3, 2))
    assert reader.initialOffset() == first  # Spark may ask again: the same answer
    end = reader.latestOffset()  # pyspark 4.0/4.1: no arguments
    table = {"tableId": mp.open_table(str(tmp_path / "t"))._schema_manager.table_id(), "tablePath": t.path}
    assert end == {"snapshot": 2, "full": False, "splitIndex": 0, **table}  # the full scan of 2
    assert reader.latestOffset(first, ReadAllAvailable()) == end  # 4.2+
    got = read_between(reader, first, end)
    assert [r["id"] for r in got] == [0, 1, 2, 3, 4]
    assert read_between(reader, first, end) == got  # a replay: the same rows
    assert reader.partitions(end, end) == []
    assert reader.reportLatestOffset() == end
    t.write(rows(5, 1))  # a restarted query replays batch 0 from a new initialOffset()
    restarted = stream(source(tmp_path / "t"))
    assert read_between(restarted, restarted.initialOffset(), end) == got
    assert restarted.latestOffset(end, ReadAllAvailable()) == {"snapshot": 3, "full": False, "splitIndex": 0,
                                                               **table}
    task = pickle.loads(pickle.dumps(reader))
    assert task._table_cache is None and task._scanner_cache is None


@pytest.mark.smoke
def test_read_limits_map_onto_the_core(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stream_reader, "ADMISSION_CONTROL", True)  # the mapping, on any pyspark
    t = mp.create_table(str(tmp_path / "t"), SCHEMA)
    for i in range(4):
        t.write(rows(i * 10, 10))
    reader = stream(source(tmp_path / "t", **{"scan.mode": "from-snapshot", "scan.snapshot-id": "1",
                                              "maxRowsPerTrigger": "15",
                                              "read.stream.maxSnapshotsPerTrigger": "3"}))
    assert reader.getDefaultReadLimit() == ReadMaxRows(15)
    start = reader.initialOffset()
    assert reader.latestOffset(start, ReadMaxRows(15))["snapshot"] == 1  # at most 15 rows
    assert reader.latestOffset(start, ReadMaxFiles(3))["snapshot"] == 1  # rows still apply
    assert reader.latestOffset(start, ReadAllAvailable())["snapshot"] == 4  # the engine says all
    snapshots_only = stream(source(tmp_path / "t", **{"scan.mode": "latest", "maxSnapshotsPerTrigger": "1"}))
    assert snapshots_only.getDefaultReadLimit() == ReadAllAvailable()
    assert snapshots_only.latestOffset({"snapshot": 1}, ReadAllAvailable())["snapshot"] == 2
    snapshots_only.prepareForTriggerAvailableNow()
    t.write(rows(40, 1))
    assert snapshots_only.latestOffset({"snapshot": 4}, ReadAllAvailable())["snapshot"] == 4
    with pytest.raises(InvalidArgumentError, match="maxfilespertrigger"):
        stream(source(tmp_path / "t", maxFilesPerTrigger="0"))


@pytest.mark.smoke
def test_rate_limits_refused_where_spark_has_no_admission_control(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mp.create_table(str(tmp_path / "t"), SCHEMA)
    monkeypatch.setattr(stream_reader, "ADMISSION_CONTROL", False)
    with pytest.raises(UnsupportedOptionError, match="pyspark 4.2"):
        stream(source(tmp_path / "t", maxFilesPerTrigger="1")).initialOffset()
    stream(source(tmp_path / "t")).initialOffset()


@pytest.mark.smoke
def test_consumer_records_progress_and_a_new_query_resumes(tmp_path: Path) -> None:
    t = mp.create_table(str(tmp_path / "t"), SCHEMA)
    t.write(rows(0, 2))
    consumers = ConsumerManager(t.io, t.layout)
    reader = stream(source(tmp_path / "t", **{"consumer-id": "job1"}))
    start = reader.initialOffset()
    assert consumers.read("job1") is None  # registered once a batch is committed
    t.write(rows(2, 2))
    end = reader.latestOffset(start, ReadAllAvailable())
    reader.commit(end)
    assert consumers.read("job1").nextSnapshot == 3
    t.write(rows(4, 2))
    again = stream(source(tmp_path / "t", **{"consumer-id": "job1"}))  # a new checkpoint
    resume = again.initialOffset()
    assert [r["id"] for r in read_between(again, resume, again.latestOffset(resume, ReadAllAvailable()))] == [4, 5]


@pytest.mark.smoke
def test_expired_start_names_the_options(tmp_path: Path) -> None:
    t = mp.create_table(str(tmp_path / "t"), SCHEMA)
    for i in range(3):
        t.write(rows(i, 1))
    expire(t, 2)
    with pytest.raises(SnapshotExpiredError, match="consumer-id.*snapshot.num-retained.min"):
        stream(source(tmp_path / "t", **{"scan.mode": "from-snapshot", "scan.snapshot-id": "1"})).initialOffset()
    reader = stream(source(tmp_path / "t"))
    with pytest.raises(SnapshotExpiredError, match="scan.mode"):
        reader.partitions({"snapshot": 0}, {"snapshot": 3})


def expire(t: mp.Table, keep: int) -> None:
    """Keep the newest ``keep`` snapshots (the core's expiration where it exists)."""
    if hasattr(t, "expire_snapshots"):
        t.expire_snapshots(retain_max=keep, retain_min=keep)
        return
    latest = t.latest_snapshot().id
    for sid in range(1, latest - keep + 1):
        (Path(t.path) / "snapshot" / f"snapshot-{sid}").unlink(missing_ok=True)


SINK_SCHEMA = StructType([StructField("id", LongType(), False), StructField("k", StringType()),
                          StructField("v", DoubleType())])


def task_write(writer: Any, batch: pa.Table) -> Any:
    task = pickle.loads(pickle.dumps(writer))
    return task.write(iter(batch.to_batches()))


@pytest.mark.smoke
def test_sink_replay_of_a_committed_batch_is_a_no_op(tmp_path: Path) -> None:
    ck = tmp_path / "ck"
    ds = MiniPaimonDataSource({"path": str(tmp_path / "t"), "checkpointLocation": str(ck)})
    for batch_id, data in enumerate([rows(0, 3), rows(3, 2)]):
        message = task_write(ds.streamWriter(SINK_SCHEMA, False), data)
        ds.streamWriter(SINK_SCHEMA, False).commit([message], batch_id)
    t = mp.open_table(str(tmp_path / "t"))
    files = data_files(tmp_path / "t")
    # Spark replays batch 1 (it crashed before writing commits/1): new files, same batch id.
    message = task_write(ds.streamWriter(SINK_SCHEMA, False), rows(3, 2))
    assert data_files(tmp_path / "t") != files
    ds.streamWriter(SINK_SCHEMA, False).commit([message], 1)
    assert sorted(t.to_arrow().column("id").to_pylist()) == [0, 1, 2, 3, 4]
    assert len(t.snapshots()) == 2 and data_files(tmp_path / "t") == files
    # abort after a commit that landed keeps the files; abort of a new batch deletes them
    ds.streamWriter(SINK_SCHEMA, False).abort([message], 1)
    message = task_write(ds.streamWriter(SINK_SCHEMA, False), rows(5, 1))
    ds.streamWriter(SINK_SCHEMA, False).abort([message, None], 2)
    assert data_files(tmp_path / "t") == files


def data_files(path: Path) -> set[str]:
    return {f for _, _, fs in os.walk(path) for f in fs if f.endswith(".parquet")}


@pytest.mark.smoke
def test_commit_user_is_stable_per_checkpoint_and_query(tmp_path: Path) -> None:
    ck = tmp_path / "ck"
    ck.mkdir()
    a = commit_user({"checkpointLocation": str(ck)})
    assert a == commit_user({"checkpointlocation": f"file:{ck}"}) == commit_user(
        {"checkpointLocation": str(ck / ".." / "ck")})
    (ck / "metadata").write_text('{"id":"q-1"}\n')
    b = commit_user({"checkpointLocation": str(ck)})
    assert b != a and b == commit_user({"checkpointLocation": str(ck)})
    (ck / "metadata").write_text('{"id":"q-2"}\n')  # the checkpoint was emptied and reused
    assert commit_user({"checkpointLocation": str(ck)}) != b
    with pytest.raises(InvalidArgumentError, match="checkpointLocation"):
        commit_user({"path": "x"})


# -- real streaming queries ------------------------------------------------------------------


class Batches:
    """A foreachBatch sink that keeps every micro-batch's rows, in order."""

    def __init__(self) -> None:
        self.batches: list[tuple[int, list[tuple[Any, ...]]]] = []

    def __call__(self, df: Any, batch_id: int) -> None:
        self.batches.append((batch_id, [tuple(r) for r in df.collect()]))

    def rows(self) -> list[tuple[Any, ...]]:
        return [r for _, rs in self.batches for r in rs]

    def ids(self) -> list[int]:
        return [r[0] for r in self.rows()]


def start(spark: Any, path: Path, ck: Path, sink: Batches, available_now: bool = False,
          **options: str) -> Any:
    reader = spark.readStream.format("minipaimon")
    for key, value in options.items():
        reader = reader.option(key, value)
    writer = reader.load(str(path)).writeStream.foreachBatch(sink).option("checkpointLocation", str(ck))
    if available_now:
        writer = writer.trigger(availableNow=True)
    return writer.start()


def run(spark: Any, path: Path, ck: Path, **options: str) -> Batches:
    """One availableNow run of a stream from ``path``: its batches."""
    sink = Batches()
    q = start(spark, path, ck, sink, available_now=True, **options)
    q.awaitTermination()
    assert q.exception() is None
    return sink


@pytest.mark.smoke
def test_core_writer_commits_between_micro_batches_and_restart_resumes(spark: Any, tmp_path: Path) -> None:
    path, ck = tmp_path / "t", tmp_path / "ck"
    t = mp.create_table(str(path), SCHEMA)
    t.write(rows(0, 5))
    sink = Batches()
    q = start(spark, path, ck, sink)
    try:
        q.processAllAvailable()
        for i in range(1, 4):
            t.write(rows(i * 5, 5))
            q.processAllAvailable()
    finally:
        q.stop()
    # one batch per snapshot, each row once, in snapshot order
    assert [sorted(r[0] for r in rs) for _, rs in sink.batches] == [list(range(i * 5, i * 5 + 5)) for i in range(4)]
    t.write(rows(20, 2))  # while the query is down
    t.write(rows(22, 2))
    again = run(spark, path, ck)
    assert [sorted(r[0] for r in rs) for _, rs in again.batches] == [[20, 21, 22, 23]]


def test_replay_of_the_first_batch_after_new_commits_reads_the_same_rows(spark: Any, tmp_path: Path) -> None:
    """Spark replays batch 0 from the restarted reader's initialOffset(): same rows."""
    path, ck = tmp_path / "t", tmp_path / "ck"
    t = mp.create_table(str(path), SCHEMA)
    t.write(rows(0, 5))
    assert run(spark, path, ck).ids() == [0, 1, 2, 3, 4]
    (ck / "commits" / "0").unlink()  # as if the query died before Spark's commit of batch 0
    for crc in (ck / "commits").glob(".0.crc"):
        crc.unlink()
    t.write(rows(5, 3))
    batches = run(spark, path, ck).batches
    if not stream_reader.ADMISSION_CONTROL:  # pyspark < 4.2: AvailableNow runs one batch only
        batches += run(spark, path, ck).batches
    assert [(b, sorted(r[0] for r in rs)) for b, rs in batches] == [(0, [0, 1, 2, 3, 4]), (1, [5, 6, 7])]


def test_writer_process_commits_while_a_query_reads(spark: Any, tmp_path: Path) -> None:
    path, ck = tmp_path / "t", tmp_path / "ck"
    mp.create_table(str(path), SCHEMA)
    sink = Batches()
    q = start(spark, path, ck, sink)
    script = textwrap.dedent(f"""
        import pyarrow as pa, minipaimon_core as mp
        t = mp.open_table({str(path)!r})
        for i in range(30):
            ids = list(range(i * 10, i * 10 + 10))
            t.write(pa.table({{"id": pa.array(ids, pa.int64()), "k": ["w"] * 10,
                              "v": [float(x) for x in ids]}}))
    """)
    try:
        q.processAllAvailable()
        subprocess.run([sys.executable, "-c", script], check=True, cwd=REPO, timeout=120)
        q.processAllAvailable()
    finally:
        q.stop()
    assert sink.ids() == list(range(300))  # exactly once, in snapshot (= commit) order
    assert len(mp.open_table(str(path)).snapshots()) == 30


def test_startup_modes(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "t"
    t = mp.create_table(str(path), SCHEMA)
    for i in range(4):
        t.write(rows(i * 10, 2))
    everything = [0, 1, 10, 11, 20, 21, 30, 31]
    cases: dict[str, tuple[dict[str, str], list[int]]] = {
        "default": ({}, everything),
        "latest-full": ({"scan.mode": "latest-full"}, everything),
        "from-snapshot": ({"scan.mode": "from-snapshot", "scan.snapshot-id": "3"}, [20, 21, 30, 31]),
        "from-snapshot-full": ({"scan.mode": "from-snapshot-full", "scan.snapshot-id": "3"}, everything),
        "from-timestamp": ({"scan.mode": "from-timestamp",
                            "scan.timestamp-millis": str(t.snapshot(3).timeMillis)}, [30, 31]),
    }
    got = ids_by_tag(run_query(tagged(spark, path, {k: v[0] for k, v in cases.items()}), tmp_path / "ck"))
    assert {k: sorted(v) for k, v in got.items()} == {k: v[1] for k, v in cases.items()}
    sink = Batches()
    q = start(spark, path, tmp_path / "ck-latest", sink, **{"scan.mode": "latest"})
    try:
        q.processAllAvailable()
        t.write(rows(40, 2))
        q.processAllAvailable()
    finally:
        q.stop()
    assert sink.ids() == [40, 41]


def test_compact_snapshots_add_nothing_and_overwrite_is_skipped_unless_asked(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "t"
    t = mp.create_table(str(path), KV, primary_key=["id"], options={"bucket": "2", "write-only": "true"})
    t.write(kv([1, 2], [1, 2]))
    t.write(kv([1], [10]))
    t.compact(full=True)
    t.write(kv([5], [5]), mode="overwrite")
    t.write(kv([6], [6]))
    kinds = [s.commitKind for s in t.snapshots()]
    assert kinds == ["APPEND", "APPEND", "COMPACT", "OVERWRITE", "APPEND"]
    from_1 = {"scan.mode": "from-snapshot", "scan.snapshot-id": "1"}
    got = run_query(tagged(spark, path, {
        "plain": from_1, "overwrite": {**from_1, "streaming-read-overwrite": "true"}}), tmp_path / "ck")
    assert sorted(r[2:] for r in got.rows() if r[0] == "plain") == [(1, 1), (1, 10), (2, 2), (6, 6)]
    assert sorted(r[2:] for r in got.rows() if r[0] == "overwrite") == [(1, 1), (1, 10), (2, 2), (5, 5), (6, 6)]


CHANGELOG_CASES: list[tuple[str, dict[str, str], list[pa.Table], list[tuple[str, int, int | None]]]] = [
    ("none", {}, [kv([1, 3], [10, 3]), kv([2], [0], ["-D"])], [("+I", 1, 10), ("+I", 3, 3), ("-D", 2, 0)]),
    ("input", {"changelog-producer": "input"}, [kv([1, 3], [10, 3]), kv([2], [0], ["-D"])],
     [("+I", 1, 10), ("+I", 3, 3), ("-D", 2, 0)]),
    ("lookup", {"changelog-producer": "lookup"}, [kv([1, 3], [10, 3]), kv([2], [0], ["-D"])],
     [("-U", 1, 1), ("+U", 1, 10), ("+I", 3, 3), ("-D", 2, 2)]),
    ("full-compaction", {"changelog-producer": "full-compaction"}, [kv([1, 3], [10, 3]), kv([2], [0], ["-D"])],
     [("-U", 1, 1), ("+U", 1, 10), ("+I", 3, 3), ("-D", 2, 2)]),
    ("partial-update", {"changelog-producer": "lookup", "merge-engine": "partial-update"},
     [kv([1], [None]), kv([1], [5])], [("-U", 1, 1), ("+U", 1, 5)]),
    ("aggregation", {"changelog-producer": "lookup", "merge-engine": "aggregation",
                     "fields.v.aggregate-function": "sum"},
     [kv([1], [2]), kv([1], [3])], [("-U", 1, 1), ("+U", 1, 3), ("-U", 1, 3), ("+U", 1, 6)]),
    ("first-row", {"changelog-producer": "lookup", "merge-engine": "first-row"},
     [kv([1], [7]), kv([3], [30])], [("+I", 3, 30)]),
]


def changelog_table(path: Path, options: dict[str, str], writes: list[pa.Table]) -> int:
    """A table with keys 1, 2, then ``writes``; returns the first snapshot of the writes."""
    t = mp.create_table(str(path), KV, primary_key=["id"], options=options)
    t.write(kv([1, 2], [1, 2]))
    after = t.latest_snapshot().id + 1
    for w in writes:
        t.write(w)
    return after


@pytest.mark.parametrize("name,options,writes,want", CHANGELOG_CASES, ids=[c[0] for c in CHANGELOG_CASES])
def test_changelog_rows_for_each_producer_and_merge_engine(
        tmp_path: Path, name: str, options: dict[str, str], writes: list[pa.Table],
        want: list[tuple[str, int, int | None]]) -> None:
    """-U/+U/-D rows with read.changelog=true; without it only +I/+U rows, no _row_kind."""
    after = changelog_table(tmp_path / "t", options, writes)
    got = {}
    for changelog in ("true", "false"):
        ds = source(tmp_path / "t", **{"read.changelog": changelog, "scan.mode": "from-snapshot",
                                       "scan.snapshot-id": str(after)})
        assert ("_row_kind" in ds.schema().fieldNames()) == (changelog == "true")
        reader = stream(ds)
        start = reader.initialOffset()
        got[changelog] = read_between(reader, start, reader.latestOffset(start, ReadAllAvailable()))
    assert [(r["_row_kind"], r["id"], r["v"]) for r in got["true"]] == want
    assert [(r["id"], r["v"]) for r in got["false"]] == [(i, v) for k, i, v in want if k in ("+I", "+U")]


def test_batch_read_with_read_changelog_marks_every_row_an_insert(tmp_path: Path) -> None:
    """schema() cannot tell a batch read from a stream: a batch read gets _row_kind too."""
    changelog_table(tmp_path / "t", {"changelog-producer": "input"}, [kv([1], [10])])
    ds = pickle.loads(pickle.dumps(source(tmp_path / "t", **{"read.changelog": "true"})))
    reader = ds.reader(ds.schema())
    got = [r for p in reader.partitions() for b in reader.read(p) for r in b.to_pylist()]
    assert sorted((r["id"], r["v"], r["_row_kind"]) for r in got) == [(1, 10, "+I"), (2, 2, "+I")]


def test_changelog_stream_through_spark(spark: Any, tmp_path: Path) -> None:
    """The _row_kind column end to end (Spark checks the Arrow schema of every batch)."""
    name, options, writes, want = CHANGELOG_CASES[2]  # lookup: -U/+U/+I/-D
    after = changelog_table(tmp_path / name, options, writes)
    frames = tagged(spark, tmp_path / name, {
        changelog: {"read.changelog": changelog, "scan.mode": "from-snapshot", "scan.snapshot-id": str(after)}
        for changelog in ("true", "false")})
    got = run_query(frames, tmp_path / "ck")
    assert [r[1:] for r in got.rows() if r[0] == "true"] == want
    assert [r[1:] for r in got.rows() if r[0] == "false"] == [
        (None, i, v) for k, i, v in want if k in ("+I", "+U")]


def ids_by_tag(sink: Batches) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for r in sink.rows():
        out.setdefault(r[0], []).append(r[2])
    return out


def rows_per_batch(sink: Batches, tag: str) -> list[int]:
    counts = [sum(1 for r in rs if r[0] == tag) for _, rs in sink.batches]
    return [c for c in counts if c]


def tagged(spark: Any, path: Path, cases: dict[str, dict[str, str]]) -> Any:
    """One streaming DataFrame: the union of a stream of ``path`` per case.

    Rows are ``(tag, _row_kind, *table columns)`` (``_row_kind`` None without read.changelog).
    """
    from pyspark.sql import functions as F

    union = None
    for tag, options in cases.items():
        reader = spark.readStream.format("minipaimon")
        for key, value in options.items():
            reader = reader.option(key, value)
        df = reader.load(str(path))
        if "_row_kind" not in df.columns:
            df = df.withColumn("_row_kind", F.lit(None).cast("string"))
        rest = [c for c in df.columns if c != "_row_kind"]
        df = df.select(F.lit(tag).alias("tag"), "_row_kind", *rest)
        union = df if union is None else union.unionByName(df)
    return union


def run_query(df: Any, ck: Path) -> Batches:
    sink = Batches()
    q = df.writeStream.foreachBatch(sink).option("checkpointLocation", str(ck)).trigger(availableNow=True).start()
    q.awaitTermination()
    assert q.exception() is None
    return sink


@pytest.mark.skipif(not stream_reader.ADMISSION_CONTROL, reason="read limits need pyspark 4.2+")
def test_rate_limits_split_micro_batches(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "t"
    t = mp.create_table(str(path), SCHEMA, partition_by=["k"])
    t.write(rows(0, 30))  # 3 partitions: 3 files of 10 rows
    for i in range(3):
        t.write(rows(100 + i * 10, 10))
    from_1 = {"scan.mode": "from-snapshot", "scan.snapshot-id": "1"}
    sink = run_query(tagged(spark, path, {
        "files": {"maxFilesPerTrigger": "1"},  # the full latest snapshot: one file a batch
        "rows": {"maxRowsPerTrigger": "35", **from_1},
        "snapshots": {"read.stream.maxSnapshotsPerTrigger": "1", **from_1},
    }), tmp_path / "ck")
    want = [*range(30), *range(100, 130)]
    assert {k: sorted(v) for k, v in ids_by_tag(sink).items()} == {k: want for k in ("files", "rows", "snapshots")}
    # Limits are upper bounds (issue 16 item 25): 12 files of 10 or 3-4 rows, one a batch.
    assert sorted(rows_per_batch(sink, "files")) == sorted([10] * 3 + [4, 3, 3] * 3)
    assert rows_per_batch(sink, "rows") == [30, 30]
    assert rows_per_batch(sink, "snapshots") == [30, 10, 10, 10]


def sink_query(df: Any, path: Path, ck: Path, mode: str = "append", **options: str) -> None:
    writer = df.writeStream.format("minipaimon").outputMode(mode).option("checkpointLocation", str(ck))
    for key, value in options.items():
        writer = writer.option(key, value)
    q = writer.trigger(availableNow=True).start(str(path))
    q.awaitTermination()
    assert q.exception() is None


@pytest.mark.smoke
def test_stream_copy_into_a_new_table_exactly_once(spark: Any, tmp_path: Path) -> None:
    src, dst, ck = tmp_path / "src", tmp_path / "dst", tmp_path / "ck"
    t = mp.create_table(str(src), SCHEMA)
    t.write(rows(0, 50))
    t.write(rows(50, 50))
    df = spark.readStream.format("minipaimon").load(str(src))
    sink_query(df, dst, ck, **{"partition-keys": "k"})
    out = mp.open_table(str(dst))
    assert out.partition_keys() == ["k"]
    assert sorted(out.to_arrow().column("id").to_pylist()) == list(range(100))
    t.write(rows(100, 10))
    sink_query(spark.readStream.format("minipaimon").load(str(src)), dst, ck)
    out = mp.open_table(str(dst))
    assert sorted(out.to_arrow().column("id").to_pylist()) == list(range(110))
    users = {s.commitUser for s in out.snapshots()}
    assert len(users) == 1 and next(iter(users)).startswith("stream-")
    assert [s.commitIdentifier for s in out.snapshots()] == [0, 1]


def test_replayed_batch_after_a_lost_spark_commit_is_a_no_op(spark: Any, tmp_path: Path) -> None:
    """Spark replays batch N when it died between our commit and writing commits/N."""
    src, dst, ck = tmp_path / "src", tmp_path / "dst", tmp_path / "ck"
    t = mp.create_table(str(src), KV, primary_key=["id"], options={"bucket": "1"})
    t.write(kv([1, 2], [1, 2]))
    agg = {"primary-key": "id", "bucket": "1", "merge-engine": "aggregation",
           "fields.v.aggregate-function": "sum"}
    sink_query(spark.readStream.format("minipaimon").load(str(src)), dst, ck, **agg)
    t.write(kv([1, 3], [10, 3]))
    sink_query(spark.readStream.format("minipaimon").load(str(src)), dst, ck, **agg)
    before = mp.open_table(str(dst)).to_arrow().sort_by("id").to_pylist()
    files = data_files(dst)
    assert before == [{"id": 1, "v": 11}, {"id": 2, "v": 2}, {"id": 3, "v": 3}]
    (ck / "commits" / "1").unlink()  # as if Spark crashed right after our commit
    for crc in (ck / "commits").glob(".1.crc"):
        crc.unlink()
    sink_query(spark.readStream.format("minipaimon").load(str(src)), dst, ck, **agg)
    assert (ck / "commits" / "1").exists()  # Spark did re-run batch 1
    out = mp.open_table(str(dst))
    assert out.to_arrow().sort_by("id").to_pylist() == before  # a duplicate would double-count
    assert len(out.snapshots()) == 2 and data_files(dst) == files


def test_first_batch_replayed_into_the_sink_after_upstream_commits_writes_once(
        spark: Any, tmp_path: Path) -> None:
    """The hand-off's first batch: the query dies after the sink committed batch 0 but
    before Spark's commits/0, the source commits again, the restart replays batch 0 with
    the same rows (its offsets are in the checkpoint) and the sink's replay is a no-op."""
    src, dst, ck = tmp_path / "src", tmp_path / "dst", tmp_path / "ck"
    t = mp.create_table(str(src), SCHEMA)
    t.write(rows(0, 5))
    sink_query(spark.readStream.format("minipaimon").load(str(src)), dst, ck)
    (ck / "commits" / "0").unlink()
    for crc in (ck / "commits").glob(".0.crc"):
        crc.unlink()
    t.write(rows(5, 3))
    t.write(rows(8, 2))
    for _ in range(1 if stream_reader.ADMISSION_CONTROL else 3):  # < 4.2: one batch per run
        sink_query(spark.readStream.format("minipaimon").load(str(src)), dst, ck)
    assert sorted(mp.open_table(str(dst)).to_arrow().column("id").to_pylist()) == list(range(10))


def test_primary_key_sink_mirrors_a_changelog_with_deletes(spark: Any, tmp_path: Path) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    t = mp.create_table(str(src), KV, primary_key=["id"], options={"bucket": "2", "changelog-producer": "input"})
    t.write(kv([1, 2, 3], [1, 2, 3]))
    t.write(kv([1, 4], [10, 4]))
    t.write(kv([2], [None], ["-D"]))
    df = spark.readStream.format("minipaimon").option("read.changelog", "true").load(str(src))
    sink_query(df, dst, tmp_path / "ck", **{"primary-key": "id", "bucket": "2"})
    want = t.to_arrow().sort_by("id").to_pylist()
    assert mp.open_table(str(dst)).to_arrow().sort_by("id").to_pylist() == want
    assert want == [{"id": 1, "v": 10}, {"id": 3, "v": 3}, {"id": 4, "v": 4}]


def test_complete_mode_replaces_the_table_each_batch(spark: Any, tmp_path: Path) -> None:
    from pyspark.sql import functions as F

    src, dst, ck = tmp_path / "src", tmp_path / "dst", tmp_path / "ck"
    t = mp.create_table(str(src), SCHEMA)
    t.write(rows(0, 6))

    def totals() -> Any:
        df = spark.readStream.format("minipaimon").load(str(src))
        return df.groupBy("k").agg(F.sum("v").alias("total"), F.count("*").alias("n"))

    sink_query(totals(), dst, ck, mode="complete")
    t.write(rows(6, 3))
    sink_query(totals(), dst, ck, mode="complete")
    out = mp.open_table(str(dst))
    assert [s.commitKind for s in out.snapshots()] == ["OVERWRITE", "OVERWRITE"]
    got = {r["k"]: (r["total"], r["n"]) for r in out.to_arrow().to_pylist()}
    assert got == {f"k{j}": (sum(i * 0.5 for i in range(9) if i % 3 == j), 3) for j in range(3)}


def test_expiration_while_a_stream_lags_with_and_without_a_consumer(spark: Any, tmp_path: Path) -> None:
    tables = {}
    for name in ("consumer", "none"):
        tables[name] = t = mp.create_table(str(tmp_path / name), SCHEMA)
        t.write(rows(0, 2))
    options = {"consumer": {"consumer-id": "lagging"}, "none": {}}
    for name in tables:
        assert run(spark, tmp_path / name, tmp_path / f"ck-{name}", **options[name]).ids() == [0, 1]
    for t in tables.values():  # the streams are down (lagging) while the tables move on
        for i in range(1, 6):
            t.write(rows(i * 2, 2))
        expire(t, 2)
    t = tables["consumer"]
    needed = ConsumerManager(t.io, t.layout).read("lagging").nextSnapshot
    assert needed <= 2  # Spark commits an offset late: the stream may still need snapshot 2
    if hasattr(t, "expire_snapshots"):  # expiration keeps what the consumer needs
        assert t.snapshots()[0].id <= needed
        again = run(spark, tmp_path / "consumer", tmp_path / "ck-consumer", **options["consumer"])
        assert again.ids() == list(range(2, 12))
    q = start(spark, tmp_path / "none", tmp_path / "ck-none", Batches(), available_now=True)
    with pytest.raises(Exception, match="SnapshotExpiredError") as err:
        q.awaitTermination()
    assert "consumer-id" in str(err.value) and "scan.mode" in str(err.value)
