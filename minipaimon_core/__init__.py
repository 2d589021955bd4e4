"""minipaimon_core: a lakehouse table format in pure Python, modelled on Apache Paimon."""

from .catalog import Catalog, catalog
from .commit_message import CommitMessage
from .errors import (
    CommitConflictError,
    CommitOutcomeUnknownError,
    ConflictReason,
    CorruptDataFileError,
    CorruptMetadataError,
    InstallationError,
    InvalidArgumentError,
    MiniPaimonError,
    SchemaMismatchError,
    SnapshotExpiredError,
    SnapshotNotFoundError,
    StorageError,
    TableAlreadyExistsError,
    TableNotFoundError,
    UnsupportedFeatureError,
    UnsupportedOptionError,
)
from .fileio import FileIO, LocalFileIO
from .format.snapshot import Snapshot
from .merge_into import MergeBuilder, MergeResult
from .post_commit import AfterCommitResult, after_commit
from .scan import Split
from .table import Table, create_table, open_table
from .table_scan import TableScan
from .table_write import TableWrite

__all__ = [
    "AfterCommitResult",
    "Catalog",
    "CommitConflictError",
    "CommitMessage",
    "CommitOutcomeUnknownError",
    "ConflictReason",
    "CorruptDataFileError",
    "CorruptMetadataError",
    "FileIO",
    "InstallationError",
    "InvalidArgumentError",
    "LocalFileIO",
    "MergeBuilder",
    "MergeResult",
    "MiniPaimonError",
    "SchemaMismatchError",
    "Snapshot",
    "SnapshotExpiredError",
    "SnapshotNotFoundError",
    "Split",
    "StorageError",
    "Table",
    "TableAlreadyExistsError",
    "TableNotFoundError",
    "TableScan",
    "TableWrite",
    "UnsupportedFeatureError",
    "UnsupportedOptionError",
    "catalog",
    "after_commit",
    "create_table",
    "open_table",
]
