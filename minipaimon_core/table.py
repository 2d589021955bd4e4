"""The table: the public entry point of minipaimon_core.

```python
t = create_table(path, schema, primary_key=["id"], partition_by=["dt"], options={...})
t = open_table(path)
t.write(data, mode="append")                  # one commit
w = t.new_write("job-1"); w.write(b); msgs = w.prepare_commit()
t.new_commit("job-1").commit(msgs, commit_identifier=7)
t.scan(filter=[("dt", "=", "d1")], columns=["id"]).to_arrow()
t.delete([("dt", "<", "d1")]); t.update(filter, set={...}); t.merge(src, on=["id"])...execute()
```
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from . import diff as diff_rows
from . import system_tables
from .commit.commit import FileStoreCommit
from .commit.table_write import TableWrite, write_and_commit
from .dml import dml
from .dml.merge_into import MergeBuilder
from .errors import (
    CommitOutcomeUnknownError,
    InvalidArgumentError,
    TableNotFoundError,
)
from .expressions import predicate
from .format.branch_names import MAIN_BRANCH
from .format.layout import TableLayout
from .format.manifest_file import DataFileMeta
from .format.options import Options
from .format.snapshot import Snapshot
from .io.fileio import FileIO
from .io.fileio_resolve import resolve, split_options
from .maintenance import compaction
from .maintenance import manifests as manifest_rewrite
from .maintenance.partition_expire import ExpireClock
from .maintenance.post_commit import AfterCommitResult, after_commit
from .metadata.branches import BRANCH_OPTION, BranchManager
from .metadata.commit_message import CommitMessage
from .metadata.consumer import ConsumerManager
from .metadata.context import Clock, TableContext, wall_clock_ms
from .metadata.deletion_vectors import DeletionVectorIO
from .metadata.manifest_io import ManifestIO
from .metadata.sequence import SequenceStart
from .metadata.snapshot_manager import SnapshotManager
from .read import table_scan
from .read.fallback import fallback_context, fallback_snapshot
from .read.scan import Planner, Split, SplitSizing, parse_incremental, resolve_snapshot
from .read.table_scan import TableScan, dropped_rows, planner, read_file_rows, read_split
from .schema.definition import keys_from_options, time_travel_from_options
from .schema.features import check_readable
from .schema.schema import SchemaCache, SchemaManager, TableSchema, build_schema
from .schema.table_schema_changes import SchemaChanges
from .stream.table_stream import TableStream
from .table_branches import TableBranches
from .table_ops import TableOperations
from .table_post_commit import PostCommitOperations
from .table_tags import TableTags


def create_table(
    path: str,
    schema: pa.Schema,
    primary_key: list[str] | None = None,
    partition_by: list[str] | None = None,
    options: dict[str, str] | None = None,
    io: FileIO | None = None,
) -> Table:
    """Create a table at ``path`` (local path, ``file:`` URI, ``s3://bucket/...``,
    ``az://container/...`` or ``abfss://container@account.dfs.core.windows.net/...``) and
    return it. Connection options in ``options`` (``s3.*``, ``azure.*``) reach the storage
    only and are never stored with the table (see :mod:`minipaimon_core.io.fileio_resolve`);
    Paimon's ``primary-key`` / ``partition`` options may give the keys (minipaimon_core.schema.definition).

    Raises:
        TableAlreadyExistsError: a table exists there.
        SchemaMismatchError, InvalidArgumentError, UnsupportedOptionError: bad definition
            or path.
        StorageError: the storage failed or cannot guarantee atomic commits.
    """
    connection, table_options = split_options(options)
    primary_key, partition_by, table_options = keys_from_options(primary_key, partition_by, table_options)
    path, io = resolve(path, connection, io)
    table_schema = build_schema(schema, primary_key, partition_by, table_options)
    SchemaManager(io, TableLayout(path)).create(table_schema)
    return Table(path, io)


def open_table(path: str, io: FileIO | None = None,
               options: dict[str, str] | None = None, clock: Clock | None = None) -> Table:
    """Open the table at ``path``; ``options`` may carry connection options (``s3.*``,
    ``azure.*``) and Paimon's ``branch`` (the branch to read and write, default ``main``);
    ``clock`` (epoch ms) dates its commits and the post-commit options (default: the wall clock).
    Raises TableNotFoundError if there is none (BranchNotFoundError: no such branch),
    InvalidArgumentError for a bad path or branch name."""
    path, io = resolve(path, options, io)
    return Table(path, io, branch=(options or {}).get(BRANCH_OPTION) or MAIN_BRANCH, clock=clock)


class Table(SchemaChanges, TableOperations, TableBranches, TableTags, PostCommitOperations):
    """A minipaimon table at a path. Cheap to open; holds no locks. Its mixins: schema changes
    (``SchemaChanges``); counts, history, health, restore and expiration (``TableOperations``);
    branches (``TableBranches``); tags (``TableTags``); partition expiration and automatic
    tags by hand (``PostCommitOperations``)."""

    def __init__(self, path: str, io: FileIO | None = None, branch: str = MAIN_BRANCH,
                 clock: Clock | None = None) -> None:
        path, io = resolve(path, None, io)
        self.path = path
        self.clock: Clock = clock or wall_clock_ms
        self.io: FileIO = io
        self.layout = TableLayout(path)
        if branch != MAIN_BRANCH:  # the table first (TableNotFoundError), then the branch
            SchemaManager(self.io, self.layout).latest()
            self.layout = BranchManager(self.io, self.layout).layout_of(branch)
        self._load_line()
        #: the follow-ups of this handle's last ``write`` (see ``after_commit``)
        self.last_after_commit: AfterCommitResult | None = None
        self.partition_clock = ExpireClock(self.clock())  #: as a Paimon committer's (post_commit)

    def _load_line(self) -> None:
        """(Re)read the metadata readers of this handle's branch; schemas are cached by id
        until a fast-forward replaces some of them."""
        self._schema_manager = SchemaManager(self.io, self.layout)
        self.table_schema: TableSchema = self._schema_manager.latest()
        check_readable(self.table_schema, self.path)
        self._schemas = SchemaCache(self._schema_manager)
        self.snapshot_manager = SnapshotManager(self.io, self.layout)
        self.manifests = ManifestIO(self.io, self.layout, self._schemas)
        self.vectors = DeletionVectorIO(self.io, self.layout, self.manifests)

    def context(self) -> TableContext:
        """The narrow view of this table (current schema) that operations take."""
        return TableContext(self.path, self.io, self.layout, self.table_schema, self._schemas,
                            self.snapshot_manager, self.manifests, self.vectors, self.clock)

    # -- schema and options ----------------------------------------------------------------

    def schema(self) -> pa.Schema:
        """The Arrow schema users read and write."""
        return self.table_schema.arrow_schema()

    def primary_keys(self) -> list[str]:
        return list(self.table_schema.primaryKeys)

    def partition_keys(self) -> list[str]:
        return list(self.table_schema.partitionKeys)

    def schema_by_id(self, schema_id: int) -> TableSchema:
        """The schema a data file with ``schema_id`` was written with."""
        return self._schemas.get(schema_id)

    def options(self) -> dict[str, str]:
        return dict(self.table_schema.options)

    def typed_options(self) -> Options:
        return Options(self.table_schema.options)

    # -- writing -----------------------------------------------------------------------------

    def new_write(self, commit_user: str | None = None, sequence: SequenceStart | None = None,
                  overwrite: bool = False) -> TableWrite:
        """A writer whose messages ``new_commit(commit_user)`` commits (``overwrite``: see
        TableWrite); ``sequence``: where its rows' numbers start (minipaimon_core.metadata.sequence)."""
        return TableWrite(self.context(), commit_user or str(uuid.uuid4()), sequence, overwrite)

    def new_commit(self, commit_user: str | None = None, fresh_user: bool = False) -> FileStoreCommit:
        """A committer for ``commit_user`` (idempotent per commit identifier). ``fresh_user``
        promises nothing was committed by this user before (skips the scan for an earlier
        commit of the same identifier; ``is_committed`` still scans)."""
        fresh = fresh_user or commit_user is None
        return FileStoreCommit(self.io, self.layout, self.table_schema, commit_user or str(uuid.uuid4()),
                               fresh_user=fresh, manifests=self.manifests, clock=self.clock)

    def write(self, data: Any, mode: str = "append") -> int | None:
        """Write ``data`` in one commit; returns the new snapshot id (None if nothing changed).

        ``mode="overwrite"`` replaces the whole table (or, with the
        ``dynamic-partition-overwrite`` option, only the partitions present in ``data``).
        Once the snapshot has landed this returns its id (a failed automatic compaction or
        expiration is logged and kept in ``self.last_after_commit``, never raised). A create
        the store did not answer is settled in the call by looking, for up to
        ``commit.timeout`` (at least a minute): an exception means nothing was committed and
        retrying the call writes once, except CommitOutcomeUnknownError (ask
        ``commit_landed(error)`` first) and an interrupt (look at the latest snapshots first).

        Raises:
            SchemaMismatchError, InvalidArgumentError: data that does not fit; nothing is
                committed and the files written so far are deleted.
            CommitConflictError, StorageError: nothing was committed.
            CommitOutcomeUnknownError: the store never answered whether it landed.
        """
        snap_id, messages = write_and_commit(self.context(), data, mode)
        self.last_after_commit = self.after_commit(messages, end_of_input=True) if snap_id is not None else None
        return snap_id

    def commit_landed(self, error: CommitOutcomeUnknownError) -> bool:
        """Whether the commit ``error`` left in doubt is in the table (one look; definitive
        while its snapshot is retained and for an hour after it expired). Raises
        StorageError while the store does not answer."""
        return self.context().snapshots.settle(error.attempt)

    # -- row-level changes (minipaimon_core.dml: on disk, conflicts and retries) -------------

    def delete(self, filter: Any = None, *, prune: Any = None) -> int:
        """Delete the rows ``filter`` (``scan``'s; None: all; or a ``pyarrow.compute``
        boolean expression over the columns, with ``prune`` a ``scan`` filter every row it
        selects satisfies, to skip partitions and files) selects in one commit; returns how
        many. Raises InvalidArgumentError, UnsupportedFeatureError (a merge engine that
        cannot delete), CommitConflictError (concurrent commits kept changing the rows)."""
        return dml.delete(lambda: self.refresh().context(), filter, prune)

    def update(self, filter: Any = None, set: Mapping[str, Any] | None = None, *, prune: Any = None) -> int:
        """Set columns (a literal or a ``pyarrow.compute`` expression over the row, not a primary-key
        column) of the rows ``filter`` (as :meth:`delete`'s) selects in one commit; returns how
        many. Raises as :meth:`delete`, and SchemaMismatchError for a value that does not fit."""
        return dml.update(lambda: self.refresh().context(), filter, set or {}, prune)

    def merge(self, source: Any, on: list[str] | str) -> MergeBuilder:
        """A merge of ``source`` (anything :meth:`write` takes) joined on ``on``: add
        ``when_*`` clauses, then ``execute()`` (minipaimon_core.dml.merge_into)."""
        return MergeBuilder(lambda: self.refresh().context(), source, on)

    def after_commit(self, messages: Sequence[CommitMessage] | None = None,
                     end_of_input: bool = False, clock: ExpireClock | None = None) -> AfterCommitResult:
        """The follow-ups of a landed commit of ``messages`` (all buckets if None) as Paimon's
        committer: compaction, snapshot and partition expiration, tags (``end_of_input``: it
        ends a batch write; ``clock``: the partition-expiration clock, default this handle's).
        Never raises for a failed follow-up: the commit stands, the failure is logged and in
        ``errors`` (maintenance.post_commit). Every writer calls this after its commit."""
        return after_commit(self.context(), messages, end_of_input, clock or self.partition_clock)

    def maybe_compact(self, messages: Sequence[CommitMessage] | None = None) -> int | None:
        """Automatic compaction after a commit of ``messages`` (all buckets if None): the
        buckets written where the picker finds work (minipaimon_core.maintenance.compaction)."""
        return compaction.maybe_compact(self.context(), messages)

    def compact(self, full: bool | None = None, strategy: str | None = None) -> int | None:
        """Compact now; returns the COMPACT snapshot id (None: nothing to do, or a concurrent
        compaction replaced the same files first). ``strategy`` ``full`` (default, as Paimon's
        ``CALL sys.compact``): every bucket into one sorted run; ``minor`` (``full=False``):
        level-0 files of buckets with several runs merged up. Raises InvalidArgumentError."""
        return compaction.compact_table(self.context(), compaction.explicit_strategy(strategy, full))

    # -- reading -----------------------------------------------------------------------------

    def planner(self) -> Planner:
        return planner(self.context())

    def scan(
        self,
        filter: Any = None,
        columns: Sequence[str] | None = None,
        snapshot_id: int | None = None,
        tag: str | None = None,
        timestamp_ms: int | None = None,
        incremental_between: tuple[int, int] | str | None = None,
        parallelism: int | None = None,
        options: Mapping[str, str] | None = None,
    ) -> TableScan:
        """Plan a read. ``filter`` is DNF (see predicate); time travel by id, tag or time
        reads in the snapshot's own schema (its column names then: filter and columns name
        them), as Paimon does; other reads in the latest schema.

        ``parallelism`` is the number of tasks that will read the splits (Spark's default
        parallelism): append buckets are then cut so the plan has about that many splits or
        more. ``options`` overrides the table's ``source.split.target-size`` /
        ``source.split.open-file-cost`` for this scan, and takes Paimon's read options
        ``scan.snapshot-id`` / ``scan.tag-name`` / ``scan.timestamp-millis`` for the
        arguments of the same meaning.

        Raises InvalidArgumentError (bad filter/columns/parallelism, another option name),
        UnsupportedOptionError (bad option value), SnapshotNotFoundError.
        """
        asked, options = time_travel_from_options(
            {"snapshot_id": snapshot_id, "tag": tag, "timestamp_ms": timestamp_ms}, options)
        snapshot_id, tag, timestamp_ms = asked["snapshot_id"], asked["tag"], asked["timestamp_ms"]
        sizing = SplitSizing.of(self.table_schema.options, options, parallelism)
        if snapshot_id is not None and snapshot_id < 1:
            raise InvalidArgumentError(f"snapshot_id must be a snapshot id >= 1, got {snapshot_id!r}")
        if sum(x is not None for x in (snapshot_id, tag, timestamp_ms, incremental_between)) > 1:
            raise InvalidArgumentError("give at most one of snapshot_id, tag, timestamp_ms, incremental_between")
        incremental = parse_incremental(incremental_between)
        tag_snap = self.tag_snapshot(tag) if tag is not None else None
        snap = None if incremental else resolve_snapshot(self.snapshot_manager, snapshot_id, timestamp_ms, tag_snap)
        travelled = any(x is not None for x in (snapshot_id, tag, timestamp_ms))
        if snap is not None and snap.schemaId > self.table_schema.id and not travelled:
            self.refresh()  # another handle evolved the schema: read with the newest one
        ctx = table_scan.travel(self.context(), snap) if travelled else self.context()
        arrow = ctx.schema.arrow_schema()
        dnf = predicate.normalize(filter, arrow)
        cols = list(columns) if columns is not None else None
        for c in cols or []:
            if c not in arrow.names:
                raise InvalidArgumentError(f"column {c!r} is not in the table {arrow.names}")
        fb = fallback_context(ctx) if incremental is None else None
        fallback = None if fb is None else (fb, fallback_snapshot(ctx, snap, travelled, fb))
        return TableScan(ctx, dnf, cols, snap, incremental, sizing, fallback)

    def as_of(self, snapshot_id: int | None = None, tag: str | None = None,
              timestamp_ms: int | None = None) -> Table:
        """A handle to read this table as a time-travel read of that snapshot sees it: with
        the snapshot's own schema (``schema()``, ``scan()``), as :meth:`scan` reads it; the
        latest schema without an argument. Write through a handle of the latest schema.
        Raises SnapshotNotFoundError, InvalidArgumentError (more than one argument)."""
        handle = copy.copy(self).refresh()  # shares this handle's caches (schemas, files)
        handle.table_schema = handle.scan(snapshot_id=snapshot_id, tag=tag, timestamp_ms=timestamp_ms).schema
        return handle

    def to_arrow(self) -> pa.Table:
        """The latest snapshot as one Arrow table (``scan(...)`` filters and projects)."""
        return self.scan().to_arrow()

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        """The Arrow C stream protocol (PyCapsule interface): the latest snapshot at the
        time of the call, read split by split, so ``duckdb.sql("SELECT ... FROM t")``,
        ``pl.DataFrame(t)`` and ``pa.table(t)`` take a table as they take a scan."""
        return self.scan().__arrow_c_stream__(requested_schema)

    def stream(self, consumer_id: str | None = None,
               options: dict[str, str] | None = None) -> TableStream:
        """A streaming consumer in plain Python: iterate it for the batches available now
        (one snapshot each; ``batch.identifier`` is a stable downstream commit identifier),
        ``commit(batch)`` records progress under ``consumer_id``. ``options`` as the Spark
        source's (``scan.mode``, ``read.changelog``, ...). See minipaimon_core.stream.table_stream.
        """
        return TableStream(self, consumer_id, options)

    def diff(self, start: diff_rows.Endpoint, end: diff_rows.Endpoint) -> pa.Table:
        """Rows that differ between two snapshots (each a snapshot id, a tag name or an
        aware datetime): every column plus ``_row_kind`` (+I new, -D removed, a -U/+U pair
        for a changed primary key). Reads only the buckets whose files differ.

        Raises SnapshotNotFoundError / SnapshotExpiredError, InvalidArgumentError.
        """
        return diff_rows.diff(self, start, end)

    def read_split(self, split: Split) -> Iterator[pa.RecordBatch]:
        """Arrow batches of one split (projected and filtered as planned, in the schema it
        was planned in: a time-travel scan's splits in their snapshot's)."""
        return read_split(table_scan.planned_in(self.context(), split), split)

    def dropped_rows(self, split: Split) -> dict[str, np.ndarray] | None:
        """The read of ``split`` as a selection of its files' stored rows: per file name the
        positions of the rows it leaves out (without a merge: row kinds aside), or None where
        the read builds rows (partial-update, aggregation). See ``SplitReader.dropped_rows``."""
        return dropped_rows(table_scan.planned_in(self.context(), split), split)

    def read_file_rows(self, split: Split, file: DataFileMeta, with_kind: bool = False,
                       with_sequence: bool = False) -> pa.Table:
        """One data or changelog file of ``split`` as is (no merge), in the current schema,
        with ``_VALUE_KIND`` if ``with_kind`` and ``_SEQUENCE_NUMBER`` if ``with_sequence``."""
        return read_file_rows(self.context(), split, file, with_kind, with_sequence)

    # -- snapshots and tags ----------------------------------------------------------------------

    def snapshots(self) -> list[Snapshot]:
        return list(self.snapshot_manager.snapshots())

    def latest_snapshot(self) -> Snapshot | None:
        return self.snapshot_manager.latest()

    def snapshot(self, snapshot_id: int) -> Snapshot:
        return self.snapshot_manager.get(snapshot_id)

    # -- maintenance (see minipaimon_core/maintenance) --

    def refresh(self) -> Table:
        """Reload the current schema (after schema evolution, by this or another handle)."""
        self.table_schema = self._schema_manager.latest()
        check_readable(self.table_schema, self.path)
        return self

    def rewrite_manifests(self) -> manifest_rewrite.RewriteResult:
        """Rewrite the latest snapshot's manifests clustered by partition (a new COMPACT
        snapshot with the same files), so filtered plans skip most manifests unread.
        Raises CommitConflictError if other writers keep winning the snapshot race."""
        return manifest_rewrite.rewrite_manifests(self.context())

    def system_table(self, name: str, snapshot_id: int | None = None) -> pa.Table:
        """A system table (minipaimon_core.system_tables: snapshots, tags, branches, ...) as
        Arrow. Raises InvalidArgumentError for other names."""
        return system_tables.system_table(self, name, snapshot_id)

    def consumers(self) -> dict[str, int]:
        """Streaming consumer id -> the next snapshot it reads (see minipaimon_core.metadata.consumer)."""
        return ConsumerManager(self.io, self.layout).consumers()


__all__ = ["Table", "TableNotFoundError", "create_table", "open_table"]
