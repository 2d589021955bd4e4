"""Spark's store assignment (``spark.sql.storeAssignmentPolicy=ANSI``, Spark's default) for
the values Spark computes: how :class:`minipaimon_spark.MiniPaimonTable`'s update and merge
store a value into a table column of another type, as Spark SQL's ``INSERT`` stores it
(``b * 1.1`` into an INT column is ``CAST(b * 1.1 AS INT)``: 5.5 stores 5). The rule is the
core's (:mod:`minipaimon_core.expressions.store_assignment`); this module maps Spark's types
onto it (:func:`arrow_type`) and lets Spark's own ANSI cast convert the values.

Two steps, as in Spark's INSERT:

1. **At analysis, on the driver** (:func:`check`): the types the core's rule stores (a
   number into any number, an atomic value into a string, dates and timestamps into each
   other, arrays, maps and structs element by element; measured against Spark 4's INSERT).
   Anything else (a string into an INT, a boolean into a number) is a
   :class:`~minipaimon_core.errors.SchemaMismatchError` naming the column, before any task.
2. **Per row** (:func:`stored`): an ANSI cast, which fails where a value does not fit
   (overflow, NaN into an integer) instead of storing a null or a wrapped number. It is
   built from ``try_cast`` (the ANSI cast giving null where it would fail) and
   ``raise_error`` where a non-null value gave null (but a NaN or infinity into a DECIMAL,
   which INSERT stores as null: the core's ``nulls_non_finite``), so it does not depend on
   the session's ``spark.sql.ansi.enabled``; the task fails with a message naming the column
   and the value (:func:`task_error` turns it back into a SchemaMismatchError on the driver).
   Arrays, maps and structs are cast with Spark's ``cast`` (ANSI in Spark 4's default
   session). A value that references no column is computed on the driver first
   (:func:`check_constant`), so ``set={"b": "3000000000"}`` fails before any task too.

NOT NULL columns are checked where the rows are written (the core's conversion, as every
write), and a null there fails the change typed.
"""

from __future__ import annotations

import re
from typing import Any

import pyarrow as pa
from pyspark.sql.types import (
    ArrayType,
    AtomicType,
    CharType,
    DataType,
    MapType,
    NullType,
    StringType,
    StructField,
    StructType,
    TimestampType,
    VarcharType,
    YearMonthIntervalType,
)

from minipaimon_core.errors import SchemaMismatchError
from minipaimon_core.expressions import store_assignment as rule

# one SQL literal: a number (with Spark's suffixes), a quoted text, NULL, TRUE / FALSE, a typed literal
_LITERAL = re.compile(r"""\s*(?:[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?[LSYDF]?(?:BD)?|'(?:[^'\\]|\\.)*'|NULL|TRUE|FALSE
                      |(?:DATE|TIMESTAMP|TIMESTAMP_NTZ|TIMESTAMP_LTZ|X)\s*'[^']*')\s*""", re.IGNORECASE | re.VERBOSE)
# what a row that does not fit raises in its task (found again in the driver's error)
FAILED = "MINIPAIMON_VALUE_DOES_NOT_FIT"


def arrow_type(t: DataType) -> pa.DataType | None:
    """The Arrow type the core's rule reads for Spark type ``t`` (pyspark's own mapping;
    a VARIANT as a JSON text, a year-month interval as Arrow's month interval); None for a
    type Arrow has none of (a calendar interval: stored nowhere but into its own type)."""
    from pyspark.sql.pandas.types import to_arrow_type

    if isinstance(t, ArrayType):
        element = arrow_type(t.elementType)
        return None if element is None else pa.list_(pa.field("element", element, t.containsNull))
    if isinstance(t, MapType):
        key, value = arrow_type(t.keyType), arrow_type(t.valueType)
        if key is None or value is None:
            return None
        return pa.map_(pa.field("key", key, False), pa.field("value", value, t.valueContainsNull))
    if isinstance(t, StructType):
        fields = [(f, arrow_type(f.dataType)) for f in t.fields]
        if any(a is None for _, a in fields):
            return None
        return pa.struct([pa.field(f.name, a, f.nullable) for f, a in fields])
    if isinstance(t, (CharType, VarcharType)):
        return pa.string()
    if isinstance(t, YearMonthIntervalType):
        return pa.month_day_nano_interval()
    if type(t).__name__ == "VariantType":  # pyspark 4.0+: atomic, printed as JSON
        return pa.json_()
    if isinstance(t, TimestampType):
        return pa.timestamp("us", tz="UTC")
    try:
        return to_arrow_type(t)
    except TypeError:  # PySparkTypeError: a type pyspark does not map
        return None


def assignable(source: DataType, target: DataType) -> bool:
    """Whether Spark's ANSI store assignment stores a ``source`` value into a ``target``
    column (the core's :func:`~minipaimon_core.expressions.store_assignment.assignable`)."""
    if source == target:
        return True
    arrow_source, arrow_target = arrow_type(source), arrow_type(target)
    return arrow_source is not None and arrow_target is not None and rule.assignable(arrow_source, arrow_target)


def check(source: DataType, target: StructField, what: str) -> None:
    """Refuse a value of type ``source`` for column ``target`` where the ANSI rules do.

    Raises SchemaMismatchError naming the column and both types.
    """
    if not assignable(source, target.dataType):
        raise SchemaMismatchError(
            f"{what}: the value for column {target.name!r} is {source.simpleString().upper()}, which "
            f"Spark's store assignment (ANSI) does not store into {target.dataType.simpleString().upper()}; "
            f"cast it explicitly")


def stored(value: Any, source: DataType, target: StructField) -> Any:
    """The Column ``value`` (of type ``source``, checked by :func:`check`) as stored into
    column ``target``: itself if the types are equal, else the ANSI cast that fails the task
    for a value that does not fit."""
    from pyspark.sql import functions as F

    if source == target.dataType:
        return value
    if not isinstance(target.dataType, AtomicType) or not isinstance(source, (AtomicType, NullType)):
        return value.cast(target.dataType)
    cast = value.try_cast(target.dataType)
    shown = F.coalesce(value.try_cast(StringType()), F.lit("?"))
    before, after = _message("\0", source, target).split("\0")
    message = F.concat(F.lit(f"{FAILED}: {before}"), shown, F.lit(after))
    return F.when(_does_not_fit(value, cast, source, target), F.raise_error(message)).otherwise(cast)


def _does_not_fit(value: Any, cast: Any, source: DataType, target: StructField) -> Any:
    """The Column: ``value`` is not null and its ANSI cast ``cast`` is, but where Spark's
    INSERT stores that null (a NaN or infinity into a DECIMAL)."""
    from pyspark.sql import functions as F

    lost = value.isNotNull() & cast.isNull()
    source_type, target_type = arrow_type(source), arrow_type(target.dataType)
    if source_type is not None and target_type is not None and rule.nulls_non_finite(source_type, target_type):
        lost = lost & ~(F.isnan(value) | (F.abs(value) == F.lit(float("inf"))))
    return lost


def check_constant(spark: Any, raw: Any, value: Any, source: DataType, target: StructField) -> None:
    """Compute ``value`` (given as ``raw``) on the driver if it is a constant: a Python
    literal, or a string that is one SQL literal (``3000000000``, ``'x'``, ``NULL``, ``DATE
    '2025-01-01'``); a constant that does not fit ``target`` fails now. Spark folds a
    projection of constants over an inline table on the driver, without a job. Other values
    are checked per row (:func:`stored`).

    Raises SchemaMismatchError naming the column.
    """
    if not (raw is None or isinstance(raw, (bool, int, float)) or (isinstance(raw, str) and _LITERAL.fullmatch(raw))):
        return
    if source == target.dataType or not isinstance(target.dataType, AtomicType):
        return
    one = spark.sql("SELECT * FROM VALUES (1) AS one(one)")
    cast = value.try_cast(target.dataType)
    row = one.select(value.alias("v"), _does_not_fit(value, cast, source, target).alias("lost")).collect()[0]
    if row.lost:
        raise SchemaMismatchError(_message(repr(row.v), source, target))


def _message(shown: str, source: DataType, target: StructField) -> str:
    return (f"the value {shown} ({source.simpleString().upper()}) does not fit column {target.name!r} of type "
            f"{target.dataType.simpleString().upper()} (Spark's store assignment, ANSI)")


def task_error(error: BaseException) -> SchemaMismatchError | None:
    """The SchemaMismatchError of a Spark failure raised by :func:`stored`'s check (its one
    line naming the column), or None for another failure."""
    text = str(error)
    at = text.find(FAILED)
    if at < 0:
        return None
    line = text[at + len(FAILED) + 2:].split("\n", 1)[0]
    return SchemaMismatchError(line.split(" SQLSTATE", 1)[0].rstrip(". "))


__all__ = ["FAILED", "arrow_type", "assignable", "check", "check_constant", "stored", "task_error"]
