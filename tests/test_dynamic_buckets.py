"""Dynamic-bucket primary-key tables (``bucket`` = -1, Paimon's default), keys within a
partition (``HASH_DYNAMIC``): the HASH index, bucket assignment, overwrite, maintenance,
concurrent writers. Cross-partition tables: tests/test_cross_partition.py."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import minipaimon_core as mp
from minipaimon_core.dynamic.hash_index import HashIndexIO
from minipaimon_core.errors import ConflictReason
from minipaimon_core.metadata.sequence import start_of
from minipaimon_core.schema.bucket import key_hashes
from minipaimon_core.schema.schema import build_schema
from tests.helpers import check_hash_index, key_places

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()),
                    pa.field("dt", pa.string(), nullable=False)])
TABLE_SCHEMA = build_schema(SCHEMA, ["id", "dt"], ["dt"], {})


def rows(ids: list[int], v: str = "x", dt: str = "a") -> pa.Table:
    return pa.table({"id": ids, "v": [f"{v}{i}" for i in ids], "dt": [dt] * len(ids)}, schema=SCHEMA)


def create(path: Path, **options: str) -> mp.Table:
    return mp.create_table(str(path), SCHEMA, primary_key=["id", "dt"], partition_by=["dt"],
                           options=options or None)


def index_of(t: mp.Table, snap: mp.Snapshot | None = None) -> dict[tuple[tuple, int], list[int]]:
    """(partition, bucket) -> the hashes the HASH index file holds (of ``snap``, default the
    latest snapshot)."""
    ctx = t.context()
    snap = snap or ctx.snapshots.latest()
    index = HashIndexIO(ctx.io, ctx.layout, ctx.vectors)
    return {k: sorted(index.read(e).tolist()) for k, e in index.entries(snap).items()}


def buckets_of(t: mp.Table) -> dict[tuple[str, int], int]:
    """(dt, id) -> the bucket whose files hold the key (each key in one bucket)."""
    return {(key[1], key[0]): where[1] for key, where in key_places(t).items()}


def hash_of(ids: list[int]) -> list[int]:
    """Paimon's hash of each key (the trimmed primary key: ``id``)."""
    return key_hashes(pa.table({"id": pa.array(ids, pa.int64())}), TABLE_SCHEMA).tolist()


def test_a_primary_key_table_without_a_bucket_option_has_dynamic_buckets(tmp_path):
    t = create(tmp_path / "t", **{"dynamic-bucket.target-row-num": "3"})
    assert t.options()["bucket"] == "-1"
    t.write(rows([1, 2, 3, 4, 5, 6, 7]))
    assert sorted(Counter(buckets_of(t).values()).items()) == [(0, 3), (1, 3), (2, 1)]
    # existing keys stay in their buckets; new ones fill bucket 2, then open bucket 3
    before = buckets_of(t)
    t.write(rows([7, 1, 8, 9, 10], "y"))
    after = buckets_of(t)
    assert all(after[k] == b for k, b in before.items())
    assert [after[("a", i)] for i in (8, 9, 10)] == [2, 2, 3]
    assert t.to_arrow().sort_by("id").column("v").to_pylist() == \
        ["y1", "x2", "x3", "x4", "x5", "x6", "y7", "y8", "y9", "y10"]
    index = index_of(t)
    assert {k: len(v) for k, v in index.items()} == {(("a",), 0): 3, (("a",), 1): 3, (("a",), 2): 3,
                                                    (("a",), 3): 1}
    check_hash_index(t)


def test_partitions_have_their_own_buckets_and_deletes_keep_their_hash(tmp_path):
    t = create(tmp_path / "t", **{"dynamic-bucket.target-row-num": "2"})
    t.write(pa.concat_tables([rows([1, 2, 3]), rows([1, 2], dt="b")]))
    t.write(rows([2], dt="a").append_column("_row_kind", pa.array(["-D"])))
    assert sorted(buckets_of(t)) == [("a", 1), ("a", 3), ("b", 1), ("b", 2)]
    index = index_of(t)
    assert sorted(index) == [(("a",), 0), (("a",), 1), (("b",), 0)]
    assert hash_of([2])[0] in index[(("a",), 0)]  # as Java's index: a delete keeps the hash
    t.write(rows([2], "z"))  # so the key comes back to its bucket
    assert buckets_of(t)[("a", 2)] == 0
    check_hash_index(t)


def test_initial_buckets_start_a_partition_with_that_many_buckets(tmp_path):
    t = create(tmp_path / "t", **{"dynamic-bucket.initial-buckets": "3"})
    t.write(rows(list(range(60))))
    per_bucket = Counter(buckets_of(t).values())
    assert sorted(per_bucket) == [0, 1, 2]
    # a key's lane (bucket, as no bucket is full) is Java's Math.abs(hash % 3)
    for (_, key_id), bucket in buckets_of(t).items():
        assert bucket == abs(int(np.fmod(hash_of([key_id])[0], 3)))


def test_compaction_deletion_vectors_and_changelog_keep_the_index(tmp_path):
    t = create(tmp_path / "t", **{"dynamic-bucket.target-row-num": "4", "deletion-vectors.enabled": "true",
                                  "changelog-producer": "lookup"})
    for i in range(5):
        t.write(rows(list(range(i * 3, i * 3 + 6)), f"w{i}"))
    types = Counter(e.indexType for e in t.context().vectors.index_entries(t.latest_snapshot()))
    assert types["HASH"] == 5 and types["DELETION_VECTORS"] >= 1  # one index manifest holds both
    check_hash_index(t)
    t.compact(full=True)
    got = {r["id"]: r["v"] for r in t.to_arrow().to_pylist()}
    assert got == {i: f"w{min(i // 3, 4)}{i}" for i in range(18)}
    assert len(index_of(t)) == 5
    check_hash_index(t)


def test_an_overwrite_replaces_the_index_of_what_it_replaces(tmp_path):
    t = create(tmp_path / "t", **{"dynamic-bucket.target-row-num": "2"})
    t.write(pa.concat_tables([rows([1, 2, 3, 4, 5]), rows([1, 2, 3], dt="b")]))
    t.write(rows([9, 8]), mode="overwrite")
    assert sorted(index_of(t)) == [(("a",), 0)]
    assert index_of(t)[(("a",), 0)] == sorted(hash_of([9, 8]))
    assert buckets_of(t) == {("a", 9): 0, ("a", 8): 0}
    d = create(tmp_path / "d", **{"dynamic-bucket.target-row-num": "2", "dynamic-partition-overwrite": "true"})
    d.write(pa.concat_tables([rows([1, 2, 3, 4, 5]), rows([1, 2, 3], dt="b")]))
    kept = {k: v for k, v in index_of(d).items() if k[0] == ("a",)}
    d.write(rows([7], dt="b"), mode="overwrite")
    assert {k: v for k, v in index_of(d).items() if k[0] == ("a",)} == kept
    assert [v for k, v in index_of(d).items() if k[0] == ("b",)] == [hash_of([7])]
    check_hash_index(d)
    d.write(pa.table({"id": pa.array([], pa.int64()), "v": pa.array([], pa.string()),
                      "dt": pa.array([], pa.string())}, schema=SCHEMA), mode="overwrite")


def test_expiration_orphans_and_rollback_keep_the_index_files_they_need(tmp_path):
    t = create(tmp_path / "t", **{"dynamic-bucket.target-row-num": "2"})
    for i in range(4):
        t.write(rows([i * 2, i * 2 + 1, 100], f"w{i}"))
    first = index_of(t, t.snapshot(1))
    t.create_tag("v1", 1)
    t.expire_snapshots(retain_max=1, retain_min=1)
    removed = t.remove_orphan_files(older_than_ms=int(time.time() * 1000))
    assert not [f for f in removed.files if "/index/" in f]
    assert index_of(t) and index_of(t, t.tag_snapshot("v1")) == first  # the tag keeps its index
    t.rollback_to(tag="v1")
    assert index_of(t) == first
    t.write(rows([6], "again"))  # key 6 was in bucket 3 before the rollback: gone with it
    assert buckets_of(t)[("a", 6)] == 1 and len(buckets_of(t)) == 4
    check_hash_index(t)
    left = {p.name for p in (tmp_path / "t" / "index").iterdir()}
    used = {e.fileName for e in t.context().vectors.index_entries(t.latest_snapshot())} | \
        {e.fileName for e in t.context().vectors.index_entries(t.tag_snapshot("v1"))}
    assert used <= left


def test_two_writers_that_put_a_new_key_in_two_buckets_cannot_both_commit(tmp_path):
    """Stale handles: both writers start on one snapshot; each assigns key 10 on its own."""
    t = create(tmp_path / "t", **{"dynamic-bucket.target-row-num": "1"})
    first, second = t.new_write("one"), t.new_write("two")
    first.write(rows([10]))  # bucket 0
    second.write(rows([11, 10], "late"))  # 11 -> bucket 0, 10 -> bucket 1
    m1, m2 = first.prepare_commit(), second.prepare_commit()
    t.new_commit("one").commit(m1, 1)
    snapshot = t.latest_snapshot().id
    with pytest.raises(mp.CommitConflictError) as e:
        t.new_commit("two").commit(m2, 1)
    assert e.value.reason == ConflictReason.BUCKET_ASSIGNMENT and "bucket 0" in str(e.value)
    t.new_commit("two").abort(m2)
    assert t.latest_snapshot().id == snapshot and buckets_of(t) == {("a", 10): 0}
    # a writer that starts now sees the key where the first put it
    t.write(rows([11, 10], "late"))
    assert buckets_of(t) == {("a", 10): 0, ("a", 11): 1}
    check_hash_index(t)


def test_writers_that_agree_commit_one_after_the_other(tmp_path):
    t = create(tmp_path / "t")
    t.write(rows([1, 2]))
    a, b = t.new_write("a"), t.new_write("b")
    a.write(rows([1, 3], "a"))
    b.write(rows([2, 4], "b"))
    ma, mb = a.prepare_commit(), b.prepare_commit()
    t.new_commit("a").commit(ma, 1)
    t.new_commit("b").commit(mb, 1)
    assert {r["id"]: r["v"] for r in t.to_arrow().to_pylist()} == {1: "a1", 2: "b2", 3: "a3", 4: "b4"}
    check_hash_index(t)


def test_writers_of_one_commit_that_disagree_are_reconciled(tmp_path):
    """Spark tasks of one job: one start, each assigns on its own; the commit moves a key's
    rows to one bucket (the lowest) and leaves no file behind."""
    t = create(tmp_path / "t", **{"dynamic-bucket.target-row-num": "2"})
    t.write(rows([1]))
    start = start_of(t.context().manifests, t.latest_snapshot())
    tasks = [t.new_write("job", sequence=start.for_task(i)) for i in range(2)]
    tasks[0].write(rows([50, 7], "t0"))  # 50 -> bucket 0 (full now), 7 -> bucket 1
    tasks[1].write(rows([7, 60], "t1"))  # 7 -> bucket 0, 60 -> bucket 1
    messages = [m for w in tasks for m in w.prepare_commit()]
    written = {f.fileName for m in messages for f in m.newFiles}
    t.new_commit("job").commit(messages, 1)
    where = buckets_of(t)
    assert where[("a", 7)] == 0 and len(where) == 4
    # task t numbers its row i base + i * 4096 + t: task 0's row of key 7 (its second) is later
    assert {r["id"]: r["v"] for r in t.to_arrow().to_pylist()}[7] == "t07"
    check_hash_index(t)
    on_disk = {p.name for p in (tmp_path / "t" / "dt=a").rglob("data-*")}
    live = {f.fileName for s in t.scan().plan() for f in s.files}
    assert on_disk == live and not written <= live  # the rewritten originals are gone
    snapshot = t.latest_snapshot().id  # the driver retries its commit: nothing happens
    assert t.new_commit("job").commit(messages, 1) is None and t.latest_snapshot().id == snapshot
    assert {p.name for p in (tmp_path / "t" / "dt=a").rglob("data-*")} == live


@pytest.mark.parametrize(("writers", "reconciled"), [
    (("w", "w"), False),  # one writer placed both: it never puts a key in two buckets
    (("w", "v"), True),
    (("", "w"), True),  # a message that names no writer is checked against every other
    (("", ""), True),
])
def test_only_messages_of_several_writers_are_reconciled(writers, reconciled):
    """What decides whether the committer looks for a key two messages placed in two
    buckets: the writers that placed them (CommitMessage.writerId)."""
    from minipaimon_core.dynamic.reconcile import moves
    from minipaimon_core.metadata.commit_message import CommitMessage, placed_bytes
    from minipaimon_core.schema.bucket import HASH_DYNAMIC

    def message(bucket: int, hashes: list[int], writer: str) -> CommitMessage:
        return CommitMessage(["a"], "dt=a", bucket, -1, keyHashes=placed_bytes([np.array(hashes, np.int32)]),
                             writerId=writer)

    messages = [message(0, [5, 9], writers[0]), message(1, [7, 9], writers[1])]
    got = {i: {b: h.tolist() for b, h in to.items()} for i, to in moves(messages, HASH_DYNAMIC).items()}
    assert got == ({1: {0: [9]}} if reconciled else {})  # key 9 to the lower bucket


def test_a_reconciled_commit_that_fails_leaves_only_the_writers_files_to_abort(tmp_path):
    t = create(tmp_path / "t", **{"dynamic-bucket.target-row-num": "2"})
    t.write(rows([1]))
    start = start_of(t.context().manifests, t.latest_snapshot())
    other = t.new_write("other")
    other.write(rows([50, 7], "o"))  # 50 -> bucket 0 (full now), 7 -> bucket 1
    tasks = [t.new_write("job", sequence=start.for_task(i)) for i in range(2)]
    tasks[0].write(rows([50, 7], "t0"))  # as the other writer
    tasks[1].write(rows([7], "t1"))  # 7 -> bucket 0: reconciled to bucket 0, but it is in 1 now
    t.new_commit("other").commit(other.prepare_commit(), 1)
    messages = [m for w in tasks for m in w.prepare_commit()]
    before = {p.name for p in (tmp_path / "t").rglob("data-*")}
    with pytest.raises(mp.CommitConflictError) as e:
        t.new_commit("job").commit(messages, 1)
    assert e.value.reason == ConflictReason.BUCKET_ASSIGNMENT
    assert {p.name for p in (tmp_path / "t").rglob("data-*")} == before  # rewrites deleted
    t.new_commit("job").abort(messages)
    live = {f.fileName for s in t.scan().plan() for f in s.files}
    assert {p.name for p in (tmp_path / "t").rglob("data-*")} == live
    assert {r["id"]: r["v"] for r in t.to_arrow().to_pylist()} == {1: "x1", 50: "o50", 7: "o7"}


def test_a_key_with_no_bucket_left_is_refused_and_nothing_is_written(tmp_path):
    t = create(tmp_path / "t", **{"dynamic-bucket.target-row-num": "1"})
    with pytest.raises(mp.InvalidArgumentError, match="32767 buckets.*target-row-num"):
        t.write(rows(list(range(32768))))
    assert t.latest_snapshot() is None
    assert not list((tmp_path / "t").rglob("data-*")) and not (tmp_path / "t" / "index").exists()


def test_row_level_changes_keep_each_key_in_its_bucket(tmp_path):
    t = create(tmp_path / "t", **{"dynamic-bucket.target-row-num": "2"})
    t.write(rows([1, 2, 3, 4, 5]))
    before = buckets_of(t)
    t.update(filter=[("id", ">=", 3)], set={"v": "u"})
    t.delete(filter=[("id", "=", 1)])
    after = buckets_of(t)
    assert after == {k: b for k, b in before.items() if k != ("a", 1)}
    assert sorted((r["id"], r["v"]) for r in t.to_arrow().to_pylist()) == \
        [(2, "x2"), (3, "u"), (4, "u"), (5, "u")]
    check_hash_index(t)


def test_a_write_whose_later_partition_needs_too_many_buckets_writes_nothing(tmp_path):
    """Every partition's keys are assigned before the first bucket's rows are copied and
    buffered: the partition that runs out of bucket ids fails the write before a flush of
    the partitions ahead of it (a buffer of 1 KB flushes each bucket as it comes)."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False)])
    path = tmp_path / "t"
    t = mp.create_table(str(path), schema, primary_key=["id", "dt"], partition_by=["dt"],
                        options={"bucket": "-1", "dynamic-bucket.target-row-num": "1", "write-buffer-size": "1 kb"})
    ids = np.arange(40_000)
    rows = pa.table({"id": ids, "dt": np.where(ids < 50, "a", "b")}, schema=schema)
    with pytest.raises(mp.InvalidArgumentError, match="needs more than 32767 buckets in partition"):
        t.write(rows)
    assert t.snapshots() == []
    assert not [p for p in path.rglob("*.parquet")]
