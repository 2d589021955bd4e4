"""Tags of a table or branch (mixed into :class:`minipaimon_core.table.Table`; the files are
:mod:`minipaimon_core.metadata.tags`): a name that pins a snapshot, with Paimon's
``time_retained`` if given (else the table's ``tag.default-time-retained``). Automatic tags
and their expiration are :class:`minipaimon_core.table_post_commit.PostCommitOperations`'.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .errors import SnapshotNotFoundError
from .expressions.times import duration_ms
from .format.layout import TableLayout
from .format.options import Options
from .format.snapshot import Snapshot
from .io.fileio import FileIO
from .maintenance.partition_expire import local_time
from .metadata.context import Clock
from .metadata.tags import TagInfo, TagManager
from .schema.features import check_migrated
from .schema.schema import TableSchema


class TableTags:
    """Creating, renaming, listing and deleting a table's tags."""

    path: str
    io: FileIO
    layout: TableLayout
    table_schema: TableSchema
    clock: Clock

    if TYPE_CHECKING:  # Table's
        def snapshot(self, snapshot_id: int) -> Snapshot: ...
        def latest_snapshot(self) -> Snapshot | None: ...
        def typed_options(self) -> Options: ...

    def create_tag(self, name: str, snapshot_id: int | None = None,
                   time_retained: str | datetime.timedelta | None = None) -> None:
        """Pin a snapshot (latest by default) under ``name``, with Paimon's ``time_retained``
        (``"5 d"``, a timedelta; default the table's ``tag.default-time-retained``, as in
        Paimon): such a tag records now (the table's clock) and the post-commit tag
        expiration deletes it once that time has passed. Raises InvalidArgumentError (bad or
        existing name, bad time), SnapshotNotFoundError."""
        check_migrated(self.table_schema, self.path)
        retained = self.typed_options()["tag.default-time-retained"] if time_retained is None \
            else duration_ms(time_retained, "time_retained")
        snap = self.snapshot(snapshot_id) if snapshot_id is not None else self.latest_snapshot()
        if snap is None:
            raise SnapshotNotFoundError(f"cannot tag an empty table: {self.layout.where} has no snapshot")
        self._tags().create(name, snap, retained, local_time(self.clock()))

    def tag_snapshot(self, name: str) -> Snapshot:
        """The snapshot tag ``name`` pins. Raises SnapshotNotFoundError, InvalidArgumentError."""
        return self._tags().get(name)

    def tag_info(self, name: str) -> TagInfo:
        """Tag ``name`` and its retention. Raises SnapshotNotFoundError, InvalidArgumentError."""
        return self._tags().info(name)

    def rename_tag(self, name: str, new_name: str) -> None:
        """Rename tag ``name`` (Paimon's ``rename_tag``). Raises SnapshotNotFoundError (no
        such tag), InvalidArgumentError (bad name, or ``new_name`` is another tag)."""
        check_migrated(self.table_schema, self.path)
        self._tags().rename(name, new_name)

    def tags(self) -> dict[str, int]:
        """Tag name -> snapshot id."""
        tags = self._tags()
        return {n: tags.get(n).id for n in tags.names()}

    def _tags(self) -> TagManager:
        return TagManager(self.io, self.layout)

    def delete_tag(self, name: str | Sequence[str]) -> None:
        """Delete tag ``name``, or several (a list). Raises SnapshotNotFoundError if one is
        missing (then none is deleted)."""
        check_migrated(self.table_schema, self.path)
        self._tags().delete_all([name] if isinstance(name, str) else list(name))


__all__ = ["TableTags"]
