"""Postponed buckets (``bucket`` = -2): compacting rows not yet in a bucket into real ones.

A postponed-bucket table (Paimon 1.x's mode for writers that do not know the bucket yet)
keeps new rows in each partition's ``bucket-postpone`` directory (bucket -2), where no read
sees them, until a compaction puts them into real buckets, as Paimon's compaction of such
a table does (``PostponeBucketCompactSplitSource``, ``PostponeUtils``):

```
 1. count   each partition with postponed files gets the bucket count its real buckets
            already have (all files of a partition agree: else the table is damaged), else
            ``postpone.default-bucket-num``, else one bucket per
            ``postpone.target-row-num-per-bucket`` postponed rows, else per
            ``postpone.target-size-per-bucket`` (1 gb) of postponed files
 2. replay  the partition's postponed files in the order they were written (by creation
            time, as Paimon orders one writer's files; then by name), the rows of a file in
            their sequence order; the rows take new sequence numbers in that order, above
            every row of the table (a later write of a key wins, as on Paimon's replay)
 3. write   each row into bucket hash(bucket key) mod count, merged per key as a writer
            merges, as new level-0 files of those buckets
 4. commit  one COMPACT snapshot: the postponed files DELETEd, the new files ADDed (each
            entry with its partition's bucket count as ``totalBuckets``); a concurrent
            compaction of the same files wins and ours is deleted
```

A batch write of minipaimon into such a table (``postpone.batch-write-fixed-bucket``, true
by default, as Paimon's batch writes into fixed buckets) is followed by step 1-4 for the
partitions it wrote, so its rows are read once it returns; a streaming write leaves them
postponed, as Paimon's streaming writers do, until ``compact()``.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Collection
from typing import Any

import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..commit.commit import FileStoreCommit
from ..dynamic.cross_partition import Routed
from ..errors import CommitConflictError, CorruptMetadataError
from ..format.bucket_names import POSTPONE_BUCKET
from ..format.kinds import ROW_KIND_COLUMN, SEQUENCE, VALUE_KIND, row_kind_names
from ..format.manifest_file import ManifestEntry
from ..format.snapshot import Snapshot
from ..metadata.commit_message import CommitMessage
from ..metadata.context import HasContext, TableContext
from ..metadata.manifest_io import live_files
from ..metadata.sequence import SequenceStart, next_sequence
from ..read.read import read_file_as
from ..schema.bucket import bucket_ids_of, postponed
from ..schema.partition import PartitionSpec, iter_by_bucket, positions_within
from ..write.kv_writer import KeyValueWriter

Partition = tuple[Any, ...]


def bucket_counts(entries: list[ManifestEntry], options: Any) -> dict[Partition, int]:
    """Step 1 for every partition of ``entries`` (a snapshot's live files) with postponed
    files. Raises CorruptMetadataError for a partition whose real buckets disagree on it."""
    known: dict[Partition, int] = {}
    rows: dict[Partition, int] = defaultdict(int)
    size: dict[Partition, int] = defaultdict(int)
    for e in entries:
        p = tuple(e.partition)
        if e.bucket == POSTPONE_BUCKET:
            rows[p] += e.file.rowCount
            size[p] += e.file.fileSize
        elif e.totalBuckets > 0 and known.setdefault(p, e.totalBuckets) != e.totalBuckets:
            raise CorruptMetadataError(
                f"partition {list(p)} has real buckets of {known[p]} and of {e.totalBuckets} "
                "buckets: a postponed-bucket partition has one bucket count")
    default, per_rows = options["postpone.default-bucket-num"], options["postpone.target-row-num-per-bucket"]
    out = {}
    for p in rows:
        if p in known:
            out[p] = known[p]
        elif default is not None:
            out[p] = default
        elif per_rows is not None:
            out[p] = max(1, -(-rows[p] // per_rows))
        else:
            out[p] = max(1, -(-size[p] // options["postpone.target-size-per-bucket"]))
    return out


def compact_postponed(table: HasContext, partitions: Collection[Partition] | None = None,
                      raise_on_conflict: bool = False) -> tuple[int | None, set[tuple[Partition, int]]]:
    """Steps 1-4 of the module docs for the postponed files of ``partitions`` (all if None)
    in the latest snapshot; returns the COMPACT snapshot's id (None: nothing postponed, or a
    concurrent compaction of them won, or CommitConflictError with ``raise_on_conflict``)
    and the real (partition, bucket)s it wrote.

    Raises CorruptDataFileError / CorruptMetadataError for damaged files or metadata.
    """
    ctx = table.context()
    if not postponed(ctx.schema):
        return None, set()
    latest = ctx.snapshots.latest()
    entries = live_files(ctx.manifests, latest)
    wanted = None if partitions is None else {tuple(p) for p in partitions}
    files: dict[Partition, list[ManifestEntry]] = defaultdict(list)
    for e in entries:
        if e.bucket == POSTPONE_BUCKET and (wanted is None or tuple(e.partition) in wanted):
            files[tuple(e.partition)].append(e)
    if not files or latest is None:
        return None, set()
    counts = bucket_counts([e for e in entries if tuple(e.partition) in files], ctx.options)
    messages = _rewrite(ctx, latest, files, counts)
    committer = FileStoreCommit(ctx.io, ctx.layout, ctx.schema, f"postpone-compact-{uuid.uuid4()}",
                                fresh_user=True, manifests=ctx.manifests, clock=ctx.clock)
    written = {(tuple(m.partition), m.bucket) for m in messages if m.compactAfter}
    try:
        return committer.commit(messages, 0), written
    except CommitConflictError:
        if not committer.may_have_landed():
            committer.abort(messages)
        if raise_on_conflict:
            raise
        return None, set()


def _replay(ctx: TableContext, spec: PartitionSpec, partition: Partition, files: list[ManifestEntry]) -> pa.Table:
    """Step 2: the partition's postponed rows in write order, ``_row_kind`` for their kinds."""
    path = spec.path(list(partition))
    order = sorted(files, key=lambda e: (e.file.creationTime, e.file.fileName))
    names = [*ctx.schema.field_names, SEQUENCE, VALUE_KIND]
    parts = []
    for e in order:
        rows = read_file_as(ctx.io, ctx.layout, ctx.schemas, ctx.schema, path, POSTPONE_BUCKET, e.file, names)
        parts.append(rows.take(pc.sort_indices(rows.column(SEQUENCE))))  # stable: a file's order
    rows = pa.concat_tables(parts)
    kinds = pc.take(row_kind_names(), rows.column(VALUE_KIND))
    return rows.drop_columns([SEQUENCE, VALUE_KIND]).append_column(ROW_KIND_COLUMN, kinds)


def _rewrite(ctx: TableContext, latest: Snapshot, files: dict[Partition, list[ManifestEntry]],
             counts: dict[Partition, int]) -> list[CommitMessage]:
    """Steps 2-3: the messages of the compaction (its files written)."""
    spec = PartitionSpec.of(ctx.schema)

    def route(rows: pa.Table) -> list[Routed]:
        return [Routed(tuple(values), bucket, part, positions_within(at, within), np.zeros(0, dtype=np.int32))
                for values, table, at in spec.split_at(rows)
                for bucket, part, within in iter_by_bucket(table, bucket_ids_of(table, ctx.schema, counts[tuple(values)]))]

    writer = KeyValueWriter(ctx.io, ctx.layout, ctx.schema,
                            SequenceStart(next_sequence(ctx.manifests, latest), latest.id), route)
    for partition in sorted(files, key=repr):
        writer.write(_replay(ctx, spec, partition, files[partition]))
    written = writer.prepare_commit()
    messages = [msgspec.structs.replace(m, totalBuckets=counts[tuple(m.partition)], newFiles=[],
                                        compactAfter=m.newFiles, changelogFiles=[]) for m in written]
    for partition, es in files.items():
        messages.append(CommitMessage(partition=list(partition), partitionPath=spec.path(list(partition)),
                                      bucket=POSTPONE_BUCKET, totalBuckets=es[0].totalBuckets,
                                      compactBefore=[e.file for e in es]))
    return messages


__all__ = ["bucket_counts", "compact_postponed"]
