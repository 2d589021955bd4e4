"""Row-level changes by condition: ``Table.delete`` / ``Table.update``, and the reading,
writing and committing that ``Table.merge`` (:mod:`minipaimon_core.merge_into`) shares.

How the rows change on disk (docs/format.md, "Row-level changes"):

* **append tables, copy-on-write.** The files that may hold a selected row (pruned by
  partition and by their stats, as a scan prunes) are read whole; each file with a selected
  row is replaced by a file of its other rows (none if nothing is left), and changed rows
  are written anew through the table's writer (so an update of a partition column moves the
  row). One snapshot, an OVERWRITE as Paimon commits a copy-on-write DELETE. Files without a
  selected row are never rewritten.
* **primary-key tables, through the LSM.** The change is written as rows: ``-D`` for a
  deleted key, ``-U`` then ``+U`` for an updated one (partial-update: ``+U`` only), ``+I``
  for a merged insert, in one APPEND snapshot: streams and changelog producers see them,
  and with deletion vectors the commit marks the old rows as for any write.

Concurrency: a change reads the latest snapshot S and commits on whatever is latest then,
L. Append: the files it replaces must still be live in L (``FILES_GONE``). Primary key: no
commit after S (compactions aside) may have written a key the change deletes or updates,
or replaced files of its buckets (``ROWS_CHANGED``). On either conflict the whole change is
read and applied again on L, up to ``commit.max-retries`` times: it never resurrects a row a
concurrent writer deleted and never loses a concurrent insert.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from . import pools, predicate
from .append_writer import AppendWriter
from .bucket import bucket_keys, num_buckets
from .commit import FileStoreCommit
from .commit_message import CommitMessage
from .context import TableContext
from .data_file import write_data_file
from .dml_values import mask_of, set_expressions, updated_rows
from .errors import (
    CommitConflictError,
    ConflictReason,
    InvalidArgumentError,
    UnsupportedFeatureError,
)
from .features import check_writable
from .format.manifest_file import ADD, DataFileMeta
from .format.snapshot import COMPACT, Snapshot
from .post_commit import after_commit
from .read import read_file_as
from .scan import Split
from .schema import ROW_KIND_COLUMN
from .table_scan import TableScan, read_file_rows
from .table_write import TableWrite

T = TypeVar("T")


# -- what a change reads -------------------------------------------------------------------

@dataclass
class Target:
    """The rows a change reads from snapshot ``snapshot``: ``rows`` in the table's schema.
    Append tables: every row of the files that may hold a selected row, file ``files[i]``
    holding rows ``offsets[i]:offsets[i + 1]``. Primary-key tables: merged rows."""

    snapshot: Snapshot | None
    rows: pa.Table
    files: list[tuple[Split, DataFileMeta]] = field(default_factory=list)
    offsets: list[int] = field(default_factory=lambda: [0])


def read_target(ctx: TableContext, dnf: predicate.DNF | None) -> Target:
    """The rows of the latest snapshot a change selected by ``dnf`` works on (see
    :class:`Target`); primary-key rows are those ``dnf`` selects exactly."""
    snapshot = ctx.snapshots.latest()
    arrow = ctx.schema.arrow_schema()
    scan = TableScan(ctx, dnf, None, snapshot, None)
    if ctx.schema.primaryKeys:
        rows = scan.to_arrow() if snapshot is not None else arrow.empty_table()
        return Target(snapshot, rows)
    target = Target(snapshot, arrow.empty_table())
    target.files = [(split, f) for split in (scan.plan() if snapshot is not None else []) for f in split.files]
    parts = list(pools.pool("read").map(lambda sf: read_file_rows(ctx, sf[0], sf[1]).cast(arrow), target.files))
    for part in parts:
        target.offsets.append(target.offsets[-1] + part.num_rows)
    if parts:
        target.rows = pa.concat_tables(parts)
    return target


# -- what a change writes ------------------------------------------------------------------

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


def check_changeable(ctx: TableContext, deletes: bool, updates: bool) -> None:
    """Refuse a row-level change the table cannot express, before anything is read."""
    check_writable(ctx.schema, ctx.path)
    options = ctx.options
    if not ctx.schema.primaryKeys:
        if options["deletion-vectors.enabled"]:
            raise UnsupportedFeatureError(
                f"{ctx.path}: row-level changes of append tables with 'deletion-vectors.enabled' "
                "are not supported (minipaimon rewrites append files; it does not write their vectors)")
        return
    engine = options["merge-engine"]
    if engine in ("first-row", "aggregation") and (deletes or updates):
        raise UnsupportedFeatureError(
            f"{ctx.path}: the '{engine}' merge engine cannot express a row-level "
            f"{'delete' if deletes else 'update'}: "
            + ("the first row of a key is kept, later rows are ignored" if engine == "first-row"
               else "rows are aggregated, a row cannot be replaced")
            + "; only inserts are possible (merge with when_not_matched_insert clauses only)")
    if engine == "partial-update" and deletes and not options["partial-update.remove-record-on-delete"]:
        raise UnsupportedFeatureError(
            f"{ctx.path}: a partial-update table deletes a key only with "
            "'partial-update.remove-record-on-delete' = 'true' (otherwise a -D row is refused "
            "or, with 'ignore-delete', dropped)")
    if options["ignore-delete"] and deletes:
        raise UnsupportedFeatureError(
            f"{ctx.path}: the table has 'ignore-delete' = 'true': a deleted row would be dropped, "
            "not deleted")


def _check_partial_update_values(ctx: TableContext, updated: pa.Table, before: pa.Table) -> None:
    """A partial-update table takes a null as "keep the old value": refuse setting one."""
    for name in updated.column_names:
        if name in ctx.schema.primaryKeys:
            continue
        new_nulls = pc.and_(pc.is_null(updated.column(name)), pc.is_valid(before.column(name)))
        if pc.any(new_nulls).as_py():
            raise UnsupportedFeatureError(
                f"{ctx.path}: a partial-update table cannot set {name!r} to null (a null means "
                "'keep the old value' there)")


def apply_change(ctx: TableContext, target: Target, change: Change) -> int | None:
    """Write and commit ``change`` on ``target`` as one snapshot; returns its id (None if
    nothing changed). Files written are deleted if the commit fails.

    Raises:
        CommitConflictError: FILES_GONE / ROWS_CHANGED (the caller reads again and retries),
            or the snapshot race lost too often.
    """
    if change.empty:
        return None
    user = str(uuid.uuid4())
    committer = FileStoreCommit(ctx.io, ctx.layout, ctx.schema, user, fresh_user=True)
    messages: list[CommitMessage] = []
    try:
        if ctx.schema.primaryKeys:
            check = _write_key_value_change(ctx, target, change, user, messages)
        else:
            check = None
            _write_append_change(ctx, target, change, messages)
        snap_id = committer.commit_rewrite(messages, 0, check=check)
    except BaseException:
        if not committer.is_committed(0):
            committer.abort(messages)
        raise
    if snap_id is not None:  # as every writer: automatic compaction and expiration, never raising
        after_commit(ctx, messages)
    return snap_id


def _write_append_change(ctx: TableContext, target: Target, change: Change,
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
    fresh = pa.concat_tables([change.new_values.filter(pa.array(~stays)), change.inserted])
    if fresh.num_rows:
        writer = AppendWriter(ctx.io, ctx.layout, ctx.schema)
        try:
            writer.write(fresh)
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


def _write_key_value_change(ctx: TableContext, target: Target, change: Change, user: str,
                            messages: list[CommitMessage]) -> Callable[[Snapshot | None], None]:
    """Through the LSM: -D, -U/+U and +I rows in one write; returns the commit's check that
    no commit since ``target.snapshot`` wrote a key the change deletes or updates."""
    rows = target.rows
    deleted = rows.filter(pa.array(change.deleted))
    before = rows.filter(pa.array(change.updated))
    engine = ctx.options["merge-engine"]
    if engine == "partial-update" and before.num_rows:
        _check_partial_update_values(ctx, change.new_values, before)
    parts = []
    if deleted.num_rows:
        parts.append(_with_kind(deleted, "-D"))
    if before.num_rows:
        if engine == "deduplicate":
            parts.append(_with_kind(before, "-U"))
        parts.append(_with_kind(change.new_values, "+U"))
    if change.inserted.num_rows:
        parts.append(_with_kind(change.inserted, "+I"))
    writer = TableWrite(ctx, user)
    try:
        for part in parts:
            writer.write(part)
        messages += writer.prepare_commit()
    except BaseException:
        writer.abort()
        raise
    touched = {(tuple(m.partition), m.bucket) for m in messages}
    keys = rows.filter(pa.array(change.removed)).select(ctx.schema.primaryKeys)
    base = target.snapshot

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


# -- the statements ----------------------------------------------------------------------------

def with_retries(ctx_of: Callable[[], TableContext], attempt: Callable[[TableContext], T]) -> T:
    """``attempt`` on a fresh context, again from the latest snapshot after a conflict with
    a concurrent commit (FILES_GONE, ROWS_CHANGED), up to ``commit.max-retries`` times."""
    tries = 0
    while True:
        ctx = ctx_of()
        try:
            return attempt(ctx)
        except CommitConflictError as e:
            tries += 1
            if e.reason not in (ConflictReason.FILES_GONE, ConflictReason.ROWS_CHANGED) \
                    or tries > ctx.options["commit.max-retries"]:
                raise


def delete(ctx_of: Callable[[], TableContext], filter: Any) -> int:
    """Delete the rows ``filter`` selects (all rows if None); returns how many."""
    def attempt(ctx: TableContext) -> int:
        check_changeable(ctx, deletes=True, updates=False)
        dnf = predicate.normalize(filter, ctx.schema.arrow_schema())
        target = read_target(ctx, dnf)
        selected = selected_rows(ctx, target, dnf)
        empty = ctx.schema.arrow_schema().empty_table()
        nothing = np.zeros(len(selected), dtype=bool)
        apply_change(ctx, target, Change(selected, nothing, empty, empty))
        return int(selected.sum())
    return with_retries(ctx_of, attempt)


def update(ctx_of: Callable[[], TableContext], filter: Any, set: Mapping[str, Any]) -> int:
    """Set columns of the rows ``filter`` selects (all rows if None); returns how many."""
    if not isinstance(set, Mapping) or not set:
        raise InvalidArgumentError(f"set must be a non-empty dict of column -> value, got {set!r}")

    def attempt(ctx: TableContext) -> int:
        check_changeable(ctx, deletes=False, updates=True)
        arrow = ctx.schema.arrow_schema()
        exprs = set_expressions(ctx, set, "update")
        dnf = predicate.normalize(filter, arrow)
        target = read_target(ctx, dnf)
        selected = selected_rows(ctx, target, dnf)
        chosen = target.rows.filter(pa.array(selected))
        new_values = updated_rows(chosen, exprs, arrow, "update")
        nothing = np.zeros(len(selected), dtype=bool)
        apply_change(ctx, target, Change(nothing, selected, new_values, arrow.empty_table()))
        return int(selected.sum())
    return with_retries(ctx_of, attempt)


def selected_rows(ctx: TableContext, target: Target, dnf: predicate.DNF | None) -> np.ndarray:
    if dnf is None or ctx.schema.primaryKeys:  # primary-key rows were filtered exactly
        return np.ones(target.rows.num_rows, dtype=bool)
    return mask_of(target.rows, predicate.to_expression(dnf), "filter")


__all__ = ["Change", "Target", "apply_change", "delete", "keys_changed_since", "read_target",
           "update", "with_retries"]
