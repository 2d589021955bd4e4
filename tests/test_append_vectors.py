"""Deletion vectors of append tables (``deletion-vectors.enabled``): row-level changes mark
rows instead of rewriting files; reads, time travel, diff, compaction, overwrite, expiration
and concurrent changes all see the marks right (minipaimon_core.commit.append_vectors)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import minipaimon_core as mp
from minipaimon_core.dml import dml
from minipaimon_core.dml.dml_write import Change, commit_change, new_user, write_change
from minipaimon_core.expressions import predicate
from minipaimon_core.maintenance.compaction import bucket_units, commit_compaction, compact_bucket

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("p", pa.string(), nullable=False),
                    ("v", pa.int64())])
DV = {"deletion-vectors.enabled": "true"}


def make(path: Path, **options: str) -> mp.Table:
    t = mp.create_table(str(path), SCHEMA, partition_by=["p"], options={**DV, **options})
    for first in (0, 50):
        ids = list(range(first, first + 50))
        t.write(pa.table({"id": ids, "p": [f"p{i % 2}" for i in ids], "v": ids}, schema=SCHEMA))
    return t


def rows(t: mp.Table, **scan: Any) -> list[tuple[Any, ...]]:
    a = t.refresh().scan(**scan).to_arrow() if scan else t.refresh().to_arrow()
    return sorted(zip(*(a.column(c).to_pylist() for c in SCHEMA.names)))


def data_files(t: mp.Table) -> set[str]:
    return set(t.refresh().system_table("files").column("file_path").to_pylist())


def model() -> dict[int, tuple[Any, ...]]:
    return {i: (i, f"p{i % 2}", i) for i in range(100)}


def test_changes_mark_rows_and_rewrite_no_file(tmp_path: Path) -> None:
    t = make(tmp_path / "t")
    files = data_files(t)
    want = model()
    assert t.delete([("v", "<", 10)]) == 10
    assert t.update([("v", ">=", 90)], set={"v": pc.field("v") * 10}) == 10
    source = pa.table({"id": [20, 21, 500], "p": ["p0", "p1", "p0"], "v": [-1, 1, 5]}, schema=SCHEMA)
    result = (t.merge(source, on=["id", "p"]).when_matched_delete(condition=pc.field("source.v") < 0)
              .when_matched_update_all().when_not_matched_insert_all().execute())
    assert (result.inserted, result.updated, result.deleted) == (1, 1, 1)
    for i in range(10):
        del want[i]
    for i in range(90, 100):
        want[i] = (i, f"p{i % 2}", i * 10)
    del want[20]
    want[21] = (21, "p1", 1)
    want[500] = (500, "p0", 5)
    assert rows(t) == sorted(want.values())
    assert files <= data_files(t)  # every original file is still there: rows were marked
    assert t.latest_snapshot().indexManifest is not None  # type: ignore[union-attr]
    assert [s.commitKind for s in t.snapshots()] == ["APPEND"] * 2 + ["OVERWRITE"] * 3
    assert rows(t, snapshot_id=2) == sorted(model().values())  # time travel: the old rows
    diff = t.diff(2, 3)
    assert sorted(diff.column("id").to_pylist()) == list(range(10))
    assert set(diff.column("_row_kind").to_pylist()) == {"-D"}
    assert rows(t, filter=[("v", ">=", 900)]) == sorted(r for r in want.values() if r[2] >= 900)


def test_compaction_leaves_marked_rows_out_and_drops_their_vectors(tmp_path: Path) -> None:
    t = make(tmp_path / "t")
    t.delete([("v", ">=", 40), ("v", "<", 60)])
    before = rows(t)
    t.compact(full=True)
    assert rows(t) == before
    assert t.refresh().latest_snapshot().indexManifest is None  # type: ignore[union-attr]
    assert sum(t.system_table("files").column("record_count").to_pylist()) == len(before)
    t.delete([("p", "=", "p0")])  # every row of a partition: its compaction writes no file
    t.compact(full=True)
    assert rows(t) == [r for r in before if r[1] == "p1"]


def test_an_overwrite_drops_the_vectors_of_the_files_it_replaces(tmp_path: Path) -> None:
    t = make(tmp_path / "t")
    t.delete([("v", "<", 5)])
    t.write(pa.table({"id": [7], "p": ["p1"], "v": [7]}, schema=SCHEMA), mode="overwrite")
    assert rows(t) == [(7, "p1", 7)]
    assert t.refresh().latest_snapshot().indexManifest is None  # type: ignore[union-attr]


def test_expiration_and_orphan_cleanup_keep_the_vectors_in_use(tmp_path: Path) -> None:
    t = make(tmp_path / "t", **{"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"})
    for low in range(0, 30, 10):
        t.delete([("v", ">=", low), ("v", "<", low + 5)])
    t.refresh().expire_snapshots()
    assert len(list(t.refresh().snapshots())) == 1
    t.refresh().remove_orphan_files(older_than="0s")
    assert rows(t) == sorted(r for r in model().values() if r[2] % 10 >= 5 or r[2] >= 30)
    index_files = {p.name for p in (tmp_path / "t" / "index").iterdir()}
    assert len(index_files) == 2  # one per partition: the latest vectors only


def _changes_of(t: mp.Table, filter: Any) -> tuple[dml.Target, list[Any], str]:
    """A delete read and written, not committed."""
    ctx = t.refresh().context()
    dnf = predicate.normalize(filter, ctx.schema.arrow_schema())
    target = dml.read_target(ctx, dnf)
    selected = dml.selected_rows(ctx, target, dnf)
    empty = ctx.schema.arrow_schema().empty_table()
    user = new_user()
    messages: list[Any] = []
    write_change(ctx, target, Change(selected, np.zeros(len(selected), dtype=bool), empty, empty), user, messages)
    return target, messages, user


def test_a_change_whose_rows_were_marked_meanwhile_conflicts(tmp_path: Path) -> None:
    """Two deletes read the same files; the second to commit finds the vectors changed
    (ROWS_CHANGED) and, through Table.delete's retries, is read and applied again."""
    t = make(tmp_path / "t")
    target, messages, user = _changes_of(t, [("v", "<", 10)])
    assert t.delete([("v", ">=", 5), ("v", "<", 20)]) == 15  # commits first
    with pytest.raises(mp.CommitConflictError) as e:
        commit_change(t.refresh().context(), target.snapshot, user, messages, None)
    assert e.value.reason == mp.ConflictReason.ROWS_CHANGED
    assert t.delete([("v", "<", 10)]) == 5  # read again: only the rows still there
    assert rows(t) == sorted(r for r in model().values() if r[2] >= 20)


def test_a_compaction_racing_a_change_gives_way_and_the_change_survives(tmp_path: Path) -> None:
    t = make(tmp_path / "t")
    units = bucket_units(t.refresh())
    compactions = [m for u in units if (m := compact_bucket(t.refresh(), u, "full")) is not None]
    t.delete([("v", "<", 10)])  # lands between the compaction's read and its commit
    assert commit_compaction(t.refresh(), compactions) is None  # conflict: its files deleted
    assert rows(t) == sorted(r for r in model().values() if r[2] >= 10)
    target, messages, user = _changes_of(t, [("v", "=", 50)])
    t.compact(full=True)  # replaces the file the change marks
    with pytest.raises(mp.CommitConflictError) as e:
        commit_change(t.refresh().context(), target.snapshot, user, messages, None)
    assert e.value.reason == mp.ConflictReason.FILES_GONE
    assert rows(t) == sorted(r for r in model().values() if r[2] >= 10)


def test_a_rollback_that_restores_the_count_of_marks_with_other_rows_conflicts(tmp_path: Path) -> None:
    """Marks are compared by identity, not by count (found by review): a compaction read
    when file F marked row 0; a rollback unmarks it and a new delete marks row 3 of F (one
    mark again). The compaction must give way, else row 0 would be lost and row 3 back."""
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, options=DV)
    t.write(pa.table({"id": [0, 1, 2, 3, 4], "p": ["a"] * 5, "v": [0] * 5}, schema=SCHEMA))
    t.write(pa.table({"id": [5, 6], "p": ["a"] * 2, "v": [0] * 2}, schema=SCHEMA))
    t.delete([("id", "=", 0)])
    compactions = [m for u in bucket_units(t.refresh()) if (m := compact_bucket(t.refresh(), u, "full")) is not None]
    update, messages, user = _changes_of(t, [("id", "=", 1)])
    t.rollback_to(2)
    t.delete([("id", "=", 3)])
    with pytest.raises(mp.CommitConflictError) as e:
        commit_compaction(t.refresh(), compactions, raise_on_conflict=True)
    assert e.value.reason == mp.ConflictReason.ROWS_CHANGED
    with pytest.raises(mp.CommitConflictError) as e:
        commit_change(t.refresh().context(), update.snapshot, user, messages, None)
    assert e.value.reason == mp.ConflictReason.ROWS_CHANGED
    assert sorted(t.refresh().to_arrow().column("id").to_pylist()) == [0, 1, 2, 4, 5, 6]
