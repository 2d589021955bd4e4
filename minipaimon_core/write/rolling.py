"""A rolling writer: key-sorted tables pushed one by one into the files of one sorted run.

Tables are buffered until they hold :data:`ROW_GROUP_BYTES` (in memory; less where the
file is that close to its target), then written as one piece (a Parquet row group of that
size, not one per table), and a file is closed once it holds ``target`` bytes (in memory, as :func:`~minipaimon_core.file_format.data_file.roll_table`
sizes files). Files are cut only between tables, so a caller that never splits a key's rows
across two tables gets files whose key ranges do not overlap. Memory: the buffer and the
format's encoder state.
"""

from __future__ import annotations

import pyarrow as pa

from ..file_format.data_file import DataFileWriter, file_paths
from ..format.layout import TableLayout
from ..format.manifest_file import FILE_SOURCE_APPEND, DataFileMeta
from ..io.fileio import FileIO
from ..schema.schema import TableSchema

#: bytes (in memory) of the rows a rolling writer hands to the encoder at once
ROW_GROUP_BYTES = 16 << 20


class RollingWriter:
    """Push tables with :meth:`write`, then :meth:`finish` for the files written (or
    :meth:`abort`, which deletes them). A failed write or finish deletes every file of
    this writer before it raises."""

    def __init__(self, io: FileIO, layout: TableLayout, partition_path: str, bucket: int, *,
                 schema: TableSchema, target: int, compression: str, level: int = 0,
                 file_source: int = FILE_SOURCE_APPEND, prefix: str = "data",
                 row_group_bytes: int | None = None) -> None:
        self._args = (io, layout, partition_path, bucket)
        self._kwargs = {"schema": schema, "level": level, "file_source": file_source,
                        "compression": compression, "prefix": prefix}
        self._target = target
        self._row_group = row_group_bytes if row_group_bytes is not None else ROW_GROUP_BYTES
        self._pending: list[pa.Table] = []
        self._pending_bytes = 0
        self._current: DataFileWriter | None = None
        self._current_bytes = 0  # in-memory bytes written to the current file (0: none open)
        self._done: list[DataFileMeta] = []

    def write(self, table: pa.Table) -> None:
        """Add ``table`` (key-sorted, after every table before it)."""
        if not table.num_rows:
            return
        self._pending.append(table)
        self._pending_bytes += table.nbytes
        room = self._target - self._current_bytes
        if self._pending_bytes >= min(self._row_group, room):
            self._flush()

    def finish(self) -> list[DataFileMeta]:
        """Write what is buffered and close the last file; the files, in key order."""
        self._flush()
        if self._current is not None:
            self._close_current()
        return self._done

    def abort(self) -> None:
        """Delete every file of this writer (finished ones too)."""
        self._pending = []
        if self._current is not None:
            self._current.abort()
            self._current, self._current_bytes = None, 0
        io, layout, path, bucket = self._args
        for f in self._done:
            for p in file_paths(layout, path, bucket, f):
                io.delete(p)
        self._done = []

    def _flush(self) -> None:
        if not self._pending:
            return
        piece = pa.concat_tables(self._pending) if len(self._pending) > 1 else self._pending[0]
        size, self._pending, self._pending_bytes = self._pending_bytes, [], 0
        try:
            if self._current is None:
                self._current = DataFileWriter(*self._args, **self._kwargs)  # type: ignore[arg-type]
            self._current.write(piece)  # deletes its own file when it fails
        except BaseException:
            self._current = None
            self.abort()
            raise
        self._current_bytes += size
        if self._current_bytes >= self._target:
            self._close_current()

    def _close_current(self) -> None:
        assert self._current is not None
        current, self._current, self._current_bytes = self._current, None, 0
        try:
            self._done.append(current.finish())
        except BaseException:
            self.abort()
            raise
