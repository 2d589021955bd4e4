"""Bucket assignment: ``bucket = xxhash64(canonical key bytes, seed 0) mod num_buckets``.

The bucket of a row must never change: not across processes, machines, Python versions or
minipaimon versions, so it never uses Python ``hash()``.  It is computed over whole Arrow
arrays with NumPy ``uint64`` arithmetic (:mod:`minipaimon_core.xxh64`) and is bit-identical
to ``xxhash.xxh64_intdigest(canonical_key_bytes(...))`` for every row.

Canonical key encoding (format version 1 -- changing it re-buckets every table):

==============================================  =============================================
key field type                                  bytes
==============================================  =============================================
int8..int64, uint8..uint32, bool (0/1)          8-byte little-endian int64 of the value
uint64                                          its 8 little-endian bytes
date32 / date64                                 int64 of days / milliseconds since the epoch
timestamp[unit] (any tz), time32/64, duration   int64 of the value in its unit
float16 / float32 / float64                     8-byte little-endian float64; -0.0 is written
                                                as 0.0 and every NaN as 0x7FF8000000000000
decimal32/64/128 (precision <= 38)              16-byte little-endian two's complement of the
                                                unscaled value
string / binary (any width or view)             the value's bytes (UTF-8 for strings)
==============================================  =============================================

A one-column key is that field's encoding.  A key of several columns is the concatenation of
its fields' encodings in ``key_columns`` order, where each variable-length (string/binary)
field is preceded by its byte length as a 4-byte little-endian uint32, so that no two
different keys share an encoding.  Null key values are rejected.

Performance: the fixed-width path hashes 1M int64 keys in a few tens of milliseconds;
variable-length keys are hashed for all rows in lock-step (one NumPy step per 32-byte
stripe of the longest key, plus at most seven tail steps), never row by row.
"""

from __future__ import annotations

import decimal
import struct
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from minipaimon_core.errors import InvalidArgumentError
from minipaimon_core.xxh64 import xxh64, xxh64_fixed

__all__ = ["bucket_ids", "canonical_key_bytes", "key_hashes"]

_U64 = np.uint64
_CANONICAL_NAN = 0x7FF8000000000000

# A field encoded for hashing: fixed-width ``(n, w)`` uint8 rows, or variable-length
# ``(data, offsets, lengths)`` with row i at ``data[offsets[i] : offsets[i] + lengths[i]]``.
_Var = tuple[np.ndarray, np.ndarray, np.ndarray]


def bucket_ids(
    table: pa.Table | pa.RecordBatch, key_columns: Sequence[str], num_buckets: int
) -> np.ndarray:
    """Return the bucket of every row: an int32 array of values in ``[0, num_buckets)``.

    Raises:
        InvalidArgumentError: ``num_buckets < 1``, no key columns, a key column is missing or
            of an unsupported type, or a key value is null (the message names the column).
    """
    if num_buckets < 1:
        raise InvalidArgumentError(f"bucket count must be >= 1, got {num_buckets}")
    hashes = key_hashes(table, key_columns)
    if num_buckets & (num_buckets - 1) == 0:  # a power of two: a mask, not a division
        return (hashes & _U64(num_buckets - 1)).astype(np.int32)
    return (hashes % _U64(num_buckets)).astype(np.int32)


def key_hashes(table: pa.Table | pa.RecordBatch, key_columns: Sequence[str]) -> np.ndarray:
    """Return XXH64 (seed 0) of every row's canonical key bytes as a uint64 array.

    Raises:
        InvalidArgumentError: as :func:`bucket_ids`.
    """
    if not key_columns:
        raise InvalidArgumentError("bucketing needs at least one key column")
    fields = [_encode_field(table, name) for name in key_columns]
    n = table.num_rows
    if all(isinstance(f, np.ndarray) for f in fields):
        rows = fields[0] if len(fields) == 1 else np.concatenate(fields, axis=1)
        return xxh64_fixed(np.ascontiguousarray(rows).view("<u8").astype(np.uint64, copy=False))
    if len(fields) == 1:
        data, offsets, lengths = fields[0]
        return xxh64(data, offsets, lengths)
    parts: list[_Var] = []
    for f in fields:
        if isinstance(f, np.ndarray):
            parts.append(_fixed_as_var(f))
        else:
            prefix = f[2].astype("<u4").view(np.uint8).reshape(n, 4)
            parts.append(_fixed_as_var(prefix))
            parts.append(f)
    return xxh64(*_concat_rows(parts, n))


def canonical_key_bytes(values: Sequence[Any], types: Sequence[pa.DataType]) -> bytes:
    """Return the canonical encoding of one key (a per-row reference for tests, not fast).

    ``values`` are Python values as ``pyarrow`` ``to_pylist()`` returns them.

    Raises:
        InvalidArgumentError: a value is None or its type is unsupported.
    """
    parts = []
    for value, typ in zip(values, types, strict=True):
        enc, variable = _reference_encoding(value, typ)
        if variable and len(values) > 1:
            parts.append(struct.pack("<I", len(enc)))
        parts.append(enc)
    return b"".join(parts)


def _reference_encoding(value: Any, typ: pa.DataType) -> tuple[bytes, bool]:
    """One field's canonical bytes, and whether the field is variable-length."""
    if value is None:
        raise InvalidArgumentError("a primary-key value is null")
    if pa.types.is_string(typ) or pa.types.is_large_string(typ) or _is_view(typ, True):
        return value.encode("utf-8"), True
    if _is_binary(typ):
        return bytes(value), True
    if pa.types.is_decimal(typ):
        unscaled = int(decimal.Decimal(value).scaleb(typ.scale))
        return unscaled.to_bytes(16, "little", signed=True), False
    if pa.types.is_floating(typ):
        f = float(value) + 0.0  # -0.0 + 0.0 is 0.0
        return struct.pack("<Q", _CANONICAL_NAN) if f != f else struct.pack("<d", f), False
    if pa.types.is_temporal(typ):
        width = pa.int32() if typ.bit_width == 32 else pa.int64()
        return struct.pack("<q", pa.array([value], typ).view(width)[0].as_py()), False
    if pa.types.is_uint64(typ):
        return struct.pack("<Q", value), False
    if pa.types.is_integer(typ) or pa.types.is_boolean(typ):
        return struct.pack("<q", int(value)), False
    raise InvalidArgumentError(f"unsupported primary-key type {typ}")


# ---------------------------------------------------------------------------- encoding


def _is_view(typ: pa.DataType, string: bool) -> bool:
    check = getattr(pa.types, "is_string_view" if string else "is_binary_view", None)
    return bool(check(typ)) if check is not None else False


def _is_binary(typ: pa.DataType) -> bool:
    return (
        pa.types.is_binary(typ)
        or pa.types.is_large_binary(typ)
        or pa.types.is_fixed_size_binary(typ)
        or _is_view(typ, False)
    )


def _encode_field(table: pa.Table | pa.RecordBatch, name: str) -> np.ndarray | _Var:
    """Encode one key column: ``(n, 8|16)`` uint8 rows, or a variable-length triple."""
    if name not in table.column_names:
        raise InvalidArgumentError(f"primary-key column {name!r} is not in the data")
    col = table.column(name)
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if arr.null_count:
        raise InvalidArgumentError(
            f"primary-key column {name!r} holds {arr.null_count} null value(s); "
            "primary keys must not be null"
        )
    typ = arr.type
    n = len(arr)
    if pa.types.is_decimal(typ):
        if typ.precision > 38:
            raise InvalidArgumentError(f"primary-key column {name!r}: decimal precision > 38")
        if not pa.types.is_decimal128(typ):
            arr = arr.cast(pa.decimal128(typ.precision, typ.scale))
        buf = np.frombuffer(arr.buffers()[1], dtype=np.uint8)
        return buf[arr.offset * 16 : (arr.offset + n) * 16].reshape(n, 16)
    if pa.types.is_string(typ) or pa.types.is_large_string(typ) or _is_view(typ, True):
        return _var_bytes(arr.cast(pa.large_string()) if _is_view(typ, True) else arr)
    if _is_binary(typ):
        needs_cast = pa.types.is_fixed_size_binary(typ) or _is_view(typ, False)
        return _var_bytes(arr.cast(pa.large_binary()) if needs_cast else arr)
    if pa.types.is_floating(typ):
        values = arr.to_numpy(zero_copy_only=False).astype(np.float64)
        values[values == 0.0] = 0.0  # -0.0 too
        bits = values.view(np.uint64)
        bits[np.isnan(values)] = _U64(_CANONICAL_NAN)
        return bits.astype("<u8").view(np.uint8).reshape(n, 8)
    if pa.types.is_temporal(typ):
        arr = arr.view(pa.int32() if typ.bit_width == 32 else pa.int64())
        typ = arr.type
    if pa.types.is_boolean(typ) or pa.types.is_integer(typ):
        values = arr.to_numpy(zero_copy_only=False)
        target = "<u8" if pa.types.is_uint64(typ) else "<i8"
        return values.astype(target).view(np.uint8).reshape(n, 8)
    raise InvalidArgumentError(f"primary-key column {name!r} has unsupported type {typ}")


def _var_bytes(arr: pa.Array) -> _Var:
    """Zero-copy ``(data, offsets, lengths)`` of a (large_)string/(large_)binary array."""
    off_type = np.int64 if arr.type in (pa.large_string(), pa.large_binary()) else np.int32
    bufs = arr.buffers()
    offsets = np.frombuffer(bufs[1], dtype=off_type)[arr.offset : arr.offset + len(arr) + 1]
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else np.empty(0, np.uint8)
    offsets = offsets.astype(np.int64)
    return data, offsets[:-1], np.diff(offsets)


def _fixed_as_var(rows: np.ndarray) -> _Var:
    n, width = rows.shape
    data = np.ascontiguousarray(rows).reshape(-1)
    return data, np.arange(n, dtype=np.int64) * width, np.full(n, width, np.int64)


def _concat_rows(parts: list[_Var], n: int) -> _Var:
    """Concatenate the per-row byte strings of several parts (vectorised scatter)."""
    lengths = np.zeros(n, np.int64)
    for _, _, part_lengths in parts:
        lengths += part_lengths
    offsets = np.zeros(n, np.int64)
    np.cumsum(lengths[:-1], out=offsets[1:])
    out = np.empty(int(lengths.sum()), np.uint8)
    cursor = offsets.copy()
    for data, part_offsets, part_lengths in parts:
        total = int(part_lengths.sum())
        if total:
            starts = np.zeros(n, np.int64)
            np.cumsum(part_lengths[:-1], out=starts[1:])
            within = np.arange(total, dtype=np.int64) - np.repeat(starts, part_lengths)
            out[np.repeat(cursor, part_lengths) + within] = data[
                np.repeat(part_offsets, part_lengths) + within
            ]
        cursor += part_lengths
    return out, offsets, lengths
