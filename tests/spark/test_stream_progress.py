"""Issue 16 (items 24, 25): consumer progress and rate limits of the streaming source.

Connector objects driven as Spark drives them (through pickle), and one real query pair
for the consumer hand-over.
"""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

pytest.importorskip("pyspark")

import minipaimon_core as mp  # noqa: E402
from minipaimon_core.metadata.consumer import ConsumerManager  # noqa: E402
from minipaimon_spark.source import MiniPaimonDataSource  # noqa: E402
from minipaimon_spark.stream.stream_reader import ADMISSION_CONTROL, ReadMaxFiles, ReadMaxRows  # noqa: E402
from tests.interleavings import expiration_standing_at  # noqa: E402

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.int64())])


def rows(start: int, n: int) -> pa.Table:
    return pa.table({"id": list(range(start, start + n)), "v": list(range(n))}, schema=SCHEMA)


def stream(path: Path, **options: str) -> Any:
    ds = pickle.loads(pickle.dumps(MiniPaimonDataSource({"path": str(path), **options})))
    return ds.streamReader(ds.schema())


def read_between(reader: Any, start: dict[str, Any], end: dict[str, Any]) -> list[int]:
    out: list[int] = []
    for p in reader.partitions(start, end):
        for b in pickle.loads(pickle.dumps(reader)).read(p):
            out += b.column("id").to_pylist()
    return sorted(out)


# -- 24: consumer progress -----------------------------------------------------------------

BUSY = {"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "2", "bucket": "1"}


def upserts(t: mp.Table, n: int) -> None:
    """``n`` commits, each followed by the table's automatic expiration (BUSY keeps 2)."""
    for i in range(n):
        t.write(pa.table({"id": [0], "v": [100 + i]}, schema=SCHEMA))


@pytest.mark.smoke
@pytest.mark.parametrize("mode", ["latest-full", "from-snapshot-full"])
def test_a_consumer_pins_the_first_batch_before_it_is_planned(tmp_path: Path, mode: str) -> None:
    """Issue 32 item 18: with short retention, the first batch's snapshot expired between
    latestOffset and partitions (planPartitions failed with SnapshotExpiredError on every
    restart). The consumer now pins it first: the batch is planned and read after many
    commits and expirations, and again by a restarted query replaying it."""
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, primary_key=["id"], options=BUSY)
    t.write(rows(0, 3))
    options = {"consumer-id": "c", "scan.mode": mode}
    if mode == "from-snapshot-full":
        options["scan.snapshot-id"] = "1"
    reader = stream(tmp_path / "t", **options)
    start = reader.initialOffset()
    end = reader.latestOffset()  # batch 0 is chosen: its snapshot 1 is pinned now
    upserts(t, 6)  # a busy table: snapshots 2-7, expiration after each
    assert t.snapshot_manager.earliest_id() == 1  # the pin held
    assert read_between(reader, start, end) == [0, 1, 2]
    restarted = stream(tmp_path / "t", **options)  # the query fails and restarts: replay
    assert read_between(restarted, restarted.initialOffset(), end) == [0, 1, 2]
    stored = ConsumerManager(t.io, t.layout).read("c")
    assert (stored.nextSnapshot, stored.fullScanPending) == (1, True)


@pytest.mark.smoke
def test_a_snapshot_expired_before_the_pin_moves_a_new_stream_to_the_latest(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An expiration that decided before the pin landed takes the chosen snapshot anyway:
    a latest-full start then re-chooses the latest snapshot and pins that one."""
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, primary_key=["id"], options=BUSY)
    t.write(rows(0, 3))
    write = ConsumerManager.write
    raced: list[int] = []

    def expired_meanwhile(self: ConsumerManager, consumer_id: str, next_snapshot: int,
                          full_scan_pending: bool = False, unchecked: bool = False) -> None:
        if not raced:  # the first pin lands after two more commits expired its snapshot
            raced.append(next_snapshot)
            upserts(t, 2)
        write(self, consumer_id, next_snapshot, full_scan_pending, unchecked)

    monkeypatch.setattr(ConsumerManager, "write", expired_meanwhile)
    reader = stream(tmp_path / "t", **{"consumer-id": "c"})
    start = reader.initialOffset()
    end = reader.latestOffset()
    assert raced == [1] and end["snapshot"] == 3
    assert read_between(reader, start, end) == [0, 1, 2]
    assert ConsumerManager(t.io, t.layout).read("c").nextSnapshot == 3


@pytest.mark.smoke
def test_a_pin_landing_after_an_expiration_decided_keeps_its_snapshot(tmp_path: Path) -> None:
    """Issue 32 item 18, the residual: an expiration read the consumers (none) and decided
    to take snapshots 1-4; the query pins snapshot 2 before it marks them. The expiration
    reads the consumers again and spares 2 on: the batch plans and reads (it failed)."""
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, options={"snapshot.num-retained.max": "1000"})
    for i in range(5):
        t.write(rows(i, 1))
    thread, io, out = expiration_standing_at(
        t.path, lambda m, p: m == "write_if_absent" and p.endswith(".expired"), every=True)
    reader = stream(tmp_path / "t", **{"consumer-id": "c", "scan.mode": "from-snapshot", "scan.snapshot-id": "2"})
    start = reader.initialOffset()
    end = reader.latestOffset()  # pins snapshot 2
    io.release()
    thread.join()
    assert out[0].snapshots == [1]
    assert read_between(reader, start, end) == [1, 2, 3, 4]


@pytest.mark.smoke
def test_a_pin_of_a_snapshot_being_expired_is_refused(tmp_path: Path) -> None:
    """The expiration has marked 1-4 and stands before it deletes snapshot-2: the query's pin
    of 2 is refused with SnapshotExpiredError and leaves no consumer (it was accepted, and
    the batch then failed on every restart)."""
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, options={"snapshot.num-retained.max": "1000"})
    for i in range(5):
        t.write(rows(i, 1))
    thread, io, out = expiration_standing_at(t.path, lambda m, p: m == "delete" and p.endswith("/snapshot/snapshot-2"))
    reader = stream(tmp_path / "t", **{"consumer-id": "c", "scan.mode": "from-snapshot", "scan.snapshot-id": "2"})
    reader.initialOffset()
    with pytest.raises(mp.SnapshotExpiredError):
        reader.latestOffset()
    io.release()
    thread.join()
    assert out[0].snapshots == [1, 2, 3, 4]
    assert ConsumerManager(t.io, t.layout).read("c") is None


@pytest.mark.smoke
def test_a_new_query_with_the_consumer_id_does_not_redeliver_the_last_batch(tmp_path: Path) -> None:
    t = mp.create_table(str(tmp_path / "t"), SCHEMA)
    t.write(rows(0, 2))
    first = stream(tmp_path / "t", **{"consumer-id": "c"})
    start = first.initialOffset()
    end = first.latestOffset()  # batch 0: the full scan
    assert read_between(first, start, end) == [0, 1]
    t.write(rows(2, 2))
    end1 = first.latestOffset()  # Spark asks for batch 1 only after batch 0 is committed
    assert read_between(first, end, end1) == [2, 3]
    first.latestOffset()  # the next trigger after batch 1 committed (nothing new); stop
    assert ConsumerManager(t.io, t.layout).read("c").nextSnapshot == 3
    second = stream(tmp_path / "t", **{"consumer-id": "c"})
    s = second.initialOffset()
    assert read_between(second, s, second.latestOffset()) == []  # no re-delivery
    t.write(rows(4, 1))
    assert read_between(second, s, second.latestOffset()) == [4]


def test_consumer_handover_between_two_spark_queries(spark: Any, tmp_path: Path) -> None:
    t = mp.create_table(str(tmp_path / "t"), SCHEMA)
    t.write(rows(0, 50))
    seen: list[int] = []

    def collect(df: Any, _: int) -> None:
        seen.extend(r.id for r in df.collect())

    for i, more in enumerate([rows(50, 50), rows(100, 50)]):
        q = (spark.readStream.format("minipaimon").option("consumer-id", "handover")
             .load(str(tmp_path / "t")).writeStream.foreachBatch(collect)
             .option("checkpointLocation", str(tmp_path / f"ck{i}")).start())
        try:
            q.processAllAvailable()
            t.write(more)
            q.processAllAvailable()
        finally:
            q.stop()
    assert sorted(seen) == list(range(150))  # each row once across both queries


# -- 25: rate limits are upper bounds, also for the first full scan ------------------------

needs_admission = pytest.mark.skipif(not ADMISSION_CONTROL, reason="pyspark 4.2+")


@needs_admission
def test_max_rows_is_an_upper_bound(tmp_path: Path) -> None:
    t = mp.create_table(str(tmp_path / "t"), SCHEMA)
    reader = stream(tmp_path / "t", **{"scan.mode": "latest"})
    start = reader.initialOffset()
    start = reader.latestOffset(start, ReadMaxRows(250))
    for i in range(10):
        t.write(rows(i * 100, 100))
    sizes = []
    while True:
        end = reader.latestOffset(start, ReadMaxRows(250))
        if end == start:
            break
        sizes.append(len(read_between(reader, start, end)))
        start = end
    assert sizes == [200] * 5


@needs_admission
def test_limits_apply_to_the_first_full_scan(tmp_path: Path) -> None:
    t = mp.create_table(str(tmp_path / "t"), SCHEMA)
    for i in range(10):
        t.write(rows(i * 100, 100))
    reader = stream(tmp_path / "t")  # latest-full
    start = reader.initialOffset()
    got: list[int] = []
    batches = 0
    for limit in [ReadMaxFiles(3)] * 3 + [ReadMaxRows(250)] * 3:
        end = reader.latestOffset(start, limit)
        ids = read_between(reader, start, end)
        assert len(ids) <= (300 if isinstance(limit, ReadMaxFiles) else 250)
        got += ids
        batches += 1
        start = end
    assert sorted(got) == list(range(1000)) and batches == 6


@needs_admission
def test_a_single_snapshot_larger_than_the_limit_is_one_batch(tmp_path: Path) -> None:
    t = mp.create_table(str(tmp_path / "t"), SCHEMA)
    reader = stream(tmp_path / "t", **{"scan.mode": "latest"})
    start = reader.latestOffset(reader.initialOffset(), ReadMaxRows(10))
    t.write(rows(0, 100))
    end = reader.latestOffset(start, ReadMaxRows(10))
    assert len(read_between(reader, start, end)) == 100
