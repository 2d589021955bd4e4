"""Data files: the Parquet, ORC or Avro files of a bucket, in Paimon's layout, and their metadata.

Append files hold the table's columns. Primary-key (and changelog) files hold, as Paimon's
``KeyValue`` files: ``_KEY_<k>`` for each column of the trimmed primary key (the key
without partition columns), ``_SEQUENCE_NUMBER`` (BIGINT), ``_VALUE_KIND`` (TINYINT: +I 0,
-U 1, +U 2, -D 3), then every column; sorted by key, one row per key. Columns carry
Paimon's field ids (``_KEY_`` ones offset by ``KEY_FIELD_ID_START``), decimals of up to 18
digits are stored as integers (as Paimon's Java writer does, and reads). Readers select
columns by name.

A new file is written in the table's ``file.format`` (:func:`file_format.table_format`);
a file is read in the format its extension names (a table whose format changed holds
several), see :mod:`minipaimon_core.file_format`.

Writing returns a :class:`DataFileMeta` with row count, per-column stats (the columns of
the file's schema, in order), key range and sequence range. Reading (:mod:`.data_file_read`,
its names re-exported here) returns an Arrow Table of the requested columns, or its rows
table by table.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Collection, Iterable, Iterator
from typing import BinaryIO, NoReturn

import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import file_format
from ..errors import InvalidArgumentError, StorageError, redact_userinfo
from ..expressions.stats import merge_stats, table_stats, to_stat
from ..format import data_types, options
from ..format.bucket_names import POSTPONE_BUCKET, postponed_file_name
from ..format.kinds import SEQUENCE, VALUE_KIND
from ..format.layout import TableLayout
from ..format.manifest_file import FILE_SOURCE_APPEND, DataFileMeta, SimpleStats
from ..format.table_schema import TableSchema
from ..io import pools
from ..io.fileio import FileIO
from .data_file_read import BATCH_ROWS, iter_data_file, missing_data_file, read_data_file
from .file_index import IndexBuilder

KEY_PREFIX = "_KEY_"
# Footer (Parquet) or header (Avro) metadata: the file's own name, so a valid file of the
# table copied or swapped over another is refused (Paimon's readers ignore it; files of
# other writers lack it).
FILE_NAME_KEY = file_format.FILE_NAME_KEY

#: a part of fewer rows has its stats computed in the writing thread
_STATS_THREAD_FROM_ROWS = 65_536

#: a file written whole with fewer rows has no dictionary page: there each is one more page
#: to compress for no fewer bytes (1,000 rows of 5 columns, two of them dictionary-encoded:
#: 6.7 KB and 0.43 ms to encode; plain: 5.8 KB and 0.38 ms; about even at 4,000 rows)
_DICTIONARY_FROM_ROWS = 4096

__all__ = ["BATCH_ROWS", "FILE_NAME_KEY", "KEY_PREFIX", "DataFileWriter", "file_paths", "file_schema",
           "iter_data_file", "missing_data_file", "read_data_file", "roll", "roll_table", "storage_failure",
           "to_file_layout", "write_changelog_file", "write_data_file", "write_data_file_parts"]


def file_schema(schema: TableSchema, key_value: bool) -> pa.Schema:
    """The Arrow schema of a data file of ``schema``: with the system columns of Paimon's
    key-value files (``key_value``) or the plain columns, with Paimon's field ids."""
    arrow = schema.arrow_schema()
    if not key_value:
        return arrow
    ids = {f.name: f.id for f in schema.fields}
    keys = [arrow.field(k).with_name(KEY_PREFIX + k).with_nullable(False)
            .with_metadata(data_types.field_id_metadata(data_types.key_field_id(ids[k])))
            for k in schema.trimmed_primary_keys]
    system = [pa.field(SEQUENCE, pa.int64(), False,
                       data_types.field_id_metadata(data_types.SEQUENCE_NUMBER_FIELD_ID)),
              pa.field(VALUE_KIND, pa.int8(), False,
                       data_types.field_id_metadata(data_types.VALUE_KIND_FIELD_ID))]
    return pa.schema([*keys, *system, *arrow])


def to_file_layout(table: pa.Table, target: pa.Schema) -> pa.Table:
    """``table`` (the table's columns, with ``_SEQUENCE_NUMBER`` / ``_VALUE_KIND`` for
    key-value files) in the column order and field ids of ``target`` (:func:`file_schema`)."""
    if table.schema.equals(target, check_metadata=True):  # (an append file of conformed rows)
        return table
    names = table.column_names
    arrays = table.columns if names == target.names else [  # (an append file: the same columns)
        table.column(f.name[len(KEY_PREFIX):]) if f.name.startswith(KEY_PREFIX) and f.name not in names
        else table.column(f.name) for f in target]
    out = pa.Table.from_arrays(arrays, schema=target.with_metadata(None)) \
        if all(a.type.equals(f.type) for a, f in zip(arrays, target)) \
        else pa.Table.from_arrays([a.cast(f.type) for a, f in zip(arrays, target)], schema=target)
    return out


def write_data_file(
    io: FileIO,
    layout: TableLayout,
    partition_path: str,
    bucket: int,
    table: pa.Table,
    *,
    schema: TableSchema,
    level: int = 0,
    file_source: int = FILE_SOURCE_APPEND,
    compression: str = "zstd",
    prefix: str = "data",
    min_seq: int = 0,
    max_seq: int = 0,
    dictionary: Collection[str] | None = None,
    stats: SimpleStats | None = None,
) -> DataFileMeta:
    """Write ``table`` as one Parquet file in the bucket directory and describe it: a
    key-value file when it has ``_SEQUENCE_NUMBER`` (sorted by the key; its sequence range
    is the column's), else an append file with sequence range ``min_seq``..``max_seq``.
    ``dictionary``, ``stats``: see :class:`DataFileWriter`; a small file has no dictionary
    (:data:`_DICTIONARY_FROM_ROWS`)."""
    if table.num_rows < _DICTIONARY_FROM_ROWS:
        dictionary = ()
    writer = DataFileWriter(io, layout, partition_path, bucket, schema=schema, level=level,
                            file_source=file_source, compression=compression, prefix=prefix,
                            dictionary=dictionary)
    try:
        writer.write(table, stats)
        meta = writer.finish()
    except BaseException:
        writer.abort()
        raise
    if SEQUENCE in table.column_names:
        return meta
    return msgspec.structs.replace(meta, minSequenceNumber=min_seq, maxSequenceNumber=max_seq)


def write_changelog_file(
    io: FileIO,
    layout: TableLayout,
    partition_path: str,
    bucket: int,
    changes: pa.Table,
    *,
    schema: TableSchema,
    compression: str,
    file_source: int,
) -> DataFileMeta:
    """Write ``changes`` (columns, ``_SEQUENCE_NUMBER``, ``_VALUE_KIND``) as one
    ``changelog-*`` file. The one changelog writer of the ``input`` producer
    (``FILE_SOURCE_APPEND``) and of compaction (``FILE_SOURCE_COMPACT``)."""
    return write_data_file(io, layout, partition_path, bucket, changes, schema=schema,
                           compression=compression, prefix="changelog", file_source=file_source)


def write_data_file_parts(
    io: FileIO,
    layout: TableLayout,
    partition_path: str,
    bucket: int,
    parts: Iterable[pa.Table],
    *,
    schema: TableSchema,
    level: int = 0,
    file_source: int = FILE_SOURCE_APPEND,
    compression: str = "zstd",
    prefix: str = "data",
    dictionary: Collection[str] | None = None,
) -> DataFileMeta:
    """Write consecutive ``parts`` (same columns) as one file in the table's format, holding
    one part in memory at a time, and describe it (see :func:`write_data_file`). Raises
    InvalidArgumentError / UnsupportedFeatureError for what the format cannot hold (the file
    is deleted: nothing of it stays)."""
    writer = DataFileWriter(io, layout, partition_path, bucket, schema=schema, level=level,
                            file_source=file_source, compression=compression, prefix=prefix,
                            dictionary=dictionary)
    try:
        for part in parts:
            writer.write(part)
        return writer.finish()
    except BaseException:
        writer.abort()
        raise


class DataFileWriter:
    """One new data (or changelog) file, written part by part: :meth:`write` each part (same
    columns), then :meth:`finish` for its :class:`DataFileMeta`, or :meth:`abort`. A failure
    in either deletes the file (nothing of it stays) and raises as
    :func:`write_data_file_parts` does. Holds one part and the format's encoder state.
    ``dictionary``: the file's columns to dictionary-encode, decided once by a writer of
    many files (:func:`file_format.dictionary_columns` of its input); None: decided by the
    format from the first part."""

    def __init__(self, io: FileIO, layout: TableLayout, partition_path: str, bucket: int, *,
                 schema: TableSchema, level: int = 0, file_source: int = FILE_SOURCE_APPEND,
                 compression: str = "zstd", prefix: str = "data",
                 dictionary: Collection[str] | None = None) -> None:
        self._io = io
        self._schema = schema
        self._level = level
        self._file_source = file_source
        self._compression = compression
        self._zstd_level = options.zstd_level(schema.options)
        self._dictionary = dictionary
        self._fmt = file_format.table_format(schema)
        self.name = postponed_file_name(self._fmt.extension) if bucket == POSTPONE_BUCKET and prefix == "data" \
            else TableLayout.new_data_file_name(prefix, self._fmt.extension)
        self._path = layout.data_file_path(partition_path, bucket, self.name)
        # its file index goes beside it (the directory checked once, for the data file)
        self._index_path = f"{self._path[:-len(self.name)]}{TableLayout.index_file_of(self.name)}"
        self._with_index = prefix == "data"
        self._stack = contextlib.ExitStack()
        self._out: BinaryIO | None = None
        self._writer: file_format.FormatWriter | None = None
        self._index: IndexBuilder | None = None
        self._target: pa.Schema | None = None
        self._key_value = False
        self._first: pa.Table | None = None
        self._last: pa.Table | None = None
        self._stats: list[tuple[SimpleStats, int]] = []
        self._seq: list[tuple[int, int]] = []
        self.rows = 0
        self._deletes = 0

    def write(self, part: pa.Table, stats: SimpleStats | None = None) -> None:
        """Write ``part``; ``stats``: its :func:`table_stats` of the schema's columns when
        the caller computed them (for many parts at once: ``grouped_stats``)."""
        try:
            self._write(part, stats)
        except BaseException as e:
            self._fail(e)

    def _write(self, part: pa.Table, stats: SimpleStats | None) -> None:
        schema, names = self._schema, part.column_names
        if self._out is None:
            self._out = self._stack.enter_context(self._io.open_output(self._path))
        if self._target is None:
            self._key_value = SEQUENCE in names
            self._target = file_schema(schema, self._key_value)
            # file indexes: append data files only, as Paimon 0.9 writes them
            if not self._key_value and self._with_index:
                self._index = IndexBuilder.of(schema.options, schema.arrow_schema())
        laid = to_file_layout(part, self._target)
        if self._writer is None:
            self._writer = self._fmt.open_writer(self._out, self._target, laid,
                                                 compression=self._compression, file_name=self.name,
                                                 dictionary=self._dictionary, zstd_level=self._zstd_level)
        # the stats kernels of a large part run beside the encoder (both release the GIL);
        # a small part's in line (a thread's hand-off and GIL contention cost more)
        part_stats = pools.pool("stats").submit(table_stats, part, schema.field_names) \
            if stats is None and part.num_rows >= _STATS_THREAD_FROM_ROWS else None
        self._writer.write(laid)
        if self._index is not None:
            self._index.add(part)
        if part.num_rows and self._key_value:  # the key range
            self._first = self._first if self._first is not None else part.slice(0, 1)
            self._last = part.slice(part.num_rows - 1, 1)
        self.rows += part.num_rows
        if stats is None:
            stats = part_stats.result() if part_stats is not None else table_stats(part, schema.field_names)
        self._stats.append((stats, part.num_rows))
        if VALUE_KIND in names:  # retractions: -U (1) and -D (3), as in Paimon (kinds are never null)
            self._deletes += int(np.count_nonzero(part.column(VALUE_KIND).to_numpy() & 1))
        if self._key_value and part.num_rows:
            mm = pc.min_max(part.column(SEQUENCE))
            self._seq.append((mm["min"].as_py(), mm["max"].as_py()))

    def finish(self) -> DataFileMeta:
        """Close the file and describe it. Raises InvalidArgumentError if no part had rows."""
        try:
            return self._finish()
        except BaseException as e:
            self._fail(e)

    def _finish(self) -> DataFileMeta:
        if self._writer is None:
            raise InvalidArgumentError(f"no rows to write to {self._path}")
        writer, self._writer = self._writer, None
        size: int | None = None
        try:
            writer.close()
            # the bytes written are the file's size: no stat (a HEAD on an object store)
            tell = getattr(self._out, "tell", None)
            size = tell() if tell is not None else None
        finally:
            self._stack.close()
        io, schema = self._io, self._schema
        embedded: bytes | None = None
        extra: tuple[str, ...] = ()
        if self._index is not None:
            data, in_manifest = self._index.finish()
            if in_manifest:
                embedded = data
            else:
                with io.open_output(self._index_path) as f:
                    f.write(data)
                extra = (TableLayout.index_file_of(self.name),)
        min_key: tuple = ()
        max_key: tuple = ()
        first, last = self._first, self._last
        if self._key_value and first is not None and last is not None:
            keys = schema.trimmed_primary_keys
            min_key = tuple(to_stat(first.column(k)[0], first.schema.field(k).type) for k in keys)
            max_key = tuple(to_stat(last.column(k)[0], last.schema.field(k).type) for k in keys)
        return DataFileMeta(
            fileName=self.name,
            fileSize=size if size is not None else io.file_size(self._path),
            rowCount=self.rows,
            minKey=min_key,
            maxKey=max_key,
            valueStats=merge_stats(self._stats),
            minSequenceNumber=min((lo for lo, _ in self._seq), default=0),
            maxSequenceNumber=max((hi for _, hi in self._seq), default=0),
            schemaId=schema.id,
            level=self._level,
            creationTime=int(time.time() * 1000),
            deleteRowCount=self._deletes,
            fileSource=self._file_source,
            embeddedIndex=embedded,
            extraFiles=extra,
        )

    def abort(self) -> None:
        """Delete whatever of the file was written (an unfinished or finished one)."""
        if self._writer is not None:  # close it while its file is open (it is deleted after)
            with contextlib.suppress(Exception):
                self._writer.close()
            self._writer = None
        with contextlib.suppress(Exception):
            self._stack.close()
        for leftover in (self._path, self._index_path):  # the write's own error is the one to raise
            with contextlib.suppress(Exception):
                self._io.delete(leftover)

    def _fail(self, e: BaseException) -> NoReturn:
        """Abort, then raise ``e`` (a store or disk failure as StorageError)."""
        self.abort()
        failure = storage_failure(self._path, e)
        if failure is e:
            raise e
        raise failure from e


def file_paths(layout: TableLayout, partition_path: str, bucket: int, file: DataFileMeta) -> list[str]:
    """Paths of a data or changelog file and of its extra files (its file index), which go
    with it (an aborted write deletes them all)."""
    names = [file.fileName, *(n for n in file.extraFiles if n == TableLayout.index_file_of(file.fileName))]
    return [layout.data_file_path(partition_path, bucket, n) for n in names]


def storage_failure(path: str, e: BaseException) -> BaseException:
    """What a failed data-file write raises: a store or disk failure (a SlowDown of a
    multipart upload, ENOSPC, EIO) as a StorageError naming the file (nothing was committed,
    the write can be retried); anything else as it is."""
    if isinstance(e, OSError) and not isinstance(e, StorageError):
        return StorageError(redact_userinfo(
            f"writing data file {path} failed ({type(e).__name__}: {e}); nothing was "
            "committed: retry when the store answers again"))
    return e


# -- rolling: where one data file ends and the next begins ------------------------------

def roll(chunks: Iterator[pa.Table], target: int) -> Iterator[Iterator[pa.Table]]:
    """Cut a stream of chunks into consecutive parts of about ``target`` bytes (one file
    each), as iterators, so no more than one chunk is held at a time. Each part must be
    consumed before the next is taken."""
    stream = (c for c in chunks if c.num_rows)
    head = next(stream, None)
    while head is not None:
        size = 0

        def part() -> Iterator[pa.Table]:
            nonlocal head, size
            while head is not None and size < target:
                chunk, head = head, None
                size += chunk.nbytes
                yield chunk
                head = next(stream, None)

        yield part()


def roll_table(table: pa.Table, target: int, nbytes: int | None = None) -> Iterator[pa.Table]:
    """``table`` (in memory) as consecutive slices of about ``target`` bytes, one file each,
    sized by its average row width (the in-memory counterpart of :func:`roll`). ``nbytes``:
    the table's size when the caller knows it (``table.nbytes`` of a slice costs ~10 µs)."""
    size = table.nbytes if nbytes is None else nbytes
    if size < target:
        yield table
        return
    rows_per_file = max(1, target // max(1, size // max(1, table.num_rows)))
    for start in range(0, table.num_rows, rows_per_file):
        yield table.slice(start, rows_per_file)
