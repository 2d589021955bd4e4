"""Finding snapshots: latest, earliest, by id, by time.

The LATEST and EARLIEST files are hints. A hint is used only after checking it against the
files present (the hinted snapshot exists and its neighbour does not); otherwise the
snapshot directory is listed. The snapshot files present are one contiguous range of ids.

Expiration marks each id it expires with a hidden marker (``snapshot/.snapshot-<id>.expired``,
which Paimon's readers, listing ``snapshot-*``, never see) *before* it deletes the snapshot
file, and deletes the marker ``TOMBSTONE_RETAINED_MS`` later. The markers of one expiration
are created concurrently, and all of them are durable before its first snapshot file is
deleted (:meth:`SnapshotManager.mark_expiring`): whatever a crash interrupts, every id
whose file is gone is marked. One marker an id, at a name computed from the id, so a
committer finds its id's with one read (never a listing). The marker is created if
absent and names the snapshot expired under the id (its delta manifest list, unique to one
commit attempt), so the first snapshot of an id stays the one it names. A committer whose
snapshot file is (or was) under a marked id asks :meth:`SnapshotManager.attempt_outcome`:
the marker names its own snapshot (it landed, was built on and expired since: a commit), or
another one (it landed below the latest in an id expired before: it deletes that file again
and retries).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from enum import Enum

from ..errors import CorruptMetadataError, SnapshotExpiredError, SnapshotNotFoundError
from ..format import legacy
from ..format import snapshot as snapshot_codec
from ..format.layout import TableLayout
from ..format.snapshot import Snapshot
from ..io import pools
from ..io.fileio import FileIO

# How long an expired id stays marked. A commit attempt older than this at its create could
# recreate the id unnoticed (commit.py bounds attempts far below it).
TOMBSTONE_RETAINED_MS = 60 * 60 * 1000
LEGACY_TOMBSTONE = b"expired\n"  # what the earlier format left in an expired snapshot's file


class Outcome(Enum):
    """What became of a commit attempt's snapshot (:meth:`SnapshotManager.attempt_outcome`)."""

    LANDED = "landed"
    ZOMBIE = "zombie"
    LOST = "lost"


def expiry_mark(snap: Snapshot) -> bytes:
    """The content of the marker of ``snap``'s id once ``snap`` expired: its delta manifest
    list's name, unique to the commit attempt that made it. Markers of the earlier format
    are empty (they name no snapshot)."""
    return f"{snap.deltaManifestList}\n".encode()


def decode_snapshot(data: bytes, path: str) -> Snapshot:
    """A snapshot or tag file of either format. Raises CorruptMetadataError."""
    return legacy.decode_snapshot(data, path) if legacy.is_json(data) else snapshot_codec.decode(data, path)


class SnapshotManager:
    def __init__(self, io: FileIO, layout: TableLayout) -> None:
        self._io = io
        self._layout = layout

    def _exists(self, snapshot_id: int) -> bool:
        return self._io.exists(self._layout.snapshot_path(snapshot_id))

    def _present(self, snapshot_id: int) -> bool:
        """Is ``snapshot_id`` a retained snapshot (its file there, not a legacy tombstone)?"""
        try:
            return self._io.read_bytes(self._layout.snapshot_path(snapshot_id)) != LEGACY_TOMBSTONE
        except FileNotFoundError:
            return False

    def _read_hint(self, path: str) -> int | None:
        try:
            text = self._io.read_bytes(path).decode().strip()
        except (FileNotFoundError, UnicodeDecodeError):
            return None
        return int(text) if text.isdigit() else None

    def _listed_ids(self) -> list[int]:
        ids = (TableLayout.snapshot_id_of(n) for n in self._io.list_names(self._layout.snapshot_dir))
        return sorted(i for i in ids if i is not None)

    def latest_id(self) -> int | None:
        """Id of the newest snapshot, or None for an empty table."""
        hint = self._read_hint(self._layout.latest_hint)
        if hint is not None and self._exists(hint):
            while self._exists(hint + 1):  # the hint lags after a crash; walk forward
                hint += 1
            return hint
        ids = self._listed_ids()
        return ids[-1] if ids else None

    def earliest_id(self) -> int | None:
        """Id of the oldest retained snapshot, or None for an empty table."""
        hint = self._read_hint(self._layout.earliest_hint)
        if hint is not None and self._present(hint) and not self._present(hint - 1):
            return hint
        ids = self._listed_ids()
        lo, hi = 0, len(ids)  # legacy tombstones are a prefix of the ids: find the first snapshot
        while lo < hi:
            mid = (lo + hi) // 2
            if self._present(ids[mid]):
                hi = mid
            else:
                lo = mid + 1
        return ids[lo] if lo < len(ids) else None

    def try_get(self, snapshot_id: int) -> Snapshot | None:
        """Snapshot ``snapshot_id``, or None if its file does not exist or is a tombstone.

        Raises CorruptMetadataError for a damaged file, or one whose content is another
        snapshot (a valid copy saved under the wrong name). Tags are copies by design and
        are read elsewhere, so only snapshot files are held to their name.
        """
        path = self._layout.snapshot_path(snapshot_id)
        try:
            data = self._io.read_bytes(path)
        except FileNotFoundError:
            return None
        if data == LEGACY_TOMBSTONE:
            return None
        snap = decode_snapshot(data, path)
        if snap.id != snapshot_id:
            raise CorruptMetadataError(
                f"{path}: holds snapshot {snap.id}, not {snapshot_id} (a snapshot file copied "
                "or renamed by hand); restore the right file or roll back to an older snapshot"
            )
        return snap

    def retained(self, snapshot_id: int) -> Snapshot | None:
        """Snapshot ``snapshot_id`` if the id still holds a retained snapshot, else None.

        Unlike :meth:`try_get` it also reads the id's expiry marker: a file under an id
        marked for another snapshot is a *zombie*, a stalled committer's create in an id
        expired before (below the latest; it deletes the file again once it looks), never
        what a reader planned or a committer built on. For telling an expiration from damage
        once a read failed: one more read than try_get.
        """
        snap = self.try_get(snapshot_id)
        if snap is None:
            return None
        marker = self._read_marker(snapshot_id)
        return snap if marker is None or marker == expiry_mark(snap) else None

    def has_expired(self, snap: Snapshot) -> bool:
        """Whether ``snap`` (read earlier) is no longer the snapshot retained under its id:
        expired, or its id holds another (a zombie, see :meth:`retained`; a commit after a
        rollback)."""
        now = self.retained(snap.id)
        return now is None or now.deltaManifestList != snap.deltaManifestList

    def get(self, snapshot_id: int) -> Snapshot:
        """Snapshot ``snapshot_id``.

        Raises:
            SnapshotExpiredError: it is older than the earliest retained snapshot.
            SnapshotNotFoundError: it does not exist (yet).
        """
        snap = self.try_get(snapshot_id)
        if snap is not None:
            return snap
        earliest = self.earliest_id()
        if earliest is not None and snapshot_id < earliest:
            raise SnapshotExpiredError(
                f"snapshot {snapshot_id} of {self._layout.where} has expired "
                f"(earliest retained: {earliest}); raise 'snapshot.num-retained.min' / "
                "'snapshot.time-retained' or use a consumer-id or tag to keep snapshots"
            )
        raise SnapshotNotFoundError(f"snapshot {snapshot_id} does not exist in {self._layout.where}")

    def latest(self) -> Snapshot | None:
        """The newest snapshot (retrying if expiration races with us), or None."""
        for _ in range(10):
            latest = self.latest_id()
            if latest is None:
                return None
            snap = self.try_get(latest)
            if snap is not None:
                return snap
        raise SnapshotNotFoundError(f"cannot read the latest snapshot of {self._layout.where}")

    def earlier_or_equal_time(self, time_ms: int) -> Snapshot | None:
        """The newest snapshot committed at or before ``time_ms``."""
        lo, hi = self.earliest_id(), self.latest_id()
        if lo is None or hi is None:
            return None
        return newest_at_or_before(range(lo, hi + 1), self.try_get, time_ms)

    def snapshots(self) -> Iterator[Snapshot]:
        """Every retained snapshot, oldest first."""
        lo, hi = self.earliest_id(), self.latest_id()
        if lo is None or hi is None:
            return
        for i in range(lo, hi + 1):
            snap = self.try_get(i)
            if snap is not None:
                yield snap

    def commit_latest_hint(self, snapshot_id: int) -> None:
        """Best-effort LATEST hint update; a failure is harmless (readers verify hints)."""
        with contextlib.suppress(OSError):
            self._io.replace(self._layout.latest_hint, str(snapshot_id).encode())

    def mark_expiring(self, snaps: Sequence[Snapshot]) -> None:
        """Mark the ids of ``snaps`` as expired, before any of their files is deleted (an
        existing marker stays: it names the snapshot that was committed under the id). A
        reader's pin of a marked id is refused (:meth:`keeps_pin`).

        The markers are created concurrently (:func:`~..io.pools.run_all`), each durable
        when its create returns (local disk: file and directory fsynced, the concurrent
        fsyncs committed together by the journal; object store: the PUT answered), and this
        returns only once all have: the caller deletes nothing before. A failure raises once
        every create ended, leaving some ids marked and every snapshot file in place."""
        def mark(snap: Snapshot) -> None:
            self._io.write_if_absent(self._layout.expired_marker_path(snap.id), expiry_mark(snap))

        pools.run_all(mark, snaps)

    def delete_expired(self, snap: Snapshot) -> None:
        """Delete the file of ``snap``, whose id :meth:`mark_expiring` marked."""
        self._io.delete(self._layout.snapshot_path(snap.id))

    def keeps_pin(self, snapshot_id: int) -> bool:
        """Whether a consumer that has just written ``snapshot_id`` as its next snapshot
        holds it: the id is beyond the latest snapshot, or its snapshot is there and no
        expiration has marked it. Expiration marks the ids it deletes before it reads the
        consumers again (docs/format.md, "Expiration order"): either this sees the mark, or
        that read sees the consumer. Call it after the consumer file is written."""
        latest = self.latest_id()
        if latest is None or snapshot_id > latest:
            return True  # expiration never reaches past the latest snapshot
        return self._read_marker(snapshot_id) is None and self._present(snapshot_id)

    def attempt_outcome(self, attempt: Snapshot, created: bool = False) -> Outcome:
        """Whether ``attempt``, a snapshot a committer tried to create (whatever that call
        answered), is committed. Looks only; the caller acts on the answer:

        * LANDED: its file is there under an unmarked id, or its id is marked naming it
          (committed, then built on and expired);
        * ZOMBIE: its file is there under an id whose marker names another snapshot: it
          was created below the latest in an id expired before (the caller deletes it);
        * LOST: neither (another snapshot holds the id, or the create never happened).

        The marker is read before the snapshot file and again after an absent one: an
        expiration marks an id before it deletes the file. ``created``: the create call
        answered True (our file is there), so no marker means LANDED. Raises OSError (StorageError)
        when the store does not answer: the outcome is then unknown.
        """
        mark = expiry_mark(attempt)
        marker = self._read_marker(attempt.id)
        if marker is not None and marker != mark:
            return Outcome.ZOMBIE if self._is_ours(attempt) else Outcome.LOST
        if marker is not None or created:  # ``created``: the create call answered True
            return Outcome.LANDED
        if self._is_ours(attempt):
            return Outcome.LANDED
        return Outcome.LANDED if self._read_marker(attempt.id) == mark else Outcome.LOST

    def settle(self, attempt: Snapshot, created: bool = False) -> bool:
        """Whether ``attempt`` is committed (:meth:`attempt_outcome`), deleting its file
        again if it was created below the latest in an expired id. Raises OSError
        (StorageError) when the store does not answer."""
        outcome = self.attempt_outcome(attempt, created)
        if outcome is Outcome.ZOMBIE:
            self._io.delete(self._layout.snapshot_path(attempt.id))
        return outcome is Outcome.LANDED

    def _read_marker(self, snapshot_id: int) -> bytes | None:
        try:
            return self._io.read_bytes(self._layout.expired_marker_path(snapshot_id))
        except FileNotFoundError:
            return None

    def _is_ours(self, attempt: Snapshot) -> bool:
        try:
            data = self._io.read_bytes(self._layout.snapshot_path(attempt.id))
        except FileNotFoundError:
            return False
        return data == snapshot_codec.encode(attempt)

    def _marked_ids(self) -> list[tuple[int, int]]:
        """(id, marker written at ms) of every expiry marker."""
        out = []
        for status in self._io.list_files(self._layout.snapshot_dir):
            sid = TableLayout.expired_id_of(status.name)
            if sid is not None:
                out.append((sid, status.modified_ms))
        return out

    def drop_tombstones(self, below: int, older_than_ms: int) -> list[int]:
        """Delete the expiry markers (and legacy tombstones) of ids below ``below`` written
        before ``older_than_ms``."""
        dropped = []
        for marked, written in self._marked_ids():
            if marked < below and written < older_than_ms:
                self._io.delete(self._layout.expired_marker_path(marked))
                dropped.append(marked)
        for status in self._io.list_files(self._layout.snapshot_dir):
            sid = TableLayout.snapshot_id_of(status.name)
            if (sid is not None and sid < below and status.modified_ms < older_than_ms
                    and status.size == len(LEGACY_TOMBSTONE) and not self._present(sid)
                    and self._io.delete(self._layout.snapshot_path(sid))):
                dropped.append(sid)
        return sorted(dropped)

    def drop_tombstones_above(self, snapshot_id: int) -> None:
        """Delete the expiry markers (and legacy tombstones) of ids above ``snapshot_id``,
        newest first (a rollback that restored ``snapshot_id`` hands those ids to the next
        commits)."""
        for sid, _ in sorted(self._marked_ids(), reverse=True):
            if sid > snapshot_id:
                self._io.delete(self._layout.expired_marker_path(sid))
        for sid in sorted((i for i in self._listed_ids() if i > snapshot_id), reverse=True):
            if not self._present(sid):
                self._io.delete(self._layout.snapshot_path(sid))

    def restore(self, snapshot: Snapshot) -> None:
        """Write ``snapshot`` (e.g. from a tag) into its id, which must be absent (the id
        expired)."""
        if self._present(snapshot.id):
            return
        self._io.delete(self._layout.expired_marker_path(snapshot.id))
        self._io.replace(self._layout.snapshot_path(snapshot.id), snapshot_codec.encode(snapshot))

    def commit_earliest_hint(self, snapshot_id: int) -> None:
        with contextlib.suppress(OSError):
            self._io.replace(self._layout.earliest_hint, str(snapshot_id).encode())


def newest_at_or_before(ids: Sequence[int], read: Callable[[int], Snapshot | None],
                        time_ms: int) -> Snapshot | None:
    """The newest of the snapshots ``ids`` (ascending, so their commit times are too) whose
    commit time is at or before ``time_ms``, by binary search; ``read(id)`` gives a
    snapshot or None when it expired under us (then the search goes above it)."""
    lo, hi = 0, len(ids) - 1
    found: Snapshot | None = None
    while lo <= hi:
        mid = (lo + hi) // 2
        snap = read(ids[mid])
        if snap is None:
            lo = mid + 1
            continue
        if snap.timeMillis <= time_ms:
            found, lo = snap, mid + 1
        else:
            hi = mid - 1
    return found
