"""What a row-level change writes (:mod:`minipaimon_core.dml.dml` reads, decides and commits):
copy-on-write replacements of append files, ``-D`` / ``-U`` / ``+U`` / ``+I`` rows of
primary-key tables, and the commit check that no concurrent commit wrote the keys a change
removes. Written files are recorded in the caller's message list as they are written, so a
failure anywhere deletes them all. The functions here also run in Spark tasks (a
distributed merge writes each piece of the target where it is read:
:mod:`minipaimon_core.dml.merge_units`)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..commit.commit import FileStoreCommit
from ..commit.table_write import TableWrite
from ..errors import CommitConflictError, ConflictReason, UnsupportedFeatureError
from ..file_format.data_file import write_data_file
from ..format.manifest_file import ADD
from ..format.snapshot import COMPACT, Snapshot
from ..io import pools
from ..maintenance.post_commit import after_commit
from ..metadata.commit_message import CommitMessage
from ..metadata.context import TableContext
from ..metadata.sequence import SequenceStart
from ..read.read import read_file_as
from ..schema.bucket import bucket_keys, num_buckets
from ..schema.schema import ROW_KIND_COLUMN
from ..write.append_writer import AppendWriter
from .dml_rewrite import write_rewrite
from .target import Target


@dataclass
class Change:
    """A change to the rows of a :class:`Target`, by masks over ``target.rows``: rows
    ``deleted`` and rows ``updated`` (disjoint), the new values of the updated rows (in
    their order in ``target.rows``) and rows inserted."""

    deleted: np.ndarray
    updated: np.ndarray
    new_values: pa.Table
    inserted: pa.Table

    @property
    def removed(self) -> np.ndarray:
        """Rows that leave their place (deleted or updated)."""
        return self.deleted | self.updated

    @property
    def empty(self) -> bool:
        return not self.removed.any() and self.inserted.num_rows == 0


def check_partial_update_values(ctx: TableContext, updated: pa.Table, before: pa.Table) -> None:
    """A partial-update table takes a null as "keep the old value": refuse setting one."""
    for name in updated.column_names:
        if name in ctx.schema.primaryKeys:
            continue
        new_nulls = pc.and_(pc.is_null(updated.column(name)), pc.is_valid(before.column(name)))
        if pc.any(new_nulls).as_py():
            raise UnsupportedFeatureError(
                f"{ctx.path}: a partial-update table cannot set {name!r} to null (a null means "
                "'keep the old value' there)")


def write_change(ctx: TableContext, target: Target, change: Change, user: str,
                 messages: list[CommitMessage], sequence: SequenceStart | None = None) -> pa.Table | None:
    """Write ``change``'s files (no commit), appending their messages to ``messages`` as
    they are written; returns, for a primary-key table, the keys of the rows it removes
    (what the commit check looks for), else None. ``sequence``: where a primary-key
    writer's numbers start (a Spark task's share of a job's start)."""
    if ctx.schema.primaryKeys and target.files:  # compacted files rewritten (dml_rewrite)
        return write_rewrite(ctx, target, change.deleted, messages)
    if ctx.schema.primaryKeys:
        return write_key_value_change(ctx, target, change, user, messages, sequence)
    if ctx.options["deletion-vectors.enabled"]:
        write_append_vectors(ctx, target, change, messages)
    else:
        write_append_change(ctx, target, change, messages)
    return None


def write_append_vectors(ctx: TableContext, target: Target, change: Change,
                         messages: list[CommitMessage]) -> None:
    """Deletion vectors (append tables with ``deletion-vectors.enabled``): the removed rows
    of each file marked (a message per file, nothing rewritten: minipaimon_core.commit.append_vectors);
    updated and inserted rows written through the table's writer."""
    removed = change.removed
    buckets = num_buckets(ctx.schema)
    for i, (split, f) in enumerate(target.files):
        lo, hi = target.offsets[i], target.offsets[i + 1]
        gone = np.flatnonzero(removed[lo:hi])
        if not len(gone):
            continue
        where = target.positions[i]
        positions = gone if where is None else where[gone]
        messages.append(CommitMessage(
            partition=list(split.partition), partitionPath=split.partition_path, bucket=split.bucket,
            totalBuckets=buckets, deletedRows={f.fileName: positions.tolist()},
            vectorsRead={f.fileName: target.vectors[i]}))
    _write_rows(ctx, pa.concat_tables([change.new_values, change.inserted]), messages)


def commit_change(ctx: TableContext, base: Snapshot | None, user: str, messages: list[CommitMessage],
                  removed_keys: pa.Table | None) -> int | None:
    """One commit (OVERWRITE for replaced append files, else APPEND) of a change's files
    written by ``user`` on snapshot ``base``; the files are deleted if it fails. Then, as
    every writer, automatic compaction and expiration (never raising).

    Raises:
        CommitConflictError: FILES_GONE (a replaced file is gone), ROWS_CHANGED (a commit
            since ``base`` wrote one of ``removed_keys`` or replaced files of a touched
            bucket), or the snapshot race lost too often.
    """
    committer = FileStoreCommit(ctx.io, ctx.layout, ctx.schema, user, fresh_user=True, manifests=ctx.manifests,
                                clock=ctx.clock)
    check = None
    if removed_keys is not None:
        check = rows_changed_check(ctx, base, {(tuple(m.partition), m.bucket) for m in messages}, removed_keys)
    try:
        snap_id = committer.commit_rewrite(messages, 0, check=check)
    except BaseException:
        if not committer.may_have_landed():  # else they may be the table's: never delete
            committer.abort(messages)
        raise
    if snap_id is not None:
        after_commit(ctx, messages, end_of_input=True)
    return snap_id


def new_user() -> str:
    """A fresh commit user for one change (so no earlier commit of it needs looking up)."""
    return str(uuid.uuid4())


def write_append_change(ctx: TableContext, target: Target, change: Change,
                         messages: list[CommitMessage]) -> None:
    """Copy-on-write: each file with a removed row replaced by one file of its other rows and
    of its updated rows that stay in its partition and bucket (files written concurrently);
    rows that move and inserted rows through the table's writer (messages appended as files
    are written, so a failure deletes them)."""
    updated_at = np.flatnonzero(change.updated)
    stays = _stays_in_place(ctx, target.rows.take(pa.array(updated_at)), change.new_values)
    file_of = np.searchsorted(np.asarray(target.offsets), updated_at, side="right") - 1
    buckets = num_buckets(ctx.schema)
    compression = ctx.options["file.compression"]
    removed = change.removed
    work = [i for i in range(len(target.files)) if removed[target.offsets[i]:target.offsets[i + 1]].any()]

    def rewrite(i: int) -> CommitMessage:
        """File ``i`` replaced (on a write thread: the filter and the write of each file run
        concurrently)."""
        split, f = target.files[i]
        lo, hi = target.offsets[i], target.offsets[i + 1]
        rows = target.rows.slice(lo, hi - lo).filter(pa.array(~removed[lo:hi]))
        mine = np.flatnonzero(stays & (file_of == i))
        if len(mine):
            rows = pa.concat_tables([rows, change.new_values.take(pa.array(mine))])
        new_files = [write_data_file(ctx.io, ctx.layout, split.partition_path, split.bucket, rows,
                                     schema=ctx.schema, compression=compression, min_seq=0,
                                     max_seq=rows.num_rows - 1)] if rows.num_rows else []
        return CommitMessage(partition=list(split.partition), partitionPath=split.partition_path,
                             bucket=split.bucket, totalBuckets=buckets, compactBefore=[f], newFiles=new_files)

    futures = [pools.pool("write").submit(rewrite, item) for item in work]
    failure: BaseException | None = None
    for future in futures:  # every write finishes first: a failure deletes what the others wrote
        try:
            messages.append(future.result())
        except BaseException as e:  # noqa: BLE001 - re-raised below, after the others
            failure = failure or e
    if failure is not None:
        raise failure
    _write_rows(ctx, pa.concat_tables([change.new_values.filter(pa.array(~stays)), change.inserted]), messages)


def _write_rows(ctx: TableContext, rows: pa.Table, messages: list[CommitMessage]) -> None:
    """New append files of ``rows`` through the table's writer (partitions, buckets)."""
    if rows.num_rows:
        writer = AppendWriter(ctx.io, ctx.layout, ctx.schema)
        try:
            writer.write(rows.combine_chunks())  # one batch: the writer works per batch
            messages += writer.prepare_commit()
        finally:
            writer.close()


def _stays_in_place(ctx: TableContext, old: pa.Table, new: pa.Table) -> np.ndarray:
    """Which updated rows keep their partition and bucket (every partition and bucket-key
    value unchanged, nulls equal to nulls)."""
    stays = np.ones(new.num_rows, dtype=bool)
    keys = list(ctx.schema.partitionKeys) + (bucket_keys(ctx.schema) if num_buckets(ctx.schema) > 0 else [])
    for name in dict.fromkeys(keys):
        a, b = old.column(name), new.column(name)
        same = pc.or_kleene(pc.equal(a, b), pc.and_(pc.is_null(a), pc.is_null(b)))
        stays &= np.asarray(pc.fill_null(same, False).to_numpy(zero_copy_only=False), dtype=bool)
    return stays


def write_key_value_change(ctx: TableContext, target: Target, change: Change, user: str,
                           messages: list[CommitMessage], sequence: SequenceStart | None = None) -> pa.Table:
    """Through the LSM: -D, -U/+U and +I rows in one write; returns the primary keys of the
    rows deleted or updated (the commit's check looks for them)."""
    rows = target.rows
    deleted = rows.filter(pa.array(change.deleted))
    before = rows.filter(pa.array(change.updated))
    engine = ctx.options["merge-engine"]
    if engine == "partial-update" and before.num_rows:
        check_partial_update_values(ctx, change.new_values, before)
    parts = []
    if deleted.num_rows:
        parts.append(_with_kind(deleted, "-D"))
    if before.num_rows:
        if engine == "deduplicate":
            parts.append(_with_kind(before, "-U"))
        parts.append(_with_kind(change.new_values, "+U"))
    if change.inserted.num_rows:
        parts.append(_with_kind(change.inserted, "+I"))
    writer = TableWrite(ctx, user, sequence)
    try:
        for part in parts:
            writer.write(part.combine_chunks())  # one batch: the writer works per batch
        messages += writer.prepare_commit()
    except BaseException:
        writer.abort()
        raise
    return rows.filter(pa.array(change.removed)).select(ctx.schema.primaryKeys)


def rows_changed_check(ctx: TableContext, base: Snapshot | None, touched: set[tuple[tuple[Any, ...], int]],
                       keys: pa.Table) -> Callable[[Snapshot | None], None]:
    """The commit check of a primary-key change read at ``base``: ROWS_CHANGED if a commit
    since then wrote one of ``keys`` or replaced files of a ``touched`` bucket."""
    def check(latest: Snapshot | None) -> None:
        conflict = keys_changed_since(ctx, base, latest, touched, keys)
        if conflict is not None:
            raise CommitConflictError(conflict, ConflictReason.ROWS_CHANGED)
    return check


def _with_kind(rows: pa.Table, kind: str) -> pa.Table:
    return rows.append_column(ROW_KIND_COLUMN, pa.repeat(pa.scalar(kind, pa.string()), rows.num_rows))


def keys_changed_since(ctx: TableContext, base: Snapshot | None, latest: Snapshot | None,
                       buckets: set[tuple[tuple[Any, ...], int]], keys: pa.Table) -> str | None:
    """Why a primary-key change read at ``base`` no longer applies on ``latest``: a commit
    after ``base`` (compactions aside) wrote one of ``keys`` or replaced files of one of
    ``buckets``; None if none did."""
    if latest is None or (base is not None and latest.id <= base.id) or keys.num_rows == 0:
        return None
    first = (base.id if base is not None else 0) + 1
    names = keys.column_names
    spec = ctx.partition_spec()
    for sid in range(first, latest.id + 1):
        snap = latest if sid == latest.id else ctx.snapshots.try_get(sid)
        if snap is None:
            return f"snapshot {sid} expired before the change could check it; the change is read again"
        if snap.commitKind == COMPACT:
            continue
        for e in ctx.manifests.delta_entries(snap):
            if (tuple(e.partition), e.bucket) not in buckets:
                continue
            if e.kind != ADD:
                return (f"snapshot {sid} ({snap.commitKind}) replaced files of bucket {e.bucket} "
                        f"of partition {list(e.partition)} that the change read")
            written = read_file_as(ctx.io, ctx.layout, ctx.schemas, ctx.schema,
                                   spec.path(list(e.partition)), e.bucket, e.file, names)
            if written.join(keys, names, join_type="inner").num_rows:
                return (f"snapshot {sid} ({snap.commitKind}) wrote keys the change deletes or "
                        "updates after the change read them")
    return None


__all__ = ["Change", "commit_change", "keys_changed_since", "new_user", "rows_changed_check", "write_change"]
