"""Orphan file cleanup: delete files no retained snapshot or tag references.

Orphans are left by writers that crashed or were never committed, by commits that lost the
race for a snapshot id and crashed before cleaning up, and by expirations or rollbacks that
crashed after deleting snapshot files. The order makes a concurrent commit safe:

```
 1. list    walk the table as the layout defines it and keep the files that are older than
            ``older_than_ms`` (default: now - 1 day) and have a name minipaimon writes
            (data-*/changelog-* and data files' *.index in bucket directories, manifest-*
            and index-manifest-* in
            manifest/, index-* in index/, and hidden
            .*.tmp files of interrupted atomic writes or store probes in every metadata
            directory, each branch's too); everything through FileIO listings, so it works
            on object stores (age = the object's LastModified)
 2. used    THEN read every retained snapshot and every tag (and snapshots committed while
            reading): their manifest lists and manifests, live data files and changelogs;
            and what every long-lived changelog uses (changelog/changelog-<id>); of every
            line of the table: main and each branch (maintenance.lines), whichever
            line the cleanup runs in
 3. delete  candidates - used (nothing with dry_run)
```

A commit that lands after step 1 only references files that are in the used set of step 2
or were written after step 1 (not candidates). Files of a write still in progress are
protected by the age alone, so the age must exceed the longest write: hence the 1 day
default and the refusal of a time in the future. Files and directories that minipaimon does
not name are never touched; empty directories are left in place.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ..errors import InvalidArgumentError
from ..format.bucket_names import POSTPONE_BUCKET, POSTPONE_DIR
from ..format.layout import TableLayout, is_temp_name, parse
from ..io.fileio import FileStatus
from ..schema.partition import partition_prefix
from .files import TableFiles
from .lines import lines, used_by_all_lines

DEFAULT_SAFE_AGE_MS = 86_400_000

Progress = Callable[[str, int, int], None]
"""``progress(phase, done, total)``; total 0 means unknown."""


@dataclass(frozen=True)
class OrphanResult:
    """The orphan files removed (or, with ``dry_run``, that would be removed)."""

    files: list[str] = field(default_factory=list)
    bytes: int = 0
    dry_run: bool = False


def remove_orphan_files(
    files: TableFiles,
    older_than_ms: int | None = None,
    dry_run: bool = False,
    now_ms: int | None = None,
    progress: Progress | None = None,
) -> OrphanResult:
    """Remove orphan files last modified before ``older_than_ms`` (epoch milliseconds).

    Raises:
        InvalidArgumentError: ``older_than_ms`` is in the future.
    """
    now = int(time.time() * 1000) if now_ms is None else now_ms
    if older_than_ms is None:
        older_than_ms = now - DEFAULT_SAFE_AGE_MS
    if older_than_ms > now:
        raise InvalidArgumentError(
            f"older_than_ms={older_than_ms} is in the future (now {now}): that could delete "
            "files of writes in progress; give a time in the past (default: now - 1 day)"
        )
    report = progress or (lambda phase, done, total: None)
    candidates = list_candidates(files, older_than_ms, report)
    used = used_by_all_lines(files, report)
    orphans = sorted((p, size) for p, size in candidates.items() if p not in used)
    if not dry_run:
        for i, (path, _) in enumerate(orphans):
            files.io.delete(path)
            report("deleting", i + 1, len(orphans))
    return OrphanResult([p for p, _ in orphans], sum(s for _, s in orphans), dry_run)


def list_candidates(files: TableFiles, older_than_ms: int, progress: Progress) -> dict[str, int]:
    """Path -> size of every file minipaimon names that is older than ``older_than_ms``.

    Only FileIO listings: one listing per directory gives names, sizes and modification
    times (an object's LastModified on an object store)."""
    io, layout = files.io, files.layout
    found: list[tuple[str, FileStatus]] = []

    def collect(directory: str, wanted: Callable[[str], bool]) -> None:
        found.extend((layout.listed_path(directory, f.name), f)
                     for f in io.list_files(directory) if wanted(f.name))

    for line in lines(files):  # every branch's metadata directories
        meta = line.layout
        for directory in (meta.snapshot_dir, meta.schema_dir, meta.tag_dir, meta.consumer_dir,
                          meta.changelog_dir):
            collect(directory, is_temp_name)
    collect(layout.manifest_dir, lambda n: _kind(n) in ("manifest", "manifest-list", "index-manifest", "temp"))
    collect(layout.index_dir, lambda n: _kind(n) in ("index", "temp"))
    progress("listing", len(found), 0)
    keys = [partition_prefix(k, files.schema.legacyFormat) for k in files.schema.partitionKeys]
    pending = [""]
    for depth in range(len(keys)):
        pending = [
            TableLayout.listed_path(rel, n) if rel else n
            for rel in pending
            for n in sorted(io.list_names(layout.partition_dir(rel)))
            if n.startswith(keys[depth])
        ]
    for rel in pending:
        for n in sorted(io.list_names(layout.partition_dir(rel))):
            parsed = parse(n)
            if parsed is None or parsed.kind != "bucket":
                continue
            bucket = POSTPONE_BUCKET if parsed.key == POSTPONE_DIR else int(parsed.key)
            collect(layout.bucket_dir(rel, bucket), _is_data)
            progress("listing", len(found), 0)
    return {path: f.size for path, f in found if f.modified_ms < older_than_ms}


def _is_data(name: str) -> bool:
    return _kind(name) in ("data", "changelog", "data-index", "temp")


def _kind(name: str) -> str | None:
    parsed = parse(name)
    return None if parsed is None else parsed.kind
