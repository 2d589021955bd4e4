"""Data files: Parquet (zstd) files of a bucket, and their metadata.

Writing returns a :class:`DataFileMeta` with row count, per-column stats (user columns of
the table schema, in schema order), key range and local sequence range. Reading returns an
Arrow Table of the requested columns.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import msgspec
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .errors import CorruptDataFileError, InvalidArgumentError, SnapshotExpiredError
from .fileio import FileIO
from .kinds import SEQUENCE, VALUE_KIND
from .layout import TableLayout
from .manifest import FILE_SOURCE_APPEND, DataFileMeta, SimpleStats
from .stats import merge_stats, table_stats, to_stat


def write_data_file(
    io: FileIO,
    layout: TableLayout,
    partition_path: str,
    bucket: int,
    table: pa.Table,
    *,
    schema_id: int,
    stats_columns: Sequence[str],
    key_columns: Sequence[str] = (),
    level: int = 0,
    file_source: int = FILE_SOURCE_APPEND,
    compression: str = "zstd",
    prefix: str = "data",
    min_seq: int = 0,
    max_seq: int = 0,
) -> DataFileMeta:
    """Write ``table`` as one Parquet file in the bucket directory and describe it.

    ``key_columns``: the table is sorted by them; minKey/maxKey are its first/last keys.
    ``min_seq``/``max_seq``: the file's sequence range (local to the writer for new files).
    """
    meta = write_data_file_parts(
        io, layout, partition_path, bucket, [table], schema_id=schema_id,
        stats_columns=stats_columns, key_columns=key_columns, level=level,
        file_source=file_source, compression=compression, prefix=prefix)
    return msgspec.structs.replace(meta, minSequenceNumber=min_seq, maxSequenceNumber=max_seq)


def write_changelog_file(
    io: FileIO,
    layout: TableLayout,
    partition_path: str,
    bucket: int,
    changes: pa.Table,
    *,
    schema_id: int,
    stats_columns: Sequence[str],
    compression: str,
    file_source: int,
) -> DataFileMeta:
    """Write ``changes`` (user columns, ``_SEQUENCE_NUMBER``, ``_VALUE_KIND``) as one
    ``changelog-*`` file; its sequence range is that of the rows. The one changelog writer of
    the ``input`` producer (``FILE_SOURCE_APPEND``) and of compaction (``FILE_SOURCE_COMPACT``)."""
    seq = changes.column(SEQUENCE)
    return write_data_file(
        io, layout, partition_path, bucket, changes, schema_id=schema_id,
        stats_columns=stats_columns, compression=compression, prefix="changelog",
        file_source=file_source, min_seq=pc.min(seq).as_py(), max_seq=pc.max(seq).as_py())


def write_data_file_parts(
    io: FileIO,
    layout: TableLayout,
    partition_path: str,
    bucket: int,
    parts: Iterable[pa.Table],
    *,
    schema_id: int,
    stats_columns: Sequence[str],
    key_columns: Sequence[str] = (),
    level: int = 0,
    file_source: int = FILE_SOURCE_APPEND,
    compression: str = "zstd",
    prefix: str = "data",
) -> DataFileMeta:
    """Write consecutive ``parts`` (same schema) as one Parquet file, holding one part in
    memory at a time, and describe it. The sequence range is the ``_SEQUENCE_NUMBER``
    column's (0, 0 without one); see :func:`write_data_file` for the rest."""
    name = TableLayout.new_data_file_name(prefix)
    path = layout.data_file_path(partition_path, bucket, name)
    rows = deletes = 0
    first: pa.Table | None = None
    last: pa.Table | None = None
    stats: list[tuple[SimpleStats, int]] = []
    seq: list[tuple[int, int]] = []
    writer: pq.ParquetWriter | None = None
    with io.open_output(path) as f:
        for part in parts:
            if writer is None:
                dictionary = dictionary_columns(part)
                writer = pq.ParquetWriter(
                    f, part.schema, compression=compression, write_statistics=False,
                    use_dictionary=dictionary, column_encoding=delta_columns(part, dictionary),
                    write_page_checksum=True)  # CRC32 per page: a flipped bit fails the read
            writer.write_table(part)
            if part.num_rows:
                first = first if first is not None else part.slice(0, 1)
                last = part.slice(part.num_rows - 1, 1)
            rows += part.num_rows
            stats.append((table_stats(part, list(stats_columns)), part.num_rows))
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
    min_key: tuple[Any, ...] = ()
    max_key: tuple[Any, ...] = ()
    if key_columns and first is not None and last is not None:
        min_key = tuple(to_stat(first.column(k)[0], first.schema.field(k).type) for k in key_columns)
        max_key = tuple(to_stat(last.column(k)[0], last.schema.field(k).type) for k in key_columns)
    return DataFileMeta(
        fileName=name,
        fileSize=io.file_size(path),
        rowCount=rows,
        minKey=min_key,
        maxKey=max_key,
        valueStats=merge_stats(stats),
        minSequenceNumber=min((lo for lo, _ in seq), default=0),
        maxSequenceNumber=max((hi for _, hi in seq), default=0),
        schemaId=schema_id,
        level=level,
        creationTime=int(time.time() * 1000),
        deleteRowCount=deletes,
        fileSource=file_source,
    )


def dictionary_columns(table: pa.Table, sample: int = 2048) -> list[str]:
    """Columns worth Parquet dictionary encoding: those whose first ``sample`` values
    repeat (fewer than half distinct). Dictionary encoding of unique values costs half the
    write time for nothing."""
    head = table.slice(0, sample)
    out = []
    for name in table.column_names:
        col = head.column(name)
        if pa.types.is_nested(col.type) or len(col) == 0:
            continue
        if pc.count_distinct(col, mode="all").as_py() * 2 < len(col):
            out.append(name)
    return out


def delta_columns(table: pa.Table, dictionary: list[str]) -> dict[str, str]:
    """DELTA_BINARY_PACKED for 64-bit integer columns without a dictionary: ~20 % less
    encode time and smaller files than plain encoding for keys, sequences and timestamps."""
    return {f.name: "DELTA_BINARY_PACKED" for f in table.schema
            if f.name not in dictionary and pa.types.is_int64(f.type)}


def read_data_file(
    io: FileIO, layout: TableLayout, partition_path: str, bucket: int, file: DataFileMeta,
    columns: Sequence[str] | None = None,
) -> pa.Table:
    """Read the named ``columns`` (all if None) of one data file.

    Raises:
        SnapshotExpiredError: the file is gone (its snapshot was expired meanwhile).
        CorruptDataFileError: the file is not the one its metadata describes (size), is not
            readable Parquet, fails a page checksum or lacks a column or rows it should hold.
    """
    path = layout.data_file_path(partition_path, bucket, file.fileName)
    try:
        with io.open_input(path) as f:
            size = f.seek(0, 2)
            if size != file.fileSize:
                raise CorruptDataFileError(
                    f"data file {path} has {size} bytes, its manifest says {file.fileSize}: the file "
                    "was truncated or replaced; restore it or roll the table back to a snapshot without it")
            f.seek(0)
            t = pq.read_table(f, columns=list(columns) if columns is not None else None,
                              page_checksum_verification=True)
    except FileNotFoundError:
        raise SnapshotExpiredError(
            f"data file {path} no longer exists: the snapshot being read was expired (or rolled "
            "back) meanwhile; re-plan the read, or keep snapshots longer with "
            "'snapshot.num-retained.min' / 'snapshot.time-retained', a tag or a consumer-id"
        ) from None
    except (pa.ArrowException, OSError, ValueError, KeyError, IndexError, EOFError) as e:
        raise CorruptDataFileError(
            f"data file {path} is damaged ({type(e).__name__}: {e}); restore it or roll the "
            "table back to a snapshot without it") from e
    if t.num_rows != file.rowCount:
        raise CorruptDataFileError(
            f"data file {path} holds {t.num_rows} rows, its manifest says {file.rowCount}: the file "
            "was replaced; restore it or roll the table back to a snapshot without it")
    return t


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
