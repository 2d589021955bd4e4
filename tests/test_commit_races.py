"""Concurrent writers with automatic expiration (issue 15, item 3): a commit whose base
snapshot expired under it retries from the latest; a compaction whose inputs were expired
under it gives way; no write fails, no row is lost. Four OS processes per table, and one
committer stalled at its create while others commit and expire past it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable

import pyarrow as pa
import pytest

import minipaimon_core as mp
from minipaimon_core.io.fileio import LocalFileIO
from minipaimon_core.maintenance.expire import expire_snapshots
from minipaimon_core.maintenance.files import TableFiles
from tests.helpers import SCHEMA, rows, sorted_ids
from tests.interleavings import Gates

WRITES = 25
WRITER = """
import json, sys
import pyarrow as pa
import minipaimon_core as mp
from minipaimon_core.maintenance.expire import expire_snapshots
from minipaimon_core.maintenance.files import TableFiles
from tests.helpers import rows
path, proc, n, pk = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "pk"
t = mp.open_table(path)
errors = []
for i in range(n):
    if pk:  # half the keys are shared by all processes: compactions overlap
        data = pa.table({"id": pa.array([i % 5, proc * 1000 + i], pa.int64()),
                         "v": pa.array([1, 1], pa.int64())})
    else:
        data = rows(proc * 1000 + i * 3, 3)
    assert t.write(data) is not None
    errors += ["".join(__import__("traceback").format_exception(e)[-4:]) for e in t.last_after_commit.errors]
print(json.dumps(errors))
"""


def _four_writers(path: str, pk: bool) -> list[str]:
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, path, str(p), str(WRITES), "pk" if pk else "append"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for p in range(4)]
    errors: list[str] = []
    for p in procs:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err[-3000:]
        errors += json.loads(out.strip().splitlines()[-1])
    return errors


RETAIN = {"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "2", "commit.max-retries": "500"}


def test_four_append_writers_with_expiration_all_commit(tmp_path):
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, options=RETAIN)
    assert _four_writers(t.path, pk=False) == []  # every write returned its id, no follow-up failed


def test_four_append_writers_with_expiration_lose_nothing(tmp_path):
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, options=RETAIN)
    _four_writers(t.path, pk=False)
    expected = [p * 1000 + i * 3 + j for p in range(4) for i in range(WRITES) for j in range(3)]
    assert sorted_ids(t.to_arrow()) == sorted(expected)


@pytest.mark.parametrize("producer", ["none", "lookup"])
def test_four_primary_key_writers_with_compaction_and_expiration(tmp_path, producer):
    kv = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.int64())])
    t = mp.create_table(str(tmp_path / "t"), kv, primary_key=["id"], options={
        **RETAIN, "bucket": "1", "merge-engine": "aggregation", "fields.v.aggregate-function": "sum",
        "num-sorted-run.compaction-trigger": "2", "changelog-producer": producer})
    errors = _four_writers(t.path, pk=True)
    assert not [e for e in errors if "CorruptMetadataError" in e or "Expired" in e], errors


def test_four_primary_key_writers_count_every_write_once(tmp_path):
    kv = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.int64())])
    t = mp.create_table(str(tmp_path / "t"), kv, primary_key=["id"], options={
        **RETAIN, "bucket": "1", "merge-engine": "aggregation", "fields.v.aggregate-function": "sum",
        "num-sorted-run.compaction-trigger": "2", "changelog-producer": "lookup"})
    _four_writers(t.path, pk=True)
    got = {r["id"]: r["v"] for r in t.to_arrow().to_pylist()}
    expected = Counter([i % 5 for _ in range(4) for i in range(WRITES)]
                       + [p * 1000 + i for p in range(4) for i in range(WRITES)])
    assert got == expected  # every write counted exactly once


class StallingFileIO:
    """A table's FileIO that runs ``meanwhile`` once, right before its first snapshot create:
    the committer has read its base and checked it, then stalls (descheduled)."""

    def __init__(self, inner, meanwhile) -> None:
        self.inner, self.meanwhile = inner, meanwhile

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def write_if_absent(self, path, data):
        if self.meanwhile is not None and "/snapshot/snapshot-" in path:
            meanwhile, self.meanwhile = self.meanwhile, None
            meanwhile()
        return self.inner.write_if_absent(path, data)


def test_a_commit_stalled_until_its_next_id_expired_retries_from_the_latest(storage):
    """Before tombstones: snapshot 2 was committed by another writer and expired, then the
    stalled commit created snapshot-2 again, below the latest: its rows were never read."""
    path = storage.path("t")
    t = mp.create_table(path, SCHEMA, options={"snapshot.num-retained.min": "1",
                                               "snapshot.num-retained.max": "2"})
    t.write(rows(0, 3))

    def others_commit_and_expire():
        for i in range(3):  # snapshots 2, 3, 4; each write expires down to the newest two
            mp.open_table(path).write(rows(100 + 10 * i, 2))
        assert mp.open_table(path).snapshots()[0].id == 3  # snapshot 2 expired

    stalled = mp.open_table(path, io=StallingFileIO(t.io, others_commit_and_expire))
    assert stalled.write(rows(50, 2)) == 5
    fresh = mp.open_table(path)
    assert sorted_ids(fresh.to_arrow()) == [0, 1, 2, 50, 51, 100, 101, 110, 111, 120, 121]
    assert [s.id for s in fresh.snapshots()] == [4, 5]
    with pytest.raises(mp.SnapshotExpiredError):
        fresh.scan(snapshot_id=2).to_arrow()


def test_expired_ids_stay_taken_for_an_hour_then_are_freed(tmp_path):
    t = mp.create_table(str(tmp_path / "t"), SCHEMA)
    for i in range(4):
        t.write(rows(i * 10, 2))
    assert t.expire_snapshots(retain_max=1).snapshots == [1, 2, 3]
    snapshot_dir = tmp_path / "t" / "snapshot"
    assert sorted(os.listdir(snapshot_dir)) == [  # hidden markers: the ids stay taken
        ".snapshot-1.expired", ".snapshot-2.expired", ".snapshot-3.expired",
        "EARLIEST", "LATEST", "snapshot-4"]
    assert [s.id for s in t.snapshots()] == [4]
    with pytest.raises(mp.SnapshotExpiredError):
        t.scan(snapshot_id=3).to_arrow()
    t.write(rows(100, 1))
    in_two_hours = int(time.time() * 1000) + 2 * 3600 * 1000
    expire_snapshots(TableFiles.of(mp.open_table(t.path)), retain_max=1, now_ms=in_two_hours)
    assert sorted(os.listdir(snapshot_dir)) == ["EARLIEST", "LATEST", "snapshot-5"]
    assert [s.id for s in mp.open_table(t.path).snapshots()] == [5]
    assert sorted_ids(mp.open_table(t.path).to_arrow()) == [0, 1, 10, 11, 20, 21, 30, 31, 100]


class PausingAfterCreate:
    """A table's FileIO that runs ``meanwhile`` once, right after its first snapshot create
    succeeded: the committer has landed but not yet looked at the outcome (descheduled)."""

    def __init__(self, inner, meanwhile) -> None:
        self.inner, self.meanwhile = inner, meanwhile

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def write_if_absent(self, path, data):
        created = self.inner.write_if_absent(path, data)
        if created and self.meanwhile is not None and "/snapshot/snapshot-" in path:
            meanwhile, self.meanwhile = self.meanwhile, None
            meanwhile()
        return created


def test_a_commit_built_on_and_expired_before_its_committer_looked_stands(storage):
    """Issue 32 item 3, the interleaving found by test_interleaved_writers_with_expiration:
    a committer created snapshot 1, then stalled; another writer committed snapshot 2 on it
    and expired it. The committer then saw the marker of its id and took its snapshot for
    one created in an expired id: it deleted its manifests, which snapshot 2 references."""
    path = storage.path("t")
    t = mp.create_table(path, SCHEMA, options={"snapshot.num-retained.min": "1",
                                               "snapshot.num-retained.max": "1"})

    def another_writer_commits_and_expires():
        mp.open_table(path).write(rows(100, 2))
        assert [s.id for s in mp.open_table(path).snapshots()] == [2]  # snapshot 1 expired

    stalled = mp.open_table(path, io=PausingAfterCreate(t.io, another_writer_commits_and_expires))
    assert stalled.write(rows(0, 3)) == 1  # it landed: its id is returned
    fresh = mp.open_table(path)
    assert sorted_ids(fresh.to_arrow()) == [0, 1, 2, 100, 101]
    fresh.write(rows(200, 1))
    assert sorted_ids(mp.open_table(path).to_arrow()) == [0, 1, 2, 100, 101, 200]


# Seeds of interleavings that lost a manifest before issue 32's fix (of 500 tried), and more.
@pytest.mark.parametrize("seed", [60, 169, 251, 254, 285, 320, 394, 434, 437, 478, *range(6)])
def test_interleaved_writers_with_expiration(tmp_path, seed):
    """Three writers of single-row commits with expiration down to the latest snapshot,
    interleaved at every FileIO call by a seeded scheduler: every write lands once and the
    table stays readable."""
    from minipaimon_core.io.fileio import LocalFileIO
    from tests.interleavings import Scheduler

    path = str(tmp_path / "t")
    mp.create_table(path, SCHEMA, options={
        "snapshot.num-retained.min": "1", "snapshot.num-retained.max": "2",
        "snapshot.time-retained": "1 ms", "commit.max-retries": "1000",
        "commit.min-retry-wait": "1 ms", "commit.max-retry-wait": "2 ms"})
    s = Scheduler(seed)

    def writer(p: int):
        def write_four():
            t = mp.open_table(path, io=s.io(LocalFileIO(fsync=False)))
            for i in range(4):
                t.write(rows(p * 1000 + i, 1))
                assert t.last_after_commit.errors == []
        return write_four

    s.run({f"w{p}": writer(p) for p in range(3)})
    assert s.errors == []
    assert sorted_ids(mp.open_table(path).to_arrow()) == [p * 1000 + i for p in range(3) for i in range(4)]



def _actor(name: str, fn: Callable[[], object], errors: list[tuple[str, BaseException]]) -> threading.Thread:
    def body() -> None:
        try:
            fn()
        except BaseException as e:  # noqa: BLE001 - reported to the test
            errors.append((name, e))
    thread = threading.Thread(target=body, name=name)
    thread.start()
    return thread


def _with_zombie_at_3(path: str, on_3: Callable[[], None], while_zombie: Callable[[], None]
                      ) -> list[tuple[str, BaseException]]:
    """Snapshots 1 and 2; a stale committer (based on 2) stands at its create of snapshot-3
    while another writer commits 3 and ``on_3()`` runs; then 4 and 5 are committed and 1-4
    expired (3's manifest lists and file go); the stale committer creates snapshot-3 again,
    a zombie (below the latest, in an expired id: it deletes it again once it looks) and
    stands before it looks while ``while_zombie()`` runs. Returns the stale writer's errors."""
    t = mp.create_table(path, SCHEMA, options={"snapshot.num-retained.max": "1000"})
    t.write(rows(0, 1))
    t.write(rows(1, 1))
    errors: list[tuple[str, BaseException]] = []
    stale_io = Gates(t.io, lambda m, p: m == "write_if_absent" and p.endswith("/snapshot/snapshot-3"),
                     lambda m, p: m == "read_bytes" and p.endswith("/snapshot/.snapshot-3.expired"))
    stale = _actor("stale", lambda: mp.open_table(path, io=stale_io).write(rows(100, 1)), errors)
    stale_io.wait()
    t.write(rows(2, 1))  # snapshot 3
    on_3()
    t.write(rows(3, 1), mode="overwrite")  # 3's data files go with it too
    t.write(rows(4, 1))
    assert expire_snapshots(TableFiles.of(mp.open_table(path)), retain_max=1).snapshots == [1, 2, 3, 4]
    stale_io.release()
    stale_io.wait()  # it created snapshot-3 again and stands before looking
    assert mp.open_table(path).snapshot_manager.try_get(3).commitUser != t.snapshots()[-1].commitUser
    while_zombie()
    stale_io.release()
    stale.join()
    return errors


def test_a_commit_whose_base_expired_retries_though_a_zombie_holds_the_id(tmp_path):
    """The flake of test_four_append_writers_with_expiration_all_commit ('manifest ... is
    missing' from a write): a commit whose base (3) expired under it read a manifest list
    of 3 missing and asked whether 3 had expired; a stale committer had just created
    snapshot-3 again (a zombie), so the answer was no and the write raised
    CorruptMetadataError, as if the table were damaged. Now it retries."""
    path = str(tmp_path / "t")
    errors: list[tuple[str, BaseException]] = []
    io = Gates(LocalFileIO(), lambda m, p: m == "read_bytes" and "/manifest/manifest-list-" in p)
    writer: list[threading.Thread] = []

    def start_on_3() -> None:  # the writer reads 3 as its base, stands before its manifest lists
        writer.append(_actor("writer", lambda: mp.open_table(path, io=io).write(rows(200, 1)), errors))
        io.wait()

    def run_on() -> None:
        io.release()
        writer[0].join()

    errors += _with_zombie_at_3(path, start_on_3, run_on)
    assert errors == []
    t = mp.open_table(path)
    assert sorted_ids(t.to_arrow()) == [3, 4, 100, 200]
    assert [s.id for s in t.snapshots()] == [5, 6, 7]


def test_a_read_whose_snapshot_expired_says_so_though_a_zombie_holds_the_id(tmp_path):
    """A split of snapshot 3 whose files went with it reads as SnapshotExpiredError
    (re-plan), not as a damaged table, while a zombie holds id 3."""
    path = str(tmp_path / "t")
    splits: list = []

    def read() -> None:
        t = mp.open_table(path)
        with pytest.raises(mp.SnapshotExpiredError):
            for split in splits:
                list(t.read_split(split))

    assert _with_zombie_at_3(path, lambda: splits.extend(mp.open_table(path).scan(snapshot_id=3).plan()),
                             read) == []
