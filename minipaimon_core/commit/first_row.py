"""First-row tables: each key's first row only, in every level Paimon's readers read.

Paimon's readers take the files of a ``first-row`` table at levels >= 1 without merging
them (their level 0 is skipped; ``batch_scan_skip_level0``): Paimon's writers keep each
key in at most one of those files by a lookup compaction that drops every new row whose key
is already there. minipaimon commits a write of such a table straight into a level >= 1
(lsm/placement.py), so its committer does the same drop: a new file's rows whose key is
live in the bucket (levels >= 1), or in a file of the same commit with lower sequence
numbers, are removed by rewriting the file without them (a file left empty is not
committed). The rows dropped are exactly those the first-row merge discards, so the table's
rows do not change, and every level >= 1 of a bucket together holds each key once; a
compaction merges such files into files of the same property.

Which rows lose is the deletion-vector maintainer's judgement (:class:`VectorMaintainer
.losing_rows`); the base's rows never lose, since a commit's numbers are above every row
committed before it (minipaimon_core.metadata.sequence).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import msgspec
import numpy as np
import pyarrow as pa

from ..file_format.data_file import KEY_PREFIX, file_schema, read_data_file, write_data_file
from ..format.layout import TableLayout
from ..format.manifest_file import DataFileMeta, ManifestEntry
from ..format.snapshot import Snapshot
from ..io.fileio import FileIO
from ..metadata.commit_message import CommitMessage
from ..metadata.deletion_vectors import BucketKey, Vectors
from ..schema.schema import SchemaCache
from .dv_maintainer import VectorMaintainer


def first_rows_only(judge: VectorMaintainer, io: FileIO, layout: TableLayout, schemas: SchemaCache,
                    messages: Sequence[CommitMessage], base: Snapshot | None,
                    removed: Sequence[ManifestEntry],
                    moved: list[tuple[CommitMessage, CommitMessage]]) -> list[CommitMessage]:
    """``messages`` with the rows the first-row merge discards removed from their new files
    at levels >= 1 ((original, rewritten) pairs appended to ``moved``)."""
    added: dict[BucketKey, list[DataFileMeta]] = defaultdict(list)
    for m in messages:
        added[(tuple(m.partition), m.bucket)] += [f for f in m.newFiles if f.level > 0]
    added = {k: v for k, v in added.items() if v}
    if not added:
        return list(messages)
    gone = {((tuple(e.partition), e.bucket), e.file.fileName) for e in removed}
    losers = judge.losing_rows(base, added, gone)
    out = []
    for m in messages:
        drop = losers.get((tuple(m.partition), m.bucket), {})
        if any(f.fileName in drop for f in m.newFiles):
            new = _without_rows(io, layout, schemas, m, drop)
            moved.append((m, new))
            m = new
        out.append(m)
    return out


def _without_rows(io: FileIO, layout: TableLayout, schemas: SchemaCache, message: CommitMessage,
                  drop: Vectors) -> CommitMessage:
    """``message`` with each new file named in ``drop`` rewritten without those rows."""
    files = []
    for f in message.newFiles:
        positions = drop.get(f.fileName)
        if positions is None:
            files.append(f)
            continue
        t = read_data_file(io, layout, message.partitionPath, message.bucket, f,
                           declared=file_schema(schemas.get(f.schemaId), True))
        t = t.select([n for n in t.column_names if not n.startswith(KEY_PREFIX)])
        keep = np.ones(t.num_rows, dtype=bool)
        keep[positions] = False
        if not keep.any():
            continue
        out = write_data_file(io, layout, message.partitionPath, message.bucket, t.filter(pa.array(keep)),
                              schema=schemas.get(f.schemaId), level=f.level,
                              file_source=f.fileSource or 0, prefix="data")
        files.append(msgspec.structs.replace(out, creationTime=f.creationTime))
    return msgspec.structs.replace(message, newFiles=files)


__all__ = ["first_rows_only"]
