"""Compaction of primary-key tables with deletion vectors applies the vectors (issue 38 item 1).

Paimon's Java engine compacts a ``-D`` row away as soon as it has marked the rows it deletes
(lookup compaction), so in its tables a deletion vector can be the only record of a delete.
These tests build such a table with minipaimon's own primitives: the deletes are written,
then a COMPACT commit drops the file of ``-D`` rows as Java's compaction does, leaving the
marks. Before the fix minipaimon's compaction merged the files without their vectors and the
deleted rows came back. The Java engine's own table: tests/interop/test_compaction_vectors_java.py.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import minipaimon_core as mp
from minipaimon_core.commit.commit import FileStoreCommit
from minipaimon_core.errors import CommitConflictError, ConflictReason
from minipaimon_core.maintenance.compaction import bucket_units, commit_compaction, compact_bucket
from minipaimon_core.metadata.commit_message import CommitMessage
from minipaimon_core.migrate import copy_table
from minipaimon_core.stream.stream import StreamOffset, StreamScanner

KV = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
DELETED = [20, 21, 22, 23]
BUCKETS = {"fixed": {"bucket": "2"}, "dynamic": {"bucket": "-1", "dynamic-bucket.target-row-num": "15"}}


def kv(ids: list[int], tag: str, kinds: list[str] | None = None) -> pa.Table:
    t = pa.table({"id": ids, "v": [f"{tag}-{i}" for i in ids]}, schema=KV)
    return t if kinds is None else t.append_column("_row_kind", pa.array(kinds))


def rows(t: mp.Table, snapshot_id: int | None = None) -> dict[int, str]:
    data = mp.open_table(t.path).scan(snapshot_id=snapshot_id).to_arrow()
    return dict(zip(data.column("id").to_pylist(), data.column("v").to_pylist()))


def drop_delete_files(t: mp.Table) -> int:
    """Commit what Java's lookup compaction does once it has marked the deleted rows: the
    files holding only ``-D`` rows compacted into nothing. Returns the snapshot id."""
    messages = []
    for entries in bucket_units(t):
        gone = [e.file for e in entries if e.file.rowCount and e.file.deleteRowCount == e.file.rowCount]
        if gone:
            first = entries[0]
            messages.append(CommitMessage(list(first.partition), t.context().partition_spec().path(
                list(first.partition)), first.bucket, first.totalBuckets, compactBefore=gone))
    assert messages, "no file of -D rows to drop"
    sid = FileStoreCommit(t.io, t.layout, t.table_schema, "java-like-compaction").commit(messages, 1)
    assert sid is not None
    return sid


def only_vectors_delete(path: Path, buckets: str, **options: str) -> tuple[mp.Table, int]:
    """A table of ids 0..39 whose ids 20-23 are deleted by deletion vectors alone; and the
    snapshot before the deletes."""
    t = mp.create_table(str(path), KV, primary_key=["id"],
                        options={**BUCKETS[buckets], "deletion-vectors.enabled": "true", **options})
    t.write(kv(list(range(40)), "a"))
    t.compact()  # the bottom level
    t.write(kv(list(range(10)), "u"))  # placed above level 0: two sorted runs, 0-9 marked
    before = t.latest_snapshot()
    assert before is not None
    t.write(kv(DELETED, "d", ["-D"] * len(DELETED)))
    drop_delete_files(t)
    t = mp.open_table(t.path)
    assert not any(e.file.deleteRowCount for unit in bucket_units(t) for e in unit)  # no -D row left
    assert t.context().vectors.entries(t.latest_snapshot())  # the marks are all there is
    return t, before.id


def expected(*extra: int) -> dict[int, str]:
    out = {i: f"{'u' if i < 10 else 'a'}-{i}" for i in range(40) if i not in DELETED}
    out.update({i: f"m-{i}" for i in extra})
    return out


@pytest.mark.parametrize("buckets", list(BUCKETS))
@pytest.mark.parametrize("strategy", ["full", "minor"])
def test_compaction_keeps_the_deletes_only_vectors_record(tmp_path: Path, buckets: str, strategy: str) -> None:
    t, _ = only_vectors_delete(tmp_path / "t", buckets)
    assert rows(t) == expected()
    t.write(kv([100], "m"))  # a write, and its automatic compaction
    assert rows(t) == expected(100)
    t.compact(strategy=strategy)
    assert rows(t) == expected(100)
    t.compact()
    assert rows(t) == expected(100)
    t.write(kv([20], "m"))  # a deleted key written again is back, once
    t.compact()
    assert rows(t) == expected(100, 20)


@pytest.mark.parametrize("producer", ["lookup", "full-compaction"])
def test_changelog_of_a_compaction_sees_the_deletes_only_vectors_record(tmp_path: Path, producer: str) -> None:
    """``lookup``: a deleted key written again is a new row (+I), not an update of the deleted
    one. ``full-compaction``: the deletes are changes since the last full compaction."""
    t, _ = only_vectors_delete(tmp_path / "t", "fixed")
    t.set_options({"changelog-producer": producer})
    start = t.latest_snapshot()
    assert start is not None
    t.write(kv([21, 30], "m"))  # and its automatic compaction
    scanner = StreamScanner(mp.open_table(t.path), {"scan.mode": "latest", "read.changelog": "true"})
    end = scanner.latest_offset(StreamOffset(start.id))
    changes = sorted((r["_row_kind"], r["id"], r["v"]) for s in scanner.plan(StreamOffset(start.id), end)
                     for b in scanner.read(s) for r in pa.Table.from_batches([b]).to_pylist())
    if producer == "lookup":  # the rows the write changed, looked up
        assert changes == [("+I", 21, "m-21"), ("+U", 30, "m-30"), ("-U", 30, "a-30")]
    else:  # every change since the last full compaction (the bottom level as it wrote it)
        assert changes == sorted([*(("-U", i, f"a-{i}") for i in range(10)), *(("+U", i, f"u-{i}") for i in range(10)),
                                  ("-D", 20, "a-20"), ("-U", 21, "a-21"), ("+U", 21, "m-21"), ("-D", 22, "a-22"),
                                  ("-D", 23, "a-23"), ("-U", 30, "a-30"), ("+U", 30, "m-30")])


def test_copy_restore_and_row_level_changes_keep_the_deletes(tmp_path: Path) -> None:
    """The other paths that read a table's files to write them again."""
    t, before = only_vectors_delete(tmp_path / "t", "fixed")
    latest = t.latest_snapshot()
    assert latest is not None
    copy_table(t.path, str(tmp_path / "copy"))
    assert rows(mp.open_table(str(tmp_path / "copy"))) == expected()
    assert t.update([("id", ">=", 18), ("id", "<", 26)], set={"v": "x"}) == 4  # 18, 19, 24, 25
    assert rows(t) == {**expected(), **{i: "x" for i in (18, 19, 24, 25)}}
    t.restore(before)
    t.restore(latest.id)
    assert rows(t) == expected()
    t.compact()
    assert rows(t) == expected()


@pytest.mark.parametrize("undo", ["restore", "rollback"])
def test_a_compaction_whose_marks_a_restore_undid_is_refused(tmp_path: Path, undo: str) -> None:
    """A compaction that left out marked rows, committed after a restore or rollback gave
    its input files an older snapshot's vectors (fewer marks), would lose the rows that
    came back: it is refused, and the table reads as restored."""
    t, before = only_vectors_delete(tmp_path / "t", "fixed")
    messages = [m for m in (compact_bucket(t, unit, "full") for unit in bucket_units(t)) if m is not None]
    assert any(m.vectorsApplied for m in messages)
    if undo == "restore":
        t.restore(before)  # the same files as now, without marks
    else:
        t.rollback_to(before)
    restored = rows(t)
    assert all(i in restored for i in DELETED)
    with pytest.raises(CommitConflictError) as caught:
        commit_compaction(mp.open_table(t.path), messages, raise_on_conflict=True)
    assert caught.value.reason == ConflictReason.ROWS_CHANGED
    assert rows(t) == restored
    t = mp.open_table(t.path)
    assert t.compact() is not None  # compacted again on the restored snapshot
    assert rows(t) == restored


def test_a_message_naming_rows_of_a_file_it_does_not_compact_is_refused(tmp_path: Path) -> None:
    t, _ = only_vectors_delete(tmp_path / "t", "fixed")
    m = next(m for m in (compact_bucket(t, unit, "full") for unit in bucket_units(t)) if m is not None)
    bad = CommitMessage(m.partition, m.partitionPath, m.bucket, m.totalBuckets, compactBefore=m.compactBefore[:1],
                        compactAfter=m.compactAfter, vectorsApplied={"data-x-0.parquet": b"\0\0\0\0"})
    latest = t.latest_snapshot()
    with pytest.raises(mp.InvalidArgumentError, match="data-x-0.parquet"):
        commit_compaction(t, [bad])
    assert t.latest_snapshot() == latest
