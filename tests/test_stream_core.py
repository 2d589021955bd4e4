"""Streaming reads by snapshot id, without Spark: offsets, startup modes, changelogs."""

from __future__ import annotations

import pyarrow as pa
import pytest

import minipaimon_core as mp
from minipaimon_core.metadata.sequence import start_of
from minipaimon_core.stream.stream import StreamOffset, StreamScanner
from tests.helpers import SCHEMA, rows

KV = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.int64())])


def kv(ids, vs, kinds=None):
    cols = {"id": pa.array(ids, pa.int64()), "v": pa.array(vs, pa.int64())}
    if kinds:
        cols["_row_kind"] = pa.array(kinds)
    return pa.table(cols)


def read_between(sc: StreamScanner, start: StreamOffset, end: StreamOffset) -> list[dict]:
    return [r for s in sc.plan(start, end) for b in sc.read(s) for r in pa.Table.from_batches([b]).to_pylist()]


def drain(sc: StreamScanner, start: StreamOffset, **limits) -> tuple[list[dict], StreamOffset]:
    out: list[dict] = []
    while True:
        end = sc.latest_offset(start, **limits)
        if end == start:
            return out, start
        out += read_between(sc, start, end)
        start = end


def test_latest_full_then_each_new_snapshot_exactly_once(tmp_path):
    t = mp.create_table(str(tmp_path / "t"), SCHEMA)
    t.write(rows(0, 5))
    t.write(rows(5, 5))
    sc = StreamScanner(t, {})
    start = sc.initial_offset()
    assert start == StreamOffset(2, full=True)
    got, pos = drain(sc, start)
    assert sorted(r["id"] for r in got) == list(range(10))
    t.write(rows(10, 3))
    t.write(rows(13, 3))
    got, pos2 = drain(sc, pos)
    assert sorted(r["id"] for r in got) == list(range(10, 16)) and pos2 == StreamOffset(4)
    assert drain(sc, pos2)[0] == []


def test_startup_modes(tmp_path):
    t = mp.create_table(str(tmp_path / "t"), SCHEMA)
    for i in range(4):
        t.write(rows(i * 10, 2))
    snap3 = t.snapshot(3)

    def ids(options):
        sc = StreamScanner(t, options)
        return sorted(r["id"] for r in drain(sc, sc.initial_offset())[0])

    assert ids({"scan.mode": "latest"}) == []
    assert ids({"scan.mode": "latest-full"}) == [0, 1, 10, 11, 20, 21, 30, 31]
    assert ids({"scan.mode": "from-snapshot", "scan.snapshot-id": "3"}) == [20, 21, 30, 31]
    assert ids({"scan.mode": "from-snapshot-full", "scan.snapshot-id": "3"}) == [0, 1, 10, 11, 20, 21, 30, 31]
    assert ids({"scan.mode": "from-timestamp", "scan.timestamp-millis": str(snap3.timeMillis)}) == [30, 31]
    with pytest.raises(mp.SnapshotNotFoundError):
        StreamScanner(t, {"scan.mode": "from-snapshot", "scan.snapshot-id": "99"}).initial_offset()
    with pytest.raises(mp.InvalidArgumentError):
        StreamScanner(t, {"scan.mode": "sometimes"})


def test_empty_table_stream_starts_and_sees_first_commit(tmp_path):
    t = mp.create_table(str(tmp_path / "t"), SCHEMA)
    sc = StreamScanner(t, {})
    start = sc.initial_offset()
    assert drain(sc, start) == ([], start)
    t.write(rows(0, 2))
    assert sorted(r["id"] for r in drain(sc, start)[0]) == [0, 1]


def test_replayed_batch_is_identical_after_later_commits_and_compaction(tmp_path):
    t = mp.create_table(str(tmp_path / "t"), KV, primary_key=["id"], options={"bucket": "2"})
    t.write(kv([1, 2], [1, 2]))
    sc = StreamScanner(t, {"scan.mode": "latest"})
    start = sc.initial_offset()
    t.write(kv([1, 3], [10, 3]))
    end = sc.latest_offset(start)
    first = read_between(sc, start, end)
    t.write(kv([1], [100]))
    t.compact(full=True)
    assert read_between(StreamScanner(t, {"scan.mode": "latest"}), start, end) == first
    assert sorted((r["id"], r["v"]) for r in first) == [(1, 10), (3, 3)]


def test_compact_snapshots_add_nothing_and_overwrite_is_skipped_unless_asked(tmp_path):
    t = mp.create_table(str(tmp_path / "t"), KV, primary_key=["id"], options={"write-only": "true"})
    t.write(kv([1], [1]))
    sc = StreamScanner(t, {"scan.mode": "latest"})
    start = sc.initial_offset()
    t.compact(full=True)
    t.write(kv([2], [2]), mode="overwrite")
    t.write(kv([3], [3]))
    assert [r["id"] for r in drain(sc, start)[0]] == [3]
    sc2 = StreamScanner(t, {"scan.mode": "latest", "streaming-read-overwrite": "true"})
    assert sorted(r["id"] for r in drain(sc2, start)[0]) == [2, 3]


def test_rate_limits_split_the_first_snapshot_and_later_ones(tmp_path):
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, partition_by=["dt"])
    t.write(pa.concat_tables([rows(i * 10, 10, f"d{i}") for i in range(5)]))
    sc = StreamScanner(t, {})
    start = sc.initial_offset()
    end = sc.latest_offset(start, max_rows=15)
    assert end.full and end.split_index == 1  # a limit is an upper bound: 10 rows, not 20
    for i in range(3):
        t.write(rows(100 + i, 1))
    got, pos = [], start
    steps = 0
    while True:
        end = sc.latest_offset(pos, max_rows=15, max_snapshots=1)
        if end == pos:
            break
        got += read_between(sc, pos, end)
        pos, steps = end, steps + 1
    assert sorted(r["id"] for r in got) == [*range(50), 100, 101, 102]
    assert steps == 7  # full scan one 10-row split a batch (the last with snapshot 2), then 3, 4
    assert sc.latest_offset(StreamOffset(1), up_to=2) == StreamOffset(2)


def changelog_of(t, start, **extra):
    sc = StreamScanner(t, {"scan.mode": "latest", "read.changelog": "true", **extra})
    return [(r["_row_kind"], r["id"], r["v"]) for r in drain(sc, start)[0]]


@pytest.mark.parametrize("producer", ["input", "lookup", "full-compaction"])
def test_changelog_producers_give_before_and_after_images(tmp_path, producer):
    t = mp.create_table(str(tmp_path / "t"), KV, primary_key=["id"], options={"changelog-producer": producer})
    t.write(kv([1, 2], [1, 2]))
    start = StreamOffset(t.latest_snapshot().id)
    t.write(kv([1, 3], [10, 3]))
    t.write(kv([2], [0], kinds=["-D"]))
    got = changelog_of(t, start)
    if producer == "input":
        assert got == [("+I", 1, 10), ("+I", 3, 3), ("-D", 2, 0)]
    else:
        assert got == [("-U", 1, 1), ("+U", 1, 10), ("+I", 3, 3), ("-D", 2, 2)]
    plain = StreamScanner(t, {"scan.mode": "latest"})
    assert [(r["id"], r["v"]) for r in drain(plain, start)[0]] == [(1, 10), (3, 3)]


@pytest.mark.parametrize("engine,options,writes,expected", [
    ("partial-update", {}, [kv([1], [None]), kv([1], [5])], [("-U", 1, 1), ("+U", 1, 5)]),
    ("aggregation", {"fields.v.aggregate-function": "sum"}, [kv([1], [2]), kv([1], [3])],
     [("-U", 1, 1), ("+U", 1, 3), ("-U", 1, 3), ("+U", 1, 6)]),
    ("first-row", {}, [kv([1], [7]), kv([2], [2])], [("+I", 2, 2)]),
])
def test_lookup_changelog_for_each_merge_engine(tmp_path, engine, options, writes, expected):
    t = mp.create_table(str(tmp_path / "t"), KV, primary_key=["id"], options={
        "changelog-producer": "lookup", "merge-engine": engine, **options})
    t.write(kv([1], [1]))
    start = StreamOffset(t.latest_snapshot().id)
    for w in writes:
        t.write(w)
    assert changelog_of(t, start) == expected


def test_latest_offset_without_limits_reads_no_manifest(tmp_path, monkeypatch):
    t = mp.create_table(str(tmp_path / "t"), SCHEMA)
    for i in range(3):
        t.write(rows(i * 10, 2))
    sc = StreamScanner(t, {})

    def no_reads(*args, **kwargs):
        raise AssertionError("an unlimited latest_offset must not plan or read manifests")

    monkeypatch.setattr(sc, "_changes", no_reads)
    monkeypatch.setattr(sc, "_full_plan", no_reads)
    assert sc.latest_offset(StreamOffset(3, full=True)) == StreamOffset(3)
    assert sc.latest_offset(StreamOffset(1)) == StreamOffset(3)
    assert sc.latest_offset(StreamOffset(1), up_to=2) == StreamOffset(2)
    assert sc.latest_offset(StreamOffset(3)) == StreamOffset(3)


@pytest.mark.parametrize("producer", ["input", "lookup"])
def test_a_key_written_by_two_tasks_of_one_commit_streams_in_sequence_order(tmp_path, producer):
    """Two tasks of one Spark write share a sequence start and interleave their numbers
    (minipaimon_core.metadata.sequence): a stream hands a key's rows of that commit over in the
    order the table merges them, so a mirror fed by it ends equal to the table."""
    t = mp.create_table(str(tmp_path / "t"), KV, primary_key=["id"],
                        options={"bucket": "1", "changelog-producer": producer})
    t.write(kv([1, 2], [0, 0]))
    start = StreamOffset(t.latest_snapshot().id)
    shared = start_of(t.manifests, t.latest_snapshot())
    messages = []
    for task, (ids, vs) in enumerate([([1, 1, 1], [10, 11, 12]), ([1, 2], [20, 21])]):
        w = t.new_write("job", sequence=shared.for_task(task))
        w.write(kv(ids, vs))
        messages += w.prepare_commit()
    t.new_commit("job").commit(messages, 1)
    if producer == "lookup":
        t.compact()  # its changelog comes with the compaction
    merged = dict(zip(*t.to_arrow().select(["id", "v"]).to_pydict().values()))
    mirror: dict[int, int] = {1: 0, 2: 0}
    sc = StreamScanner(t, {"read.changelog": "true"})
    for r in drain(sc, start)[0]:
        if r["_row_kind"] in ("+I", "+U"):
            mirror[r["id"]] = r["v"]
    assert mirror == merged
