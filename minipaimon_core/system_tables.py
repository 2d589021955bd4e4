"""System tables: a table's metadata as Arrow tables (``t.system_table("snapshots")``).

=============  ==================================================================================
name           one row per
=============  ==================================================================================
snapshots      retained snapshot (oldest first)
schemas        schema version
options        table option of the current schema
files          data file of the snapshot (latest unless ``snapshot_id``)
manifests      data manifest of the snapshot (base list, then delta list)
partitions     partition of the snapshot, with record/file counts and sizes
buckets        (partition, bucket) of the snapshot, likewise
tags           tag
branches       branch other than main (Paimon's ``$branches``: the tag and snapshot it starts from)
consumers      streaming consumer (its next snapshot)
audit_log      row of the snapshot, after a leading ``rowkind`` column
health         check of :mod:`minipaimon_core.maintenance.health` (value, detail, the action that fixes it)
history        retained snapshot, newest first (:mod:`minipaimon_core.maintenance.history`)
=============  ==================================================================================

``audit_log``: the rows a batch read returns, each with ``rowkind`` "+I"; with
``incremental-between`` (:func:`audit_log_between`) the changes of those snapshots with
their kinds, deletes included. For a
primary-key table these are the merged rows, so deletes and update-before images do not
appear; a streaming read with ``_row_kind`` shows the changes themselves. Record counts of
``files`` / ``partitions`` / ``buckets`` are physical rows (before merging).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import msgspec
import pyarrow as pa
import pyarrow.compute as pc

from . import file_format
from .errors import InvalidArgumentError
from .format.kinds import VALUE_KIND, row_kind_names
from .format.manifest_file import FILE_SOURCE_COMPACT, ManifestEntry
from .format.snapshot import Snapshot
from .format.tag import duration_text
from .maintenance import health as table_health
from .maintenance import history as table_history
from .metadata.branches import BranchManager
from .metadata.consumer import ConsumerManager
from .metadata.manifest_io import live_files
from .metadata.snapshot_manager import SnapshotManager
from .metadata.tags import TagManager
from .read.table_view import TableView
from .schema.partition import PartitionSpec
from .schema.schema import SchemaManager
from .stream.stream import ROW_KIND, changes_between

_MS = pa.timestamp("ms")

SNAPSHOTS_SCHEMA = pa.schema([
    ("snapshot_id", pa.int64()), ("schema_id", pa.int64()), ("commit_user", pa.string()),
    ("commit_identifier", pa.int64()), ("commit_kind", pa.string()), ("commit_time", _MS),
    ("base_manifest_list", pa.string()), ("delta_manifest_list", pa.string()),
    ("changelog_manifest_list", pa.string()), ("total_record_count", pa.int64()),
    ("delta_record_count", pa.int64()), ("changelog_record_count", pa.int64()),
    ("watermark", pa.int64()), ("next_sequence_number", pa.int64()),
])
SCHEMAS_SCHEMA = pa.schema([
    ("schema_id", pa.int64()), ("fields", pa.string()), ("partition_keys", pa.string()),
    ("primary_keys", pa.string()), ("options", pa.string()), ("comment", pa.string()),
    ("update_time", _MS),
])
OPTIONS_SCHEMA = pa.schema([("key", pa.string()), ("value", pa.string())])
FILES_SCHEMA = pa.schema([
    ("partition", pa.string()), ("bucket", pa.int32()), ("file_path", pa.string()),
    ("file_format", pa.string()), ("schema_id", pa.int64()), ("level", pa.int32()),
    ("record_count", pa.int64()), ("file_size_in_bytes", pa.int64()), ("min_key", pa.string()),
    ("max_key", pa.string()), ("null_value_counts", pa.string()), ("min_value_stats", pa.string()),
    ("max_value_stats", pa.string()), ("min_sequence_number", pa.int64()),
    ("max_sequence_number", pa.int64()), ("creation_time", _MS), ("file_source", pa.string()),
    ("delete_row_count", pa.int64()),
])
MANIFESTS_SCHEMA = pa.schema([
    ("file_name", pa.string()), ("file_size", pa.int64()), ("num_added_files", pa.int64()),
    ("num_deleted_files", pa.int64()), ("schema_id", pa.int64()), ("min_bucket", pa.int32()),
    ("max_bucket", pa.int32()), ("min_level", pa.int32()), ("max_level", pa.int32()),
])
_GROUP_COLUMNS = [("record_count", pa.int64()), ("file_size_in_bytes", pa.int64()),
                  ("file_count", pa.int64()), ("last_update_time", _MS)]
PARTITIONS_SCHEMA = pa.schema([("partition", pa.string()), *_GROUP_COLUMNS])
BUCKETS_SCHEMA = pa.schema([("partition", pa.string()), ("bucket", pa.int32()), *_GROUP_COLUMNS])
TAGS_SCHEMA = pa.schema([
    ("tag_name", pa.string()), ("snapshot_id", pa.int64()), ("schema_id", pa.int64()),
    ("commit_time", _MS), ("record_count", pa.int64()),
    ("create_time", _MS), ("time_retained", pa.string()),  # a tag with a retention time: Paimon's
])
CONSUMERS_SCHEMA = pa.schema([("consumer_id", pa.string()), ("next_snapshot_id", pa.int64())])
BRANCHES_SCHEMA = pa.schema([("branch_name", pa.string()), ("created_from_tag", pa.string()),
                             ("created_from_snapshot", pa.int64()), ("create_time", _MS)])


def system_table(table: TableView, name: str, snapshot_id: int | None = None) -> pa.Table:
    """The system table ``name`` of ``table`` (see module docs).

    Raises:
        InvalidArgumentError: unknown name (the message lists the names).
        SnapshotNotFoundError / SnapshotExpiredError: a bad ``snapshot_id``.
    """
    build = _TABLES.get(name)
    if build is None:
        raise InvalidArgumentError(f"unknown system table {name!r}; one of: {', '.join(SYSTEM_TABLES)}")
    return build(table, snapshot_id)


def _snapshot(table: TableView, snapshot_id: int | None) -> Snapshot | None:
    return table.snapshot(snapshot_id) if snapshot_id is not None else table.latest_snapshot()


def _rows(schema: pa.Schema, rows: list[dict[str, Any]]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=schema)


def _json(value: Any) -> str:
    return msgspec.json.encode(value).decode()


def snapshots(table: TableView, _: int | None = None) -> pa.Table:
    return _rows(SNAPSHOTS_SCHEMA, [{
        "snapshot_id": s.id, "schema_id": s.schemaId, "commit_user": s.commitUser,
        "commit_identifier": s.commitIdentifier, "commit_kind": s.commitKind,
        "commit_time": s.timeMillis, "base_manifest_list": s.baseManifestList,
        "delta_manifest_list": s.deltaManifestList,
        "changelog_manifest_list": s.changelogManifestList,
        "total_record_count": s.totalRecordCount, "delta_record_count": s.deltaRecordCount,
        "changelog_record_count": s.changelogRecordCount, "watermark": s.watermark,
        "next_sequence_number": s.nextSequenceNumber,
    } for s in table.snapshots()])


def schemas(table: TableView, _: int | None = None) -> pa.Table:
    rows = []
    for sid in SchemaManager(table.io, table.layout).schema_ids():
        s = table.schema_by_id(sid)
        rows.append({
            "schema_id": s.id, "fields": _json(s.fields), "partition_keys": _json(s.partitionKeys),
            "primary_keys": _json(s.primaryKeys), "options": _json(s.options),
            "comment": s.comment, "update_time": s.timeMillis,
        })
    return _rows(SCHEMAS_SCHEMA, rows)


def options(table: TableView, _: int | None = None) -> pa.Table:
    return _rows(OPTIONS_SCHEMA, [{"key": k, "value": v} for k, v in sorted(table.options().items())])


def _entries(table: TableView, snapshot_id: int | None) -> list[ManifestEntry]:
    entries = live_files(table.manifests, _snapshot(table, snapshot_id))
    return sorted(entries, key=lambda e: (repr(e.partition), e.bucket, e.file.level, e.file.fileName))


def _partition_namer(table: TableView) -> Callable[[Sequence[Any]], str]:
    spec = PartitionSpec.of(table.table_schema)
    return lambda values: spec.path(values)


def files(table: TableView, snapshot_id: int | None = None) -> pa.Table:
    name_of = _partition_namer(table)
    rows = []
    for e in _entries(table, snapshot_id):
        f = e.file
        path = name_of(e.partition)
        columns = table.schema_by_id(f.schemaId).field_names
        stats = f.valueStats
        rows.append({
            "partition": path, "bucket": e.bucket,
            "file_path": table.layout.data_file_path(path, e.bucket, f.fileName),
            "file_format": file_format.extension_of(f.fileName), "schema_id": f.schemaId, "level": f.level,
            "record_count": f.rowCount, "file_size_in_bytes": f.fileSize,
            "min_key": _json(f.minKey), "max_key": _json(f.maxKey),
            "null_value_counts": _json(dict(zip(columns, stats.nullCounts))),
            "min_value_stats": _json(dict(zip(columns, stats.minValues))),
            "max_value_stats": _json(dict(zip(columns, stats.maxValues))),
            "min_sequence_number": f.minSequenceNumber, "max_sequence_number": f.maxSequenceNumber,
            "creation_time": f.creationTime,
            "file_source": "COMPACT" if f.fileSource == FILE_SOURCE_COMPACT else "APPEND",
            "delete_row_count": f.deleteRowCount,
        })
    return _rows(FILES_SCHEMA, rows)


def manifests(table: TableView, snapshot_id: int | None = None) -> pa.Table:
    snap = _snapshot(table, snapshot_id)
    metas = table.manifests.data_manifests(snap) if snap is not None else []
    return _rows(MANIFESTS_SCHEMA, [{
        "file_name": m.fileName, "file_size": m.fileSize, "num_added_files": m.numAddedFiles,
        "num_deleted_files": m.numDeletedFiles, "schema_id": m.schemaId,
        "min_bucket": m.minBucket, "max_bucket": m.maxBucket,
        "min_level": m.minLevel, "max_level": m.maxLevel,
    } for m in metas])


def _grouped(table: TableView, snapshot_id: int | None, by_bucket: bool) -> list[dict[str, Any]]:
    name_of = _partition_namer(table)
    groups: dict[tuple[str, int], dict[str, Any]] = {}
    for e in _entries(table, snapshot_id):
        key = (name_of(e.partition), e.bucket if by_bucket else 0)
        g = groups.setdefault(key, {"partition": key[0], "record_count": 0, "file_size_in_bytes": 0,
                                    "file_count": 0, "last_update_time": 0})
        if by_bucket:
            g["bucket"] = e.bucket
        g["record_count"] += e.file.rowCount
        g["file_size_in_bytes"] += e.file.fileSize
        g["file_count"] += 1
        g["last_update_time"] = max(g["last_update_time"], e.file.creationTime)
    return [groups[k] for k in sorted(groups)]


def partitions(table: TableView, snapshot_id: int | None = None) -> pa.Table:
    return _rows(PARTITIONS_SCHEMA, _grouped(table, snapshot_id, by_bucket=False))


def buckets(table: TableView, snapshot_id: int | None = None) -> pa.Table:
    return _rows(BUCKETS_SCHEMA, _grouped(table, snapshot_id, by_bucket=True))


def tags(table: TableView, _: int | None = None) -> pa.Table:
    rows = []
    for name in table.tags():
        info = table.tag_info(name)
        s = info.snapshot
        retained = info.time_retained_ms
        rows.append({"tag_name": name, "snapshot_id": s.id, "schema_id": s.schemaId,
                     "commit_time": s.timeMillis, "record_count": s.totalRecordCount,
                     "create_time": info.create_time,  # local wall-clock time, as Paimon's
                     "time_retained": None if retained is None else duration_text(retained)})
    return _rows(TAGS_SCHEMA, rows)


def consumers(table: TableView, _: int | None = None) -> pa.Table:
    found = ConsumerManager(table.io, table.layout).consumers()
    return _rows(CONSUMERS_SCHEMA, [{"consumer_id": c, "next_snapshot_id": n} for c, n in found.items()])


def branches(table: TableView, _: int | None = None) -> pa.Table:
    """Paimon's ``$branches``: each branch, the tag and snapshot it starts from (its earliest
    snapshot, and the tag on it where it has one), when its first schema was written."""
    rows = []
    for name in BranchManager(table.io, table.layout).names():
        layout = table.layout.on_branch(name)
        earliest = SnapshotManager(table.io, layout).earliest_id()
        tags = TagManager(table.io, layout).snapshots()
        based = sorted(n for n, snap in tags.items() if earliest is not None and snap.id == earliest)
        times = [f.modified_ms for f in table.io.list_files(layout.schema_dir)]
        rows.append({"branch_name": name, "created_from_tag": based[0] if based else None,
                     "created_from_snapshot": earliest, "create_time": min(times, default=None)})
    return _rows(BRANCHES_SCHEMA, rows)


def audit_log(table: TableView, snapshot_id: int | None = None) -> pa.Table:
    """The rows a read of the snapshot returns, each with its kind as Paimon's audit log
    gives it: the kind the row was stored with where the read returns a stored row (a row
    written as ``+U`` is ``+U``), ``+I`` where a merge built it (PrimaryKeySimpleTableTest.
    testAuditLog)."""
    data = table.scan(snapshot_id=snapshot_id).to_arrow(with_kind=True)
    kinds = pc.take(row_kind_names(), data.column(VALUE_KIND))
    data = data.drop_columns([VALUE_KIND])
    return data.add_column(0, pa.field("rowkind", pa.string(), nullable=False), kinds)


def audit_log_between(table: TableView, start: int, end: int) -> pa.Table:
    """``audit_log`` of the changes in snapshots ``(start, end]`` (``incremental-between``):
    each change with its kind (+I, -U, +U, -D), from changelog files where a producer writes
    them, else from the new files' row kinds (see minipaimon_core.stream.stream.changes_between).
    """
    data = changes_between(table, start, end, read_changelog=True)
    kinds = data.column(ROW_KIND)
    data = data.drop_columns([ROW_KIND])
    return data.add_column(0, pa.field("rowkind", pa.string(), nullable=False), kinds)


_TABLES: dict[str, Callable[[TableView, int | None], pa.Table]] = {
    "snapshots": snapshots,
    "schemas": schemas,
    "options": options,
    "files": files,
    "manifests": manifests,
    "partitions": partitions,
    "buckets": buckets,
    "tags": tags,
    "branches": branches,
    "consumers": consumers,
    "audit_log": audit_log,
    "health": lambda table, _: table_health.health(table.context()).to_arrow(),
    "history": lambda table, _: table_history.history(table.context(), None),
}
SYSTEM_TABLES: tuple[str, ...] = tuple(_TABLES)
