"""Compaction: choosing (pure, see lsm.compaction_picker) and executing, then committing.

Primary-key buckets are LSM trees: every level-0 file is a sorted run, every level >= 1
one sorted run. A picked unit's files are merged with the merge engine into its output
level (deletes are dropped only when writing the bottom level). Append buckets merge small
files once there are ``compaction.min.file-num`` of them. All changes of one call are
committed as one COMPACT snapshot; a conflict with a concurrent compaction cancels ours.

With ``deletion-vectors.enabled`` every file is read without the rows its vector marks,
in both kinds of table. In a primary-key table the vector can be the only record of a
delete: Paimon's compaction drops a ``-D`` row once it has marked the rows it deletes, so
a merge of the files alone would bring those rows back. The positions left out are in the
message (:attr:`CommitMessage.vectorsApplied`), and the commit refuses the compaction if
one of them is no longer marked (a restore or rollback unmarked it meanwhile). The
``full-compaction`` changelog alone reads the bottom level with its marks: it is the
previous full compaction's output as written, and the marks set since are changes. A
primary-key bucket's merge streams (:mod:`.bucket_merge`).
"""

from __future__ import annotations

import sys
import uuid
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

import msgspec
import numpy as np

from ..commit.append_vectors import fingerprint
from ..commit.commit import FileStoreCommit
from ..errors import (
    DAMAGED_OR_GONE,
    CommitConflictError,
    ConflictReason,
    InvalidArgumentError,
)
from ..format.manifest_file import FILE_SOURCE_COMPACT, DataFileMeta, ManifestEntry
from ..format.snapshot import Snapshot
from ..lsm.compaction_picker import (
    STRATEGIES,
    AppendFile,
    PickerOptions,
    SortedRun,
    pick_append,
    pick_for,
)
from ..lsm.merge_engines import MergeConfig
from ..metadata.commit_message import CommitMessage
from ..metadata.context import HasContext, TableContext
from ..metadata.deletion_vectors import Vectors
from ..metadata.manifest_io import live_files
from ..read.file_read import iter_file_as
from ..read.read import sorted_runs_newest_first
from ..schema.features import check_writable
from ..write.rolling import RollingWriter
from . import postpone
from .bucket_merge import BucketRuns, compact_runs

BucketKey = tuple[tuple[Any, ...], int]


def sorted_runs(files: list[DataFileMeta]) -> list[SortedRun]:
    """The picker's view of :func:`~minipaimon_core.read.read.sorted_runs_newest_first`."""
    return [SortedRun(run[0].level, sum(f.fileSize for f in run), tuple(f.fileName for f in run))
            for run in sorted_runs_newest_first(files)]


def bucket_units(table: HasContext, only: set[BucketKey] | None = None,
                 snapshot: Snapshot | None = None) -> list[list[ManifestEntry]]:
    """The live files of ``snapshot`` (default: the latest) grouped by (partition, bucket),
    in a stable order; only the buckets in ``only`` if given. Each unit can be compacted on
    its own (in another process: units and messages pickle)."""
    ctx = table.context()
    check_writable(ctx.schema, ctx.path)
    buckets: dict[BucketKey, list[ManifestEntry]] = defaultdict(list)
    base = snapshot if snapshot is not None else ctx.snapshots.latest()
    for e in live_files(ctx.manifests, base):
        key = (tuple(e.partition), e.bucket)
        if e.bucket != postpone.POSTPONE_BUCKET and (only is None or key in only):  # postponed: postpone.py
            buckets[key].append(e)
    return [entries for _, entries in sorted(buckets.items(), key=lambda kv: repr(kv[0]))]


def commit_compaction(table: HasContext, messages: list[CommitMessage],
                      raise_on_conflict: bool = False) -> int | None:
    """Commit compaction messages as one COMPACT snapshot under a fresh commit user.

    On a conflict with a concurrent compaction our output files are deleted (theirs stand)
    and None is returned, or CommitConflictError raised with ``raise_on_conflict``.
    """
    if not messages:
        return None
    ctx = table.context()
    committer = FileStoreCommit(ctx.io, ctx.layout, ctx.schema, f"compact-{uuid.uuid4()}",
                                fresh_user=True)
    try:
        return committer.commit(messages, 0)
    except CommitConflictError:
        committer.abort(messages)
        if raise_on_conflict:
            raise
        return None


def maybe_compact(table: HasContext, messages: Sequence[CommitMessage] | None = None,
                  only: set[BucketKey] | None = None) -> int | None:
    """Automatic compaction after a commit of ``messages`` (``only``: of these buckets; all if None).

    Primary-key tables compact the buckets written when the picker finds work (all new
    level-0 files with the ``lookup`` changelog producer, a full compaction with
    ``full-compaction``); with ``write-only`` only buckets at
    :attr:`PickerOptions.stop_trigger` sorted runs are compacted, so runs never pile up
    unbounded. Append tables with fixed buckets merge a bucket's small files once there are
    ``compaction.min.file-num`` of them (at most ``compaction.max.file-num`` at once), as
    Paimon's bucketed append writers do, unless ``write-only``; append tables without
    buckets (``bucket`` -1) are compacted on demand only, as Paimon's batch writers leave
    them (None).
    """
    if only is None and messages is not None:
        only = {(tuple(m.partition), m.bucket) for m in messages}
    ctx = table.context()
    if only is not None and not only:
        return None
    options = ctx.options
    if not ctx.schema.primaryKeys:
        if options["write-only"] or options["bucket"] <= 0:
            return None
        return compact_table(ctx, "auto", only=only)
    if options["write-only"]:
        stop = PickerOptions.from_options(ctx.schema.options).stop_trigger
        return compact_table(ctx, "auto", only=only, min_runs=stop)
    full = options["changelog-producer"] == "full-compaction"
    return compact_table(ctx, "full" if full else "auto", only=only)


def explicit_strategy(strategy: Any = None, full: bool | None = None) -> str:
    """The strategy of a compaction a user asks for: ``full`` unless told ``minor`` (also
    ``full=False``). Raises InvalidArgumentError for another value or both at odds."""
    if full is not None and not isinstance(full, bool):
        raise InvalidArgumentError(f"full must be true or false, got {full!r}")
    if strategy is None:
        return "minor" if full is False else "full"
    if not isinstance(strategy, str) or strategy.lower() not in STRATEGIES:
        raise InvalidArgumentError(
            f"unknown compaction strategy {strategy!r}: 'full' (every bucket into one sorted "
            "run) or 'minor' (each bucket's new level-0 files merged down)")
    if full is not None and full != (strategy.lower() == "full"):
        raise InvalidArgumentError(f"full={full} contradicts strategy={strategy!r}: give one")
    return strategy.lower()


def compact_table(table: HasContext, strategy: str = "full", only: set[BucketKey] | None = None,
                  min_runs: int | None = None,
                  progress: Callable[[int, int], None] | None = None,
                  raise_on_conflict: bool = False) -> int | None:
    """Compact buckets of ``table`` (those in ``only`` if given) and commit once.

    ``strategy``: ``full`` (every bucket into one sorted run at the bottom level; append
    buckets into one file), ``minor`` (each bucket of more than one sorted run: its level-0
    files into level >= 1; append buckets: their small files), ``auto`` (what the picker
    finds due, as after a commit). ``min_runs``: compact only buckets with at least that
    many sorted runs. ``progress`` is called with (buckets done, buckets in all) after each bucket.
    Returns the COMPACT snapshot id, or None if nothing was compacted or a concurrent
    compaction won (its result stands; ours is deleted; CommitConflictError with
    ``raise_on_conflict``).
    """
    ctx = table.context()
    postponed_id = postpone.compact_postponed(ctx, raise_on_conflict=raise_on_conflict)[0] \
        if only is None and strategy != "auto" else None  # an explicit compaction: postponed rows first
    base = ctx.snapshots.latest()
    messages: list[CommitMessage] = []
    try:
        units = bucket_units(ctx, only, base)
        for i, entries in enumerate(units):
            msg = compact_bucket(ctx, entries, strategy, min_runs, base)
            if msg is not None:
                messages.append(msg)
            if progress is not None:
                progress(i + 1, len(units))
    except DAMAGED_OR_GONE as e:
        discard(ctx, messages)
        if base is None or not ctx.snapshots.has_expired(base):
            raise  # our snapshot is still there: the table is damaged
        # Expiration deletes a snapshot before its files: our base is gone, so a newer
        # compaction replaced our inputs. A lost race, like a conflict at commit.
        if raise_on_conflict:
            raise CommitConflictError(
                f"snapshot {base.id} of {ctx.path} was expired while compacting it (a "
                f"concurrent compaction replaced its files): {e}; retry the compaction",
                ConflictReason.BASE_EXPIRED) from e
        return None
    return commit_compaction(ctx, messages, raise_on_conflict) or postponed_id


def discard(table: HasContext, messages: list[CommitMessage]) -> None:
    """Delete the files uncommitted compaction ``messages`` wrote (compactAfter, changelog)."""
    ctx = table.context()
    FileStoreCommit(ctx.io, ctx.layout, ctx.schema, "discard").abort(messages)


def bucket_vectors(table: HasContext, partition: tuple[Any, ...], bucket: int,
                   snapshot: Snapshot | None) -> Vectors:
    """The deletion vectors of one bucket in ``snapshot`` ({} for none, or a table without
    ``deletion-vectors.enabled``, whose readers ignore vectors too)."""
    ctx = table.context()
    if not ctx.options["deletion-vectors.enabled"]:
        return {}
    entry = ctx.vectors.by_bucket(snapshot).get((tuple(partition), bucket))
    return ctx.vectors.vectors(entry) if entry is not None else {}


def compact_bucket(table: HasContext, entries: list[ManifestEntry], strategy: str,
                   min_runs: int | None = None, snapshot: Snapshot | None = None) -> CommitMessage | None:
    """Pick (by ``strategy``, see :func:`compact_table`) and execute one bucket's
    compaction; the message is not committed yet. ``snapshot``: the one ``entries`` are of
    (None: the latest), whose deletion vectors mark the rows left out (module docs)."""
    ctx = table.context()
    schema = ctx.schema
    options = ctx.options
    first = entries[0]
    partition, bucket = list(first.partition), first.bucket
    path = ctx.partition_spec().path(partition)
    files = [e.file for e in entries]

    def vectors() -> Vectors:  # read once a unit is picked
        return bucket_vectors(ctx, first.partition, bucket, snapshot if snapshot is not None else ctx.snapshots.latest())

    if not schema.primaryKeys:
        return _compact_append(ctx, partition, path, bucket, first.totalBuckets, files, strategy, vectors)
    runs = sorted_runs(files)
    if min_runs is not None and len(runs) < min_runs:
        return None
    opts = PickerOptions.from_options(schema.options).for_levels(max(f.level for f in files))
    unit = pick_for(runs, opts, strategy=strategy, level0=options["changelog-producer"] == "lookup")
    if unit is None:
        return None
    names = set(unit.files)
    inputs = [f for f in files if f.fileName in names]
    marked = vectors()
    config = MergeConfig.from_options(tuple(schema.primaryKeys), schema.options)
    after, changelog_files = compact_runs(BucketRuns(ctx, path, bucket, marked), config, files, inputs,
                                          unit.output_level, opts.max_level)
    applied = {f.fileName: applied_bytes(marked[f.fileName]) for f in inputs
               if len(marked.get(f.fileName, ()))}
    return CommitMessage(partition, path, bucket, first.totalBuckets, compactBefore=inputs,
                         compactAfter=after, changelogFiles=changelog_files, vectorsApplied=applied)


def applied_bytes(positions: np.ndarray) -> bytes:
    """:attr:`CommitMessage.vectorsApplied` of one file: its positions as little-endian uint32."""
    return np.asarray(positions, dtype="<u4").tobytes()


def _compact_append(ctx: TableContext, partition: list[Any], path: str, bucket: int, total_buckets: int,
                    files: list[DataFileMeta], strategy: str,
                    vectors_of: Callable[[], Vectors]) -> CommitMessage | None:
    options = ctx.options
    target = options["target-file-size"]
    # an explicit minor compaction merges any two small files; after a commit, min.file-num
    min_files = 2 if strategy == "minor" else options["compaction.min.file-num"]
    picked = pick_append([AppendFile(f.fileName, f.fileSize, f.minSequenceNumber) for f in files],
                         target, min_files, options["compaction.max.file-num"], strategy == "full")
    if picked is None:
        return None
    by_name = {f.fileName: f for f in files}
    small = [by_name[n] for n in picked]
    schema = ctx.schema
    names = schema.field_names
    # with deletion vectors the rows they mark are left out, and the commit drops the
    # vectors if they are still the ones read (minipaimon_core.commit.append_vectors)
    vectors = vectors_of()
    # streamed file after file, table by table, into one file: memory is one table and
    # the writer's buffer, whatever the files hold
    out = RollingWriter(ctx.io, ctx.layout, path, bucket, schema=schema, target=sys.maxsize,
                        compression=options["file.compression"], file_source=FILE_SOURCE_COMPACT)
    try:
        for f in small:
            for t in iter_file_as(ctx.io, ctx.layout, ctx.schemas, schema, path, bucket, f, names,
                                  deleted=vectors.get(f.fileName)):
                out.write(t)
        after = [msgspec.structs.replace(meta, minSequenceNumber=min(f.minSequenceNumber for f in small),
                                         maxSequenceNumber=max(f.maxSequenceNumber for f in small))
                 for meta in out.finish()]
    except BaseException:
        out.abort()
        raise
    read = {f.fileName: fingerprint(vectors.get(f.fileName)) for f in small} \
        if options["deletion-vectors.enabled"] else {}
    return CommitMessage(partition, path, bucket, total_buckets, compactBefore=small, compactAfter=after,
                         vectorsRead=read)
