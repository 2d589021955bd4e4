"""Bringing user data to the table schema, or rejecting it with a clear error."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from . import datatypes
from .errors import InvalidArgumentError, SchemaMismatchError
from .schema import ROW_KIND_COLUMN


def to_batches(data: Any) -> Iterator[pa.RecordBatch]:
    """Iterate the record batches of a Table / RecordBatch / RecordBatchReader / pandas
    DataFrame / list of batches. Raises InvalidArgumentError for anything else."""
    if isinstance(data, pa.Table):
        yield from data.to_batches()
    elif isinstance(data, pa.RecordBatch):
        yield data
    elif isinstance(data, pa.RecordBatchReader) or isinstance(data, (list, tuple)) and all(isinstance(b, pa.RecordBatch) for b in data):
        yield from data
    elif type(data).__name__ == "DataFrame" and hasattr(data, "to_numpy"):
        yield from pa.Table.from_pandas(data, preserve_index=False).to_batches()
    else:
        raise InvalidArgumentError(
            f"cannot write {type(data).__name__}: pass a pyarrow Table, RecordBatch, "
            "RecordBatchReader or a pandas DataFrame"
        )


def _widens(src: pa.DataType, dst: pa.DataType) -> bool:
    if pa.types.is_null(src):
        return True
    if pa.types.is_integer(src) and pa.types.is_integer(dst):
        return src.bit_width <= dst.bit_width and (pa.types.is_signed_integer(src) or src.bit_width < dst.bit_width)
    if pa.types.is_integer(src) and pa.types.is_floating(dst):
        return src.bit_width <= 32
    if pa.types.is_floating(src) and pa.types.is_floating(dst):
        return src.bit_width <= dst.bit_width
    return pa.types.is_timestamp(src) and pa.types.is_timestamp(dst)


def conform(
    batch: pa.RecordBatch | pa.Table,
    schema: pa.Schema,
    primary_keys: list[str],
    allow_row_kind: bool,
) -> pa.Table:
    """Return ``batch`` as a Table with exactly ``schema`` (plus ``_row_kind`` if allowed).

    Raises:
        SchemaMismatchError: missing or extra columns, or a type that is not the column's
            type or a safe widening of it.
        InvalidArgumentError: nulls in a primary-key or NOT NULL column, bad ``_row_kind``.
    """
    names = batch.schema.names
    extra = [n for n in names if n not in schema.names and not (allow_row_kind and n == ROW_KIND_COLUMN)]
    missing = [n for n in schema.names if n not in names]
    if extra or missing:
        raise SchemaMismatchError(
            f"data does not match the table schema: missing columns {missing}, unknown columns "
            f"{extra}; table columns are {schema.names}"
        )
    arrays = []
    for field in schema:
        col = batch.column(field.name)
        if not col.type.equals(field.type):
            same = datatypes.normalize(col.type).equals(field.type) if _supported(col.type) else False
            if not same and not _widens(col.type, field.type):
                raise SchemaMismatchError(
                    f"column {field.name!r} has type {col.type}, the table has {field.type}"
                )
            col = pc.cast(col, field.type)
        if not field.nullable and col.null_count:
            what = "primary-key" if field.name in primary_keys else "NOT NULL"
            raise InvalidArgumentError(f"{what} column {field.name!r} has {col.null_count} null values")
        arrays.append(col)
    out_schema = schema
    if allow_row_kind and ROW_KIND_COLUMN in names:
        kinds = batch.column(ROW_KIND_COLUMN)
        arrays.append(kinds)
        out_schema = schema.append(pa.field(ROW_KIND_COLUMN, kinds.type))
    if isinstance(batch, pa.RecordBatch):
        return pa.Table.from_batches([pa.RecordBatch.from_arrays(arrays, schema=out_schema)])
    return pa.Table.from_arrays(arrays, schema=out_schema)


def _supported(t: pa.DataType) -> bool:
    try:
        datatypes.from_arrow(t)
        return True
    except SchemaMismatchError:
        return False
