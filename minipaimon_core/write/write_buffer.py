"""The write buffer shared by all buckets of one writer.

Rows are kept per (partition, bucket) under one byte budget (``write-buffer-size``). When
an addition takes a bucket past its own limit, or the whole buffer past the budget, the
buffer hands back what must be written now (the bucket, or the largest buckets), so memory
stays bounded whatever the number of buckets.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

BucketKey = tuple[tuple[Any, ...], int]
Pending = list[tuple[BucketKey, list[pa.Table], int]]
"""Buckets to write now: each one's key, its buffered pieces and their bytes."""


class WriteBuffer:
    def __init__(self, budget: int, bucket_limit: int | None = None) -> None:
        self._budget = budget
        self._bucket_limit = bucket_limit
        self._rows: dict[BucketKey, list[pa.Table]] = {}
        self._bytes: dict[BucketKey, int] = {}
        self._total = 0

    def add(self, key: BucketKey, rows: pa.Table, size: int | None = None) -> Pending:
        """Buffer ``rows`` of bucket ``key`` (``size``: their in-memory bytes when the
        caller knows or estimates them, else ``rows.nbytes``); return the buckets to write now."""
        if size is None:
            size = rows.nbytes
        self._rows.setdefault(key, []).append(rows)
        self._bytes[key] = self._bytes.get(key, 0) + size
        self._total += size
        out: Pending = []
        if self._bucket_limit is not None and self._bytes[key] >= self._bucket_limit:
            out.append(self._pop(key))
        while self._total > self._budget and self._bytes:
            out.append(self._pop(max(self._bytes, key=self._bytes.__getitem__)))
        return out

    def own_last(self, keys: list[BucketKey]) -> None:
        """Copy the last piece buffered of each of ``keys`` still buffered, so it no longer
        holds the table it was sliced from (which may be far larger than the piece)."""
        for key in keys:
            pieces = self._rows.get(key)
            if pieces:
                pieces[-1] = pieces[-1].take(np.arange(pieces[-1].num_rows))

    def drain(self) -> Pending:
        """Everything buffered, emptying the buffer."""
        return [self._pop(key) for key in list(self._rows)]

    def _pop(self, key: BucketKey) -> tuple[BucketKey, list[pa.Table], int]:
        size = self._bytes.pop(key)
        self._total -= size
        return key, self._rows.pop(key), size


def run_bytes(table: pa.Table, bounds: Sequence[int]) -> list[int] | None:
    """The in-memory bytes of each run of rows ``table[bounds[i]:bounds[i + 1]]`` at once:
    fixed-width columns by their width, strings and binaries by their offsets (a slice's
    ``nbytes`` costs ~10 µs: 1,000 partitions of a batch, 10 ms). None when a column is of
    another type (nested, dictionary-encoded) or in several chunks (the caller takes each
    slice's ``nbytes``)."""
    at = np.asarray(bounds, dtype=np.int64)
    rows = np.diff(at)
    total = np.zeros(len(rows), dtype=np.int64)
    for column in table.columns:
        t = column.type
        if pa.types.is_dictionary(t):  # (its width is the indices', not the values')
            return None
        if column.null_count:
            total += (rows + 7) // 8  # the validity bitmap
        if pa.types.is_string(t) or pa.types.is_binary(t) or pa.types.is_large_string(t) \
                or pa.types.is_large_binary(t):
            if column.num_chunks != 1:
                return None
            chunk = column.chunk(0)
            width = 8 if pa.types.is_large_string(t) or pa.types.is_large_binary(t) else 4
            offsets = np.frombuffer(chunk.buffers()[1], dtype=np.int64 if width == 8 else np.int32)
            total += np.diff(offsets[chunk.offset + at]) + width * rows
        else:
            try:
                total += rows * t.bit_width // 8
            except ValueError:  # not of a fixed width (lists, structs, maps)
                return None
    return total.tolist()
