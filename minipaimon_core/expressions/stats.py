"""Column statistics and the *stats domain* they are stored in.

Stats values are plain msgpack-able Python values that compare like the column's values:
bool, int, float, str, bytes. Dates are days since the epoch, timestamps and times are
integers of their unit, decimals are unscaled integers (of any size: a DECIMAL(38, 18)
holding 18.45 is 18450000000000000000, beyond 64 bits; manifests store such integers with
the codec's big-integer extension). A min/max of None means unknown:
nested columns, floats holding NaN, and strings or binaries longer than
:data:`MAX_STATS_LENGTH`.
"""

from __future__ import annotations

import datetime
import decimal
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ..format.manifest_file import SimpleStats

MAX_STATS_LENGTH = 64
_EXACT = decimal.Context(prec=100)  # decimal arithmetic without rounding (DECIMAL(38, s))


def to_stat(value: Any, arrow_type: pa.DataType) -> Any:
    """Convert a Python value of a column of ``arrow_type`` to the stats domain.

    Raises TypeError/ValueError/pa.ArrowInvalid if the value does not fit the type.
    """
    if value is None:
        return None
    if isinstance(value, pa.Scalar):
        value = value.as_py()
    if pa.types.is_date(arrow_type):
        if isinstance(value, datetime.datetime):
            value = value.date()
        if isinstance(value, str):
            value = datetime.date.fromisoformat(value)
        return (value - datetime.date(1970, 1, 1)).days
    if pa.types.is_timestamp(arrow_type) or pa.types.is_time(arrow_type) or pa.types.is_duration(arrow_type):
        if isinstance(value, int):
            return value
        scalar = pa.scalar(value, arrow_type)
        if pa.types.is_time32(arrow_type):  # no direct cast of time32 to int64
            scalar = scalar.cast(pa.int32())
        return scalar.cast(pa.int64()).as_py()
    if pa.types.is_decimal(arrow_type):
        d = decimal.Decimal(value) if not isinstance(value, decimal.Decimal) else value
        scaled = d.scaleb(arrow_type.scale, _EXACT)
        if scaled != scaled.to_integral_value(context=_EXACT):
            raise ValueError(f"{value!r} has more than {arrow_type.scale} decimal places")
        return int(scaled)
    if pa.types.is_boolean(arrow_type):
        if not isinstance(value, bool):
            raise TypeError(f"{value!r} is not a boolean")
        return value
    if pa.types.is_integer(arrow_type):
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer():
                return int(value)
            raise TypeError(f"{value!r} is not an integer")
        return value
    if pa.types.is_floating(arrow_type):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"{value!r} is not a number")
        return float(value)
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        if not isinstance(value, str):
            raise TypeError(f"{value!r} is not a string")
        return value
    if pa.types.is_binary(arrow_type) or pa.types.is_large_binary(arrow_type):
        if not isinstance(value, (bytes, bytearray)):
            raise TypeError(f"{value!r} is not bytes")
        return bytes(value)
    raise TypeError(f"no comparable stats for type {arrow_type}")


def stat_to_string(value: Any, arrow_type: pa.DataType) -> str | None:
    """Human-readable form of a stats-domain value (partition directory names)."""
    if value is None:
        return None
    if pa.types.is_date(arrow_type):
        return (datetime.date(1970, 1, 1) + datetime.timedelta(days=value)).isoformat()
    if pa.types.is_decimal(arrow_type):
        return str(decimal.Decimal(value).scaleb(-arrow_type.scale, _EXACT))
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _has_stats(t: pa.DataType) -> bool:
    return not pa.types.is_nested(t) and not pa.types.is_dictionary(t)


def column_stats(column: pa.ChunkedArray | pa.Array) -> tuple[Any, Any, int]:
    """(min, max, null count) of one column, vectorised; min/max None where unknown."""
    t = column.type
    nulls = column.null_count
    if not _has_stats(t) or nulls == len(column):
        return None, None, nulls
    if pa.types.is_floating(t) and pc.any(pc.is_nan(column)).as_py():
        return None, None, nulls
    mm = pc.min_max(column)
    lo, hi = mm["min"].as_py(), mm["max"].as_py()
    if isinstance(lo, (str, bytes)) and max(len(lo), len(hi)) > MAX_STATS_LENGTH:
        return None, None, nulls
    return to_stat(lo, t), to_stat(hi, t), nulls


def table_stats(table: pa.Table, columns: list[str]) -> SimpleStats:
    """Stats of ``columns`` of ``table`` in that order."""
    mins, maxs, nulls = [], [], []
    for name in columns:
        lo, hi, n = column_stats(table.column(name))
        mins.append(lo)
        maxs.append(hi)
        nulls.append(n)
    return SimpleStats(tuple(mins), tuple(maxs), tuple(nulls))


def merge_stats(parts: Sequence[tuple[SimpleStats, int]]) -> SimpleStats:
    """Stats of the concatenation of parts, each given as (stats, row count).

    A part whose column is all null says nothing about min/max; a part with an unknown
    (None) min/max of a column with values makes the whole column unknown.
    """
    if len(parts) == 1:
        return parts[0][0]
    width = len(parts[0][0].nullCounts) if parts else 0
    mins: list[Any] = []
    maxs: list[Any] = []
    nulls: list[int | None] = []
    for i in range(width):
        valued = [(s.minValues[i], s.maxValues[i]) for s, rows in parts
                  if s.nullCounts[i] is None or s.nullCounts[i] < rows]  # type: ignore[operator]
        known = all(lo is not None and hi is not None for lo, hi in valued)
        mins.append(min(lo for lo, _ in valued) if valued and known else None)
        maxs.append(max(hi for _, hi in valued) if valued and known else None)
        counts = [s.nullCounts[i] for s, _ in parts]
        nulls.append(None if None in counts else sum(c for c in counts if c is not None))
    return SimpleStats(tuple(mins), tuple(maxs), tuple(nulls))


def values_stats(rows: Sequence[Sequence[Any]], width: int) -> SimpleStats:
    """Stats over small lists of stats-domain values (partition values of manifest entries):
    min and max of the non-null values (None if there are none) and the null count, as for
    file stats. (Lists written before this kept min/max None whenever a value was null; a
    reader treats that as unknown.)
    """
    mins: list[Any] = []
    maxs: list[Any] = []
    nulls: list[int] = []
    for i in range(width):
        col = [r[i] for r in rows if r[i] is not None]
        mins.append(min(col) if col else None)
        maxs.append(max(col) if col else None)
        nulls.append(len(rows) - len(col))
    return SimpleStats(tuple(mins), tuple(maxs), tuple(nulls))
