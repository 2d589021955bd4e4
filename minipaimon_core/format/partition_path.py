"""Partition directory names, ``k1=v1/k2=v2`` (spec §5.1), exactly as Paimon Java names them.

Readers find data files by recomputing this path, so every byte must match Java's legacy
naming (``partition.legacy-name=true``, the only naming in 0.9 and the default in HEAD):
``InternalRowPartitionComputer`` takes ``toString()`` of the internal value, a null value or
one whose string is empty or only whitespace (``Character.isWhitespace``) becomes the default
partition name, and ``PartitionPathUtils.escapePathName`` escapes keys and values.

Values come in minipaimon's stats domain; what Java prints for each type:

==========================  =========================  =====================================
type                        value                      rendering (Java ``toString()``)
==========================  =========================  =====================================
CHAR, VARCHAR, STRING       str                        the string
TINYINT .. BIGINT           int                        decimal
BOOLEAN                     bool                       ``true`` / ``false``
FLOAT, DOUBLE               float                      ``Float/Double.toString`` of JDK 17
DECIMAL(p, s)               unscaled int               ``BigDecimal.toPlainString()``
DATE                        int days since epoch       the day number (``19723``), not a date
TIME(p)                     int in the unit of p       milliseconds of the day (Paimon keeps
                                                       TIME as an int of millis)
TIMESTAMP(p) [WITH LOCAL    int in the unit of p       ``LocalDateTime.toString()`` of the
TIME ZONE]                  (0 s, 1-3 ms, 4-6 us,      UTC wall clock: ``2023-11-14T22:13``,
                            7-9 ns)                    ``...:20.123456``
BINARY, VARBINARY, BYTES    refused                    Java prints ``[B@<identity hash>``
==========================  =========================  =====================================

The JDK matters for FLOAT/DOUBLE: JDK 17's ``FloatingDecimal`` (ported below) prints more
digits than the shortest round-trip form for about 5% of doubles (``1e23`` is
``9.999999999999999E22``, ``4.680104923033462e16`` is ``4.6801049230334624E16``); JDK 19+
print the shortest form, so a table written by both has two directories for such a value.
"""

from __future__ import annotations

import math
import struct
import unicodedata
from collections.abc import Sequence
from typing import Any

from ..errors import InvalidArgumentError, UnsupportedFeatureError
from .data_types import AtomicType, parse_atomic

DEFAULT_PARTITION_NAME = "__DEFAULT_PARTITION__"
_ESCAPED = frozenset([*map(chr, range(0x20)), *'"#%\'*/:=?\\\x7f{}[]^'])
_JAVA_EXTRA_WHITESPACE = "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f"
_NON_BREAKING_SPACES = "\u00a0\u2007\u202f"
_INTEGERS = ("TINYINT", "SMALLINT", "INT", "BIGINT", "DATE")
_NANOS_PER_UNIT = (10**9, 10**6, 10**6, 10**6, 10**3, 10**3, 10**3, 1, 1, 1)  # by precision
_MILLIS_PER_DAY = 86_400_000


def partition_path(names: Sequence[str], values: Sequence[Any], types: Sequence[str],
                   default_name: str = DEFAULT_PARTITION_NAME) -> str:
    """``k1=v1/k2=v2`` for one partition, keys and values escaped; ``""`` when unpartitioned.

    Raises InvalidArgumentError for mismatched lengths, an empty key or a value that does not
    fit its type, UnsupportedFeatureError for a BINARY/VARBINARY partition key.
    """
    if not len(names) == len(values) == len(types):
        raise InvalidArgumentError(
            f"partition keys {list(names)} do not match values {list(values)} / types")
    parts = []
    for name, value, type_json in zip(names, values, types):
        text = render(value, type_json)
        parts.append(f"{escape(name)}={escape(default_name if text is None else text)}")
    return "/".join(parts)


def render(value: Any, type_json: str) -> str | None:
    """Java's legacy partition string of ``value``; None for a null value or a string that is
    empty or whitespace only (the caller substitutes the default partition name).

    Raises InvalidArgumentError if ``value`` is not in the stats domain of the type (see the
    module docstring), UnsupportedFeatureError for BINARY/VARBINARY or a type minipaimon does
    not read.
    """
    if value is None:
        return None
    t = parse_atomic(type_json)
    text = _render(value, t)
    return None if all(_java_is_whitespace(c) for c in text) else text


def _render(value: Any, t: AtomicType) -> str:
    kind = t.name
    if kind in ("BINARY", "VARBINARY"):
        raise UnsupportedFeatureError(
            f"partition key of type {t.sql()}: Paimon Java names such partitions by the "
            "identity hash of a byte array, which no other writer can reproduce")
    if kind in ("CHAR", "VARCHAR"):
        return _expect(value, str, t)
    if kind == "BOOLEAN":
        return "true" if _expect(value, bool, t) else "false"
    if kind in ("FLOAT", "DOUBLE"):
        try:
            number = float(_expect(value, (float, int), t))
        except OverflowError as e:  # an int beyond the double range
            raise InvalidArgumentError(f"partition value {value!r} overflows {t.sql()}") from e
        return java_float_to_string(number) if kind == "FLOAT" else java_double_to_string(number)
    number = _expect(value, int, t)
    if kind in _INTEGERS:
        return str(number)
    if kind == "DECIMAL":
        digits = str(abs(number)).rjust(t.scale + 1, "0")
        sign = "-" if number < 0 else ""
        return sign + (digits[:-t.scale] + "." + digits[-t.scale:] if t.scale else digits)
    nanos = number * _NANOS_PER_UNIT[t.precision]
    if kind == "TIME":
        return str(nanos // 1_000_000)
    return _local_date_time(nanos // 1_000_000, nanos % 1_000_000)


def _expect(value: Any, types: type | tuple[type, ...], t: AtomicType) -> Any:
    if not isinstance(value, types) or isinstance(value, bool) != (types is bool):
        raise InvalidArgumentError(f"partition value {value!r} does not fit type {t.sql()}")
    return value


def _java_is_whitespace(c: str) -> bool:
    """``Character.isWhitespace``: Unicode space separators except no-break spaces, plus
    a few ASCII controls (not U+0085, which Python's ``str.isspace`` accepts)."""
    if c in _JAVA_EXTRA_WHITESPACE:
        return True
    return unicodedata.category(c) in ("Zs", "Zl", "Zp") and c not in _NON_BREAKING_SPACES


def _local_date_time(millis: int, nanos_of_milli: int) -> str:
    """``Timestamp.toLocalDateTime().toString()`` for Paimon's (millisecond, nanos) pair,
    including Java's 32-bit wrap of the day number for values beyond +-5.8 million years."""
    day = _java_div(millis, _MILLIS_PER_DAY)
    time = millis - day * _MILLIS_PER_DAY  # Java's %: the sign of the dividend
    day = _wrap(day, 32)
    if time < 0:
        day, time = _wrap(day - 1, 32), time + _MILLIS_PER_DAY
    year, month, dom = _civil_from_days(day)
    if abs(year) < 1000:
        text = ("-" if year < 0 else "") + f"{abs(year):04d}"
    else:
        text = ("+" if year > 9999 else "") + str(year)
    nano_of_day = time * 1_000_000 + nanos_of_milli
    second, nano = divmod(nano_of_day, 10**9)
    minute, second = divmod(second, 60)
    hour, minute = divmod(minute, 60)
    text += f"-{month:02d}-{dom:02d}T{hour:02d}:{minute:02d}"
    if second or nano:
        text += f":{second:02d}"
    if nano:
        fraction = f"{nano:09d}"
        text += "." + (fraction[:3] if nano % 10**6 == 0 else
                       fraction[:6] if nano % 1000 == 0 else fraction)
    return text


def _civil_from_days(days: int) -> tuple[int, int, int]:
    """Proleptic Gregorian (year, month, day) of a day number (0 = 1970-01-01), any range."""
    z = days + 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    return yoe + era * 400 + (month <= 2), month, day


def escape(s: str) -> str:
    """``PartitionPathUtils.escapePathName``: controls 0x00-0x1F, 0x7F and
    ``" # % ' * / : = ? \\ { } [ ] ^`` become ``%XX`` (uppercase hex); everything else,
    space and non-ASCII included, stays. Raises InvalidArgumentError for ``""`` (as Java)."""
    if not s:
        raise InvalidArgumentError("a partition key or value path name must not be empty")
    return "".join(f"%{ord(c):02X}" if c in _ESCAPED else c for c in s)


def unescape(s: str) -> str:
    """``PartitionPathUtils.unescapePathName``: every ``%`` followed by two characters that
    ``Integer.parseInt(.., 16)`` reads as a number >= 0 becomes that character (so ``%+A``
    and Unicode digits count, as in Java); any other character stays."""
    out: list[str] = []
    i = 0
    while i < len(s):
        code = _java_parse_hex(s[i + 1:i + 3]) if s[i] == "%" and i + 2 < len(s) else -1
        out.append(chr(code) if code >= 0 else s[i])
        i += 3 if code >= 0 else 1
    return "".join(out)


def _java_parse_hex(two: str) -> int:
    """``Integer.parseInt(two, 16)`` for a 2-char string, or -1 where Java throws or
    returns a negative number."""
    sign, digits = (two[0], two[1:]) if two[0] in "+-" else ("+", two)
    values = [_java_hex_digit(c) for c in digits]
    if not values or min(values) < 0 or sign == "-" and any(values):
        return -1
    return sum(v * 16 ** (len(values) - 1 - i) for i, v in enumerate(values))


def _java_hex_digit(c: str) -> int:
    """``Character.digit(c, 16)`` of one UTF-16 unit: Unicode decimal digits, Latin and
    fullwidth A-F/a-f. A character beyond the BMP is two surrogate units, never a digit."""
    for letter_a in ("A", "a", "\uff21", "\uff41"):
        if 0 <= ord(c) - ord(letter_a) < 6:
            return ord(c) - ord(letter_a) + 10
    return unicodedata.decimal(c, -1) if ord(c) <= 0xFFFF else -1


# --- Java 17 Float.toString / Double.toString (jdk.internal.math.FloatingDecimal) -------------

_N_5_BITS = (0, 3, 5, 7, 10, 12, 14, 17, 19, 21, 24, 26, 28, 31, 33, 35, 38, 40, 42, 45, 47, 49,
             52, 54, 56, 59, 61)
_INSIGNIFICANT_FOR_POW2 = tuple(len(str(2**p)) - 1 if 1 < p < 64 else 0 for p in range(64))


def java_double_to_string(d: float) -> str:
    """``Double.toString(d)`` exactly as JDK 17 prints it."""
    (bits,) = struct.unpack(">Q", struct.pack(">d", d))
    return _java_format(bits >> 63, (bits >> 52) & 0x7FF, bits & (2**52 - 1), 52, 1023)


def java_float_to_string(f: float) -> str:
    """``Float.toString((float) f)`` exactly as JDK 17 prints it."""
    try:
        (bits,) = struct.unpack(">I", struct.pack(">f", f))
    except OverflowError:  # (float) of a double beyond the float range is infinite
        return "Infinity" if f > 0 else "-Infinity"
    return _java_format(bits >> 31, (bits >> 23) & 0xFF, bits & (2**23 - 1), 23, 127)


def _java_format(negative: int, biased_exp: int, fraction: int, width: int, bias: int) -> str:
    """``BinaryToASCIIBuffer``: unpack, generate digits (``dtoa``), lay out (``getChars``)."""
    sign = "-" if negative else ""
    if biased_exp == 2 * bias + 1:
        return "NaN" if fraction else sign + "Infinity"
    if biased_exp == 0 and fraction == 0:
        return sign + "0.0"
    if biased_exp == 0:  # subnormal: normalise
        shift = width + 1 - fraction.bit_length()
        fraction, bin_exp, n_significant = fraction << shift, 1 - shift, fraction.bit_length()
    else:
        fraction, bin_exp, n_significant = fraction | 1 << width, biased_exp, width + 1
    digits, dec_exponent = _dtoa(bin_exp - bias, fraction << (52 - width), n_significant)
    if 0 < dec_exponent < 8:
        whole, rest = digits[:dec_exponent], digits[dec_exponent:]
        return f"{sign}{whole.ljust(dec_exponent, '0')}.{rest or '0'}"
    if -3 < dec_exponent <= 0:
        return f"{sign}0.{'0' * -dec_exponent}{digits}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{dec_exponent - 1}"


def _dtoa(bin_exp: int, fract_bits: int, n_significant: int) -> tuple[str, int]:
    """Digits and decimal exponent (value = 0.digits * 10**exponent) of the binary value
    ``fract_bits * 2**(bin_exp - 52)`` (bit 52 set), following JDK 17's ``dtoa``, including
    its stopping rules, 32/64-bit overflow behaviour and round-up carry that keeps zeros."""
    tail_zeros = (fract_bits & -fract_bits).bit_length() - 1
    n_fract_bits = 53 - tail_zeros
    n_tiny_bits = max(0, n_fract_bits - bin_exp - 1)
    if -21 <= bin_exp <= 62 and n_tiny_bits == 0:  # an integer below 2**63
        value = fract_bits << bin_exp - 52 if bin_exp >= 52 else fract_bits >> 52 - bin_exp
        insignificant = _INSIGNIFICANT_FOR_POW2[bin_exp - n_significant - 1] if (
            bin_exp > n_significant) else 0
        if insignificant:
            value, residue = divmod(value, 10**insignificant)
            value += residue >= 10**insignificant // 2
        text = str(value)
        return text.rstrip("0"), len(text) + insignificant
    dec_exp = _estimate_dec_exp(fract_bits, bin_exp)
    b5, s5 = max(0, -dec_exp), max(0, dec_exp)
    b2, s2 = b5 + n_tiny_bits + bin_exp - (n_fract_bits - 1), s5 + n_tiny_bits
    m5, m2 = b5, b5 + n_tiny_bits + bin_exp - n_significant
    common = min(b2, s2)
    b2, s2, m2 = b2 - common, s2 - common, m2 - common - (n_fract_bits == 1)
    if m2 < 0:
        b2, s2, m2 = b2 - m2, s2 - m2, 0
    fract_bits >>= tail_zeros
    b_bits = n_fract_bits + b2 + (_N_5_BITS[b5] if b5 < len(_N_5_BITS) else b5 * 3)
    ten_s_bits = s2 + 1 + (_N_5_BITS[s5 + 1] if s5 + 1 < len(_N_5_BITS) else (s5 + 1) * 3)
    # Java computes in int when both fit 32 bits, in long when 64, else in big integers
    bits = 32 if b_bits < 32 and ten_s_bits < 32 else 64 if b_bits < 64 and ten_s_bits < 64 else 0

    def wrap(x: int) -> int:
        return _wrap(x, bits) if bits else x

    b = wrap(wrap(fract_bits * 5**b5) << b2)
    s, m = wrap(5**s5 << s2), wrap(5**m5 << m2)
    tens = wrap(s * 10)
    out: list[int] = []
    first = True
    low = high = False
    while first or not low and not high:
        q = _java_div(b, s)
        b, m = wrap(10 * (b - q * s)), wrap(m * 10)
        if bits and m <= 0 and not first:  # Java's "m might overflow" hack
            low = high = True
        else:
            low = b < m
            high = wrap(b + m) > tens if bits else b + m >= tens  # the big-int path uses >=
        if first and q == 0 and not high:
            dec_exp -= 1  # the estimate was one too high: drop the leading zero
        else:
            out.append(q)
        if first and (dec_exp < -3 or dec_exp >= 8):
            low = high = False  # E-form wants at least two digits
        first = False
    dec_exponent = dec_exp + 1
    half = wrap(wrap(b << 1) - tens)  # sign of (rest - half a unit of the last digit)
    if high and (not low or half > 0 or half == 0 and out[-1] % 2):
        i = len(out) - 1  # round up; a carry out of the top digit leaves trailing zeros
        while out[i] == 9 and i > 0:
            out[i], i = 0, i - 1
        if out[i] == 9:
            out[0], dec_exponent = 1, dec_exponent + 1
        else:
            out[i] += 1
    return "".join(map(str, out)), dec_exponent


def _estimate_dec_exp(fract_bits: int, bin_exp: int) -> int:
    """floor(log10(value)), estimated in double arithmetic exactly as Java does."""
    (d2,) = struct.unpack(">d", struct.pack(">Q", 1023 << 52 | fract_bits & (2**52 - 1)))
    return math.floor((d2 - 1.5) * 0.289529654 + 0.176091259 + bin_exp * 0.301029995663981)


def _java_div(a: int, b: int) -> int:
    """Java's integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _wrap(x: int, bits: int) -> int:
    """``x`` as a Java two's-complement integer of ``bits`` bits."""
    return (x + 2 ** (bits - 1)) % 2**bits - 2 ** (bits - 1)
