"""Which level a newly written file enters: above level 0 for tables whose readers skip
level 0, and at the bottom level for a sorted load into key ranges its bucket does not hold.

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

Other primary-key tables (without a ``lookup`` or ``full-compaction`` changelog producer,
which makes new files visible by compacting them) keep new files at level 0, as Paimon's
writers do, except a sorted load (:func:`place_sorted_load`): where the new files of a
bucket are several (the writer rolled its sorted run into files of ``target-file-size``)
and overlap neither each other nor any file the bucket keeps (a load into an empty bucket,
or into a key range nothing holds), they are one sorted run that no merge would change, and
they go straight to the bottom level, where a full compaction would write them. So a large
first load is written once: its level-0 files would each count as a sorted run and the next
compaction would rewrite them all. A write of one file stays at level 0, where compactions
merge it with its neighbours (one small file a commit at the bottom would never be merged). The bottom level stays one sorted run
(nothing there meets them), a key's newer versions stay above its older ones (there are
none), and a concurrent compaction writing into that key range conflicts at commit.

Pure functions of key ranges, tested as tables of cases.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import msgspec

from ..format.bucket_names import POSTPONE_BUCKET
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


def place_sorted_load(new: Sequence[tuple[Sequence[Any], Sequence[Any]]],
                      levels: dict[int, list[tuple[Sequence[Any], Sequence[Any]]]], max_level: int) -> int:
    """The level of all new files of one bucket (``(min key, max key)`` each), given the key
    ranges of the bucket's files by level (level 0 included): the bottom level (``max_level``,
    or the deepest level the bucket has) where the new files are several and overlap neither
    each other nor any file, else 0 (module docstring)."""
    mine = sorted((key_order(lo), key_order(hi)) for lo, hi in new)
    if len(mine) < 2 or any(a_hi >= b_lo for (_, a_hi), (b_lo, _) in zip(mine, mine[1:])):
        return 0
    kept = [(key_order(lo), key_order(hi)) for ranges in levels.values() for lo, hi in ranges]
    if any(not (hi < a or lo > b) for lo, hi in mine for a, b in kept):
        return 0
    return max([max_level, *(lvl for lvl, ranges in levels.items() if ranges)])


def place_messages(messages: Sequence[CommitMessage], live: Sequence[ManifestEntry],
                   replaced: Sequence[ManifestEntry], max_level: int,
                   above_level0: bool = True) -> list[CommitMessage]:
    """``messages`` with each new file in the level :func:`place` gives it
    (``above_level0``), else the level :func:`place_sorted_load` gives each bucket's new
    files, given the live entries of their buckets (``replaced``: the live entries the
    commit removes). A postponed bucket's files (bucket -2) stay at level 0, as Paimon's
    postpone writers leave them: they are no sorted run of a bucket, only rows to replay."""
    gone = {(tuple(e.partition), e.bucket, e.file.fileName) for e in replaced}
    levels: dict[tuple, dict[int, list]] = defaultdict(lambda: defaultdict(list))
    for e in live:
        if (e.file.level > 0 or not above_level0) and (tuple(e.partition), e.bucket, e.file.fileName) not in gone:
            levels[(tuple(e.partition), e.bucket)][e.file.level].append((e.file.minKey, e.file.maxKey))
    if not above_level0:
        return _sorted_loads(messages, levels, max_level)
    out = []
    for m in messages:
        if not m.newFiles or m.bucket == POSTPONE_BUCKET:
            out.append(m)
            continue
        bucket = levels[(tuple(m.partition), m.bucket)]
        chosen = place([(f.minKey, f.maxKey) for f in m.newFiles], bucket, max_level)
        for f, level in zip(m.newFiles, chosen):
            bucket[level].append((f.minKey, f.maxKey))
        out.append(msgspec.structs.replace(m, newFiles=[
            msgspec.structs.replace(f, level=level) for f, level in zip(m.newFiles, chosen)]))
    return out


def _sorted_loads(messages: Sequence[CommitMessage], levels: dict[tuple, dict[int, list]],
                  max_level: int) -> list[CommitMessage]:
    """:func:`place_sorted_load` for each bucket, the new files of all messages together."""
    new: dict[tuple, list] = defaultdict(list)
    for m in messages:
        new[(tuple(m.partition), m.bucket)] += [(f.minKey, f.maxKey) for f in m.newFiles]
    chosen = {key: place_sorted_load(ranges, levels[key], max_level) for key, ranges in new.items()
              if ranges and key[1] != POSTPONE_BUCKET}
    out = []
    for m in messages:
        level = chosen.get((tuple(m.partition), m.bucket), 0)
        out.append(m if not level else msgspec.structs.replace(m, newFiles=[
            msgspec.structs.replace(f, level=level) for f in m.newFiles]))
    return out


__all__ = ["place", "place_messages", "place_sorted_load"]
