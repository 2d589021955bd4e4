"""Deletion vectors (``deletion-vectors.enabled``): reads without merging, kept right by
every commit, known to expiration, orphan cleanup, rollback, time travel, streams and diff.

The model-based test with vectors on is in tests/test_pk_model.py (the ``dv-*`` configs)."""

from __future__ import annotations

import dataclasses
import os
import random
import subprocess
import sys
import textwrap
import time

import msgspec
import pyarrow as pa
import pytest

import minipaimon_core as mp
from minipaimon_core.errors import (
    CorruptMetadataError,
    InvalidArgumentError,
    UnsupportedOptionError,
)
from minipaimon_core.maintenance import compaction
from minipaimon_core.read.table_scan import TableScan
from minipaimon_core.stream.stream import StreamOffset, StreamScanner
from tests.conftest import Storage

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    ("v", pa.int64())])
DV = {"deletion-vectors.enabled": "true"}


def make(path: str, **options: str) -> mp.Table:
    return mp.create_table(path, SCHEMA, primary_key=["id", "dt"], partition_by=["dt"],
                           options={"bucket": "2", **DV, **options})


def batch(ids: list[int], v: int, dt: str = "a", kinds: list[str] | None = None) -> pa.Table:
    cols = {"id": ids, "dt": [dt] * len(ids), "v": [v] * len(ids)}
    if kinds is not None:
        cols["_row_kind"] = kinds
    return pa.table(cols)


def state(t: mp.Table, **scan) -> dict[tuple[int, str], int]:
    rows = t.scan(**scan).to_arrow().to_pylist()
    out = {(r["id"], r["dt"]): r["v"] for r in rows}
    assert len(out) == len(rows), "a key was read twice"
    return out


def merged_state(t: mp.Table) -> dict[tuple[int, str], int]:
    """The table read by merging each bucket's files, ignoring the vectors."""
    ctx = t.context()
    options = {k: v for k, v in ctx.schema.options.items() if k != "deletion-vectors.enabled"}
    plain = dataclasses.replace(ctx, schema=msgspec.structs.replace(ctx.schema, options=options))
    rows = TableScan(plain, None, None, ctx.snapshots.latest(), None).to_arrow().to_pylist()
    return {(r["id"], r["dt"]): r["v"] for r in rows}


# -- options -------------------------------------------------------------------------------


@pytest.mark.parametrize("options, primary_key", [
    ({**DV, "merge-engine": "partial-update"}, ["id", "dt"]),
    ({**DV, "merge-engine": "aggregation"}, ["id", "dt"]),
])
def test_refused_where_vectors_cannot_describe_the_table(tmp_path, options, primary_key):
    with pytest.raises(UnsupportedOptionError, match="deletion-vectors.enabled"):
        mp.create_table(str(tmp_path / "t"), SCHEMA, primary_key=primary_key, options=options)
    assert not (tmp_path / "t").exists() or not any((tmp_path / "t").rglob("schema-*"))


def test_the_option_is_fixed_at_creation(tmp_path):
    for start, change in (("true", "false"), ("false", "true")):
        t = make(str(tmp_path / start), **{"deletion-vectors.enabled": start})
        t.write(batch([1, 2], 1))
        with pytest.raises(InvalidArgumentError, match="deletion-vectors.enabled"):
            t.set_options({"deletion-vectors.enabled": change})
        assert t.refresh().options()["deletion-vectors.enabled"] == start


# -- reads -------------------------------------------------------------------------------------


def test_reads_take_files_alone_and_skip_files_by_value_stats(tmp_path):
    t = make(str(tmp_path / "t"), bucket="1")
    t.write(batch(list(range(100)), 1))
    t.write(batch(list(range(0, 100, 2)), 500))  # updates every other key: old rows marked
    t = t.refresh()
    assert t.latest_snapshot().indexManifest is not None
    splits = t.scan().plan()
    assert all(s.raw_convertible for s in splits)
    # the old file, which has a vector, and the new one, read as stored, are cut apart
    assert sorted((len(s.files), s.deletion_index is not None, s.reads_as_stored) for s in splits) \
        == [(1, False, True), (1, True, False)]
    assert state(t) == {(i, "a"): 500 if i % 2 == 0 else 1 for i in range(100)}
    # a non-key filter prunes the old file by its stats (no merge could need it)
    hot = t.scan(filter=[("v", ">", 100)])
    assert sum(len(s.files) for s in hot.plan()) == 1
    assert sorted(r["id"] for r in hot.to_arrow().to_pylist()) == list(range(0, 100, 2))
    # every write is visible at once (no compaction needed; see docs/format.md)
    assert state(t) == merged_state(t)


def test_deletes_and_updates_and_no_first_row(tmp_path):
    t = make(str(tmp_path / "t"))
    t.write(batch([1, 2, 3, 4], 1))
    t.write(batch([2, 3], 0, kinds=["-D", "-U"]))
    t.write(batch([3, 5], 7))
    assert state(t) == {(1, "a"): 1, (4, "a"): 1, (3, "a"): 7, (5, "a"): 7} == merged_state(t)
    with pytest.raises(mp.UnsupportedOptionError, match="first-row"):  # as Paimon refuses it
        mp.create_table(str(tmp_path / "f"), SCHEMA, primary_key=["id", "dt"],
                        options={"bucket": "1", "merge-engine": "first-row", **DV})
    assert not (tmp_path / "f").exists()


# -- commits recompute the vectors against the snapshot they land on ---------------------------


def test_concurrent_writers_and_compaction_never_leave_two_live_rows(tmp_path):
    t = make(str(tmp_path / "t"), bucket="1", **{"write-only": "true"})
    for v in range(3):
        t.write(batch(list(range(20)), v))
    # a compaction planned now, committed after two writers that both based on this snapshot
    ctx = t.context()
    compaction_messages = [compaction.compact_bucket(ctx, unit, "full")
                           for unit in compaction.bucket_units(ctx)]
    w1, w2 = t.new_write("w1"), t.new_write("w2")
    w1.write(batch([1, 2, 3], 100))
    w2.write(batch([2, 3, 4], 200))
    m1, m2 = w1.prepare_commit(), w2.prepare_commit()
    t.new_commit("w1").commit(m1, 1)
    t.new_commit("w2").commit(m2, 1)
    # three runs in levels 1-3: w1 enters level 4, w2 finds no free level above the bottom
    # (5, the compactions') and goes below it (lsm/placement.py): visible at once
    assert sorted(f.level for s in t.refresh().scan().plan() for f in s.files) == [1, 2, 3, 4, 6]
    assert compaction.commit_compaction(ctx, [m for m in compaction_messages if m], True)
    want = {(i, "a"): 2 for i in range(20)} | {(1, "a"): 100, (2, "a"): 200, (3, "a"): 200, (4, "a"): 200}
    t = t.refresh()
    assert state(t) == want == merged_state(t)


def test_vectors_are_computed_against_the_snapshot_the_commit_lands_on(tmp_path):
    """Two writers prepared on the same base: the second commits on the first's snapshot,
    so its vectors must mark the first writer's row too (not only the base's)."""
    t = make(str(tmp_path / "t"), bucket="1")
    t.write(batch([1, 2], 0))
    w1, w2 = t.new_write("a"), t.new_write("b")
    w1.write(batch([1], 1))
    w2.write(batch([1], 2))
    m2 = w2.prepare_commit()
    t.new_commit("a").commit(w1.prepare_commit(), 1)
    t.new_commit("b").commit(m2, 1)
    assert state(t.refresh()) == {(1, "a"): 2, (2, "a"): 0}


def test_overwrite_drops_the_vectors_of_replaced_files(tmp_path):
    t = make(str(tmp_path / "t"), **{"dynamic-partition-overwrite": "true"})
    t.write(pa.concat_tables([batch([1, 2], 0, "a"), batch([1, 2], 0, "b")]))
    t.write(pa.concat_tables([batch([1], 1, "a"), batch([2], 1, "b")]))
    t.write(batch([3], 5, "a"), mode="overwrite")
    t = t.refresh()
    assert state(t) == {(3, "a"): 5, (1, "b"): 0, (2, "b"): 1} == merged_state(t)
    index = t.context().vectors.entries(t.latest_snapshot())
    assert [e.partition for e in index] == [("b",)]


# -- maintenance, time travel, streams, diff ---------------------------------------------------


def test_expire_rollback_and_orphans_know_the_index_files(storage: Storage):
    t = make(storage.path("t"), bucket="1")
    history = {}
    for v in range(6):
        t.write(batch([v % 3, 10 + v], v))
        history[t.latest_snapshot().id] = state(t)
    for sid, want in history.items():
        assert state(t, snapshot_id=sid) == want
    t.create_tag("t3", 3)
    before = set(storage.list_all(storage.path("t/index")))
    result = t.expire_snapshots(retain_max=2, retain_min=1)
    assert result.index_files  # index manifests and index files of snapshots 2..4 (not 3's)
    left = set(storage.list_all(storage.path("t/index")))
    assert left < before
    assert state(t, snapshot_id=6) == history[6]
    assert state(t, tag="t3") == history[3]
    assert t.remove_orphan_files(older_than_ms=int(time.time() * 1000), dry_run=True).files == []
    t.rollback_to(tag="t3")
    t = t.refresh()
    assert state(t) == history[3]
    t.write(batch([0, 1, 2], 99))
    assert state(t) == {**history[3], (0, "a"): 99, (1, "a"): 99, (2, "a"): 99}


def test_orphan_cleanup_removes_unreferenced_index_files(tmp_path):
    t = make(str(tmp_path / "t"), bucket="1")
    t.write(batch([1, 2], 0))
    t.write(batch([1], 1))
    stray = tmp_path / "t" / "index" / "index-stray"
    stray.write_bytes(b"leftover of a crashed commit")
    for f in (tmp_path / "t").rglob("*"):  # everything is two days old
        if f.is_file():
            os.utime(f, (time.time() - 2 * 86400,) * 2)
    result = t.remove_orphan_files()
    assert result.files == [str(stray)]
    assert state(t) == {(1, "a"): 1, (2, "a"): 0}


def test_a_damaged_index_file_fails_the_read(tmp_path):
    t = make(str(tmp_path / "t"), bucket="1")
    t.write(batch([1, 2], 0))
    t.write(batch([1], 1))
    (index,) = (tmp_path / "t" / "index").iterdir()
    index.write_bytes(index.read_bytes()[:-3])
    with pytest.raises(CorruptMetadataError, match="index-"):
        t.refresh().to_arrow()


def _stream_rows(t: mp.Table) -> list[tuple]:
    sc = StreamScanner(t, {"scan.mode": "from-snapshot", "scan.snapshot-id": "1"})
    start, out = StreamOffset(0), []
    while (end := sc.latest_offset(start)) != start:
        for split in sc.plan(start, end):
            for b in sc.read(split):
                out += [(r["id"], r["dt"], r["v"]) for r in b.to_pylist()]
        start = end
    return sorted(out)


def test_streams_and_diffs_match_a_table_without_vectors(tmp_path):
    rng = random.Random(7)
    # compactions only where asked, so both histories have the same snapshots
    tables = [make(str(tmp_path / "dv"), bucket="2", **{"write-only": "true"}),
              make(str(tmp_path / "plain"), bucket="2", **{"deletion-vectors.enabled": "false",
                                                           "write-only": "true"})]
    for step in range(25):
        ids = rng.sample(range(30), rng.randint(1, 8))
        kinds = [rng.choice(["+I", "+U", "-D"]) for _ in ids]
        for t in tables:
            t.write(batch(ids, step, "a", kinds))
        if step % 3 == 2:
            for t in tables:
                t.compact(full=True)
    dv, plain = (t.refresh() for t in tables)
    assert state(dv) == state(plain) == merged_state(dv)
    assert _stream_rows(dv) == _stream_rows(plain)
    # level-0 files are unseen (as by Paimon's readers) until compacted; none here, as writes
    # are placed above level 0, so every snapshot is compared
    settled = [s.id for s in dv.snapshots()
               if all(e.file.level > 0 for e in dv.context().manifests.data_entries(s))]
    assert settled == [s.id for s in dv.snapshots()]
    for start, end in ((settled[0], settled[len(settled) // 2]), (settled[1], settled[-1])):
        a = dv.diff(start, end).sort_by([("id", "ascending"), ("_row_kind", "ascending")])
        b = plain.diff(start, end).sort_by([("id", "ascending"), ("_row_kind", "ascending")])
        assert a.to_pylist() == b.to_pylist()


@pytest.mark.parametrize("victim", ["write", "compact"])
def test_a_commit_whose_base_is_compacted_and_expired_meanwhile_retries(tmp_path, monkeypatch, victim):
    """Between a commit's read of its base manifests and its read of the bucket's key
    columns, another process writes, compacts and expires every older snapshot (deleting
    the files the commit was about to read): the commit retries from the new latest (a
    compaction gives way to the other one), never raises."""
    from minipaimon_core.commit import dv_maintainer

    t = make(str(tmp_path / "t"), bucket="1")
    t.write(batch([1, 2, 3], 0))
    t.write(batch([2], 1))
    if victim == "compact":
        t.write(batch([1], 5))
    rows_of = dv_maintainer.VectorMaintainer._rows
    raced = []
    racer = textwrap.dedent(f"""
        import minipaimon_core as mp
        from tests.test_deletion_vectors import batch
        t = mp.open_table({t.path!r})
        t.write(batch([3], 2))
        assert t.refresh().compact(full=True) is not None
        assert t.refresh().expire_snapshots(retain_max=1, retain_min=1).data_files
    """)

    def racing_rows(self, *args, **kwargs):
        if not raced:  # another process, with caches of its own
            raced.append(subprocess.run([sys.executable, "-c", racer], capture_output=True, text=True,
                                        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}))
            assert raced[0].returncode == 0, raced[0].stderr
        return rows_of(self, *args, **kwargs)

    monkeypatch.setattr(dv_maintainer.VectorMaintainer, "_rows", racing_rows)
    monkeypatch.setattr(dv_maintainer, "_KEYS", dv_maintainer._KeyCache(1 << 20))  # as a new process
    if victim == "write":
        assert t.write(batch([1], 5)) is not None
    else:
        t.refresh().compact(full=True)
    assert raced
    fresh = mp.open_table(t.path)
    assert state(fresh) == merged_state(fresh) == {(1, "a"): 5, (2, "a"): 1, (3, "a"): 2}


def test_widening_the_sequence_field_keeps_writes_working_in_the_same_process(tmp_path):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("seq", pa.int32()), ("v", pa.string())])
    t = mp.create_table(str(tmp_path / "t"), schema, primary_key=["id"],
                        options={"bucket": "1", **DV, "sequence.field": "seq"})
    t.write(pa.table({"id": [1, 2], "seq": [5, 5], "v": ["a", "b"]}, schema=schema))
    t.write(pa.table({"id": [1], "seq": [6], "v": ["a2"]}, schema=schema))  # keys cached as int32
    t.alter_column_type("seq", pa.int64())
    t = t.refresh()
    t.write(pa.table({"id": [1, 2], "seq": [2**40, 4], "v": ["a3", "stale"]}))
    got = {r["id"]: (r["seq"], r["v"]) for r in t.to_arrow().to_pylist()}
    assert got == {1: (2**40, "a3"), 2: (5, "b")}  # seq 4 < 5: the older row loses


def test_a_read_racing_expiration_gets_snapshot_expired_for_index_and_data_files(tmp_path):
    t = make(str(tmp_path / "t"), bucket="1")
    t.write(batch([1, 2, 3], 0))
    t.write(batch([2], 1))
    planned = t.scan().plan()
    assert any(s.deletion_index is not None for s in planned)
    other = mp.open_table(t.path)
    other.compact(full=True)
    other.refresh().expire_snapshots(retain_max=1, retain_min=1)
    index_split = next(s for s in planned if s.deletion_index is not None)
    plain_split = next(s for s in planned if s.deletion_index is None)
    for split in (index_split, plain_split):  # vectors gone / data file gone: one error
        with pytest.raises(mp.SnapshotExpiredError, match="re-plan the read"):
            list(mp.open_table(t.path).read_split(split))


def test_a_filter_on_the_partition_plans_when_other_partitions_manifests_are_pruned(tmp_path):
    """Manifests are pruned by partition: a bucket of a partition the filter drops keeps only
    some of its entries, so its vectors name files the plan did not see. Only buckets of kept
    partitions are checked against their vectors (this once raised CorruptMetadataError)."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("p", pa.string(), nullable=False),
                        pa.field("v", pa.int64())])
    t = mp.create_table(str(tmp_path / "t"), schema, primary_key=["id", "p"], partition_by=["p"],
                        options={"bucket": "1", "deletion-vectors.enabled": "true"})
    t.write(pa.table({"id": [1, 2], "p": ["a", "b"], "v": [1, 2]}, schema=schema))  # spans a..b
    for v in range(3):  # manifests of partition a only, the key rewritten: vectors in (a, 0)
        t.write(pa.table({"id": [1], "p": ["a"], "v": [10 + v]}, schema=schema))
    assert t.scan(filter=[("p", "=", "b")]).to_arrow().to_pylist() == [{"id": 2, "p": "b", "v": 2}]
    assert t.scan(filter=[("p", "=", "b"), ("v", ">=", 0)]).to_arrow().num_rows == 1
    assert t.scan(filter=[("p", "=", "a")]).to_arrow().to_pylist() == [{"id": 1, "p": "a", "v": 12}]
