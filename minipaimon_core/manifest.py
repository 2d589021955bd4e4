"""Manifest files, manifest lists and the data file metadata they carry.

``manifest/manifest-<uuid>`` holds a list of :class:`ManifestEntry` (ADD or DELETE of one
data file); ``manifest/manifest-list-<uuid>`` a list of :class:`ManifestFileMeta`. Both use
the binary envelope of :mod:`minipaimon_core.codec` (msgpack + zstd + checksum).

Stats values live in the *stats domain*: bool, int, float, str, bytes or None (dates as
days, timestamps as integers of their unit, decimals as unscaled integers); see
:mod:`minipaimon_core.stats`.

The structs are frozen, hold sequences as tuples and are not tracked by the garbage collector
(``gc=False``): they can form no reference cycle, and a plan holding 100k decoded entries then
costs the collector nothing (decoding them was ~3x slower with lists and tracked structs).
Build them with tuples too: a list field would compare unequal to the decoded tuple.
"""

from __future__ import annotations

from typing import Any

import msgspec

from . import codec
from .kinds import EntryKind

ADD, DELETE = EntryKind.ADD, EntryKind.DELETE  # the kinds of ManifestEntry.kind
FILE_SOURCE_APPEND = 0
FILE_SOURCE_COMPACT = 1


class SimpleStats(msgspec.Struct, frozen=True, gc=False):
    """Per-column min, max and null count, in the order of the file's schema fields.

    A None min/max means "unknown" (nested types, NaN-bearing floats, long strings).
    """

    minValues: tuple[Any, ...]
    maxValues: tuple[Any, ...]
    nullCounts: tuple[int, ...]


class DataFileMeta(msgspec.Struct, frozen=True, gc=False):
    """One data (or changelog) file of a bucket.

    For primary-key tables the file's ``_SEQUENCE_NUMBER`` column plus ``sequenceOffset``
    is the row's effective sequence; min/max sequence numbers are effective values.
    """

    fileName: str
    fileSize: int
    rowCount: int
    minKey: tuple[Any, ...]
    maxKey: tuple[Any, ...]
    valueStats: SimpleStats
    minSequenceNumber: int
    maxSequenceNumber: int
    schemaId: int
    level: int
    creationTime: int
    # Retraction (-U/-D) rows. Exact for files of tables with deletion vectors (whose reads
    # skip the kind column of a file without any); files of other tables written before
    # 2026-11-23 counted only -D rows.
    deleteRowCount: int = 0
    fileSource: int = FILE_SOURCE_APPEND
    sequenceOffset: int = 0
    embeddedIndex: bytes | None = None


class ManifestEntry(msgspec.Struct, frozen=True, gc=False):
    """ADD or DELETE of one file in one (partition, bucket)."""

    kind: int
    partition: tuple[Any, ...]
    bucket: int
    totalBuckets: int
    file: DataFileMeta

    @property
    def identifier(self) -> tuple[tuple[Any, ...], int, int, str]:
        """What makes two entries name the same file: partition, bucket, level, name."""
        return (tuple(self.partition), self.bucket, self.file.level, self.file.fileName)


class ManifestFileMeta(msgspec.Struct, frozen=True, gc=False):
    """Summary of one manifest file, as stored in a manifest list."""

    fileName: str
    fileSize: int
    numAddedFiles: int
    numDeletedFiles: int
    partitionStats: SimpleStats
    minBucket: int
    maxBucket: int
    minLevel: int
    maxLevel: int
    schemaId: int
    # xxhash64 of the whole manifest file; None in lists written before it existed. A reader
    # compares it with the file it reads: another valid manifest under this name is refused.
    fileDigest: int | None = None
    # Written by a full manifest rewrite (:mod:`minipaimon_core.manifest_merge`): its entries
    # are sorted by partition and, with the list's other clustered manifests, form one run
    # cut at ``manifest.target-file-size``. False in lists written before it existed.
    clustered: bool = False


def encode_entries(entries: list[ManifestEntry]) -> bytes:
    return codec.encode_binary(entries)


def decode_entries(data: bytes, path: str) -> list[ManifestEntry]:
    return codec.decode_binary(data, list[ManifestEntry], path)


def encode_manifest_list(metas: list[ManifestFileMeta]) -> bytes:
    return codec.encode_binary(metas)


def decode_manifest_list(data: bytes, path: str) -> list[ManifestFileMeta]:
    return codec.decode_binary(data, list[ManifestFileMeta], path)
