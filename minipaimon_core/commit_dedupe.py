"""Exactly-once commits: what a commit user already committed for an identifier.

A writer commits under a commit user with increasing identifiers; a retried or replayed
commit of an identifier must not land twice. The committer asks these before an attempt.
"""

from __future__ import annotations

from .format.snapshot import APPEND, COMPACT, OVERWRITE, Snapshot
from .snapshot_manager import SnapshotManager


def committed_kinds(snapshots: SnapshotManager, user: str, identifier: int) -> set[str]:
    """Kinds (APPEND, COMPACT, OVERWRITE) already committed for ``identifier`` by ``user``.

    Scans back from the latest snapshot to the newest snapshot of this user with a smaller
    identifier. Identifiers of one user must increase. A later identifier of this user means
    this one was committed too (all kinds).
    """
    kinds: set[str] = set()
    sid = snapshots.latest_id()
    while sid is not None and sid > 0:
        snap = snapshots.try_get(sid)  # None: expired, the retained range ends
        sid -= 1
        if snap is None:
            break
        if snap.commitUser != user:
            continue
        if snap.commitIdentifier > identifier:
            return {APPEND, COMPACT, OVERWRITE}
        if snap.commitIdentifier < identifier:
            break
        kinds.add(snap.commitKind)
    return kinds


def landed_since(snapshots: SnapshotManager, user: str, start: int | None, latest: Snapshot,
                 identifier: int, kind: str) -> bool:
    """Did an earlier attempt of ``user`` land after all (e.g. a hint or IO error after it)?"""
    for sid in range(latest.id, (start or 0), -1):
        snap = snapshots.try_get(sid)
        if snap and snap.commitUser == user and snap.commitIdentifier == identifier \
                and snap.commitKind == kind:
            return True
    return False


__all__ = ["committed_kinds", "landed_since"]
