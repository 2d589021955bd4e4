"""The partial-update merge engine over keys of several rows (rules in
:mod:`minipaimon_core.lsm.merge_engines`), as Paimon's ``PartialUpdateMergeFunction``.

Without sequence groups each column takes its last non-null +I/+U value; with
``partial-update.remove-record-on-delete`` a -D forgets the values before it (-U rows were
dropped before). With sequence groups (``fields.<s>.sequence-group`` = ``<f1,f2>``):

* a group's columns and sequence fields take the values of its *winner*: of the rows whose
  sequence fields are not all null, the last one (merge order) with the largest sequence
  fields (compared in order, nulls first). A winner that is a retraction (-U or -D) leaves
  the group's columns null and its sequence fields the retraction's;
* a group column with an aggregate function folds every row whose sequence fields are not
  all null, in merge order (additions aggregate, retractions retract); ``first_value`` and
  ``last_value``, whose result depends on which rows win, follow Paimon's ``agg`` /
  ``aggReversed`` (:func:`.group_order.ordered_value`);
* other columns take their last non-null +I/+U value (an aggregate function folds the
  +I/+U rows); retractions do not touch them.

With ``partial-update.remove-record-on-sequence-group`` a -D that wins the named group
removes the whole record (:func:`_removals`).

Returns the merged rows and the group each belongs to (``remove-record-on-delete`` may
give a key two rows: its -D, then its +I).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .aggregation import fold_column
from .group_order import ORDERED_FUNCTIONS, ordered_value, running_ranks
from .merge_config import DELETE, VALUE_KIND, MergeConfig, SequenceGroup
from .merge_groups import Groups, finish, replace_column, sort_order, value_columns

Pieces = list[tuple[pa.Table, np.ndarray]]  # merged rows, and the group of each


def partial_update(table: pa.Table, config: MergeConfig, g: Groups, kinds: np.ndarray,
                   max_seq: np.ndarray, retract: np.ndarray, keep_deletes: bool) -> Pieces:
    """Merge each group of ``g`` (``kinds``: sorted; ``retract``: input order)."""
    if config.sequence_groups:
        start = _removals(table, config, g, kinds)
        out = _with_groups(table, config, g, retract, start)
        removed = (start >= 0) & (start == g.ends)
        ids = np.arange(len(g.starts))
        return [(finish(out, max_seq, removed, keep_deletes), ids if keep_deletes else ids[~removed])]
    is_delete = kinds == DELETE  # -U were dropped; remaining retractions are -D
    if is_delete.any():
        last_delete = g.last_where(is_delete)
        live_rows = ~is_delete & (np.arange(g.n) > last_delete[g.gid])
        deleted = g.last_where(live_rows) < 0  # nothing written after the latest -D
    else:
        last_delete = np.full(len(g.starts), -1)
        live_rows = np.ones(g.n, bool)
        deleted = np.zeros(len(g.starts), bool)
    out = table.take(g.order[g.ends])
    for i in value_columns(table, config):
        if table.column_names[i] == config.sequence_field:
            continue  # the last row's (the largest): a kept -D must keep it to win later
        col = table.column(i)
        if col.null_count == 0 and not is_delete.any():
            continue  # the last row's value is the latest non-null one
        valid = live_rows & pc.is_valid(col).to_numpy(zero_copy_only=False)[g.order]
        out = out.set_column(i, table.schema.field(i), g.take(col, g.last_where(valid)))
    ids = np.arange(len(g.starts))
    out = finish(out, max_seq, deleted, keep_deletes)
    pieces = [(out, ids if keep_deletes else ids[~deleted])]
    if not keep_deletes:
        return pieces
    shadow = (last_delete >= 0) & ~deleted  # deleted, then written again: keep the -D too
    if not shadow.any():
        return pieces
    d = table.take(g.order[last_delete[shadow]])
    d = replace_column(d, VALUE_KIND, pa.array(np.full(d.num_rows, DELETE, np.int8)))
    return [(d.cast(out.schema), np.flatnonzero(shadow)), *pieces]


def _removals(table: pa.Table, config: MergeConfig, g: Groups, kinds: np.ndarray) -> np.ndarray:
    """``partial-update.remove-record-on-sequence-group``: per group of ``g``, the sorted
    position of its last *removal*, or -1. A removal is a -D row that wins the removal group
    when it comes (its sequence fields not all null and not below the largest of the rows
    before it); as in Paimon's ``retractWithSequenceGroup`` it sets the whole record to its
    own values, so a key's merge starts there, and a key whose last row it is is removed.
    A removal leaves its group's largest sequence as it was, so whether a -D wins is decided
    by the largest before it whatever removals came earlier."""
    start = np.full(len(g.starts), -1)
    sg = config.removal_group
    if sg is None or not (kinds == DELETE).any():
        return start
    candidates, rank, before = running_ranks(table, g, sg, _nonempty(table, sg)[g.order])
    removal = np.zeros(g.n, bool)
    removal[candidates] = (rank >= before) & (kinds[candidates] == DELETE)
    return g.last_where(removal)


def _with_groups(table: pa.Table, config: MergeConfig, g: Groups, retract: np.ndarray,
                 start: np.ndarray) -> pa.Table:
    """The merged rows of a table with sequence groups; each key's merge from its sorted
    position ``start`` (its last removal, folded as the record's first values:
    :func:`_removals`; -1: all rows). ``table`` may hold some of the columns only (a
    projected read: the keys alone for ``count()``); a group's winner is found only for a
    group whose columns are read (their sequence fields are then read too:
    ``MergeConfig.merge_columns``)."""
    out = table.take(g.order[g.ends])
    grouped: dict[str, SequenceGroup] = {}
    for group in config.sequence_groups:
        grouped.update({f: group for f in (*group.sequence_fields, *group.fields)})
    within_sorted = np.arange(g.n) >= np.repeat(np.maximum(start, 0), g.sizes)
    reset_sorted = np.zeros(g.n, bool)
    reset_sorted[start[start >= 0]] = True
    within, reset = np.empty(g.n, bool), np.empty(g.n, bool)
    within[g.order], reset[g.order] = within_sorted, reset_sorted
    retract = retract & ~reset
    adds_sorted = ~retract[g.order] & within_sorted
    winners: dict[SequenceGroup, np.ndarray] = {}  # of the groups whose columns are read
    for i in value_columns(table, config):
        name = table.column_names[i]
        col = table.column(i)
        fn = config.aggregate_functions.get(name)
        sg = grouped.get(name)
        if sg is None and fn is not None:  # folds the +I/+U rows only
            value = fold_column(col, name, fn, g, retract, config, rows=~retract & within)
        elif sg is None:
            valid = adds_sorted & pc.is_valid(col).to_numpy(zero_copy_only=False)[g.order]
            value = g.take(col, g.last_where(valid))
        elif fn in ORDERED_FUNCTIONS:
            members = ((_nonempty(table, sg) | reset) & within)[g.order]
            value = ordered_value(col, name, fn, g, sg, table, members, ~retract[g.order], config)
        elif fn is not None:
            value = fold_column(col, name, fn, g, retract, config,
                                rows=(_nonempty(table, sg) | reset) & within)
        else:
            if sg not in winners:
                winners[sg] = _winner(table, g, sg, within, reset)
            win = winners[sg]
            if name not in sg.sequence_fields:  # a retraction that wins clears the column
                win = np.where((win >= 0) & adds_sorted[np.maximum(win, 0)], win, -1)
            value = g.take(col, win)
        out = out.set_column(i, table.schema.field(i), value)
    return out


def _nonempty(table: pa.Table, sg: SequenceGroup) -> np.ndarray:
    """Rows (input order) whose sequence fields of ``sg`` are not all null."""
    valid = np.zeros(table.num_rows, bool)
    for s in sg.sequence_fields:
        valid |= pc.is_valid(table.column(s)).to_numpy(zero_copy_only=False)
    return valid


def _winner(table: pa.Table, g: Groups, sg: SequenceGroup, within: np.ndarray,
            reset: np.ndarray) -> np.ndarray:
    """Per group of ``g``, the sorted position of ``sg``'s winner (see the module) among
    the rows ``within`` marks (input order), or -1; a ``reset`` row (a removal: the values
    a key's merge starts from) competes whatever its sequence fields."""
    candidates = np.flatnonzero(((_nonempty(table, sg) | reset) & within)[g.order])  # sorted positions
    win = np.full(len(g.starts), -1)
    if not len(candidates):
        return win
    rows = table.take(g.order[candidates]).select(list(sg.sequence_fields))
    keyed = rows.append_column("__group", pa.array(g.gid[candidates])) \
        .append_column("__position", pa.array(candidates))
    order = sort_order(keyed, ["__group", *sg.sequence_fields, "__position"])
    gids = g.gid[candidates][order]
    last = np.append(gids[1:] != gids[:-1], True)  # the last of each group in that order
    win[gids[last]] = candidates[order][last]
    return win
