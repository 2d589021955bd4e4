"""Rollback: make a retained snapshot (or a tag) the latest state of the table again.

Rolling back to snapshot T removes the snapshots after T, newest first, and the tags that
pin them (as Paimon does: their ids will be reused by the next commits), then the files no
longer referenced. Rolling back to a tag whose snapshot has expired restores the tag as
``snapshot-<id>`` first and removes every newer snapshot. The order (docs/format.md,
"Rollback order") keeps a crash harmless:

```
 1. plan      files used by the snapshots and tags to remove, minus files used by every
              snapshot kept (earliest..T) and every tag kept
 2. restore   (tag whose snapshot expired) write snapshot-<T> from the tag, where it is
              absent or an expiration tombstone
 3. snapshots delete snapshot-L, snapshot-L-1, ..., snapshot-(T+1): after each step the
              table is a valid older state, and running the rollback again finishes it
              (after a restore: then the tombstones between T and the old earliest, so
              the next commits can take those ids)
 4. hints     LATEST := T (and EARLIEST := T after a restore)
 5. tags      delete the tags of removed snapshots
 6. files     delete the planned files (a crash here leaks only orphans)
```

Rollback must not run while writers commit to the table. Consumers are left as they are:
a streaming reader past T waits for the new snapshot T+1, ...
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import InvalidArgumentError
from ..tags import TagManager
from .files import TableFiles


@dataclass(frozen=True)
class RollbackResult:
    """The outcome of a rollback: the new latest snapshot and what was removed."""

    snapshot_id: int
    snapshots: list[int] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    dry_run: bool = False  # nothing was removed: what would be


def rollback_to(files: TableFiles, snapshot_id: int | None = None, tag: str | None = None,
                dry_run: bool = False) -> RollbackResult:
    """Roll the table back to ``snapshot_id`` or to the snapshot of ``tag`` (exactly one).
    ``dry_run``: return what would be removed (step 1) and change nothing.

    Raises:
        InvalidArgumentError: neither or both given, or a tag newer than the latest snapshot.
        SnapshotExpiredError / SnapshotNotFoundError: no such snapshot or tag.
    """
    if (snapshot_id is None) == (tag is None):
        raise InvalidArgumentError("rollback_to needs exactly one of snapshot_id or tag")
    snapshots = files.snapshots
    earliest, latest = snapshots.earliest_id(), snapshots.latest_id()
    restore = False
    if tag is not None:
        target = TagManager(files.io, files.layout).get(tag)
        if earliest is None or latest is None or target.id < earliest:
            restore = True
        elif target.id > latest:
            raise InvalidArgumentError(
                f"tag {tag!r} pins snapshot {target.id}, newer than the latest snapshot {latest}"
            )
    else:
        assert snapshot_id is not None
        target = snapshots.get(snapshot_id)
    if restore:
        removing = [] if latest is None or earliest is None else list(range(latest, earliest - 1, -1))
    else:
        assert latest is not None
        removing = list(range(latest, target.id, -1))

    # 1. plan
    tags = files.tags()
    doomed_tags = sorted(n for n, s in tags.items() if s.id > target.id)
    drop = files.collector()
    for sid in removing:
        snap = snapshots.try_get(sid)
        if snap is not None:
            drop.add(snap)
    for name in doomed_tags:
        drop.add(tags[name])
    keep = files.collector()
    keep.add(target)
    if not restore and earliest is not None:
        for sid in range(earliest, target.id):
            snap = snapshots.try_get(sid)
            if snap is not None:
                keep.add(snap)
    for name, snap in tags.items():
        if name not in doomed_tags:
            keep.add(snap)
    doomed_files = sorted(drop.paths - keep.paths)
    if dry_run:
        return RollbackResult(target.id, removing, doomed_tags, doomed_files, dry_run=True)

    io, layout = files.io, files.layout
    # 2. restore an expired tag as a snapshot
    if restore:
        snapshots.restore(target)
    # 3. snapshots, newest first (after a restore, then the tombstones above it)
    for sid in removing:
        io.delete(layout.snapshot_path(sid))
    if restore:
        snapshots.drop_tombstones_above(target.id)
    # 4. hints
    snapshots.commit_latest_hint(target.id)
    if restore:
        snapshots.commit_earliest_hint(target.id)
    # 5. tags of removed snapshots
    for name in doomed_tags:
        io.delete(layout.tag_path(name))
    # 6. files
    for path in doomed_files:
        io.delete(path)
    return RollbackResult(target.id, removing, doomed_tags, doomed_files)

