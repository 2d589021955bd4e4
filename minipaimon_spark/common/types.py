"""Spark types <-> Arrow types, and bringing batches to the exact schema Spark expects.

Two directions:

- Arrow -> Spark (:func:`to_spark_schema`): the table's Arrow schema as the data source's
  Spark schema. Nullability is carried over, so primary-key columns are NOT NULL.
- Spark -> Arrow (:func:`to_arrow_schema`): what Spark expects ``read()`` to yield, and
  what a written DataFrame is as a table schema. This is pyspark's own conversion, so the
  result equals Spark's expectation by construction (4.3 checks it with
  ``pa_schema.equals`` including nullability; 4.0 has no ``timezone`` argument).

:class:`BatchConformer` casts batches to a target schema built once; batches that already
match pass through untouched.
"""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_schema as _pyspark_to_arrow_schema
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DayTimeIntervalType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    NullType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from minipaimon_core.errors import SchemaMismatchError

_SIMPLE: list[tuple[pa.DataType, DataType]] = [
    (pa.bool_(), BooleanType()),
    (pa.int8(), ByteType()),
    (pa.int16(), ShortType()),
    (pa.int32(), IntegerType()),
    (pa.int64(), LongType()),
    (pa.uint8(), ShortType()),
    (pa.uint16(), IntegerType()),
    (pa.uint32(), LongType()),
    (pa.float16(), FloatType()),
    (pa.float32(), FloatType()),
    (pa.float64(), DoubleType()),
    (pa.date32(), DateType()),
    (pa.date64(), DateType()),
    (pa.null(), NullType()),
]


def to_spark_type(t: pa.DataType) -> DataType:
    """The Spark type of Arrow type ``t``. Raises SchemaMismatchError if Spark has none."""
    for arrow_type, spark_type in _SIMPLE:
        if t.equals(arrow_type):
            return spark_type
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return StringType()
    if (pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t)
            or pa.types.is_fixed_size_binary(t)):
        return BinaryType()
    if pa.types.is_decimal(t):
        if t.precision > 38:  # Spark's maximum decimal precision
            raise SchemaMismatchError(f"Spark has no decimal of precision {t.precision} ({t})")
        return DecimalType(t.precision, t.scale)
    if pa.types.is_timestamp(t):
        return TimestampType() if t.tz else TimestampNTZType()
    if pa.types.is_duration(t):
        return DayTimeIntervalType()
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return ArrayType(to_spark_type(t.value_type), t.value_field.nullable)
    if pa.types.is_map(t):
        return MapType(to_spark_type(t.key_type), to_spark_type(t.item_type),
                       t.item_field.nullable)
    if pa.types.is_struct(t):
        return StructType([_spark_field(t.field(i)) for i in range(t.num_fields)])
    if pa.types.is_dictionary(t):
        return to_spark_type(t.value_type)
    raise SchemaMismatchError(f"column type {t} has no Spark equivalent")


def _spark_field(field: pa.Field) -> StructField:
    try:
        return StructField(field.name, to_spark_type(field.type), field.nullable)
    except SchemaMismatchError as e:
        raise SchemaMismatchError(f"column {field.name!r}: {e}") from None


def to_spark_schema(schema: pa.Schema) -> StructType:
    """The Spark schema of Arrow ``schema`` (names, order and nullability kept)."""
    return StructType([_spark_field(f) for f in schema])


def refuse_variant(schema: StructType) -> None:
    """minipaimon has no VARIANT type: refuse it (at any depth) before anything is written,
    rather than storing Spark's ``struct<value, metadata>`` encoding as if it were data.

    Raises SchemaMismatchError naming the column.
    """
    for field in schema.fields:
        if _has_variant(field.dataType):
            raise SchemaMismatchError(
                f"column {field.name!r} is (or contains) VARIANT, which minipaimon tables do "
                "not support; convert it first, e.g. to_json(col) to a string column"
            )


def _has_variant(t: DataType) -> bool:
    if type(t).__name__ == "VariantType":  # pyspark 4.0+
        return True
    if isinstance(t, ArrayType):
        return _has_variant(t.elementType)
    if isinstance(t, MapType):
        return _has_variant(t.keyType) or _has_variant(t.valueType)
    if isinstance(t, StructType):
        return any(_has_variant(f.dataType) for f in t.fields)
    return False


def to_arrow_schema(schema: StructType) -> pa.Schema:
    """The Arrow schema Spark uses for ``schema``: what ``read()`` must yield exactly.

    Timestamps are ``timestamp[us, tz=UTC]`` (TIMESTAMP) or ``timestamp[us]``
    (TIMESTAMP_NTZ), strings ``pa.string()``.
    """
    try:
        return _pyspark_to_arrow_schema(schema, timezone="UTC")
    except TypeError:  # pyspark 4.0: no timezone argument, UTC is its default
        return _pyspark_to_arrow_schema(schema)


def _needs_unsafe_cast(source: pa.Schema, target: pa.Schema) -> bool:
    """Timestamps finer than Spark's microseconds can only be truncated."""
    for f in source:
        if pa.types.is_timestamp(f.type) and f.type.unit == "ns" and f.name in target.names:
            return True
    return False


class BatchConformer:
    """Casts record batches to one target schema (built once, reused for every batch).

    Columns are selected by name in the target's order; types, nullability and time
    zones are cast; a batch already equal to the target is returned as is.
    """

    def __init__(self, target: pa.Schema) -> None:
        self.target = target
        self._last_source: pa.Schema | None = None
        self._select = False
        self._safe = True

    def __call__(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        if batch.schema.equals(self.target):
            return batch
        if self._last_source is None or not batch.schema.equals(self._last_source):
            self._last_source = batch.schema
            self._select = batch.schema.names != self.target.names
            self._safe = not _needs_unsafe_cast(batch.schema, self.target)
        if self._select:
            batch = batch.select(self.target.names)
        return batch.cast(self.target, safe=self._safe)


def quoted(name: str) -> str:
    """Column ``name`` as one Spark SQL identifier (in backticks, a backtick doubled), for
    ``F.col`` and ``select``: a name may hold '.', ' ' or '`'."""
    return "`" + name.replace("`", "``") + "`"
