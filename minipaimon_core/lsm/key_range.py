"""Key ranges of primary-key data files: the one ordering and overlap test.

A data file's ``minKey`` / ``maxKey`` are lists of primary-key values. Keys compare as
tuples with ``None`` before every value (it never occurs in a primary key, but stats of
older files may hold it), so ordering never raises. Used by planning (a split whose files
are disjoint reads without merging), the conflict rules (a level >= 1 stays disjoint) and
lookup changelog (which files may hold a key).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..format.manifest_file import DataFileMeta

Key = tuple[tuple[bool, Any], ...]


def key_order(values: Sequence[Any]) -> Key:
    """A sort key of a primary-key value list; ``None`` sorts first."""
    return tuple((v is not None, v) for v in values)


def find_overlap(files: Sequence[DataFileMeta]) -> tuple[str, str] | None:
    """Names of two files whose ``[minKey, maxKey]`` ranges overlap, or None if the ranges
    are pairwise disjoint (touching ends overlap: both files hold that key)."""
    ordered = sorted(files, key=lambda f: key_order(f.minKey))
    for a, b in zip(ordered, ordered[1:]):
        if key_order(a.maxKey) >= key_order(b.minKey):
            return a.fileName, b.fileName
    return None


def overlaps(f: DataFileMeta, low: Key, high: Key) -> bool:
    """Whether file ``f``'s key range meets the closed range ``[low, high]``."""
    return not (key_order(f.maxKey) < low or key_order(f.minKey) > high)


__all__ = ["Key", "find_overlap", "key_order", "overlaps"]
