"""How many rows a read of a snapshot returns, from metadata wherever that is exact.

Per split of a full plan (the plan a read makes, level 0 skipped where reads skip it):

================================================  ============================================
split                                             count
================================================  ============================================
append files                                      rows of the files (manifests) minus the
                                                  rows their deletion vectors mark
primary-key files read without a merge (one       the same, when no file holds retraction
sorted run, e.g. after a full compaction; files   rows (``deleteRowCount`` 0 where that count
of a deletion-vector table) with no -U/-D rows    is exact: scan.retraction_counts_trusted)
other primary-key files read without a merge      their +I/+U rows, reading the kind column
(no deletion vectors)
any other primary-key bucket                      its rows merged, reading the key columns
                                                  only (a merge decides what a key becomes)
================================================  ============================================

Deletion vectors are read (small index files); data files only for the last two rows.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa
import pyarrow.compute as pc

from ..format.kinds import VALUE_KIND, RowKind
from ..format.manifest_file import DataFileMeta
from ..format.snapshot import Snapshot
from ..metadata.context import TableContext
from .read import SplitReader
from .scan import Split, retraction_counts_trusted
from .table_scan import TableScan, read_split


def count_rows(ctx: TableContext, snapshot: Snapshot | None) -> int:
    """The rows a full read of ``snapshot`` returns (0 for None: an empty table)."""
    if snapshot is None:
        return 0
    keys = list(ctx.schema.primaryKeys)
    splits = TableScan(ctx, None, keys or None, snapshot, None).plan()
    trusted = retraction_counts_trusted(ctx.schema)
    exact = [s for s in splits if _from_metadata(s, bool(keys), trusted)]
    rest = [s for s in splits if not _from_metadata(s, bool(keys), trusted)]
    total = sum(_metadata_count(ctx, s) for s in exact)
    if rest:
        reader = SplitReader(ctx.io, ctx.layout, ctx.schemas, ctx.schema)

        def rows(split: Split) -> int:
            if split.raw_convertible and split.deletion_index is None:  # no merge, no marks: by kind
                return sum(_live_kinds(reader, split, f) for f in split.files)
            return sum(b.num_rows for b in read_split(ctx, split))

        workers = min(len(rest), os.cpu_count() or 1)
        with ThreadPoolExecutor(max_workers=workers) as pool:
            total += sum(pool.map(rows, rest))
    return total


def _from_metadata(split: Split, primary_key: bool, counts_trusted: bool) -> bool:
    """Whether the split's count is in its metadata (module docs)."""
    if not primary_key:
        return True
    return split.raw_convertible and counts_trusted and all(f.deleteRowCount == 0 for f in split.files)


def _live_kinds(reader: SplitReader, split: Split, f: DataFileMeta) -> int:
    """The +I/+U rows of ``f``, by its kind column."""
    kinds = reader.read_file(split, f, [VALUE_KIND])
    return int(pc.sum(pc.is_in(kinds.column(VALUE_KIND), pa.array([int(RowKind.INSERT), int(RowKind.UPDATE_AFTER)],
                                                                     pa.int8()))).as_py() or 0)


def _metadata_count(ctx: TableContext, split: Split) -> int:
    rows = sum(f.rowCount for f in split.files)
    if split.deletion_index is None:
        return rows
    vectors = ctx.vectors.vectors(split.deletion_index)
    return rows - sum(len(vectors.get(f.fileName, ())) for f in split.files)


__all__ = ["count_rows"]
