"""Bringing user data to the table schema, or rejecting it with a clear error.

One conversion of values into a column, shared by ``write()`` and the row-level changes
(update values, merge values and inserted rows): :func:`column` takes a column of values
(a batch's column, a merge source's column, an expression's result) if its type is the
column's or a widening whose values all convert exactly, and refuses a null in a NOT NULL
column; :func:`literal` types a Python literal by the column it is stored in, as SQL types
``SET d = 1``: a number is taken if it is exactly a value of the column (``1`` into a
DECIMAL(10, 2) is 1.00; 0.1 into a FLOAT, 1.5 into an INT, 300 into a TINYINT are
refused), any other literal as a one-value column of its own type (a ``datetime`` with a
time into a DATE is refused, as write() refuses a timestamp column there).
"""

from __future__ import annotations

import decimal
import numbers
import sys
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, TypeAlias

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import InvalidArgumentError, SchemaMismatchError, UnsupportedFeatureError
from ..expressions.literals import Literal, to_scalar
from ..format import data_types
from ..schema.schema import ROW_KIND_COLUMN


def to_batches(data: Any) -> Iterator[pa.RecordBatch]:
    """Iterate the record batches of ``data``, dispatched on its real type: a pyarrow
    Table / RecordBatch / RecordBatchReader / list of batches, a pandas DataFrame (only if
    pandas is imported, checked with isinstance), or any object exporting the Arrow C stream
    interface (``__arrow_c_stream__``: Polars, DuckDB, nanoarrow, ...) or the C array
    interface (``__arrow_c_array__``: one record batch), or an iterable (a generator) of any
    of these, consumed lazily: a stream is never materialised whole.

    Raises:
        InvalidArgumentError: anything else (names the type and what is accepted).
    """
    if isinstance(data, pa.Table):
        yield from data.to_batches()
    elif isinstance(data, pa.RecordBatch):
        yield data
    elif isinstance(data, pa.RecordBatchReader):
        yield from data
    elif _is_pandas(data):
        yield from pa.Table.from_pandas(data, preserve_index=False).to_batches()
    elif hasattr(data, "__arrow_c_stream__"):
        yield from pa.RecordBatchReader.from_stream(data)
    elif hasattr(data, "__arrow_c_array__"):
        yield pa.record_batch(data)
    elif isinstance(data, Iterable) and not isinstance(data, (str, bytes, Mapping)):
        for item in data:  # a generator of batches or frames: consumed one at a time
            yield from to_batches(item)
    else:
        raise InvalidArgumentError(
            f"cannot write {type(data).__module__}.{type(data).__name__}: pass a pyarrow "
            "Table, RecordBatch or RecordBatchReader, a pandas DataFrame, an object with "
            "__arrow_c_stream__ / __arrow_c_array__ (e.g. a Polars DataFrame, a DuckDB "
            "relation), or an iterable of these"
        )


def _is_pandas(data: Any) -> bool:
    pandas = sys.modules.get("pandas")  # never imported here: a pandas frame implies pandas
    return pandas is not None and isinstance(data, pandas.DataFrame)


def _widens(src: pa.DataType, dst: pa.DataType) -> bool:
    if pa.types.is_null(src):
        return True
    if pa.types.is_integer(src) and pa.types.is_integer(dst):
        return src.bit_width <= dst.bit_width and (pa.types.is_signed_integer(src) or src.bit_width < dst.bit_width)
    if pa.types.is_integer(src) and pa.types.is_floating(dst):
        return src.bit_width <= 32
    if pa.types.is_floating(src) and pa.types.is_floating(dst):
        return src.bit_width <= dst.bit_width
    if pa.types.is_decimal(src) and pa.types.is_decimal(dst):
        # exact for every value: no fewer fraction digits, no fewer integer digits
        return dst.scale >= src.scale and dst.precision - dst.scale >= src.precision - src.scale
    return pa.types.is_timestamp(src) and pa.types.is_timestamp(dst)


def conform(
    batch: pa.RecordBatch | pa.Table,
    schema: pa.Schema,
    primary_keys: list[str],
    allow_row_kind: bool,
) -> pa.Table:
    """Return ``batch`` as a Table with exactly ``schema`` (plus ``_row_kind`` if allowed).

    Primary-key values are made canonical (:func:`canonical_key`).

    Raises:
        SchemaMismatchError: missing, extra or duplicate columns, a type that is not the
            column's type or a safe widening of it, values that do not convert exactly, a
            ``_row_kind`` that is not a string column.
        InvalidArgumentError: nulls in a primary-key or NOT NULL column, NaN in a key.
    """
    names = batch.schema.names
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise SchemaMismatchError(f"data has duplicate columns {dup}; table columns are {schema.names}")
    extra = [n for n in names if n not in schema.names and not (allow_row_kind and n == ROW_KIND_COLUMN)]
    missing = [n for n in schema.names if n not in names]
    if extra or missing:
        raise SchemaMismatchError(
            f"data does not match the table schema: missing columns {missing}, unknown columns "
            f"{extra}; table columns are {schema.names}"
        )
    arrays = [column(field, batch.column(field.name), field.name in primary_keys) for field in schema]
    out_schema = schema
    if allow_row_kind and ROW_KIND_COLUMN in names:
        kinds = batch.column(ROW_KIND_COLUMN)
        if not (_supported(kinds.type) and data_types.normalize(kinds.type).equals(pa.string())):
            raise SchemaMismatchError(
                f"column {ROW_KIND_COLUMN!r} has type {kinds.type}; it must be a string column "
                "of +I, -U, +U, -D")
        kinds = pc.cast(kinds, pa.string())
        arrays.append(kinds)
        out_schema = schema.append(pa.field(ROW_KIND_COLUMN, pa.string()))
    if isinstance(batch, pa.RecordBatch):
        return pa.Table.from_batches([pa.RecordBatch.from_arrays(arrays, schema=out_schema)])
    return pa.Table.from_arrays(arrays, schema=out_schema)


Values: TypeAlias = "pa.Array | pa.ChunkedArray"


def column(field: pa.Field, col: Values, key: bool = False, what: str | None = None) -> Values:
    """``col`` stored as column ``field`` (a primary-key column if ``key``): converted
    (:func:`convert`), a null refused in a NOT NULL column, a key made canonical.
    ``what`` (e.g. ``"update"``) starts the error messages of a row-level change.

    Raises:
        SchemaMismatchError: a type that is not the column's or a widening, a lossy value.
        InvalidArgumentError: a null in a NOT NULL or key column, a NaN key.
    """
    col = convert(field, col, what)
    if not field.nullable and col.null_count:
        kind = "primary-key" if key else "NOT NULL"
        raise InvalidArgumentError(f"{what + ': ' if what else ''}{kind} column {field.name!r} "
                                   f"has {col.null_count} null values")
    return canonical_key(field.name, col) if key else col


def convert(field: pa.Field, col: Values, what: str | None = None) -> Values:
    """``col`` as ``field``'s type: equal, the same stored type, or a safe widening whose
    values all convert exactly (else SchemaMismatchError naming the column)."""
    if col.type.equals(field.type):
        return col
    same = data_types.normalize(col.type).equals(field.type) if _supported(col.type) else False
    if not same and not _widens(col.type, field.type):
        if what:
            raise SchemaMismatchError(f"{what}: values of type {col.type} do not fit column {field.name!r} "
                                      f"of type {field.type}; cast them to it explicitly")
        raise SchemaMismatchError(f"column {field.name!r} has type {col.type}, the table has {field.type}")
    try:
        return pc.cast(col, field.type)
    except pa.ArrowInvalid as e:  # e.g. timestamp[us] -> [ms] with sub-ms values, 2**24+1 -> float32
        raise SchemaMismatchError(
            f"{what + ': ' if what else ''}column {field.name!r}: the values of type {col.type} do not "
            f"convert to the table's {field.type} without loss ({e}); convert them explicitly first") from None


def literal(field: pa.Field, value: Any, what: str) -> pa.Scalar:
    """Python literal ``value`` (or a ``pyarrow.Scalar``) as a scalar of column ``field``'s
    type, typed by the column (see the module docs); None is a null of the type.

    Raises SchemaMismatchError (``what`` first) for a value that is not exactly one of the
    column's.
    """
    t = field.type
    if value is None:
        return pa.scalar(None, t)
    if _is_number(value) and (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)):
        try:
            exact = Literal(field.name, t, value).exact()
        except InvalidArgumentError as e:  # e.g. Decimal("NaN")
            raise SchemaMismatchError(f"{what}: {e}") from None
        if exact is None:
            hint = "; give it as a decimal.Decimal" if pa.types.is_decimal(t) and isinstance(value, float) else ""
            raise SchemaMismatchError(f"{what}: {value!r} is not a value of column {field.name!r} of type "
                                      f"{t} (it would be rounded or is out of range){hint}")
        return to_scalar(exact, t)
    try:
        one = pa.array([value], t) if pa.types.is_nested(t) else \
            pa.array([value.as_py() if isinstance(value, pa.Scalar) else value],
                     value.type if isinstance(value, pa.Scalar) else None)
    except (pa.ArrowException, TypeError, ValueError, OverflowError) as e:
        raise SchemaMismatchError(f"{what}: {value!r} is not a value of column {field.name!r} of type {t}: "
                                  f"{e}") from None
    out: pa.Scalar = convert(field, one, what)[0]
    return out


def _is_number(value: Any) -> bool:
    return isinstance(value, (numbers.Real, decimal.Decimal)) and not isinstance(value, bool)


def canonical_key(name: str, col: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """A primary-key column with one representation per key: a float -0.0 becomes 0.0 (they
    are equal, so one key for bucketing, merging and reading alike); NaN, which equals
    nothing, is refused (InvalidArgumentError) as a null key is."""
    if not pa.types.is_floating(col.type):
        return col
    nans = pc.sum(pc.is_nan(col)).as_py() or 0
    if nans:
        raise InvalidArgumentError(
            f"primary-key column {name!r} has {nans} NaN values; NaN cannot be a key value")
    return pc.if_else(pc.equal(col, pa.scalar(0, col.type)), pa.scalar(0.0, col.type), col)


def _supported(t: pa.DataType) -> bool:
    try:
        data_types.normalize(t)
        return True
    except (SchemaMismatchError, UnsupportedFeatureError):
        return False
