"""Append tables with fixed buckets compact their small files after a commit, as Paimon's
bucketed append writers do (maintenance.compaction.maybe_compact): once a bucket holds
``compaction.min.file-num`` small files, at most ``compaction.max.file-num`` of them are
merged into one; not with ``write-only``, and not in tables without buckets (Paimon's batch
writers leave those to a compaction job)."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

import minipaimon_core as mp

SCHEMA = pa.schema([("id", pa.int64()), ("s", pa.string())])


def rows(start: int, n: int = 10) -> pa.Table:
    return pa.table({"id": list(range(start, start + n)), "s": [f"s{i}" for i in range(start, start + n)]},
                    schema=SCHEMA)


def file_count(t: mp.Table) -> int:
    return len(t.system_table("files").to_pylist())


def write_many(t: mp.Table, commits: int, first: int = 0) -> None:
    for c in range(first, first + commits):
        t.write(rows(c * 10))


def test_small_files_of_a_bucketed_append_table_are_compacted(tmp_path: Any) -> None:
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, options={"bucket": "1", "bucket-key": "id"})
    write_many(t, 4)
    assert file_count(t) == 4 and all(s.commit_kind == "APPEND" for s in t.snapshots())
    t.write(rows(40))  # the fifth small file: compaction.min.file-num (5)
    assert [s.commit_kind for s in t.snapshots()][-2:] == ["APPEND", "COMPACT"]
    assert file_count(t) == 1
    write_many(t, 23, first=5)
    assert file_count(t) <= 5
    got = t.scan().to_arrow().sort_by("id")
    assert got.column("id").to_pylist() == list(range(280))


def test_the_options_bound_a_compaction(tmp_path: Any) -> None:
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, options={
        "bucket": "2", "bucket-key": "id", "compaction.min.file-num": "3", "compaction.max.file-num": "3"})
    write_many(t, 12)
    compactions = [s for s in t.snapshots() if s.commit_kind == "COMPACT"]
    assert compactions
    per_bucket: dict[int, int] = {}
    for f in t.system_table("files").to_pylist():
        per_bucket[f["bucket"]] = per_bucket.get(f["bucket"], 0) + 1
    assert all(n < 3 + 3 for n in per_bucket.values())
    assert t.scan().to_arrow().num_rows == 120


@pytest.mark.parametrize("options", [{"bucket": "1", "bucket-key": "id", "write-only": "true"}, {}])
def test_write_only_and_tables_without_buckets_are_not_compacted(tmp_path: Any, options: dict[str, str]) -> None:
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, options=options)
    write_many(t, 8)
    assert all(s.commit_kind == "APPEND" for s in t.snapshots())
    assert file_count(t) == 8


def test_a_compaction_leaves_out_the_rows_deletion_vectors_mark(tmp_path: Any) -> None:
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, options={"bucket": "1", "bucket-key": "id", "deletion-vectors.enabled": "true"})
    write_many(t, 3)
    t.delete([("id", "<", 5)])
    write_many(t, 3, first=3)
    got = t.scan().to_arrow().sort_by("id")
    assert got.column("id").to_pylist() == list(range(5, 60))
    assert any(s.commit_kind == "COMPACT" for s in t.snapshots())
