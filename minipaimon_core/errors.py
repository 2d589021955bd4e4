"""The one error hierarchy of minipaimon.

Every failure a caller can act on is a subclass of :class:`MiniPaimonError`.  A message
says what was wrong, with which file, option or column, and what to do about it.
"""

from __future__ import annotations

from enum import Enum
from typing import Any


class MiniPaimonError(Exception):
    """Base of every error minipaimon raises on purpose."""


class TableNotFoundError(MiniPaimonError):
    """The path holds no minipaimon table (no schema file)."""


class TableAlreadyExistsError(MiniPaimonError):
    """``create_table`` was asked to create a table where one already exists."""


class SchemaMismatchError(MiniPaimonError):
    """Written data does not fit the table schema (missing, extra or mistyped columns)."""


class ConflictReason(str, Enum):
    """Why a commit did not apply (:attr:`CommitConflictError.reason`)."""

    #: a file the change deletes is no longer live (a concurrent compaction or overwrite)
    FILES_GONE = "files-gone"
    #: the change would leave overlapping key ranges in a level >= 1 of a bucket
    LEVEL_OVERLAP = "level-overlap"
    #: the snapshot a compaction read was expired meanwhile (a newer compaction replaced it)
    BASE_EXPIRED = "base-expired"
    #: a row-level change (delete / update / merge) read rows that a concurrent commit changed
    ROWS_CHANGED = "rows-changed"
    #: other writers won the race for the next snapshot (or schema) id too often
    RETRIES_EXHAUSTED = "retries-exhausted"

    def __str__(self) -> str:
        return str(self.value)


class CommitConflictError(MiniPaimonError):
    """A commit cannot be applied on top of what other writers committed meanwhile.

    ``reason`` tells a lost race (:attr:`ConflictReason.RETRIES_EXHAUSTED`: retrying later
    may succeed) from each logical conflict of the change itself.
    """

    def __init__(self, message: str, reason: ConflictReason) -> None:
        super().__init__(message)
        self.reason = reason

    def __reduce__(self) -> tuple[Any, ...]:  # pickles with its reason (Spark tasks)
        return type(self), (str(self), self.reason)


class CorruptMetadataError(MiniPaimonError):
    """A metadata file is truncated, has a bad checksum or an unknown format version."""


class CorruptDataFileError(MiniPaimonError):
    """A data or changelog file is truncated, empty, altered or not the file its metadata
    describes (size, Parquet structure, page checksums)."""


class SnapshotNotFoundError(MiniPaimonError):
    """The requested snapshot, tag or timestamp names no snapshot of the table."""


class SnapshotExpiredError(SnapshotNotFoundError):
    """The requested snapshot existed once but has been expired."""


class InvalidArgumentError(MiniPaimonError):
    """An argument or input value is not acceptable (e.g. a null primary key)."""


class UnsupportedOptionError(InvalidArgumentError):
    """A table or read option is unknown or has a value it cannot take (the one class for
    every bad option value; a kind of InvalidArgumentError)."""


class UnsupportedFeatureError(MiniPaimonError):
    """The table uses an Apache Paimon feature minipaimon does not implement (a data file
    format other than Parquet, a merge engine or option it lacks, dynamic-bucket writes, a
    newer format version, ...). The message names the feature; nothing was read wrongly or
    written."""


class InstallationError(MiniPaimonError):
    """minipaimon cannot run where it is needed: the Python that Spark's workers run cannot
    import it (the message names the interpreter, PYSPARK_PYTHON and what to install)."""


class StorageError(MiniPaimonError, OSError):
    """The storage system failed a request, or cannot give the guarantees the format needs
    (e.g. an object store that ignores conditional creates). The message names the path
    and the store, never a credential."""
