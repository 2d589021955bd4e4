"""The one error hierarchy of minipaimon.

Every failure a caller can act on is a subclass of :class:`MiniPaimonError`.  A message
says what was wrong, with which file, option or column, and what to do about it.
"""

from __future__ import annotations

import re
from enum import Enum
from typing import Any


class MiniPaimonError(Exception):
    """Base of every error minipaimon raises on purpose."""


class TableNotFoundError(MiniPaimonError):
    """The path holds no minipaimon table (no schema file)."""


class BranchNotFoundError(TableNotFoundError):
    """The table has no branch of that name (``branch`` option, ``Table.branch``)."""


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
    #: a dynamic-bucket table: keys this commit puts in a bucket are in another bucket (or
    #: partition) now, placed by a commit since this commit's writer started
    BUCKET_ASSIGNMENT = "bucket-assignment"
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


#: What reading a snapshot's files raises when one is damaged or missing, which is also what
#: a reader whose snapshot was expired meanwhile meets: callers tell the two apart by
#: looking whether the snapshot is still there.
DAMAGED_OR_GONE = (CorruptMetadataError, CorruptDataFileError, SnapshotExpiredError)


class InstallationError(MiniPaimonError):
    """minipaimon cannot run where it is needed: the Python that Spark's workers run cannot
    import it (the message names the interpreter, PYSPARK_PYTHON and what to install)."""


class StorageError(MiniPaimonError, OSError):
    """The storage system failed a request, or cannot give the guarantees the format needs
    (e.g. an object store that ignores conditional creates). The message names the path
    and the store, never a credential."""


class CommitOutcomeUnknownError(MiniPaimonError):
    """A commit's snapshot create was sent, but the store did not answer it, nor the looks
    that followed, for the commit's whole time: the commit may or may not be in the table.

    Nothing it wrote was deleted. Do not simply retry (a landed write would be written
    twice): once the store answers, ``Table.commit_landed(error)`` tells (True: it is in the
    table). ``attempt`` is the snapshot that was being created (its ``id``,
    ``commitUser`` and ``commitIdentifier``); a Spark or consumer hand-off with a fixed
    commit user may simply be replayed, its commit identifier makes a replay a no-op.
    """

    def __init__(self, table: str, attempt: Any, cause: BaseException | None = None) -> None:
        self.table = table
        self.attempt = attempt
        super().__init__(
            f"the outcome of the commit of snapshot {attempt.id} to {table} (commit user "
            f"{attempt.commitUser!r}, identifier {attempt.commitIdentifier}) is unknown: the store "
            f"did not answer ({type(cause).__name__ if cause else 'no answer'}: {cause}). Do not "
            "retry blindly: once the store answers, Table.commit_landed(error) says whether it "
            "is in the table")

    def __reduce__(self) -> tuple[Any, ...]:
        return _rebuild_unknown, (str(self), self.table, self.attempt)


def _rebuild_unknown(message: str, table: str, attempt: Any) -> CommitOutcomeUnknownError:
    e = CommitOutcomeUnknownError.__new__(CommitOutcomeUnknownError)
    Exception.__init__(e, message)
    e.table, e.attempt = table, attempt
    return e


_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)([^/\s'\"@]*)@")
#: an Azure container name (also what an abfs(s) URI has before '@': never a credential)
AZURE_CONTAINER = re.compile(r"^(?=.{3,63}$)[a-z0-9]+(-[a-z0-9]+)*$")
# the signature of an Azure shared access signature (SAS) in a URL's query
_SAS_SIGNATURE = re.compile(r"(?i)([?&]sig=)[^&\s'\"]+")


def redact_userinfo(text: str) -> str:
    """``text`` with the ``user:password@`` of every URL in it replaced by ``***@``, and the
    signature of every Azure SAS in it (``sig=…``) by ``***``: what a message, ``repr`` or
    log line shows of a URL a caller gave or a client put in its error (endpoints and paths
    holding credentials are refused where they are given; this keeps any that slip through
    out of sight). An ``abfs(s)://container@account…`` URI keeps its container."""
    def userinfo(m: re.Match[str]) -> str:
        if m.group(1).lower() in ("abfs://", "abfss://") and AZURE_CONTAINER.match(m.group(2)):
            return m.group(0)
        return m.group(1) + "***@"

    return _SAS_SIGNATURE.sub(r"\1***", _USERINFO.sub(userinfo, text))
