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
 2. marks     mark snapshot-E .. snapshot-(end-1) (a marker created if absent, naming the
              snapshot; the id stays taken, so a commit still based on E-1.. cannot land
              in it; a consumer's pin of a marked id is refused). The markers are created
              concurrently and every one is durable before step 3 (SnapshotManager.
              mark_expiring): a crash anywhere after leaves each deleted id marked
 3. consumers read the consumers again: one that pinned an id below ``end`` after they were
              read for the plan moves ``end`` down to it (planned again; the ids it spares
              stay marked). Its pin wrote the consumer file, then checked for the mark: either
              the check saw the mark of step 2, or this read sees the consumer
 4. records   the last identifier of each replayable commit user of E..end-1
              (commit_dedupe.CommitRecords), before any snapshot goes
 5. snapshots delete snapshot-E, snapshot-E+1, ... oldest first (a reader of an expired id
              now gets SnapshotExpiredError); EARLIEST := end; delete markers older than
              TOMBSTONE_RETAINED_MS (1 h)
 6. tags      read the tags now, so a tag created before step 5 is seen (and once before
              step 2: a damaged tag fails the expiration before anything changed)
 7. files     delete data files, changelog files, then manifests and manifest lists, then
              index manifests and deletion-vector index files, keeping every file of
              snapshot ``end``, of every tag and of every other line of the table (its
              branches; main, expiring a branch: maintenance.lines). The deletes of one
              group are in flight at once (io.pools.run_all), the groups in this order
```

Steps 2 and 7 are batches of independent calls, so their waits overlap (each marker's
fsync, or each object-store request); step 5 deletes one snapshot after the other, so the
snapshot files present stay one contiguous range of ids whatever a crash interrupts.

A table whose changelog outlives its snapshots (``changelog.*`` retention above the
``snapshot.*`` one, :class:`~minipaimon_core.metadata.changelog_manager.Retention`) keeps, as Paimon
0.9's ``ExpireSnapshotsImpl``: each expiring snapshot's file as ``changelog/changelog-<id>``
(written before the snapshot is deleted), its changelog files and changelog manifest list;
without a changelog producer also its base and delta manifest lists and the APPEND data
files its successors deleted (a stream reads a delta's new files as its changes). Those go
when the changelog expires (:mod:`.expire_changelog`, run after this by
:func:`expire_snapshots`).

A crash after step 5 only leaks unreferenced files, which orphan cleanup removes. Several
expirers may run at once (each write expires): deletes are idempotent, and an expirer that
finds its range already gone stops. Known race (as in Paimon): a tag created on a snapshot
while that very snapshot is being expired may lose files, so tag snapshots well inside the
retention window.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from ..commit.commit_dedupe import CommitRecords
from ..errors import (
    CorruptMetadataError,
    InvalidArgumentError,
    SnapshotExpiredError,
    SnapshotNotFoundError,
)
from ..format.manifest_file import ADD, FILE_SOURCE_APPEND
from ..format.options import Options
from ..format.snapshot import Snapshot
from ..io import pools
from ..metadata.changelog_manager import ChangelogManager, Retention
from ..metadata.consumer import ConsumerManager
from ..metadata.context import HasContext
from ..metadata.snapshot_manager import TOMBSTONE_RETAINED_MS
from . import expire_changelog
from .files import TableFiles
from .lines import used_by_other_lines


@dataclass(frozen=True)
class ExpireResult:
    """What one expiration removed (paths are absolute, as the layout builds them)."""

    snapshots: list[int] = field(default_factory=list)
    data_files: list[str] = field(default_factory=list)
    changelog_files: list[str] = field(default_factory=list)
    manifests: list[str] = field(default_factory=list)
    consumers: list[str] = field(default_factory=list)
    index_files: list[str] = field(default_factory=list)  # index manifests, index files
    changelogs: list[int] = field(default_factory=list)  # long-lived changelogs expired
    dry_run: bool = False  # nothing was removed: what would be

    @property
    def files(self) -> list[str]:
        return [*self.data_files, *self.changelog_files, *self.manifests, *self.index_files]


# what _plan returns: the snapshots to expire, snapshot ``end``, and the data files,
# changelog files, manifests and index files to delete
Plan = tuple[list[Snapshot], Snapshot, set[str], set[str], set[str], set[str]]


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
    what would be removed (the same plans: the snapshots', then the long-lived changelogs'
    of ``changelog.num-retained.*``) and change nothing.

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
                        default=None)  # a dry run left the idle consumers in place
    end = expire_until(files, earliest, latest, rmin, rmax, older_than, consumer_next)
    result = expire_range(files, earliest, end, now, dry_run) if end > earliest else ExpireResult()
    retention = Retention.of(opts)
    if dry_run:  # the snapshots this run would keep as changelogs count as changelogs
        pending = {s: files.snapshots.get(s) for s in result.snapshots} if retention.decoupled else {}
        changelogs = expire_changelog.expire_changelogs(files, retention, consumer_next, now, True, pending)
    else:
        changelogs = expire_changelog.expire_changelogs(files, retention, consumers.min_next_snapshot(), now)
    return ExpireResult(result.snapshots, _union(result.data_files, changelogs.data_files),
                        _union(result.changelog_files, changelogs.changelog_files),
                        _union(result.manifests, changelogs.manifests), gone_consumers, result.index_files,
                        changelogs.ids, dry_run=dry_run)


def _union(first: list[str], then: list[str]) -> list[str]:
    """``first`` then the paths of ``then`` not in it (a file both expirations name once)."""
    seen = set(first)
    return [*first, *[p for p in then if p not in seen]]


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
    step 1's plan only; nothing is written or deleted."""
    opts = Options(files.schema.options)
    keep_changelog = Retention.of(opts).decoupled
    producer = opts["changelog-producer"] != "none"
    plan = _checked_plan(files, begin, end, keep_changelog, producer)
    if plan is None:
        return ExpireResult()
    if dry_run:
        groups = (plan[2], plan[3], files.manifest_paths(plan[4]), plan[5])
        pinned = _pinned(files, plan[1], end)
        would = [sorted(group - pinned) for group in groups]
        return ExpireResult([s.id for s in plan[0]], would[0], would[1], would[2],
                            index_files=would[3], dry_run=True)
    files.snapshots.mark_expiring(plan[0])  # 2. marks, all durable before step 5
    pinned_from = ConsumerManager(files.io, files.layout).min_next_snapshot()  # 3. consumers
    if pinned_from is not None and pinned_from < end:
        end = pinned_from  # a consumer pinned since the plan: spare it (its ids stay marked)
        plan = _checked_plan(files, begin, end, keep_changelog, producer) if end > begin else None
        if plan is None:
            return ExpireResult()
    expiring, keep, data, changelog, manifests, indexes = plan
    io = files.io
    CommitRecords(io, files.layout).record(expiring)  # 4. before the snapshots go
    changelogs = ChangelogManager(io, files.layout)
    for snap in expiring:  # 5.
        if keep_changelog:  # the snapshot's file lives on as its changelog (before it goes)
            try:
                changelogs.commit(snap.id, io.read_bytes(files.layout.snapshot_path(snap.id)))
            except FileNotFoundError:
                continue  # expired concurrently (its changelog written by that expirer)
        files.snapshots.delete_expired(snap)
    files.snapshots.commit_earliest_hint(end)
    now = int(time.time() * 1000) if now_ms is None else now_ms
    files.snapshots.drop_tombstones(end, now - TOMBSTONE_RETAINED_MS)
    try:
        pinned = _pinned(files, keep, end)
    except CorruptMetadataError:
        if not files.snapshots.has_expired(keep):
            raise
        # a concurrent expirer went past ``end``; what we planned and it did not is left
        # to orphan cleanup (unreferenced, never a retained snapshot's file)
        return ExpireResult([s.id for s in expiring])
    removed: list[list[str]] = []
    for group in (data, changelog, files.manifest_paths(manifests), indexes):
        doomed = sorted(group - pinned)  # a group's deletes in flight at once, group by group
        pools.run_all(lambda chunk: [io.delete(p) for p in chunk], pools.chunks(doomed))
        removed.append(doomed)
    return ExpireResult([s.id for s in expiring], removed[0], removed[1], removed[2],
                        index_files=removed[3])


def _checked_plan(files: TableFiles, begin: int, end: int, keep_changelog: bool, producer: bool
                  ) -> Plan | None:
    """The plan of expiring ``[begin, end)`` (None: nothing to do, another expirer got
    there first), the tags read once: damaged metadata fails here, before anything changed."""
    try:
        plan = _plan(files, begin, end, keep_changelog, producer)
        if plan is not None:
            _pinned(files, plan[1], end)
    except (CorruptMetadataError, SnapshotExpiredError, SnapshotNotFoundError):
        if files.snapshots.retained(begin) is None:
            return None  # another expirer got there first (it may have gone past end)
        raise
    return plan


def _pinned(files: TableFiles, keep: Snapshot, end: int) -> set[str]:
    """Files that stay whatever the plan says: those of tags, of snapshot ``end`` and of
    every other line of the table (its branches, or main from a branch)."""
    pinned = used_by_other_lines(files)
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


def _plan(files: TableFiles, begin: int, end: int, keep_changelog: bool = False, producer: bool = False
          ) -> Plan | None:
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
            paths = files.entry_paths(e)  # a data file and its file index go together
            if keep_changelog and not producer and e.kind != ADD and \
                    (e.file.fileSource is None or e.file.fileSource == FILE_SOURCE_APPEND):
                continue  # a retained changelog's new file (no producer): the changelog's to delete
            if e.kind == ADD:
                data.difference_update(paths)  # re-added (e.g. moved to another level): in use
            else:
                data.update(paths)
    changelog: set[str] = set()
    manifests: set[str] = set()
    indexes: set[str] = set()  # an index file replaced for its bucket never comes back
    for snap in expiring:
        indexes |= files.index_paths(snap)
        if not keep_changelog:
            changelog |= files.changelog_paths(snap)
            manifests |= files.manifests_of(snap)
        elif producer:  # the changelog manifest list (and its manifests) stays with the changelog
            manifests |= files.manifests_of(snap) - files.manifests_of_list(snap.changelogManifestList)
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
