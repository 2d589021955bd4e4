"""What the readers of a whole table use of it: :class:`TableView`.

The row diff, the system tables and the streams (``minipaimon_core.diff``,
``minipaimon_core.system_tables``, ``minipaimon_core.stream``) read a whole table: its
files, schemas, snapshots, tags, scans. They are handed the facade
(:class:`minipaimon_core.table.Table`, which matches this protocol structurally; mypy checks
it where the facade hands itself over) and are typed by this protocol, not by the facade,
so none of them imports ``table`` and no import circle goes through it. A reader that needs
more of a table adds the member here, with the facade's signature.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Protocol

import pyarrow as pa

from ..format.layout import TableLayout
from ..format.manifest_file import DataFileMeta
from ..format.snapshot import Snapshot
from ..io.fileio import FileIO
from ..metadata.context import TableContext
from ..metadata.manifest_io import ManifestIO
from ..metadata.snapshot_manager import SnapshotManager
from ..metadata.tags import TagInfo
from ..schema.schema import TableSchema
from .scan import Split
from .table_scan import TableScan


class TableView(Protocol):
    """One table, read only: the members of :class:`minipaimon_core.table.Table` that whole-
    table readers use, with the same meaning (see there)."""

    def context(self) -> TableContext: ...

    @property
    def path(self) -> str: ...

    @property
    def io(self) -> FileIO: ...

    @property
    def layout(self) -> TableLayout: ...

    @property
    def table_schema(self) -> TableSchema: ...

    @property
    def snapshot_manager(self) -> SnapshotManager: ...

    @property
    def manifests(self) -> ManifestIO: ...

    def schema(self) -> pa.Schema: ...

    def primary_keys(self) -> list[str]: ...

    def schema_by_id(self, schema_id: int) -> TableSchema: ...

    def options(self) -> dict[str, str]: ...

    def scan(self, filter: Any = None, columns: Sequence[str] | None = None,
             snapshot_id: int | None = None, tag: str | None = None,
             timestamp_ms: int | None = None) -> TableScan: ...

    def read_split(self, split: Split) -> Iterator[pa.RecordBatch]: ...

    def read_file_rows(self, split: Split, file: DataFileMeta, with_kind: bool = False,
                       with_sequence: bool = False) -> pa.Table: ...

    def snapshots(self) -> list[Snapshot]: ...

    def latest_snapshot(self) -> Snapshot | None: ...

    def snapshot(self, snapshot_id: int) -> Snapshot: ...

    def tag_snapshot(self, name: str) -> Snapshot: ...

    def tag_info(self, name: str) -> TagInfo: ...

    def tags(self) -> dict[str, int]: ...


__all__ = ["TableView"]
