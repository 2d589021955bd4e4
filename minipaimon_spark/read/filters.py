"""Spark's pushed filters -> the core's DNF terms, accepting only what is applied exactly.

Spark (4.1+) does not re-check a filter the reader accepts, so a filter is accepted only
when the core's exact row filter (Arrow compute, SQL null semantics: a null never matches a
comparison) gives the same rows as Spark would:

- column is a top-level column of a type whose Arrow comparison equals Spark's: integers,
  boolean, string, binary, date, decimal (precision <= 28: pyspark rounds wider pushed
  literals), timestamp. Floating point is refused: Spark
  orders NaN above every number and treats NaN = NaN as true, Arrow does neither.
- timestamps as Spark hands them over (measured on 4.3 in non-UTC session zones): for a
  TIMESTAMP_LTZ column an instant (a UTC datetime); for a TIMESTAMP (NTZ) column the
  wall-clock time as a naive datetime, also for a ``timestamp'...'`` literal, which Spark
  casts to the column's kind in the session zone first. An aware value for an NTZ column
  could be either, so it is refused (Spark filters).
- operators ``= <=> < <= > >= IN IS NULL IS NOT NULL`` and ``NOT`` of ``= IN IS NULL
  IS NOT NULL``; ``NOT`` of ``=`` and ``IN`` also adds ``IS NOT NULL`` so the result is
  SQL's whatever the core does with nulls. ``IN`` with a NULL in its list and string
  pattern filters (``LIKE``) are refused.

Filters are dispatched by class name, so this module imports on Spark 4.0 (which has no
filter classes) and needs no Spark at all in tests.
"""

from __future__ import annotations

import datetime
import decimal
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

Term = tuple[str, str, Any]

_COMPARISONS = {
    "EqualTo": "=",
    "GreaterThan": ">",
    "GreaterThanOrEqual": ">=",
    "LessThan": "<",
    "LessThanOrEqual": "<=",
}


def _value_fits(t: pa.DataType, value: Any) -> bool:
    """Whether ``value`` (as Spark hands it over) is a plain value of column type ``t``."""
    if value is None:
        return False
    if pa.types.is_boolean(t):
        return isinstance(value, bool)
    if pa.types.is_integer(t):
        return isinstance(value, int) and not isinstance(value, bool)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return isinstance(value, str)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return isinstance(value, (bytes, bytearray))
    if pa.types.is_decimal(t):
        # pyspark decodes a pushed decimal literal in Python's default 28-digit context
        # (pyspark/sql/variant_utils.py), so a literal of a wider column may arrive rounded:
        # such filters are left to Spark.
        return t.precision <= 28 and isinstance(value, (decimal.Decimal, int)) \
            and not isinstance(value, bool)
    if pa.types.is_timestamp(t):  # NTZ: wall-clock time only (see the module docs)
        return isinstance(value, datetime.datetime) and (bool(t.tz) or value.tzinfo is None)
    if pa.types.is_date(t):
        return isinstance(value, datetime.date) and not isinstance(value, datetime.datetime)
    return False


def _coerce(t: pa.DataType, value: Any) -> Any:
    """The value in the form the core compares with the column (time zones lined up)."""
    if isinstance(value, bytearray):
        return bytes(value)
    if pa.types.is_timestamp(t) and t.tz and isinstance(value, datetime.datetime):
        # TIMESTAMP_LTZ: an instant; Spark hands over UTC (aware or naive)
        if value.tzinfo is None:
            value = value.replace(tzinfo=datetime.timezone.utc)
        return value.astimezone(datetime.timezone.utc)
    return value


def _column(f: Any, types: Mapping[str, pa.DataType]) -> tuple[str, pa.DataType] | None:
    path = getattr(f, "attribute", None)
    if not isinstance(path, tuple) or len(path) != 1:
        return None  # nested field reference
    name = path[0]
    t = types.get(name)
    if t is None:
        return None
    return name, t


def convert(f: Any, types: Mapping[str, pa.DataType]) -> list[Term] | None:
    """The conjunction of terms equal to Spark filter ``f``, or None if not exact."""
    kind = type(f).__name__
    if kind == "Not":
        return _convert_not(f.child, types)
    col = _column(f, types)
    if col is None:
        return None
    name, t = col
    if kind == "IsNull":
        return [(name, "is null", None)]
    if kind == "IsNotNull":
        return [(name, "is not null", None)]
    if not _comparable(t):
        return None
    if kind == "EqualNullSafe":
        if f.value is None:
            return [(name, "is null", None)]
        kind = "EqualTo"  # in a filter, a null row fails both forms
    if kind in _COMPARISONS:
        return [(name, _COMPARISONS[kind], _coerce(t, f.value))] if _value_fits(t, f.value) else None
    if kind == "In":
        values = _in_values(t, f.value)
        return None if values is None else [(name, "in", values)]
    return None


def _convert_not(child: Any, types: Mapping[str, pa.DataType]) -> list[Term] | None:
    kind = type(child).__name__
    col = _column(child, types)
    if col is None:
        return None
    name, t = col
    if kind == "IsNull":
        return [(name, "is not null", None)]
    if kind == "IsNotNull":
        return [(name, "is null", None)]
    if not _comparable(t):
        return None
    if kind == "EqualTo" and _value_fits(t, child.value):
        return [(name, "!=", _coerce(t, child.value)), (name, "is not null", None)]
    if kind == "In":
        values = _in_values(t, child.value)
        if values is None:
            return None
        return [(name, "not in", values), (name, "is not null", None)]
    return None


def _in_values(t: pa.DataType, values: Any) -> list[Any] | None:
    if not isinstance(values, (list, tuple)) or not values:
        return None
    if not all(_value_fits(t, v) for v in values):
        return None  # includes a NULL in the list: SQL's three-valued IN, refused
    return [_coerce(t, v) for v in values]


def _comparable(t: pa.DataType) -> bool:
    return (pa.types.is_boolean(t) or pa.types.is_integer(t) or pa.types.is_string(t)
            or pa.types.is_large_string(t) or pa.types.is_binary(t)
            or pa.types.is_large_binary(t) or pa.types.is_decimal(t)
            or pa.types.is_timestamp(t) or pa.types.is_date(t))


def split_filters(
    filters: Sequence[Any], types: Mapping[str, pa.DataType]
) -> tuple[list[Term], list[Any]]:
    """Split Spark's AND-ed ``filters`` into (accepted terms, filters left to Spark).

    The returned filters are the very input objects (Spark matches them by identity).
    """
    accepted: list[Term] = []
    rejected: list[Any] = []
    for f in filters:
        terms = convert(f, types)
        if terms is None:
            rejected.append(f)
        else:
            for term in terms:
                if term not in accepted:
                    accepted.append(term)
    return accepted, rejected


def column_types(schema: pa.Schema) -> dict[str, pa.DataType]:
    """Column name -> Arrow type, for :func:`split_filters`."""
    return {f.name: f.type for f in schema}
