"""Restore: a new commit whose table is exactly an older snapshot's (Delta's ``RESTORE``).

Unlike rollback (:mod:`minipaimon_core.maintenance.rollback`, Paimon's, which deletes the
newer snapshots and their tags), a restore keeps the whole history: it adds one OVERWRITE
snapshot, and another restore undoes it.

```
 target T (an id, a tag, or the snapshot at an aware datetime), latest L
 1. files    T's live data files: kept where L has the same one (same partition, bucket,
             level and name), else COPIED under new names, byte for byte
 2. vectors  (deletion vectors) T's vectors of every bucket written as new index files,
             copied files under their new names, and a new index manifest
 3. manifest delta = DELETE every live file of L not kept, ADD every copy; base = base(L) +
             delta(L) as a commit makes it
 4. commit   snapshot L+1 (OVERWRITE, nextSequenceNumber = L's) created only if absent;
             a lost race cleans this attempt's metadata and starts again at step 1 on the
             new latest (copies already made are reused); the LATEST hint
```

Why copies: the protocol never ADDs a data or index file again once a snapshot DELETEd it
(expiration relies on it: a file deleted by snapshot D is removed when D's range expires),
so a file T had and L no longer has comes back under a new name; the old snapshots keep the
originals and expire as before. A restore reads and writes those files only (minipaimon's
own files name themselves in their footer, so theirs are written again, row group by row
group; other writers' files are copied byte for byte).

Reading L+1 gives exactly the rows of T: only T's files are live, with T's deletion
vectors. Rows keep their sequence numbers, which are below L's next number; the snapshot
keeps L's ``nextSequenceNumber``, so every later write (and a writer that started before
the restore, whose files are moved above it at commit) wins over the restored rows. The
schema stays the current one (columns added since T read as null). A crash before step 4
leaves only orphan files.
"""

from __future__ import annotations

import datetime
import time
import uuid
from dataclasses import dataclass
from typing import Any

import msgspec
import pyarrow.parquet as pq

from ..errors import (
    CommitConflictError,
    ConflictReason,
    InvalidArgumentError,
    SnapshotExpiredError,
    SnapshotNotFoundError,
    UnsupportedFeatureError,
)
from ..expressions.times import epoch_ms
from ..file_format.data_file import FILE_NAME_KEY
from ..format import snapshot as snapshot_codec
from ..format.index_manifest import IndexFileEntry
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
_CHUNK = 8 << 20


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
        CommitConflictError: other writers kept winning the snapshot race.
    """
    ctx = table.context()
    check_writable(ctx.schema, ctx.path)
    snap = target_snapshot(ctx, target)
    copies: dict[Key, ManifestEntry] = {}  # identifier of a file of T -> its copy
    result: RestoreResult | None = None
    try:
        for _attempt in range(ctx.options["commit.max-retries"] + 1):
            result = _try_restore(ctx, snap, copies)
            if result is not None:
                return result
    finally:  # copies the landed snapshot does not use (all of them if none landed)
        used = set() if result is None else result.copied
        _delete_data(ctx, [c for c in copies.values() if c.file.fileName not in used])
    raise CommitConflictError(
        f"gave up restoring {ctx.path} to snapshot {snap.id}: other writers kept committing; "
        "retry when the table is quieter or raise 'commit.max-retries'",
        ConflictReason.RETRIES_EXHAUSTED)


def _try_restore(ctx: TableContext, snap: Snapshot, copies: dict[Key, ManifestEntry]) -> RestoreResult | None:
    """One attempt on the latest snapshot; None when it lost the race for the next id."""
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
    # from the create on, nothing it references is deleted unless it is known lost (a
    # snapshot created below the latest in an expired id is deleted again by settle)
    landed = ctx.io.write_if_absent(ctx.layout.snapshot_path(new.id), snapshot_codec.encode(new)) \
        and ctx.snapshots.settle(new, created=True)
    if not landed:
        _delete_metadata(ctx, written)
        return None
    ctx.snapshots.commit_latest_hint(new.id)
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
    index_manifest, index_digest = _vectors(ctx, snap, copies, written)
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


def _vectors(ctx: TableContext, snap: Snapshot, copies: dict[Key, ManifestEntry],
             written: list[str]) -> tuple[str | None, str | None]:
    """T's deletion vectors, copied data files under their new names, as new index files
    and a new index manifest (names appended to ``written``); (None, None) if T has none."""
    if snap.indexManifest is None:
        return None, None
    renamed = {(key[0], key[1], key[3]): copy.file.fileName for key, copy in copies.items()}
    new_entries: list[IndexFileEntry] = []
    for entry in ctx.vectors.entries(snap):
        where = (tuple(entry.partition), entry.bucket)
        vectors: Vectors = {renamed.get((*where, name), name): positions
                            for name, positions in ctx.vectors.vectors(entry).items()}
        if vectors:
            new_entries.append(ctx.vectors.write_index(where[0], where[1], vectors))
            written.append(new_entries[-1].fileName)
    name, digest = ctx.vectors.write_manifest(new_entries)
    written.append(name)
    return name, digest


def _path(ctx: TableContext, e: ManifestEntry) -> str:
    return ctx.layout.data_file_path(ctx.partition_spec().path(list(e.partition)), e.bucket, e.file.fileName)


def _copy(ctx: TableContext, e: ManifestEntry) -> ManifestEntry:
    """A copy of ``e``'s data file under a new name (same rows, stats, sequence numbers and
    level); the entry that ADDs it. A file of another writer is copied byte for byte; one
    minipaimon wrote names itself in its footer (data_file.FILE_NAME_KEY), so its row groups
    are written again under the new name, with the source's compression.

    Raises SnapshotExpiredError (the source is gone), UnsupportedFeatureError (a file with
    extra files)."""
    if e.file.extraFiles:
        raise UnsupportedFeatureError(
            f"{_path(ctx, e)} has extra files {list(e.file.extraFiles)}: restore cannot copy them")
    name = TableLayout.new_data_file_name()
    src, dst = _path(ctx, e), _path(ctx, msgspec.structs.replace(e, file=msgspec.structs.replace(
        e.file, fileName=name)))
    try:
        with ctx.io.open_input(src) as reader, ctx.io.open_output(dst) as out:
            source = pq.ParquetFile(reader)
            schema = source.schema_arrow
            if FILE_NAME_KEY not in (schema.metadata or {}):
                reader.seek(0)
                while chunk := reader.read(_CHUNK):
                    out.write(chunk)
            else:
                column = source.metadata.row_group(0).column(0) if source.metadata.num_row_groups else None
                writer = pq.ParquetWriter(
                    out, schema.with_metadata({**(schema.metadata or {}), FILE_NAME_KEY: name.encode()}),
                    compression=column.compression.lower() if column is not None else "zstd",
                    write_statistics=False, store_decimal_as_integer=True, write_page_checksum=True)
                for i in range(source.metadata.num_row_groups):
                    writer.write_table(source.read_row_group(i).replace_schema_metadata(writer.schema.metadata))
                writer.close()
    except FileNotFoundError:
        ctx.io.delete(dst)
        raise SnapshotExpiredError(
            f"{src}, a data file of the snapshot to restore, no longer exists (expired "
            "meanwhile?); restore a newer snapshot or a tag") from None
    except BaseException:
        ctx.io.delete(dst)
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
