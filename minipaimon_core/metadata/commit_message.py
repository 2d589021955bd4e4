"""Commit messages and the pure steps the committer applies to them (the conflict rules
are in :mod:`minipaimon_core.commit.conflicts`).

A :class:`CommitMessage` is what one writer hands the committer for one (partition, bucket):
new files, compaction before/after, changelog files. It is picklable and small.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import msgspec
import numpy as np

from ..errors import InvalidArgumentError
from ..expressions.sets import distinct
from ..format.bucket_names import POSTPONE_BUCKET
from ..format.file_names import bad_data_file_names
from ..format.kinds import CommitKind, EntryKind
from ..format.manifest_file import FILE_SOURCE_COMPACT, MAX_SEQUENCE, DataFileMeta, ManifestEntry
from ..format.table_schema import TableSchema
from ..schema.bucket import postponed
from ..schema.partition import PartitionSpec


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
    # Append tables with deletion vectors (minipaimon_core.commit.append_vectors): rows of live
    # files of this bucket the message deletes (positions by file name), and the fingerprint
    # of each file's vector when the writer read the file (it must still be that vector).
    deletedRows: dict[str, list[int]] = {}
    vectorsRead: dict[str, int] = {}
    # Dynamic-bucket tables (minipaimon_core.dynamic): the distinct hashes of the keys this
    # message places in its bucket, sorted, little-endian: Paimon's int32 key hash (what the
    # bucket's HASH index holds) for HASH_DYNAMIC tables, a 64-bit hash (uint64) of the key
    # for cross-partition ones. Keys a cross-partition write only retracts here are not in it.
    keyHashes: bytes = b""
    # The writer that assigned those keys (each writer places a key in one bucket of a
    # partition, so only messages of several writers can disagree: minipaimon_core.dynamic.
    # reconcile); "" for unknown: reconciled with every other message.
    writerId: str = ""
    # Compactions of primary-key tables with deletion vectors (minipaimon_core.maintenance.
    # compaction): per file of compactBefore, the rows left out because its vector marked
    # them (positions, little-endian uint32); each must still be marked in the snapshot the
    # compaction commits on (minipaimon_core.commit.dv_maintainer.check_applied).
    vectorsApplied: dict[str, bytes] = {}

    def applied_positions(self, file_name: str) -> np.ndarray:
        """:attr:`vectorsApplied` of ``file_name`` as sorted uint32 positions."""
        return np.frombuffer(self.vectorsApplied.get(file_name, b""), dtype="<u4").astype(np.uint32)

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


def check_messages(messages: Sequence[CommitMessage], schema: TableSchema) -> None:
    """Refuse messages the committer must not write (nor ``abort`` delete), before anything
    is written: a file name that is not a plain data file name (a path outside the table), a
    ``partitionPath`` that is not the directory of its ``partition`` in ``schema``, a
    negative bucket, level, size or count or a sequence number out of range, or a file added
    twice (by two messages, or twice by one). A file already live is refused where the
    committer reads the live files anyway (:func:`check_not_live`: compactions, row-level
    changes; :func:`entries_for`: overwrites); a plain append reads none (a commit costs
    O(its files)), and a file it adds again is refused by the next read
    (``manifest_io.live_adds``), never read twice.

    Raises InvalidArgumentError naming the file. Linear in the messages' files."""
    partition_path = PartitionSpec.of(schema).path
    bad = bad_data_file_names([f.fileName for m in messages for f in _files(m)])
    if bad:
        raise InvalidArgumentError(
            f"a commit message names the file {bad[0]!r}, which is not a plain data file name "
            "of the table (a path outside it?); nothing was committed")
    added: set[tuple[tuple[Any, ...], int, str]] = set()
    for m in messages:
        if not isinstance(m.bucket, int) or (m.bucket < 0 and not (m.bucket == POSTPONE_BUCKET and postponed(schema))):
            raise InvalidArgumentError(f"a commit message has the bucket {m.bucket!r}; nothing was committed")
        if partition_path(list(m.partition)) != m.partitionPath:
            raise InvalidArgumentError(
                f"a commit message's partitionPath {m.partitionPath!r} is not the directory of its "
                f"partition {list(m.partition)!r}; nothing was committed")
        for f in _files(m):
            _check_ranges(f)
        stray = set(m.vectorsApplied) - {f.fileName for f in m.compactBefore}
        if stray:
            raise InvalidArgumentError(
                f"a commit message says its compaction left out rows of {sorted(stray)[0]}, which "
                "it does not compact; nothing was committed")
        for f in (*m.newFiles, *m.compactAfter, *m.changelogFiles):
            key = (tuple(m.partition), m.bucket, f.fileName)
            if key in added:
                raise InvalidArgumentError(
                    f"the commit messages add the file {f.fileName} of bucket {m.bucket} twice (the "
                    "same message committed twice?); nothing was committed")
            added.add(key)


def check_not_live(live: Iterable[ManifestEntry], messages: Sequence[CommitMessage]) -> None:
    """Refuse messages that add a file already live in the snapshot they commit on (``live``:
    its live entries, where the committer reads them anyway): it would be read twice.
    Raises InvalidArgumentError."""
    added = {(tuple(m.partition), m.bucket, f.fileName)
             for m in messages for f in (*m.newFiles, *m.compactAfter, *m.changelogFiles)}
    names = {key[2] for key in added}
    for e in live:
        if e.file.fileName in names and (tuple(e.partition), e.bucket, e.file.fileName) in added:
            raise InvalidArgumentError(
                f"a commit message adds the file {e.file.fileName} of bucket {e.bucket}, which is "
                "already in the table (messages committed twice under another identifier?); "
                "nothing was committed")


def _files(m: CommitMessage) -> tuple[DataFileMeta, ...]:
    return (*m.newFiles, *m.compactBefore, *m.compactAfter, *m.changelogFiles)


def _check_ranges(f: DataFileMeta) -> None:
    """What the decoders refuse (format/data_file_meta.py), refused before it is written."""
    for name, value, ok in (
            ("level", f.level, f.level >= 0), ("rowCount", f.rowCount, f.rowCount >= 0),
            ("fileSize", f.fileSize, f.fileSize >= 0), ("schemaId", f.schemaId, f.schemaId >= 0),
            ("minSequenceNumber", f.minSequenceNumber, 0 <= f.minSequenceNumber < MAX_SEQUENCE),
            ("maxSequenceNumber", f.maxSequenceNumber, 0 <= f.maxSequenceNumber < MAX_SEQUENCE)):
        if not ok:
            raise InvalidArgumentError(
                f"a commit message's file {f.fileName} has {name} = {value!r}, out of its range; "
                "nothing was committed")


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
            news.append(msgspec.structs.replace(m, compactBefore=[], compactAfter=[], changelogFiles=by_writer,
                                                vectorsApplied={}))
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
    number is one above the highest the snapshot holds. Raises InvalidArgumentError for a
    new file that is one of ``overwritten``.
    """
    if kind == CommitKind.COMPACT:
        return _compaction_entries(messages, next_seq)
    check_not_live(overwritten, messages)  # an ADD and a DELETE of one file would cancel
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
