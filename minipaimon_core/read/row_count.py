"""How many rows a read of a snapshot returns, from metadata wherever that is exact.

Per split of a full plan (the plan a read makes, level 0 skipped where reads skip it):

================================================  ============================================
split                                             count
================================================  ============================================
append files                                      rows of the files (manifests) minus the
                                                  rows their deletion vectors mark
primary-key files read without a merge (one       the same, when no file holds retraction
sorted run, e.g. after a full compaction; files   rows (``deleteRowCount`` 0: -U/-D rows are
of a deletion-vector table) with no -U/-D rows    never returned)
any other primary-key bucket                      its rows merged, reading the key columns
                                                  only (a merge decides what a key becomes)
================================================  ============================================

Deletion vectors are read (small index files); data files are read only for the last row.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

from ..format.snapshot import Snapshot
from ..metadata.context import TableContext
from .scan import Split
from .table_scan import TableScan, read_split


def count_rows(ctx: TableContext, snapshot: Snapshot | None) -> int:
    """The rows a full read of ``snapshot`` returns (0 for None: an empty table)."""
    if snapshot is None:
        return 0
    keys = list(ctx.schema.primaryKeys)
    splits = TableScan(ctx, None, keys or None, snapshot, None).plan()
    exact = [s for s in splits if _from_metadata(s, bool(keys))]
    merged = [s for s in splits if not _from_metadata(s, bool(keys))]
    total = sum(_metadata_count(ctx, s) for s in exact)
    if merged:
        def rows(split: Split) -> int:
            return sum(b.num_rows for b in read_split(ctx, split))

        workers = min(len(merged), os.cpu_count() or 1)
        with ThreadPoolExecutor(max_workers=workers) as pool:
            total += sum(pool.map(rows, merged))
    return total


def _from_metadata(split: Split, primary_key: bool) -> bool:
    """Whether the split's count is in its metadata (module docs)."""
    if not primary_key:
        return True
    return split.raw_convertible and all(f.deleteRowCount == 0 for f in split.files)


def _metadata_count(ctx: TableContext, split: Split) -> int:
    rows = sum(f.rowCount for f in split.files)
    if split.deletion_index is None:
        return rows
    vectors = ctx.vectors.vectors(split.deletion_index)
    return rows - sum(len(vectors.get(f.fileName, ())) for f in split.files)


def is_exact_from_metadata(ctx: TableContext, snapshot: Snapshot | None) -> bool:
    """Whether :func:`count_rows` reads no data file for ``snapshot``."""
    if snapshot is None:
        return True
    keys = list(ctx.schema.primaryKeys)
    splits = TableScan(ctx, None, keys or None, snapshot, None).plan()
    return all(_from_metadata(s, bool(keys)) for s in splits)


__all__ = ["count_rows", "is_exact_from_metadata"]
