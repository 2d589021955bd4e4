"""Row-level changes by condition: ``Table.delete`` / ``Table.update``, and the reading,
writing and committing that ``Table.merge`` (:mod:`minipaimon_core.dml.merge_into`) shares.

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
* **primary-key tables that cannot take a ``-D``** (``first-row``; ``partial-update`` /
  ``aggregation`` without their remove-record options): a delete by condition rewrites the
  compacted files holding deleted rows (:mod:`.dml_rewrite`), as Paimon's Spark DELETE.

Concurrency: a change reads the latest snapshot S and commits on whatever is latest then,
L. Append: the files it replaces must still be live in L (``FILES_GONE``). Primary key: no
commit after S (compactions aside) may have written a key the change deletes or updates,
or replaced files of its buckets (``ROWS_CHANGED``). On either conflict the whole change is
read and applied again on L, up to ``commit.max-retries`` times: it never resurrects a row a
concurrent writer deleted and never loses a concurrent insert.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..commit.append_vectors import fingerprint
from ..commit.commit import FileStoreCommit
from ..errors import (
    CommitConflictError,
    ConflictReason,
    InvalidArgumentError,
    UnsupportedFeatureError,
)
from ..expressions import predicate
from ..format.manifest_file import DataFileMeta
from ..io import pools
from ..metadata.commit_message import CommitMessage
from ..metadata.context import TableContext
from ..read.read import SplitReader
from ..read.scan import Split
from ..read.table_scan import TableScan, read_file_rows
from ..schema.features import check_writable
from .dml_rewrite import read_rewrite_target, rewrites_deletes
from .dml_sequence import settle
from .dml_values import mask_of, set_expressions, updated_rows
from .dml_write import Change, commit_change, new_user, write_change
from .target import AppendFileRows, Target

T = TypeVar("T")


# -- what a change reads -------------------------------------------------------------------

def read_append_file(ctx: TableContext, split: Split, f: DataFileMeta) -> AppendFileRows:
    """The live rows of append file ``f`` of ``split`` (its deletion vector applied)."""
    rows = read_file_rows(ctx, split, f).cast(ctx.schema.arrow_schema())
    mask = SplitReader(ctx.io, ctx.layout, ctx.schemas, ctx.schema, ctx.vectors).vector_mask(split, f, rows.num_rows)
    if mask is None:
        return AppendFileRows(rows, None, 0)
    return AppendFileRows(rows.filter(pa.array(mask)), np.flatnonzero(mask), fingerprint(np.flatnonzero(~mask)))


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
    files = [(split, f) for split in (scan.plan() if snapshot is not None else []) for f in split.files]
    parts = list(pools.pool("read").map(lambda sf: read_append_file(ctx, sf[0], sf[1]), files))
    for (split, f), part in zip(files, parts):
        target.add_file(split, f, part)
    if parts:
        target.rows = pa.concat_tables([p.rows for p in parts])
    return target


# -- what a change writes ------------------------------------------------------------------

def check_changeable(ctx: TableContext, deletes: bool, updates: bool, by_condition: bool = False) -> None:
    """Refuse a row-level change the table cannot express, before anything is read.
    ``by_condition``: a delete by condition (``delete``), which may rewrite compacted files
    where a ``-D`` cannot remove a row (:mod:`.dml_rewrite`); a merge cannot."""
    check_writable(ctx.schema, ctx.path)
    options = ctx.options
    if not ctx.schema.primaryKeys:
        return
    engine = options["merge-engine"]
    if engine in ("first-row", "aggregation") and updates:
        raise UnsupportedFeatureError(
            f"{ctx.path}: the '{engine}' merge engine cannot express a row-level update: "
            + ("the first row of a key is kept, later rows are ignored" if engine == "first-row"
               else "rows are aggregated, a row cannot be replaced")
            + "; only inserts and deletes are possible")
    if deletes and rewrites_deletes(ctx):
        if not by_condition:
            raise UnsupportedFeatureError(
                f"{ctx.path}: a '{engine}' table cannot take a -D row, so it deletes by condition "
                "only (Table.delete, which rewrites its compacted files, as Paimon's DELETE does); "
                "a merge cannot delete rows there: delete, then merge")
        return  # copy-on-write of compacted buckets: -D rows are not written
    if options["ignore-delete"] and deletes:
        raise UnsupportedFeatureError(
            f"{ctx.path}: the table has 'ignore-delete' = 'true': a deleted row would be dropped, "
            "not deleted")


def apply_change(ctx: TableContext, target: Target, change: Change,
                 guarded: pa.Table | None = None) -> int | None:
    """Write and commit ``change`` on ``target`` as one snapshot; returns its id (None if
    nothing changed). Files written are deleted if the commit fails. ``guarded``: primary
    keys, besides those the change removes, that no commit after ``target.snapshot`` may
    have written (a merge's inserts that must not replace a row: merge_keys).

    Raises:
        CommitConflictError: FILES_GONE / ROWS_CHANGED (the caller reads again and retries),
            or the snapshot race lost too often.
    """
    if change.empty:
        return None
    user = new_user()
    messages: list[CommitMessage] = []
    try:
        keys = write_change(ctx, target, change, user, messages)
    except BaseException:
        FileStoreCommit(ctx.io, ctx.layout, ctx.schema, user, fresh_user=True).abort(messages)
        raise
    if guarded is not None and guarded.num_rows:
        keys = guarded if keys is None or keys.num_rows == 0 else pa.concat_tables([keys, guarded])
    return commit_change(ctx, target.snapshot, user, messages, keys)


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


def selection(ctx: TableContext, filter: Any, prune: Any = None) -> tuple[predicate.DNF | None, Any]:
    """What a delete or update selects: ``filter`` is a DNF filter (``scan``'s; None: every
    row) or a ``pyarrow.compute`` boolean expression over the columns (the rows it is true
    for); with an expression, ``prune`` is a DNF filter every selected row satisfies (the
    partitions and files it rules out are not read). Returns (DNF to read by, expression).

    Raises InvalidArgumentError: a bad filter, or ``prune`` without an expression.
    """
    arrow = ctx.schema.arrow_schema()
    if isinstance(filter, pc.Expression):
        return predicate.normalize(prune, arrow), filter
    if prune is not None:
        raise InvalidArgumentError("prune goes with a filter that is a pyarrow.compute expression")
    return predicate.normalize(filter, arrow), None


def delete(ctx_of: Callable[[], TableContext], filter: Any, prune: Any = None) -> int:
    """Delete the rows ``filter`` selects (all rows if None; see :func:`selection`); returns
    how many."""
    def attempt(ctx: TableContext) -> int:
        check_changeable(ctx, deletes=True, updates=False, by_condition=True)
        dnf, expression = selection(ctx, filter, prune)
        target = delete_target(ctx, dnf)
        selected = selected_rows(ctx, target, dnf, expression)
        empty = ctx.schema.arrow_schema().empty_table()
        nothing = np.zeros(len(selected), dtype=bool)
        apply_change(ctx, target, Change(selected, nothing, empty, empty))
        return int(selected.sum())
    return with_retries(ctx_of, attempt)


def update(ctx_of: Callable[[], TableContext], filter: Any, set: Mapping[str, Any], prune: Any = None) -> int:
    """Set columns of the rows ``filter`` selects (all rows if None; see :func:`selection`);
    returns how many changed (with ``sequence.field``, a row whose new sequence value is
    lower than its stored one does not change: minipaimon_core.dml.dml_sequence)."""
    if not isinstance(set, Mapping) or not set:
        raise InvalidArgumentError(f"set must be a non-empty dict of column -> value, got {set!r}")

    def attempt(ctx: TableContext) -> int:
        check_changeable(ctx, deletes=False, updates=True)
        arrow = ctx.schema.arrow_schema()
        exprs = set_expressions(ctx, set, "update")
        dnf, expression = selection(ctx, filter, prune)
        target = read_target(ctx, dnf)
        selected = selected_rows(ctx, target, dnf, expression)
        chosen = target.rows.filter(pa.array(selected))
        new_values = updated_rows(chosen, exprs, arrow, "update")
        nothing = np.zeros(len(selected), dtype=bool)
        change = settle(ctx, target.rows, Change(nothing, selected, new_values, arrow.empty_table()))
        apply_change(ctx, target, change)
        return int(change.updated.sum())
    return with_retries(ctx_of, attempt)


def delete_target(ctx: TableContext, dnf: predicate.DNF | None) -> Target:
    """What a delete selected by ``dnf`` reads: :func:`read_target`, or the stored rows of
    compacted files where deletes rewrite them (:mod:`.dml_rewrite`)."""
    return read_rewrite_target(ctx, dnf) if rewrites_deletes(ctx) else read_target(ctx, dnf)


def selected_rows(ctx: TableContext, target: Target, dnf: predicate.DNF | None,
                  expression: Any = None) -> np.ndarray:
    """Which rows of ``target`` (read by ``dnf``) a change selects: where ``expression`` is
    true if there is one, else those ``dnf`` selects."""
    if expression is not None:
        return mask_of(target.rows, expression, "filter")
    if dnf is None or ctx.schema.primaryKeys and not target.files:  # merged rows filtered exactly
        return np.ones(target.rows.num_rows, dtype=bool)
    return mask_of(target.rows, predicate.to_expression(dnf), "filter")


__all__ = ["Change", "Target", "apply_change", "check_changeable", "delete", "delete_target", "read_target",
           "selected_rows", "selection", "update", "with_retries"]
