"""minipaimon_core: a lakehouse table format in pure Python, modelled on Apache Paimon."""

from .catalog import Catalog, catalog
from .commit.table_write import TableWrite
from .dml.merge_into import MergeBuilder, MergeResult
from .errors import (
    BranchNotFoundError,
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
from .format.snapshot import Snapshot
from .io.fileio import FileIO, LocalFileIO
from .maintenance.post_commit import AfterCommitResult, after_commit
from .metadata.commit_message import CommitMessage
from .polars_scan import scan_polars
from .read.scan import Split
from .read.table_scan import TableScan
from .table import Table, create_table, open_table

__all__ = [
    "AfterCommitResult",
    "BranchNotFoundError",
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
    "scan_polars",
]
