"""Filter literals made exact in a column's own type.

A literal may be finer than its column (a datetime on a DATE column, microseconds on a
TIMESTAMP(3) column, 1.5 on an INT column, 0.1 on a FLOAT column) or outside its range
(``2**70`` on a BIGINT column). Casting it into the column type would round it and make
both file pruning and the row filter wrong. Instead ``column op literal`` is rewritten into
an equivalent comparison with a value of the column's type, so that pruning (on min/max
stats) and the row filter (Arrow) compare the same exact values. With ``r`` the literal as
an exact number and floor/ceil the nearest column values at or below/above it:

    x <  r  ->  x <= floor(r)     x <= r  ->  x <= floor(r)     (r not a column value)
    x >  r  ->  x >= ceil(r)      x >= r  ->  x >= ceil(r)
    x =  r  ->  false             x != r  ->  x is not null

A missing floor/ceil (r outside the column's range) makes the comparison "false". SQL's
three-valued logic: a null row never matches a comparison; ``IN (…, NULL)`` ignores the
null; ``NOT IN (…, NULL)`` matches no row (the comparison with NULL is unknown). NaN is
above every number and equal to itself, as Spark, Delta and DuckDB order it: on an integer
column ``x < NaN`` holds for every value (its floor is the column's largest value).

Numbers are exact rationals in the column's *stats domain* (see :mod:`.stats`): integers,
floats, decimals as unscaled integers, dates as days, timestamps as integers of the unit.
"""

from __future__ import annotations

import datetime
import decimal
import math
import numbers
from fractions import Fraction
from typing import Any

import numpy as np
import pyarrow as pa

from ..errors import InvalidArgumentError

FALSE = "false"  # op of a term no row matches
_EPOCH = datetime.datetime(1970, 1, 1)
_EPOCH_UTC = _EPOCH.replace(tzinfo=datetime.timezone.utc)
_UNIT_PER_SECOND = {"s": 1, "ms": 1000, "us": 10**6, "ns": 10**9}
_DECIMAL_CONTEXT = decimal.Context(prec=100)
Number = Fraction | float  # float only for nan / ±inf


class Literal:
    """A literal's exact value in a column's stats domain, and the column's values near it."""

    def __init__(self, column: str, t: pa.DataType, value: Any) -> None:
        self.column, self.type, self.raw = column, t, value
        self.number: Number | None = None  # None: a non-numeric type (string, binary, bool)
        if isinstance(value, pa.Scalar) and not _is_temporal_type(value.type):
            value = value.as_py()
        if _numeric(t):
            self.number = _to_number(self, value)
        else:
            self._check_plain(value)

    def fail(self, why: str) -> InvalidArgumentError:
        return InvalidArgumentError(
            f"filter literal {self.raw!r} on column {self.column!r} ({self.type}): {why}")

    def _check_plain(self, value: Any) -> None:
        ok = (isinstance(value, bool) if pa.types.is_boolean(self.type)
              else isinstance(value, str) if pa.types.is_string(self.type) or pa.types.is_large_string(self.type)
              else isinstance(value, (bytes, bytearray)) if pa.types.is_binary(self.type)
              or pa.types.is_large_binary(self.type)
              else False)
        if not ok:
            if pa.types.is_nested(self.type):
                raise self.fail("nested columns support only 'is null' / 'is not null'")
            raise self.fail(f"a {type(value).__name__} cannot be compared with this column")

    def exact(self) -> Any | None:
        """The stats-domain value equal to the literal, or None if no column value equals it."""
        if self.number is None:
            return bytes(self.raw) if isinstance(self.raw, bytearray) else self.raw
        n = self.number
        if pa.types.is_floating(self.type):
            if isinstance(n, float):  # nan and ±inf are float32/float64 values
                return n
            if abs(n) > _max_float(self.type):
                return None
            f = _round_float(n, self.type)
            return f if Fraction(f) == n else None
        if isinstance(n, float) or n.denominator != 1:
            return None
        lo, hi = _int_range(self.type)
        return int(n) if lo <= n <= hi else None

    def floor(self) -> Any | None:
        """The largest column value <= the literal (None if there is none)."""
        return self._nearest(down=True)

    def ceil(self) -> Any | None:
        """The smallest column value >= the literal (None if there is none)."""
        return self._nearest(down=False)

    def _nearest(self, down: bool) -> Any | None:
        n = self.number
        assert n is not None
        if isinstance(n, float) and math.isnan(n):  # NaN is above every number (as Spark)
            if pa.types.is_floating(self.type):
                return n
            return _int_range(self.type)[1] if down else None
        if pa.types.is_floating(self.type):
            if isinstance(n, float):
                return n
            top = _max_float(self.type)
            if abs(n) > top:  # beyond every finite value, short of infinity
                return (top if down else math.inf) if n > 0 else (-math.inf if down else -top)
            f = _round_float(n, self.type)
            if (Fraction(f) > n) if down else (Fraction(f) < n):
                f = float(np.nextafter(_np_float(self.type)(f), -np.inf if down else np.inf))
            return f
        lo, hi = _int_range(self.type)
        if isinstance(n, float):  # ±inf
            inf_down = n < 0
            return None if inf_down == down else (hi if down else lo)
        i = math.floor(n) if down else math.ceil(n)
        if down:
            return None if i < lo else min(i, hi)
        return None if i > hi else max(i, lo)


def to_scalar(stat: Any, t: pa.DataType) -> pa.Scalar:
    """The Arrow scalar of column type ``t`` for a stats-domain value."""
    if pa.types.is_decimal(t):
        return pa.scalar(decimal.Decimal(stat).scaleb(-t.scale, _DECIMAL_CONTEXT), t)
    if pa.types.is_date32(t):
        return pa.scalar(stat, pa.int32()).cast(t)
    if pa.types.is_timestamp(t):
        return pa.scalar(stat, pa.int64()).cast(t)
    return pa.scalar(stat, t)


def _numeric(t: pa.DataType) -> bool:
    return (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)
            or pa.types.is_date32(t) or pa.types.is_timestamp(t))


def _np_float(t: pa.DataType) -> type:
    return np.float32 if pa.types.is_float32(t) else np.float64


def _max_float(t: pa.DataType) -> float:
    return float(np.finfo(_np_float(t)).max)


def _round_float(n: Fraction, t: pa.DataType) -> float:
    return float(_np_float(t)(float(n)))


def _int_range(t: pa.DataType) -> tuple[int, int]:
    if pa.types.is_decimal(t):
        return -(10**t.precision - 1), 10**t.precision - 1
    if pa.types.is_date32(t):
        return -(2**31), 2**31 - 1
    if pa.types.is_timestamp(t):
        return -(2**63), 2**63 - 1
    bits = t.bit_width
    if pa.types.is_unsigned_integer(t):
        return 0, 2**bits - 1
    return -(2 ** (bits - 1)), 2 ** (bits - 1) - 1


def _to_number(lit: Literal, v: Any) -> Number:
    t = lit.type
    if isinstance(v, pa.Scalar):
        v = _temporal_scalar(lit, v) if _is_temporal_type(v.type) else v.as_py()
        if isinstance(v, Fraction):
            return v
    if isinstance(v, bool) or v is None:
        raise lit.fail("not a number")
    if pa.types.is_date32(t) or pa.types.is_timestamp(t):
        if isinstance(v, numbers.Integral):
            return Fraction(int(v))  # already in the column's unit (days / timestamp unit)
        return _temporal(lit, v)
    if isinstance(v, decimal.Decimal):
        if not v.is_finite():
            raise lit.fail("not a finite decimal")
        r = Fraction(v)
    elif isinstance(v, numbers.Integral):
        r = Fraction(int(v))
    elif isinstance(v, numbers.Real):
        f = float(v)
        if math.isnan(f) or math.isinf(f):
            return f
        r = Fraction(f)
    else:
        raise lit.fail(f"a {type(v).__name__} is not a number")
    return r * 10**t.scale if pa.types.is_decimal(t) else r


def _is_temporal_type(t: pa.DataType) -> bool:
    return pa.types.is_date(t) or pa.types.is_timestamp(t)


def _temporal_scalar(lit: Literal, s: pa.Scalar) -> Fraction:
    if pa.types.is_timestamp(s.type):
        _check_tz(lit, s.type.tz is not None)
        return _in_column_unit(lit, Fraction(s.cast(pa.int64()).as_py(), _UNIT_PER_SECOND[s.type.unit]))
    _check_tz(lit, None)
    days = s.cast(pa.int32()).as_py() if pa.types.is_date32(s.type) else s.cast(pa.int64()).as_py() // 86_400_000
    return _in_column_unit(lit, Fraction(days * 86400))


def _temporal(lit: Literal, v: Any) -> Fraction:
    """Seconds since the epoch of a date/datetime-like literal, in the column's unit."""
    if isinstance(v, str):
        try:
            v = datetime.date.fromisoformat(v) if len(v) == 10 else datetime.datetime.fromisoformat(v)
        except ValueError:
            raise lit.fail("not an ISO date or timestamp") from None
    if isinstance(v, np.datetime64):
        return _temporal_scalar(lit, pa.scalar(v))
    if isinstance(v, datetime.datetime):
        aware = v.tzinfo is not None and v.tzinfo.utcoffset(v) is not None
        _check_tz(lit, aware)
        nanos = getattr(v, "nanosecond", 0)  # pandas.Timestamp
        delta = v - (_EPOCH_UTC if aware else _EPOCH)
        micros = (delta.days * 86400 + delta.seconds) * 10**6 + delta.microseconds
        return _in_column_unit(lit, Fraction(micros * 1000 + nanos, 10**9))
    if isinstance(v, datetime.date):
        _check_tz(lit, None)
        return _in_column_unit(lit, Fraction((v - _EPOCH.date()).days * 86400))
    raise lit.fail(f"a {type(v).__name__} is not a date or timestamp")


def _check_tz(lit: Literal, aware: bool | None) -> None:
    """A tz-aware column needs an aware literal, a naive column a naive one (None: a date,
    which is naive and fits dates and naive timestamps)."""
    if not pa.types.is_timestamp(lit.type):
        if aware:
            raise lit.fail("a time-zone-aware timestamp cannot be compared with a DATE; use a date or a naive datetime")
        return
    column_aware = lit.type.tz is not None
    if column_aware and not aware:
        raise lit.fail("the column is time-zone aware (UTC): give an aware datetime, "
                       "e.g. datetime(..., tzinfo=timezone.utc)")
    if not column_aware and aware:
        raise lit.fail("the column has no time zone: give a naive datetime")


def _in_column_unit(lit: Literal, seconds: Fraction) -> Fraction:
    if pa.types.is_date32(lit.type):
        return seconds / 86400
    return seconds * _UNIT_PER_SECOND[lit.type.unit]
