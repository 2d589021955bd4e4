"""Automatic tags after commits, and tag retention, as Paimon 0.9's committer runs them.

After each commit (``Table.after_commit``; not with ``write-only``):

```
 1. create  tag.automatic-creation = process-time | watermark (TagAutoCreation): the
            automatic tags (names that parse as a period, tag_periods) say where to go on:
            the snapshot after the newest one's, and the period after its; none: from the
            earliest snapshot. For each later snapshot, its time (process-time: its
            timeMillis in local time; watermark: its watermark in
            sink.watermark-time-zone, skipped without one) minus tag.creation-delay
            reaching the end of the next period makes the tag of the period just ended
            (with tag.automatic-completion: the next missing one), if absent, with
            tag.default-time-retained; then the oldest automatic tags beyond
            tag.num-retained-max are deleted
 2. expire  every tag with a retention (tagCreateTime + tagTimeRetained) that has passed
            is deleted (TagTimeExpire), whatever the mode
 3. batch   tag.automatic-creation = batch, at the end of a batch write (as Flink's batch
            jobs; Paimon's own Python and Spark batch writers make none):
            ``batch-write-<yyyy-MM-dd>`` of the latest snapshot's local date, replaced if
            it exists, with tag.default-time-retained; then the oldest tags of all (by
            snapshot, then by file time) beyond tag.num-retained-max are deleted
```

A deleted tag's file goes; the data files only it kept stay until orphan cleanup
(``remove_orphan_files``), as for ``Table.delete_tag`` (Paimon deletes them at once).
Each run also answers a dry run: what it would create and delete, nothing written.
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from ..errors import InvalidArgumentError, SnapshotNotFoundError
from ..format.snapshot import Snapshot
from ..metadata.context import TableContext
from ..metadata.tags import TagInfo, TagManager
from ..schema.post_commit_options import TagConfig
from .partition_expire import local_time
from .tag_periods import TagPeriod

log = logging.getLogger("minipaimon_core")
BATCH_TAG_PREFIX = "batch-write-"
_LONG_MIN = -(1 << 63)  # a watermark of Long.MIN_VALUE: none


@dataclass
class TagAutoResult:
    """Tags created (name -> snapshot id) and deleted (names, in order) by one run."""

    created: dict[str, int] = field(default_factory=dict)
    deleted: list[str] = field(default_factory=list)
    dry_run: bool = False


class _Tags:
    """The table's tags, read once; changes go to disk (unless a dry run) and to this view."""

    def __init__(self, ctx: TableContext, dry_run: bool, result: TagAutoResult) -> None:
        self.manager = TagManager(ctx.io, ctx.layout)
        self.tags: dict[str, TagInfo] = self.manager.infos()
        self.dry_run, self.result, self.ctx = dry_run, result, ctx

    def create(self, name: str, snap: Snapshot, retained_ms: int | None, now_ms: int) -> None:
        created = local_time(now_ms) if retained_ms is not None else None
        if not self.dry_run:
            self.manager.create(name, snap, retained_ms, created)
        self.tags[name] = TagInfo(name, snap, created, retained_ms)
        self.result.created[name] = snap.id
        log.info("minipaimon: created tag %s of snapshot %d of %s", name, snap.id, self.ctx.path)

    def delete(self, name: str, why: str) -> None:
        if not self.dry_run:
            with contextlib.suppress(SnapshotNotFoundError):  # deleted concurrently
                self.manager.delete(name)
        self.tags.pop(name, None)
        self.result.created.pop(name, None)
        self.result.deleted.append(name)
        log.info("minipaimon: deleted tag %s of %s (%s)", name, self.ctx.path, why)

    def by_snapshot(self, names: list[str]) -> list[tuple[int, list[str]]]:
        """``names`` grouped by snapshot id, oldest snapshot first (Paimon's sorted map)."""
        groups: dict[int, list[str]] = {}
        for name in sorted(names):
            groups.setdefault(self.tags[name].snapshot.id, []).append(name)
        return sorted(groups.items())


def _one_auto_tag(snapshot_id: int, names: list[str]) -> str:
    if len(names) != 1:
        raise InvalidArgumentError(
            f"tags {', '.join(names)} are all automatic tags of snapshot {snapshot_id}: Paimon's "
            "automatic tag creation stops on that (there must be one); delete all but one")
    return names[0]


def _tag_time(config: TagConfig, snap: Snapshot) -> datetime | None:
    if config.mode == "process-time":
        return local_time(snap.timeMillis)
    if snap.watermark is None or snap.watermark == _LONG_MIN:
        return None
    return datetime.fromtimestamp(snap.watermark / 1000, config.watermark_zone).replace(tzinfo=None)


def create_auto_tags(ctx: TableContext, config: TagConfig, now_ms: int, tags: _Tags) -> None:
    """Step 1 of the module docs (``config.mode`` process-time or watermark)."""
    period = TagPeriod(config.period, config.dashes)
    autos = [(sid, names) for sid, names in tags.by_snapshot([n for n in tags.tags if period.is_auto(n)])]
    next_tag: datetime | None = None
    if autos:
        last_id, names = autos[-1]
        next_snapshot = last_id + 1
        last_time = period.to_time(_one_auto_tag(last_id, names))
        assert last_time is not None
        next_tag = period.next(last_time)
    else:
        next_snapshot = ctx.snapshots.earliest_id() or 1
    delay = timedelta(milliseconds=config.delay_ms)
    latest = ctx.snapshots.latest_id()
    while latest is not None and next_snapshot <= latest:
        snap = ctx.snapshots.try_get(next_snapshot)
        if snap is None:  # expired meanwhile: go on from the earliest
            earliest = ctx.snapshots.earliest_id()
            if earliest is None or earliest <= next_snapshot:
                break
            next_snapshot = earliest
            continue
        when = _tag_time(config, snap)
        if when is not None and (next_tag is None or when - delay >= period.next(next_tag)):
            this = period.previous(when)
            if config.automatic_completion and next_tag is not None:
                this = next_tag
            name = period.name(this)
            if name not in tags.tags:
                tags.create(name, snap, config.default_time_retained_ms, now_ms)
            next_tag = period.next(this)
            _retain_auto(tags, period, config.num_retained_max)
        next_snapshot += 1


def _retain_auto(tags: _Tags, period: TagPeriod, num_retained_max: int | None) -> None:
    if num_retained_max is None:
        return
    autos = tags.by_snapshot([n for n in tags.tags if period.is_auto(n)])
    for sid, names in autos[:max(0, len(autos) - num_retained_max)]:
        tags.delete(_one_auto_tag(sid, names), f"more than tag.num-retained-max = {num_retained_max} automatic tags")


def expire_tags(tags: _Tags, now_ms: int, older_than_ms: int | None = None) -> None:
    """Step 2: delete every tag whose retention has passed at ``now_ms``; with
    ``older_than_ms`` (by hand, as Paimon's ``expire_tags`` procedure) also every tag
    created before it (a tag without a retention by its file's time)."""
    now = local_time(now_ms)
    older = None if older_than_ms is None else local_time(older_than_ms)
    for name in sorted(tags.tags):
        tag = tags.tags[name]
        created, retained = tag.create_time, tag.time_retained_ms
        if created is None or retained is None:
            if older is None:
                continue
            try:
                created = local_time(tags.manager.modified_time_ms(name))
            except FileNotFoundError:
                continue
        if (retained is not None and _micros(now - created) > retained * 1000) or \
                (older is not None and older > created):
            tags.delete(name, "its retention has passed" if older is None else "created before the given time")


def _micros(delta: timedelta) -> int:
    """``delta`` in microseconds, exactly (a retention of any length compares without
    overflowing a datetime: Java's Duration goes far beyond year 9999)."""
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def batch_tag(ctx: TableContext, config: TagConfig, now_ms: int, tags: _Tags) -> None:
    """Step 3 of the module docs."""
    latest = ctx.snapshots.latest()
    if latest is None:
        return
    name = BATCH_TAG_PREFIX + local_time(latest.timeMillis).strftime("%Y-%m-%d")
    if name in tags.tags:
        tags.delete(name, "replaced by this batch write's tag")
    tags.create(name, latest, config.default_time_retained_ms, now_ms)
    limit = config.num_retained_max
    if limit is None:
        return
    count = len(tags.tags)
    for _, names in tags.by_snapshot(list(tags.tags)):
        if count <= limit:
            break
        order = names if count - len(names) >= limit else sorted(names, key=lambda n: _modified(tags, n))
        for n in order:
            if count <= limit:
                break
            tags.delete(n, f"more than tag.num-retained-max = {limit} tags")
            count -= 1


def _modified(tags: _Tags, name: str) -> int:
    try:
        return tags.manager.modified_time_ms(name)
    except FileNotFoundError:
        return 0


def run(ctx: TableContext, config: TagConfig, now_ms: int, end_of_input: bool = False,
        dry_run: bool = False, older_than_ms: int | None = None) -> TagAutoResult:
    """Steps 1-3 as a committer runs them after a commit at ``now_ms`` (step 3 only at the
    ``end_of_input`` of a batch write). Raises InvalidArgumentError when two automatic tags
    pin one snapshot (Paimon refuses to go on), CorruptMetadataError for a damaged tag."""
    result = TagAutoResult(dry_run=dry_run)
    tags = _Tags(ctx, dry_run, result)
    if config.mode in ("process-time", "watermark"):
        create_auto_tags(ctx, config, now_ms, tags)
    expire_tags(tags, now_ms, older_than_ms)
    if config.mode == "batch" and end_of_input:
        batch_tag(ctx, config, now_ms, tags)
    return result


__all__ = ["BATCH_TAG_PREFIX", "TagAutoResult", "batch_tag", "create_auto_tags", "expire_tags", "run"]
