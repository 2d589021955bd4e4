"""Key ranges of primary-key data files: the one ordering and overlap test.

A data file's ``minKey`` / ``maxKey`` are lists of primary-key values. Keys compare as
tuples with ``None`` before every value (it never occurs in a primary key, but stats of
older files may hold it), so ordering never raises. Used by planning (a split whose files
are disjoint reads without merging), the conflict rules (a level >= 1 stays disjoint),
lookup changelog (which files may hold a key) and the chains of a streamed merge.
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


def disjoint_chains(runs: Sequence[Sequence[DataFileMeta]]) -> list[list[DataFileMeta]]:
    """``runs`` (sorted runs, in merge order) with consecutive runs joined while their
    files' key ranges stay pairwise disjoint: each chain, its files in key order, is still
    one key-sorted sequence of rows, and a streamed merge holds one table per chain, not per
    run (the level-0 files of one large write are one chain). Merge order is kept: the
    runs of a chain come before those of the next."""
    chains: list[list[DataFileMeta]] = []
    ranges: list[tuple[Key, Key]] = []
    for run in runs:
        mine = [(key_order(f.minKey), key_order(f.maxKey)) for f in run]
        if chains and all(hi < a or lo > b for lo, hi in mine for a, b in ranges):
            chains[-1].extend(run)
            ranges.extend(mine)
        else:
            chains.append(list(run))
            ranges = mine
    return [sorted(c, key=lambda f: key_order(f.minKey)) for c in chains]


__all__ = ["Key", "disjoint_chains", "find_overlap", "key_order", "overlaps"]
