"""Which table a stream's offsets belong to.

An offset Spark keeps in ``<checkpoint>/offsets/N`` is ``StreamOffset.to_dict()`` plus the
table it was made on: ``tableId`` (``SchemaManager.table_id``: minipaimon's id in the first
schema, else that schema's creation time) and ``tablePath``. Snapshot ids are positions in
one table's history only: a query restarted with its checkpoint on another table, or on a
table dropped and created again at the same path, read them as positions in the wrong
history and skipped rows without a word. :meth:`TableIdentity.check` refuses such an offset
with one error naming both tables. Offsets without ``tableId`` (checkpoints of earlier
versions) are accepted; the stream's next offsets carry the identity.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import minipaimon_core as mp
from minipaimon_core.errors import InvalidArgumentError
from minipaimon_core.schema.schema import SchemaManager

TABLE_ID = "tableId"
TABLE_PATH = "tablePath"


@dataclass(frozen=True)
class TableIdentity:
    """The table a stream reads, as its offsets name it."""

    id: str
    path: str

    @staticmethod
    def of(table: mp.Table) -> TableIdentity:
        """The identity of the table at ``table``'s path now (read, never cached)."""
        return TableIdentity(SchemaManager(table.io, table.layout).table_id(), table.path)

    def stamp(self, offset: Mapping[str, Any]) -> dict[str, Any]:
        """``offset`` as Spark stores it: with this table's identity."""
        return {**offset, TABLE_ID: self.id, TABLE_PATH: self.path}

    def check(self, offset: Mapping[str, Any] | None) -> None:
        """Raise InvalidArgumentError if ``offset`` was made on another table (an offset
        without an identity, or None, passes)."""
        made_on = None if offset is None else offset.get(TABLE_ID)
        if made_on is None or made_on == self.id:
            return
        old_path = offset.get(TABLE_PATH, "?") if offset is not None else "?"
        now = "created again since" if old_path == self.path else "another table"
        raise InvalidArgumentError(
            f"this stream's checkpoint belongs to another table: its offsets were made on the "
            f"table at {old_path} (table id {made_on}), and the table at {self.path} is "
            f"{now} (table id {self.id}); its snapshot ids mean nothing here, so the query "
            "stops rather than skip rows. Start it with a new checkpointLocation (with "
            "'consumer-id' a new query resumes from the consumer's progress)")


__all__ = ["TABLE_ID", "TABLE_PATH", "TableIdentity"]
