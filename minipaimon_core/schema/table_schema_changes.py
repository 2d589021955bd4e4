"""The schema changes of a table handle (:class:`SchemaChanges`, a base of ``Table``): each
commits a new schema file (minipaimon_core.schema.schema_evolution) and reloads the handle."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

from . import schema_evolution

if TYPE_CHECKING:
    from ..format.layout import TableLayout
    from ..io.fileio import FileIO


class SchemaChanges:
    """Schema evolution on a handle with ``io``, ``layout`` and ``refresh()``."""

    io: FileIO
    layout: TableLayout

    def refresh(self) -> SchemaChanges:
        """Reload the current schema (``Table.refresh``)."""
        raise NotImplementedError

    def add_column(self, name: str, arrow_type: pa.DataType, after: str | None = None) -> None:
        """Add a nullable column (at the end, or after ``after``). Raises SchemaMismatchError."""
        schema_evolution.add_column(self.io, self.layout, name, arrow_type, after)
        self.refresh()

    def rename_column(self, old: str, new: str) -> None:
        """Rename a column (keeps its field id). Raises SchemaMismatchError, InvalidArgumentError."""
        schema_evolution.rename_column(self.io, self.layout, old, new)
        self.refresh()

    def drop_column(self, name: str) -> None:
        """Drop a non-key column. Raises SchemaMismatchError, InvalidArgumentError."""
        schema_evolution.drop_column(self.io, self.layout, name)
        self.refresh()

    def alter_column_type(self, name: str, arrow_type: pa.DataType) -> None:
        """Widen a column's type. Raises SchemaMismatchError if the change is not safe."""
        schema_evolution.alter_column_type(self.io, self.layout, name, arrow_type)
        self.refresh()

    def set_options(self, updates: dict[str, str | None]) -> None:
        """Set (None: remove) table options. Raises UnsupportedOptionError, InvalidArgumentError."""
        schema_evolution.set_options(self.io, self.layout, updates)
        self.refresh()
