"""What a table offers beyond reading and writing: counts, history, health, restore and
the maintenance that removes files (mixed into :class:`minipaimon_core.table.Table`; each
method delegates to the module that owns the work).

```python
t.count()                          # rows a read returns (from metadata where exact)
t.history()                        # retained snapshots, newest first (Arrow)
t.health()                         # small files, runs, vectors, expiration, orphans + actions
t.restore(3)                       # a new commit with snapshot 3's data (or a tag, a datetime)
t.rollback_to(3, dry_run=True)     # Paimon's rollback: newer snapshots and their tags go
t.expire_snapshots(older_than="7d", dry_run=True)
t.remove_orphan_files(older_than="2d", dry_run=True)
```
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from .expressions.times import PointInTime, resolve_older_than
from .maintenance import expire, orphans, rollback
from .maintenance import health as table_health
from .maintenance import history as table_history
from .maintenance import restore as table_restore
from .maintenance.files import TableFiles
from .metadata.context import TableContext
from .read.fallback import fallback_context
from .read.row_count import count_rows
from .read.table_scan import TableScan
from .schema.features import check_migrated


class TableOperations:
    """Counts, history, health, restore and file-removing maintenance of a table."""

    path: str

    if TYPE_CHECKING:
        def context(self) -> TableContext: ...
        def to_arrow(self) -> pa.Table: ...
        def scan(self, filter: Any = None, columns: Sequence[str] | None = None) -> TableScan: ...

    def _files(self) -> TableFiles:
        """The files of the table, for the maintenance that removes some of them."""
        ctx = self.context()
        check_migrated(ctx.schema, ctx.path)
        return TableFiles.of(ctx)

    # -- reading shortcuts ---------------------------------------------------------------

    def to_pandas(self) -> Any:
        """The latest snapshot as a pandas DataFrame (``scan(...).to_pandas()`` filters)."""
        return self.to_arrow().to_pandas()

    def count(self) -> int:
        """The number of rows a read of the latest snapshot returns.

        Exact from metadata (no data file read) for append tables, deletion vectors
        included, and for the primary-key buckets of a deletion-vector table that read
        without a merge and record no -U/-D rows; other buckets that read without a merge
        (one sorted run, e.g. after a full compaction) read their kind column only, the
        rest are merged (minipaimon_core.read.row_count). With a ``scan.fallback-branch``,
        the rows of a read (one column read)."""
        ctx = self.context()
        if fallback_context(ctx) is not None:
            return sum(b.num_rows for b in self.scan(columns=ctx.schema.field_names[:1]).to_batches())
        return count_rows(ctx, ctx.snapshots.latest())

    def history(self, limit: int | None = None) -> pa.Table:
        """One row per retained snapshot, newest first (at most ``limit``): id, commit
        time, kind, user, identifier, schema, files and records added and removed, the
        total records, and the snapshot a restore brought back (minipaimon_core.maintenance.history)."""
        return table_history.history(self.context(), limit)

    def health(self) -> table_health.Health:
        """Small files, sorted runs and level-0 files, deletion-vector ratio, what
        expiration would free and orphan files, each with the action that fixes it
        (minipaimon_core.maintenance.health). Reads metadata and lists the table's files."""
        return table_health.health(self.context())

    # -- restore and removal -------------------------------------------------------------

    def restore(self, target: table_restore.Target) -> table_restore.RestoreResult:
        """A new OVERWRITE commit whose data is that of ``target`` (a snapshot id, a tag
        name, or an aware datetime: the snapshot current then), as Delta's RESTORE: every
        snapshot and tag stays, and another restore undoes it. Files the latest snapshot no
        longer has are copied back under new names (minipaimon_core.maintenance.restore).

        Raises SnapshotNotFoundError / SnapshotExpiredError, InvalidArgumentError,
        UnsupportedFeatureError, CommitConflictError."""
        return table_restore.restore(self, target)

    def rollback_to(self, snapshot_id: int | None = None, tag: str | None = None,
                    dry_run: bool = False) -> rollback.RollbackResult:
        """Make snapshot ``snapshot_id`` (or tag ``tag``) the latest again, as Paimon's
        rollback: newer snapshots, their tags and files go (:meth:`restore` keeps them).
        ``dry_run``: what would go, nothing changed. Raises InvalidArgumentError,
        SnapshotNotFoundError."""
        return rollback.rollback_to(self._files(), snapshot_id, tag, dry_run)

    def maybe_expire(self) -> expire.ExpireResult | None:
        """Automatic snapshot expiration by the table options, for after a commit."""
        ctx = self.context()
        check_migrated(ctx.schema, ctx.path)
        return expire.maybe_expire(ctx)

    def expire_snapshots(self, retain_max: int | None = None, retain_min: int | None = None,
                         older_than: PointInTime | None = None, dry_run: bool = False,
                         older_than_ms: int | None = None) -> expire.ExpireResult:
        """Expire old snapshots and the files only they use; returns what was removed
        (``dry_run``: what would be, nothing changed).

        Arguments override ``snapshot.num-retained.max`` / ``.min`` and
        ``snapshot.time-retained``: ``older_than`` is an age (``"7d"``, ``"36 h"``, a
        timedelta; ``"0s"``: up to now) or an aware datetime; ``older_than_ms`` (epoch
        milliseconds) is deprecated. Tags and live consumers keep what they use.

        Raises InvalidArgumentError for bad retention numbers or times.
        """
        cutoff = resolve_older_than(older_than, older_than_ms)
        return expire.expire_snapshots(self._files(), retain_max, retain_min, cutoff, dry_run=dry_run)

    def remove_orphan_files(self, older_than: PointInTime | None = None, dry_run: bool = False,
                            progress: orphans.Progress | None = None,
                            older_than_ms: int | None = None) -> orphans.OrphanResult:
        """Delete files no snapshot or tag references, last modified before ``older_than``
        (an age or an aware datetime as :meth:`expire_snapshots`; default 1 day ago;
        ``older_than_ms`` is deprecated). ``dry_run``: list them, delete nothing. Raises
        InvalidArgumentError for a time in the future."""
        cutoff = resolve_older_than(older_than, older_than_ms)
        return orphans.remove_orphan_files(self._files(), cutoff, dry_run, progress=progress)

    def __repr__(self) -> str:
        ctx = self.context()
        schema = ctx.schema
        columns = ", ".join(f"{f.name} {f.type}{'' if f.nullable else ' not null'}"
                            for f in schema.arrow_schema())
        keys = (f"primary key ({', '.join(schema.primaryKeys)}), bucket {schema.options.get('bucket', '-1')}"
                if schema.primaryKeys else "append table")
        if schema.partitionKeys:
            keys += f", partitioned by ({', '.join(schema.partitionKeys)})"
        try:
            latest = ctx.snapshots.latest()
        except Exception as e:  # a repr never raises: say why instead
            snapshot = f"latest snapshot unreadable ({type(e).__name__})"
        else:
            snapshot = "no snapshot yet" if latest is None else (
                f"latest snapshot {latest.id} ({latest.commitKind}, "
                f"{pa.scalar(latest.timeMillis, pa.timestamp('ms', 'UTC')).as_py():%Y-%m-%d %H:%M:%S} UTC)")
        return f"Table({self.path!r})\n  {keys}\n  columns: {columns}\n  {snapshot}"


__all__ = ["TableOperations"]
