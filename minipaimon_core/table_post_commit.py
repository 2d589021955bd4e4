"""The post-commit options by hand: partition expiration and automatic tags (mixed into
:class:`minipaimon_core.table.Table`; the work is in ``maintenance.partition_expire`` and
``maintenance.tag_auto``, which also run after every commit; a table's own tags are
:class:`minipaimon_core.table_tags.TableTags`').

```python
t.expire_partitions(dry_run=True)               # by partition.expiration-time & co
t.expire_partitions(expiration_time="30 d", timestamp_formatter="yyyyMMdd")
t.create_auto_tags(dry_run=True)                # tag.automatic-creation & retention now
t.expire_tags(older_than="7d")                  # tags past their retention (or created before)
```
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

from .expressions.times import PointInTime, duration_ms, point_in_time_ms
from .maintenance import partition_expire, tag_auto
from .metadata.context import TableContext
from .schema.features import check_migrated
from .schema.post_commit_options import TagConfig


class PostCommitOperations:
    """Partition expiration and tag automation of a table run by hand."""

    if TYPE_CHECKING:
        def context(self) -> TableContext: ...

    def _changeable(self) -> TableContext:
        ctx = self.context()
        check_migrated(ctx.schema, ctx.path)
        return ctx

    def expire_partitions(self, expiration_time: str | timedelta | None = None,
                          timestamp_formatter: str | None = None, timestamp_pattern: str | None = None, strategy: str | None = None,
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
        expiration = None if expiration_time is None else duration_ms(expiration_time, "expiration_time")
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
