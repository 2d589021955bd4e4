"""Which level a newly written file enters, for tables whose readers skip level 0.

Paimon's batch reads of a table with deletion vectors, or with the ``first-row`` merge
engine, skip level-0 files (``batch_scan_skip_level0``): Paimon's writers put new data at
level 0 and make it visible by compacting it into a level >= 1. minipaimon commits a write
of such a table straight into a level >= 1 instead, so it is visible at once to every
reader, and computes the deletion vectors at that commit. A level >= 1 is one sorted run
(its files' key ranges must not overlap, or Paimon's writers refuse the bucket), so each
new file goes to the lowest level from 1 to ``max_level - 1`` where it overlaps no file (the
bottom level, ``max_level``, stays the compactions': what a full compaction writes). A file
that fits nowhere there goes below every level the bucket has (``max_level + 1`` or
deeper): Paimon's readers and writers take a bucket's number of levels as the larger of
``num-levels`` and its deepest file's level + 1, merges order rows by sequence number, not
level, and deletion vectors do not look at levels, so the rows read are the same; the
automatic compaction (at ``num-sorted-run.stop-trigger`` runs even with ``write-only``)
folds those levels back.

A pure function of key ranges, tested as a table of cases.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import msgspec

from ..format.manifest_file import ManifestEntry
from ..lsm.key_range import Key, key_order
from ..metadata.commit_message import CommitMessage

Range = tuple[Key, Key]


def place(new: Sequence[tuple[Sequence[Any], Sequence[Any]]],
          levels: dict[int, list[tuple[Sequence[Any], Sequence[Any]]]], max_level: int) -> list[int]:
    """The level of each new file (``(min key, max key)``, in commit order), given the key
    ranges of the bucket's files by level (module docstring): the lowest free level of
    1..``max_level - 1``, else of the levels below ``max_level``, else a new deepest one."""
    occupied: dict[int, list[Range]] = {
        lvl: [(key_order(lo), key_order(hi)) for lo, hi in ranges] for lvl, ranges in levels.items() if ranges}
    out = []
    for lo_values, hi_values in new:
        lo, hi = key_order(lo_values), key_order(hi_values)
        deepest = max([max_level, *occupied])
        candidates = [*range(1, max_level), *sorted(lvl for lvl in occupied if lvl > max_level), deepest + 1]
        chosen = next(lvl for lvl in candidates
                      if all(hi < a or lo > b for a, b in occupied.get(lvl, [])))
        occupied.setdefault(chosen, []).append((lo, hi))
        out.append(chosen)
    return out


def place_messages(messages: Sequence[CommitMessage], live: Sequence[ManifestEntry],
                   replaced: Sequence[ManifestEntry], max_level: int) -> list[CommitMessage]:
    """``messages`` with each new file in the level :func:`place` gives it, given the live
    entries of their buckets (``replaced``: the live entries the commit removes)."""
    gone = {(tuple(e.partition), e.bucket, e.file.fileName) for e in replaced}
    levels: dict[tuple, dict[int, list]] = defaultdict(lambda: defaultdict(list))
    for e in live:
        if e.file.level > 0 and (tuple(e.partition), e.bucket, e.file.fileName) not in gone:
            levels[(tuple(e.partition), e.bucket)][e.file.level].append((e.file.minKey, e.file.maxKey))
    out = []
    for m in messages:
        if not m.newFiles:
            out.append(m)
            continue
        bucket = levels[(tuple(m.partition), m.bucket)]
        chosen = place([(f.minKey, f.maxKey) for f in m.newFiles], bucket, max_level)
        for f, level in zip(m.newFiles, chosen):
            bucket[level].append((f.minKey, f.maxKey))
        out.append(msgspec.structs.replace(m, newFiles=[
            msgspec.structs.replace(f, level=level) for f, level in zip(m.newFiles, chosen)]))
    return out


__all__ = ["place", "place_messages"]
