"""XXH64 (seed 0) of many byte strings at once, with NumPy ``uint64`` arithmetic.

An own implementation, bit-identical to ``xxhash.xxh64_intdigest``: all rows advance in
lock-step (one NumPy step per 32-byte stripe of the longest row, plus at most seven tail
steps), in blocks of _BLOCK rows so temporaries stay in the CPU cache; never row by row.
"""

from __future__ import annotations

import numpy as np

__all__ = ["xxh64", "xxh64_fixed"]

_U64 = np.uint64
_P1_INT = 11400714785074694791
_P2_INT = 14029467366897019727
_P1 = _U64(_P1_INT)
_P2 = _U64(_P2_INT)
_P3 = _U64(1609587929392839161)
_P4 = _U64(9650029242287828579)
_P5 = _U64(2870177450012600261)
_V1_INIT = _U64((_P1_INT + _P2_INT) % 2**64)
_V4_INIT = _U64(2**64 - _P1_INT)
_BLOCK = 1 << 15  # rows hashed together: the block's temporaries stay in the CPU cache

def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    """Rotate left in place (``x`` is overwritten and returned)."""
    high = x >> _U64(64 - r)
    x <<= _U64(r)
    x |= high
    return x


def _round(acc: np.ndarray, lane: np.ndarray) -> np.ndarray:
    """XXH64 round: ``rotl(acc + lane * P2, 31) * P1`` (a new array)."""
    out = lane * _P2
    out += acc
    _rotl(out, 31)
    out *= _P1
    return out


def _merge_round(h: np.ndarray, v: np.ndarray) -> np.ndarray:
    h ^= _round(np.zeros_like(v), v)
    h *= _P1
    h += _P4
    return h


def _tail8(h: np.ndarray, lane: np.ndarray) -> np.ndarray:
    h ^= _round(np.zeros_like(lane), lane)
    _rotl(h, 27)
    h *= _P1
    h += _P4
    return h


def _tail4(h: np.ndarray, word: np.ndarray) -> np.ndarray:
    h ^= word * _P1
    _rotl(h, 23)
    h *= _P2
    h += _P3
    return h


def _tail1(h: np.ndarray, byte: np.ndarray) -> np.ndarray:
    h ^= byte * _P5
    _rotl(h, 11)
    h *= _P1
    return h


class _Reader:
    """Little-endian words at arbitrary byte offsets of a buffer, for many offsets at once.

    A word at byte ``p`` is assembled from the two aligned 8-byte words around it, so every
    read is two ``take``s and shifts; the buffer is copied once with 16 zero bytes of padding
    so reads past a value's end stay in bounds (their bytes are masked or unused).
    """

    def __init__(self, data: np.ndarray) -> None:
        padded = np.zeros((len(data) + 23) // 8 * 8, np.uint8)
        padded[: len(data)] = data
        self._bytes = padded
        self._words = padded.view("<u8").astype(np.uint64, copy=False)

    def u64(self, pos: np.ndarray) -> np.ndarray:
        shift = (pos & 7).astype(np.uint64) * _U64(8)
        q = pos >> 3
        low = self._words.take(q) >> shift
        high = self._words.take(q + 1) << (_U64(63) - shift)
        high <<= _U64(1)  # two steps: a shift by 64 is undefined
        low |= high
        return low

    def u32(self, pos: np.ndarray) -> np.ndarray:
        return self.u64(pos) & _U64(0xFFFFFFFF)

    def u8(self, pos: np.ndarray) -> np.ndarray:
        return self._bytes.take(pos).astype(np.uint64)


def xxh64(data: np.ndarray, offsets: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """XXH64 with seed 0 of ``data[offsets[i] : offsets[i] + lengths[i]]`` for every i."""
    reader = _Reader(data)
    out = np.empty(len(lengths), np.uint64)
    for i in range(0, len(lengths), _BLOCK):
        out[i : i + _BLOCK] = _xxh64_block(reader, offsets[i : i + _BLOCK], lengths[i : i + _BLOCK])
    return out


def _xxh64_block(reader: _Reader, offsets: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """XXH64 of one block of rows, all advancing in lock-step.

    One step per 32-byte stripe of the longest value (over the rows still striping), then at
    most three 8-byte, one 4-byte and three 1-byte tail steps over all rows of the block,
    each applied where the row has that tail.
    """
    n = len(lengths)
    stripes = lengths // 32
    h = np.full(n, _P5, dtype=np.uint64)
    long_rows = np.flatnonzero(stripes > 0)
    if len(long_rows):
        v1, v2, v3, v4 = _init_accumulators(len(long_rows))
        base = offsets[long_rows]
        active = np.arange(len(long_rows))  # positions in long_rows still striping
        step = 0
        while len(active):
            pos = base[active] + 32 * step
            v1[active] = _round(v1[active], reader.u64(pos))
            v2[active] = _round(v2[active], reader.u64(pos + 8))
            v3[active] = _round(v3[active], reader.u64(pos + 16))
            v4[active] = _round(v4[active], reader.u64(pos + 24))
            step += 1
            active = active[stripes[long_rows[active]] > step]
        h[long_rows] = _converge(v1, v2, v3, v4)
    h += lengths.astype(np.uint64)
    pos = offsets + stripes * 32
    rest = lengths - stripes * 32
    steps = [(8, reader.u64, _tail8)] * 3 + [(4, reader.u32, _tail4)] + [(1, reader.u8, _tail1)] * 3
    for width, read, mix in steps:
        todo = rest >= width
        if not todo.any():
            continue
        mixed = mix(h.copy(), read(pos))
        if todo.all():
            h = mixed
        else:
            h = np.where(todo, mixed, h)
        step_width = todo * width
        pos += step_width
        rest -= step_width
    return _avalanche(h)


def xxh64_fixed(lanes: np.ndarray) -> np.ndarray:
    """XXH64 with seed 0 of rows that are all ``8 * lanes.shape[1]`` bytes long.

    ``lanes`` is ``(n, k)`` uint64 holding each row's bytes as little-endian words; every
    step works on whole columns of a block, with no masks or gathers.
    """
    out = np.empty(len(lanes), np.uint64)
    for i in range(0, len(lanes), _BLOCK):
        out[i : i + _BLOCK] = _xxh64_fixed_block(lanes[i : i + _BLOCK])
    return out


def _xxh64_fixed_block(lanes: np.ndarray) -> np.ndarray:
    n, k = lanes.shape
    stripes = k // 4
    if stripes:
        v1, v2, v3, v4 = _init_accumulators(n)
        for s in range(stripes):
            v1 = _round(v1, lanes[:, 4 * s])
            v2 = _round(v2, lanes[:, 4 * s + 1])
            v3 = _round(v3, lanes[:, 4 * s + 2])
            v4 = _round(v4, lanes[:, 4 * s + 3])
        h = _converge(v1, v2, v3, v4)
    else:
        h = np.full(n, _P5, dtype=np.uint64)
    h += _U64(8 * k)
    for j in range(4 * stripes, k):
        h = _tail8(h, lanes[:, j])
    return _avalanche(h)


def _init_accumulators(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    return (
        np.full(n, _V1_INIT, dtype=np.uint64),
        np.full(n, _P2, dtype=np.uint64),
        np.zeros(n, dtype=np.uint64),
        np.full(n, _V4_INIT, dtype=np.uint64),
    )


def _converge(v1: np.ndarray, v2: np.ndarray, v3: np.ndarray, v4: np.ndarray) -> np.ndarray:
    h = _rotl(v1.copy(), 1)
    h += _rotl(v2.copy(), 7)
    h += _rotl(v3.copy(), 12)
    h += _rotl(v4.copy(), 18)
    for v in (v1, v2, v3, v4):
        h = _merge_round(h, v)
    return h


def _avalanche(h: np.ndarray) -> np.ndarray:
    h ^= h >> _U64(33)
    h *= _P2
    h ^= h >> _U64(29)
    h *= _P3
    h ^= h >> _U64(32)
    return h
