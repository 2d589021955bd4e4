"""Commit messages and the pure steps the committer applies to them (the conflict rules
are in :mod:`minipaimon_core.conflicts`).

A :class:`CommitMessage` is what one writer hands the committer for one (partition, bucket):
new files, compaction before/after, changelog files. It is picklable and small.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec
import numpy as np

from .dynamic.sets import distinct
from .format.manifest_file import FILE_SOURCE_COMPACT, DataFileMeta, ManifestEntry
from .kinds import CommitKind, EntryKind


class CommitMessage(msgspec.Struct, frozen=True):
    partition: list[Any]
    partitionPath: str
    bucket: int
    totalBuckets: int
    # The snapshot the writer's sequence numbers start on (primary-key files; None: unknown,
    # so a commit checks its numbers against the whole retained history of the bucket).
    baseSnapshotId: int | None = None
    newFiles: list[DataFileMeta] = []
    compactBefore: list[DataFileMeta] = []
    compactAfter: list[DataFileMeta] = []
    changelogFiles: list[DataFileMeta] = []
    # Append tables with deletion vectors (minipaimon_core.append_vectors): rows of live
    # files of this bucket the message deletes (positions by file name), and the fingerprint
    # of each file's vector when the writer read the file (it must still be that vector).
    deletedRows: dict[str, list[int]] = {}
    vectorsRead: dict[str, int] = {}
    # Dynamic-bucket tables (minipaimon_core.dynamic): the distinct hashes of the keys this
    # message places in its bucket, sorted, little-endian: Paimon's int32 key hash (what the
    # bucket's HASH index holds) for HASH_DYNAMIC tables, a 64-bit hash (uint64) of the key
    # for cross-partition ones. Keys a cross-partition write only retracts here are not in it.
    keyHashes: bytes = b""

    def key_hashes(self, dtype: Any) -> np.ndarray:
        """:attr:`keyHashes` as an array of ``dtype`` (np.int32 or np.uint64)."""
        return np.frombuffer(self.keyHashes, dtype=np.dtype(dtype).newbyteorder("<")).astype(dtype)

    def entry(self, kind: int, file: DataFileMeta) -> ManifestEntry:
        return ManifestEntry(kind, tuple(self.partition), self.bucket, self.totalBuckets, file)


def placed_bytes(parts: Sequence[np.ndarray]) -> bytes:
    """:attr:`CommitMessage.keyHashes` of the hash arrays ``parts`` (b"" for none)."""
    if not parts:
        return b""
    hashes = distinct(np.concatenate(parts))
    return hashes.astype(hashes.dtype.newbyteorder("<")).tobytes()


def split_kinds(messages: Sequence[CommitMessage]) -> tuple[list[CommitMessage], list[CommitMessage]]:
    """(new-file parts, compaction parts) of ``messages``, each part only where non-empty.

    A changelog file goes with the change that produced it: a writer's (``input``
    producer) with the new files, into the APPEND/OVERWRITE snapshot; a compaction's
    (``fileSource`` COMPACT: ``lookup`` / ``full-compaction``) with the COMPACT snapshot.
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


def place_append_files(files: list[DataFileMeta], next_seq: int) -> tuple[list[DataFileMeta], int]:
    """Append files numbered on from ``next_seq`` (their rows have no sequence column; the
    range orders append compaction); returns them and the next free number."""
    out = []
    for f in files:
        rows = f.maxSequenceNumber - f.minSequenceNumber + 1
        out.append(msgspec.structs.replace(f, minSequenceNumber=next_seq, maxSequenceNumber=next_seq + rows - 1))
        next_seq += rows
    return out, next_seq


class CommitEntries(msgspec.Struct, frozen=True):
    """The manifest entries of one snapshot and the sequence number after it."""

    entries: list[ManifestEntry]
    changelog: list[ManifestEntry]
    next_sequence: int


def entries_for(kind: str, messages: Sequence[CommitMessage], next_seq: int,
                overwritten: Sequence[ManifestEntry] = (), primary_key: bool = True) -> CommitEntries:
    """The entries of a snapshot of ``kind`` for ``messages`` on a base whose next sequence
    number is ``next_seq`` (pure; the committer writes them).

    APPEND / OVERWRITE: the new files and writer changelog files ADDed, after DELETEs of
    ``overwritten`` (the live files an overwrite replaces); primary-key files keep the
    numbers in their rows (the committer moved them above ``next_seq`` where needed), append
    files are numbered from ``next_seq`` (:func:`place_append_files`). COMPACT:
    ``compactBefore`` DELETEd, ``compactAfter`` and changelog ADDed as they are. The next
    number is one above the highest the snapshot holds.
    """
    if kind == CommitKind.COMPACT:
        return _compaction_entries(messages, next_seq)
    entries = [ManifestEntry(EntryKind.DELETE, e.partition, e.bucket, e.totalBuckets, e.file)
               for e in overwritten]
    changelog: list[ManifestEntry] = []
    for m in messages:
        files = m.newFiles
        if primary_key:
            top = max((f.maxSequenceNumber for f in (*m.newFiles, *m.changelogFiles)), default=-1)
            next_seq = max(next_seq, top + 1)
        else:
            files, next_seq = place_append_files(list(m.newFiles), next_seq)
        entries += [m.entry(EntryKind.ADD, f) for f in files]
        changelog += [m.entry(EntryKind.ADD, f) for f in m.changelogFiles]
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
