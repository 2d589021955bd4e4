"""Rollback to a snapshot or tag, crash safety of its order, and the tag API."""

from __future__ import annotations

import shutil

import pytest

import minipaimon_core as mp
from tests.helpers import SCHEMA, rows, sorted_ids
from tests.test_expire import (
    FailingDeleteIO,
    InjectedFault,
    disk_files,
    reachable,
    remove_all_orphans,
)


def history(path, n: int = 5) -> tuple[mp.Table, dict[int, list[int]]]:
    t = mp.create_table(str(path), SCHEMA, options={"compaction.min.file-num": "2"})
    for k in range(n):
        t.write(rows(k * 2, 2))
    t.compact(full=True)  # snapshot n + 1
    t.write(rows(100, 2))  # snapshot n + 2
    expected = {s.id: sorted_ids(t.scan(snapshot_id=s.id).to_arrow()) for s in t.snapshots()}
    return t, expected


def test_rollback_to_a_snapshot_removes_newer_snapshots_tags_and_files(tmp_path):
    t, expected = history(tmp_path / "t")
    t.create_tag("keep", 2)
    t.create_tag("newer", 6)
    result = t.rollback_to(snapshot_id=3)
    assert result.snapshot_id == 3 and result.snapshots == [7, 6, 5, 4] and result.tags == ["newer"]
    assert [s.id for s in t.snapshots()] == [1, 2, 3]
    assert t.tags() == {"keep": 2}
    assert sorted_ids(t.to_arrow()) == expected[3]
    assert disk_files(t) == reachable(t)
    assert t.write(rows(200, 1)) == 4  # history continues from the target
    assert sorted_ids(t.to_arrow()) == [*expected[3], 200]
    assert sorted_ids(t.scan(tag="keep").to_arrow()) == expected[2]


def test_rollback_to_a_tag_of_a_retained_snapshot(tmp_path):
    t, expected = history(tmp_path / "t")
    t.create_tag("v2", 2)
    assert t.rollback_to(tag="v2").snapshots == [7, 6, 5, 4, 3]
    assert sorted_ids(t.to_arrow()) == expected[2]
    assert disk_files(t) == reachable(t)


def test_rollback_to_a_tag_whose_snapshot_expired_restores_it(tmp_path):
    t, expected = history(tmp_path / "t")
    t.create_tag("v2", 2)
    t.expire_snapshots(retain_max=2)
    assert [s.id for s in t.snapshots()] == [6, 7]
    result = t.rollback_to(tag="v2")
    assert result.snapshot_id == 2 and result.snapshots == [7, 6]
    assert [s.id for s in t.snapshots()] == [2]
    assert t.snapshot_manager.earliest_id() == 2
    assert sorted_ids(t.to_arrow()) == expected[2]
    assert disk_files(t) == reachable(t)
    assert t.write(rows(300, 1)) == 3


def test_rollback_argument_errors(tmp_path):
    t, _ = history(tmp_path / "t")
    with pytest.raises(mp.InvalidArgumentError):
        t.rollback_to()
    with pytest.raises(mp.InvalidArgumentError):
        t.rollback_to(snapshot_id=1, tag="x")
    with pytest.raises(mp.SnapshotNotFoundError):
        t.rollback_to(snapshot_id=42)
    with pytest.raises(mp.SnapshotNotFoundError, match="no tag"):
        t.rollback_to(tag="missing")
    t.expire_snapshots(retain_max=2)
    with pytest.raises(mp.SnapshotExpiredError):
        t.rollback_to(snapshot_id=1)
    assert t.rollback_to(snapshot_id=7).snapshots == []  # the latest: nothing to do


def test_a_crash_at_any_delete_of_a_rollback_leaves_a_consistent_table(tmp_path):
    base, expected = history(tmp_path / "base")
    k = 1
    while True:
        path = str(tmp_path / f"t{k}")
        shutil.copytree(base.path, path)
        try:
            mp.open_table(path, io=FailingDeleteIO(k)).rollback_to(snapshot_id=3)
            finished = True
        except InjectedFault:
            finished = False
        t = mp.open_table(path)
        latest = t.latest_snapshot()
        assert latest is not None and 3 <= latest.id <= 7, k
        for s in t.snapshots():  # some valid older state, readable in full
            assert sorted_ids(t.scan(snapshot_id=s.id).to_arrow()) == expected[s.id], (k, s.id)
        t.rollback_to(snapshot_id=3)  # running it again finishes the job
        remove_all_orphans(t)  # collects what the crash leaked
        assert [s.id for s in t.snapshots()] == [1, 2, 3]
        assert sorted_ids(t.to_arrow()) == expected[3]
        assert disk_files(t) == reachable(t), k
        if finished:
            break
        k += 1
    assert k > 5


def test_tag_api(tmp_path):
    t, expected = history(tmp_path / "t")
    t.create_tag("latest")
    t.create_tag("first", 1)
    assert t.tags() == {"first": 1, "latest": 7}
    with pytest.raises(mp.InvalidArgumentError, match="already exists"):
        t.create_tag("first", 2)
    with pytest.raises(mp.InvalidArgumentError):
        t.create_tag("../evil", 2)
    t.delete_tag("latest")
    with pytest.raises(mp.SnapshotNotFoundError):
        t.delete_tag("latest")
    assert t.tags() == {"first": 1}
    assert sorted_ids(t.scan(tag="first").to_arrow()) == expected[1]
    empty = mp.create_table(str(tmp_path / "empty"), SCHEMA)
    with pytest.raises(mp.SnapshotNotFoundError):
        empty.create_tag("nothing")
