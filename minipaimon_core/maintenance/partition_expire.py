"""Partition expiration: drop the partitions whose time has passed, as Paimon's committer does.

A table with ``partition.expiration-time`` set (and partition keys) has its old partitions
dropped after commits, as Paimon 0.9's ``PartitionExpire`` does it:

```
 1. when   a committer checks when ``partition.expiration-check-interval`` (1 h) has
           passed since its last check, or since it was created (:class:`ExpireClock`),
           or every commit when the interval is 0, or at the end of a batch write with
           ``end-input.check-partition-expire``; a by-hand run always checks
 2. which  of the partitions with files in the latest snapshot, those whose time is
           before now - expiration-time. ``values-time`` (default): the time in the
           partition's values, by ``partition.timestamp-pattern`` ("$dt $hour": the
           values put in; default the first value) and ``partition.timestamp-formatter``
           (a Java pattern; default ``yyyy-MM-dd[ HH:mm:ss]``), in local time; a value
           that does not parse never expires (Paimon logs it). ``update-time``: the newest
           creation time of the partition's files
 3. drop   one OVERWRITE snapshot deleting every file of those partitions (a row-level
           commit whose messages replace each live file by nothing); the files themselves
           go when snapshot expiration removes the snapshots that still use them
```

Values are turned into text as Paimon's converter does before parsing: a DATE partition is
its day number and a TIMESTAMP ``2024-01-01T10:00`` (so neither parses with the default
formatter, as in Paimon); a null value never expires (Paimon 0.9 fails on it).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from ..commit.commit import FileStoreCommit
from ..errors import CommitConflictError, ConflictReason
from ..format.manifest_file import ManifestEntry
from ..metadata.commit_message import CommitMessage
from ..metadata.context import HasContext, TableContext
from ..metadata.manifest_io import live_files
from ..schema.partition import PartitionSpec
from ..schema.post_commit_options import PartitionExpireConfig, java_pattern, parse_partition_time

log = logging.getLogger("minipaimon_core")


@dataclass(frozen=True)
class PartitionExpireResult:
    """What one partition expiration did: the partitions (``{key: value text}``, in the
    order of their values) dropped, or that would be with ``dry_run``; the OVERWRITE
    snapshot (None: nothing dropped, a dry run, or the check interval had not passed)."""

    partitions: list[dict[str, str]] = field(default_factory=list)
    snapshot_id: int | None = None
    checked: bool = True  # False: the check interval had not passed, nothing was looked at
    dry_run: bool = False


@dataclass
class ExpireClock:
    """A committer's partition-expiration clock (Paimon's ``lastCheck``): it starts when
    the committer is made, so a committer checks only once the check interval has passed
    since then or since its last check. One per table handle or streaming query."""

    last_check_ms: int

    def due(self, now_ms: int, interval_ms: int, end_of_input: bool, end_input_check: bool) -> bool:
        return interval_ms == 0 or now_ms > self.last_check_ms + interval_ms or (end_of_input and end_input_check)


def local_time(epoch_ms: int) -> datetime:
    """``epoch_ms`` as a naive datetime in the local time zone (Java's ``LocalDateTime.now()``)."""
    return datetime.fromtimestamp(epoch_ms / 1000)


def java_text(value: Any, paimon_type: str) -> str | None:
    """A partition value as Paimon's ``toString()`` of its internal object writes it (None:
    a null value)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    base = paimon_type.split("(")[0].split(" ")[0].upper()
    if base.startswith("TIMESTAMP") and isinstance(value, int):
        dt = datetime(1970, 1, 1) + timedelta(milliseconds=value)
        text = dt.strftime("%Y-%m-%dT%H:%M")
        if dt.second or dt.microsecond:
            text += f":{dt.second:02d}"
        if dt.microsecond:
            text += f".{dt.microsecond // 1000:03d}" if dt.microsecond % 1000 == 0 else f".{dt.microsecond:06d}"
        return text
    return str(value)


def partition_time(values: Sequence[str | None], keys: Sequence[str], pattern: str | None,
                   formatter: Any) -> datetime | None:
    """The time Paimon's ``PartitionTimeExtractor`` reads from a partition's value texts
    (None: no time, never expired)."""
    if pattern is None:
        text = values[0]
    else:
        text = pattern
        for key, value in zip(keys, values):
            if value is None and f"${key}" in text:
                return None
            text = text.replace(f"${key}", value or "")
    return None if text is None else parse_partition_time(text, formatter)


def expired_partitions(entries: Sequence[ManifestEntry], keys: Sequence[str], types: Sequence[str],
                       config: PartitionExpireConfig, expire_before: datetime) -> list[tuple[Any, ...]]:
    """The partition value tuples of ``entries`` (a snapshot's live files) that expire:
    their time (``config.strategy``) is before ``expire_before`` (a naive local datetime)."""
    newest: dict[tuple[Any, ...], int] = {}
    for e in entries:
        key = tuple(e.partition)
        newest[key] = max(newest.get(key, 0), e.file.creationTime)
    out = []
    for partition in sorted(newest, key=lambda p: [("" if v is None else str(v)) for v in p]):
        if config.strategy == "update-time":
            # Paimon: expire when expire_before (local, as epoch ms) > the newest file's creation
            if expire_before > datetime(1970, 1, 1) + timedelta(milliseconds=newest[partition]):
                out.append(partition)
            continue
        texts = [java_text(v, t) for v, t in zip(partition, types)]
        when = partition_time(texts, keys, config.pattern, config.formatter)
        if when is None:
            log.warning("minipaimon: cannot read a time from partition %s of its values (partition "
                        "expiration skips it; check 'partition.timestamp-formatter' / -pattern, or "
                        "drop it by hand)", dict(zip(keys, texts)))
        elif expire_before > when:
            out.append(partition)
    return out


def expire_partitions(table: HasContext, now_ms: int | None = None, expiration_ms: int | None = None,
                      formatter: str | None = None, pattern: str | None = None,
                      strategy: str | None = None, dry_run: bool = False) -> PartitionExpireResult:
    """Drop the partitions expired at ``now_ms`` (default: the table's clock) by the table's
    ``partition.*`` options, each argument given overriding its option (a by-hand run, as
    Paimon's ``expire_partitions`` procedure). ``dry_run``: only say which.

    Raises:
        InvalidArgumentError: no expiration time (neither given nor the table's option), or
            an unpartitioned table.
        UnsupportedOptionError: a formatter minipaimon cannot parse as Java does.
        CommitConflictError: the drop lost the snapshot race too often.
    """
    from ..errors import InvalidArgumentError

    ctx = table.context()
    config = PartitionExpireConfig.of(ctx.options)
    if expiration_ms is not None or formatter is not None or pattern is not None or strategy is not None:
        config = PartitionExpireConfig(
            config.expiration_ms if expiration_ms is None else expiration_ms, 0,
            config.strategy if strategy is None else strategy,
            config.formatter if formatter is None else java_pattern(formatter),
            config.pattern if pattern is None else pattern, False)
    if config.expiration_ms is None:
        raise InvalidArgumentError(f"{ctx.path} has no 'partition.expiration-time': give the expiration time")
    if config.strategy not in ("values-time", "update-time"):
        raise InvalidArgumentError(f"expiration strategy must be values-time or update-time, got {config.strategy!r}")
    if not ctx.schema.partitionKeys:
        raise InvalidArgumentError(f"{ctx.path} has no partitions to expire")
    return run(ctx, config, ctx.clock() if now_ms is None else now_ms, dry_run)


def run(ctx: TableContext, config: PartitionExpireConfig, now_ms: int, dry_run: bool = False) -> PartitionExpireResult:
    """Steps 2-3 of the module docs for ``config`` (its expiration time set) at ``now_ms``.
    A concurrent commit that replaced a file of a dropped partition (a compaction) makes
    the drop plan again, as Paimon's drop re-reads the partitions per attempt."""
    assert config.expiration_ms is not None
    spec = ctx.partition_spec()
    expire_before = local_time(now_ms) - timedelta(milliseconds=config.expiration_ms)
    committer = FileStoreCommit(ctx.io, ctx.layout, ctx.schema, f"partition-expire-{uuid.uuid4()}",
                                fresh_user=True, manifests=ctx.manifests, clock=ctx.clock)
    for attempt in range(_REPLANS):
        live = live_files(ctx.manifests, ctx.snapshots.latest())
        gone = expired_partitions(live, spec.keys, spec.paimon_types, config, expire_before)
        named = [{k: (java_text(v, t) or "null") for k, v, t in zip(spec.keys, p, spec.paimon_types)} for p in gone]
        if not gone or dry_run:
            return PartitionExpireResult(named, None, True, dry_run)
        try:
            snapshot_id = committer.commit_rewrite(_drop_messages(spec, live, set(gone)), attempt)
        except CommitConflictError as e:
            if e.reason != ConflictReason.FILES_GONE or attempt == _REPLANS - 1:
                raise
            continue
        for partition in named:
            log.info("minipaimon: expired partition %s of %s", partition, ctx.path)
        return PartitionExpireResult(named, snapshot_id)
    raise AssertionError("unreachable")


_REPLANS = 5


def _drop_messages(spec: PartitionSpec, live: Sequence[ManifestEntry], gone: set[tuple[Any, ...]]
                   ) -> list[CommitMessage]:
    """One message per (partition, bucket) of ``gone``: every live file of it replaced by
    nothing (an OVERWRITE commit, as Paimon's ``dropPartitions``)."""
    files: dict[tuple[tuple[Any, ...], int], list[ManifestEntry]] = {}
    for e in live:
        if tuple(e.partition) in gone:
            files.setdefault((tuple(e.partition), e.bucket), []).append(e)
    return [CommitMessage(partition=list(p), partitionPath=spec.path(list(p)), bucket=b,
                          totalBuckets=es[0].totalBuckets, compactBefore=[e.file for e in es])
            for (p, b), es in files.items()]


__all__ = ["ExpireClock", "PartitionExpireResult", "expire_partitions", "expired_partitions", "java_text",
           "local_time", "partition_time", "run"]
