"""A table's history: one row per retained snapshot, newest first, as deltalake's
``history()`` lists versions.

Each row says what kind of commit it was, by whom and when, and what it changed, from the
snapshot's delta manifests: the data files it added and removed and the records in them.
Records are rows as stored: for an append table the rows written (a copy-on-write delete
or update removes the files it rewrote and adds the rewritten ones, a compaction removes
and adds the same rows); for a primary-key table every upsert and delete adds records until
compaction merges them. ``restored_from`` names the snapshot a ``restore`` brought back.
The table's row count is ``Table.count()``.
"""

from __future__ import annotations

import pyarrow as pa

from ..format.manifest_file import ADD
from ..metadata.context import TableContext
from .restore import RESTORED_FROM

HISTORY_SCHEMA = pa.schema([
    ("snapshot_id", pa.int64()), ("committed_at", pa.timestamp("ms", tz="UTC")),
    ("commit_kind", pa.string()), ("commit_user", pa.string()), ("commit_identifier", pa.int64()),
    ("schema_id", pa.int64()), ("files_added", pa.int64()), ("files_removed", pa.int64()),
    ("records_added", pa.int64()), ("records_removed", pa.int64()),
    ("total_records", pa.int64()), ("restored_from", pa.int64()),
])


def history(ctx: TableContext, limit: int | None = None) -> pa.Table:
    """The retained snapshots, newest first (at most ``limit``), with what each changed."""
    snaps = list(ctx.snapshots.snapshots())[::-1]
    if limit is not None:
        snaps = snaps[:max(limit, 0)]
    rows = []
    for s in snaps:
        entries = ctx.manifests.delta_entries(s)
        added = [e.file.rowCount for e in entries if e.kind == ADD]
        removed = [e.file.rowCount for e in entries if e.kind != ADD]
        restored = (s.properties or {}).get(RESTORED_FROM)
        rows.append({
            "snapshot_id": s.id, "committed_at": s.timeMillis, "commit_kind": s.commitKind,
            "commit_user": s.commitUser, "commit_identifier": s.commitIdentifier,
            "schema_id": s.schemaId, "files_added": len(added), "files_removed": len(removed),
            "records_added": sum(added), "records_removed": sum(removed),
            "total_records": s.totalRecordCount,
            "restored_from": int(restored) if restored is not None and restored.isdigit() else None,
        })
    return pa.Table.from_pylist(rows, schema=HISTORY_SCHEMA)


__all__ = ["HISTORY_SCHEMA", "history"]
