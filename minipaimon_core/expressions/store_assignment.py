"""Spark's store assignment (``spark.sql.storeAssignmentPolicy`` = ANSI, Spark's default):
how Spark SQL's ``INSERT`` stores a value of one type into a column of another, over Arrow
types and values. The one owner of that rule, for every change whose values a Spark user
writes (``b * 1.1`` into an INT column stores ``CAST(b * 1.1 AS INT)``):

* :class:`minipaimon_spark.MiniPaimonTable`: Spark computes the values and its own ANSI cast
  converts them; which types it stores (:func:`assignable`) and that a NaN or infinity into
  a DECIMAL is null (:func:`nulls_non_finite`) come from here, Spark types mapped to Arrow
  (``minipaimon_spark.dml.store_assignment``);
* ``minipaimon_spark.merge`` (the core's merge under :data:`~minipaimon_core.dml.assignment.SPARK`):
  Arrow values, :func:`store_values`;
* the SQL procedures' SET values (:mod:`.sql_compiler`): Arrow expressions, :func:`store`.

**Types** (:func:`assignable`, measured against Spark 4's INSERT): a number into any number
column, any atomic value into a STRING column, dates and timestamps into each other, an
interval into an interval of its kind, NULL into anything; arrays, maps and structs element
by element (a nullable element never into a NOT NULL one). Anything else (a string into an
INT, a boolean into a number, a number into a DATE) is refused: SchemaMismatchError.

**Values** (:func:`store`), as Spark's INSERT converts them (measured, tests/spark):

=====================  ===============================================================================
into                   a value of another type
=====================  ===============================================================================
TINYINT .. BIGINT      a number cut toward zero (990.99 is 990); out of the type's range, NaN or an
                       infinity fails (ANSI's overflow error)
FLOAT, DOUBLE          a number: the nearest value (2**53 + 1 into DOUBLE is 2**53, 1e300 into FLOAT
                       is infinity)
DECIMAL(p, s)          an integer or decimal rounded half away from zero (Java's HALF_UP) to ``s``
                       digits; a FLOAT or DOUBLE as its shortest decimal text (Java's
                       ``Double.toString``: 1.005 stores 1.01; a FLOAT widened to DOUBLE first),
                       rounded the same; NaN and infinities are null; more than ``p`` digits fails
STRING                 an integer, boolean, date or decimal as Spark prints it (a decimal plainly,
                       with its scale: ``0.00000010``)
DATE, TIMESTAMP_NTZ    each other: a date's midnight, a time's day
=====================  ===============================================================================

Refused where Spark stores a value this conversion does not reproduce (SchemaMismatchError,
naming the way out): a FLOAT or DOUBLE into STRING (Java prints other digits), a binary
or timestamp into STRING, an instant (TIMESTAMP) into or from a DATE or TIMESTAMP_NTZ
(Spark converts in the session time zone). Values of the column's own kind in another Arrow
layout (a timestamp in other units, arrays, maps, structs) are returned as they are: the
caller's exact conversion (``write.conform``, as ``write()`` stores a column) takes or refuses
them.
"""

from __future__ import annotations

from typing import TypeAlias

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from ..errors import InvalidArgumentError, SchemaMismatchError
from .sql_types import is_numeric, spark_type, text_refusal, to_text, type_name

Values: TypeAlias = "pa.Array | pa.ChunkedArray"
E = pc.Expression._call
HALF_UP = "half_towards_infinity"  # Java's RoundingMode.HALF_UP: a tie away from zero


def assignable(source: pa.DataType, target: pa.DataType) -> bool:
    """Whether Spark's ANSI store assignment stores a ``source`` value into a ``target``
    column (the module's type rule; Arrow layouts of one Spark type are one type)."""
    source, target = spark_type(source), spark_type(target)
    if source.equals(target) or pa.types.is_null(source):
        return True
    if is_numeric(source) and is_numeric(target):
        return True
    if pa.types.is_string(target) and not pa.types.is_nested(source):
        return True
    if _datetime(source) and _datetime(target):
        return True
    if (pa.types.is_duration(source) and pa.types.is_duration(target)) or (
            pa.types.is_interval(source) and pa.types.is_interval(target)):
        return True
    if _is_list(source) and _is_list(target):
        return _fields_assignable(source.value_field, target.value_field)
    if pa.types.is_map(source) and pa.types.is_map(target):
        return assignable(source.key_type, target.key_type) and _fields_assignable(source.item_field, target.item_field)
    if pa.types.is_struct(source) and pa.types.is_struct(target):
        return source.num_fields == target.num_fields and all(
            _fields_assignable(source.field(i), target.field(i)) for i in range(source.num_fields))
    return False


def nulls_non_finite(source: pa.DataType, target: pa.DataType) -> bool:
    """Whether Spark stores a NaN or infinite ``source`` value as null in a ``target`` column
    (a FLOAT or DOUBLE into a DECIMAL: no decimal holds them) rather than failing."""
    return pa.types.is_floating(spark_type(source)) and pa.types.is_decimal(spark_type(target))


def store(value: pc.Expression, source: pa.DataType, target: pa.DataType, what: str) -> pc.Expression:
    """The Arrow expression of ``value`` (of type ``source``) stored into a ``target``
    column (the module's tables). Evaluating it raises ``pa.ArrowInvalid`` for a value the
    column cannot hold (ANSI's overflow error).

    Raises SchemaMismatchError (``what`` first) for a type Spark does not store there, or
    one whose conversion the module does not reproduce.
    """
    if source.equals(target):
        return value
    if pa.types.is_null(source):
        return pc.scalar(pa.scalar(None, target))
    if not assignable(source, target):
        raise SchemaMismatchError(f"{what}: a {type_name(source)} value is not stored into a {type_name(target)} "
                                  "column (Spark's store assignment); cast it explicitly")
    have, want = spark_type(source), spark_type(target)
    if is_numeric(have) and is_numeric(want):
        return _number(value if have.equals(source) else value.cast(have), have, target)
    if pa.types.is_string(want):
        why = text_refusal(have)
        if why is not None:
            raise SchemaMismatchError(f"{what}: {why} (Spark's store assignment into a {type_name(target)} "
                                      "column)")
        return to_text(value if have.equals(source) else value.cast(have), have)
    if _datetime(have) and _datetime(want):
        return _datetime_value(value, have, target, what)
    return value  # the column's own kind in another layout: the caller's exact conversion


def store_values(values: Values, target: pa.DataType, what: str) -> Values:
    """``values`` stored into a ``target`` column as :func:`store` converts them.

    Raises SchemaMismatchError (as :func:`store`), InvalidArgumentError for a value the column
    cannot hold (ANSI's overflow error).
    """
    if values.type.equals(target):
        return values
    column = pc.field("v")
    expression = store(column, values.type, target, what)
    if expression.equals(column):
        return values
    try:
        out: Values = ds.dataset(pa.table({"v": values})).to_table(columns={"v": expression}).column("v")
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise InvalidArgumentError(
            f"{what}: a value of type {type_name(values.type)} does not fit {type_name(target)} (Spark's store "
            f"assignment fails there, as ANSI SQL does): {e}") from None
    return out


# -- conversions -------------------------------------------------------------------------------

def _number(value: pc.Expression, have: pa.DataType, target: pa.DataType) -> pc.Expression:
    if pa.types.is_floating(target):
        return value.cast(target, safe=False)  # the nearest value, as Java's conversions
    if pa.types.is_integer(target):
        if not pa.types.is_integer(have):
            value = E("trunc", [value])
        return value.cast(target)  # safe: out of range, NaN and infinities fail
    if pa.types.is_integer(have):
        return value.cast(pa.decimal128(38, 0)).cast(target)
    if pa.types.is_decimal(have):
        if have.scale <= target.scale:
            return value.cast(target)
        # one more digit first, so that 99.995 rounds to 100.00 before the column's precision is checked
        wider = pa.decimal256(min(76, have.precision + 1), have.scale)
        return E("round", [value.cast(wider)], pc.RoundOptions(target.scale, HALF_UP)).cast(target)
    return _float_to_decimal(value, have, target)


def _float_to_decimal(value: pc.Expression, have: pa.DataType, target: pa.DataType) -> pc.Expression:
    """Spark's ``Decimal(double)``: the double's shortest decimal text (Arrow prints the
    shortest, as Java 19+ does), cut after ``scale + 1`` digits (which decides HALF_UP),
    rounded HALF_UP; NaN and infinities null."""
    double = value if have.equals(pa.float64()) else value.cast(pa.float64())
    finite = E("is_finite", [double])
    text = E("if_else", [finite, double, pc.scalar(0.0)]).cast(pa.string())  # no text of NaN reaches the parse
    digits = pa.decimal256(76, target.scale + 1)
    cut = E("cast", [text], pc.CastOptions(digits, allow_decimal_truncate=True))
    rounded = E("round", [cut], pc.RoundOptions(target.scale, HALF_UP)).cast(target)
    return E("if_else", [finite, rounded, pc.scalar(pa.scalar(None, target))])


def _datetime_value(value: pc.Expression, have: pa.DataType, target: pa.DataType, what: str) -> pc.Expression:
    """Dates and wall-clock times into each other; an instant needs the session zone."""
    want = spark_type(target)
    instant = [t for t in (have, want) if pa.types.is_timestamp(t) and t.tz is not None]
    if len(instant) == 1:
        raise SchemaMismatchError(
            f"{what}: a {type_name(have)} value into a {type_name(target)} column is converted in Spark's session "
            "time zone, which is not known here; cast it explicitly in Spark")
    if pa.types.is_date(have) != pa.types.is_date(want):
        return value.cast(target)  # a date's midnight; a time's day (Arrow floors before 1970 too)
    return value  # the same kind in another unit: the caller's exact conversion


def _datetime(t: pa.DataType) -> bool:
    return pa.types.is_date(t) or pa.types.is_timestamp(t)


def _is_list(t: pa.DataType) -> bool:
    return pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)


def _fields_assignable(source: pa.Field, target: pa.Field) -> bool:
    return (not source.nullable or target.nullable) and assignable(source.type, target.type)


__all__ = ["assignable", "nulls_non_finite", "store", "store_values"]
