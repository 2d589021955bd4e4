"""``Table.restore``: a new commit with an older snapshot's data that keeps the history
(issue 30). A model test per table kind (append, append with deletion vectors, primary
key, primary key with deletion vectors): random writes, deletes, compactions and restores,
each snapshot's rows recorded when it is made; after every restore the table reads exactly
as the target did, every older snapshot and tag still reads as it did, and writes after it
win over the restored rows.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pyarrow as pa
import pytest

import minipaimon_core as mp
from minipaimon_core.maintenance.restore import RESTORED_FROM

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.int64()),
                    pa.field("dt", pa.string(), nullable=False)])

KINDS = {
    "append": ({}, None),
    "append-dv": ({"deletion-vectors.enabled": "true"}, None),
    "pk": ({"bucket": "2"}, ["id", "dt"]),
    "pk-dv": ({"bucket": "2", "deletion-vectors.enabled": "true"}, ["id", "dt"]),
}


def make(path: Path, kind: str) -> mp.Table:
    options, keys = KINDS[kind]
    return mp.create_table(str(path), SCHEMA, primary_key=keys, partition_by=["dt"],
                           options={**options, "snapshot.num-retained.min": "1000",
                                    "snapshot.num-retained.max": "1000"})


def rows_of(t: mp.Table, snapshot_id: int | None = None) -> list[tuple]:
    data = t.scan(snapshot_id=snapshot_id).to_arrow() if snapshot_id else t.to_arrow()
    return sorted(zip(*(data.column(c).to_pylist() for c in ("id", "v", "dt"))))


def batch(rng: random.Random, ids: list[int], value: int) -> pa.Table:
    dts = [f"d{rng.randrange(2)}" for _ in ids]
    return pa.table({"id": ids, "v": [value] * len(ids), "dt": dts}, schema=SCHEMA)


def files_on_disk(root: str) -> set[str]:
    return {os.path.join(d, n) for d, _, names in os.walk(root) for n in names}


@pytest.mark.parametrize("kind", list(KINDS))
def test_restore_reads_as_the_target_keeps_history_and_later_writes_win(tmp_path: Path, kind: str) -> None:
    rng = random.Random(30 + len(kind))
    t = make(tmp_path / "t", kind)
    model: dict[int, list[tuple]] = {}  # snapshot id -> rows read when it was made
    tags: dict[str, int] = {}
    for step in range(40):
        value = step + 1
        op = rng.random()
        if op < 0.45 or not model:
            t.write(batch(rng, rng.sample(range(30), rng.randrange(1, 8)), value))
        elif op < 0.6:
            t.delete([("id", "in", rng.sample(range(30), 4))])
        elif op < 0.7:
            t.compact(strategy=rng.choice(["full", "minor"]))
        elif op < 0.75:
            name = f"tag{step}"
            t.create_tag(name)
            tags[name] = t.latest_snapshot().id  # type: ignore[union-attr]
        else:
            target = rng.choice(sorted(model))
            before = [s.id for s in t.snapshots()]
            result = t.restore(rng.choice([name for name, sid in tags.items() if sid == target] or [target]))
            assert result.restored_from == target
            if result.snapshot_id is not None:
                new = t.latest_snapshot()
                assert new is not None and new.id == result.snapshot_id and new.commitKind == "OVERWRITE"
                assert (new.properties or {})[RESTORED_FROM] == str(target)
                assert [s.id for s in t.snapshots()] == [*before, new.id]  # history kept
            assert rows_of(t) == model[target]
            assert t.count() == len(model[target])
        latest = t.latest_snapshot()
        if latest is not None:
            model.setdefault(latest.id, rows_of(t))
    for sid, expected in model.items():  # every older snapshot still reads as it did
        assert rows_of(t, sid) == expected, sid
    assert t.tags() == tags


@pytest.mark.parametrize("kind", ["pk", "pk-dv"])
def test_writes_after_a_restore_win_over_restored_rows(tmp_path: Path, kind: str) -> None:
    t = make(tmp_path / "t", kind)
    t.write(pa.table({"id": [1, 2], "v": [10, 20], "dt": ["d0", "d0"]}, schema=SCHEMA))  # 1
    t.write(pa.table({"id": [1, 2], "v": [11, 21], "dt": ["d0", "d0"]}, schema=SCHEMA))  # 2
    t.compact()                                                                       # 3
    writer = t.new_write("slow")  # starts before the restore, commits after it
    writer.write(pa.table({"id": [2], "v": [22], "dt": ["d0"]}, schema=SCHEMA))
    assert t.restore(1).snapshot_id == 4
    assert rows_of(t) == [(1, 10, "d0"), (2, 20, "d0")]
    t.write(pa.table({"id": [1], "v": [12], "dt": ["d0"]}, schema=SCHEMA))
    t.new_commit("slow").commit(writer.prepare_commit(), commit_identifier=1)
    assert rows_of(t) == [(1, 12, "d0"), (2, 22, "d0")]
    t.compact()
    assert rows_of(t) == [(1, 12, "d0"), (2, 22, "d0")]


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_restore_is_undone_by_another_and_survives_expiring_the_older_snapshots(
        tmp_path: Path, kind: str) -> None:
    t = make(tmp_path / "t", kind)
    t.write(pa.table({"id": [1, 2, 3], "v": [1, 2, 3], "dt": ["d0", "d1", "d0"]}, schema=SCHEMA))
    t.create_tag("v1")
    t.delete([("id", "=", 2)])
    t.write(pa.table({"id": [4], "v": [4], "dt": ["d1"]}, schema=SCHEMA))
    t.compact()  # the files of snapshot 1 are no longer live
    latest = t.latest_snapshot()
    assert latest is not None
    before, v1 = rows_of(t), rows_of(t, 1)
    assert t.restore("v1").snapshot_id == latest.id + 1
    assert rows_of(t) == v1
    assert t.restore(latest.id).snapshot_id == latest.id + 2  # undone
    assert rows_of(t) == before
    assert t.restore(latest.id + 1).snapshot_id == latest.id + 3
    # expire everything but the latest: the restored files were copied, so nothing the
    # latest snapshot reads goes with the snapshots (and the tag) that had the originals
    t.delete_tag("v1")
    t.expire_snapshots(retain_max=1, retain_min=1, older_than="0s")
    assert [s.id for s in t.snapshots()] == [latest.id + 3]
    assert rows_of(mp.open_table(t.path)) == v1


def test_restore_of_the_latest_changes_nothing(tmp_path: Path) -> None:
    t = make(tmp_path / "t", "pk")
    t.write(pa.table({"id": [1], "v": [1], "dt": ["d0"]}, schema=SCHEMA))
    listing = files_on_disk(t.path)
    result = t.restore(1)
    assert result.snapshot_id is None and result.files_kept == 1
    assert files_on_disk(t.path) == listing


def test_bad_targets_are_refused_and_change_nothing(tmp_path: Path) -> None:
    import datetime

    t = make(tmp_path / "t", "append")
    t.write(pa.table({"id": [1], "v": [1], "dt": ["d0"]}, schema=SCHEMA))
    listing = files_on_disk(t.path)
    with pytest.raises(mp.SnapshotNotFoundError):
        t.restore(7)
    with pytest.raises(mp.SnapshotNotFoundError, match="tag 'nope'"):
        t.restore("nope")
    with pytest.raises(mp.InvalidArgumentError, match="time zone"):
        t.restore(datetime.datetime(2030, 1, 1))
    with pytest.raises(mp.InvalidArgumentError):
        t.restore(True)  # type: ignore[arg-type]
    assert files_on_disk(t.path) == listing
    at = datetime.datetime.now(datetime.timezone.utc)
    t.write(pa.table({"id": [2], "v": [2], "dt": ["d0"]}, schema=SCHEMA))
    assert t.restore(at).restored_from == 1 and rows_of(t) == [(1, 1, "d0")]
