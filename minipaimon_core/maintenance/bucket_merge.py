"""Executing one primary-key bucket's compaction as a streaming k-way merge.

Every file is read table by table (:func:`~minipaimon_core.read.file_read.iter_file_as`, the
rows its deletion vector marks left out, except in the bottom level the full-compaction
changelog diffs against), the runs are cut into key-aligned steps
(:func:`~minipaimon_core.lsm.streaming_merge.key_chunks`), and each step is merged and
written before the next is read::

    input runs, oldest first ──────────┐
    first-row: older levels' keys ─────┼─ key_chunks ─ per step: merge(inputs) - older keys ─► RollingWriter(data)
    full-compaction: the bottom run ───┘     └─ diff(merge(bottom), merged) ─► RollingWriter(changelog)

    lookup: new level-0 runs + level >= 1 runs that overlap them ─ key_chunks ─ per step:
            diff(merge(old rows of the step's new keys), merge(old + new)) ─► RollingWriter(changelog)

Memory is about one table (:data:`~minipaimon_core.file_format.data_file.BATCH_ROWS` rows)
per run read, a step's merge, and the writers' buffers, whatever the bucket holds. By the
piecewise property of the merge engines the files hold the same rows as a merge of all
inputs at once (tests/test_compaction_streaming.py checks it on random histories).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import pyarrow as pa

from ..file_format.data_file import BATCH_ROWS
from ..format.kinds import SEQUENCE, VALUE_KIND
from ..format.manifest_file import FILE_SOURCE_COMPACT, DataFileMeta
from ..lsm import changelog
from ..lsm.key_range import disjoint_chains, key_order, overlaps
from ..lsm.merge_engines import MergeConfig, merge
from ..lsm.streaming_merge import key_chunks
from ..metadata.context import TableContext
from ..read.file_read import iter_file_as
from ..read.read import sorted_runs_newest_first
from ..write.rolling import RollingWriter

_ROW_INDEX = "__row_index"


class BucketRuns:
    """Reads the sorted runs of one bucket of ``ctx`` table by table; ``deleted``: per file
    name, the sorted positions its deletion vector marks (left out)."""

    def __init__(self, ctx: TableContext, path: str, bucket: int,
                 deleted: dict[str, np.ndarray] | None = None) -> None:
        self.ctx = ctx
        self.path = path
        self.bucket = bucket
        self._deleted = deleted or {}

    def run(self, files: Sequence[DataFileMeta], names: list[str], *, marked: bool = True) -> Iterator[pa.Table]:
        """The rows (columns ``names``) of one sorted run's ``files``, in key order, without
        the rows their vectors mark (``marked``; else all rows as written)."""
        ctx = self.ctx
        for f in sorted(files, key=lambda f: key_order(f.minKey)):
            deleted = self._deleted.get(f.fileName) if marked else None
            yield from iter_file_as(ctx.io, ctx.layout, ctx.schemas, ctx.schema, self.path, self.bucket,
                                    f, names, deleted=deleted, batch_rows=BATCH_ROWS)

    def has_marks(self, files: Sequence[DataFileMeta]) -> bool:
        """Whether a vector marks a row of one of ``files``."""
        return any(len(self._deleted.get(f.fileName, ())) for f in files)

    def writer(self, level: int, prefix: str = "data") -> RollingWriter:
        ctx = self.ctx
        options = ctx.options
        return RollingWriter(ctx.io, ctx.layout, self.path, self.bucket, schema=ctx.schema,
                             target=options["target-file-size"], compression=options["file.compression"],
                             level=level, file_source=FILE_SOURCE_COMPACT, prefix=prefix)


def oldest_first(files: Sequence[DataFileMeta]) -> list[list[DataFileMeta]]:
    """The sorted runs of ``files``, oldest first (the order the merge takes them in)."""
    return list(reversed(sorted_runs_newest_first(list(files))))


def compact_runs(runs: BucketRuns, config: MergeConfig, files: list[DataFileMeta],
                 inputs: list[DataFileMeta], output_level: int,
                 max_level: int) -> tuple[list[DataFileMeta], list[DataFileMeta]]:
    """Merge ``inputs`` (files of the bucket's ``files``) into sorted-run files at
    ``output_level``, and the changelog files of the table's producer; nothing is committed.
    Deletes are dropped only into the bottom level ``max_level`` (unless the engine keeps
    tombstones). On failure every file written is deleted before the error is raised."""
    producer = runs.ctx.options["changelog-producer"]
    bottom = output_level == max_level
    data = runs.writer(output_level)
    changes = runs.writer(0, prefix="changelog")
    try:
        _merge_inputs(runs, config, files, inputs, bottom and producer == "full-compaction",
                      max_level, not bottom or config.keeps_tombstones, data, changes)
        if producer == "lookup":
            _lookup_changes(runs, config, files, inputs, changes)
        return data.finish(), changes.finish()
    except BaseException:
        data.abort()
        changes.abort()
        raise


def _merge_inputs(runs: BucketRuns, config: MergeConfig, files: list[DataFileMeta],
                  inputs: list[DataFileMeta], full_changelog: bool, max_level: int,
                  keep_deletes: bool, data: RollingWriter, changes: RollingWriter) -> None:
    """The compaction's output (and, with ``full_changelog``, the changes from the bottom
    level as it was to the output) written step by step."""
    schema = runs.ctx.schema
    names = [*schema.field_names, SEQUENCE, VALUE_KIND]
    keys = list(config.key_columns)
    in_runs = oldest_first(inputs)
    # runs whose key ranges are disjoint are read as one chain (one table held for all);
    # the bottom run stays alone where the full-compaction changelog diffs against it
    bottom_run = [r for r in in_runs if full_changelog and r[0].level == max_level]
    in_runs = disjoint_chains([r for r in in_runs if r not in bottom_run]) + bottom_run
    sources = [runs.run(r, names) for r in in_runs]
    n_in = len(sources)
    # first-row: keys the bucket's other files at levels >= 1 hold stay theirs (see
    # minipaimon_core.commit.first_row; Paimon's lookup compaction drops them the same way)
    older: list[int] = []
    if config.engine == "first-row" and inputs:
        names_in = {f.fileName for f in inputs}
        lo = min(key_order(f.minKey) for f in inputs)
        hi = max(key_order(f.maxKey) for f in inputs)
        others = [f for f in files if f.level > 0 and f.fileName not in names_in and overlaps(f, lo, hi)]
        for run in disjoint_chains(oldest_first(others)):
            older.append(len(sources))
            sources.append(runs.run(run, keys))
    # full-compaction changelog: the bottom level as the previous full compaction wrote it,
    # the rows vectors have marked since included (their removal is a change to emit); the
    # bottom input run is read once for both where no vector marks a row of it
    previous_at: int | None = None
    if full_changelog:
        previous = [f for f in files if f.level == max_level]
        names_in = {f.fileName for f in inputs}
        found = [i for i, r in enumerate(in_runs) if r and all(f.level == max_level for f in r)]
        if previous and found and {f.fileName for f in previous} <= names_in and not runs.has_marks(previous):
            previous_at = found[0]
        elif previous:
            previous_at = len(sources)
            sources.append(runs.run(previous, names, marked=False))
    for parts in key_chunks(sources, keys):
        mine = [p for p in parts[:n_in] if p is not None]
        merged = merge(_concat(mine), config, keep_deletes=keep_deletes) if mine else None
        if merged is not None and older:
            held = [parts[i] for i in older if parts[i] is not None]
            if held and merged.num_rows:
                merged = _without_keys(merged, held, keys)
        if merged is not None:
            data.write(merged)
        if full_changelog:
            before_rows = parts[previous_at] if previous_at is not None else None
            shape = next(p for p in parts if p is not None and p.num_columns == len(names))
            before = merge(before_rows, config, keep_deletes=False) if before_rows is not None \
                else shape.slice(0, 0)
            after = merged if merged is not None else shape.slice(0, 0)
            changes.write(changelog.diff(before, after, keys))


def _lookup_changes(runs: BucketRuns, config: MergeConfig, files: list[DataFileMeta],
                    inputs: list[DataFileMeta], changes: RollingWriter) -> None:
    """Changes made by the level-0 files of a compaction, old values looked up by key.

    Old rows come only from level >= 1 files whose key range covers a new key, and from
    those only the rows of the new keys (a hash semi-join per step), never a merge of the
    bucket."""
    new_files = [f for f in inputs if f.level == 0]
    if not new_files:
        return
    names = [*runs.ctx.schema.field_names, SEQUENCE, VALUE_KIND]
    keys = list(config.key_columns)
    lo = min(key_order(f.minKey) for f in new_files)
    hi = max(key_order(f.maxKey) for f in new_files)
    old_runs = disjoint_chains(oldest_first([f for f in files if f.level > 0 and overlaps(f, lo, hi)]))
    new_runs = disjoint_chains(oldest_first(new_files))
    sources = [runs.run(r, names) for r in [*old_runs, *new_runs]]
    n_old = len(old_runs)
    for parts in key_chunks(sources, keys):
        new = [p for p in parts[n_old:] if p is not None]
        if not new:
            continue
        new_rows = _concat(new)
        old = [p for p in parts[:n_old] if p is not None]
        old_rows = _concat(old) if old else new_rows.slice(0, 0)
        if old_rows.num_rows:
            new_keys = new_rows.select(keys).group_by(keys).aggregate([])
            old_rows = old_rows.take(semi_join_rows(old_rows, new_keys, keys))
        before = merge(old_rows, config, keep_deletes=False)
        after = merge(pa.concat_tables([old_rows, new_rows]), config, keep_deletes=False)
        changes.write(changelog.diff(before, after, keys))


def _without_keys(merged: pa.Table, held: list[pa.Table], keys: list[str]) -> pa.Table:
    """``merged`` without the rows whose key one of ``held`` (key columns) holds."""
    found = _concat(held).group_by(keys).aggregate([])
    hit = np.zeros(merged.num_rows, dtype=bool)
    hit[semi_join_rows(merged, found, keys).to_numpy()] = True
    return merged.filter(pa.array(~hit)) if hit.any() else merged


def semi_join_rows(rows: pa.Table, keys_table: pa.Table, keys: list[str]) -> pa.Array:
    """Indices (ascending) of the rows of ``rows`` whose key is in ``keys_table``. Only the
    key columns and a row index go through Arrow's hash join, which refuses nested
    (list, map, struct) non-key columns."""
    index = pa.array(np.arange(rows.num_rows, dtype=np.int64))
    probe = rows.select(keys).append_column(_ROW_INDEX, index)
    hits = probe.join(keys_table, keys=keys, join_type="left semi", use_threads=False)
    found = hits.column(_ROW_INDEX)
    return pa.compute.take(found, pa.compute.sort_indices(found))


def _concat(parts: list[pa.Table]) -> pa.Table:
    return pa.concat_tables(parts) if len(parts) > 1 else parts[0]
