"""The conflict rules of a commit: pure functions of (live files of the base, the change).

The committer reads the live files of the snapshot it builds on; the rules below only look
at those in-memory inputs and return a :class:`Conflict` (or None), with no IO, so they are
tested as a table of cases (tests/test_conflict_rules.py), in the shape of delta-rs's
``ConflictChecker``. Appends never conflict and an overwrite replaces whatever is live, so
only compaction changes are checked:

1. ``files_still_live``: every file a compaction deletes is still live in the base (another
   compaction or an overwrite may have removed it first) -> ``ConflictReason.FILES_GONE``;
2. ``levels_disjoint`` (primary-key tables): after the change, the files of each level >= 1
   of a bucket have pairwise disjoint key ranges (two compactions of one bucket at once
   would break it) -> ``ConflictReason.LEVEL_OVERLAP``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import CommitConflictError, ConflictReason
from ..format.manifest_file import DataFileMeta, ManifestEntry
from ..lsm.key_range import find_overlap
from ..metadata.commit_message import CommitMessage, check_not_live


@dataclass(frozen=True)
class Conflict:
    """Why a change cannot apply: a reason kind and a message that names the files."""

    reason: ConflictReason
    message: str

    def error(self) -> CommitConflictError:
        return CommitConflictError(self.message, self.reason)


Rule = Callable[[Sequence[ManifestEntry], Sequence[CommitMessage], bool], "Conflict | None"]


def files_still_live(live: Sequence[ManifestEntry], messages: Sequence[CommitMessage],
                     primary_key: bool) -> Conflict | None:
    """Rule 1: every file a message deletes (``compactBefore``) is live in the base. (And
    no file a message adds is: InvalidArgumentError, commit_message.check_not_live.)"""
    check_not_live(live, messages)
    live_names = {(tuple(e.partition), e.bucket, e.file.level, e.file.fileName) for e in live}
    missing = sorted(
        f.fileName
        for m in messages
        for f in m.compactBefore
        if (tuple(m.partition), m.bucket, f.level, f.fileName) not in live_names
    )
    if not missing:
        return None
    return Conflict(ConflictReason.FILES_GONE, (
        f"files to delete are no longer in the table {missing[:10]}: another compaction or an "
        "overwrite removed them first; retry the compaction on the new snapshot"))


def levels_disjoint(live: Sequence[ManifestEntry], messages: Sequence[CommitMessage],
                    primary_key: bool) -> Conflict | None:
    """Rule 2 (primary-key tables): each level >= 1 of a touched bucket stays disjoint."""
    if not primary_key:
        return None
    touched = {(tuple(m.partition), m.bucket) for m in messages}
    removed = {(tuple(m.partition), m.bucket, f.fileName) for m in messages for f in m.compactBefore}
    levels: dict[tuple[Any, ...], list[DataFileMeta]] = defaultdict(list)
    for e in live:
        part = tuple(e.partition)
        if (e.file.level >= 1 and (part, e.bucket) in touched
                and (part, e.bucket, e.file.fileName) not in removed):
            levels[(part, e.bucket, e.file.level)].append(e.file)
    for m in messages:
        for f in m.compactAfter:
            if f.level >= 1:
                levels[(tuple(m.partition), m.bucket, f.level)].append(f)
    for (partition, bucket, level), files in levels.items():
        overlap = find_overlap(files)
        if overlap:
            return Conflict(ConflictReason.LEVEL_OVERLAP, (
                f"files {overlap[0]} and {overlap[1]} overlap in key range in level {level} of "
                f"bucket {bucket} of partition {list(partition)}: two compactions ran on the "
                "same bucket at once; retry the compaction"))
    return None


RULES: tuple[Rule, ...] = (files_still_live, levels_disjoint)


def check_compaction(live: Sequence[ManifestEntry], messages: Sequence[CommitMessage],
                     primary_key: bool) -> Conflict | None:
    """The first conflict of compaction ``messages`` applied on a base whose live files are
    ``live`` (those of other buckets are ignored), or None if they apply cleanly."""
    for rule in RULES:
        conflict = rule(live, messages, primary_key)
        if conflict is not None:
            return conflict
    return None


__all__ = ["RULES", "Conflict", "check_compaction", "files_still_live", "levels_disjoint"]
