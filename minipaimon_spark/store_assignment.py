"""Spark's store assignment (``spark.sql.storeAssignmentPolicy=ANSI``, Spark's default):
how a value computed by Spark is stored into a table column of another type, as Spark
SQL's ``INSERT`` stores it. Used for every value :class:`minipaimon_spark.MiniPaimonTable`'s
update and merge write (``b * 1.1`` into an INT column is ``CAST(b * 1.1 AS INT)``: 5.5
stores 5).

Two steps, as in Spark's INSERT:

1. **At analysis, on the driver** (:func:`check`): the conversions the ANSI rules allow
   (measured against Spark 4's INSERT): a numeric type into any numeric type, any atomic
   type into a string, dates and timestamps into each other, an interval into an interval of
   its kind; arrays, maps and structs element by element (a nullable element never into a
   NOT NULL one). Anything else (a string into an INT, a boolean into a number) is a
   :class:`~minipaimon_core.errors.SchemaMismatchError` naming the column, before any task.
2. **Per row** (:func:`stored`): an ANSI cast, which fails where a value does not fit
   (overflow, NaN into an integer) instead of storing a null or a wrapped number. It is
   built from ``try_cast`` (the ANSI cast giving null where it would fail) and
   ``raise_error`` where a non-null value gave null, so it does not depend on the session's
   ``spark.sql.ansi.enabled``; the task fails with a message naming the column and the
   value (:func:`task_error` turns it back into a SchemaMismatchError on the driver).
   Arrays, maps and structs are cast with Spark's ``cast`` (ANSI in Spark 4's default
   session). A value that references no column is computed on the driver first
   (:func:`check_constant`), so ``set={"b": "3000000000"}`` fails before any task too.

NOT NULL columns are checked where the rows are written (the core's conversion, as every
write), and a null there fails the change typed.
"""

from __future__ import annotations

import re
from typing import Any

from pyspark.sql.types import (
    ArrayType,
    AtomicType,
    DataType,
    DateType,
    DayTimeIntervalType,
    MapType,
    NullType,
    NumericType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
    YearMonthIntervalType,
)

from minipaimon_core.errors import SchemaMismatchError

_DATETIME = (DateType, TimestampType, TimestampNTZType)
# one SQL literal: a number (with Spark's suffixes), a quoted text, NULL, TRUE / FALSE, a typed literal
_LITERAL = re.compile(r"""\s*(?:[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?[LSYDF]?(?:BD)?|'(?:[^'\\]|\\.)*'|NULL|TRUE|FALSE
                      |(?:DATE|TIMESTAMP|TIMESTAMP_NTZ|TIMESTAMP_LTZ|X)\s*'[^']*')\s*""", re.IGNORECASE | re.VERBOSE)
# what a row that does not fit raises in its task (found again in the driver's error)
FAILED = "MINIPAIMON_VALUE_DOES_NOT_FIT"


def assignable(source: DataType, target: DataType) -> bool:
    """Whether Spark's ANSI store assignment stores a ``source`` value into a ``target``
    column."""
    if source == target or isinstance(source, NullType):
        return True
    if isinstance(source, NumericType) and isinstance(target, NumericType):
        return True
    if isinstance(target, StringType) and isinstance(source, AtomicType):
        return True
    if isinstance(source, _DATETIME) and isinstance(target, _DATETIME):
        return True
    for kind in (DayTimeIntervalType, YearMonthIntervalType):
        if isinstance(source, kind) and isinstance(target, kind):
            return True
    if isinstance(source, ArrayType) and isinstance(target, ArrayType):
        return (not source.containsNull or target.containsNull) \
            and assignable(source.elementType, target.elementType)
    if isinstance(source, MapType) and isinstance(target, MapType):
        return (not source.valueContainsNull or target.valueContainsNull) \
            and assignable(source.keyType, target.keyType) and assignable(source.valueType, target.valueType)
    if isinstance(source, StructType) and isinstance(target, StructType):
        return len(source.fields) == len(target.fields) and all(
            (not s.nullable or t.nullable) and assignable(s.dataType, t.dataType)
            for s, t in zip(source.fields, target.fields))
    return False


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
    return F.when(value.isNotNull() & cast.isNull(), F.raise_error(message)).otherwise(cast)


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
    row = one.select(value.alias("v"), value.try_cast(target.dataType).alias("c")).collect()[0]
    if row.v is not None and row.c is None:
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


__all__ = ["FAILED", "assignable", "check", "check_constant", "stored", "task_error"]
