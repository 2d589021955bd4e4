"""Writer of append (no primary key) tables.

Rows are split by partition (and by ``bucket-key`` hash when the table has buckets),
buffered per (partition, bucket), and written as Parquet files rolled at
``target-file-size`` (estimated from Arrow's in-memory size). The whole writer's buffer is
bounded by ``write-buffer-size``: past it, the largest buffer is flushed.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from ..expressions.stats import grouped_stats
from ..file_format import dictionary_columns
from ..file_format.data_file import roll_table, write_data_file
from ..format.layout import TableLayout
from ..format.manifest_file import DataFileMeta, SimpleStats
from ..format.options import Options
from ..io.fileio import FileIO
from ..metadata.commit_message import CommitMessage
from ..schema.bucket import bucket_ids, num_buckets
from ..schema.partition import PartitionSpec, split_by_bucket
from ..schema.schema import TableSchema
from .conform import conform, to_batches
from .write_buffer import BucketKey, WriteBuffer, run_bytes


class AppendWriter:
    def __init__(self, io: FileIO, layout: TableLayout, schema: TableSchema) -> None:
        self._io = io
        self._layout = layout
        self._schema = schema
        self._arrow_schema = schema.arrow_schema()
        self._options = Options(schema.options)
        self._spec = PartitionSpec.of(schema)
        self._target = self._options["target-file-size"]
        self._buffer = WriteBuffer(self._options["write-buffer-size"], bucket_limit=self._target)
        self._files: dict[BucketKey, list[DataFileMeta]] = {}
        self._rows_written = 0
        self._dictionary: list[str] | None = None
        # stats of buffered pieces computed with others (by id; the piece is held with them)
        self._known_stats: dict[int, tuple[pa.Table, SimpleStats]] = {}
        self._paths: dict[tuple[Any, ...], str] = {}

    def write(self, data: Any) -> None:
        """Buffer ``data`` (checked against the schema; see conform.conform)."""
        for batch in to_batches(data):
            table = conform(batch, self._arrow_schema, [], allow_row_kind=False)
            parts = self._parts(table)
            # many files of alike rows: which columns to dictionary-encode is decided once
            # over the batch, not again for each file (~0.15 ms a file)
            self._dictionary = dictionary_columns(table) if len(parts) > 1 else None
            flushed = False
            for key, rows, stats, size in parts:
                if stats is not None:
                    self._known_stats[id(rows)] = (rows, stats)
                for full, pieces, nbytes in self._buffer.add(key, rows, size):
                    self._flush(full, pieces, nbytes)
                    flushed = True
            if flushed and len(parts) > 1:
                # the partitions are slices of one table: those still buffered would keep
                # the rows just written in memory (write-buffer-size counts the slices)
                self._buffer.own_last([key for key, _, _, _ in parts])
                self._known_stats.clear()

    def _parts(self, table: pa.Table) -> list[tuple[BucketKey, pa.Table, SimpleStats | None, int | None]]:
        """``table``'s rows by (partition, bucket), with their stats and size where known.
        For many partitions (and no buckets), the stats and sizes of each one's rows are
        computed at once (a file of exactly those rows takes them: ~0.1 ms a file less)."""
        if num_buckets(self._schema) >= 1 or not self._spec.keys:
            return [((tuple(values), bucket), rows, None, None) for values, part in self._spec.split(table)
                    for bucket, rows in self._by_bucket(part)]
        ordered, groups, paths, bounds = self._spec.runs(table)
        if len(groups) < 2:
            return [((tuple(values), 0), ordered, None, None) for values in groups]
        stats = grouped_stats(ordered, self._schema.field_names, bounds)
        sizes = run_bytes(ordered, bounds)
        parts: list[tuple[BucketKey, pa.Table, SimpleStats | None, int | None]] = []
        for i, (values, path, start, end) in enumerate(zip(groups, paths, bounds[:-1], bounds[1:])):
            key = tuple(values)
            self._paths.setdefault(key, path)
            parts.append(((key, 0), ordered.slice(start, end - start), stats[i] if stats is not None else None,
                          sizes[i] if sizes is not None else None))
        return parts

    def _by_bucket(self, table: pa.Table) -> list[tuple[int, pa.Table]]:
        if num_buckets(self._schema) < 1:
            return [(0, table)]
        return split_by_bucket(table, bucket_ids(table, self._schema))

    def _flush(self, key: BucketKey, pieces: list[pa.Table], nbytes: int) -> None:
        known = [self._known_stats.pop(id(p), None) for p in pieces]
        table = pa.concat_tables(pieces) if len(pieces) > 1 else pieces[0]
        values, bucket = key
        path = self._path(values)
        chunks = list(roll_table(table, self._target, nbytes))
        whole = known[0] if len(chunks) == 1 and len(pieces) == 1 and known[0] is not None \
            and known[0][0] is pieces[0] else None
        for chunk in chunks:
            meta = write_data_file(
                self._io, self._layout, path, bucket, chunk, schema=self._schema,
                compression=self._options["file.compression"],
                min_seq=self._rows_written,
                max_seq=self._rows_written + chunk.num_rows - 1,
                dictionary=self._dictionary,
                stats=whole[1] if whole is not None else None,
            )
            self._rows_written += chunk.num_rows
            self._files.setdefault(key, []).append(meta)

    def _path(self, values: tuple[Any, ...]) -> str:
        """The partition's directory (named once per writer)."""
        path = self._paths.get(values)
        if path is None:
            path = self._paths[values] = self._spec.path(list(values))
        return path

    def prepare_commit(self) -> list[CommitMessage]:
        """Flush everything and describe the new files, one message per (partition, bucket)."""
        for key, pieces, nbytes in self._buffer.drain():
            self._flush(key, pieces, nbytes)
        total_buckets = num_buckets(self._schema)
        messages = [
            CommitMessage(
                partition=list(values),
                partitionPath=self._path(values),
                bucket=bucket,
                totalBuckets=total_buckets,
                newFiles=files,
            )
            for (values, bucket), files in self._files.items()
        ]
        self._files = {}
        return messages

    def close(self) -> None:
        self._buffer.drain()
        self._known_stats.clear()
