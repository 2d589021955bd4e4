"""Paimon's HASH index file (``index/index-<uuid>-<n>``, ``_INDEX_TYPE`` ``HASH``).

The key hashes of one bucket of a dynamic-bucket primary-key table (``bucket`` = -1, keys
within a partition): Paimon's ``BinaryRow.hashCode()`` of each key's trimmed primary key,
the same int32 that picks a fixed bucket (:mod:`.bucket_hash`). The file is nothing but
the hashes::

    int32 BE   hash      (once per distinct hash of the bucket, in any order)

Java 0.9 writes them from an ``IntHashSet`` (``IntFileUtils.writeInts``); its index
manifest entry records the file's size and ``_ROW_COUNT`` = the number of hashes. This
codec writes them sorted ascending and reads any order.
"""

from __future__ import annotations

import numpy as np

from ..errors import CorruptMetadataError

_BE_INT32 = np.dtype(">i4")


def encode(hashes: np.ndarray) -> bytes:
    """The file of ``hashes`` (int32, any order, duplicates dropped): sorted, big-endian."""
    s = np.asarray(hashes, dtype=np.int32)
    if len(s) > 1 and not (s[1:] > s[:-1]).all():
        s = np.sort(s)  # not np.unique: slow (dynamic/sets.py)
        s = s[np.concatenate([[True], s[1:] != s[:-1]])]
    return s.astype(_BE_INT32).tobytes()


def decode(data: bytes, path: str, row_count: int | None = None) -> np.ndarray:
    """The hashes of a HASH index file (int32, in file order).

    Raises CorruptMetadataError if the file is not a whole number of int32s, or holds
    another number of them than its index manifest entry's ``row_count``.
    """
    if len(data) % 4:
        raise CorruptMetadataError(
            f"{path}: a HASH index file of {len(data)} bytes (not a multiple of 4): the file "
            "is damaged")
    hashes = np.frombuffer(data, dtype=_BE_INT32).astype(np.int32)
    if row_count is not None and len(hashes) != row_count:
        raise CorruptMetadataError(
            f"{path}: {len(hashes)} hashes, its index manifest says {row_count}: the file was "
            "replaced or damaged")
    return hashes


__all__ = ["decode", "encode"]
