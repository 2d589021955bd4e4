"""Commit messages and the pure steps the committer applies to them (the conflict rules
are in :mod:`minipaimon_core.conflicts`).

A :class:`CommitMessage` is what one writer hands the committer for one (partition, bucket):
new files, compaction before/after, changelog files. It is picklable and small.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from .kinds import CommitKind, EntryKind
from .manifest import FILE_SOURCE_COMPACT, DataFileMeta, ManifestEntry


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
        return ManifestEntry(kind, tuple(self.partition), self.bucket, self.totalBuckets, file)


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


class CommitEntries(msgspec.Struct, frozen=True):
    """The manifest entries of one snapshot and the sequence number after it."""

    entries: list[ManifestEntry]
    changelog: list[ManifestEntry]
    next_sequence: int


def entries_for(kind: str, messages: Sequence[CommitMessage], next_seq: int,
                overwritten: Sequence[ManifestEntry] = ()) -> CommitEntries:
    """The entries of a snapshot of ``kind`` for ``messages`` on a base whose
    ``nextSequenceNumber`` is ``next_seq`` (pure; the committer writes them).

    APPEND / OVERWRITE: the new files and writer changelog files ADDed with their sequence
    shifted (:func:`shift_sequence`), after DELETEs of ``overwritten`` (the live files an
    overwrite replaces). COMPACT: ``compactBefore`` DELETEd, ``compactAfter`` and changelog
    ADDed as they are (compaction writes effective sequence numbers, never shifted again).
    """
    if kind == CommitKind.COMPACT:
        return _compaction_entries(messages, next_seq)
    entries = [ManifestEntry(EntryKind.DELETE, e.partition, e.bucket, e.totalBuckets, e.file)
               for e in overwritten]
    changelog: list[ManifestEntry] = []
    for m in messages:
        files, cl_files, next_seq = shift_sequence(m.newFiles, m.changelogFiles, next_seq)
        entries += [m.entry(EntryKind.ADD, f) for f in files]
        changelog += [m.entry(EntryKind.ADD, f) for f in cl_files]
    return CommitEntries(entries, changelog, next_seq)


def _compaction_entries(messages: Sequence[CommitMessage], next_seq: int) -> CommitEntries:
    entries: list[ManifestEntry] = []
    changelog: list[ManifestEntry] = []
    for m in messages:
        entries += [m.entry(EntryKind.DELETE, f) for f in m.compactBefore]
        entries += [m.entry(EntryKind.ADD, f) for f in m.compactAfter]
        changelog += [m.entry(EntryKind.ADD, f) for f in m.changelogFiles]
    top = max([next_seq] + [f.maxSequenceNumber + 1 for m in messages
                            for f in (*m.compactAfter, *m.changelogFiles)])
    return CommitEntries(entries, changelog, top)
