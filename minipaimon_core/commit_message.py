"""Commit messages and the pure rules the committer applies to them.

A :class:`CommitMessage` is what one writer hands the committer for one (partition, bucket):
new files, compaction before/after, changelog files. It is picklable and small.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import msgspec

from .errors import CommitConflictError
from .manifest import FILE_SOURCE_COMPACT, DataFileMeta, ManifestEntry
from .manifest_io import ManifestIO, live_files
from .schema import TableSchema
from .snapshot import Snapshot


class CommitMessage(msgspec.Struct, frozen=True):
    partition: list[Any]
    partitionPath: str
    bucket: int
    totalBuckets: int
    newFiles: list[DataFileMeta] = []
    compactBefore: list[DataFileMeta] = []
    compactAfter: list[DataFileMeta] = []
    changelogFiles: list[DataFileMeta] = []

    def entry(self, kind: int, file: DataFileMeta) -> ManifestEntry:
        return ManifestEntry(kind, list(self.partition), self.bucket, self.totalBuckets, file)

    @property
    def is_empty(self) -> bool:
        return not (self.newFiles or self.compactBefore or self.compactAfter or self.changelogFiles)


def split_kinds(messages: Sequence[CommitMessage]) -> tuple[list[CommitMessage], list[CommitMessage]]:
    """(new-file parts, compaction parts) of ``messages``, each part only where non-empty.

    A changelog file goes with the change that produced it: a writer's (``input``
    producer) with the new files, into the APPEND/OVERWRITE snapshot, where its writer-local
    sequence numbers are shifted; a compaction's (``fileSource`` COMPACT: ``lookup`` /
    ``full-compaction``) with the COMPACT snapshot, as is, since compaction writes
    effective sequence numbers. Shifting those again would double ``nextSequenceNumber``
    with every compaction.
    """
    news: list[CommitMessage] = []
    compactions: list[CommitMessage] = []
    for m in messages:
        by_compaction = [f for f in m.changelogFiles if f.fileSource == FILE_SOURCE_COMPACT]
        by_writer = [f for f in m.changelogFiles if f.fileSource != FILE_SOURCE_COMPACT]
        if m.newFiles or by_writer:
            news.append(msgspec.structs.replace(m, compactBefore=[], compactAfter=[], changelogFiles=by_writer))
        if m.compactBefore or m.compactAfter or by_compaction:
            compactions.append(msgspec.structs.replace(m, newFiles=[], changelogFiles=by_compaction))
    return news, compactions


def shift_sequence(
    files: list[DataFileMeta], changelog: list[DataFileMeta], next_seq: int
) -> tuple[list[DataFileMeta], list[DataFileMeta], int]:
    """Give one message's new files their place in the table's sequence.

    Writers number rows from 0 in input order (``min/maxSequenceNumber`` are local); the
    committer adds ``next_seq`` as ``sequenceOffset``, so every row of this commit sorts
    after every row committed before it. Returns the shifted files and the next free number.
    """
    top = max((f.maxSequenceNumber for f in (*files, *changelog)), default=-1)

    def shift(f: DataFileMeta) -> DataFileMeta:
        return msgspec.structs.replace(
            f,
            sequenceOffset=next_seq,
            minSequenceNumber=f.minSequenceNumber + next_seq,
            maxSequenceNumber=f.maxSequenceNumber + next_seq,
        )

    return [shift(f) for f in files], [shift(f) for f in changelog], next_seq + top + 1


def conflict_check(
    mio: ManifestIO, latest: Snapshot | None, messages: Sequence[CommitMessage], schema: TableSchema
) -> None:
    """Raise CommitConflictError if compaction ``messages`` cannot apply on ``latest``.

    Rules: every file a message deletes must still be live; after the change, the files of
    one level >= 1 of a bucket must not overlap in key range.
    """
    touched = {(tuple(m.partition), m.bucket) for m in messages}
    live = [e for e in live_files(mio, latest) if (tuple(e.partition), e.bucket) in touched]
    live_names = {(tuple(e.partition), e.bucket, e.file.level, e.file.fileName) for e in live}
    missing = [
        f.fileName
        for m in messages
        for f in m.compactBefore
        if (tuple(m.partition), m.bucket, f.level, f.fileName) not in live_names
    ]
    if missing:
        raise CommitConflictError(
            f"files to delete are no longer in the table {sorted(missing)[:10]}: another "
            "compaction or an overwrite removed them first; retry the compaction on the new "
            "snapshot"
        )
    if not schema.primaryKeys:
        return
    levels: dict[tuple, list[DataFileMeta]] = defaultdict(list)
    removed = {(tuple(m.partition), m.bucket, f.fileName) for m in messages for f in m.compactBefore}
    for e in live:
        if e.file.level >= 1 and (tuple(e.partition), e.bucket, e.file.fileName) not in removed:
            levels[(tuple(e.partition), e.bucket, e.file.level)].append(e.file)
    for m in messages:
        for f in m.compactAfter:
            if f.level >= 1:
                levels[(tuple(m.partition), m.bucket, f.level)].append(f)
    for (partition, bucket, level), files in levels.items():
        overlap = find_overlap(files)
        if overlap:
            raise CommitConflictError(
                f"files {overlap[0]} and {overlap[1]} overlap in key range in level {level} of "
                f"bucket {bucket} of partition {list(partition)}: two compactions ran on the "
                "same bucket at once; retry the compaction"
            )


def find_overlap(files: list[DataFileMeta]) -> tuple[str, str] | None:
    """Names of two files whose [minKey, maxKey] ranges overlap, or None."""
    ordered = sorted(files, key=lambda f: _key(f.minKey))
    for a, b in zip(ordered, ordered[1:]):
        if _key(a.maxKey) >= _key(b.minKey):
            return a.fileName, b.fileName
    return None


def _key(values: list[Any]) -> tuple:
    return tuple((v is not None, v) for v in values)
