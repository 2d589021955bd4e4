"""The write buffer shared by all buckets of one writer.

Rows are kept per (partition, bucket) under one byte budget (``write-buffer-size``). When
an addition takes a bucket past its own limit, or the whole buffer past the budget, the
buffer hands back what must be written now (the bucket, or the largest buckets), so memory
stays bounded whatever the number of buckets.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

BucketKey = tuple[tuple[Any, ...], int]
Pending = list[tuple[BucketKey, list[pa.Table]]]


class WriteBuffer:
    def __init__(self, budget: int, bucket_limit: int | None = None) -> None:
        self._budget = budget
        self._bucket_limit = bucket_limit
        self._rows: dict[BucketKey, list[pa.Table]] = {}
        self._bytes: dict[BucketKey, int] = {}
        self._total = 0

    def add(self, key: BucketKey, rows: pa.Table) -> Pending:
        """Buffer ``rows`` of bucket ``key``; return the buckets to write now."""
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

    def _pop(self, key: BucketKey) -> tuple[BucketKey, list[pa.Table]]:
        self._total -= self._bytes.pop(key)
        return key, self._rows.pop(key)
