"""Writer of primary-key tables: the write buffer of an LSM tree per (partition, bucket).

Rows are split by partition and by bucket (Paimon's hash of the bucket key, or the table's
own index of dynamic buckets: :mod:`minipaimon_core.dynamic.routing`), numbered in input
order from the writer's :class:`SequenceStart` by their positions in the batch (their final
``_SEQUENCE_NUMBER``, see :mod:`minipaimon_core.metadata.sequence`), and buffered. All buckets of one writer share ``write-buffer-size``: past it the largest
buffer is merged with the merge engine (keeping deletes, so they still shadow older files)
and, with ``write-buffer-spillable`` (default), spilled to a local temp file as a sorted
run (see :mod:`minipaimon_core.write.spill`), or written as level-0 files at once where its
keys follow all keys the bucket's earlier flushes wrote so (input in key order, a bulk
load: the files already form one sorted run); without it, written as level-0 files at once.
``prepare_commit`` merges each bucket's spilled runs and buffer into ONE sorted run of
level-0 Parquet files rolled at ``target-file-size`` (streamed: one merged chunk in memory
at a time), so a large write leaves one run per bucket, not one per buffer-full.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..dynamic.routing import Routed, Router, fixed_router
from ..errors import InvalidArgumentError
from ..file_format.data_file import (
    file_paths,
    roll,
    roll_table,
    write_changelog_file,
    write_data_file,
    write_data_file_parts,
)
from ..format.kinds import ROW_KIND_COLUMN, ROW_KIND_NAMES, SEQUENCE, VALUE_KIND, row_kind_names
from ..format.layout import TableLayout
from ..format.manifest_file import FILE_SOURCE_APPEND, DataFileMeta
from ..format.options import Options
from ..io.fileio import FileIO
from ..lsm.key_range import Key, key_order
from ..lsm.merge_config import check_retractions
from ..lsm.merge_engines import MergeConfig, merge, prepare_input
from ..metadata.commit_message import CommitMessage, placed_bytes
from ..metadata.sequence import SequenceStart
from ..read.file_read import iter_file_as
from ..schema.bucket import num_buckets
from ..schema.partition import PartitionSpec
from ..schema.schema import SchemaCache, SchemaManager, TableSchema
from .conform import conform, to_batches
from .spill import SpillDirectory, SpilledRun, merge_runs
from .write_buffer import BucketKey, Pending, WriteBuffer

FLUSH_OVERHEAD = 4


def insert_kinds(rows: int) -> pa.Array:
    """``_VALUE_KIND`` of ``rows`` inserts (+I)."""
    return pa.array(np.zeros(rows, dtype=np.int8))


def value_kinds(table: pa.Table) -> pa.Array:
    """``_VALUE_KIND`` (int8) from ``table``'s ``_row_kind`` column."""
    idx = pc.index_in(table.column(ROW_KIND_COLUMN), value_set=row_kind_names())
    if idx.null_count:
        bad = pc.filter(table.column(ROW_KIND_COLUMN), pc.is_null(idx)).unique().to_pylist()[:5]
        raise InvalidArgumentError(
            f"{ROW_KIND_COLUMN} must be one of {', '.join(ROW_KIND_NAMES)}; got {bad}")
    return pc.cast(idx, pa.int8()).combine_chunks()


class KeyValueWriter:
    def __init__(self, io: FileIO, layout: TableLayout, schema: TableSchema,
                 sequence: SequenceStart, router: Router | None = None) -> None:
        """``router``: which (partition, bucket) rows go to (default: fixed buckets, see
        :mod:`minipaimon_core.dynamic.routing`)."""
        self._io = io
        self._layout = layout
        self._schema = schema
        self._arrow_schema = schema.arrow_schema()
        self._options = Options(schema.options)
        self._spec = PartitionSpec.of(schema)
        self._merge = MergeConfig.from_options(tuple(schema.primaryKeys), schema.options)
        self._target = self._options["target-file-size"]
        # A flush holds the buffered rows, the merge's copies and sort order and the Parquet
        # pages at once, about 4x the buffered bytes (measured, bench/bench_pk.py): the
        # buffer takes a quarter of write-buffer-size so a whole flush stays within it.
        self._buffer = WriteBuffer(self._options["write-buffer-size"] // FLUSH_OVERHEAD)
        self._files: dict[BucketKey, list[DataFileMeta]] = {}
        self._changelog: dict[BucketKey, list[DataFileMeta]] = {}
        self._input_changelog = self._options["changelog-producer"] == "input"
        self._sequence = sequence
        self._rows = 0  # rows numbered so far
        self._key_columns = list(schema.primaryKeys)
        self._spillable = bool(self._options["write-buffer-spillable"])
        self._spill_dir: SpillDirectory | None = None
        self._spilled: dict[BucketKey, list[SpilledRun]] = {}
        # files each bucket's flushes wrote at once (input in key order), and their largest
        # key; merged again with the spilled runs if a later flush goes back in key order
        self._direct: dict[BucketKey, list[DataFileMeta]] = {}
        self._last_key: dict[BucketKey, Key] = {}
        self._router = router or fixed_router(schema)
        # dynamic buckets: the key hashes each (partition, bucket) got (CommitMessage.keyHashes)
        self._placed: dict[BucketKey, list[np.ndarray]] = {}
        self._id = uuid.uuid4().hex  # CommitMessage.writerId: one router placed all its keys

    def write(self, data: Any) -> None:
        """Buffer upserts (and deletes, via ``_row_kind``) of ``data``.

        Raises SchemaMismatchError / InvalidArgumentError (null keys, bad row kinds,
        retractions the merge engine cannot take) before anything of this batch is buffered.
        """
        for batch in to_batches(data):
            table = conform(batch, self._arrow_schema, self._key_columns, allow_row_kind=True)
            if ROW_KIND_COLUMN in table.column_names:  # else all inserts: kinds made once routed
                kinds = value_kinds(table)
                check_retractions(kinds, table.column_names, self._merge)
                table = table.drop_columns([ROW_KIND_COLUMN]).append_column(VALUE_KIND, kinds)
            for part in self._router(table):
                self._note_placed((part.partition, part.bucket), part.placed, part.retracted)
                self._flush(self._buffer.add((part.partition, part.bucket), self._numbered(part)))
                del part  # a bucket's copy is written (or buffered) before the next one is made
            self._rows += table.num_rows

    def _numbered(self, part: Routed) -> pa.Table:
        """A part's rows with their ``_SEQUENCE_NUMBER`` and ``_VALUE_KIND`` (+I where the
        batch had no row kinds), in that order: the writer's numbers of the rows' positions
        in the batch (input order). Numbered once routed, so the numbers are made a bucket
        at a time, not made for every row of the batch and then copied by the routing."""
        rows = part.rows
        seq = pa.array(self._sequence.numbers_at(self._rows, part.positions, rows.num_rows))
        if VALUE_KIND not in rows.column_names:
            return rows.append_column(SEQUENCE, seq).append_column(VALUE_KIND, insert_kinds(rows.num_rows))
        return rows.add_column(rows.schema.get_field_index(VALUE_KIND), SEQUENCE, seq)

    def _flush(self, full: Pending) -> None:
        """Spill (or write) the buckets the buffer handed back."""
        for key, pieces, _ in full:
            if self._spillable:
                self._spill(key, pieces)
            else:
                self._record(key, self._write_level0(key, pieces, [], []))
            pa.default_memory_pool().release_unused()

    def _note_placed(self, key: BucketKey, placed: np.ndarray, retracted: np.ndarray | None) -> None:
        """Dynamic buckets: the key hashes ``key`` now holds (a retraction drops a hash an
        earlier batch placed there)."""
        if retracted is not None and len(retracted) and key in self._placed:
            held = np.concatenate(self._placed[key])
            self._placed[key] = [held[~np.isin(held, retracted, kind="sort")]]
        if len(placed):
            self._placed.setdefault(key, []).append(placed)

    def _spill(self, key: BucketKey, pieces: list[pa.Table]) -> None:
        """Merge a full bucket buffer into a sorted run: written as level-0 files at once
        where its keys all follow the keys the bucket's earlier flushes wrote so (input in
        key order: the files are one sorted run, nothing to merge again), else spilled to
        a local temp file and merged at :meth:`prepare_commit`."""
        merged, changelog = self._merge_buffer(key, pieces)
        self._record(key, ([], changelog))
        if not merged.num_rows:
            return
        if key not in self._spilled and self._follows(key, merged):
            values, bucket = key
            self._direct.setdefault(key, []).extend(write_sorted_run(
                self._io, self._layout, self._schema, self._spec.path(list(values)), bucket, merged,
                level=0, target=self._target, compression=self._options["file.compression"]))
            self._last_key[key] = self._key_of(merged, -1)
            return
        if self._spill_dir is None:
            self._spill_dir = SpillDirectory()
        self._spilled.setdefault(key, []).append(self._spill_dir.spill(merged, self._key_columns))

    def _key_of(self, rows: pa.Table, i: int) -> Key:
        return key_order([rows.column(k)[i].as_py() for k in self._key_columns])

    def _follows(self, key: BucketKey, merged: pa.Table) -> bool:
        """Whether ``merged``'s keys all come after those the bucket's flushes wrote at once."""
        return key not in self._last_key or self._key_of(merged, 0) > self._last_key[key]

    def _record(self, key: BucketKey,
                written: tuple[list[DataFileMeta], list[DataFileMeta]]) -> None:
        files, changelog = written
        if files:
            self._files.setdefault(key, []).extend(files)
        if changelog:
            self._changelog.setdefault(key, []).extend(changelog)

    def _merge_buffer(self, key: BucketKey,
                      pieces: list[pa.Table]) -> tuple[pa.Table, list[DataFileMeta]]:
        """A bucket's buffered rows merged into one sorted run (and their input changelog
        file with ``changelog-producer=input``)."""
        if not pieces:
            return pa.table({}), []
        rows = pa.concat_tables(pieces)
        values, bucket = key
        path = self._spec.path(list(values))
        changelog = []
        if self._input_changelog:
            changelog.append(write_changelog_file(
                self._io, self._layout, path, bucket, rows, schema=self._schema,
                compression=self._options["file.compression"], file_source=FILE_SOURCE_APPEND,
            ))
        return merge(prepare_input(rows, self._merge), self._merge, keep_deletes=True), changelog

    def _write_level0(self, key: BucketKey, pieces: list[pa.Table], spilled: list[SpilledRun],
                      direct: list[DataFileMeta]) -> tuple[list[DataFileMeta], list[DataFileMeta]]:
        """Merge a bucket's buffered rows, spilled runs and files written at once
        (``direct``) into one sorted run of level-0 files (and input changelog files): the
        buffer alone after ``direct`` where it follows them in key order, else everything
        merged again (``direct``'s files then deleted). Touches no writer state, so buckets
        can be written in parallel."""
        merged, changelog = self._merge_buffer(key, pieces)
        values, bucket = key
        path = self._spec.path(list(values))
        compression = self._options["file.compression"]
        if not spilled and (not direct or not merged.num_rows or self._follows(key, merged)):
            files = write_sorted_run(self._io, self._layout, self._schema, path, bucket, merged,
                                     level=0, target=self._target, compression=compression) \
                if merged.num_rows else []
            return [*direct, *files], changelog
        runs: list[Iterator[pa.Table]] = [self._read_back(path, bucket, direct)] if direct else []
        runs += [(pa.Table.from_batches([b]) for b in run.batches()) for run in spilled]
        if merged.num_rows:
            runs.append(iter([merged]))
        chunks = merge_runs(runs, self._key_columns,
                            lambda t: merge(t, self._merge, keep_deletes=True))
        files = [write_data_file_parts(
            self._io, self._layout, path, bucket, part, schema=self._schema,
            level=0, compression=compression)
            for part in roll(chunks, self._target)]
        for run in spilled:
            assert self._spill_dir is not None
            self._spill_dir.remove(run)
        self._delete(path, bucket, direct)
        return files, changelog

    def _read_back(self, path: str, bucket: int, files: list[DataFileMeta]) -> Iterator[pa.Table]:
        """The rows of files this writer wrote at once (one sorted run), table by table."""
        schemas = SchemaCache(SchemaManager(self._io, self._layout)).holding(self._schema)
        names = [*self._schema.field_names, SEQUENCE, VALUE_KIND]
        rows = pa.schema([*self._arrow_schema, pa.field(SEQUENCE, pa.int64()), pa.field(VALUE_KIND, pa.int8())])
        for f in files:  # as the buffer holds rows (nullability aside, the same columns)
            yield from (t.cast(rows) for t in iter_file_as(
                self._io, self._layout, schemas, self._schema, path, bucket, f, names))

    def _delete(self, path: str, bucket: int, files: list[DataFileMeta]) -> None:
        for f in files:
            for p in file_paths(self._layout, path, bucket, f):
                self._io.delete(p)

    def prepare_commit(self) -> list[CommitMessage]:
        """Flush all buffers (buckets in parallel threads: Arrow and Parquet release the
        GIL); one message per (partition, bucket) with its new files."""
        buffered = {key: pieces for key, pieces, _ in self._buffer.drain()}
        spilled, self._spilled = self._spilled, {}
        direct, self._direct = self._direct, {}
        self._last_key = {}
        work = [(key, buffered.get(key, []), spilled.get(key, []), direct.get(key, []))
                for key in {**buffered, **spilled, **direct}]
        if len(work) > 1:
            with ThreadPoolExecutor(max_workers=min(len(work), os.cpu_count() or 1)) as pool:
                results = list(pool.map(lambda w: self._write_level0(*w), work))
        else:
            results = [self._write_level0(*w) for w in work]
        for (key, *_), written in zip(work, results):
            self._record(key, written)
        if self._spill_dir is not None:
            self._spill_dir.cleanup()
            self._spill_dir = None
        messages = [
            CommitMessage(
                partition=list(values),
                partitionPath=self._spec.path(list(values)),
                bucket=bucket,
                totalBuckets=num_buckets(self._schema),
                baseSnapshotId=self._sequence.snapshot_id,
                newFiles=self._files.get((values, bucket), []),
                changelogFiles=self._changelog.get((values, bucket), []),
                keyHashes=placed_bytes(self._placed.get((values, bucket), [])),
                writerId=self._id,
            )
            for (values, bucket) in {**self._files, **self._changelog}
        ]
        self._files = {}
        self._changelog = {}
        self._placed = {}
        return messages

    def close(self) -> None:
        """Drop buffered rows and spilled runs (their temp files go), and the files flushes
        wrote at once (not committed)."""
        self._buffer.drain()
        self._placed = {}
        self._spilled = {}
        self._last_key = {}
        direct, self._direct = self._direct, {}
        for (values, bucket), files in direct.items():  # written, never to be committed
            self._delete(self._spec.path(list(values)), bucket, files)
        if self._spill_dir is not None:
            self._spill_dir.cleanup()
            self._spill_dir = None


def write_sorted_run(
    io: FileIO, layout: TableLayout, schema: TableSchema, partition_path: str, bucket: int,
    table: pa.Table, *, level: int, target: int, compression: str, file_source: int = 0,
) -> list[DataFileMeta]:
    """Write a key-sorted table (with system columns) as files of one sorted run."""
    return [write_data_file(io, layout, partition_path, bucket, chunk, schema=schema, level=level,
                            file_source=file_source, compression=compression)
            for chunk in roll_table(table, target)]
