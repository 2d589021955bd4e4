"""The one post-commit path: what runs after a commit, in Paimon's committer's order.

Every writer of the core and of the Spark sinks calls :func:`after_commit` (as
``Table.after_commit(messages)``) once its snapshot has landed:

```
 0. postponed rows        a batch write's rows of a postponed-bucket table into real buckets
                          (maintenance.postpone; not for streaming writes, as in Paimon)
 1. compaction            the buckets written, when their triggers are reached
 2. snapshot expiration   snapshot.* / changelog.* retention, idle consumers
 3. partition expiration  partition.expiration-time, when the committer's check is due
                          (maintenance.partition_expire)
 4. tags                  automatic creation, retention, the batch tag (maintenance.tag_auto)
```

Steps 2-4 are skipped with ``write-only``, as Paimon's committer skips them.

Policy: **the commit stands.** A follow-up that fails (a compaction that cannot read its
inputs because a concurrent expiration removed them, an expiration racing another one, a
bug) is reported, never raised: it is logged as a warning on the ``minipaimon_core`` logger
and recorded in :attr:`AfterCommitResult.errors`. Raising would make the caller believe the
write failed, and a retry would write the data twice. Nothing is lost by a skipped
follow-up: the next commit compacts and expires again. ``KeyboardInterrupt`` and other
non-``Exception`` errors still propagate.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..metadata.commit_message import CommitMessage
from ..metadata.context import HasContext
from ..schema.bucket import postponed
from ..schema.post_commit_options import PartitionExpireConfig, TagConfig
from . import partition_expire, postpone, tag_auto
from .compaction import maybe_compact
from .expire import ExpireResult, maybe_expire
from .partition_expire import ExpireClock, PartitionExpireResult
from .tag_auto import TagAutoResult

log = logging.getLogger("minipaimon_core")


@dataclass(frozen=True)
class AfterCommitResult:
    """What the follow-ups of one commit did.

    ``compact_snapshot``: the COMPACT snapshot made (None: no compaction, or it lost a
    race). ``expired``: what expiration removed (None: it did not run or failed).
    ``partitions``: the partition expiration (None: not configured or not due),
    ``tags``: tags created and deleted (None: write-only or failed).
    ``errors``: the exceptions of failed follow-ups (already logged), empty if all went well.
    """

    compact_snapshot: int | None = None
    expired: ExpireResult | None = None
    errors: list[Exception] = field(default_factory=list)
    partitions: PartitionExpireResult | None = None
    tags: TagAutoResult | None = None

    @property
    def ok(self) -> bool:
        return not self.errors


def after_commit(table: HasContext, messages: Sequence[CommitMessage] | None = None,
                 end_of_input: bool = False, clock: ExpireClock | None = None) -> AfterCommitResult:
    """Compact the buckets ``messages`` wrote (all buckets if None) when the table's
    triggers are reached, then expire snapshots, partitions and tags and create tags by the
    table's options (see the module docs). ``end_of_input``: the commit ends a batch write
    (``end-input.check-partition-expire``, batch tags); ``clock``: the committer's
    partition-expiration clock (None: a committer made now, as a one-off batch writer's).
    Never raises an ``Exception`` (see the module's policy)."""
    ctx = table.context()
    errors: list[Exception] = []
    compacted = None
    only = None if messages is None else {(tuple(m.partition), m.bucket) for m in messages}
    if end_of_input and postponed(ctx.schema) and ctx.options["postpone.batch-write-fixed-bucket"]:
        try:  # a batch write's postponed rows into real buckets, as Paimon's batch writes
            compacted, only = postpone.compact_postponed(ctx, None if only is None else {p for p, _ in only})
        except Exception as e:  # noqa: BLE001 - the policy: the landed commit stands
            _report(ctx.path, "compaction of postponed rows", e, errors)
    try:
        compacted = maybe_compact(ctx, None, only) or compacted
    except Exception as e:  # noqa: BLE001 - the policy: the landed commit stands
        _report(ctx.path, "compaction", e, errors)
    expired = None
    try:
        expired = maybe_expire(ctx)
    except Exception as e:  # noqa: BLE001 - the policy: the landed commit stands
        _report(ctx.path, "snapshot expiration", e, errors)
    if ctx.options["write-only"]:
        return AfterCommitResult(compacted, expired, errors)
    now = ctx.clock()
    partitions = None
    try:
        config = PartitionExpireConfig.of(ctx.options)
        if config.expiration_ms is not None and ctx.schema.partitionKeys:
            clock = clock if clock is not None else ExpireClock(now)
            if clock.due(now, config.check_interval_ms, end_of_input, config.end_input_check):
                partitions = partition_expire.run(ctx, config, now)
                clock.last_check_ms = now
    except Exception as e:  # noqa: BLE001 - the policy: the landed commit stands
        _report(ctx.path, "partition expiration", e, errors)
    tags = None
    try:
        tags = tag_auto.run(ctx, TagConfig.of(ctx.options), now, end_of_input)
    except Exception as e:  # noqa: BLE001 - the policy: the landed commit stands
        _report(ctx.path, "automatic tags", e, errors)
    return AfterCommitResult(compacted, expired, errors, partitions, tags)


def _report(path: str, what: str, error: Exception, errors: list[Exception]) -> None:
    errors.append(error)
    log.warning("minipaimon: %s after the commit to %s failed (the commit stands; the next "
                "commit tries again): %s: %s", what, path, type(error).__name__, error)


__all__ = ["AfterCommitResult", "ExpireClock", "after_commit"]
