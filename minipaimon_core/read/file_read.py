"""The one file reader of scans and compaction: a data or changelog file's columns in the
reader's schema, whole (:func:`read_file_as`) or table by table (:func:`iter_file_as`).

Every file is read with the schema it was written with and projected to the reader's
schema by field id (:func:`evolve`: renamed columns follow their id, added columns read as
null, widened types are cast); ``_SEQUENCE_NUMBER`` is the effective number.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import CorruptDataFileError
from ..file_format.data_file import BATCH_ROWS, iter_data_file, read_data_file
from ..file_format.data_file import file_schema as file_schema_of
from ..format.kinds import SEQUENCE, VALUE_KIND
from ..format.layout import TableLayout
from ..format.manifest_file import DataFileMeta
from ..io.fileio import FileIO
from ..metadata.deletion_vectors import live_mask
from ..schema.schema import SchemaCache, TableSchema
from .dict_columns import plain, same_values

__all__ = ["evolve", "iter_file_as", "read_file_as"]


def evolve(table: pa.Table, file_schema: TableSchema, read_schema: TableSchema, names: list[str]) -> pa.Table:
    """Project a file's ``table`` (file schema) to the reader's columns ``names``."""
    if file_schema.id == read_schema.id:
        return table.select(names)
    by_id = {f.id: f.name for f in file_schema.fields}
    target = read_schema.arrow_schema()
    arrays = []
    fields = []  # keep nullability as a same-schema read does, so results concatenate
    for name in names:
        if name in (SEQUENCE, VALUE_KIND):
            arrays.append(table.column(name))
            fields.append(table.schema.field(name))
            continue
        field = read_schema.field_by_name(name)
        old = by_id.get(field.id)
        t = target.field(name).type
        if old is None or old not in table.column_names:
            arrays.append(pa.nulls(table.num_rows, t))
            fields.append(target.field(name))
            continue
        col = table.column(old)
        if not same_values(col.type, t):  # a widening; an integer to a float rounds (Java's cast)
            col = pc.cast(plain(col), t, safe=not (pa.types.is_integer(col.type) and pa.types.is_floating(t)))
        arrays.append(col)
        fields.append(target.field(name).with_type(col.type))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


_SYSTEM_TYPES = {SEQUENCE: pa.int64(), VALUE_KIND: pa.int8()}

def _as_declared(t: pa.Table, file_schema: TableSchema, path: str) -> pa.Table:
    """``t`` (columns read from a file of ``file_schema``) with each column of the type its
    schema declares: another writer's Parquet may use another Arrow type of the same values
    (cast); a system column of another type, or a column that cannot be cast, means the file
    is damaged (its footer is not checksummed). Raises CorruptDataFileError."""
    declared = file_schema.arrow_schema()
    for i, field in enumerate(t.schema):
        want = _SYSTEM_TYPES.get(field.name)
        if want is None:
            if field.name not in declared.names:
                continue
            want = declared.field(field.name).type
        if same_values(field.type, want):
            continue
        if field.name in _SYSTEM_TYPES:
            raise CorruptDataFileError(f"data file {path}: column {field.name} is {field.type}, not {want}")
        try:
            t = t.set_column(i, field.with_type(want), plain(t.column(i)).cast(want))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
            raise CorruptDataFileError(
                f"data file {path}: column {field.name} is {field.type}, its schema says {want} ({e})") from e
    return t


def read_file_as(io: FileIO, layout: TableLayout, schemas: SchemaCache, schema: TableSchema,
                 partition_path: str, bucket: int, f: DataFileMeta, names: list[str],
                 dictionary: Collection[str] = ()) -> pa.Table:
    """Columns ``names`` of data or changelog file ``f`` in the reader's ``schema``: the one
    file reader of scans and compaction.

    Columns are found by field id in the schema ``f`` was written with (renamed columns
    follow their id, added ones read as null, widened types are cast); ``_SEQUENCE_NUMBER``
    (if asked for) is the effective number, the file's ``sequenceOffset`` added.
    ``dictionary``: string/binary columns (reader names) that may come back as Arrow
    dictionaries of their type, where the file stores them dictionary-encoded (see
    :func:`decoded`). Raises CorruptDataFileError for a damaged file.
    """
    plan = _FilePlan(schemas, schema, f, names, dictionary)
    t = read_data_file(io, layout, partition_path, bucket, f, plan.physical, plan.declared, plan.as_dictionary)
    return plan.as_read(t, layout.data_file_path(partition_path, bucket, f.fileName))


def iter_file_as(io: FileIO, layout: TableLayout, schemas: SchemaCache, schema: TableSchema,
                 partition_path: str, bucket: int, f: DataFileMeta, names: list[str], *,
                 deleted: np.ndarray | None = None, batch_rows: int = BATCH_ROWS,
                 positions: str | None = None) -> Iterator[pa.Table]:
    """:func:`read_file_as` table by table (at most ``batch_rows`` rows each before
    ``deleted`` is applied), each decoded when it is taken: a file's rows in bounded
    memory. ``deleted``: the sorted positions a deletion vector marks, left out.
    ``positions``: the name of a column to add holding each row's position in the file
    (int64). Raises what :func:`read_file_as` raises, and CorruptMetadataError for a
    position past the file's end."""
    plan = _FilePlan(schemas, schema, f, names, ())
    path = layout.data_file_path(partition_path, bucket, f.fileName)
    marked = deleted is not None and len(deleted) > 0
    if marked:
        assert deleted is not None
        live_mask(f.rowCount, deleted[-1:], path)  # raises past the end
    offset = 0
    for t in iter_data_file(io, layout, partition_path, bucket, f, plan.physical, plan.declared, batch_rows):
        n = t.num_rows
        t = plan.as_read(t, path)
        if positions is not None:
            t = t.append_column(positions, pa.array(np.arange(offset, offset + n, dtype=np.int64)))
        if marked:
            assert deleted is not None
            lo, hi = np.searchsorted(deleted, [offset, offset + n])
            if hi > lo:
                keep = np.ones(n, dtype=bool)
                keep[deleted[lo:hi] - offset] = False
                t = t.filter(pa.array(keep))
        offset += n
        yield t


class _FilePlan:
    """How the columns ``names`` of the reader's ``schema`` are read from file ``f``: the
    file's physical columns, and the conversion of what is read to the reader's columns."""

    def __init__(self, schemas: SchemaCache, schema: TableSchema, f: DataFileMeta, names: list[str],
                 dictionary: Collection[str]) -> None:
        self.file_schema = file_schema = schemas.get(f.schemaId)
        by_id = {fld.id: fld.name for fld in file_schema.fields}
        self.physical: list[str] = []
        self.as_dictionary: list[str] = []
        for n in names:
            if n in (SEQUENCE, VALUE_KIND):
                self.physical.append(n)
            else:
                old = by_id.get(schema.field_by_name(n).id)
                if old is not None:
                    self.physical.append(old)
                    if n in dictionary:
                        self.as_dictionary.append(old)
        self.declared = file_schema_of(file_schema, bool(file_schema.primaryKeys))
        self._schema = schema
        self._names = names
        self._offset = f.sequenceOffset if SEQUENCE in names else 0

    def as_read(self, t: pa.Table, path: str) -> pa.Table:
        """Rows read from the file (its physical columns) as the reader's columns. A system
        column, or in the reader's own schema any column, that the file lacks means its
        footer is damaged (Parquet readers leave out a column they cannot find): raises
        CorruptDataFileError."""
        same = self.file_schema.id == self._schema.id
        missing = [n for n in self.physical if n not in t.column_names and (same or n in _SYSTEM_TYPES)]
        if missing:
            raise CorruptDataFileError(f"data file {path} lacks the column(s) {missing} its schema "
                                       "declares: restore it or roll the table back to a snapshot without it")
        t = _as_declared(t, self.file_schema, path)
        t = evolve(t, self.file_schema, self._schema, self._names)
        if self._offset:
            i = t.column_names.index(SEQUENCE)
            t = t.set_column(i, SEQUENCE, pc.add(t.column(SEQUENCE), pa.scalar(self._offset, pa.int64())))
        return t
