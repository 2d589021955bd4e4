"""Exactly-once commits: what a commit user already committed for an identifier.

A writer commits under a commit user with increasing identifiers; a retried or replayed
commit of an identifier must not land twice. The committer asks these before an attempt.

The retained snapshots answer first. A commit user that may replay (a fixed user: a
streaming sink, a consumer hand-off, the two-phase API; not the fresh random user of
``Table.write``) marks its snapshots ``minipaimonReplayable``, and expiration records the
last identifier of each such user among the snapshots it expires *before* it deletes them
(:meth:`CommitRecords.record`): a hidden file ``snapshot/.committed/<sha1(user)>-<id>-<kind>``,
created durably (fsynced on a local disk) before the first snapshot file goes, the records
of lower identifiers of the user deleted after. So a replay finds its commit
however much history expired, and the cost is one small file per replayable user, written
only by expiration (a commit pays nothing).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..format.layout import TableLayout, user_key
from ..format.snapshot import APPEND, COMPACT, OVERWRITE, Snapshot
from ..io.fileio import FileIO
from ..metadata.snapshot_manager import SnapshotManager

ALL_KINDS = frozenset({APPEND, COMPACT, OVERWRITE})


class CommitRecords:
    """The records of expired commits of replayable commit users (module docstring)."""

    def __init__(self, io: FileIO, layout: TableLayout) -> None:
        self._io = io
        self._layout = layout

    def record(self, expiring: Sequence[Snapshot]) -> None:
        """Record the last identifier (and its kinds) of every replayable user of
        ``expiring``; call before those snapshots are deleted. Idempotent; concurrent
        expirers may each write theirs: the highest identifier of a user is what counts."""
        last: dict[str, tuple[int, set[str]]] = {}
        for snap in expiring:
            if not snap.minipaimonReplayable:
                continue
            ident, kinds = last.get(snap.commitUser, (snap.commitIdentifier, set()))
            if snap.commitIdentifier > ident:
                ident, kinds = snap.commitIdentifier, set()
            if snap.commitIdentifier == ident:
                kinds.add(snap.commitKind)
            last[snap.commitUser] = (ident, kinds)
        if not last:
            return
        for user, (ident, kinds) in last.items():
            for kind in sorted(kinds):
                # a durable create (the snapshots it stands for are deleted next); its name is
                # the record, so one already there (a concurrent expirer's) is the same record
                self._io.write_if_absent(self._layout.committed_record_path(user, ident, kind), user.encode())
        highest = {user_key(u): i for u, (i, _) in last.items()}
        for name in self._io.list_names(self._layout.committed_dir):  # superseded records
            parsed = TableLayout.committed_record_of(name)
            if parsed is not None and parsed[0] in highest and parsed[1] < highest[parsed[0]]:
                self._io.delete(self._layout.committed_file(name))

    def kinds(self, user: str, identifier: int) -> set[str]:
        """Kinds recorded for ``identifier`` of ``user`` (all if a later one is recorded)."""
        key = user_key(user)
        found: set[str] = set()
        for name in self._io.list_names(self._layout.committed_dir):
            parsed = TableLayout.committed_record_of(name)
            if parsed is None or parsed[0] != key:
                continue
            if parsed[1] > identifier:
                return set(ALL_KINDS)
            if parsed[1] == identifier:
                found.add(parsed[2])
        return found


def committed_kinds(snapshots: SnapshotManager, records: CommitRecords, user: str, identifier: int) -> set[str]:
    """Kinds (APPEND, COMPACT, OVERWRITE) already committed for ``identifier`` by ``user``.

    Scans back from the latest snapshot to the newest snapshot of this user with a smaller
    identifier; where the retained snapshots end first, the records of expired commits
    answer (read after the scan: expiration records before it deletes). Identifiers of one
    user must increase. A later identifier of this user means this one was committed too
    (all kinds).
    """
    kinds: set[str] = set()
    sid = snapshots.latest_id()
    while sid is not None and sid > 0:
        snap = snapshots.try_get(sid)  # None: expired, the retained range ends
        sid -= 1
        if snap is None:
            return kinds | records.kinds(user, identifier)
        if snap.commitUser != user:
            continue
        if snap.commitIdentifier > identifier:
            return set(ALL_KINDS)
        if snap.commitIdentifier < identifier:
            break
        kinds.add(snap.commitKind)
    return kinds


__all__ = ["ALL_KINDS", "CommitRecords", "committed_kinds"]
