"""Snapshot expiration and consumers: what goes, what stays, and that nothing reachable goes.

The central test interleaves seeded random commits, compactions, tags, a lagging consumer,
expirations and orphan cleanups on a partitioned primary-key table, and after every step
reads every retained snapshot and every tag in full against a model.
"""

from __future__ import annotations

import os
import random
import shutil
import time

import pyarrow as pa
import pytest

import minipaimon_core as mp
from minipaimon_core.io.fileio import LocalFileIO
from minipaimon_core.maintenance import TableFiles
from minipaimon_core.metadata import consumer as consumer_codec
from minipaimon_core.metadata.consumer import Consumer, ConsumerManager
from tests.helpers import SCHEMA, rows, sorted_ids

KV = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.int64()),
                pa.field("dt", pa.string(), nullable=False)])


# -- helpers shared with test_orphans / test_rollback_tags -------------------------------------


def now_ms() -> int:
    return int(time.time() * 1000)


def backdate_all(t: mp.Table, seconds: float = 3 * 86400) -> None:
    """Make every file of the table old, so orphan cleanup considers all of them."""
    old = time.time() - seconds
    for d, _, names in os.walk(t.path):
        for n in names:
            os.utime(os.path.join(d, n), (old, old))


def remove_all_orphans(t: mp.Table) -> list[str]:
    """Orphan cleanup at its most aggressive: every file is older than the safe age."""
    backdate_all(t)
    return t.remove_orphan_files().files


def disk_files(t: mp.Table) -> set[str]:
    """Data, changelog and manifest files present under the table."""
    out = set()
    for d, _, names in os.walk(t.path):
        for n in names:
            if n.endswith(".parquet") or n.startswith("manifest-"):
                out.add(os.path.join(d, n))
    return out


def reachable(t: mp.Table) -> set[str]:
    """Exact file set of every retained snapshot and every tag."""
    files = TableFiles.of(t)
    out: set[str] = set()
    for snap in [*t.snapshots(), *files.tags().values()]:
        out |= files.used_paths(snap)
    return out


def state(t: mp.Table, **scan) -> list[tuple]:
    data = t.scan(**scan).to_arrow()
    return sorted(zip(*(data.column(c).to_pylist() for c in data.column_names)))


def kv(ids, vs, dts, kinds=None) -> pa.Table:
    cols = {"id": pa.array(ids, pa.int64()), "v": pa.array(vs, pa.int64()), "dt": pa.array(dts, pa.string())}
    if kinds is not None:
        cols["_row_kind"] = pa.array(kinds, pa.string())
    return pa.table(cols)


def append_table(path, n_writes: int, **options: str) -> mp.Table:
    t = mp.create_table(str(path), SCHEMA, options=options or None)
    for k in range(n_writes):
        t.write(rows(k * 3, 3))
    return t


# -- retention -------------------------------------------------------------------------------------


def test_retain_max_expires_oldest_and_deletes_exactly_the_unused_files(tmp_path):
    t = append_table(tmp_path / "t", 6, **{"compaction.min.file-num": "3"})
    t.compact(full=True)  # snapshot 7 replaces every data file
    t.write(rows(100, 2))  # snapshot 8
    result = t.expire_snapshots(retain_max=2)
    assert result.snapshots == [1, 2, 3, 4, 5, 6]
    assert [s.id for s in t.snapshots()] == [7, 8]
    assert len(result.data_files) == 6  # the six files compaction replaced
    assert all(not os.path.exists(p) for p in result.files)
    assert disk_files(t) == reachable(t)  # nothing reachable went, nothing unreachable stayed
    assert t.io.read_bytes(t.layout.earliest_hint) == b"7"
    assert sorted_ids(t.to_arrow()) == [*range(18), 100, 101]
    assert sorted_ids(t.scan(snapshot_id=7).to_arrow()) == list(range(18))


def test_reading_an_expired_snapshot_is_a_typed_error(tmp_path):
    t = append_table(tmp_path / "t", 4)
    t.expire_snapshots(retain_max=1)
    with pytest.raises(mp.SnapshotExpiredError, match="snapshot 2 .* has expired"):
        t.scan(snapshot_id=2)
    with pytest.raises(mp.SnapshotNotFoundError):
        t.scan(snapshot_id=9)


def test_time_retention_and_retain_min(tmp_path):
    t = append_table(tmp_path / "t", 5)
    times = [s.timeMillis for s in t.snapshots()]
    assert t.expire_snapshots().snapshots == []  # defaults: 10 retained, 1 hour
    # everything is older than "now + 1 s", but retain_min keeps the newest three
    assert t.expire_snapshots(retain_min=3, older_than_ms=now_ms() + 1000).snapshots == [1, 2]
    # only snapshots committed before the given time go
    assert t.expire_snapshots(retain_min=1, older_than_ms=times[2]).snapshots == []
    assert t.expire_snapshots(retain_min=1, older_than_ms=times[3]).snapshots == [3]
    assert [s.id for s in t.snapshots()] == [4, 5]


def test_bad_retention_arguments(tmp_path):
    t = append_table(tmp_path / "t", 1)
    with pytest.raises(mp.InvalidArgumentError, match="retain_min"):
        t.expire_snapshots(retain_min=0)
    with pytest.raises(mp.InvalidArgumentError, match="retain_max"):
        t.expire_snapshots(retain_max=2, retain_min=3)


def test_maybe_expire_follows_the_options_and_write_only(tmp_path):
    t = append_table(tmp_path / "t", 4, **{"snapshot.num-retained.max": "2", "snapshot.num-retained.min": "1"})
    assert [s.id for s in t.snapshots()] == [3, 4]  # Table.write expired after each commit
    assert t.maybe_expire().snapshots == []
    w = append_table(tmp_path / "w", 4, **{"snapshot.num-retained.max": "2",
                                            "snapshot.num-retained.min": "1", "write-only": "true"})
    assert w.maybe_expire() is None
    assert [s.id for s in w.snapshots()] == [1, 2, 3, 4]
    assert len(w.snapshots()) == 4


# -- tags and consumers ---------------------------------------------------------------------------------


def test_a_tag_pins_its_files_after_its_snapshot_expired(tmp_path):
    t = append_table(tmp_path / "t", 4, **{"compaction.min.file-num": "2"})
    t.create_tag("v1", 2)
    t.compact(full=True)
    t.write(rows(50, 1))
    t.expire_snapshots(retain_max=1)
    assert [s.id for s in t.snapshots()] == [6]
    assert sorted_ids(t.scan(tag="v1").to_arrow()) == list(range(6))
    assert disk_files(t) == reachable(t)


def test_a_live_consumer_keeps_the_snapshots_it_still_reads(tmp_path):
    t = append_table(tmp_path / "t", 6)
    ConsumerManager(t.io, t.layout).write("stream-1", 3)
    assert t.expire_snapshots(retain_max=1).snapshots == [1, 2]
    assert t.consumers() == {"stream-1": 3}
    ConsumerManager(t.io, t.layout).write("stream-1", 5)
    assert t.expire_snapshots(retain_max=1).snapshots == [3, 4]
    assert sorted_ids(t.scan(snapshot_id=5).to_arrow()) == list(range(15))


def test_an_idle_consumer_expires_by_consumer_expiration_time(tmp_path):
    t = append_table(tmp_path / "t", 4, **{"consumer.expiration-time": "1 h"})
    manager = ConsumerManager(t.io, t.layout)
    manager.write("old", 1)
    manager.write("fresh", 3)
    two_hours_ago = time.time() - 7200
    os.utime(t.layout.consumer_path("old"), (two_hours_ago, two_hours_ago))
    result = t.expire_snapshots(retain_max=1)
    assert result.consumers == ["old"]
    assert result.snapshots == [1, 2]  # "fresh" still protects 3 and 4
    assert t.consumers() == {"fresh": 3}


def test_consumer_file_round_trip_and_corruption(tmp_path):
    data = consumer_codec.encode(Consumer(7))
    assert consumer_codec.encode(consumer_codec.decode(data, "x")) == data
    assert b'"nextSnapshot":7' in data
    t = append_table(tmp_path / "t", 1)
    m = ConsumerManager(t.io, t.layout)
    assert m.read("a") is None and m.ids() == [] and m.min_next_snapshot() is None
    m.write("a", 2)
    m.write("b", 5)
    m.write("a", 4)
    assert m.consumers() == {"a": 4, "b": 5} and m.min_next_snapshot() == 4
    assert m.delete("b") and not m.delete("b")
    with open(t.layout.consumer_path("a"), "r+b") as f:
        f.seek(3)
        f.write(b"9")
    with pytest.raises(mp.CorruptMetadataError):
        m.read("a")
    with pytest.raises(mp.InvalidArgumentError):
        m.write("../escape", 1)
    with pytest.raises(mp.InvalidArgumentError):
        m.write("a", 0)


# -- crash during expiration ----------------------------------------------------------------------------


class InjectedFault(OSError):
    pass


class FailingDeleteIO(LocalFileIO):
    """Fails the k-th delete (1-based)."""

    def __init__(self, fail_at: int) -> None:
        super().__init__(fsync=False)
        self.fail_at = fail_at
        self.deletes = 0

    def delete(self, path: str) -> bool:
        self.deletes += 1
        if self.deletes == self.fail_at:
            raise InjectedFault(f"injected failure at delete {self.deletes}")
        return super().delete(path)


def test_a_crash_at_any_delete_of_an_expiration_leaves_a_readable_table(tmp_path):
    base = append_table(tmp_path / "base", 5, **{"compaction.min.file-num": "2"})
    base.compact(full=True)
    base.write(rows(90, 2))
    expected = {s.id: sorted_ids(base.scan(snapshot_id=s.id).to_arrow()) for s in base.snapshots()}
    k = 1
    while True:
        path = str(tmp_path / f"t{k}")
        shutil.copytree(base.path, path)
        try:
            mp.open_table(path, io=FailingDeleteIO(k)).expire_snapshots(retain_max=2)
            finished = True
        except InjectedFault:
            finished = False
        t = mp.open_table(path)
        for s in t.snapshots():  # whatever is retained reads in full
            assert sorted_ids(t.scan(snapshot_id=s.id).to_arrow()) == expected[s.id], (k, s.id)
        assert t.snapshots()[-1].id == 7
        t.expire_snapshots(retain_max=2)
        remove_all_orphans(t)
        assert disk_files(t) == reachable(t), k  # a crash leaks at most orphans
        if finished:
            break
        k += 1
    assert k > 10


# -- the interleaving model test ------------------------------------------------------------------------


def test_interleaved_maintenance_never_deletes_a_reachable_file(tmp_path):
    rnd = random.Random(20240611)
    t = mp.create_table(str(tmp_path / "t"), KV, primary_key=["id", "dt"], partition_by=["dt"],
                        options={"bucket": "1", "num-sorted-run.compaction-trigger": "3",
                                 "snapshot.num-retained.min": "1", "snapshot.num-retained.max": "5"})
    model: dict[tuple[int, str], int] = {}
    by_snapshot: dict[int, list[tuple]] = {}
    tags: dict[str, int] = {}
    consumers = ConsumerManager(t.io, t.layout)
    consumer_next: int | None = None
    expired_any = orphans_removed = 0

    def record_new_snapshots(before: int) -> None:
        latest = t.latest_snapshot()
        expected = sorted((i, v, dt) for (i, dt), v in model.items())
        for sid in range(before + 1, (latest.id if latest else 0) + 1):
            by_snapshot[sid] = expected

    def check(step: int, op: str) -> None:
        for s in t.snapshots():
            assert state(t, snapshot_id=s.id) == by_snapshot[s.id], (step, op, s.id)
        for name, sid in tags.items():
            assert state(t, tag=name) == by_snapshot[sid], (step, op, name)
        if consumer_next is not None and consumer_next in by_snapshot:
            assert t.snapshot(consumer_next).id == consumer_next  # never expired under it
        assert disk_files(t) >= reachable(t), (step, op)

    for step in range(50):
        latest = t.latest_snapshot()
        before = latest.id if latest else 0
        r = rnd.random()
        if r < 0.45 or latest is None:
            op = "write"
            n = rnd.randint(1, 6)
            ids = [rnd.randint(0, 12) for _ in range(n)]
            dts = [rnd.choice(["d1", "d2"]) for _ in range(n)]
            vs = [rnd.randint(0, 1000) for _ in range(n)]
            kinds = [rnd.choice(["+I", "+I", "+I", "-D"]) for _ in range(n)]
            t.write(kv(ids, vs, dts, kinds))
            for i, v, dt, kind in zip(ids, vs, dts, kinds):
                if kind == "-D":
                    model.pop((i, dt), None)
                else:
                    model[(i, dt)] = v
        elif r < 0.52:
            op = "abandoned write"  # files that no commit will ever reference
            w = t.new_write("crashed")
            w.write(kv([1, 2], [0, 0], ["d1", "d2"]))
            w.prepare_commit()
        elif r < 0.60:
            op = "compact"
            t.compact(full=rnd.random() < 0.5)
        elif r < 0.68:
            op = "tag"
            sid = rnd.choice(t.snapshots()).id
            name = f"tag{step}"
            t.create_tag(name, sid)
            tags[name] = sid
            if len(tags) > 3:
                oldest = min(tags, key=lambda n: int(n[3:]))
                t.delete_tag(oldest)
                del tags[oldest]
        elif r < 0.72 and tags:
            op = "delete tag"
            name = rnd.choice(sorted(tags))
            t.delete_tag(name)
            del tags[name]
        elif r < 0.80:
            op = "consumer"  # a lagging streaming reader
            consumer_next = rnd.choice(t.snapshots()[-4:]).id
            consumers.write("lagging", consumer_next)
        elif r < 0.92:
            op = "expire"
            expired_any += len(t.expire_snapshots(retain_max=rnd.randint(1, 3)).snapshots)
        else:
            op = "orphans"
            orphans_removed += len(remove_all_orphans(t))
        record_new_snapshots(before)
        check(step, op)
    expired_any = len(by_snapshot) - len(t.snapshots())  # by expire_snapshots and by writes
    assert expired_any > 10 and orphans_removed > 0 and tags
