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

import numpy as np
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
    if pa.types.is_float32(t) or pa.types.is_float64(t):  # NumPy's min / max: ~1/4 of Arrow's CPU
        chunked = column if isinstance(column, pa.ChunkedArray) else pa.chunked_array([column])
        numeric = _numeric_run_stats(chunked, [0, len(column)], np.array([len(column)]))
        if numeric is not None:
            return numeric[0][0], numeric[1][0], nulls
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


def grouped_stats(table: pa.Table, columns: list[str], bounds: Sequence[int]) -> list[SimpleStats] | None:
    """Stats of ``columns`` of each run of rows ``table[bounds[i]:bounds[i + 1]]``, as
    :func:`table_stats` of each run gives them, all runs at once: numbers, dates and
    timestamps by NumPy reductions over the runs, other columns in one pass of hash
    aggregates (1,000 partitions of a write: ~0.1 ms a partition less than a table_stats
    each). None if a column's type has no hash aggregate here (the caller computes them
    run by run)."""
    rows: np.ndarray = np.diff(np.asarray(bounds, dtype=np.int64))
    by_column: dict[str, tuple[list[Any], list[Any], list[int]]] = {}
    hashed = []
    for name in columns:
        column = table.column(name)
        if not _has_stats(column.type):
            return None
        numeric = _numeric_run_stats(column, bounds, rows)
        if numeric is None:
            hashed.append(name)
        else:
            by_column[name] = numeric
    if hashed:
        aggregated = _hashed_run_stats(table, hashed, rows)
        if aggregated is None:
            return None
        by_column.update(aggregated)
    per_column = [by_column[name] for name in columns]
    return [SimpleStats(tuple(c[0][g] for c in per_column), tuple(c[1][g] for c in per_column),
                        tuple(c[2][g] for c in per_column)) for g in range(len(rows))]


def _numeric_run_stats(column: pa.ChunkedArray, bounds: Sequence[int],
                       rows: np.ndarray) -> tuple[list[Any], list[Any], list[int]] | None:
    """(mins, maxes, null counts) of each run of ``column`` for integers, floats, dates and
    timestamps (their stats are their stored integers or floats), by NumPy ``reduceat``;
    None for another type or an empty run."""
    t = column.type
    if pa.types.is_timestamp(t):
        dtype: Any = np.int64
    elif pa.types.is_date32(t):
        dtype = np.int32
    elif pa.types.is_integer(t) or pa.types.is_float32(t) or pa.types.is_float64(t):
        dtype = t.to_pandas_dtype()
    else:
        return None
    if not len(rows) or rows.min() < 1:
        return None
    array = column.combine_chunks()
    data = array.buffers()[1]
    if data is None:
        return None
    values = np.frombuffer(data, dtype=dtype, count=array.offset + len(array))[array.offset:]
    starts = np.asarray(bounds[:-1], dtype=np.intp)
    floating = np.issubdtype(values.dtype, np.floating)
    if array.null_count:
        valid = array.is_valid().to_numpy(zero_copy_only=False)
        nulls = rows - np.add.reduceat(valid, starts, dtype=np.int64)
        top, bottom = (np.inf, -np.inf) if floating else (np.iinfo(dtype).max, np.iinfo(dtype).min)
        lows, highs = np.where(valid, values, top), np.where(valid, values, bottom)
    else:
        valid, nulls = None, np.zeros(len(rows), dtype=np.int64)
        lows = highs = values
    known = nulls < rows
    if floating:  # a run holding NaN has no min / max (as column_stats)
        nan = np.isnan(values) if valid is None else np.isnan(values) & valid
        known &= ~np.logical_or.reduceat(nan, starts)
    lo, hi = np.minimum.reduceat(lows, starts).tolist(), np.maximum.reduceat(highs, starts).tolist()
    if floating:  # a zero bound is -0.0 as a min, +0.0 as a max (as Parquet's statistics and
        # Java's Double.compare order them), whichever zero the run holds
        lo, hi = [-0.0 if a == 0 else a for a in lo], [0.0 if b == 0 else b for b in hi]
    return ([a if k else None for a, k in zip(lo, known.tolist())],
            [b if k else None for b, k in zip(hi, known.tolist())], nulls.tolist())


def _hashed_run_stats(table: pa.Table, columns: list[str],
                      rows: np.ndarray) -> dict[str, tuple[list[Any], list[Any], list[int]]] | None:
    """:func:`grouped_stats` of ``columns`` by hash aggregates over a run id."""
    runs = len(rows)
    inputs: dict[str, Any] = {"__run": pa.array(np.repeat(np.arange(runs, dtype=np.int32), rows))}
    aggs: list[tuple[Any, ...]] = []
    for i, name in enumerate(columns):
        col = table.column(name)
        inputs[f"c{i}"] = col
        aggs += [(f"c{i}", "min_max"), (f"c{i}", "count", pc.CountOptions("only_null"))]
        if pa.types.is_floating(col.type):
            inputs[f"n{i}"] = pc.is_nan(col)
            aggs.append((f"n{i}", "any"))
    try:
        out = pa.table(inputs).group_by("__run", use_threads=False).aggregate(aggs)
    except pa.ArrowNotImplementedError:
        return None
    out = out.sort_by("__run")
    by_column = {}
    for i, name in enumerate(columns):
        t = table.schema.field(name).type
        mm = out.column(f"c{i}_min_max").combine_chunks()
        nulls = out.column(f"c{i}_count").to_pylist()
        nan = out.column(f"n{i}_any").to_pylist() if pa.types.is_floating(t) else [False] * runs
        lo, hi = (_stat_values(mm.field(f), t) for f in ("min", "max"))
        long = pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) \
            or pa.types.is_large_binary(t)
        known = [n < r and not x and not (long and max(len(a), len(b)) > MAX_STATS_LENGTH)
                 for n, r, x, a, b in zip(nulls, rows.tolist(), nan, lo, hi)]
        by_column[name] = ([a if k else None for a, k in zip(lo, known)],
                           [b if k else None for b, k in zip(hi, known)], nulls)
    return by_column


def _stat_values(values: pa.Array, t: pa.DataType) -> list[Any]:
    """A column's values in the stats domain (:func:`to_stat`), vectorised for the types
    whose Python values are the stats' or whose integer cast is."""
    if pa.types.is_timestamp(t) or pa.types.is_duration(t):
        return values.cast(pa.int64()).to_pylist()
    if pa.types.is_date32(t):
        return values.cast(pa.int32()).to_pylist()
    if pa.types.is_integer(t) or pa.types.is_string(t) or pa.types.is_large_string(t):
        return values.to_pylist()
    if pa.types.is_boolean(t) or pa.types.is_floating(t):
        return values.to_pylist()
    return [to_stat(v, t) for v in values.to_pylist()]


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
