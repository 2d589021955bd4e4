"""Apache Paimon's BinaryRow: the bytes of partitions, keys and stats rows, and the bucket hash.

Layout (``SerializationUtils.serializeBinaryRow``; every number little-endian except the
arity)::

    | arity   | kind | null bits      | slot 0 | ... | slot a-1 | variable part          |
    | int32 BE| 1 B  | bit i+8: i null| 8 B    |     | 8 B      | chunks padded to 8 B   |
              |<-- W = ((a + 71) // 64) * 8 -->|
              |<-- the row: BinaryRow.hashCode covers it; offsets count from its start -->|

A fixed-size value fills the low bytes of its slot, the rest stays zero. A string or binary of
at most 7 bytes is inline (slot byte 7 = 0x80 | length). Longer ones, DECIMAL(p > 18) (Java
``BigInteger.toByteArray()`` in a zeroed 16-byte chunk) and TIMESTAMP(p > 3) (epoch millis in
an 8-byte chunk) go to the variable part; their slot is ``offset << 32 | length`` (for a
timestamp ``| nano-of-millisecond``). A null sets its bit and zeroes its slot. Java's generated
projections (0.9 partition, key and bucket-key rows; every row in HEAD) also reserve the zeroed
chunk of a null DECIMAL(p > 18) / TIMESTAMP(p > 3) and point the slot at it; 0.9's
``InternalRowSerializer`` (stats rows) does not. ``encode(..., reserve_nulls=True)`` writes the
former; :func:`minipaimon_core.format.bucket_hash.bucket_hashes` always hashes the former, because that is what Java buckets by.

Bucket: hash = Murmur3 over the row's 4-byte little-endian words, seed 42
(``MurmurHashUtils.hashBytesByWords``); bucket = Java ``Math.abs(hash % n)``. Values are in the
engine's stats domain: bool, int, float, str, bytes; DATE days since epoch; TIME(p) and
TIMESTAMP(p) ints in the Arrow unit of p (0: s, 1-3: ms, 4-6: us, 7-9: ns); DECIMAL(p, s) the
unscaled int; None is null. Nested types are only ever null here.

:func:`minipaimon_core.format.bucket_hash.bucket_hashes` per 1M keys (2-core box, numpy 2.4, the test module's ``_measure``):
BIGINT 15 ms, STRING of 10 chars 115 ms (0-39 chars 150 ms, DECIMAL(38, 0) 100 ms).
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from ..errors import CorruptMetadataError, InvalidArgumentError, UnsupportedFeatureError

# ---------------------------------------------------------------------------------------------
# Types

_ROOTS = {  # type name -> the root this module handles it as
    **{r: r for r in ("BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE")},
    **{r: r for r in ("STRING", "BYTES", "DATE", "TIME", "TIMESTAMP", "DECIMAL")},
    "INTEGER": "INT", "CHAR": "STRING", "VARCHAR": "STRING", "BINARY": "BYTES",
    "VARBINARY": "BYTES", "TIMESTAMP_LTZ": "TIMESTAMP",
}
_NESTED = ("ARRAY", "MAP", "ROW", "MULTISET")
_TYPE = re.compile(r"([A-Z_]+)\s*(?:\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\))?\s*(WITH LOCAL TIME ZONE)?")
_INTS = (int, np.integer)
_FLOATS = (*_INTS, float, np.floating)
_ACCEPTS: dict[str, tuple[type, ...]] = {  # Python types of the values; ints when not listed
    "BOOLEAN": (bool, np.bool_), "FLOAT": _FLOATS, "DOUBLE": _FLOATS, "STRING": (str,),
    "BYTES": (bytes, bytearray, memoryview),
}
_FIXED_FORMAT = {"BOOLEAN": "<?", "TINYINT": "<b", "SMALLINT": "<h", "INT": "<i", "DATE": "<i",
                 "TIME": "<i", "BIGINT": "<q", "FLOAT": "<f", "DOUBLE": "<d"}


@dataclass(frozen=True)
class _Type:
    """A parsed Paimon type: ``root`` is a value of ``_ROOTS`` or ``"NESTED"``."""

    root: str
    precision: int = 0
    scale: int = 0

    @property
    def chunk_size(self) -> int:
        """Bytes this type always takes in the variable part (0: none or value-dependent)."""
        compact, size = {"DECIMAL": (18, 16), "TIMESTAMP": (3, 8)}.get(self.root, (99, 0))
        return size if self.precision > compact else 0

    @property
    def units_per_second(self) -> int:
        """TIME / TIMESTAMP: the Arrow unit of the precision (0: s, 1-3: ms, 4-6: us, 7-9: ns)."""
        return 10 ** (3 * -(-self.precision // 3))


@lru_cache(maxsize=512)
def _parse_type(text: str) -> _Type:
    """Parse ``text`` (e.g. ``"DECIMAL(38, 2) NOT NULL"``). Raises InvalidArgumentError."""
    name = text.strip().upper().removesuffix("NOT NULL").strip()
    if name.startswith(_NESTED):
        return _Type("NESTED")
    m = _TYPE.fullmatch(name)
    root = _ROOTS.get(m.group(1), "") if m else ""
    if not m or not root or (m.group(4) and root != "TIMESTAMP"):
        raise InvalidArgumentError(f"unsupported Paimon type {text!r} in a BinaryRow")
    p, s = m.group(2), m.group(3)
    if root == "DECIMAL":
        precision, scale = int(p or 10), int(s or 0)
        if not (1 <= precision <= 38 and 0 <= scale <= precision):
            raise InvalidArgumentError(f"invalid type {text!r}: DECIMAL(1..38, 0..p)")
        return _Type(root, precision, scale)
    if s is not None or (p is not None and root not in ("STRING", "BYTES", "TIME", "TIMESTAMP")):
        raise InvalidArgumentError(f"unsupported Paimon type {text!r} in a BinaryRow")
    if root in ("TIME", "TIMESTAMP"):
        precision = int(p) if p is not None else (0 if root == "TIME" else 6)
        if precision > 9:
            raise InvalidArgumentError(f"invalid type {text!r}: precision must be 0..9")
        return _Type(root, precision)
    return _Type(root)


def _bitset_width(arity: int) -> int:
    """Bytes of the header (RowKind byte + null bits), ``calculateBitSetWidthInBytes``."""
    return (arity + 71) // 64 * 8


def _split_time(value: int, units_per_second: int) -> tuple[int, int]:
    """(epoch millis, nano of millisecond) of ``value``, floored like Java's Timestamp."""
    if units_per_second <= 1000:
        return value * (1000 // units_per_second), 0
    per_milli = units_per_second // 1000
    millis, rest = divmod(value, per_milli)
    return millis, rest * (10**6 // per_milli)


def _join_time(millis: int, nano: int, units_per_second: int) -> int:
    """Inverse of :func:`_split_time` (floors to the unit)."""
    if units_per_second <= 1000:
        return millis // (1000 // units_per_second)
    per_milli = units_per_second // 1000
    return millis * per_milli + nano // (10**6 // per_milli)


# ---------------------------------------------------------------------------------------------
# encode


def encode(values: Sequence[Any], types: Sequence[str], *, reserve_nulls: bool = False) -> bytes:
    """Paimon's ``serializeBinaryRow`` of ``values``: int32 BE arity + the BinaryRow bytes.

    ``reserve_nulls=False`` gives Java 0.9 ``InternalRowSerializer`` bytes (stats rows);
    ``True`` those of Java's generated projections (see the module docstring).
    Raises InvalidArgumentError for a bad type string, a value count different from the type
    count, or a value that does not fit its type.
    """
    return _row_encoder(tuple(types), reserve_nulls)(values)


_ZERO_SLOT = bytes(8)
_OFFSET = struct.Struct("<I")


@lru_cache(maxsize=1024)
def _row_encoder(types: tuple[str, ...], reserve_nulls: bool) -> Callable[[Sequence[Any]], bytes]:
    """:func:`encode` for one row type, its per-type work done once (manifests encode
    thousands of rows of a few row types)."""
    parsed = [_parse_type(t) for t in types]
    n = len(parsed)
    width = _bitset_width(n)
    prefix = struct.pack(">i", n)
    fields = [_field_encoder(t) for t in parsed]
    null_chunks = [bytes(t.chunk_size if reserve_nulls else 0) for t in parsed]
    fixed_size = width + 8 * n

    def encode_row(values: Sequence[Any]) -> bytes:
        if len(values) != n:
            raise InvalidArgumentError(f"{len(values)} values for {n} types {list(types)}")
        nulls = 0
        slots = []
        chunks = []
        var_size = 0
        for i, value in enumerate(values):
            if value is None:
                nulls |= 1 << (i + 8)
                slot, chunk = _ZERO_SLOT, null_chunks[i]
            else:
                try:
                    slot, chunk = fields[i](value)
                except InvalidArgumentError as e:
                    raise InvalidArgumentError(f"field {i} ({types[i]}): {e}") from None
            if chunk:  # slot bytes 4..7 = offset of the chunk
                slot = slot[:4] + _OFFSET.pack(fixed_size + var_size)
                chunks.append(chunk)
                var_size += len(chunk)
            slots.append(slot)
        return b"".join([prefix, nulls.to_bytes(width, "little"), *slots, *chunks])

    return encode_row


def _field_encoder(t: _Type) -> Callable[[Any], tuple[bytes, bytes]]:
    """(slot, chunk) of a non-null value of ``t``: a fast path for plain ints, floats and
    short strings, :func:`_encode_value` (with its checks and errors) for the rest."""
    fmt = _FIXED_FORMAT.get(t.root)
    if fmt is not None and t.root not in ("BOOLEAN", "TIME"):
        packer = struct.Struct(fmt + f"{8 - struct.calcsize(fmt)}x")
        exact = float if t.root in ("FLOAT", "DOUBLE") else int

        def fixed(value: Any) -> tuple[bytes, bytes]:
            if type(value) is exact or (exact is float and type(value) is int):
                try:
                    return packer.pack(value), b""
                except (struct.error, OverflowError):
                    pass  # the general path raises the error
            return _encode_value(t, value)

        return fixed
    if t.root == "STRING":

        def string(value: Any) -> tuple[bytes, bytes]:
            if type(value) is str and value.isascii():
                return _encode_bytes(value.encode())
            return _encode_value(t, value)

        return string
    return lambda value: _encode_value(t, value)


def _encode_value(t: _Type, value: Any) -> tuple[bytes, bytes]:
    """(slot, variable-part chunk) of a non-null value; a chunk's slot takes its offset."""
    if t.root == "NESTED":
        raise InvalidArgumentError("a nested value can only be null in a BinaryRow here")
    _check_kind(t, value)
    if t.root == "STRING":
        try:
            return _encode_bytes(value.encode("utf-8"))
        except UnicodeEncodeError as e:
            raise InvalidArgumentError(f"string not encodable as UTF-8: {e}") from None
    if t.root == "BYTES":
        return _encode_bytes(bytes(value))
    if t.root == "DECIMAL":
        return _encode_decimal(t, int(value))
    if t.root in ("TIME", "TIMESTAMP"):
        millis, nano = _split_time(int(value), t.units_per_second)
        if t.root == "TIME" or t.precision <= 3:
            return _pack(_FIXED_FORMAT.get(t.root, "<q"), millis), b""
        return struct.pack("<I", nano) + bytes(4), _pack("<q", millis)
    return _pack(_FIXED_FORMAT[t.root], value), b""


def _check_kind(t: _Type, value: Any) -> None:
    if not isinstance(value, _ACCEPTS.get(t.root, _INTS)) or (
        isinstance(value, bool) and t.root != "BOOLEAN"
    ):
        raise InvalidArgumentError(f"{type(value).__name__} value {value!r} for {t.root}")


def _pack(fmt: str, value: Any) -> bytes:
    """``value`` packed by ``fmt`` into the low bytes of a zeroed 8-byte slot."""
    try:
        return struct.pack(fmt, value).ljust(8, b"\0")
    except (struct.error, OverflowError) as e:
        raise InvalidArgumentError(f"value {value!r} out of range ({e})") from None


def _encode_bytes(data: bytes) -> tuple[bytes, bytes]:
    n = len(data)
    if n <= 7:
        return data.ljust(7, b"\0") + bytes([0x80 | n]), b""
    return struct.pack("<I", n) + bytes(4), data + bytes(-n % 8)


def _encode_decimal(t: _Type, unscaled: int) -> tuple[bytes, bytes]:
    if abs(unscaled) >= 10**t.precision:
        raise InvalidArgumentError(f"unscaled {unscaled} has more than {t.precision} digits")
    if t.precision <= 18:
        return _pack("<q", unscaled), b""
    size = (unscaled if unscaled >= 0 else ~unscaled).bit_length() // 8 + 1  # Java toByteArray
    chunk = unscaled.to_bytes(size, "big", signed=True).ljust(16, b"\0")
    return struct.pack("<I", size) + bytes(4), chunk


# ---------------------------------------------------------------------------------------------
# decode


def decode(data: bytes | memoryview, types: Sequence[str]) -> tuple[Any, ...]:
    """Values of a ``serializeBinaryRow`` blob (inverse of :func:`encode`).

    Raises CorruptMetadataError when the bytes are not a BinaryRow of ``types`` (arity differs,
    truncated, a header bit or a value outside its type, an offset outside the row, bad UTF-8);
    UnsupportedFeatureError for a non-null nested value; InvalidArgumentError for a bad type.
    """
    parsed = [_parse_type(t) for t in types]
    buf = bytes(data)
    if len(buf) < 4:
        raise CorruptMetadataError(f"BinaryRow of {len(buf)} bytes has no arity prefix")
    arity = int.from_bytes(buf[:4], "big", signed=True)
    if arity != len(parsed):
        raise CorruptMetadataError(f"BinaryRow has arity {arity}, expected {len(parsed)} fields")
    row = buf[4:]
    width = _bitset_width(arity)
    if len(row) < width + 8 * arity:
        raise CorruptMetadataError(f"BinaryRow of arity {arity} truncated to {len(row)} bytes")
    if row[0] > 3 or int.from_bytes(row[:width], "little") >> (8 + arity):
        raise CorruptMetadataError(f"BinaryRow header {row[:width].hex()} bad for arity {arity}")
    values: list[Any] = []
    for i, t in enumerate(parsed):
        if row[(i + 8) >> 3] >> ((i + 8) & 7) & 1:
            values.append(None)
            continue
        try:
            values.append(_decode_value(t, row, width + 8 * i, width + 8 * arity))
        except CorruptMetadataError as e:
            raise CorruptMetadataError(f"BinaryRow field {i} ({types[i]}): {e}") from None
    return tuple(values)


def _decode_value(t: _Type, row: bytes, pos: int, var_start: int) -> Any:
    """The non-null value in the slot at ``pos``; chunks must lie in ``row[var_start:]``."""
    slot = row[pos : pos + 8]
    word = int.from_bytes(slot, "little")
    if t.root == "NESTED":
        raise UnsupportedFeatureError("non-null nested value in a BinaryRow (stats are null)")
    if t.root in ("STRING", "BYTES"):
        return _decode_bytes(t, row, word, var_start)
    if t.root == "DECIMAL":
        return _decode_decimal(t, row, word, var_start)
    if t.root == "TIMESTAMP" and t.precision > 3:
        nano = word & 0xFFFFFFFF
        if nano >= 10**6:
            raise CorruptMetadataError(f"nano of millisecond {nano} out of range")
        millis = int.from_bytes(_chunk(row, word >> 32, 8, var_start), "little", signed=True)
        return _join_time(millis, nano, t.units_per_second)
    value = struct.unpack_from(_FIXED_FORMAT.get(t.root, "<q"), slot)[0]  # compact TIMESTAMP: q
    if t.root in ("TIME", "TIMESTAMP"):
        return _join_time(value, 0, t.units_per_second)
    if t.root == "BOOLEAN" and slot[0] > 1:
        raise CorruptMetadataError(f"boolean byte {slot[0]}")
    return value


def _chunk(row: bytes, offset: int, size: int, var_start: int) -> bytes:
    if offset < var_start or offset + size > len(row):
        where = f"the variable part [{var_start}, {len(row)})"
        raise CorruptMetadataError(f"{size} bytes at offset {offset} outside {where}")
    return row[offset : offset + size]


def _decode_bytes(t: _Type, row: bytes, word: int, var_start: int) -> str | bytes:
    if word >> 63:
        size = word >> 56 & 0x7F
        if size > 7:
            raise CorruptMetadataError(f"inline length {size} > 7")
        data = word.to_bytes(8, "little")[:size]
    else:
        data = _chunk(row, word >> 32, word & 0xFFFFFFFF, var_start)
    if t.root == "BYTES":
        return data
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise CorruptMetadataError(f"string is not UTF-8: {e}") from None


def _decode_decimal(t: _Type, row: bytes, word: int, var_start: int) -> int:
    if t.precision <= 18:
        value = word - (word >> 63 << 64)
    else:
        size = word & 0xFFFFFFFF
        if not 1 <= size <= 16:
            raise CorruptMetadataError(f"decimal of {size} bytes")
        value = int.from_bytes(_chunk(row, word >> 32, size, var_start), "big", signed=True)
    if abs(value) >= 10**t.precision:
        raise CorruptMetadataError(f"unscaled {value} has more than {t.precision} digits")
    return value


# ---------------------------------------------------------------------------------------------
# Hashing, one row

_M32 = 0xFFFFFFFF
_C1, _C2, _C3, _F1, _F2 = 0xCC9E2D51, 0x1B873593, 0xE6546B64, 0x85EBCA6B, 0xC2B2AE35
_SEED = 42


def _mix(h: int, k: int) -> int:
    k = k * _C1 & _M32
    k = (k << 15 | k >> 17) & _M32
    h ^= k * _C2 & _M32
    h = (h << 13 | h >> 19) & _M32
    return (h * 5 + _C3) & _M32


def hash_row(row: bytes) -> int:
    """Paimon's ``BinaryRow.hashCode()`` of ``row`` (BinaryRow bytes without the arity prefix)
    as a signed int32. Raises InvalidArgumentError if the length is not a multiple of 4."""
    if len(row) % 4:
        raise InvalidArgumentError(f"BinaryRow of {len(row)} bytes is not word aligned")
    h = _SEED
    for (word,) in struct.iter_unpack("<I", row):
        h = _mix(h, word)
    h ^= len(row)
    h = (h ^ h >> 16) * _F1 & _M32
    h = (h ^ h >> 13) * _F2 & _M32
    h ^= h >> 16
    return h - (h >> 31 << 32)
