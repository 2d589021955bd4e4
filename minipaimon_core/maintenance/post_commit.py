"""The one post-commit path: automatic compaction, then snapshot expiration, after a commit.

Every writer of the core and of the Spark sinks calls :func:`after_commit` (as
``Table.after_commit(messages)``) once its snapshot has landed.

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
from .compaction import maybe_compact
from .expire import ExpireResult, maybe_expire

log = logging.getLogger("minipaimon_core")


@dataclass(frozen=True)
class AfterCommitResult:
    """What the follow-ups of one commit did.

    ``compact_snapshot``: the COMPACT snapshot made (None: no compaction, or it lost a
    race). ``expired``: what expiration removed (None: it did not run or failed).
    ``errors``: the exceptions of failed follow-ups (already logged), empty if all went well.
    """

    compact_snapshot: int | None = None
    expired: ExpireResult | None = None
    errors: list[Exception] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors


def after_commit(table: HasContext, messages: Sequence[CommitMessage] | None = None) -> AfterCommitResult:
    """Compact the buckets ``messages`` wrote (all buckets if None) when the table's
    triggers are reached, then expire snapshots by the table's options. Never raises an
    ``Exception`` (see the module's policy)."""
    ctx = table.context()
    errors: list[Exception] = []
    compacted = None
    try:
        compacted = maybe_compact(ctx, messages)
    except Exception as e:  # noqa: BLE001 - the policy: the landed commit stands
        _report(ctx.path, "compaction", e, errors)
    expired = None
    try:
        expired = maybe_expire(ctx)
    except Exception as e:  # noqa: BLE001 - the policy: the landed commit stands
        _report(ctx.path, "snapshot expiration", e, errors)
    return AfterCommitResult(compacted, expired, errors)


def _report(path: str, what: str, error: Exception, errors: list[Exception]) -> None:
    errors.append(error)
    log.warning("minipaimon: %s after the commit to %s failed (the commit stands; the next "
                "commit tries again): %s: %s", what, path, type(error).__name__, error)


__all__ = ["AfterCommitResult", "after_commit"]
