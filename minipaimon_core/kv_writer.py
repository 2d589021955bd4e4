"""Writer of primary-key tables: the write buffer of an LSM tree per (partition, bucket).

Rows are numbered in input order (a writer-local ``_SEQUENCE_NUMBER``; the committer turns
it into a table-wide one), split by partition and by bucket = hash(bucket key) mod N, and
buffered. All buckets of one writer share ``write-buffer-size``: past it the largest
buffer is flushed. A flush merges the buffer with the merge engine (keeping deletes, so
they still shadow older files), sorted by key, into level-0 Parquet files rolled at
``target-file-size``.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .commit_message import CommitMessage
from .conform import conform, to_batches
from .data_file import SEQUENCE, VALUE_KIND, write_data_file
from .errors import InvalidArgumentError
from .fileio import FileIO
from .layout import TableLayout
from .lsm.bucket import bucket_ids
from .lsm.merge_engines import MergeConfig, merge, prepare_input
from .manifest import DataFileMeta
from .options import Options
from .partition import PartitionSpec, split_by_bucket
from .schema import ROW_KIND_COLUMN, TableSchema
from .write_buffer import BucketKey, WriteBuffer

ROW_KINDS = pa.array(["+I", "-U", "+U", "-D"])
FLUSH_OVERHEAD = 4


def value_kinds(table: pa.Table) -> pa.Array:
    """``_VALUE_KIND`` (int8) from an optional ``_row_kind`` column; +I if absent."""
    if ROW_KIND_COLUMN not in table.column_names:
        return pa.array(np.zeros(table.num_rows, dtype=np.int8))
    idx = pc.index_in(table.column(ROW_KIND_COLUMN), value_set=ROW_KINDS)
    if idx.null_count:
        bad = pc.filter(table.column(ROW_KIND_COLUMN), pc.is_null(idx)).unique().to_pylist()[:5]
        raise InvalidArgumentError(f"_row_kind must be one of +I, -U, +U, -D; got {bad}")
    return pc.cast(idx, pa.int8()).combine_chunks()


class KeyValueWriter:
    def __init__(self, io: FileIO, layout: TableLayout, schema: TableSchema) -> None:
        self._io = io
        self._layout = layout
        self._schema = schema
        self._arrow_schema = schema.arrow_schema()
        self._options = Options(schema.options)
        self._spec = PartitionSpec.of(self._arrow_schema, schema.partitionKeys)
        self._merge = MergeConfig.from_options(tuple(schema.primaryKeys), schema.options)
        self._target = self._options["target-file-size"]
        # A flush holds the buffered rows, the merge's copies and sort order and the Parquet
        # pages at once, about 4x the buffered bytes (measured, bench/bench_pk.py): the
        # buffer takes a quarter of write-buffer-size so a whole flush stays within it.
        self._buffer = WriteBuffer(self._options["write-buffer-size"] // FLUSH_OVERHEAD)
        self._files: dict[BucketKey, list[DataFileMeta]] = {}
        self._changelog: dict[BucketKey, list[DataFileMeta]] = {}
        self._input_changelog = self._options["changelog-producer"] == "input"
        self._next_seq = 0
        self._key_columns = list(schema.primaryKeys)

    def write(self, data: Any) -> None:
        """Buffer upserts (and deletes, via ``_row_kind``) of ``data``.

        Raises SchemaMismatchError / InvalidArgumentError (null keys, bad row kinds) before
        anything of this batch is buffered.
        """
        for batch in to_batches(data):
            table = conform(batch, self._arrow_schema, self._key_columns, allow_row_kind=True)
            kinds = value_kinds(table)
            if ROW_KIND_COLUMN in table.column_names:
                table = table.drop_columns([ROW_KIND_COLUMN])
            n = table.num_rows
            seq = pa.array(np.arange(self._next_seq, self._next_seq + n, dtype=np.int64))
            self._next_seq += n
            table = table.append_column(SEQUENCE, seq).append_column(VALUE_KIND, kinds)
            for values, part in self._spec.split(table):
                buckets = bucket_ids(part, self._schema.bucket_keys, self._schema.num_buckets)
                for bucket, rows in split_by_bucket(part, np.asarray(buckets, dtype=np.int64)):
                    for key, pieces in self._buffer.add((tuple(values), bucket), rows):
                        self._record(key, self._write_level0(key, pieces))
                        pa.default_memory_pool().release_unused()

    def _record(self, key: BucketKey,
                written: tuple[list[DataFileMeta], list[DataFileMeta]]) -> None:
        files, changelog = written
        if files:
            self._files.setdefault(key, []).extend(files)
        if changelog:
            self._changelog.setdefault(key, []).extend(changelog)

    def _write_level0(self, key: BucketKey,
                      pieces: list[pa.Table]) -> tuple[list[DataFileMeta], list[DataFileMeta]]:
        """Merge a bucket's buffered rows into level-0 files (and input changelog files).
        Touches no writer state, so buckets can be written in parallel."""
        if not pieces:
            return [], []
        rows = pa.concat_tables(pieces)
        values, bucket = key
        path = self._spec.path(list(values))
        changelog = []
        if self._input_changelog:
            changelog.append(write_data_file(
                self._io, self._layout, path, bucket, rows,
                schema_id=self._schema.id, stats_columns=self._schema.field_names,
                compression=self._options["file.compression"], prefix="changelog",
                min_seq=pc.min(rows.column(SEQUENCE)).as_py(), max_seq=pc.max(rows.column(SEQUENCE)).as_py(),
            ))
        merged = merge(prepare_input(rows, self._merge), self._merge, keep_deletes=True)
        if merged.num_rows == 0:
            return [], changelog
        files = write_sorted_run(self._io, self._layout, self._schema, path, bucket, merged, level=0,
                                 target=self._target, compression=self._options["file.compression"])
        return files, changelog

    def prepare_commit(self) -> list[CommitMessage]:
        """Flush all buffers (buckets in parallel threads: Arrow and Parquet release the
        GIL); one message per (partition, bucket) with its new files."""
        pending = self._buffer.drain()
        if len(pending) > 1:
            with ThreadPoolExecutor(max_workers=min(len(pending), os.cpu_count() or 1)) as pool:
                results = list(pool.map(lambda kp: self._write_level0(*kp), pending))
        else:
            results = [self._write_level0(*kp) for kp in pending]
        for (key, _), written in zip(pending, results):
            self._record(key, written)
        messages = [
            CommitMessage(
                partition=list(values),
                partitionPath=self._spec.path(list(values)),
                bucket=bucket,
                totalBuckets=self._schema.num_buckets,
                newFiles=self._files.get((values, bucket), []),
                changelogFiles=self._changelog.get((values, bucket), []),
            )
            for (values, bucket) in {**self._files, **self._changelog}
        ]
        self._files = {}
        self._changelog = {}
        return messages

    def close(self) -> None:
        self._buffer.drain()


def write_sorted_run(
    io: FileIO, layout: TableLayout, schema: TableSchema, partition_path: str, bucket: int,
    table: pa.Table, *, level: int, target: int, compression: str, file_source: int = 0,
) -> list[DataFileMeta]:
    """Write a key-sorted table (with system columns) as files of one sorted run."""
    bytes_per_row = max(1, table.nbytes // max(1, table.num_rows))
    rows_per_file = max(1, target // bytes_per_row)
    files = []
    for start in range(0, table.num_rows, rows_per_file):
        chunk = table.slice(start, rows_per_file)
        seq = chunk.column(SEQUENCE)
        mm = pc.min_max(seq)
        files.append(write_data_file(
            io, layout, partition_path, bucket, chunk,
            schema_id=schema.id,
            stats_columns=schema.field_names,
            key_columns=schema.primaryKeys,
            level=level,
            file_source=file_source,
            compression=compression,
            min_seq=mm["min"].as_py(),
            max_seq=mm["max"].as_py(),
        ))
    return files
