"""Java's ``hashCode()`` of the values Paimon's merge functions put in hash sets, over whole
Arrow arrays (NumPy, no loop over values): what orders ``collect`` with ``distinct``
(:mod:`minipaimon_core.lsm.agg_hash_order`). The keys of a keyed ``nested_update`` are
BinaryRows, hashed by :func:`minipaimon_core.format.bucket_hash.bucket_hashes`.

==============================  ====================  ===========================================
Arrow type (Paimon type)        Java object           ``hashCode()``
==============================  ====================  ===========================================
bool (BOOLEAN)                  Boolean               1231 if true, else 1237
int8/16/32 (TINYINT..INT)       Byte, Short, Integer  the value
date32 (DATE), time (TIME)      Integer               days since epoch / milliseconds of the day
int64 (BIGINT)                  Long                  ``(int) (v ^ (v >>> 32))``
float32 (FLOAT)                 Float                 ``floatToIntBits`` (one NaN)
float64 (DOUBLE)                Double                ``(int) (b ^ (b >>> 32))``, ``b`` =
                                                      ``doubleToLongBits`` (one NaN)
string (STRING, CHAR, VARCHAR)  BinaryString          murmur3 of the UTF-8 bytes, seed 42:
                                                      4-byte little-endian words, then each
                                                      remaining byte sign-extended
                                                      (``MurmurHashUtils.hashBytes``)
decimal128 (DECIMAL)            Decimal               ``BigDecimal.hashCode()`` of the value
timestamp (TIMESTAMP[_LTZ])     Timestamp             ``31 * ((int) ms ^ (int) (ms >> 32)) +
                                                      nanoOfMillisecond``
==============================  ====================  ===========================================

A null hashes to 0 (``HashMap.hash(null)``). Other types have no reproducible Java hash
(``byte[]`` hashes by identity) or are compared otherwise by Paimon (nested values).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from .bucket_hash import _fmix, _mix_into

_M32 = np.uint64(0xFFFFFFFF)


def java_hashes(values: pa.Array) -> np.ndarray | None:
    """``hashCode()`` of each value (uint32[n], the int's bits) as Paimon's merge functions
    hold it (see the module), or None for a type without a reproducible one."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    t = values.type
    if pa.types.is_dictionary(t):
        values, t = values.dictionary_decode(), t.value_type
    null = values.is_null().to_numpy(zero_copy_only=False) if values.null_count else None
    out = _hashes(values, t)
    if out is not None and null is not None:
        out[null] = 0
    return out


def _hashes(values: pa.Array, t: pa.DataType) -> np.ndarray | None:
    is_ = pa.types
    if is_.is_boolean(t):
        flags = values.fill_null(False).to_numpy(zero_copy_only=False)
        return np.where(flags, 1231, 1237).astype(np.uint32)
    if is_.is_int8(t) or is_.is_int16(t) or is_.is_int32(t) or is_.is_date32(t):
        return _ints(values.cast(pa.int32()) if not is_.is_date32(t) else values.view(pa.int32()))
    if is_.is_time(t):
        raw = values.view(pa.int32() if t.bit_width == 32 else pa.int64()).fill_null(0).to_numpy()
        per_ms = {"s": 0, "ms": 1, "us": 1000, "ns": 1_000_000}[t.unit]
        millis = raw.astype(np.int64) * 1000 if per_ms == 0 else raw.astype(np.int64) // per_ms
        return millis.astype(np.int32).view(np.uint32)
    if is_.is_int64(t):
        return _long_hash(values.fill_null(0).to_numpy().astype(np.int64).view(np.uint64))
    if is_.is_float32(t):
        v = values.fill_null(0).to_numpy().astype(np.float32)
        return np.where(np.isnan(v), np.uint32(0x7FC00000), v.view(np.uint32)).astype(np.uint32)
    if is_.is_float64(t):
        v = values.fill_null(0).to_numpy().astype(np.float64)
        bits = np.where(np.isnan(v), np.uint64(0x7FF8000000000000), v.view(np.uint64))
        return _long_hash(bits.astype(np.uint64))
    if is_.is_string(t) or is_.is_large_string(t) or is_.is_string_view(t):
        return _string_hashes(values.cast(pa.large_binary()))
    if is_.is_decimal128(t):
        return _decimal_hashes(values, t.scale)
    if is_.is_timestamp(t):
        raw = values.view(pa.int64()).fill_null(0).to_numpy().astype(np.int64)
        per_ms = {"s": 0, "ms": 1, "us": 1000, "ns": 1_000_000}[t.unit]
        if per_ms == 0:
            ms, nano = raw * 1000, np.zeros_like(raw)
        else:
            ms, sub = np.divmod(raw, per_ms)
            nano = sub * (1_000_000 // per_ms)
        folded = (ms.view(np.uint64) & _M32) ^ ((ms >> 32).view(np.uint64) & _M32)
        return (folded.astype(np.uint32) * np.uint32(31) + nano.astype(np.uint32)).astype(np.uint32)
    return None


def _ints(values: pa.Array) -> np.ndarray:
    return values.fill_null(0).to_numpy().astype(np.int32).view(np.uint32)


def _long_hash(bits: np.ndarray) -> np.ndarray:
    """``(int) (v ^ (v >>> 32))`` of 64-bit patterns."""
    return ((bits ^ (bits >> np.uint64(32))) & _M32).astype(np.uint32)


def _string_hashes(values: pa.Array) -> np.ndarray:
    """``BinaryString.hashCode()``: Paimon's ``MurmurHashUtils.hashBytes`` (seed 42) of each
    value's bytes, strings longest first so the ones still hashed at word j are a prefix."""
    n = len(values)
    offsets = np.frombuffer(values.buffers()[1], np.int64)[values.offset:values.offset + n + 1]
    data = values.buffers()[2]
    raw = np.frombuffer(data, np.uint8) if data is not None else np.zeros(0, np.uint8)
    buf = np.concatenate([raw[offsets[0]:offsets[-1]], np.zeros(4, np.uint8)])
    starts = offsets[:-1] - offsets[0]
    sizes = np.diff(offsets)
    if values.null_count:
        sizes = np.where(values.is_null().to_numpy(zero_copy_only=False), 0, sizes)
    words = np.ndarray((len(buf) - 3,), dtype="<u4", buffer=buf, strides=(1,))  # any 4 bytes
    h = np.full(n, 42, np.uint32)
    order = np.argsort(-sizes, kind="stable")
    whole = sizes[order] // 4
    hp = h[order]
    for j in range(int(whole[0]) if n else 0):
        count = int(np.searchsorted(-whole, -j, side="left"))  # rows with more than j words
        part = hp[:count]
        _mix_into(part, words[starts[order[:count]] + 4 * j].astype(np.uint32))
        hp[:count] = part
    h[order] = hp
    tail_at = starts + sizes // 4 * 4
    for k in range(3):  # the bytes after the last whole word, each sign-extended
        rows = np.flatnonzero(sizes % 4 > k)
        if len(rows):
            part = h[rows]
            _mix_into(part, buf[tail_at[rows] + k].view(np.int8).astype(np.int32).view(np.uint32))
            h[rows] = part
    return _fmix(h, sizes.astype(np.uint32)).view(np.uint32)


def _decimal_hashes(values: pa.Array, scale: int) -> np.ndarray:
    """``BigDecimal.hashCode()``: ``31 * m + scale`` where, for an unscaled value ``u`` of
    magnitude below 2**63, ``m`` = ``±((int) (hi * 31 + lo))`` of ``|u|``'s 32-bit halves,
    else ``BigInteger.hashCode()`` = ``sign * fold(31 * h + word)`` over the magnitude's
    32-bit words, most significant first."""
    n = len(values)
    words = np.frombuffer(values.buffers()[1], np.uint64)[2 * values.offset:2 * (values.offset + n)]
    lo, hi = words[0::2].copy(), words[1::2].copy()  # 128-bit little-endian two's complement
    neg = (hi >> np.uint64(63)) == 1
    mlo = np.where(neg, ~lo + np.uint64(1), lo)  # the magnitude
    mhi = np.where(neg, ~hi + (mlo == 0).astype(np.uint64), hi)
    compact = (mhi == 0) & (mlo < np.uint64(1 << 63))
    with np.errstate(over="ignore"):
        temp = ((mlo >> np.uint64(32)) * np.uint64(31) + (mlo & _M32)) & _M32
        small = np.where(neg, (np.uint64(1 << 32) - temp) & _M32, temp)
        big = np.zeros(n, np.uint64)
        for w in (mhi >> np.uint64(32), mhi & _M32, mlo >> np.uint64(32), mlo & _M32):
            big = (big * np.uint64(31) + w) & _M32
        big = np.where(neg, (np.uint64(1 << 32) - big) & _M32, big)
        m = np.where(compact, small, big)
        return ((m * np.uint64(31) + np.uint64(scale)) & _M32).astype(np.uint32)
