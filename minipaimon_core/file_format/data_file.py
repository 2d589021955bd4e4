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
the file's schema, in order), key range and sequence range. Reading returns an Arrow Table
of the requested columns.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Collection, Iterable, Iterator, Sequence

import msgspec
import pyarrow as pa
import pyarrow.compute as pc

from .. import file_format
from ..errors import CorruptDataFileError, InvalidArgumentError, StorageError, redact_userinfo
from ..expressions.stats import merge_stats, table_stats, to_stat
from ..format import data_types
from ..format.bucket_names import POSTPONE_BUCKET, postponed_file_name
from ..format.kinds import SEQUENCE, VALUE_KIND
from ..format.layout import TableLayout
from ..format.manifest_file import FILE_SOURCE_APPEND, DataFileMeta, SimpleStats
from ..format.table_schema import TableSchema
from ..io import pools
from ..io.fileio import FileIO
from .file_index import IndexBuilder

KEY_PREFIX = "_KEY_"
# Footer (Parquet) or header (Avro) metadata: the file's own name, so a valid file of the
# table copied or swapped over another is refused (Paimon's readers ignore it; files of
# other writers lack it).
FILE_NAME_KEY = file_format.FILE_NAME_KEY


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
    arrays = [table.column(f.name[len(KEY_PREFIX):]) if f.name.startswith(KEY_PREFIX)
              and f.name not in table.column_names else table.column(f.name) for f in target]
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
) -> DataFileMeta:
    """Write ``table`` as one Parquet file in the bucket directory and describe it: a
    key-value file when it has ``_SEQUENCE_NUMBER`` (sorted by the key; its sequence range
    is the column's), else an append file with sequence range ``min_seq``..``max_seq``."""
    meta = write_data_file_parts(
        io, layout, partition_path, bucket, [table], schema=schema, level=level,
        file_source=file_source, compression=compression, prefix=prefix)
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
) -> DataFileMeta:
    """Write consecutive ``parts`` (same columns) as one file in the table's format, holding
    one part in memory at a time, and describe it (see :func:`write_data_file`). Raises
    InvalidArgumentError / UnsupportedFeatureError for what the format cannot hold (the file
    is deleted: nothing of it stays)."""
    fmt = file_format.table_format(schema)
    name = postponed_file_name(fmt.extension) if bucket == POSTPONE_BUCKET and prefix == "data" \
        else TableLayout.new_data_file_name(prefix, fmt.extension)
    path = layout.data_file_path(partition_path, bucket, name)
    index_path = layout.data_file_path(partition_path, bucket, TableLayout.index_file_of(name))
    try:
        return _write_parts(io, path, name, parts, fmt, schema=schema, level=level,
                            file_source=file_source, compression=compression,
                            index_path=index_path if prefix == "data" else None)
    except BaseException as e:  # a failed write leaves no partial file behind
        for leftover in (path, index_path):  # the write's own error is the one to raise
            with contextlib.suppress(Exception):
                io.delete(leftover)
        failure = storage_failure(path, e)
        if failure is e:
            raise
        raise failure from e


def _write_parts(io: FileIO, path: str, name: str, parts: Iterable[pa.Table],
                 fmt: file_format.FileFormat, *, schema: TableSchema, level: int,
                 file_source: int, compression: str, index_path: str | None) -> DataFileMeta:
    rows = deletes = 0
    index: IndexBuilder | None = None
    first: pa.Table | None = None
    last: pa.Table | None = None
    stats: list[tuple[SimpleStats, int]] = []
    seq: list[tuple[int, int]] = []
    writer: file_format.FormatWriter | None = None
    key_value = False
    target: pa.Schema | None = None
    with io.open_output(path) as f:
        try:
            for part in parts:
                if target is None:
                    key_value = SEQUENCE in part.column_names
                    target = file_schema(schema, key_value)
                    # file indexes: append data files only, as Paimon 0.9 writes them
                    if not key_value and index_path is not None:
                        index = IndexBuilder.of(schema.options, schema.arrow_schema())
                laid = to_file_layout(part, target)
                if writer is None:
                    writer = fmt.open_writer(f, target, laid, compression=compression, file_name=name)
                # the stats kernels run beside the encoder (both release the GIL)
                part_stats = pools.pool("stats").submit(table_stats, part, schema.field_names)
                writer.write(laid)
                if index is not None:
                    index.add(part)
                if part.num_rows:
                    first = first if first is not None else part.slice(0, 1)
                    last = part.slice(part.num_rows - 1, 1)
                rows += part.num_rows
                stats.append((part_stats.result(), part.num_rows))
                if VALUE_KIND in part.column_names:  # retractions: -U (1) and -D (3), as in Paimon
                    retract = pc.equal(pc.bit_wise_and(part.column(VALUE_KIND), pa.scalar(1, pa.int8())),
                                       pa.scalar(1, pa.int8()))
                    deletes += pc.sum(retract.cast(pa.int64())).as_py() or 0
                if SEQUENCE in part.column_names and part.num_rows:
                    mm = pc.min_max(part.column(SEQUENCE))
                    seq.append((mm["min"].as_py(), mm["max"].as_py()))
            if writer is None:
                raise InvalidArgumentError(f"no rows to write to {path}")
            writer.close()
        except BaseException:
            if writer is not None:  # close it while its file is open (it is deleted after)
                with contextlib.suppress(Exception):
                    writer.close()
            raise
    embedded: bytes | None = None
    extra: tuple[str, ...] = ()
    if index is not None and index_path is not None:
        data, in_manifest = index.finish()
        if in_manifest:
            embedded = data
        else:
            with io.open_output(index_path) as f:
                f.write(data)
            extra = (TableLayout.index_file_of(name),)
    min_key: tuple = ()
    max_key: tuple = ()
    if key_value and first is not None and last is not None:
        keys = schema.trimmed_primary_keys
        min_key = tuple(to_stat(first.column(k)[0], first.schema.field(k).type) for k in keys)
        max_key = tuple(to_stat(last.column(k)[0], last.schema.field(k).type) for k in keys)
    return DataFileMeta(
        fileName=name,
        fileSize=io.file_size(path),
        rowCount=rows,
        minKey=min_key,
        maxKey=max_key,
        valueStats=merge_stats(stats),
        minSequenceNumber=min((lo for lo, _ in seq), default=0),
        maxSequenceNumber=max((hi for _, hi in seq), default=0),
        schemaId=schema.id,
        level=level,
        creationTime=int(time.time() * 1000),
        deleteRowCount=deletes,
        fileSource=file_source,
        embeddedIndex=embedded,
        extraFiles=extra,
    )


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


def read_data_file(
    io: FileIO, layout: TableLayout, partition_path: str, bucket: int, file: DataFileMeta,
    columns: Sequence[str] | None = None, declared: pa.Schema | None = None,
    dictionary: Collection[str] = (),
) -> pa.Table:
    """Read the named ``columns`` (all if None) of one data file, in the format its name
    says; ``declared``: the file's Arrow layout (:func:`file_schema` of its schema), the
    types a format that stores them otherwise (ORC, Avro) converts back to; ``dictionary``:
    string/binary columns that may come as Arrow dictionaries (``FileFormat.read``).

    A read that fails is told apart by reading the whole file again: if the store cannot
    give it, the store failed (a 5xx, a dropped connection, EIO): StorageError, retryable;
    if it gives the file and it reads, the first failure was transient; if it gives the
    file and it does not read, the file is damaged.

    Raises:
        CorruptDataFileError: the file is missing (a caller whose snapshot expired
            meanwhile says so, see read.SplitReader), is not the one its metadata describes
            (size, rows, embedded name), is not readable in its format, fails a checksum or
            lacks a column it should hold.
        StorageError: the store failed while reading it.
        UnsupportedFeatureError: it holds values minipaimon's decoder of its format cannot
            read (ORC timestamps beyond 2262).
    """
    path = layout.data_file_path(partition_path, bucket, file.fileName)
    fmt = file_format.of_file(file.fileName, path)
    names = list(columns) if columns is not None else None
    try:
        with io.open_input(path) as f:
            size = f.seek(0, 2)
            if size != file.fileSize:
                raise _replaced(path, size, file)
            f.seek(0)
            t, named = fmt.read(f, names, declared, dictionary)
    except FileNotFoundError:
        raise missing_data_file(path) from None
    except (pa.ArrowException, OSError, ValueError, KeyError, IndexError, EOFError, TypeError) as e:
        t, named = _read_whole(io, path, file, fmt, names, declared, e, dictionary)
    if t.num_rows != file.rowCount or (named is not None and named != file.fileName.encode()):
        raise CorruptDataFileError(
            f"data file {path} holds {t.num_rows} rows (file {named!r}), its manifest says "
            f"{file.rowCount}: the file was replaced; restore it or roll the table back to a "
            "snapshot without it")
    return t


def missing_data_file(path: str) -> CorruptDataFileError:
    return CorruptDataFileError(
        f"data file {path} is missing: it was deleted outside minipaimon (or the snapshot read "
        "was expired or rolled back meanwhile: then re-plan the read); restore it or roll the "
        "table back to a snapshot without it")


def _replaced(path: str, size: int, file: DataFileMeta) -> CorruptDataFileError:
    return CorruptDataFileError(
        f"data file {path} has {size} bytes, its manifest says {file.fileSize}: the file "
        "was truncated or replaced; restore it or roll the table back to a snapshot without it")


def _read_whole(io: FileIO, path: str, file: DataFileMeta, fmt: file_format.FileFormat,
                names: list[str] | None, declared: pa.Schema | None,
                first: BaseException, dictionary: Collection[str]) -> tuple[pa.Table, bytes | None]:
    """The second read of a file whose streamed read failed with ``first`` (see
    :func:`read_data_file`): the whole file, then its format's decoder."""
    try:
        data = io.read_bytes(path)
    except FileNotFoundError:
        raise missing_data_file(path) from None
    except OSError as e:  # StorageError included: the store cannot give the file
        raise e if isinstance(e, StorageError) else StorageError(redact_userinfo(
            f"reading data file {path} failed ({type(e).__name__}: {e}); retry when the store "
            "answers again")) from e
    if len(data) != file.fileSize:
        raise _replaced(path, len(data), file) from first
    try:
        return fmt.read(pa.BufferReader(data), names, declared, dictionary)
    except (pa.ArrowException, OSError, ValueError, KeyError, IndexError, EOFError, TypeError) as e:
        raise CorruptDataFileError(
            f"data file {path} is damaged ({type(e).__name__}: {e}); restore it or roll the "
            "table back to a snapshot without it") from e


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


def roll_table(table: pa.Table, target: int) -> Iterator[pa.Table]:
    """``table`` (in memory) as consecutive slices of about ``target`` bytes, one file each,
    sized by its average row width (the in-memory counterpart of :func:`roll`)."""
    rows_per_file = max(1, target // max(1, table.nbytes // max(1, table.num_rows)))
    for start in range(0, table.num_rows, rows_per_file):
        yield table.slice(start, rows_per_file)
