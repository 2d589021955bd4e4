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
  all null, in merge order (additions aggregate, retractions retract);
* other columns take their last non-null +I/+U value (an aggregate function folds the
  +I/+U rows); retractions do not touch them.

Returns the merged rows and the group each belongs to (``remove-record-on-delete`` may
give a key two rows: its -D, then its +I).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .aggregation import fold_column
from .merge_config import DELETE, VALUE_KIND, MergeConfig, SequenceGroup
from .merge_groups import Groups, finish, replace_column, sort_order, value_columns

Pieces = list[tuple[pa.Table, np.ndarray]]  # merged rows, and the group of each


def partial_update(table: pa.Table, config: MergeConfig, g: Groups, kinds: np.ndarray,
                   max_seq: np.ndarray, retract: np.ndarray, keep_deletes: bool) -> Pieces:
    """Merge each group of ``g`` (``kinds``: sorted; ``retract``: input order)."""
    if config.sequence_groups:
        out = _with_groups(table, config, g, retract)
        return [(finish(out, max_seq, np.zeros(len(g.starts), bool), False),
                 np.arange(len(g.starts)))]
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


def _with_groups(table: pa.Table, config: MergeConfig, g: Groups, retract: np.ndarray) -> pa.Table:
    """The merged rows of a table with sequence groups. ``table`` may hold some of the
    columns only (a projected read: the keys alone for ``count()``); a group's winner is
    found only for a group whose columns are read (their sequence fields are then read too:
    ``MergeConfig.merge_columns``)."""
    out = table.take(g.order[g.ends])
    grouped: dict[str, SequenceGroup] = {}
    for group in config.sequence_groups:
        grouped.update({f: group for f in (*group.sequence_fields, *group.fields)})
    adds_sorted = ~retract[g.order]
    winners: dict[SequenceGroup, np.ndarray] = {}  # of the groups whose columns are read
    for i in value_columns(table, config):
        name = table.column_names[i]
        col = table.column(i)
        fn = config.aggregate_functions.get(name)
        sg = grouped.get(name)
        if sg is None and fn is not None:  # folds the +I/+U rows only
            value = fold_column(col, name, fn, g, retract, config, rows=~retract)
        elif sg is None:
            valid = adds_sorted & pc.is_valid(col).to_numpy(zero_copy_only=False)[g.order]
            value = g.take(col, g.last_where(valid))
        elif fn is not None:
            value = fold_column(col, name, fn, g, retract, config, rows=_nonempty(table, sg))
        else:
            if sg not in winners:
                winners[sg] = _winner(table, g, sg)
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


def _winner(table: pa.Table, g: Groups, sg: SequenceGroup) -> np.ndarray:
    """Per group of ``g``, the sorted position of ``sg``'s winner (see the module), or -1."""
    candidates = np.flatnonzero(_nonempty(table, sg)[g.order])  # sorted positions
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
