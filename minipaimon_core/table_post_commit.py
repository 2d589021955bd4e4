"""Tags, and the post-commit options by hand: partition expiration and tags (mixed into
:class:`minipaimon_core.table.Table`; the work is in ``maintenance.partition_expire`` and
``maintenance.tag_auto``, which also run after every commit).

```python
t.expire_partitions(dry_run=True)               # by partition.expiration-time & co
t.expire_partitions(expiration_time="30 d", timestamp_formatter="yyyyMMdd")
t.create_auto_tags(dry_run=True)                # tag.automatic-creation & retention now
t.expire_tags(older_than="7d")                  # tags past their retention (or created before)
```
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .errors import InvalidArgumentError, SnapshotNotFoundError
from .expressions.times import PointInTime, point_in_time_ms
from .format.layout import TableLayout
from .format.options import Options, parse_duration_ms
from .format.snapshot import Snapshot
from .io.fileio import FileIO
from .maintenance import partition_expire, tag_auto
from .maintenance.partition_expire import local_time
from .metadata.context import Clock, TableContext
from .metadata.tags import TagManager
from .schema.features import check_migrated
from .schema.post_commit_options import TagConfig
from .schema.schema import TableSchema


class PostCommitOperations:
    """Tags, and partition expiration and tag automation of a table run by hand."""

    if TYPE_CHECKING:
        path: str
        io: FileIO
        layout: TableLayout
        table_schema: TableSchema
        clock: Clock
        def context(self) -> TableContext: ...
        def snapshot(self, snapshot_id: int) -> Snapshot: ...
        def latest_snapshot(self) -> Snapshot | None: ...
        def typed_options(self) -> Options: ...

    def create_tag(self, name: str, snapshot_id: int | None = None) -> None:
        """Pin a snapshot (latest by default) under ``name``; with the table's
        ``tag.default-time-retained`` the tag expires that long after now, as in Paimon.

        Raises InvalidArgumentError (bad or existing name), SnapshotNotFoundError.
        """
        check_migrated(self.table_schema, self.path)
        snap = self.snapshot(snapshot_id) if snapshot_id is not None else self.latest_snapshot()
        if snap is None:
            raise SnapshotNotFoundError("cannot tag an empty table: it has no snapshot")
        retained = self.typed_options()["tag.default-time-retained"]
        self._tags().create(name, snap, retained, local_time(self.clock()) if retained is not None else None)

    def tag_snapshot(self, name: str) -> Snapshot:
        """The snapshot tag ``name`` pins. Raises SnapshotNotFoundError, InvalidArgumentError."""
        return self._tags().get(name)

    def tags(self) -> dict[str, int]:
        """Tag name -> snapshot id."""
        tags = self._tags()
        return {n: tags.get(n).id for n in tags.names()}

    def _tags(self) -> TagManager:
        return TagManager(self.io, self.layout)

    def delete_tag(self, name: str) -> None:
        """Delete tag ``name``. Raises SnapshotNotFoundError if there is none."""
        check_migrated(self.table_schema, self.path)
        self._tags().delete(name)

    # -- the post-commit options by hand -------------------------------------------------------

    def _changeable(self) -> TableContext:
        ctx = self.context()
        check_migrated(ctx.schema, ctx.path)
        return ctx

    def expire_partitions(self, expiration_time: str | None = None, timestamp_formatter: str | None = None,
                          timestamp_pattern: str | None = None, strategy: str | None = None,
                          dry_run: bool = False) -> partition_expire.PartitionExpireResult:
        """Drop the partitions whose time is older than ``expiration_time`` (``"30 d"``;
        default the table's ``partition.expiration-time``) now, in one OVERWRITE commit, as
        Paimon's ``expire_partitions`` procedure; the other arguments override
        ``partition.timestamp-formatter`` / ``-pattern`` / ``partition.expiration-strategy``.
        ``dry_run``: which would go, nothing changed.

        Raises InvalidArgumentError (no expiration time, unpartitioned table, bad argument),
        UnsupportedOptionError (a formatter minipaimon does not parse as Java does),
        UnsupportedFeatureError (a table minipaimon does not write), CommitConflictError.
        """
        ctx = self._changeable()
        expiration = None
        if expiration_time is not None:
            try:
                expiration = parse_duration_ms(expiration_time)
            except ValueError as e:
                raise InvalidArgumentError(f"expiration_time {expiration_time!r}: {e}") from None
        return partition_expire.expire_partitions(ctx, None, expiration, timestamp_formatter,
                                                  timestamp_pattern, strategy, dry_run)

    def create_auto_tags(self, dry_run: bool = False) -> tag_auto.TagAutoResult:
        """Run the table's automatic tags now as a commit would: create the tags
        ``tag.automatic-creation`` (process-time, watermark) owes, delete those past
        ``tag.num-retained-max`` or their retention. ``dry_run``: what would change.
        Raises InvalidArgumentError (two automatic tags of one snapshot),
        CorruptMetadataError (a damaged tag)."""
        ctx = self._changeable()
        return tag_auto.run(ctx, TagConfig.of(ctx.options), ctx.clock(), dry_run=dry_run)

    def expire_tags(self, older_than: PointInTime | None = None, dry_run: bool = False) -> tag_auto.TagAutoResult:
        """Delete the tags whose retention (``tagCreateTime`` + ``tagTimeRetained``) has
        passed, and with ``older_than`` (an age such as ``"7d"`` or an aware datetime) every
        tag created before it (a tag without a retention by its file's time), as Paimon's
        ``expire_tags`` procedure. ``dry_run``: which would go. Raises InvalidArgumentError."""
        ctx = self._changeable()
        now = ctx.clock()
        cutoff = None if older_than is None else point_in_time_ms(older_than, "older_than", now)
        config = TagConfig.of(ctx.options)
        none = TagConfig("none", config.period, 0, config.dashes, None, None, False, config.watermark_zone)
        return tag_auto.run(ctx, none, now, dry_run=dry_run, older_than_ms=cutoff)


__all__ = ["PostCommitOperations"]
