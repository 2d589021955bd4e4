"""Paimon's bucket hash over whole Arrow columns: ``BinaryRow.hashCode()`` of each row's
bucket-key BinaryRow (:mod:`.binary_row`), computed with NumPy (no Python loop over rows).

The row's bytes are never built: each key field contributes its 8-byte slot words (the
variable-length parts of strings, binaries and wide decimals follow, 8 bytes at a time),
and the murmur3 mixing of Paimon's ``MurmurHashUtils.hashBytesByWords`` (seed 42) runs on
those words for all rows at once. Strings are hashed longest first, so the rows still being
hashed at each step are a prefix of the array.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from ..errors import InvalidArgumentError
from .binary_row import (
    _C1,
    _C2,
    _C3,
    _F1,
    _F2,
    _M32,
    _SEED,
    _bitset_width,
    _mix,
    _parse_type,
    _Type,
)


@dataclass
class _Column:
    """What one key field contributes to each row: its slot words and its chunk (if any)."""

    null: np.ndarray  # bool[n]
    lo: np.ndarray  # uint32[n] slot bytes 0..3
    hi: np.ndarray  # uint32[n] slot bytes 4..7; replaced by the offset where units > 0
    units: np.ndarray | None = None  # int64[n] 8-byte units of each row's chunk
    fetch: Callable[[Any, int], np.ndarray] | None = None  # (rows, j) -> uint64 unit j


def bucket_hashes(
    columns: Sequence[pa.Array | pa.ChunkedArray], types: Sequence[str]
) -> np.ndarray:
    """``BinaryRow.hashCode()`` of each row's bucket-key BinaryRow made of ``columns`` (int32[n]).

    Nulls of DECIMAL(p > 18) / TIMESTAMP(p > 3) are hashed as Java's bucket-key projection
    writes them (reserved chunk). Raises InvalidArgumentError if the columns and types differ
    in number, the columns in length, or a column cannot hold its type's values.
    """
    return _hashes(columns, types, (_SEED,))[0]


def _hashes(columns: Sequence[pa.Array | pa.ChunkedArray], types: Sequence[str],
            seeds: Sequence[int]) -> list[np.ndarray]:
    """The murmur3 hash of each row's BinaryRow words for each of ``seeds`` (int32 arrays)."""
    parsed = [_parse_type(t) for t in types]
    if not parsed or len(columns) != len(parsed):
        raise InvalidArgumentError(f"{len(columns)} key columns for types {list(types)}")
    arrays = [(c.chunk(0) if c.num_chunks == 1 else c.combine_chunks()) if isinstance(c, pa.ChunkedArray) else c
              for c in columns]
    n = len(arrays[0])
    if any(len(a) != n for a in arrays):
        raise InvalidArgumentError(f"key columns of unequal lengths {[len(a) for a in arrays]}")
    if n <= _BLOCK:
        return _block_hashes(arrays, parsed, types, seeds)
    out = [np.empty(n, dtype=np.int32) for _ in seeds]
    for start in range(0, n, _BLOCK):
        for whole, part in zip(out, _block_hashes([a.slice(start, _BLOCK) for a in arrays], parsed, types, seeds)):
            whole[start:start + len(part)] = part
    return out


# Rows hashed at a time: the working arrays (a few per key column and the mixing's scratch)
# stay small and are reused across blocks, where whole-column arrays would be fresh memory
# (hundreds of MB at 16M rows, each page faulted in: more system time than the hashing).
_BLOCK = 1 << 19


def _block_hashes(arrays: list[pa.Array], parsed: list[_Type], types: Sequence[str],
                  seeds: Sequence[int]) -> list[np.ndarray]:
    """:func:`_hashes` of arrays of equal length (checked)."""
    n = len(arrays[0])
    if n == 0:
        return [np.zeros(0, dtype=np.int32) for _ in seeds]
    cols = [_column(t, arrays[i], f"key column {i} ({types[i]})") for i, t in enumerate(parsed)]
    size: Any = _bitset_width(len(cols)) + 8 * len(cols)
    for col in cols:  # the chunk offsets replace the slot's high word
        if col.units is not None:
            col.hi = np.where(col.units > 0, size, col.hi).astype(np.uint32)
            size = size + col.units * 8
    out = []
    scratch = (np.empty(n, np.uint32), np.empty(n, np.uint32))
    for seed in seeds:
        header = _hash_header(cols, seed)
        h = np.empty(n, np.uint32) if isinstance(header, int) else header
        for i, col in enumerate(cols):  # slots; a constant header mixes into the first word
            _mix_words(h, col.lo, scratch, header if i == 0 and isinstance(header, int) else None)
            _mix_words(h, col.hi, scratch)
        for col in cols:  # the variable part, chunk after chunk
            if col.units is not None and col.fetch is not None:
                _hash_chunks(h, col.units, col.fetch)
        out.append(_fmix(h, np.asarray(size, dtype=np.int64).astype(np.uint32), scratch[1]))
    return out


def _mix_words(h: np.ndarray, word: np.ndarray, scratch: tuple[np.ndarray, np.ndarray],
               state: int | None = None) -> None:
    """h = mixH1(h, mixK1(word)) element-wise, in place, as :func:`_mix_into` but with no
    temporary array (``scratch``: two uint32[n] arrays it overwrites); ``state``: mix into
    that constant state instead of ``h`` (``h`` is then only written). ``word`` may be a
    strided view; it is not changed."""
    k, t = scratch
    np.multiply(word, np.uint32(_C1), out=k, dtype=np.uint32)
    np.right_shift(k, np.uint32(17), out=t)
    np.left_shift(k, np.uint32(15), out=k)
    k |= t
    k *= np.uint32(_C2)
    if state is None:
        h ^= k
    else:
        np.bitwise_xor(k, np.uint32(state), out=h)
    np.right_shift(h, np.uint32(19), out=t)
    np.left_shift(h, np.uint32(13), out=h)
    h |= t
    h *= np.uint32(5)
    h += np.uint32(_C3)


def _mix_into(h: np.ndarray, word: np.ndarray) -> None:
    """h = mixH1(h, mixK1(word)) element-wise, in place (``word`` is not changed)."""
    k = np.multiply(word, np.uint32(_C1), dtype=np.uint32)
    t = k >> np.uint32(17)
    k <<= np.uint32(15)
    k |= t
    k *= np.uint32(_C2)
    h ^= k
    t = h >> np.uint32(19)
    h <<= np.uint32(13)
    h |= t
    h *= np.uint32(5)
    h += np.uint32(_C3)


def _fmix(h: np.ndarray, length: np.ndarray, scratch: np.ndarray | None = None) -> np.ndarray:
    """murmur3's finish of ``h`` (in place) with ``length``; ``scratch``: a uint32 array
    of h's size to use for the shifts (else temporaries)."""
    t = np.empty_like(h) if scratch is None else scratch
    h ^= length
    for shift, factor in ((16, _F1), (13, _F2), (16, None)):
        np.right_shift(h, np.uint32(shift), out=t)
        h ^= t
        if factor is not None:
            h *= np.uint32(factor)
    return h.view(np.int32)


def _hash_header(cols: list[_Column], seed: int) -> np.ndarray | int:
    """Murmur state after the header words: an int (the same for every row) when no key
    value is null, else uint32[n]."""
    n, width = len(cols[0].null), _bitset_width(len(cols))
    if not any(c.null.any() for c in cols):
        state = seed
        for _ in range(width // 4):
            state = _mix(state, 0)
        return state
    bits = np.zeros((n, width // 8), dtype=np.uint64)
    for i, col in enumerate(cols):
        bits[:, (i + 8) // 64] |= col.null.astype(np.uint64) << np.uint64((i + 8) % 64)
    h = np.full(n, seed, dtype=np.uint32)
    for word in bits.view("<u4").T:
        _mix_into(h, word)
    return h


def _hash_chunks(h: np.ndarray, units: np.ndarray, fetch: Callable[[Any, int], np.ndarray]) -> None:
    """Feed each row's chunk (``units[r]`` 8-byte units) into ``h``: longest rows first, so the
    rows still going at unit j are a prefix of that order."""
    most = int(units.max())
    if most == 0:
        return
    key = (most - units).astype(np.uint16 if most < 1 << 16 else np.int64)
    order = np.argsort(key, kind="stable")  # a radix sort for uint16
    active = (len(h) - np.cumsum(np.bincount(units, minlength=most))[:most]).tolist()
    hp = h[order]
    for j, count in enumerate(active):
        unit = fetch(order[:count], j)
        part = hp[:count]
        _mix_into(part, (unit & np.uint64(_M32)).astype(np.uint32))
        _mix_into(part, (unit >> np.uint64(32)).astype(np.uint32))
    h[order] = hp


_BYTE_MASKS = np.array([(1 << 8 * k) - 1 for k in range(9)], dtype=np.uint64)


def _column(t: _Type, arr: pa.Array, name: str) -> _Column:
    """The words of key column ``name`` (Arrow ``arr``, Paimon type ``t``)."""
    try:
        return _column_of(t, arr)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        raise InvalidArgumentError(f"{name}: Arrow {arr.type} values do not fit: {e}") from None
    except InvalidArgumentError as e:
        raise InvalidArgumentError(f"{name}: {e}") from None


_LARGE = {"STRING": pa.large_string(), "BYTES": pa.large_binary()}


def _column_of(t: _Type, arr: pa.Array) -> _Column:
    null = np.zeros(len(arr), bool) if not arr.null_count else arr.is_null().to_numpy(False)
    if t.root in ("STRING", "BYTES"):
        return _bytes_column(arr.cast(_LARGE[t.root]), null)
    if t.root == "DECIMAL":
        return _decimal_column(t, arr.cast(pa.decimal128(t.precision, t.scale)), null)
    if t.root in ("TIME", "TIMESTAMP"):
        return _time_column(t, arr, null)
    if t.root == "BOOLEAN":
        flags = arr.cast(pa.bool_()).fill_null(False).to_numpy(zero_copy_only=False)
        return _slot_column(flags, null)
    target = {"TINYINT": pa.int8(), "SMALLINT": pa.int16(), "INT": pa.int32(), "BIGINT": pa.int64(),
              "FLOAT": pa.float32(), "DOUBLE": pa.float64(), "DATE": pa.date32()}.get(t.root)
    if target is None or (t.root == "DATE") != pa.types.is_date(arr.type):
        raise InvalidArgumentError(f"an Arrow {arr.type} column cannot be a {t.root} key")
    return _slot_column(_values(arr.cast(target)), null)


def _values(arr: pa.Array) -> np.ndarray:
    """The raw values of a fixed-width array (garbage under nulls)."""
    dtype = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[arr.type.byte_width]
    return np.frombuffer(arr.buffers()[1], dtype=dtype)[arr.offset : arr.offset + len(arr)]


def _slot_column(values: np.ndarray, null: np.ndarray) -> _Column:
    """A slot holding ``values`` (numpy, up to 8 bytes each) in its low bytes; null -> 0."""
    values = np.ascontiguousarray(values)
    has_null = bool(null.any())
    if values.dtype.itemsize == 8:  # the two words as strided views: copied only to zero nulls
        words = values.view(np.uint32).reshape(-1, 2)
        lo, hi = words[:, 0], words[:, 1]
        if has_null:
            lo, hi = lo.copy(), hi.copy()
    else:
        lo = values.view(f"u{values.dtype.itemsize}").astype(np.uint32)
        hi = np.zeros(len(values), dtype=np.uint32)
    if has_null:
        lo[null], hi[null] = 0, 0
    return _Column(null, lo, hi)


def _time_column(t: _Type, arr: pa.Array, null: np.ndarray) -> _Column:
    """TIME: int32 millis of day. TIMESTAMP: epoch millis in the slot (p <= 3), or in an 8-byte
    chunk with the nano of millisecond in the slot. Values are floored to the unit of p first."""
    is_time = pa.types.is_time(arr.type)
    if is_time != (t.root == "TIME") or not (is_time or pa.types.is_timestamp(arr.type)):
        raise InvalidArgumentError(f"an Arrow {arr.type} column cannot be a {t.root} key")
    storage = pa.int32() if arr.type.bit_width == 32 else pa.int64()
    raw = arr.view(storage).fill_null(0).to_numpy().astype(np.int64)
    per_milli = {"s": 0, "ms": 1, "us": 1000, "ns": 1_000_000}[arr.type.unit]
    if per_milli == 0:
        if (np.abs(raw + 1) >= (1 << 63) // 1000).any():
            raise InvalidArgumentError(f"{t.root} seconds out of range of epoch milliseconds")
        millis, nano = raw * 1000, np.zeros_like(raw)
    else:
        millis, nano = np.divmod(raw, per_milli)
        nano *= 10**6 // per_milli
    step = 10**9 // t.units_per_second  # the unit of p, in nanoseconds
    if step >= 10**6:
        millis, nano = millis // (step // 10**6) * (step // 10**6), np.zeros_like(nano)
    nano -= nano % step
    if t.root == "TIME":
        if ((millis < -(1 << 31)) | (millis >= 1 << 31)).any():
            raise InvalidArgumentError("TIME out of range of int32 milliseconds")
        return _slot_column(millis.astype(np.int32), null)
    if t.precision <= 3:
        return _slot_column(millis, null)
    chunk, n = np.where(null, 0, millis).astype(np.uint64), len(raw)
    lo = np.where(null, 0, nano).astype(np.uint32)
    return _Column(null, lo, np.zeros(n, np.uint32), np.ones(n, np.int64), lambda r, j: chunk[r])


_SIGNED_BYTE_LIMITS = np.array([1 << 8 * k - 1 for k in range(1, 9)], dtype=np.uint64)


def _decimal_column(t: _Type, arr: pa.Array, null: np.ndarray) -> _Column:
    """Compact: the unscaled int64 in the slot. Else the chunk holds Java's
    ``BigInteger.toByteArray()`` (big-endian, fewest two's-complement bytes), left-aligned."""
    start = 2 * arr.offset
    words = np.frombuffer(arr.buffers()[1], dtype=np.uint64)[start : start + 2 * len(arr)]
    lo, hi = words[0::2].copy(), words[1::2].copy()  # 128-bit little-endian two's complement
    lo[null], hi[null] = 0, 0
    if t.precision <= 18:
        return _slot_column(lo, null)
    neg = hi >> np.uint64(63) == 1
    mlo, mhi = np.where(neg, ~lo, lo), np.where(neg, ~hi, hi)  # magnitude bits, sign dropped
    size = np.where(
        mhi == 0,
        1 + np.searchsorted(_SIGNED_BYTE_LIMITS, mlo, side="right"),
        9 + np.searchsorted(_SIGNED_BYTE_LIMITS[:7], mhi, side="right"),
    )
    # left-align: the chunk, read as a big-endian 128-bit number, is x << 8 * (16 - size)
    shift = (8 * (16 - size)).astype(np.uint64)
    a, big = shift & np.uint64(63), shift >= 64
    c_hi = np.where(big, lo << a, hi << a | (lo >> np.uint64(1)) >> (np.uint64(63) - a))
    c_lo = np.where(big, np.uint64(0), lo << a)
    units = np.stack([c_hi.byteswap(), c_lo.byteswap()], axis=1)  # chunk bytes 0-7, 8-15
    lo, n = np.where(null, 0, size).astype(np.uint32), len(arr)
    return _Column(null, lo, np.zeros(n, np.uint32), np.full(n, 2), lambda r, j: units[r, j])


def _bytes_column(arr: pa.Array, null: np.ndarray) -> _Column:
    """Strings / binaries: inline up to 7 bytes, else an 8-byte padded chunk."""
    n = len(arr)
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int64)[arr.offset : arr.offset + n + 1]
    data = arr.buffers()[2]
    raw = np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, np.uint8)
    buf = np.concatenate([raw[offsets[0] : offsets[-1]], np.zeros(8, dtype=np.uint8)])
    window = np.ndarray((len(buf) - 7,), dtype="<u8", buffer=buf, strides=(1,))  # any 8 bytes
    starts = offsets[:-1] - offsets[0]
    sizes = np.where(null, 0, np.diff(offsets))
    inline = sizes <= 7
    first = window[starts] & _BYTE_MASKS[np.minimum(sizes, 8)]
    mark = (0x80 | sizes).astype(np.uint64) << np.uint64(56)
    slot = np.where(inline, first | mark, sizes.astype(np.uint64))
    slot[null] = 0
    units = np.where(inline, 0, (sizes + 7) // 8)

    def fetch(rows: Any, j: int) -> np.ndarray:
        return window[starts[rows] + 8 * j] & _BYTE_MASKS[np.minimum(sizes[rows] - 8 * j, 8)]

    lo, hi = slot.astype(np.uint32), (slot >> np.uint64(32)).astype(np.uint32)
    return _Column(null, lo, hi, units, fetch)


_SECOND_SEED = 0x5BD1E995


def key_hashes64(columns: Sequence[pa.Array | pa.ChunkedArray], types: Sequence[str]) -> np.ndarray:
    """A 64-bit hash of each row's key (uint64[n]): Paimon's hash in the high half, the same
    murmur3 with another seed in the low half. Equal keys hash alike; distinct keys collide
    with probability about 2**-64 a pair (the hash is no proof of equality)."""
    high, low = (h.view(np.uint32).astype(np.uint64) for h in _hashes(columns, types, (_SEED, _SECOND_SEED)))
    return (high << np.uint64(32)) | low


def buckets(hashes: np.ndarray, num_buckets: int, *, in_place: bool = False) -> np.ndarray:
    """Java ``Math.abs(hash % num_buckets)`` (truncating ``%``) per hash, as int32;
    ``in_place``: int32 ``hashes`` are overwritten with it (no new array).
    Raises InvalidArgumentError if ``num_buckets`` < 1."""
    if num_buckets < 1:
        raise InvalidArgumentError(f"number of buckets must be positive, not {num_buckets}")
    h = np.asarray(hashes)
    wide = h.dtype != np.int32 or num_buckets > np.iinfo(np.int32).max
    if wide:
        h = h.astype(np.int64)
    out = h if in_place or wide else np.empty_like(h)
    np.fmod(h, h.dtype.type(num_buckets), out=out)
    return np.abs(out, out=out).astype(np.int32, copy=False)  # |remainder| < num_buckets: no overflow
