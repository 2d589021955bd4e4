"""Migrating a table of minipaimon's earlier format into Apache Paimon's, in one safe step.

```
 PATH (earlier format)         PATH.migrating (Paimon's format)
 latest snapshot's rows  ───►  schema 0: the same columns and field ids, keys, options
                               append files whose layout fits: hard-linked (same name)
                               the rest (primary-key files: Paimon's key columns and
                               bucket hash differ): read merged, written anew
                               snapshot 1: all of it, one commit
 swap:  PATH -> PATH.legacy,  PATH.migrating -> PATH,  delete PATH.legacy
```

A crash at any point leaves either the old table at ``PATH`` (and a partial
``PATH.migrating``, removed when migrate runs again) or the new one (a leftover
``PATH.legacy`` is removed when migrate runs again); between the two renames ``PATH`` is
briefly missing and migrate run again finishes the swap. History (older snapshots, tags,
consumers) is not carried over: the migrated table starts at one snapshot holding the old
table's latest rows; the tags it had are listed in the result.

Local disk only (it renames directories); a table on an object store is copied into a new
path with :func:`copy_table`.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from typing import Any

import msgspec
import pyarrow.parquet as pq

from .commit.commit import FileStoreCommit
from .errors import UnsupportedFeatureError
from .format.table_schema import VERSION, TableSchema
from .io.fileio import FileIO, LocalFileIO
from .io.fileio_resolve import resolve
from .metadata.commit_message import CommitMessage
from .metadata.manifest_io import live_files
from .schema.schema import SchemaManager
from .table import Table, open_table

STAGING, BACKUP = ".migrating", ".legacy"


@dataclass(frozen=True)
class MigrateResult:
    """What a migration did: the new snapshot, the data files reused (hard links) and
    rewritten, and the tags of the old table that were not carried over."""

    path: str
    migrated: bool  # False: the table was in Paimon's format already
    files_reused: int = 0
    rows_rewritten: int = 0
    tags_dropped: list[str] = field(default_factory=list)


def migrate(path: str, options: dict[str, str] | None = None) -> MigrateResult:
    """Rewrite the table at ``path`` (local disk) into Apache Paimon's format in place.

    Raises TableNotFoundError, UnsupportedFeatureError (an object-store path: use
    :func:`copy_table`)."""
    root, io = resolve(path, options)
    if not isinstance(io, LocalFileIO):
        raise UnsupportedFeatureError(
            f"migrating {root} in place needs a local path (it renames directories); copy an "
            "object-store table with minipaimon_core.migrate.copy_table(path, new_path)")
    staging, backup = root + STAGING, root + BACKUP
    if not os.path.isdir(root) and os.path.isdir(staging):
        _rename(staging, root)  # a crash between the two renames: finish the swap
    if os.path.isdir(backup):
        shutil.rmtree(backup)
    old = open_table(root, io=io)
    if not old.table_schema.legacyFormat:
        return MigrateResult(root, False)
    if os.path.isdir(staging):
        shutil.rmtree(staging)  # an earlier attempt that never swapped
    tags = sorted(old.tags())
    reused, rewritten = _copy_into(old, staging, io, link=True)
    _rename(root, backup)
    _rename(staging, root)
    shutil.rmtree(backup)
    return MigrateResult(root, True, reused, rewritten, tags)


def _rename(src: str, dst: str) -> None:
    os.rename(src, dst)


def copy_table(path: str, new_path: str, options: dict[str, str] | None = None) -> MigrateResult:
    """Write the latest rows of the table at ``path`` (of either format, any store) as a new
    table in Paimon's format at ``new_path`` (any store; ``options``: the storage options
    of both). Raises TableAlreadyExistsError if a table is at ``new_path``."""
    root, io = resolve(path, options)
    target, target_io = resolve(new_path, options)
    old = open_table(root, io=io)
    reused, rewritten = _copy_into(old, target, target_io, link=False)
    return MigrateResult(target, True, reused, rewritten, sorted(old.tags()))


def new_schema(schema: TableSchema) -> TableSchema:
    """Schema 0 of the migrated table: the same columns, ids, keys and options (``bucket``
    written explicitly, as minipaimon writes it)."""
    options = dict(schema.options)
    options.setdefault("bucket", "1" if schema.primaryKeys else "-1")
    return TableSchema(version=VERSION, id=0, fields=list(schema.fields), highestFieldId=schema.highestFieldId,
                       partitionKeys=list(schema.partitionKeys), primaryKeys=list(schema.primaryKeys),
                       options=options, comment=schema.comment, timeMillis=schema.timeMillis)


def _copy_into(old: Table, target: str, io: FileIO, link: bool) -> tuple[int, int]:
    """Create the Paimon-format table at ``target`` from ``old``'s latest snapshot; the
    number of files reused and of rows rewritten."""
    from .format.layout import TableLayout

    schema = new_schema(old.table_schema)
    SchemaManager(io, TableLayout(target)).create(schema)
    new = open_table(target, io=io)
    snapshot = old.latest_snapshot()
    if snapshot is None:
        return 0, 0
    reusable: list[Any] = []
    if link and not schema.primaryKeys and int(schema.options["bucket"]) < 1:
        # written with the latest schema: columns by name and type as the new schema 0
        reusable = [e for e in live_files(old.manifests, snapshot) if e.file.schemaId == old.table_schema.id
                    and paimon_reads(_path_of(old, e))]
    messages = []
    for e in reusable:
        src = _path_of(old, e)
        path = new.context().partition_spec().path(e.partition)
        os.makedirs(new.layout.bucket_dir(path, 0), exist_ok=True)
        os.link(src, new.layout.data_file_path(path, 0, e.file.fileName))
        messages.append(_message(new, e, path))
    reused = {e.file.fileName for e in reusable}
    writer = new.new_write("migrate")
    rewritten = 0
    for split in old.scan().plan():
        if reusable:  # append files: the ones not reused, each as it is stored
            parts = [old.read_file_rows(split, f) for f in split.files if f.fileName not in reused]
        else:  # merged rows, bucketed anew (Paimon's bucket hash differs from the old one)
            parts = [b for b in old.read_split(split)]
        for part in parts:
            writer.write(part)
            rewritten += part.num_rows
    commit: FileStoreCommit = new.new_commit("migrate")
    commit.commit([*messages, *writer.prepare_commit()], 0)
    return len(reusable), rewritten


# Parquet encodings Paimon's Java reader (0.9) decodes; the earlier format's writer used
# DELTA_BINARY_PACKED for integer columns, which it refuses ("Unsupported encoding").
_JAVA_ENCODINGS = frozenset({"PLAIN", "PLAIN_DICTIONARY", "RLE_DICTIONARY", "RLE", "BIT_PACKED"})


def paimon_reads(path: str) -> bool:
    """Whether every Paimon reader takes the data file at ``path`` (local) as it is: only
    encodings Java's reader knows, and decimals of up to 18 digits stored as integers."""
    metadata = pq.ParquetFile(path).metadata
    for i in range(metadata.num_row_groups):
        group = metadata.row_group(i)
        for j in range(group.num_columns):
            if not set(group.column(j).encodings) <= _JAVA_ENCODINGS:
                return False
    for k in range(metadata.num_columns):
        column = metadata.schema.column(k)
        if column.logical_type.type == "DECIMAL" and column.precision <= 18 \
                and column.physical_type not in ("INT32", "INT64"):
            return False
    return True


def _path_of(table: Table, entry: Any) -> str:
    return table.layout.data_file_path(table.context().partition_spec().path(entry.partition),
                                       entry.bucket, entry.file.fileName)


def _message(new: Table, entry: Any, path: str) -> CommitMessage:
    f = msgspec.structs.replace(entry.file, schemaId=0, level=0, sequenceOffset=0)
    return CommitMessage(list(entry.partition), path, 0, -1, newFiles=[f])


__all__ = ["MigrateResult", "copy_table", "migrate", "new_schema"]
