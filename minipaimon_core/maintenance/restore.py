"""Restore: a new commit whose table is exactly an older snapshot's (Delta's ``RESTORE``).

Unlike rollback (:mod:`minipaimon_core.maintenance.rollback`, Paimon's, which deletes the
newer snapshots and their tags), a restore keeps the whole history: it adds one OVERWRITE
snapshot, and another restore undoes it.

```
 target T (an id, a tag, or the snapshot at an aware datetime), latest L
 1. files    T's live data files: kept where L has the same one (same partition, bucket,
             level and name), else COPIED under new names (file_format.FileFormat.copy:
             byte for byte, a name embedded by minipaimon's writer renamed)
 2. indexes  T's index files: deletion vectors of every bucket written as new index files,
             copied files under their new names; HASH index files (dynamic buckets) kept
             where L has the same one, else copied; a new index manifest
 3. manifest delta = DELETE every live file of L not kept, ADD every copy; base = base(L) +
             delta(L) as a commit makes it
 4. commit   snapshot L+1 (OVERWRITE, nextSequenceNumber = L's) created only if absent and
             settled by the commit point (commit/commit_point.py); a lost race cleans this
             attempt's metadata and starts again at step 1 on the new latest (copies
             already made are reused); the LATEST hint
```

Why copies: the protocol never ADDs a data or index file again once a snapshot DELETEd it
(expiration relies on it: a file deleted by snapshot D is removed when D's range expires),
so a file T had and L no longer has comes back under a new name; the old snapshots keep the
originals and expire as before. A restore reads and writes those files only.

Reading L+1 gives exactly the rows of T: only T's files are live, with T's deletion
vectors, and a dynamic-bucket table keeps T's key index (each key stays in its bucket).
Rows keep their sequence numbers, which are below L's next number; the snapshot keeps L's
``nextSequenceNumber``, so every later write (and a writer that started before the
restore, whose files are moved above it at commit) wins over the restored rows. The schema
stays the current one (columns added since T read as null).

Failures: before step 4 nothing is referenced, and what the restore wrote is deleted. From
the create of L+1 on, the snapshot may have landed: copies and metadata are deleted only
once it is known lost; an interrupt, or a store that never answers whether it landed
(CommitOutcomeUnknownError), leaves them all (orphan cleanup removes them if it did not).
"""

from __future__ import annotations

import contextlib
import datetime
import time
import uuid
from dataclasses import dataclass
from typing import Any

import msgspec
import pyarrow as pa

from ..commit.commit import MAX_ATTEMPT_SECONDS
from ..commit.commit_point import CommitPoint, retry_wait
from ..errors import (
    CommitConflictError,
    ConflictReason,
    CorruptDataFileError,
    InvalidArgumentError,
    SnapshotExpiredError,
    SnapshotNotFoundError,
    StorageError,
    UnsupportedFeatureError,
    redact_userinfo,
)
from ..expressions.times import epoch_ms
from ..file_format import of_file
from ..format.index_manifest import DELETION_VECTORS, IndexFileEntry
from ..format.layout import TableLayout
from ..format.manifest_file import ADD, DELETE, ManifestEntry
from ..format.snapshot import OVERWRITE, Digests, Snapshot
from ..format.snapshot import VERSION as SNAPSHOT_VERSION
from ..metadata.context import HasContext, TableContext
from ..metadata.deletion_vectors import Vectors
from ..metadata.manifest_io import live_files, record_delta
from ..metadata.manifest_merge import MergeLimits, new_base
from ..metadata.sequence import next_sequence
from ..metadata.tags import TagManager
from ..schema.features import check_writable

Key = tuple[Any, ...]
"""A live file's identifier: (partition, bucket, level, file name)."""
Target = int | str | datetime.datetime
"""A snapshot id, a tag name, or an aware datetime (the snapshot current then)."""

RESTORED_FROM = "minipaimon.restored-from"  # snapshot property: the id restored


@dataclass(frozen=True)
class RestoreResult:
    """The new snapshot (None: the table already reads as the target) and what it took."""

    snapshot_id: int | None
    restored_from: int
    files_kept: int = 0
    files_copied: int = 0
    files_removed: int = 0
    bytes_copied: int = 0
    copied: frozenset[str] = frozenset()  # names of the copies the new snapshot ADDs


def target_snapshot(ctx: TableContext, target: Target) -> Snapshot:
    """The snapshot ``target`` names. Raises SnapshotNotFoundError / SnapshotExpiredError,
    InvalidArgumentError (a bool, a naive datetime, anything else)."""
    if isinstance(target, bool):
        raise InvalidArgumentError(f"restore takes a snapshot id, a tag name or a datetime, got {target!r}")
    if isinstance(target, int):
        return ctx.snapshots.get(target)
    if isinstance(target, str):
        return TagManager(ctx.io, ctx.layout).get(target)
    if isinstance(target, datetime.datetime):
        if target.tzinfo is None:
            raise InvalidArgumentError(f"restore({target!r}): give the datetime a time zone")
        snap = ctx.snapshots.earlier_or_equal_time(epoch_ms(target))
        if snap is None:
            raise SnapshotNotFoundError(f"no snapshot of {ctx.path} was committed at or before {target}")
        return snap
    raise InvalidArgumentError(f"restore takes a snapshot id, a tag name or a datetime, got {target!r}")


def restore(table: HasContext, target: Target) -> RestoreResult:
    """Commit the table's state at ``target`` as a new OVERWRITE snapshot (module docs).

    Raises:
        SnapshotNotFoundError / SnapshotExpiredError, InvalidArgumentError: no such target.
        UnsupportedFeatureError: a table minipaimon does not write.
        CorruptDataFileError: a file to copy is damaged.
        StorageError: the store failed (nothing restored; retry).
        CommitConflictError: other writers kept winning the snapshot race.
        CommitOutcomeUnknownError: the store never answered whether the restore landed
            (nothing it wrote was deleted: look at the latest snapshot before retrying).
    """
    ctx = table.context()
    check_writable(ctx.schema, ctx.path)
    snap = target_snapshot(ctx, target)
    copies: dict[Key, ManifestEntry] = {}  # identifier of a file of T -> its copy
    point = CommitPoint(ctx.io, ctx.layout, ctx.snapshots)
    options = ctx.options
    started = time.monotonic()
    deadline = started + options["commit.timeout"] / 1000
    result: RestoreResult | None = None
    try:
        for attempt in range(options["commit.max-retries"] + 1):
            if attempt:
                time.sleep(retry_wait(attempt, options["commit.min-retry-wait"], options["commit.max-retry-wait"],
                                      (time.monotonic() - started) * 1000) / 1000)
            result = _try_restore(ctx, snap, copies, point, deadline)
            if result is not None:
                return result
    finally:  # nothing landed (known: not in doubt), or the table already read as T: garbage
        if (result is None or result.snapshot_id is None) and not point.in_doubt:
            _delete_data(ctx, list(copies.values()))
    raise CommitConflictError(
        f"gave up restoring {ctx.path} to snapshot {snap.id}: other writers kept committing; "
        "retry when the table is quieter or raise 'commit.max-retries'",
        ConflictReason.RETRIES_EXHAUSTED)


def _try_restore(ctx: TableContext, snap: Snapshot, copies: dict[Key, ManifestEntry], point: CommitPoint,
                 deadline: float) -> RestoreResult | None:
    """One attempt on the latest snapshot; None when it is known lost (the race for the next
    id, or too old to create). Once landed, the copies it does not use are deleted."""
    read_at = time.monotonic()
    latest = ctx.snapshots.latest()
    assert latest is not None  # the target exists, so the table has a snapshot
    wanted = {e.identifier: e for e in live_files(ctx.manifests, snap)}
    current = {e.identifier: e for e in live_files(ctx.manifests, latest)}
    to_copy = sorted(wanted.keys() - current.keys(), key=repr)
    to_remove = sorted(current.keys() - wanted.keys(), key=repr)
    kept = len(wanted) - len(to_copy)
    if not to_copy and not to_remove and snap.indexManifest == latest.indexManifest:
        return RestoreResult(None, snap.id, files_kept=kept)
    for key in to_copy:
        if key not in copies:
            copies[key] = _copy(ctx, wanted[key])
    used = {key: copies[key] for key in to_copy}
    entries = [*(msgspec.structs.replace(current[k], kind=DELETE) for k in to_remove), *used.values()]
    written: list[str] = []
    try:
        new = _snapshot(ctx, snap, latest, entries, used, written)
    except BaseException:
        _delete_metadata(ctx, written)
        raise
    ctx.io.sync([*(_path(ctx, c) for c in used.values()), *(ctx.layout.metadata_path(n) for n in written)])
    # an attempt that took too long could create its id unnoticed under an expiry marker
    # (commit.py, MAX_ATTEMPT_SECONDS): start again, reusing the copies
    if time.monotonic() - read_at > MAX_ATTEMPT_SECONDS or not point.create(new, deadline):
        _delete_metadata(ctx, written)  # known not to have landed
        return None
    unused = [c for k, c in copies.items() if k not in used]
    point.after_landing(new, [_path(ctx, c) for c in unused])
    return RestoreResult(new.id, snap.id, kept, len(used), len(to_remove),
                         sum(c.file.fileSize for c in used.values()),
                         frozenset(c.file.fileName for c in used.values()))


def _snapshot(ctx: TableContext, snap: Snapshot, latest: Snapshot, entries: list[ManifestEntry],
              copies: dict[Key, ManifestEntry], written: list[str]) -> Snapshot:
    """Write the manifests (and index files) of the restore (names appended to ``written``)
    and return the snapshot that names them (not written)."""
    width = len(ctx.schema.partitionKeys)
    options, mio = ctx.options, ctx.manifests
    delta_meta = mio.write_entries(entries, ctx.schema.id, width)
    written.append(delta_meta.fileName)
    limits = MergeLimits(options["manifest.target-file-size"],
                         options["manifest.full-compaction-threshold-size"],
                         options["manifest.merge-min-count"])
    base_metas = new_base(mio, mio.data_manifests(latest), limits, ctx.schema.id, width, written)
    base, base_size, base_digest = mio.write_list(base_metas)
    written.append(base)
    delta, delta_size, delta_digest = mio.write_list([delta_meta])
    written.append(delta)
    index_manifest, index_digest = _indexes(ctx, snap, latest, copies, written)
    delta_rows = record_delta(entries)
    return Snapshot(
        version=SNAPSHOT_VERSION, id=latest.id + 1, schemaId=ctx.schema.id,
        baseManifestList=base, baseManifestListSize=base_size,
        deltaManifestList=delta, deltaManifestListSize=delta_size,
        indexManifest=index_manifest, commitUser=f"restore-{uuid.uuid4()}", commitIdentifier=0,
        commitKind=OVERWRITE, timeMillis=int(time.time() * 1000),
        totalRecordCount=latest.totalRecordCount + delta_rows, deltaRecordCount=delta_rows,
        watermark=latest.watermark, properties={RESTORED_FROM: str(snap.id)},
        nextSequenceNumber=next_sequence(mio, latest),
        minipaimonDigests=Digests(base_digest, delta_digest, None, index_digest))


def _indexes(ctx: TableContext, snap: Snapshot, latest: Snapshot, copies: dict[Key, ManifestEntry],
             written: list[str]) -> tuple[str | None, str | None]:
    """T's index files as a new index manifest (names of new files appended to
    ``written``): its deletion vectors, copied data files under their new names, as new
    index files; its other index files (HASH: dynamic buckets' keys) where ``latest`` has
    them, else copied under new names. (None, None) if T has none."""
    if snap.indexManifest is None:
        return None, None
    renamed = {(key[0], key[1], key[3]): copy.file.fileName for key, copy in copies.items()}
    in_latest = {e.fileName for e in ctx.vectors.index_entries(latest)}
    new_entries: list[IndexFileEntry] = []
    for entry in ctx.vectors.index_entries(snap):
        where = (tuple(entry.partition), entry.bucket)
        if entry.indexType != DELETION_VECTORS:
            new_entries.append(entry if entry.fileName in in_latest else _copy_index(ctx, entry, written))
            continue
        vectors: Vectors = {renamed.get((*where, name), name): positions
                            for name, positions in ctx.vectors.vectors(entry).items()}
        if vectors:
            new_entries.append(ctx.vectors.write_index(where[0], where[1], vectors))
            written.append(new_entries[-1].fileName)
    if not new_entries:
        return None, None
    name, digest = ctx.vectors.write_manifest(new_entries)
    written.append(name)
    return name, digest


def _copy_index(ctx: TableContext, entry: IndexFileEntry, written: list[str]) -> IndexFileEntry:
    """A copy of the index file ``entry`` names under a new name (appended to ``written``),
    and its entry. Raises SnapshotExpiredError if the file is gone."""
    try:
        data = ctx.io.read_bytes(ctx.layout.index_path(entry.fileName))
    except FileNotFoundError:
        raise SnapshotExpiredError(
            f"index file {entry.fileName} of the snapshot to restore no longer exists (expired "
            "meanwhile?); restore a newer snapshot or a tag") from None
    name = TableLayout.new_index_name()
    written.append(name)
    ctx.io.write_bytes(ctx.layout.index_path(name), data)
    return msgspec.structs.replace(entry, fileName=name)


def _path(ctx: TableContext, e: ManifestEntry) -> str:
    return ctx.layout.data_file_path(ctx.partition_spec().path(list(e.partition)), e.bucket, e.file.fileName)


def _copy(ctx: TableContext, e: ManifestEntry) -> ManifestEntry:
    """A copy of ``e``'s data file under a new name (same rows, stats, sequence numbers and
    level; file_format.FileFormat.copy); the entry that ADDs it.

    Raises SnapshotExpiredError (the source is gone), UnsupportedFeatureError (a file with
    extra files), CorruptDataFileError (the source does not read in its format),
    StorageError (the store failed). Nothing is left of the copy when it fails."""
    src = _path(ctx, e)
    if e.file.extraFiles:
        raise UnsupportedFeatureError(f"{src} has extra files {list(e.file.extraFiles)}: restore cannot copy them")
    fmt = of_file(e.file.fileName, src)
    name = TableLayout.new_data_file_name(extension=fmt.extension)
    dst = _path(ctx, msgspec.structs.replace(e, file=msgspec.structs.replace(e.file, fileName=name)))
    try:
        with ctx.io.open_input(src) as reader, ctx.io.open_output(dst) as out:
            fmt.copy(reader, out, name)
    except BaseException as error:
        with contextlib.suppress(OSError):  # the store may be what failed: the error says so
            ctx.io.delete(dst)
        if isinstance(error, FileNotFoundError):
            raise SnapshotExpiredError(
                f"{src}, a data file of the snapshot to restore, no longer exists (expired "
                "meanwhile?); restore a newer snapshot or a tag") from None
        if isinstance(error, OSError) and not isinstance(error, StorageError):
            raise StorageError(redact_userinfo(
                f"copying data file {src} to {dst} failed ({type(error).__name__}: {error}); nothing "
                "was restored: retry when the store answers again")) from error
        if isinstance(error, (pa.ArrowException, ValueError, KeyError, IndexError, EOFError, TypeError)):
            raise CorruptDataFileError(
                f"data file {src} is damaged ({type(error).__name__}: {error}): restore cannot copy it; "
                "restore another snapshot") from error
        raise
    file = msgspec.structs.replace(e.file, fileName=name, fileSize=ctx.io.file_size(dst))
    return msgspec.structs.replace(e, kind=ADD, file=file)


def _delete_data(ctx: TableContext, entries: list[ManifestEntry]) -> None:
    for e in entries:
        ctx.io.delete(_path(ctx, e))


def _delete_metadata(ctx: TableContext, names: list[str]) -> None:
    for name in names:
        ctx.io.delete(ctx.layout.metadata_path(name))


__all__ = ["RESTORED_FROM", "RestoreResult", "Target", "restore", "target_snapshot"]
