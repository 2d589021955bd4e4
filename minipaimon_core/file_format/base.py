"""The interface of a data-file format (one module per format implements it)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Collection, Iterator, Sequence
from typing import Any, BinaryIO

import pyarrow as pa

#: the file name a minipaimon writer embeds in a data file (Parquet footer, Avro header),
#: so a valid file of the table copied or swapped over another is refused
FILE_NAME_KEY = b"minipaimon.file"
_CHUNK = 8 << 20


def copy_bytes(source: BinaryIO, sink: BinaryIO) -> None:
    """The rest of ``source`` (from its position) into ``sink``, in chunks."""
    while chunk := source.read(_CHUNK):
        sink.write(chunk)


class FormatWriter(ABC):
    """Writes consecutive Arrow tables of one schema into one file."""

    @abstractmethod
    def write(self, table: pa.Table) -> None: ...

    @abstractmethod
    def close(self) -> None: ...


class FileFormat(ABC):
    """One data-file format: its Paimon name (``file.format``) and file extension."""

    name: str

    @property
    def extension(self) -> str:
        return self.name

    @abstractmethod
    def open_writer(self, sink: BinaryIO, schema: pa.Schema, first: pa.Table, *,
                    compression: str, file_name: str,
                    dictionary: Collection[str] | None = None, zstd_level: int = 1) -> FormatWriter:
        """A writer of tables of ``schema`` (``first``: the first table it will get, from
        which a format may choose encodings) into ``sink``. ``zstd_level``: the level of
        ``compression`` zstd (``file.compression.zstd-level``; a format whose writer takes
        no level ignores it). ``dictionary``: the columns to
        dictionary-encode, when the caller decided that once for many files of alike rows
        (:func:`.parquet.dictionary_columns` of their input); None: the format decides from
        ``first``. A format without that choice per column ignores it.

        Raises InvalidArgumentError / UnsupportedFeatureError (before writing anything) for
        a column or value the format cannot hold."""

    @abstractmethod
    def copy(self, source: BinaryIO, sink: BinaryIO, file_name: str) -> None:
        """Write the data file at ``source`` into ``sink`` as the file ``file_name``: its
        bytes as they are, except that a file naming itself (:data:`FILE_NAME_KEY`, written
        by minipaimon) names ``file_name``, re-encoded no more than that takes. Rows, their
        order and the values' encoding stay (a restore copies files so: the copy's
        statistics and deletion vectors are the original's). Raises what the decoder raises
        on a damaged file (the caller types it)."""

    @abstractmethod
    def read(self, source: BinaryIO, columns: Sequence[str] | None,
             declared: pa.Schema | None, dictionary: Collection[str] = ()) -> tuple[pa.Table, bytes | None]:
        """The ``columns`` (all if None) of the file at ``source``, in that order, typed as
        ``declared`` says (the file's Arrow schema; None: as stored), and the file name its
        writer embedded (None if none). Raises whatever the decoder raises on damage; the
        caller turns it into CorruptDataFileError.

        ``dictionary``: string/binary columns the caller accepts as Arrow dictionary arrays
        of the declared type; a format may return those it stores dictionary-encoded so
        (cheaper than decoding every value), the rest as declared."""

    def read_batches(self, source: BinaryIO, columns: Sequence[str] | None, declared: pa.Schema | None,
                     batch_rows: int) -> tuple[Batches, bytes | None, int]:
        """:meth:`read` as consecutive tables of at most ``batch_rows`` rows, with the
        embedded file name and the number of rows the file says it holds. The tables are
        decoded as they are taken (``source`` must stay open until then); damage may raise
        when the call is made or when a table is taken. This default decodes the whole file
        first; a format that can decode part of a file at a time overrides it."""
        t, named = self.read(source, columns, declared)
        return (t.slice(start, batch_rows) for start in range(0, t.num_rows, batch_rows)), named, t.num_rows


#: the tables of one file, decoded as they are taken (:meth:`FileFormat.read_batches`)
Batches = Iterator[pa.Table]


def conform(table: pa.Table, declared: pa.Schema | None, casts: Any = None) -> pa.Table:
    """``table`` with each column as ``declared`` has it (if it names it: type, nullability,
    field metadata); ``casts(field_type, declared_type, column)`` may convert a column first
    (None: a plain cast)."""
    if declared is None:
        return table
    for i, field in enumerate(table.schema):
        if field.name not in declared.names:
            continue
        want = declared.field(field.name)
        if field.equals(want, check_metadata=True):
            continue
        if field.type.equals(want.type):
            table = table.set_column(i, want, table.column(i))
            continue
        col = table.column(i)
        if casts is not None:
            col = casts(field.type, want.type, col)
        if not col.type.equals(want.type):
            col = col.cast(want.type, safe=False)
        table = table.set_column(i, want, col)
    return table


__all__ = ["FILE_NAME_KEY", "Batches", "FileFormat", "FormatWriter", "conform", "copy_bytes"]
