"""Snapshot expiration: drop old snapshots, then the files nothing retained references.

Which snapshots go (as Paimon): with L the latest and E the earliest id,

* ids below ``L - retain_max + 1`` are expired whatever their age;
* ids up to ``L - retain_min`` are expired while they are older than ``older_than_ms``
  (default: now - ``snapshot.time-retained``), stopping at the first newer one;
* never the snapshot a live consumer reads next, nor anything after it.

Expiring ``[E, end)`` runs in this order (docs/format.md, "Expiration order"):

```
 1. plan      read snapshots E..end and their deltas: files DELETEd in (E, end] (minus
              files ADDed again later in the range), changelogs and manifests of E..end-1
 2. snapshots replace snapshot-E, snapshot-E+1, ... oldest first by a tombstone (a reader
              of an expired id now gets SnapshotExpiredError; the id stays taken, so a
              commit still based on E-1.. cannot create it again), EARLIEST := end; delete
              tombstones older than TOMBSTONE_RETAINED_MS (1 h)
 3. tags      read the tags now, so a tag created before step 2 is seen
 4. files     delete data files, changelog files, then manifests and manifest lists, then
              index manifests and deletion-vector index files, keeping every file of
              snapshot ``end`` and of every tag
```

A crash after step 2 only leaks unreferenced files, which orphan cleanup removes. Several
expirers may run at once (each write expires): deletes are idempotent, and an expirer that
finds its range already gone stops. Known race (as in Paimon): a tag created on a snapshot
while that very snapshot is being expired may lose files, so tag snapshots well inside the
retention window.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from ..consumer import ConsumerManager
from ..context import HasContext
from ..errors import (
    CorruptMetadataError,
    InvalidArgumentError,
    SnapshotExpiredError,
    SnapshotNotFoundError,
)
from ..format.manifest_file import ADD
from ..format.snapshot import Snapshot
from ..options import Options
from ..snapshot_manager import TOMBSTONE_RETAINED_MS
from .files import TableFiles


@dataclass(frozen=True)
class ExpireResult:
    """What one expiration removed (paths are absolute, as the layout builds them)."""

    snapshots: list[int] = field(default_factory=list)
    data_files: list[str] = field(default_factory=list)
    changelog_files: list[str] = field(default_factory=list)
    manifests: list[str] = field(default_factory=list)
    consumers: list[str] = field(default_factory=list)
    index_files: list[str] = field(default_factory=list)  # index manifests, index files
    dry_run: bool = False  # nothing was removed: what would be

    @property
    def files(self) -> list[str]:
        return [*self.data_files, *self.changelog_files, *self.manifests, *self.index_files]


def expire_snapshots(
    files: TableFiles,
    retain_max: int | None = None,
    retain_min: int | None = None,
    older_than_ms: int | None = None,
    now_ms: int | None = None,
    dry_run: bool = False,
) -> ExpireResult:
    """Expire snapshots by the retention arguments (each defaults to its table option).

    ``older_than_ms`` is an epoch-millisecond time: snapshots committed before it may go.
    Consumers idle for ``consumer.expiration-time`` are expired first. ``dry_run``: return
    what would be removed (the same plan) and change nothing.

    Raises:
        InvalidArgumentError: ``retain_min`` < 1 or ``retain_max`` < ``retain_min``.
    """
    opts = Options(files.schema.options)
    now = int(time.time() * 1000) if now_ms is None else now_ms
    rmax = opts["snapshot.num-retained.max"] if retain_max is None else retain_max
    rmin = retain_min
    if rmin is None:  # an explicit retain_max below the option's minimum wins
        rmin = opts["snapshot.num-retained.min"]
        rmin = min(rmin, rmax) if retain_max is not None else rmin
    if rmin < 1:
        raise InvalidArgumentError(f"retain_min must be >= 1 (the latest snapshot stays), got {rmin}")
    if rmax < rmin:
        raise InvalidArgumentError(f"retain_max ({rmax}) must be >= retain_min ({rmin})")
    older_than = now - opts["snapshot.time-retained"] if older_than_ms is None else older_than_ms
    consumers = ConsumerManager(files.io, files.layout)
    gone_consumers = consumers.expire_by_options(opts["consumer.expiration-time"], now, dry_run)
    earliest, latest = files.snapshots.earliest_id(), files.snapshots.latest_id()
    if earliest is None or latest is None:
        return ExpireResult(consumers=gone_consumers, dry_run=dry_run)
    consumer_next = min((n for c, n in consumers.consumers().items() if c not in gone_consumers),
                        default=None)
    end = expire_until(files, earliest, latest, rmin, rmax, older_than, consumer_next)
    if end <= earliest:
        return ExpireResult(consumers=gone_consumers, dry_run=dry_run)
    result = expire_range(files, earliest, end, now, dry_run)
    return ExpireResult(result.snapshots, result.data_files, result.changelog_files,
                        result.manifests, gone_consumers, result.index_files, dry_run)


def expire_until(files: TableFiles, earliest: int, latest: int, retain_min: int, retain_max: int,
                 older_than_ms: int, consumer_next: int | None) -> int:
    """The first snapshot id to keep: everything in [earliest, result) is to expire."""
    must_keep_from = latest - retain_min + 1
    if consumer_next is not None:
        must_keep_from = min(must_keep_from, consumer_next)
    for sid in range(max(latest - retain_max + 1, earliest), must_keep_from):
        snap = files.snapshots.try_get(sid)
        if snap is not None and older_than_ms <= snap.timeMillis:
            return sid
    return must_keep_from


def expire_range(files: TableFiles, begin: int, end: int, now_ms: int | None = None,
                 dry_run: bool = False) -> ExpireResult:
    """Expire snapshots ``[begin, end)``; snapshot ``end`` must exist. See module docs.

    ``now_ms`` (default: the clock) dates the tombstones old enough to delete. ``dry_run``:
    steps 1, 3 and 4's choice only; nothing is written or deleted."""
    try:
        plan = _plan(files, begin, end)
    except (CorruptMetadataError, SnapshotExpiredError, SnapshotNotFoundError):
        if files.snapshots.try_get(begin) is None:
            return ExpireResult()  # another expirer got there first (it may have gone past end)
        raise
    if plan is None:
        return ExpireResult()
    expiring, keep, data, changelog, manifests, indexes = plan
    io = files.io
    if dry_run:
        groups = (data, changelog, files.manifest_paths(manifests), indexes)
        pinned = _pinned(files, keep, end)
        would = [sorted(group - pinned) for group in groups]
        return ExpireResult([s.id for s in expiring], would[0], would[1], would[2],
                            index_files=would[3], dry_run=True)
    for snap in expiring:
        files.snapshots.mark_expired(snap.id)
    files.snapshots.commit_earliest_hint(end)
    now = int(time.time() * 1000) if now_ms is None else now_ms
    files.snapshots.drop_tombstones(end, now - TOMBSTONE_RETAINED_MS)
    try:
        pinned = _pinned(files, keep, end)
    except CorruptMetadataError:
        if files.snapshots.try_get(end) is not None:
            raise
        # a concurrent expirer went past ``end``; what we planned and it did not is left
        # to orphan cleanup (unreferenced, never a retained snapshot's file)
        return ExpireResult([s.id for s in expiring])
    removed: list[list[str]] = []
    for group in (data, changelog, files.manifest_paths(manifests), indexes):
        doomed = sorted(group - pinned)
        for path in doomed:
            io.delete(path)
        removed.append(doomed)
    return ExpireResult([s.id for s in expiring], removed[0], removed[1], removed[2],
                        index_files=removed[3])


def _pinned(files: TableFiles, keep: Snapshot, end: int) -> set[str]:
    """Files that stay whatever the plan says: those of tags and of snapshot ``end``."""
    pinned: set[str] = set()
    seen: set[tuple[int, str]] = set()
    for tag in files.tags().values():
        if tag.id < end and (tag.id, tag.baseManifestList) not in seen:
            seen.add((tag.id, tag.baseManifestList))
            pinned |= files.used_paths(tag)
    # Snapshot ``end`` keeps all its files. Its changelog files matter too: tables written
    # before the one-COMPACT-snapshot-per-compaction fix list a compaction's changelog in
    # an APPEND snapshot and again in the COMPACT one right after it, so a changelog file of
    # an expiring snapshot may also belong to ``end`` (never to a later one).
    return (pinned | files.manifest_paths(files.manifests_of(keep)) | files.changelog_paths(keep)
            | files.index_paths(keep))


def _plan(files: TableFiles, begin: int, end: int
          ) -> tuple[list[Snapshot], Snapshot, set[str], set[str], set[str], set[str]] | None:
    expiring: list[Snapshot] = []
    for sid in range(begin, end):
        snap = files.snapshots.try_get(sid)
        if snap is None:
            return None  # expired concurrently
        expiring.append(snap)
    keep = files.snapshots.get(end)
    data: set[str] = set()
    mio = files.manifests
    for snap in [*expiring[1:], keep]:
        for e in mio.entries_of(mio.read_list(snap.deltaManifestList)):
            path = files.entry_path(e)
            if e.kind == ADD:
                data.discard(path)  # re-added (e.g. moved to another level): still in use
            else:
                data.add(path)
    changelog: set[str] = set()
    manifests: set[str] = set()
    indexes: set[str] = set()  # an index file replaced for its bucket never comes back
    for snap in expiring:
        changelog |= files.changelog_paths(snap)
        manifests |= files.manifests_of(snap)
        indexes |= files.index_paths(snap)
    return expiring, keep, data, changelog, manifests, indexes


def maybe_expire(table: HasContext) -> ExpireResult | None:
    """Automatic expiration after a commit, by the table's options (off with write-only).

    Cheap when there is nothing to expire: it reads the consumers and the snapshots at the
    old end of the table only.
    """
    ctx = table.context()
    if ctx.options["write-only"]:
        return None
    return expire_snapshots(TableFiles.of(ctx))
