"""Expiring many snapshots at once (issue 40, "Small files"): the markers of one expiration
are created concurrently and all of them are durable before its first snapshot file is
deleted (minipaimon_core.metadata.snapshot_manager, maintenance.expire step 2); each group
of unreferenced files is deleted concurrently (step 7).

What must hold whatever the batching: every id whose snapshot file is gone is marked with
the snapshot committed under it, so a committer in doubt about any of them is answered
LANDED (SnapshotManager.attempt_outcome), and a crash at any IO call leaves the table
readable, before or after the expiration.
"""

from __future__ import annotations

import contextlib
import shutil
import threading

import pytest

import minipaimon_core as mp
from minipaimon_core.format.snapshot import Snapshot
from minipaimon_core.io.fileio import FileIO, LocalFileIO
from minipaimon_core.maintenance import TableFiles
from minipaimon_core.metadata.snapshot_manager import Outcome, expiry_mark
from tests.helpers import SCHEMA, rows, sorted_ids
from tests.test_crash import IO_CALLS, InjectedFault
from tests.test_expire import disk_files, reachable, remove_all_orphans

KEEP_ALL = {"snapshot.num-retained.max": "1000"}  # the tests expire, not the writes
SNAPSHOTS = 12


def _table(path: str) -> tuple[mp.Table, dict[int, list[int]]]:
    """A table of SNAPSHOTS single commits, and the ids each snapshot reads."""
    t = mp.create_table(path, SCHEMA, options=KEEP_ALL)
    for k in range(SNAPSHOTS):
        t.write(rows(k * 10, 2))
    return t, {s.id: sorted_ids(t.scan(snapshot_id=s.id).to_arrow()) for s in t.snapshots()}


def _is_marker(path: str) -> bool:
    return path.endswith(".expired")


def _is_snapshot(path: str) -> bool:
    return path.rsplit("/", 1)[-1].startswith("snapshot-")


class Recording:
    """Wraps a FileIO and records, in order, each marker create as it starts and ends, each
    commit record create and replace, and each snapshot file delete. The first ``meet``
    marker creates wait for each other before they go on (for at most ``MEETING_S``): the
    creates of one expiration must be in flight together, else the first one's wait breaks
    (threading.BrokenBarrierError) and so does the expiration."""

    MEETING_S = 30.0

    def __init__(self, inner: FileIO, meet: int = 2) -> None:
        self.inner = inner
        self.events: list[tuple[str, str]] = []
        self.in_flight = self.most_in_flight = 0
        self._lock = threading.Lock()
        self._meeting = threading.Barrier(meet, timeout=self.MEETING_S)
        self._arrived = 0

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def replace(self, path, data):
        if "/.committed/" in path:
            with self._lock:
                self.events.append(("record replaced", path))
        return self.inner.replace(path, data)

    def write_if_absent(self, path, data):
        if "/.committed/" in path:
            with self._lock:
                self.events.append(("record", path))
        if not _is_marker(path):
            return self.inner.write_if_absent(path, data)
        with self._lock:
            self.events.append(("mark", path))
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
            meets = self._arrived < self._meeting.parties
            self._arrived += 1
        try:
            if meets:
                self._meeting.wait()
            return self.inner.write_if_absent(path, data)
        finally:
            with self._lock:
                self.in_flight -= 1
                self.events.append(("marked", path))

    def delete(self, path):
        if _is_snapshot(path):
            with self._lock:
                self.events.append(("delete", path))
        return self.inner.delete(path)


def test_the_markers_of_an_expiration_are_created_at_once_and_all_before_a_snapshot_goes(storage):
    """Before: one marker created (and fsynced, or PUT) after the other, 2 fsyncs each on
    a local disk: under load ~14 ms wall a snapshot for 1.6 ms CPU. Now they overlap, and
    still every marker create has ended before the first snapshot file is deleted."""
    path = storage.path("t")
    t, _ = _table(path)
    writer = t.new_write("job")  # a replayable commit user: expiration records its last commit
    writer.write(rows(999, 1))
    t.new_commit("job").commit(writer.prepare_commit(), 7)
    t.write(rows(1000, 1))
    originals = t.snapshots()[:-1]
    recording = Recording(t.io)
    expired = mp.open_table(path, io=recording).expire_snapshots(retain_max=1).snapshots
    assert expired == [s.id for s in originals]
    assert recording.most_in_flight > 1  # one after the other before
    kinds = [kind for kind, _ in recording.events]
    assert kinds.count("marked") == kinds.count("delete") == len(originals)
    last_marked = max(i for i, kind in enumerate(kinds) if kind == "marked")
    first_delete = kinds.index("delete")
    assert last_marked < first_delete, recording.events
    # the commit record is a durable create (not a replace), made before a snapshot goes
    assert kinds.count("record") == 1 and "record replaced" not in kinds, recording.events
    assert kinds.index("record") < first_delete
    assert mp.open_table(path).new_commit("job").is_committed(7)
    _check_every_id_landed(mp.open_table(path), originals, "after")


class FaultAtCall:
    """Wraps a FileIO and raises ``InjectedFault`` at its ``at``-th IO call (1-based, 0:
    never), counted under a lock (the calls of a batch come from several threads), before
    the call or once it ran (``after``: its answer lost)."""

    def __init__(self, inner: FileIO, at: int = 0, after: bool = False) -> None:
        self.inner, self.at, self.after = inner, at, after
        self.calls = 0
        self._lock = threading.Lock()

    def __getattr__(self, name):
        attr = getattr(self.inner, name)
        if name not in IO_CALLS:
            return attr

        def call(*args, **kwargs):
            with self._lock:
                self.calls += 1
                hit = self.calls == self.at
            if hit and not self.after:
                raise InjectedFault(f"before call {self.at}: {name} {args[0] if args else ''}")
            result = attr(*args, **kwargs)
            if hit:
                raise InjectedFault(f"after call {self.at}: {name} {args[0] if args else ''}")
            return result
        return call


def _check_every_id_landed(t: mp.Table, originals: list[Snapshot], where: object) -> None:
    """Each original snapshot is still there, or its file is gone and its id marked with
    it; either way a committer asking about it hears LANDED."""
    files = TableFiles.of(t)
    for snap in originals:
        marker = t.layout.expired_marker_path(snap.id)
        if files.snapshots.try_get(snap.id) is None:
            assert t.io.read_bytes(marker) == expiry_mark(snap), (where, snap.id)
        assert files.snapshots.attempt_outcome(snap) is Outcome.LANDED, (where, snap.id)


@pytest.mark.parametrize("after", [False, True], ids=["error", "lost-answer"])
def test_a_fault_at_any_io_call_of_a_batched_expiration_leaves_every_deleted_id_marked(tmp_path, after):
    """A fault at each IO call in turn of an expiration of 11 snapshots (its marker creates
    run concurrently): whatever it interrupts, every snapshot file deleted has its id
    marked with that snapshot (a fault in the markers deletes nothing), a committer in
    doubt about any of them hears LANDED, every retained snapshot reads in full, and the
    next expiration finishes and leaves no file but the reachable ones."""
    base, expected = _table(str(tmp_path / "base"))
    originals = base.snapshots()[:-1]
    counting = FaultAtCall(LocalFileIO())
    shutil.copytree(base.path, str(tmp_path / "count"))
    mp.open_table(str(tmp_path / "count"), io=counting).expire_snapshots(retain_max=1)
    n = counting.calls
    assert n > 3 * len(originals)
    for k in range(1, n + 1):
        path = str(tmp_path / f"t{k}")
        shutil.copytree(base.path, path)
        with contextlib.suppress(InjectedFault, mp.StorageError):  # some are best effort (hints)
            mp.open_table(path, io=FaultAtCall(LocalFileIO(), k, after)).expire_snapshots(retain_max=1)
        t = mp.open_table(path)
        _check_every_id_landed(t, originals, k)
        for s in t.snapshots():
            assert sorted_ids(t.scan(snapshot_id=s.id).to_arrow()) == expected[s.id], (k, s.id)
        left = [s.id for s in t.snapshots()][:-1]
        assert t.expire_snapshots(retain_max=1).snapshots == left, k
        _check_every_id_landed(t, originals, k)
        remove_all_orphans(t)
        assert disk_files(t) == reachable(t), k
        shutil.rmtree(path)
