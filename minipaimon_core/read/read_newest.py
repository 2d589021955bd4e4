"""The deduplicate merge-on-read of one key column without ``sequence.field``, reading the
files of a bucket in two phases where newer runs shadow most of a file.

:func:`~minipaimon_core.lsm.newest_wins.winners` decides which rows of each file win from
the key and ``_VALUE_KIND`` columns alone. A file whose key range meets newer files holding
at least half as many rows as it has (:func:`probe_first`: a table whose commits rewrite
most keys) is read in two steps: its key and kind first, then its other columns only if
some of its rows win. Other files are read whole at once: reading a file twice costs a
second footer and a serial step between the phases, which a file that mostly survives does
not repay. Either way the result is the same rows.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow as pa

from ..format.kinds import VALUE_KIND
from ..format.manifest_file import DataFileMeta
from ..lsm.key_range import key_order, overlaps
from ..lsm.newest_wins import winners
from .dict_columns import concat

#: ``read(files, names_of)``: the tables of ``files`` (concurrently, in their order), each
#: with the columns ``names_of(file)``
ReadFiles = Callable[[list[DataFileMeta], Callable[[DataFileMeta], list[str]]], list[pa.Table]]


def probe_first(runs: list[list[DataFileMeta]]) -> set[str]:
    """Names of the files of ``runs`` (newest first) that newer runs may mostly shadow: the
    newer files whose key range meets theirs hold at least half as many rows as they do
    (the manifest's key ranges and row counts: a guess that decides the cost, never the
    rows)."""
    out: set[str] = set()
    newer: list[DataFileMeta] = []
    for run in runs:
        for f in run:
            if newer:
                low, high = key_order(f.minKey), key_order(f.maxKey)
                if 2 * sum(n.rowCount for n in newer if overlaps(n, low, high)) >= f.rowCount:
                    out.add(f.fileName)
        newer.extend(run)
    return out


def read_newest(runs: list[list[DataFileMeta]], read: ReadFiles, columns: list[str], key: str,
                ignore_delete: bool, filter_rows: Callable[[pa.Table, pa.Array], pa.Table]) -> pa.Table:
    """The winning rows (``columns``, ``key`` among them) of the sorted ``runs`` of one
    bucket, newest first, rows unsorted. REQUIRES what ``winners`` requires (one row per
    key in a run)."""
    rest = [c for c in columns if c != key]
    later = probe_first(runs) if rest else set()  # the key alone: one phase reads it all
    probe, whole = [key, VALUE_KIND], list(dict.fromkeys([*columns, VALUE_KIND]))
    files = [f for run in runs for f in run]
    first = iter(read(files, lambda f: probe if f.fileName in later else whole))
    tables = [[next(first) for _ in run] for run in runs]
    masks = [m for run_masks in winners(tables, key, ignore_delete) for m in run_masks]
    flat = [t for run in tables for t in run]
    again = [i for i, f in enumerate(files) if f.fileName in later and masks[i].any()]
    second = dict(zip(again, read([files[i] for i in again], lambda f: rest)))
    kept = []
    for i, f in enumerate(files):
        t = flat[i]
        if f.fileName in later:
            if i not in second:
                continue  # no row of it wins
            r = second[i]
            t = pa.Table.from_arrays(
                [t.column(key) if c == key else r.column(c) for c in columns],
                schema=pa.schema([t.schema.field(key) if c == key else r.schema.field(c) for c in columns]))
        else:
            t = t.select(columns)
        keep: np.ndarray = masks[i]
        kept.append(t if keep.all() else filter_rows(t, pa.array(keep)))
    return concat(kept)


__all__ = ["ReadFiles", "probe_first", "read_newest"]
