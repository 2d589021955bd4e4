"""Rollback: make a retained snapshot (or a tag) the latest state of the table again.

Rolling back to snapshot T removes the snapshots after T, newest first, and the tags that
pin them (as Paimon does: their ids will be reused by the next commits), then the files no
longer referenced. Rolling back to a tag whose snapshot has expired restores the tag as
``snapshot-<id>`` first and removes every newer snapshot. The order (docs/format.md,
"Rollback order") keeps a crash harmless:

```
 1. plan      files used by the snapshots and tags to remove, minus files used by every
              snapshot kept (earliest..T), every tag kept and every other line of the
              table (its branches; main, rolling back a branch: maintenance.lines); a snapshot or tag to remove
              whose metadata cannot be read (damaged, or naming paths outside the table)
              is removed without deleting any file of it (orphan cleanup collects them)
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

Long-lived changelogs after the target (a restored tag older than them) are deleted with
their files, as Paimon's ``RollbackHelper`` does; those before it are kept, files included.
Rollback must not run while writers commit to the table. Consumers are left as they are:
a streaming reader past T waits for the new snapshot T+1, ...
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

from ..errors import CorruptMetadataError, InvalidArgumentError
from ..metadata.changelog_manager import ChangelogManager
from ..metadata.tags import TagManager
from .files import TableFiles
from .lines import used_by_other_lines


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
        CorruptMetadataError: the metadata of the target, of a snapshot or tag kept, or a
            tag file is damaged (nothing is changed then).
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
    # A snapshot or tag to remove whose metadata cannot be read adds no file: what only it
    # used is left to orphan cleanup (which deletes only files it lists inside the table),
    # so a damaged or hostile snapshot can be rolled back.
    for sid in removing:
        with contextlib.suppress(CorruptMetadataError):
            snap = snapshots.try_get(sid)
            if snap is not None:
                drop.add(snap)
    for name in doomed_tags:
        with contextlib.suppress(CorruptMetadataError):
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
    changelogs = ChangelogManager(files.io, files.layout)
    doomed_changelogs = []  # long-lived changelogs after the target: their history is gone
    for cid in changelogs.ids():
        changelog = changelogs.try_get(cid)
        if changelog is None:
            continue
        if cid > target.id:
            doomed_changelogs.append(cid)
            drop.add_changelog(changelog)
        else:
            keep.add_changelog(changelog)
    doomed_files = sorted(drop.paths - keep.paths - used_by_other_lines(files))
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
    for cid in sorted(doomed_changelogs, reverse=True):
        changelogs.delete(cid)
    if doomed_changelogs and changelogs.latest_id() is not None:
        changelogs.commit_latest_hint(changelogs.latest_id() or 0)
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

