"""Streaming reads by snapshot id: offsets, startup modes, per-snapshot changes.

An offset is a position in the table's history (:class:`StreamOffset`): "everything up to
and including snapshot ``snapshot`` has been delivered" — or, with ``full``, "the full scan
of snapshot ``snapshot`` is delivered up to split ``split_index``". Planning the rows
between two offsets reads only those snapshots, so a replayed batch returns exactly the same
rows even after later commits, compactions or expirations of other snapshots.

What each snapshot contributes:

* APPEND: its new data files; for primary-key tables with ``changelog-producer=input`` its
  changelog files instead, and nothing with ``lookup`` / ``full-compaction`` (their
  changelog comes with the following COMPACT snapshot).
* COMPACT: only the changelog files a ``lookup`` / ``full-compaction`` producer attached.
* OVERWRITE: skipped unless ``streaming-read-overwrite`` (then its new files).

A snapshot that expired while its changelog is retained (``changelog/changelog-<id>``, see
:mod:`.changelog_manager`) contributes the same from that file, as Paimon's
``NextSnapshotFetcher`` reads it; a stream may also start there (``from-snapshot``,
``from-timestamp``).

Rows of primary-key tables carry their kind: with ``read.changelog=true`` an ``_row_kind``
column (+I, -U, +U, -D) is added; without it, -U and -D rows are dropped.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import InvalidArgumentError, SnapshotNotFoundError, UnsupportedFeatureError
from ..format import options
from ..format.kinds import ROW_KIND_COLUMN, SEQUENCE, VALUE_KIND, RowKind, row_kind_names
from ..format.manifest_file import ADD, DataFileMeta, ManifestEntry
from ..format.options import Options
from ..format.snapshot import APPEND, COMPACT, OVERWRITE, Snapshot
from ..metadata.changelog_manager import ChangelogManager
from ..read.scan import Split
from ..read.table_scan import TableScan, read_split
from ..read.table_view import TableView
from ..schema.bucket import postponed
from ..schema.partition import PartitionSpec

ROW_KIND = ROW_KIND_COLUMN
SCAN_MODES = options.SCAN_MODES
_READ_OPTIONS = ("scan.mode", "scan.snapshot-id", "scan.timestamp-millis", "read.changelog",
                 "streaming-read-overwrite")


@dataclass(frozen=True)
class StreamOffset:
    snapshot: int
    full: bool = False
    split_index: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"snapshot": self.snapshot, "full": self.full, "splitIndex": self.split_index}

    @staticmethod
    def from_dict(d: Mapping[str, Any]) -> StreamOffset:
        return StreamOffset(int(d["snapshot"]), bool(d.get("full", False)), int(d.get("splitIndex", 0)))

    @property
    def next_snapshot(self) -> int:
        """The oldest snapshot a stream at this offset still needs."""
        return self.snapshot if self.full else self.snapshot + 1


@dataclass(frozen=True)
class StreamSplit:
    """Rows of one (partition, bucket): full-scan splits, then the changed files of each
    snapshot in commit order (``snapshot_id``: the snapshot of the full scan, else of the
    last change)."""

    snapshot_id: int
    full: tuple[Split, ...] = ()
    partition_path: str = ""
    bucket: int = 0
    steps: tuple[tuple[DataFileMeta, ...], ...] = ()

    @property
    def files(self) -> list[DataFileMeta]:
        return [f for step in self.steps for f in step]

    @property
    def row_count(self) -> int:
        return sum(s.row_count for s in self.full) + sum(f.rowCount for f in self.files)


class StreamScanner:
    """Plans and reads a stream of one table. Options use the names of the issue/Paimon."""

    def __init__(self, table: TableView, options: Mapping[str, str] | None = None, changes: str = "auto") -> None:
        """``changes`` picks what a snapshot contributes (``incremental-between-scan-mode``):
        ``auto`` as in the module docs; ``delta`` the new data files of APPEND snapshots
        with their row kinds, whatever the producer; ``changelog`` only changelog files
        (InvalidArgumentError for a table without a changelog producer)."""
        self._table = table
        if postponed(table.table_schema):
            raise UnsupportedFeatureError(
                f"{table.path} postpones buckets ('bucket' = -2): its rows reach real buckets in "
                "COMPACT snapshots, which a stream of changes does not read (Paimon streams such a "
                "table only through a changelog producer, which minipaimon does not write for it); "
                "read it in batch")
        opts = {k.lower(): str(v) for k, v in (options or {}).items()}
        read = Options({k: v for k, v in opts.items() if k in _READ_OPTIONS})  # bad: UnsupportedOptionError
        # Paimon's default mode: from-snapshot / from-timestamp when scan.snapshot-id /
        # scan.timestamp-millis is given, else latest-full (see ``mode``).
        self._mode = read["scan.mode"] or "default"
        self._snapshot_id = read["scan.snapshot-id"]
        self._timestamp = read["scan.timestamp-millis"]
        table_opts = Options(table.table_schema.options)
        self.read_changelog = (read if "read.changelog" in opts else table_opts)["read.changelog"]
        self._read_overwrite = (read if "streaming-read-overwrite" in opts
                                else table_opts)["streaming-read-overwrite"]
        self._producer = table_opts["changelog-producer"]
        self._pk = bool(table.table_schema.primaryKeys)
        if changes not in ("auto", "delta", "changelog"):
            raise InvalidArgumentError(f"unknown change source {changes!r}: auto, delta or changelog")
        if changes == "changelog" and not (self._pk and self._producer != "none"):
            raise InvalidArgumentError(
                "incremental-between-scan-mode=changelog reads changelog files, and this table "
                "writes none (it needs a primary key and a 'changelog-producer'); use 'delta' or 'diff'")
        self._changes_from = changes
        self._spec = PartitionSpec.of(table.table_schema)
        self._full_plans: dict[int, list[tuple[Split, ...]]] = {}
        self._changelogs = ChangelogManager(table.io, table.layout)

    def snapshot_or_changelog(self, snapshot_id: int) -> Snapshot:
        """Snapshot ``snapshot_id``, else its long-lived changelog. Raises
        SnapshotExpiredError / SnapshotNotFoundError when neither exists."""
        snap = self._table.snapshot_manager.try_get(snapshot_id)
        if snap is None:
            snap = self._changelogs.try_get(snapshot_id)
        return snap if snap is not None else self._table.snapshot_manager.get(snapshot_id)

    # -- schema ------------------------------------------------------------------------------

    def output_schema(self) -> pa.Schema:
        schema = self._table.schema()
        if self.read_changelog:
            schema = schema.append(pa.field(ROW_KIND, pa.string(), nullable=False))
        return schema

    # -- offsets -----------------------------------------------------------------------------

    @property
    def mode(self) -> str:
        """The startup mode, ``default`` resolved (by ``scan.snapshot-id`` / ``-timestamp-millis``).

        ``latest-full`` and ``latest`` start where the table is when :meth:`initial_offset`
        is called; the other modes name a fixed place in the history.
        """
        if self._mode != "default":
            return self._mode
        return "from-snapshot" if self._snapshot_id is not None else \
            "from-timestamp" if self._timestamp is not None else "latest-full"

    def initial_offset(self) -> StreamOffset:
        """Where a new stream starts, by ``scan.mode``. Raises SnapshotNotFoundError /
        SnapshotExpiredError for a start that does not exist (any more)."""
        sm = self._table.snapshot_manager
        mode = self.mode
        latest = sm.latest_id() or 0
        if mode == "latest-full":
            return StreamOffset(latest, full=latest > 0)
        if mode == "latest":
            return StreamOffset(latest)
        if mode in ("from-snapshot", "from-snapshot-full"):
            if self._snapshot_id is None:
                raise InvalidArgumentError(f"scan.mode={mode} needs 'scan.snapshot-id'")
            self.snapshot_or_changelog(self._snapshot_id)  # raises if expired (changelog too) or missing
            if mode == "from-snapshot":
                return StreamOffset(self._snapshot_id - 1)
            return StreamOffset(self._snapshot_id, full=True)
        if self._timestamp is None:
            raise InvalidArgumentError("scan.mode=from-timestamp needs 'scan.timestamp-millis'")
        snap = sm.earlier_or_equal_time(self._timestamp)
        if snap is None:  # before every snapshot: the long-lived changelogs, if any
            snap = self._changelogs.earlier_or_equal_time(self._timestamp)
        if snap is None:
            earliest = self._changelogs.earliest_id() or sm.earliest_id()
            if earliest is None:
                return StreamOffset(0)
            return StreamOffset(earliest - 1)
        return StreamOffset(snap.id)

    def latest_offset(self, start: StreamOffset, max_snapshots: int | None = None,
                      max_files: int | None = None, max_rows: int | None = None,
                      up_to: int | None = None) -> StreamOffset:
        """The furthest offset after ``start`` within the limits (at least one step if there
        is anything new), capped at snapshot ``up_to`` (Trigger.AvailableNow)."""
        latest = self._table.snapshot_manager.latest_id() or 0
        if up_to is not None:
            latest = min(latest, up_to)
        if max_snapshots is None and max_files is None and max_rows is None:
            # No limit: nothing to count, so no manifest is read (a stream polls this often).
            return StreamOffset(max(start.snapshot, latest))
        files = rows = 0
        if start.full:
            splits = self._full_plan(start.snapshot)
            index = start.split_index
            while index < len(splits):
                more_files = files + sum(len(s.files) for s in splits[index])
                more_rows = rows + sum(s.row_count for s in splits[index])
                if index > start.split_index and _over(more_files, more_rows, max_files, max_rows):
                    return StreamOffset(start.snapshot, True, index)
                files, rows = more_files, more_rows
                index += 1
        position = start.snapshot
        taken = 0
        while position < latest:
            if max_snapshots is not None and taken >= max_snapshots:
                break
            step = self._changes(position + 1)
            step_rows = sum(f.rowCount for _, f in step)
            if (taken or start.full) and _over(files + len(step), rows + step_rows,
                                               max_files, max_rows):
                break  # limits are upper bounds; only a first step may pass them alone
            files += len(step)
            rows += step_rows
            position += 1
            taken += 1
        return StreamOffset(position)

    # -- planning and reading ---------------------------------------------------------------

    def plan(self, start: StreamOffset, end: StreamOffset) -> list[StreamSplit]:
        """The splits of the rows between ``start`` (exclusive) and ``end`` (inclusive).

        The changes of one (partition, bucket) over all the snapshots of the range make one
        split, in commit order, after that bucket's full-scan rows: every change of a key is
        read by one task in order, so a sink that writes it keeps the order (Spark orders the
        rows of one task, not those of different tasks).
        """
        full: list[StreamSplit] = []
        if start.full:
            splits = self._full_plan(start.snapshot)
            stop = end.split_index if end.full and end.snapshot == start.snapshot else len(splits)
            full = [StreamSplit(start.snapshot, unit, unit[0].partition_path, unit[0].bucket)
                    for unit in splits[start.split_index:stop]]
        if end.full:
            return full
        changes: dict[tuple[str, int], list[tuple[DataFileMeta, ...]]] = defaultdict(list)
        last: dict[tuple[str, int], int] = {}
        for sid in range(start.snapshot + 1, end.snapshot + 1):
            step: dict[tuple[str, int], list[DataFileMeta]] = defaultdict(list)
            for entry, f in self._changes(sid):
                step[(self._spec.path(entry.partition), entry.bucket)].append(f)
            for where, fs in step.items():
                changes[where].append(tuple(sorted(fs, key=lambda f: (f.minSequenceNumber, f.fileName))))
                last[where] = sid
        out: list[StreamSplit] = []
        for split in full:  # a primary-key bucket's changes follow its full-scan rows
            where = (split.partition_path, split.bucket)
            if self._pk and where in changes:
                split = replace(split, snapshot_id=last[where], steps=tuple(changes.pop(where)))
            out.append(split)
        out += [StreamSplit(last[where], (), where[0], where[1], tuple(steps))
                for where, steps in sorted(changes.items())]
        return out

    def read(self, split: StreamSplit) -> Iterator[pa.RecordBatch]:
        """Arrow batches of one stream split, in :meth:`output_schema`."""
        schema = self.output_schema()
        for full in split.full:
            for batch in read_split(self._table.context(), full):  # in the stream's schema
                t = pa.Table.from_batches([batch])
                yield from self._finish(t, None, schema)
        raw = Split(split.snapshot_id, [], split.partition_path, split.bucket, split.files, True)
        if not self._pk:
            for f in split.files:
                yield from self._finish(self._table.read_file_rows(raw, f), None, schema)
            return
        for step in split.steps:
            for run in _overlapping_runs(step):
                # one commit's rows in sequence order, as the table merges them (the tasks
                # of one Spark write interleave their numbers); a -U/-D row carries the
                # number of the row it retracts, so it sorts after that row
                parts = [self._table.read_file_rows(raw, f, with_kind=True, with_sequence=True) for f in run]
                t = pa.concat_tables(parts) if len(parts) > 1 else parts[0]
                if len(run) > 1:
                    retracts = pc.is_in(t.column(VALUE_KIND), pa.array([RowKind.UPDATE_BEFORE, RowKind.DELETE],
                                                                       pa.int8()))
                    order = pa.table({"seq": t.column(SEQUENCE), "retracts": retracts})
                    t = t.take(pc.sort_indices(order, [("seq", "ascending"), ("retracts", "ascending")]))
                yield from self._finish(t, t.column(VALUE_KIND), schema)

    def _finish(self, t: pa.Table, kinds: Any, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
        if kinds is not None and not self.read_changelog:
            keep = pc.invert(pc.or_(pc.equal(kinds, RowKind.UPDATE_BEFORE), pc.equal(kinds, RowKind.DELETE)))
            t = t.filter(keep)
            kinds = None
        if self.read_changelog:
            names = pc.take(row_kind_names(), kinds) if kinds is not None else \
                pa.array(np.full(t.num_rows, RowKind.INSERT.short, dtype=object), pa.string())
            t = t.select(schema.names[:-1]).append_column(ROW_KIND, names)
        t = t.select(schema.names)
        if not t.schema.equals(schema):
            t = t.cast(schema)
        yield from t.to_batches()

    # -- internals ----------------------------------------------------------------------------

    def _full_plan(self, snapshot_id: int) -> list[tuple[Split, ...]]:
        """The full scan of a snapshot in units an offset counts: one append file each (no
        merge, so rate limits can cut them), or all the splits of one primary-key bucket
        (one task reads a key's full row and its later changes)."""
        if snapshot_id not in self._full_plans:
            # in the stream's own schema (the table handle's), not a time-travel read's
            snap = self._table.snapshot(snapshot_id)
            splits = TableScan(self._table.context(), None, None, snap, None).plan()
            if self._pk:
                buckets: dict[tuple[str, int], list[Split]] = defaultdict(list)
                for s in splits:
                    buckets[(s.partition_path, s.bucket)].append(s)
                units = [tuple(group) for group in buckets.values()]
            else:
                units = [(replace(s, files=[f], row_count=f.rowCount),) for s in splits for f in s.files]
            self._full_plans[snapshot_id] = units
        return self._full_plans[snapshot_id]

    def _changes(self, snapshot_id: int) -> list[tuple[ManifestEntry, DataFileMeta]]:
        """(entry, file) pairs snapshot ``snapshot_id`` contributes to a stream."""
        snap = self.snapshot_or_changelog(snapshot_id)
        mio = self._table.manifests
        if snap.commitKind == OVERWRITE and not self._read_overwrite:
            return []
        use_changelog = self._pk and self._producer != "none" and self._changes_from != "delta"
        if use_changelog or snap.commitKind == COMPACT:
            if not use_changelog or snap.changelogManifestList is None:
                return []
            if snap.commitKind == APPEND and self._producer != "input":
                return []
            entries = mio.changelog_entries(snap)
        else:
            entries = mio.delta_entries(snap)
        return [(e, e.file) for e in entries if e.kind == ADD]


def changes_between(table: TableView, start: int, end: int, read_changelog: bool = True) -> pa.Table:
    """The changes of snapshots ``(start, end]`` as one Arrow table, as a stream reads them:
    changelog files where a changelog producer writes them, else the new files' rows with
    their kinds; with ``read_changelog`` an ``_row_kind`` column (+I, -U, +U, -D), without it
    -U/-D rows are dropped.

    Raises InvalidArgumentError (start >= end), SnapshotNotFoundError / SnapshotExpiredError.
    """
    check_between(start, end)
    scanner = StreamScanner(table, {"read.changelog": str(read_changelog).lower()})
    batches = [b for split in scanner.plan(StreamOffset(start), StreamOffset(end))
               for b in scanner.read(split)]
    return pa.Table.from_batches(batches, schema=scanner.output_schema())


def check_between(start: int, end: int) -> None:
    """``incremental-between`` needs ``0 <= start < end``. Raises InvalidArgumentError."""
    if not 0 <= start < end:
        raise InvalidArgumentError(
            f"incremental-between needs snapshot ids 0 <= start < end, got {start},{end}")


def _overlapping_runs(files: tuple[DataFileMeta, ...]) -> list[list[DataFileMeta]]:
    """One snapshot's ``files`` of a bucket in order of their first sequence number, cut
    where no later file's range overlaps an earlier one's: the rows of different runs need
    no sorting."""
    runs: list[list[DataFileMeta]] = []
    top = -1
    for f in sorted(files, key=lambda f: (f.minSequenceNumber, f.fileName)):
        if runs and f.minSequenceNumber <= top:
            runs[-1].append(f)
        else:
            runs.append([f])
        top = max(top, f.maxSequenceNumber)
    return runs


def _over(files: int, rows: int, max_files: int | None, max_rows: int | None) -> bool:
    """Whether ``files`` / ``rows`` exceed a limit (a limit is the most a batch may hold)."""
    return (max_files is not None and files > max_files) or (max_rows is not None and rows > max_rows)


__all__ = ["ROW_KIND", "SCAN_MODES", "changes_between", "check_between", "SnapshotNotFoundError", "StreamOffset", "StreamScanner", "StreamSplit"]
