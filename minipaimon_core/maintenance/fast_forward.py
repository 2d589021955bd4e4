"""Fast-forward: make one line of a table (main, usually) what a branch is, as Apache
Paimon 0.9's ``BranchManager.fastForward``.

With E the branch's earliest snapshot and S that snapshot's schema: the line's snapshots,
tags and long-lived changelogs from E on, and its schemas from S on, are replaced by the
branch's. No data file is deleted (what only the line's removed snapshots used is left to
orphan cleanup, which keeps what any line uses); the branch stays. The order keeps every
intermediate state a valid one of the line's or the branch's history, and running it again
finishes it (it must not run while writers commit to the line):

```
 1. snapshots  delete the line's snapshots >= E, newest first (each step: an older state of
               the line, as a rollback), then its expiry markers of ids >= E
 2. tags       delete the line's tags of snapshots >= E, and its long-lived changelogs >= E
 3. schemas    delete the line's schemas >= S that the branch does not hold byte for byte,
               newest first; copy the branch's schemas it lacks
 4. copy       the branch's snapshots E.., oldest first (each step: a state of the branch),
               then its tags
 5. hints      LATEST (and EARLIEST where the line kept no older snapshot)
```

Paimon 0.9 leaves the changelogs and deletes every schema >= S before copying the
branch's (the same files in the end); a branch without snapshots is refused, as later
Paimon versions refuse it (0.9 fails on it).
"""

from __future__ import annotations

from ..errors import InvalidArgumentError
from ..format.layout import TableLayout
from ..io.fileio import FileIO
from ..metadata.branches import BranchManager
from ..metadata.changelog_manager import ChangelogManager
from ..metadata.snapshot_manager import SnapshotManager
from ..metadata.tags import TagManager
from ..schema.schema import SchemaManager


def fast_forward(io: FileIO, layout: TableLayout, branch: str) -> None:
    """Make the line of ``layout`` branch ``branch`` (see the module docs).

    Raises BranchNotFoundError, InvalidArgumentError (``branch`` is the line itself, or has
    no snapshot), CorruptMetadataError (damaged metadata of the branch; nothing changed).
    """
    if branch == layout.branch:
        raise InvalidArgumentError(f"cannot fast-forward branch {branch!r} to itself")
    source = BranchManager(io, layout).layout_of(branch)
    src_snaps, dst_snaps = SnapshotManager(io, source), SnapshotManager(io, layout)
    first, last = src_snaps.earliest_id(), src_snaps.latest_id()
    if first is None or last is None:
        raise InvalidArgumentError(
            f"branch {branch!r} has no snapshot to fast-forward to: write into it first")
    start = src_snaps.get(first)
    src_schemas, dst_schemas = SchemaManager(io, source), SchemaManager(io, layout)
    schema_files = {sid: src_schemas.file_bytes(sid)[1] for sid in src_schemas.schema_ids()}
    tags = TagManager(io, layout).snapshots()  # read all first: damaged metadata fails here
    src_tags = TagManager(io, source).names()

    # 1. snapshots (and expiry markers) of the line from E on, newest first
    for sid in sorted((i for i in _listed_snapshots(io, layout) if i >= first), reverse=True):
        io.delete(layout.snapshot_path(sid))
    dst_snaps.drop_tombstones_above(first - 1)
    # 2. tags and long-lived changelogs from E on
    for name, snap in tags.items():
        if snap.id >= first:
            io.delete(layout.tag_path(name))
    changelogs = ChangelogManager(io, layout)
    for cid in sorted((c for c in changelogs.ids() if c >= first), reverse=True):
        changelogs.delete(cid)
    # 3. schemas from S on
    for sid in sorted((i for i in dst_schemas.schema_ids() if i >= start.schemaId), reverse=True):
        if schema_files.get(sid) != io.read_bytes(layout.schema_path(sid)):
            io.delete(layout.schema_path(sid))
    for sid, data in sorted(schema_files.items()):
        io.write_if_absent(layout.schema_path(sid), data)
    # 4. the branch's snapshots, oldest first, then its tags
    for sid in range(first, last + 1):
        try:
            data = io.read_bytes(source.snapshot_path(sid))
        except FileNotFoundError:
            continue  # expired by the branch meanwhile
        io.replace(layout.snapshot_path(sid), data)
    for name in src_tags:
        try:
            io.replace(layout.tag_path(name), io.read_bytes(source.tag_path(name)))
        except FileNotFoundError:
            continue  # deleted meanwhile
    # 5. hints
    dst_snaps.commit_latest_hint(last)
    if dst_snaps.earliest_id() == first:
        dst_snaps.commit_earliest_hint(first)


def _listed_snapshots(io: FileIO, layout: TableLayout) -> list[int]:
    ids = (TableLayout.snapshot_id_of(n) for n in io.list_names(layout.snapshot_dir))
    return sorted(i for i in ids if i is not None)


__all__ = ["fast_forward"]
