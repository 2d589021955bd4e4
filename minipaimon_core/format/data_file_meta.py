"""The structs of a manifest entry: Paimon's ``ManifestEntry``, ``DataFileMeta`` and
``SimpleStats`` (their codecs: :mod:`.manifest_file`, and :mod:`.legacy` for minipaimon's
earlier format).

The structs are frozen, hold sequences as tuples and are not tracked by the garbage
collector (``gc=False``): a plan holding 100k decoded entries costs the collector nothing.
Build them with tuples too: a list field would compare unequal to the decoded tuple.

Their integer fields carry the ranges a table's metadata must keep (msgspec checks them in C
while decoding minipaimon's payload and its earlier format; the Avro records decoder checks
the same); a value outside them is a ``CorruptMetadataError``, never a silently wrong read.
Constructors do not check them (the committer checks what it writes).
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from .file_names import FILE_NAME_PATTERN
from .kinds import EntryKind

ADD, DELETE = EntryKind.ADD, EntryKind.DELETE  # the kinds of ManifestEntry.kind
FILE_SOURCE_APPEND = 0
FILE_SOURCE_COMPACT = 1
# Far below int64 (any write of < 2**62 rows fits above it), far above any real table's
# numbers: a sequence number past it is damage and would overflow the next write's numbers.
MAX_SEQUENCE = 2**62

# The ranges (module docstring; manifest_file._check_record checks the same on Avro records).
NonNegative = Annotated[int, msgspec.Meta(ge=0)]
Sequence_ = Annotated[int, msgspec.Meta(ge=0, lt=MAX_SEQUENCE)]
Kind = Annotated[int, msgspec.Meta(ge=0, le=1)]  # EntryKind: ADD 0, DELETE 1
Bucket = Annotated[int, msgspec.Meta(ge=-2)]  # -2: Paimon's postponed rows (bucket-postpone)
# Names of other files: a plain name (layout.is_file_name), checked only where present.
PlainName = Annotated[str, msgspec.Meta(pattern=rf"\A{FILE_NAME_PATTERN}\Z")]


class SimpleStats(msgspec.Struct, frozen=True, gc=False):
    """Per-column min, max and null count, in the order of the file's schema fields.

    A None min/max means "unknown" (nested types, NaN-bearing floats, long strings, columns
    another writer kept no stats for); a None null count likewise."""

    minValues: tuple[Any, ...]
    maxValues: tuple[Any, ...]
    nullCounts: tuple[NonNegative | None, ...]


class DataFileMeta(msgspec.Struct, frozen=True, gc=False):
    """One data (or changelog) file of a bucket, as Paimon's ``DataFileMeta``.

    ``minKey`` / ``maxKey``: the first and last key of a primary-key file (the primary key
    without the partition columns, Paimon's trimmed key); () for append files. Sequence
    numbers are the rows' own (``_SEQUENCE_NUMBER``); ``sequenceOffset`` is only non-zero
    for files of tables in minipaimon's earlier format, whose rows hold writer-local
    numbers (:mod:`minipaimon_core.format.legacy`)."""

    fileName: str  # checked by check_data_file_names, over a whole manifest at once
    fileSize: NonNegative
    rowCount: NonNegative
    minKey: tuple[Any, ...]
    maxKey: tuple[Any, ...]
    valueStats: SimpleStats
    minSequenceNumber: Sequence_
    maxSequenceNumber: Sequence_
    schemaId: NonNegative
    level: NonNegative
    creationTime: int  # epoch milliseconds (Paimon: the writer's local wall clock)
    # Retraction (-U/-D) rows; None when the writer did not count them.
    deleteRowCount: NonNegative | None = 0
    fileSource: Kind | None = FILE_SOURCE_APPEND  # APPEND 0, COMPACT 1
    sequenceOffset: NonNegative = 0
    embeddedIndex: bytes | None = None
    extraFiles: tuple[PlainName, ...] = ()


class ManifestEntry(msgspec.Struct, frozen=True, gc=False):
    """ADD or DELETE of one file in one (partition, bucket)."""

    kind: Kind
    partition: tuple[Any, ...]
    bucket: Bucket
    totalBuckets: int
    file: DataFileMeta

    @property
    def identifier(self) -> tuple[tuple[Any, ...], int, int, str]:
        """What makes two entries name the same file: partition, bucket, level, name."""
        return (tuple(self.partition), self.bucket, self.file.level, self.file.fileName)


__all__ = ["ADD", "DELETE", "FILE_SOURCE_APPEND", "FILE_SOURCE_COMPACT", "MAX_SEQUENCE", "DataFileMeta",
           "Kind", "ManifestEntry", "NonNegative", "PlainName", "SimpleStats"]
