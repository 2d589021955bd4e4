"""Expiration of long-lived changelogs (``changelog/changelog-<id>``), as Paimon 0.9's
``ExpireChangelogImpl``: the changelog's own retention, on top of snapshot expiration.

Which go, with L the latest *snapshot* id and C..D the changelog ids present: every id
below ``L - changelog.num-retained.max + 1``; then, up to ``min(L - changelog.num-retained.min,
D - 1)`` (the latest changelog always stays, so expiration has an ``end``), each committed
before ``now - changelog.time-retained``, stopping at the first newer one; never the next
snapshot of a live consumer or anything after it. Expiring ``[C, end)``, oldest first:

```
 1. skip   files of every tag and of every other line of the table (maintenance.lines),
           and the manifest lists / manifests / index files of changelog ``end`` (a manifest that leaves the base lists never comes back, so
           what ``end`` does not hold no later changelog or snapshot holds)
 2. each   delete its changelog files, the data files its delta DELETEd (with their index
           files; those a tag holds stay), its changelog / delta / base manifest lists
           that are still there and their manifests not skipped, then changelog-<id>
 3. hint   changelog/EARLIEST := end
```

A crash leaves changelog files whose data may be partly gone: the range is expired again
by the next run (deletes are idempotent).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ..format.manifest_file import ADD
from ..format.snapshot import Snapshot
from ..metadata.changelog_manager import ChangelogManager, Retention
from .files import TableFiles
from .lines import used_by_other_lines


@dataclass(frozen=True)
class ChangelogExpiry:
    ids: list[int] = field(default_factory=list)
    data_files: list[str] = field(default_factory=list)
    changelog_files: list[str] = field(default_factory=list)
    manifests: list[str] = field(default_factory=list)


def expire_changelogs(files: TableFiles, retention: Retention, consumer_next: int | None,
                      now_ms: int | None = None, dry_run: bool = False,
                      pending: dict[int, Snapshot] | None = None) -> ChangelogExpiry:
    """Expire long-lived changelogs by ``retention`` (see the module docs). ``dry_run``:
    what would go, nothing deleted, with ``pending`` the snapshots the same run's snapshot
    expiration would turn into changelogs first (by id)."""
    changelogs = _Changelogs(ChangelogManager(files.io, files.layout), pending or {})
    ids = changelogs.ids()
    latest = files.snapshots.latest_id()
    if not ids or latest is None:
        return ChangelogExpiry()
    now = int(time.time() * 1000) if now_ms is None else now_ms
    first = max(latest - retention.changelog_max + 1, ids[0])
    end = latest - retention.changelog_min + 1
    if consumer_next is not None:
        end = min(end, consumer_next)
    end = min(end, ids[-1])
    older_than = now - retention.changelog_time_ms
    for cid in range(first, end + 1):
        c = changelogs.try_get(cid)
        if c is not None and older_than <= c.timeMillis:
            end = cid
            break
    if end <= ids[0]:
        return ChangelogExpiry()
    return expire_changelog_range(files, ids[0], end, dry_run, pending)


def expire_changelog_range(files: TableFiles, begin: int, end: int, dry_run: bool = False,
                           pending: dict[int, Snapshot] | None = None) -> ChangelogExpiry:
    """Expire long-lived changelogs ``[begin, end)``; changelog ``end`` must exist.
    ``dry_run``, ``pending``: as :func:`expire_changelogs`."""
    changelogs = _Changelogs(ChangelogManager(files.io, files.layout), pending or {})
    keep = changelogs.try_get(end)
    if keep is None:
        return ChangelogExpiry()  # expired concurrently
    tagged = files.collector()
    for tag in files.tags().values():
        tagged.add(tag)
    skip = set(tagged.paths) | files.index_paths(keep) | used_by_other_lines(files)
    for name in files.existing_lists(keep):
        skip |= files.manifest_paths(files.manifests_of_list(name))
    out = ChangelogExpiry()
    for cid in range(begin, end):
        c = changelogs.try_get(cid)
        if c is None:
            continue
        _expire_one(files, c, skip, out, (lambda path: None) if dry_run else files.io.delete)
        if not dry_run:
            changelogs.manager.delete(cid)
        out.ids.append(cid)
    if not dry_run:
        changelogs.manager.commit_earliest_hint(end)
    return out


@dataclass(frozen=True)
class _Changelogs:
    """The changelogs there are, and those a dry run counts as written (``pending``)."""

    manager: ChangelogManager
    pending: dict[int, Snapshot]

    def ids(self) -> list[int]:
        return sorted({*self.manager.ids(), *self.pending})

    def try_get(self, cid: int) -> Snapshot | None:
        return self.pending.get(cid) or self.manager.try_get(cid)


def _expire_one(files: TableFiles, c: Snapshot, skip: set[str], out: ChangelogExpiry,
                delete: Callable[[str], object]) -> None:
    mio = files.manifests
    lists = files.existing_lists(c)
    if c.changelogManifestList in lists:
        for path in sorted(files.changelog_paths(c) - skip):
            delete(path)
            out.changelog_files.append(path)
    if c.deltaManifestList in lists:
        for e in mio.entries_of(mio.read_list(c.deltaManifestList)):
            if e.kind == ADD:
                continue
            for path in files.entry_paths(e):
                if path not in skip:
                    delete(path)
                    out.data_files.append(path)
    doomed: set[str] = set()
    for name in lists:
        doomed |= files.manifest_paths(files.manifests_of_list(name))
    for path in sorted(doomed - skip):
        delete(path)
        out.manifests.append(path)


__all__ = ["ChangelogExpiry", "expire_changelog_range", "expire_changelogs"]
