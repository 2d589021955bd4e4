"""Scan planning: from a snapshot's manifests to picklable splits (metadata only).

One split per (partition, bucket) for primary-key tables (a bucket is merged whole). Append
tables, and primary-key tables with deletion vectors (whose files are read one by one, the
split naming the bucket's index file), cut each bucket into splits as Spark cuts file scans (:class:`SplitSizing`): files in
sequence order, each weighing ``max(size, source.split.open-file-cost)``, packed into splits
of at most the target size, where the target is ``source.split.target-size`` lowered to the
plan's total weight / ``parallelism`` (not below the open-file cost) when the reader says how
many tasks it runs, so a small table still makes one split per core. Partitions are pruned with the
filter on partition columns (once per partition), files with min/max stats (one term at a
time over all files' stats as arrays, :mod:`.stats_filter`): any column for append tables and
tables with deletion vectors, only primary-key columns for other primary-key tables (a
non-key value in an old file says nothing about the merged row).
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .. import file_format
from ..errors import CorruptMetadataError, InvalidArgumentError, SnapshotNotFoundError
from ..expressions import predicate, stats_filter
from ..file_format import file_index
from ..format.manifest_file import ADD, DataFileMeta, ManifestEntry
from ..format.manifest_list import ManifestFileMeta
from ..format.options import Options, parse
from ..format.snapshot import APPEND, COMPACT, Snapshot
from ..lsm.key_range import find_overlap
from ..lsm.merge_config import skips_level0
from ..metadata.deletion_vectors import BucketKey, DeletionVectorIO, IndexFileEntry
from ..metadata.manifest_io import ManifestIO, check_unique, live_adds
from ..metadata.snapshot_manager import SnapshotManager
from ..schema.bucket import postponed
from ..schema.partition import PartitionSpec
from ..schema.schema import TableSchema


def retraction_counts_trusted(schema: TableSchema) -> bool:
    """Whether a data file's recorded retraction count (``deleteRowCount``) is exact, so a
    file recording 0 holds no -U/-D row: in a primary-key table with deletion vectors, as
    Paimon's raw reads trust it there. Elsewhere a 0 proves nothing (pypaimon 2.1 records 0
    for every file, retractions or not): a read keeps rows by kind."""
    return bool(schema.primaryKeys) and bool(Options(schema.options)["deletion-vectors.enabled"])


@dataclass(frozen=True)
class Split:
    """Everything needed to read one piece of a table, and nothing more."""

    snapshot_id: int
    partition: list[Any]
    partition_path: str
    bucket: int
    files: list[DataFileMeta]
    raw_convertible: bool
    columns: list[str] | None = None
    filter: predicate.DNF | None = None
    schema_id: int = 0
    row_count: int = field(default=0)
    # The bucket's deletion-vector index file, as its index manifest lists it (tables with
    # deletion vectors): rows of ``files`` it marks are not read. None: no row is marked.
    deletion_index: IndexFileEntry | None = None
    # The branch whose files these are, where it is not the scanned one: a partition the
    # scanned branch lacks, read from its ``scan.fallback-branch`` (minipaimon_core.read.fallback).
    branch: str | None = None

    @property
    def reads_as_stored(self) -> bool:
        """Whether the split's rows are its files' rows as stored (row kinds aside) in Parquet
        files: no merge, no deletion vector, no ORC or Avro file (what a plain Parquet reader
        can read)."""
        return self.raw_convertible and self.deletion_index is None and \
            all(file_format.extension_of(f.fileName) == "parquet" for f in self.files)


@dataclass(frozen=True)
class PlanStats:
    """What planning one scan cost: the snapshot's data manifests and how many of them were
    read (the rest were skipped by their partition stats), the live entries examined, the
    files and splits planned, and the wall time (set by the caller that timed it)."""

    manifests: int = 0
    manifests_read: int = 0
    entries: int = 0
    files: int = 0
    splits: int = 0
    seconds: float = 0.0


SPLIT_OPTIONS = ("source.split.target-size", "source.split.open-file-cost")


@dataclass(frozen=True)
class SplitSizing:
    """How append-table buckets are cut into splits (Spark's rule for file scans).

    ``target(total)`` = min(target_size, max(open_file_cost, ceil(total / parallelism))),
    or target_size without a parallelism; ``total`` is the summed weight of the plan's files,
    a file weighing ``max(size, open_file_cost)``.
    """

    target_size: int
    open_file_cost: int
    parallelism: int | None = None

    @classmethod
    def of(cls, table_options: Mapping[str, str], overrides: Mapping[str, str] | None,
           parallelism: int | None) -> SplitSizing:
        """From the table's options, overridden by a scan's ``source.split.*`` options.

        Raises InvalidArgumentError for another option name or a parallelism < 1,
        UnsupportedOptionError for a bad value (both name the option).
        """
        for name in overrides or {}:
            if name not in SPLIT_OPTIONS:
                raise InvalidArgumentError(
                    f"scan option {name!r} is not a scan option; a scan takes {', '.join(SPLIT_OPTIONS)}")
        if parallelism is not None and parallelism < 1:
            raise InvalidArgumentError(f"parallelism must be >= 1, got {parallelism!r}")
        merged = {**table_options, **{k: str(v) for k, v in (overrides or {}).items()}}
        for name in overrides or {}:
            parse(name, merged[name])
        opts = Options(merged)
        return cls(opts[SPLIT_OPTIONS[0]], opts[SPLIT_OPTIONS[1]], parallelism)

    def target(self, total_weight: int) -> int:
        if self.parallelism is None:
            return self.target_size
        per_task = -(-total_weight // self.parallelism)
        return min(self.target_size, max(self.open_file_cost, per_task))

    def pack(self, files: list[DataFileMeta], target: int) -> list[list[DataFileMeta]]:
        """``files`` in sequence order, cut before a file that would take a split past
        ``target`` (a file heavier than ``target`` is a split of its own) or that is in
        another format than the split's (a table whose ``file.format`` changed: Spark's
        own Parquet reader can then take whole splits of Parquet files)."""
        if len(files) <= 1:
            return [files] if files else []
        out: list[list[DataFileMeta]] = []
        current: list[DataFileMeta] = []
        size = 0
        cost = self.open_file_cost
        for f in sorted(files, key=lambda f: f.minSequenceNumber):
            w = max(f.fileSize, cost)
            if current and (size + w > target or
                            file_format.extension_of(f.fileName) != file_format.extension_of(current[-1].fileName)):
                out.append(current)
                current, size = [], 0
            current.append(f)
            size += w
        if current:
            out.append(current)
        return out


def _partition_lookup(spec: PartitionSpec, values: Sequence[Any]) -> predicate.StatsLookup:
    index = {k: i for i, k in enumerate(spec.keys)}

    def lookup(column: str) -> tuple[Any, Any, int, int] | None:
        i = index.get(column)
        if i is None:
            return None
        v = values[i]
        return v, v, int(v is None), 1
    return lookup


def _manifest_lookup(keys: list[str], meta: ManifestFileMeta) -> predicate.StatsLookup:
    """Stats of partition column values over the entries of one manifest."""
    index = {k: i for i, k in enumerate(keys)}
    stats = meta.partitionStats

    def lookup(column: str) -> tuple[Any, Any, int, int] | None:
        i = index.get(column)
        nulls = stats.nullCounts[i] if i is not None and i < len(stats.nullCounts) else None
        if i is None or nulls is None:
            return None
        return stats.minValues[i], stats.maxValues[i], nulls, meta.numAddedFiles + meta.numDeletedFiles
    return lookup


class Planner:
    """Turns (snapshot, filter, columns) into splits for one table schema."""

    def __init__(self, manifests: ManifestIO, snapshots: SnapshotManager, schema: TableSchema,
                 schema_fields: dict[int, dict[str, int]], vectors: DeletionVectorIO | None = None
                 ) -> None:
        """``vectors``: the table's deletion vectors, given when the table has them."""
        self._manifests = manifests
        self._vectors = vectors
        self._snapshots = snapshots
        self._schema = schema
        self._arrow = schema.arrow_schema()
        self._spec = PartitionSpec.of(schema)
        self._schema_positions = schema_fields  # schema id -> column name -> stats position
        self.stats = PlanStats()  # of the last plan()

    def plan(self, snapshot: Snapshot | None, dnf: predicate.DNF | None, columns: list[str] | None,
             incremental: tuple[int, int] | None = None, sizing: SplitSizing | None = None
             ) -> list[Split]:
        """The splits of ``snapshot`` (or of the APPEND snapshots in ``incremental``) that
        ``dnf`` may match; append buckets cut by ``sizing`` (default: the table's options)."""
        manifests = read = 0
        if incremental is not None:
            entries = self._incremental_entries(*incremental)
            snap_id = incremental[1]
        elif snapshot is None:
            self.stats = PlanStats()
            return []
        else:
            every = self._manifests.data_manifests(snapshot)
            metas = self.prune_manifests(every, dnf)
            manifests, read = len(every), len(metas)
            # unpruned: also check the manifest lists against the snapshot's row counts
            entries = live_adds(self._manifests.data_entries(snapshot) if len(metas) == len(every)
                                else self._manifests.entries_of(metas), f"snapshot {snapshot.id}",
                                self._manifests.names_of(metas))
            if skips_level0(self._schema):  # as Paimon's batch reads: level 0 is not yet visible
                entries = [e for e in entries if e.file.level > 0]
            snap_id = snapshot.id
        if postponed(self._schema):  # as Paimon's reads: postponed rows are not in a bucket yet
            entries = [e for e in entries if e.bucket >= 0]
        groups: dict[tuple[tuple[Any, ...], int], list[ManifestEntry]] = defaultdict(list)
        pk = self._schema.primaryKeys
        # with deletion vectors a snapshot's files are read one by one, never merged
        dv = self._vectors is not None and incremental is None and snapshot is not None
        index = self._vectors.by_bucket(snapshot) if dv and self._vectors is not None else {}
        file_columns = pk if pk and not dv else None
        candidates = entries
        if dnf and self._spec.keys:
            partition_ok: dict[tuple[Any, ...], bool] = {}  # the filter on a partition, once per partition
            for e in entries:
                if e.partition not in partition_ok:
                    partition_ok[e.partition] = predicate.might_match(
                        dnf, _partition_lookup(self._spec, e.partition), self._spec.keys)
            candidates = [e for e in entries if partition_ok[e.partition]]
        # a bucket of a partition the filter keeps has all its entries (manifests are pruned
        # by partition only); other buckets may have some of theirs: only the former are checked
        complete = candidates
        if dnf:  # the filter on the files' stats, one term at a time over all files
            keep = stats_filter.may_match(dnf, [e.file for e in candidates], self._schema_positions, file_columns)
            candidates = list(itertools.compress(candidates, keep))
        if dnf and not pk and Options(self._schema.options)["file-index.read.enabled"]:  # embedded blooms
            keep = file_index.may_match(dnf, [e.file for e in candidates], self._schema.id)
            candidates = list(itertools.compress(candidates, keep))
        for e in candidates:
            groups[(e.partition, e.bucket)].append(e)
        sizing = sizing or SplitSizing.of(self._schema.options, None, None)
        cost = sizing.open_file_cost
        target = sizing.target(0 if sizing.parallelism is None else
                               sum(max(e.file.fileSize, cost) for g in groups.values() for e in g))
        splits: list[Split] = []
        if index:
            _check_vectors_name_live_files(index, complete)
        for (partition, bucket), group in sorted(groups.items(), key=lambda kv: repr(kv[0])):
            files = [e.file for e in group]
            path = self._spec.path(list(partition))
            entry = index.get((partition, bucket))
            marked = set(entry.data_files) if entry is not None else set()
            # files with vectors and files without are cut apart: the latter read as stored
            for part, deletion_index in (([f for f in files if f.fileName not in marked], None),
                                         ([f for f in files if f.fileName in marked], entry)):
                if not part:
                    continue
                for chunk, raw in self._cut(part, sizing, target, dv):
                    splits.append(Split(snap_id, list(partition), path, bucket, chunk, raw, columns, dnf,
                                        self._schema.id, sum(f.rowCount for f in chunk), deletion_index))
        self.stats = PlanStats(manifests, read, len(entries), sum(len(s.files) for s in splits), len(splits))
        return splits

    def prune_manifests(self, metas: list[ManifestFileMeta], dnf: predicate.DNF | None
                        ) -> list[ManifestFileMeta]:
        """The manifests whose partition range may hold a partition ``dnf`` matches.

        Safe with DELETE entries: a DELETE has its ADD's partition, so the manifest of a
        DELETE of a matching file is kept as well as the manifest of its ADD.
        """
        if not dnf or not self._spec.keys:
            return metas
        keys = self._spec.keys
        return [m for m in metas if predicate.might_match(dnf, _manifest_lookup(keys, m), keys)]

    def _cut(self, files: list[DataFileMeta], sizing: SplitSizing, target: int, dv: bool
             ) -> list[tuple[list[DataFileMeta], bool]]:
        if self._schema.primaryKeys and not dv:
            return [(files, find_overlap(files) is None)]
        return [(chunk, True) for chunk in sizing.pack(files, target)]

    def _incremental_entries(self, start: int, end: int) -> list[ManifestEntry]:
        """Files added by APPEND snapshots in (start, end]."""
        if start >= end:
            raise InvalidArgumentError(f"incremental-between needs start < end, got {start},{end}")
        entries: list[ManifestEntry] = []
        for sid in range(start + 1, end + 1):
            snap = self._snapshots.get(sid)
            if snap.commitKind != APPEND:
                continue
            delta = self._manifests.delta_entries(snap)
            entries.extend(e for e in delta if e.kind == ADD)
        check_unique(entries, f"snapshots {start + 1}..{end}")  # none added again later
        return entries


def _check_vectors_name_live_files(index: Mapping[BucketKey, IndexFileEntry],
                                   entries: Sequence[ManifestEntry]) -> None:
    """Every data file an index entry gives a vector is a live file of its bucket (checked
    for the buckets ``entries`` holds). Raises CorruptMetadataError: an index manifest of
    another snapshot or table was copied over this one's."""
    live: dict[BucketKey, set[str]] = defaultdict(set)
    for e in entries:
        live[(e.partition, e.bucket)].add(e.file.fileName)
    for key, entry in index.items():
        names = live.get(key)
        if names is not None and not names.issuperset(entry.data_files):
            raise CorruptMetadataError(
                f"index file {entry.fileName} has vectors of files that are not in bucket "
                f"{key[1]} of this snapshot: its index manifest was replaced or damaged")


def resolve_snapshot(snapshots: SnapshotManager, snapshot_id: int | None, timestamp_ms: int | None,
                     tag_snapshot: Snapshot | None) -> Snapshot | None:
    """The snapshot a batch scan reads: by id, by time, by tag, else the latest."""
    if snapshot_id is not None:
        return snapshots.get(snapshot_id)
    if timestamp_ms is not None:
        snap = snapshots.earlier_or_equal_time(timestamp_ms)
        if snap is None:
            raise SnapshotNotFoundError(f"no snapshot at or before timestamp {timestamp_ms}")
        return snap
    if tag_snapshot is not None:
        return tag_snapshot
    return snapshots.latest()


def parse_incremental(value: tuple[int, int] | str | None) -> tuple[int, int] | None:
    """``incremental_between`` of a scan as (start, end). Raises InvalidArgumentError."""
    if value is None:
        return None
    try:
        if isinstance(value, str):
            start, end = (int(x) for x in value.split(","))
        else:
            start, end = int(value[0]), int(value[1])
    except (ValueError, TypeError):
        raise InvalidArgumentError(f"incremental_between must be 'start,end', got {value!r}") from None
    return start, end


__all__ = ["COMPACT", "SPLIT_OPTIONS", "PlanStats", "Planner", "Split", "SplitSizing", "parse_incremental",
           "resolve_snapshot", "retraction_counts_trusted"]
