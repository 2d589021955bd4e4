"""Reading splits: Arrow in, Arrow out, vectorised merge-on-read for primary-key tables.

Every file is read with the schema it was written with and projected to the reader's
schema by field id (:mod:`~minipaimon_core.read.file_read`). Primary-key splits whose files overlap in key range are merged with the
table's merge engine over whole Arrow tables; others are read raw. A split's files are read
concurrently (:func:`file_pool`); deduplicate with one key and no ``sequence.field`` merges
by probing keys (:mod:`~minipaimon_core.read.read_newest`), every other merge gets the runs
oldest first so that sorted runs are not sorted again. Where a merge does not compare them,
string and binary columns that a file stores dictionary-encoded are read as Arrow
dictionaries and decoded once, after the merge's filters (:mod:`~minipaimon_core.read.dict_columns`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import CorruptDataFileError, CorruptMetadataError, SnapshotExpiredError
from ..expressions import predicate
from ..format.kinds import SEQUENCE, VALUE_KIND, RowKind
from ..format.layout import TableLayout
from ..format.manifest_file import DataFileMeta
from ..io import pools
from ..io.fileio import FileIO
from ..lsm.key_range import disjoint_chains, key_order
from ..lsm.merge_config import ROW_SELECTING_ENGINES
from ..lsm.merge_engines import MergeConfig, merge
from ..lsm.newest_wins import winners
from ..metadata.deletion_vectors import DeletionVectorIO, live_mask
from ..metadata.manifest_io import ManifestIO
from ..metadata.snapshot_manager import SnapshotManager
from ..schema.schema import SchemaCache, TableSchema
from . import merge_read
from .dict_columns import decoded
from .file_read import iter_file_as, read_file_as
from .merge_read import merged_steps
from .read_newest import read_newest
from .scan import Split, retraction_counts_trusted


def sorted_runs_newest_first(files: list[DataFileMeta]) -> list[list[DataFileMeta]]:
    """The sorted runs of a bucket, newest first: each level-0 file by sequence, then each
    level >= 1 (LSM invariant: for any key, a lower level holds the newer version)."""
    level0 = sorted((f for f in files if f.level == 0), key=lambda f: -f.maxSequenceNumber)
    levels = sorted({f.level for f in files if f.level > 0})
    return [[f] for f in level0] + [[f for f in files if f.level == lv] for lv in levels]


# Columns of a tagged merge input (SplitReader.dropped_rows): each row's file and position.
_FILE, _ROW = "__minipaimon_file", "__minipaimon_row"


def dictionary_candidates(schema: TableSchema) -> frozenset[str]:
    """The columns of ``schema`` a split read takes as Arrow dictionaries where a file
    stores them dictionary-encoded: strings and binaries outside the primary key (a merge
    compares keys by value)."""
    arrow = schema.arrow_schema()
    return frozenset(f.name for f in arrow if f.name not in schema.primaryKeys
                     and (pa.types.is_string(f.type) or pa.types.is_binary(f.type)))


def file_pool() -> ThreadPoolExecutor:
    """The threads that read the files of one split concurrently. Its tasks wait only on
    :func:`column_pool` tasks, so callers on any thread but its own may block on them."""
    return pools.pool("read")


def column_pool() -> ThreadPoolExecutor:
    """The threads that filter the columns of one table concurrently. Its tasks never wait
    on other tasks, so callers on any thread (a file pool task too) may block on them."""
    return pools.pool("filter")


def filter_columns(table: pa.Table, mask: pa.Array) -> pa.Table:
    """``table.filter(mask)``, large tables column by column in the column pool (the filter
    kernels release the GIL: a wide table filters on every core)."""
    if table.num_rows < 65536 or table.num_columns < 2:
        return table.filter(mask)
    return pa.Table.from_arrays(list(column_pool().map(lambda c: c.filter(mask), table.columns)),
                                schema=table.schema)


class SplitReader:
    def __init__(self, io: FileIO, layout: TableLayout, schemas: SchemaCache, schema: TableSchema,
                 vectors: DeletionVectorIO | None = None) -> None:
        """``vectors``: the table's deletion-vector reader (its cache is shared), else a new one."""
        self._io = io
        self._vectors = vectors or DeletionVectorIO(io, layout, ManifestIO(io, layout, schemas))
        self._layout = layout
        self._schemas = schemas
        self._schema = schema
        self._arrow = schema.arrow_schema()
        self._counts_trusted = retraction_counts_trusted(schema)
        self._merge = MergeConfig.from_options(tuple(schema.primaryKeys), schema.options) \
            if schema.primaryKeys else None
        self._dictionary = dictionary_candidates(schema)

    def read(self, split: Split, with_kind: bool = False) -> Iterator[pa.RecordBatch]:
        """Batches of ``split``: its columns (all if None), filtered exactly; ``with_kind``: then
        each row's ``_VALUE_KIND`` (as stored, or +I for a row a merge built or of no key).

        Raises SnapshotExpiredError if a file is missing or unreadable because the split's
        snapshot was expired (or rolled back) meanwhile (re-plan the read); else the
        CorruptDataFileError / CorruptMetadataError naming the file, StorageError."""
        try:
            yield from self._read(split, with_kind)
        except (CorruptDataFileError, CorruptMetadataError) as e:
            self._raise_if_expired(split, e)
            raise

    def _raise_if_expired(self, split: Split, e: Exception) -> None:
        """SnapshotExpiredError if ``e`` (a file missing or unreadable) came from the split's
        snapshot being expired or rolled back meanwhile."""
        if SnapshotManager(self._io, self._layout).retained(split.snapshot_id) is None:
            raise SnapshotExpiredError(
                f"snapshot {split.snapshot_id} of {self._layout.root} was expired (or rolled "
                f"back) while it was read ({e}); re-plan the read, or keep snapshots longer with "
                "'snapshot.num-retained.min' / 'snapshot.time-retained', a tag or a "
                "consumer-id") from e

    def _read(self, split: Split, with_kind: bool = False) -> Iterator[pa.RecordBatch]:
        out_names = split.columns if split.columns is not None else self._arrow.names
        out_schema = pa.schema([self._arrow.field(n) for n in out_names])
        kind = [VALUE_KIND] if with_kind and self._merge is not None else []
        needed = list(dict.fromkeys(list(out_names) + sorted(predicate.columns_of(split.filter)) + kind))
        out_schema = out_schema.append(pa.field(VALUE_KIND, pa.int8(), False)) if with_kind else out_schema
        expr = predicate.to_expression(split.filter) if split.filter else None
        if self._merge is None or split.raw_convertible:  # files read alone, several at once
            read = self._append_rows if self._merge is None else self._live_rows
            files, dictionary = split.files, self._dictionary
            tables = map(lambda f: read(split, f, needed, dictionary), files) if len(files) < 2 else \
                file_pool().map(lambda f: read(split, f, needed, dictionary), files)
            for t in tables:
                if with_kind and self._merge is None:
                    t = t.append_column(VALUE_KIND, pa.array(np.zeros(t.num_rows, np.int8)))
                yield from self._finish(t, expr, out_schema)
            return
        if not merge_read.streams(split.files):
            yield from self._finish(self._merged(split, needed), expr, out_schema)
            return
        cols = self._merge_input(list(dict.fromkeys([*self._schema.primaryKeys, *needed])))
        for t in merged_steps(self._runs(split, cols), self._merge, self._newest_wins):
            yield from self._finish(t, expr, out_schema)

    def _runs(self, split: Split, names: list[str], tagged: bool = False) -> list[Iterator[pa.Table]]:
        """The sorted runs of ``split``, oldest first, each read table by table in key order
        (columns ``names``; ``tagged``: also each row's file, an index into ``split.files``,
        and position in it), the rows its deletion vectors mark left out."""
        vectors = self._vectors.vectors(split.deletion_index) if split.deletion_index is not None else {}
        index = {f.fileName: i for i, f in enumerate(split.files)}

        def run(files: list[DataFileMeta]) -> Iterator[pa.Table]:
            for f in sorted(files, key=lambda f: key_order(f.minKey)):
                for t in iter_file_as(self._io, self._layout, self._schemas, self._schema, split.partition_path,
                                      split.bucket, f, names, deleted=vectors.get(f.fileName),
                                      batch_rows=merge_read.BATCH_ROWS, positions=_ROW if tagged else None):
                    yield t.append_column(_FILE, pa.array(np.full(t.num_rows, index[f.fileName], np.int32))) \
                        if tagged else t

        return [run(r) for r in disjoint_chains(list(reversed(sorted_runs_newest_first(split.files))))]

    def _append_rows(self, split: Split, f: DataFileMeta, names: list[str],
                     dictionary: Collection[str] = ()) -> pa.Table:
        """Columns ``names`` of the rows of append file ``f`` its vector does not mark
        (``dictionary``: as :func:`read_file_as`)."""
        t = self.read_file(split, f, names, dictionary)
        mask = self.vector_mask(split, f, t.num_rows)
        return t if mask is None else filter_columns(t, pa.array(mask))

    def vector_mask(self, split: Split, f: DataFileMeta, num_rows: int) -> np.ndarray | None:
        """The rows of ``f`` (``num_rows`` as stored) not marked by the split's deletion
        vectors; None if none is marked."""
        if split.deletion_index is None:
            return None
        positions = self._vectors.vectors(split.deletion_index).get(f.fileName)
        return live_mask(num_rows, positions, self._layout.data_file_path(
            split.partition_path, split.bucket, f.fileName))

    def _live_rows(self, split: Split, f: DataFileMeta, names: list[str],
                   dictionary: Collection[str] = ()) -> pa.Table:
        """Columns ``names`` of the rows of ``f`` that are final as they are: of kind +I/+U
        and not marked by the split's deletion vectors (a raw-convertible split);
        ``dictionary``: as :func:`read_file_as`."""
        if self._counts_trusted and f.deleteRowCount == 0:  # no retraction to drop
            t = self.read_file(split, f, names, dictionary)
            live = np.ones(t.num_rows, dtype=bool)
        else:
            t = self.read_file(split, f, list(dict.fromkeys([*names, VALUE_KIND])), dictionary)
            kinds = t.column(VALUE_KIND).to_numpy()
            live = (kinds == RowKind.INSERT) | (kinds == RowKind.UPDATE_AFTER)
        mask = self.vector_mask(split, f, t.num_rows)
        if mask is not None:
            live &= mask
        t = t.select(names)
        return t if live.all() else filter_columns(t, pa.array(live))

    def _merged(self, split: Split, needed: list[str], tagged: bool = False) -> pa.Table:
        """The merged rows of ``split``: columns ``needed`` and the keys (``tagged``: also
        each row's file, an index into ``split.files``, and position in it)."""
        assert self._merge is not None
        cols = list(dict.fromkeys([*self._schema.primaryKeys, *needed]))
        m = self._merge
        if self._newest_wins and not tagged:
            return read_newest(sorted_runs_newest_first(split.files),
                               lambda files, names_of: self.read_each(split, files, names_of, self._dictionary),
                               cols, m.key_columns[0], m.ignore_delete, filter_columns)
        read = self._read_tagged if tagged else self.read_files
        oldest_first = [f for run in reversed(sorted_runs_newest_first(split.files)) for f in run]
        tables = read(split, oldest_first, self._merge_input(cols))  # merge sorts no run again
        return merge(pa.concat_tables(tables), self._merge, keep_deletes=False)

    @property
    def _newest_wins(self) -> bool:
        """Whether the merge is decided by the newest run holding a key (lsm.newest_wins)."""
        m = self._merge
        return m is not None and m.engine == "deduplicate" and m.sequence_field is None \
            and len(m.key_columns) == 1

    def _read_tagged(self, split: Split, files: list[DataFileMeta], names: list[str]) -> list[pa.Table]:
        """:meth:`read_files` with each row's file (``_FILE``: index into ``split.files``)
        and position in it (``_ROW``)."""
        index = {f.fileName: i for i, f in enumerate(split.files)}
        return [t.append_column(_FILE, pa.array(np.full(t.num_rows, index[f.fileName], np.int32)))
                 .append_column(_ROW, pa.array(np.arange(t.num_rows, dtype=np.int64)))
                for f, t in zip(files, self.read_files(split, files, names))]

    def dropped_rows(self, split: Split) -> dict[str, np.ndarray] | None:
        """What a read of ``split`` returns, as a selection of its files' stored rows: per
        file name, the sorted positions (int64) of the rows the read leaves out (a file not
        named: none); the others are returned as stored (a split without a merge: those of
        kind +I/+U in a primary-key file; a merge's positions cover its retractions). None where the read builds rows that are no stored row (the
        merges of partial-update and aggregation). A split read without a merge costs its
        deletion vectors (metadata); a merge (deduplicate, first-row) reads the key,
        sequence and kind columns of its files and merges them as :meth:`read` does.

        Raises CorruptMetadataError (a vector deletes a row past its file's end) and what
        :meth:`read` raises."""
        if self._merge is None or split.raw_convertible:
            if split.deletion_index is None:
                return {}
            vectors = self._vectors.vectors(split.deletion_index)
            out = {}
            for f in split.files:
                positions = vectors.get(f.fileName)
                if positions is not None and len(positions):
                    live_mask(f.rowCount, positions[-1:], self._layout.data_file_path(
                        split.partition_path, split.bucket, f.fileName))  # raises past the end
                    out[f.fileName] = positions.astype(np.int64)
            return out
        if self._merge.engine not in ROW_SELECTING_ENGINES:
            return None
        try:
            if merge_read.streams(split.files):
                live_of = {f.fileName: np.zeros(f.rowCount, bool) for f in split.files}
                names = self._merge_input(list(self._schema.primaryKeys))
                for kept in merged_steps(self._runs(split, names, tagged=True), self._merge, self._newest_wins):
                    which, rows = kept.column(_FILE).to_numpy(), kept.column(_ROW).to_numpy()
                    for i in np.unique(which):
                        live_of[split.files[i].fileName][rows[which == i]] = True
            elif self._newest_wins:  # the winners' masks, file by file
                runs = sorted_runs_newest_first(split.files)
                files = [f for run in runs for f in run]
                tables = iter(self.read_files(split, files, [self._merge.key_columns[0], VALUE_KIND]))
                masks = winners([[next(tables) for _ in run] for run in runs], self._merge.key_columns[0],
                                self._merge.ignore_delete)
                live_of = dict(zip([f.fileName for f in files], [m for run in masks for m in run]))
            else:
                kept = self._merged(split, [], tagged=True)
                which, rows = kept.column(_FILE).to_numpy(), kept.column(_ROW).to_numpy()
                live_of = {}
                for i, f in enumerate(split.files):
                    live_of[f.fileName] = np.zeros(f.rowCount, bool)
                    live_of[f.fileName][rows[which == i]] = True
        except (CorruptDataFileError, CorruptMetadataError) as e:
            self._raise_if_expired(split, e)
            raise
        return {name: np.flatnonzero(~live) for name, live in live_of.items() if not live.all()}

    def _merge_input(self, cols: list[str]) -> list[str]:
        """``cols`` plus what a merge needs: the sequence field(s) of their sequence groups
        and of the table, sequence and kind."""
        assert self._merge is not None
        return list(dict.fromkeys([*self._merge.merge_columns(cols), SEQUENCE, VALUE_KIND]))

    def read_keys(self, split: Split, keep: Callable[[pa.Table], pa.Array],
                  kept_rows: dict[str, pa.Table] | None = None) -> pa.Table:
        """The merged rows (every column) of the keys of a primary-key ``split`` that
        ``keep`` selects: ``keep`` gets a file's rows and returns a boolean mask, which must
        depend on the key columns only (so every version of a kept key is merged).
        ``kept_rows`` caches each file's kept rows by file name across calls with one ``keep``."""
        assert self._merge is not None
        kept_rows = {} if kept_rows is None else kept_rows
        if split.raw_convertible:  # rows are final as read: nothing to merge
            parts = []
            for f in split.files:
                index = split.deletion_index.fileName if split.deletion_index is not None else None
                name = f"{index}/{f.fileName}"  # a file's live rows differ by vectors
                if name not in kept_rows:
                    t = self._live_rows(split, f, self._arrow.names)
                    kept_rows[name] = t.filter(keep(t))
                parts.append(kept_rows[name])
            return pa.concat_tables([p.cast(self._arrow) for p in parts])
        cols = self._merge_input(list(dict.fromkeys([*self._schema.primaryKeys, *self._arrow.names])))
        parts = []
        for f in split.files:
            if f.fileName not in kept_rows:
                t = self.read_file(split, f, cols)
                kept_rows[f.fileName] = t.filter(keep(t))
            parts.append(kept_rows[f.fileName])
        merged = merge(pa.concat_tables(parts), self._merge, keep_deletes=False)
        return merged.select(self._arrow.names).cast(self._arrow)

    def read_file(self, split: Split, f: DataFileMeta, names: list[str],
                  dictionary: Collection[str] = ()) -> pa.Table:
        return read_file_as(self._io, self._layout, self._schemas, self._schema,
                            split.partition_path, split.bucket, f, names, dictionary)

    def read_files(self, split: Split, files: list[DataFileMeta], names: list[str]) -> list[pa.Table]:
        """:meth:`read_file` of each of ``files``, concurrently (Parquet decoding releases
        the GIL), results in the order of ``files``; the first failure is raised."""
        return self.read_each(split, files, lambda f: names)

    def read_each(self, split: Split, files: list[DataFileMeta], names_of: Callable[[DataFileMeta], list[str]],
                  dictionary: Collection[str] = ()) -> list[pa.Table]:
        """:meth:`read_files` with the columns ``names_of(file)`` of each file."""
        if len(files) <= 1:
            return [self.read_file(split, f, names_of(f), dictionary) for f in files]
        return list(file_pool().map(lambda f: self.read_file(split, f, names_of(f), dictionary), files))

    @staticmethod
    def _finish(t: pa.Table, expr: pc.Expression | None, out_schema: pa.Schema) -> Iterator[pa.RecordBatch]:
        if expr is not None:
            t = decoded(t).filter(expr)
        t = decoded(t.select(out_schema.names))
        if not t.schema.equals(out_schema):
            t = t.cast(out_schema)
        yield from t.to_batches()
