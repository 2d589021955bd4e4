"""Parquet data files (zstd by default), as Paimon's Java writer makes them.

Columns carry Paimon's field ids (``PARQUET:field_id``); decimals of up to 18 digits are
stored as INT32/INT64 (Java 0.9 reads only those); plain or dictionary encodings only
(Java's reader refuses DELTA_BINARY_PACKED); page checksums (CRC32) written and verified;
the footer holds the file's own name (:data:`FILE_NAME_KEY`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import BinaryIO

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .base import FILE_NAME_KEY, FileFormat, FormatWriter


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
                    compression: str, file_name: str) -> FormatWriter:
        return _Writer(pq.ParquetWriter(
            sink, schema.with_metadata({FILE_NAME_KEY: file_name.encode()}),
            compression=compression, write_statistics=False,
            use_dictionary=dictionary_columns(first),
            store_decimal_as_integer=True,  # as Paimon's Java writer (which reads only that)
            write_page_checksum=True))  # CRC32 per page: a flipped bit fails the read

    def read(self, source: BinaryIO, columns: Sequence[str] | None,
             declared: pa.Schema | None) -> tuple[pa.Table, bytes | None]:
        t = pq.read_table(source, columns=list(columns) if columns is not None else None,
                          page_checksum_verification=True)
        named = (t.schema.metadata or {}).get(FILE_NAME_KEY)
        return (t.replace_schema_metadata(None) if named is not None else t), named


__all__ = ["ParquetFormat", "dictionary_columns"]
