"""The narrow view of one table that operations work on, instead of the whole ``Table``.

Writing, scanning, compaction, the post-commit follow-ups and maintenance take a
:class:`TableContext` (file IO, layout, the current schema, schema/snapshot/manifest
readers, deletion vectors), so none of them imports :mod:`minipaimon_core.table` and the facade only
delegates. Anything with a ``context()`` method (a ``Table``, a context itself) is a
:class:`HasContext` and is accepted wherever a context is.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from ..format.layout import TableLayout
from ..format.options import Options
from ..io.fileio import FileIO
from ..schema.partition import PartitionSpec
from ..schema.schema import SchemaCache, SchemaManager, TableSchema
from .deletion_vectors import DeletionVectorIO
from .manifest_io import ManifestIO
from .snapshot_manager import SnapshotManager

Clock = Callable[[], int]
"""Epoch milliseconds now: snapshot times and the post-commit options' "now" (injected by
tests, :func:`wall_clock_ms` otherwise)."""


def wall_clock_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True)
class TableContext:
    """One table as of its current schema; cheap to build, taken per operation.

    ``schema`` is the schema current when the context was taken: an operation that must see
    a later schema evolution takes a new context.
    """

    path: str
    io: FileIO
    layout: TableLayout
    schema: TableSchema
    schemas: SchemaCache
    snapshots: SnapshotManager
    manifests: ManifestIO
    vectors: DeletionVectorIO
    clock: Clock = wall_clock_ms

    def context(self) -> TableContext:
        return self

    @classmethod
    def load(cls, path: str, io: FileIO, layout: TableLayout) -> TableContext:
        """The context of the line (main or a branch) of ``layout``, its latest schema read
        now. Raises TableNotFoundError if it has no schema."""
        schemas = SchemaCache(SchemaManager(io, layout))
        manifests = ManifestIO(io, layout, schemas)
        return cls(path, io, layout, schemas.manager.latest(), schemas, SnapshotManager(io, layout),
                   manifests, DeletionVectorIO(io, layout, manifests))

    def on_branch(self, branch: str) -> TableContext:
        """The context of ``branch`` of the same table (this one for its own branch)."""
        if branch == self.layout.branch:
            return self
        return TableContext.load(self.path, self.io, self.layout.on_branch(branch))

    @property
    def options(self) -> Options:
        """The table options, parsed (:class:`~minipaimon_core.format.options.Options`)."""
        return Options(self.schema.options)

    def partition_spec(self) -> PartitionSpec:
        """The partition spec of the current schema (builds partition paths)."""
        return PartitionSpec.of(self.schema)


class HasContext(Protocol):
    """A table handle or a context: whatever can hand out a :class:`TableContext`."""

    def context(self) -> TableContext: ...


__all__ = ["Clock", "HasContext", "TableContext", "wall_clock_ms"]
