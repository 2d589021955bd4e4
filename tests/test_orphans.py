"""Orphan file cleanup: only old, unreferenced files minipaimon names; never a concurrent commit's."""

from __future__ import annotations

import os
import time

import pyarrow as pa
import pytest

import minipaimon_core as mp
from minipaimon_core.maintenance import TableFiles
from minipaimon_core.maintenance.orphans import list_candidates, remove_orphan_files
from tests.helpers import SCHEMA, rows, sorted_ids
from tests.test_expire import backdate_all, disk_files, now_ms, reachable


def make_old(path: str, seconds: float = 3 * 86400) -> None:
    t = time.time() - seconds
    os.utime(path, (t, t))


def abandoned_files(t: mp.Table, data: pa.Table) -> list[str]:
    """Write files for a commit that never happens; return their paths."""
    before = disk_files(t)
    w = t.new_write("crashed-writer")
    w.write(data)
    w.prepare_commit()
    return sorted(disk_files(t) - before)


def test_removes_old_unreferenced_files_and_nothing_else(tmp_path):
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, partition_by=["dt"])
    t.write(rows(0, 5, "d1"))
    t.write(rows(5, 5, "d2"))
    used = reachable(t)
    for p in used:  # old but referenced: must stay
        make_old(p)
    old_orphans = abandoned_files(t, rows(100, 3, "d1"))
    manifest = t.layout.manifest_path("manifest-deadbeef")
    temp = t.layout.listed_path(t.layout.snapshot_dir, ".snapshot-3.0123abcd.tmp")
    for p in (manifest, temp):
        with open(p, "wb") as f:
            f.write(b"x")
    old_orphans += [manifest, temp]
    for p in old_orphans:
        make_old(p)
    young = abandoned_files(t, rows(200, 3, "d2"))  # a write that may still be in progress
    foreign = [os.path.join(t.path, "README.txt"), os.path.join(os.path.dirname(old_orphans[0]), "notes.txt")]
    for p in foreign:  # not a name minipaimon writes: never touched, whatever its age
        with open(p, "w") as f:
            f.write("keep me")
        make_old(p)

    dry = t.remove_orphan_files(dry_run=True)
    assert dry.dry_run and sorted(dry.files) == sorted(old_orphans)
    assert dry.bytes == sum(os.path.getsize(p) for p in old_orphans)
    assert all(os.path.exists(p) for p in old_orphans)

    result = t.remove_orphan_files()
    assert sorted(result.files) == sorted(old_orphans)
    assert not any(os.path.exists(p) for p in old_orphans)
    assert all(os.path.exists(p) for p in [*used, *young, *foreign])
    assert sorted_ids(t.to_arrow()) == list(range(10))
    assert t.remove_orphan_files().files == []


def test_a_time_in_the_future_is_refused(tmp_path):
    t = mp.create_table(str(tmp_path / "t"), SCHEMA)
    t.write(rows(0, 3))
    with pytest.raises(mp.InvalidArgumentError, match="future"):
        t.remove_orphan_files(older_than_ms=now_ms() + 60_000)
    assert sorted_ids(t.to_arrow()) == [0, 1, 2]


def test_a_commit_landing_during_the_scan_keeps_its_files(tmp_path):
    t = mp.create_table(str(tmp_path / "t"), SCHEMA)
    t.write(rows(0, 3))
    w = t.new_write("slow-job")
    w.write(rows(3, 3))
    messages = w.prepare_commit()
    for p in disk_files(t):
        make_old(p)  # even files older than the safe age
    committed = []

    def commit_while_reading(phase: str, done: int, total: int) -> None:
        if phase == "reading snapshots" and not committed:  # after listing, during the used set
            committed.append(t.new_commit("slow-job").commit(messages, 1))

    remove_orphan_files(TableFiles.of(t), older_than_ms=now_ms(), progress=commit_while_reading)
    assert committed == [2]
    assert sorted_ids(mp.open_table(t.path).to_arrow()) == list(range(6))


def test_tags_and_partitions_with_awkward_values_are_walked(tmp_path):
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, partition_by=["dt"],
                        options={"compaction.min.file-num": "2"})
    for dt in ("a/b", "..", None, "x"):
        t.write(rows(0, 2, dt))
    t.write(rows(10, 2, "x"))
    t.create_tag("before-compaction", 4)
    t.compact(full=True)
    t.expire_snapshots(retain_max=1)
    strays = abandoned_files(t, pa.concat_tables([rows(50, 1, "a/b"), rows(51, 1, "..")]))
    strays += abandoned_files(t, rows(52, 1, None))
    backdate_all(t)
    result = t.remove_orphan_files()
    assert sorted(result.files) == sorted(strays)
    assert disk_files(t) == reachable(t)
    assert len(t.scan(tag="before-compaction").to_arrow()) == 8
    assert len(t.to_arrow()) == 10
    assert all(p.startswith(t.path + "/") for p in strays)


def test_candidates_are_listed_by_age(tmp_path):
    t = mp.create_table(str(tmp_path / "t"), SCHEMA)
    t.write(rows(0, 3))
    files = TableFiles.of(t)
    assert list_candidates(files, 0, lambda *a: None) == {}
    everything = list_candidates(files, now_ms() + 1000, lambda *a: None)
    assert set(everything) == reachable(t)  # every data file and manifest, with sizes
    assert all(size == os.path.getsize(p) for p, size in everything.items())
