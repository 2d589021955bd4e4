"""Parquet data files (zstd by default), as Paimon's Java writer makes them.

Columns carry Paimon's field ids (``PARQUET:field_id``); decimals of up to 18 digits are
stored as INT32/INT64 (Java 0.9 reads only those); plain or dictionary encodings only
(Java's reader refuses DELTA_BINARY_PACKED); page checksums (CRC32) written and verified;
the footer holds the file's own name (:data:`FILE_NAME_KEY`).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import BinaryIO

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .base import FILE_NAME_KEY, Batches, FileFormat, FormatWriter, copy_bytes


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


def dictionary_encoded(meta: pq.FileMetaData, names: Collection[str]) -> list[str]:
    """Those of the top-level columns ``names`` that ``meta``'s file stores dictionary-encoded
    in every row group: read as Arrow dictionaries they cost the decode of the indices and
    of the distinct values only (a 64-value string column of 1M rows: 4 ms, against 16 ms
    for decoding every value).

    A chunk whose writer fell back to plain pages (its dictionary grew past the page limit)
    lists the same encodings; it is told by its size: beyond its dictionary page, more than
    3 bytes a value (dictionary indices take at most ~2.5; a plain string at least 4).
    Misjudged either way, the rows are the same: a plain page read as dictionary is hashed
    into one."""
    wanted = set(names)
    out = []
    for i in range(meta.num_columns):
        name = meta.schema.column(i).path
        if name not in wanted:
            continue
        chunks = [meta.row_group(g).column(i) for g in range(meta.num_row_groups)]
        if chunks and all(c.has_dictionary_page and c.total_uncompressed_size - (
                c.data_page_offset - c.dictionary_page_offset) <= 3 * c.num_values for c in chunks):
            out.append(name)
    return out


#: bytes a streamed read of a local file buffers of each column chunk (without a buffer,
#: pyarrow holds a row group's column chunks whole)
_LOCAL_BUFFER = 1 << 16


#: a file of fewer rows is decoded in the calling thread (column threads cost more than they save)
_THREADS_FROM_ROWS = 65_536


def _is_local(source: BinaryIO) -> bool:
    """Whether ``source`` reads local memory or a local file (not an object store, where
    every read is a request)."""
    return isinstance(source, (pa.OSFile, pa.MemoryMappedFile, pa.BufferReader))


class _Writer(FormatWriter):
    def __init__(self, writer: pq.ParquetWriter) -> None:
        self._writer = writer

    def write(self, table: pa.Table) -> None:
        self._writer.write_table(table.replace_schema_metadata(self._writer.schema.metadata))

    def close(self) -> None:
        self._writer.close()


class ParquetFormat(FileFormat):
    name = "parquet"

    def open_writer(self, sink: BinaryIO, schema: pa.Schema, first: pa.Table, *,
                    compression: str, file_name: str,
                    dictionary: Collection[str] | None = None, zstd_level: int = 1) -> FormatWriter:
        return _Writer(pq.ParquetWriter(
            sink, schema.with_metadata({FILE_NAME_KEY: file_name.encode()}),
            compression=compression, write_statistics=False,
            compression_level=zstd_level if compression.lower() == "zstd" else None,
            use_dictionary=list(dictionary) if dictionary is not None else dictionary_columns(first),
            store_decimal_as_integer=True,  # as Paimon's Java writer (which reads only that)
            write_page_checksum=True))  # CRC32 per page: a flipped bit fails the read

    def copy(self, source: BinaryIO, sink: BinaryIO, file_name: str) -> None:
        """A file of another writer byte for byte; one of minipaimon's (its footer names
        it) row group by row group under the new name, with the source's compression."""
        parquet = pq.ParquetFile(source)
        schema = parquet.schema_arrow
        if FILE_NAME_KEY not in (schema.metadata or {}):
            source.seek(0)
            copy_bytes(source, sink)
            return
        meta = parquet.metadata
        column = meta.row_group(0).column(0) if meta.num_row_groups and meta.num_columns else None
        writer = pq.ParquetWriter(
            sink, schema.with_metadata({**(schema.metadata or {}), FILE_NAME_KEY: file_name.encode()}),
            compression=column.compression.lower() if column is not None else "zstd",
            write_statistics=False, store_decimal_as_integer=True, write_page_checksum=True)
        for i in range(meta.num_row_groups):
            writer.write_table(parquet.read_row_group(i).replace_schema_metadata(writer.schema.metadata))
        writer.close()

    def read(self, source: BinaryIO, columns: Sequence[str] | None,
             declared: pa.Schema | None, dictionary: Collection[str] = ()) -> tuple[pa.Table, bytes | None]:
        names = list(columns) if columns is not None else None
        as_dictionary = []
        meta = None
        if dictionary:
            meta = pq.read_metadata(source)
            as_dictionary = dictionary_encoded(meta, dictionary)
        # ParquetFile, not read_table: read_table builds a dataset and a scanner for each
        # file (~1 ms; the whole read of a small file here is ~0.15 ms); threads (one per
        # column) and pre-buffering (one request for a row group's columns: object
        # stores) only where they pay
        local = _is_local(source)
        pf = pq.ParquetFile(source, metadata=meta, read_dictionary=as_dictionary or None,
                            page_checksum_verification=True, pre_buffer=not local)
        t = pf.read(columns=names, use_threads=pf.metadata.num_rows >= _THREADS_FROM_ROWS)
        named = (t.schema.metadata or {}).get(FILE_NAME_KEY)
        return (t.replace_schema_metadata(None) if named is not None else t), named

    def read_batches(self, source: BinaryIO, columns: Sequence[str] | None, declared: pa.Schema | None,
                     batch_rows: int) -> tuple[Batches, bytes | None, int]:
        """``batch_rows`` rows at a time: memory is one batch and, from a local file, a
        small read buffer per column; from an object store (where every read is a request)
        one row group's compressed column chunks, fetched together."""
        local = _is_local(source)
        pf = pq.ParquetFile(source, page_checksum_verification=True, pre_buffer=not local,
                            buffer_size=_LOCAL_BUFFER if local else 0)
        named = (pf.metadata.metadata or {}).get(FILE_NAME_KEY)
        names = list(columns) if columns is not None else None
        batches = pf.iter_batches(batch_size=batch_rows, columns=names)
        tables = (pa.Table.from_batches([b]).replace_schema_metadata(None) for b in batches)
        return tables, named, pf.metadata.num_rows


__all__ = ["ParquetFormat", "dictionary_columns", "dictionary_encoded"]
