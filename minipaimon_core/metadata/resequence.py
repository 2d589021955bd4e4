"""Keeping "the later commit wins" when writers raced: moving a message's sequence numbers.

A primary-key writer numbers its rows from the table's next sequence number at the snapshot
it started on (:mod:`minipaimon_core.metadata.sequence`). If another commit landed since and added
files to the same bucket whose numbers reach this writer's, the two could tie or the
earlier commit could win a key, so the committer rewrites this message's files (data and
input changelog) with every number moved up by the same amount, above the table's next
number: the rows keep their order among themselves and now follow everything committed.
Nothing is rewritten when no such commit happened, which is the common case.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
import pyarrow as pa
import pyarrow.compute as pc

from ..file_format.data_file import KEY_PREFIX, file_schema, read_data_file, write_data_file
from ..format.kinds import SEQUENCE
from ..format.layout import TableLayout
from ..format.manifest_file import ADD, DataFileMeta
from ..format.snapshot import Snapshot
from ..io.fileio import FileIO
from ..schema.schema import SchemaCache
from .commit_message import CommitMessage
from .manifest_io import ManifestIO
from .snapshot_manager import SnapshotManager

BucketKey = tuple[tuple, int]


def added_since(manifests: ManifestIO, snapshots: SnapshotManager, base_id: int | None,
                latest: Snapshot) -> dict[BucketKey, int] | None:
    """Per (partition, bucket), the highest sequence number of the files the snapshots
    after ``base_id`` up to ``latest`` added; None if some of them expired (unknown)."""
    if base_id is not None and base_id >= latest.id:
        return {}
    first = (base_id or 0) + 1
    top: dict[BucketKey, int] = {}
    for sid in range(first, latest.id + 1):
        snap = latest if sid == latest.id else snapshots.try_get(sid)
        if snap is None:
            return None
        for e in manifests.delta_entries(snap):
            if e.kind == ADD:
                key = (tuple(e.partition), e.bucket)
                top[key] = max(top.get(key, -1), e.file.maxSequenceNumber)
    return top


def needs_moving(message: CommitMessage, added: dict[BucketKey, int] | None) -> bool:
    """Whether ``message``'s numbers may tie with or fall below files added since its
    writer started (``added``: :func:`added_since`; None: unknown, so yes)."""
    files = [*message.newFiles, *message.changelogFiles]
    if not files:
        return False
    if added is None:
        return True
    low = min(f.minSequenceNumber for f in files)
    return added.get((tuple(message.partition), message.bucket), -1) >= low


def move(io: FileIO, layout: TableLayout, schemas: SchemaCache, message: CommitMessage,
         floor: int, written: list[str]) -> CommitMessage:
    """``message`` with its files rewritten so their lowest number is ``floor`` (paths of
    the new files appended to ``written``; the old files are the caller's to delete)."""
    files = [*message.newFiles, *message.changelogFiles]
    delta = floor - min(f.minSequenceNumber for f in files)

    def rewrite(f: DataFileMeta, prefix: str) -> DataFileMeta:
        schema = schemas.get(f.schemaId)
        t = read_data_file(io, layout, message.partitionPath, message.bucket, f,
                           declared=file_schema(schema, True))
        t = t.select([n for n in t.column_names if not n.startswith(KEY_PREFIX)])
        i = t.column_names.index(SEQUENCE)
        t = t.set_column(i, t.schema.field(i), pc.add(t.column(i), pa.scalar(delta, pa.int64())))
        out = write_data_file(io, layout, message.partitionPath, message.bucket, t, schema=schema,
                              level=f.level, file_source=f.fileSource or 0, prefix=prefix)
        written.append(layout.data_file_path(message.partitionPath, message.bucket, out.fileName))
        return msgspec.structs.replace(out, creationTime=f.creationTime)

    return msgspec.structs.replace(
        message, newFiles=[rewrite(f, "data") for f in message.newFiles],
        changelogFiles=[rewrite(f, "changelog") for f in message.changelogFiles])


def file_paths(layout: TableLayout, messages: Sequence[CommitMessage]) -> list[str]:
    """Paths of the new and changelog files of ``messages``."""
    return [layout.data_file_path(m.partitionPath, m.bucket, f.fileName)
            for m in messages for f in (*m.newFiles, *m.changelogFiles)]


def rewritten_paths(layout: TableLayout, moved: Sequence[tuple[CommitMessage, CommitMessage]],
                    originals: bool) -> set[str]:
    """Data and changelog files of the (original, rewritten) message pairs of an attempt
    that only the originals (``originals=True``: garbage once the rewrite is committed) or
    only the rewrites (garbage when the attempt fails) have; a rewrite keeps some files."""
    old = set(file_paths(layout, [m for m, _ in moved]))
    new = set(file_paths(layout, [m for _, m in moved]))
    return old - new if originals else new - old


__all__ = ["added_since", "file_paths", "move", "needs_moving", "rewritten_paths"]
