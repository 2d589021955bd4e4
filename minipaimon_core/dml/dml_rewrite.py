"""Deletes from primary-key tables whose merge engine cannot take a ``-D`` row: copy-on-write
of compacted buckets, as Paimon's Spark DELETE does them (``DeleteFromPaimonTableCommand``,
its non-upsert path).

Which tables: ``first-row``; ``partial-update`` without ``partial-update.remove-record-on-
delete`` or ``...-on-sequence-group``; ``aggregation`` without
``aggregation.remove-record-on-delete``. A ``-D`` there is refused, dropped or folded into
the key's value, so it cannot remove a row; instead the files that hold a deleted row are
rewritten without it.

That is only right where each stored row is a key's merged row: every bucket that may hold
a selected row (its files pass the filter's partition and key-range pruning) must be
*compacted*: its live files' key ranges do not overlap and they hold no retraction rows
(and a table whose reads skip level 0, ``first-row``, has no level-0 file waiting)
(Paimon's "raw convertible" splits; it asks "please use 'COMPACT' procedure first"
otherwise, and so does minipaimon, with :class:`UnsupportedFeatureError`, all of the
bucket's files counted, not only the filter's: a file the filter skips may still hold an
older version of a rewritten key). Then:

1. read     each candidate file as stored, with ``_SEQUENCE_NUMBER`` and ``_VALUE_KIND``
2. select   the rows the condition holds for (null is not true)
3. write    per file with a selected row, its other rows, in key order, at its level and
            with their sequence numbers (nothing else holds those keys: the order of every
            key is kept)
4. commit   one OVERWRITE (as Paimon's copy-on-write DELETE, and minipaimon's of append
            tables): the rewritten files DELETEd, their replacements ADDed; conflicts as
            every primary-key change: a replaced file gone (FILES_GONE), or a commit since
            the read wrote one of the keys of a rewritten file (ROWS_CHANGED): read again.

No changelog rows are written for the deleted keys (streams see the OVERWRITE with
``streaming-read-overwrite``), as for a copy-on-write delete of an append table.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..errors import UnsupportedFeatureError
from ..expressions import predicate
from ..format.kinds import SEQUENCE, VALUE_KIND
from ..io import pools
from ..lsm.key_range import find_overlap
from ..lsm.merge_config import skips_level0
from ..metadata.commit_message import CommitMessage
from ..metadata.context import TableContext
from ..metadata.manifest_io import live_files, live_in_buckets
from ..read.table_scan import TableScan, read_file_rows
from ..schema.bucket import num_buckets
from ..write.kv_writer import write_sorted_run
from .target import AppendFileRows, Target


def rewrites_deletes(ctx: TableContext) -> bool:
    """Whether a delete of ``ctx``'s primary-key table rewrites files (see the module)."""
    options = ctx.options
    engine = options["merge-engine"]
    return bool(ctx.schema.primaryKeys) and (
        engine == "first-row"
        or engine == "partial-update" and not (options["partial-update.remove-record-on-delete"]
                                               or options["partial-update.remove-record-on-sequence-group"])
        or engine == "aggregation" and not options["aggregation.remove-record-on-delete"])


def read_rewrite_target(ctx: TableContext, dnf: predicate.DNF | None) -> Target:
    """The stored rows of the files that may hold a row ``dnf`` selects, file by file, with
    their ``_SEQUENCE_NUMBER`` and ``_VALUE_KIND`` columns.

    Raises UnsupportedFeatureError if a bucket that may hold such a row is not compacted.
    """
    snapshot = ctx.snapshots.latest()
    arrow = ctx.schema.arrow_schema()
    columns = pa.schema([*arrow, pa.field(VALUE_KIND, pa.int8()), pa.field(SEQUENCE, pa.int64())])
    target = Target(snapshot, columns.empty_table())
    if snapshot is None:
        return target
    splits = TableScan(ctx, dnf, None, snapshot, None).plan()
    buckets = {(tuple(s.partition), s.bucket) for s in splits}
    live: dict[tuple[tuple, int], list] = {b: [] for b in buckets}
    for e in live_in_buckets(ctx.manifests, snapshot, buckets):
        live[(tuple(e.partition), e.bucket)].append(e.file)
    waiting = set()  # level 0 of a table whose reads skip it: not planned, not read yet
    if skips_level0(ctx.schema):
        waiting = {(tuple(e.partition), e.bucket) for e in live_files(ctx.manifests, snapshot) if e.file.level == 0}
        live.update({b: [] for b in waiting})
    for (partition, bucket), files in sorted(live.items(), key=repr):
        retracting = [f.fileName for f in files if f.deleteRowCount is None or f.deleteRowCount > 0]
        if retracting or find_overlap(files) is not None or (partition, bucket) in waiting:
            raise UnsupportedFeatureError(
                f"{ctx.path}: a delete of this {ctx.options['merge-engine']} table rewrites the files "
                f"that hold the deleted rows, so each bucket it touches must be compacted (one sorted "
                f"run, no retraction rows, nothing waiting at level 0), and bucket {bucket} of "
                f"partition {list(partition)} is not; compact the table first (t.compact(), "
                "`minipaimon compact PATH`, minipaimon_compact), as Paimon asks ('please use "
                "COMPACT procedure first')")
    files = [(split, f) for split in splits for f in split.files]
    parts = list(pools.pool("read").map(
        lambda sf: read_file_rows(ctx, sf[0], sf[1], with_kind=True, with_sequence=True).cast(columns), files))
    for (split, f), rows in zip(files, parts):
        target.add_file(split, f, AppendFileRows(rows, None, 0))
    if parts:
        target.rows = pa.concat_tables(parts)
    return target


def write_rewrite(ctx: TableContext, target: Target, deleted: np.ndarray,
                  messages: list[CommitMessage]) -> pa.Table:
    """Each file of ``target`` with a ``deleted`` row replaced by its other rows (step 3 of
    the module), messages appended as files are written; returns the primary keys of the
    rewritten files (what no commit since the read may have written)."""
    buckets = num_buckets(ctx.schema)
    options = ctx.options
    keys = []
    for i, (split, f) in enumerate(target.files):
        lo, hi = target.offsets[i], target.offsets[i + 1]
        gone = deleted[lo:hi]
        if not gone.any():
            continue
        rows = target.rows.slice(lo, hi - lo)
        keys.append(rows.select(ctx.schema.primaryKeys))
        kept = rows.filter(pa.array(~gone))
        new_files = write_sorted_run(ctx.io, ctx.layout, ctx.schema, split.partition_path, split.bucket, kept,
                                     level=f.level, target=options["target-file-size"],
                                     compression=options["file.compression"]) if kept.num_rows else []
        messages.append(CommitMessage(
            partition=list(split.partition), partitionPath=split.partition_path, bucket=split.bucket,
            totalBuckets=buckets, compactBefore=[f], newFiles=new_files,
            baseSnapshotId=None if target.snapshot is None else target.snapshot.id))
    return pa.concat_tables(keys) if keys else target.rows.select(ctx.schema.primaryKeys).slice(0, 0)


__all__ = ["read_rewrite_target", "rewrites_deletes", "write_rewrite"]
