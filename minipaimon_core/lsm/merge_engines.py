"""Merge engines: vectorised merge-on-read of the rows of one (partition, bucket).

``merge`` takes the rows of several sorted runs concatenated (user columns plus
``_SEQUENCE_NUMBER`` int64 and ``_VALUE_KIND`` int8: 0 +I, 1 -U, 2 +U, 3 -D) and returns one
row per key, sorted by key.  A key's rows are ordered by (``sequence.field`` nulls first,
``_SEQUENCE_NUMBER``), ties by input position.  All work is over whole arrays: one sort,
adjacent-key comparison for group boundaries, ``reduceat`` / Arrow hash aggregates, ``take``.
Sorted runs concatenated oldest first are not re-sorted: for integer/temporal keys a stable
sort on the key alone merges them and is the whole order once checked (see ``Groups``).
Output rows keep the ``_VALUE_KIND`` Paimon's merge functions give them: ``deduplicate``
and ``first-row`` return a stored row with its own kind (+I or +U; a -U/-D winner of
``deduplicate`` only when ``keep_deletes``: compaction into a non-bottom level, where the
delete must still shadow older levels); ``partial-update`` and ``aggregation`` return a
key's one row as it is (below), else a built +I row (-D for a deleted key when
``keep_deletes``); ``_SEQUENCE_NUMBER`` is the largest of the key.  Merging runs with
``keep_deletes=True`` and later merging that output with other runs gives the same result
as merging everything at once (piecewise property; limits below).

* ``deduplicate``: the last row wins; a -U/-D winner deletes the key.
* ``first-row``: the first +I/+U row wins; -U/-D raise unless ``ignore-delete``.
* ``partial-update`` and ``aggregation``, as Paimon's ``ReducerMergeFunctionWrapper``: a
  key with one row passes through unmerged, its kind too, so a lone -U/-D is dropped by a
  read (and a bottom-level compaction) and kept by other compactions; a key of several
  rows merges into one +I row (see :mod:`.partial_update` and :mod:`.aggregation`).
* ``partial-update``: per column the last non-null +I/+U value. A merged -U/-D raises
  unless ``ignore-delete`` (dropped), ``partial-update.remove-record-on-delete`` (-U
  dropped; -D forgets earlier values and deletes the key unless a +I/+U follows it; with
  ``keep_deletes`` such a re-written key keeps its -D row before its +I row, the only case
  of two output rows for one key) or sequence groups (a group's columns follow the row
  with its largest sequence fields, a winning retraction clears them; with
  ``partial-update.remove-record-on-sequence-group`` a -D winning the named group removes
  the key; :mod:`.partial_update`).
* ``aggregation``: per column a function (default ``last_non_null_value``), folded from a
  null state in merge order; -U/-D rows retract (``sum`` subtracts, ``product`` divides,
  ``last_value`` becomes null, ``collect`` removes elements, ...); a function without a
  retraction raises InvalidArgumentError on one unless ``fields.<f>.ignore-retract``. With
  ``aggregation.remove-record-on-delete`` a -D resets the key instead (see
  :func:`.aggregation.delete_resets`): a key whose last row is a -D merges into that -D.

Aggregated rows are states, valid as input: ``count`` stores the running count and merging
sums it, so user rows must pass :func:`prepare_input` (non-null -> 1, null -> 0) exactly
once.  Piecewise limits, as in Paimon (its compactions meet them too): a merged row cannot
tell "reset to null" from "no value" (``last_non_null_value`` after a retraction;
``first_value``/``last_value`` of a key with only ignored retractions); ``product``
retracts a null state to the retracted value; a lone retraction dropped by a bottom-level
compaction no longer meets the rows written after it; and a merged row carries one
``sequence.field`` value, so for partial-update/aggregation newer rows must not sort
before older ones.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from minipaimon_core.errors import InvalidArgumentError

from .aggregation import aggregate, delete_resets
from .merge_config import (
    AGGREGATE_FUNCTIONS,
    DELETE,
    ENGINES,
    INSERT,
    SEQUENCE,
    UPDATE_AFTER,
    UPDATE_BEFORE,
    VALUE_KIND,
    MergeConfig,
    partial_update_refuses_retractions,
    prepare_input,
)
from .merge_groups import Groups, finish, replace_column, sort_order, unique_in_key_order
from .partial_update import partial_update

__all__ = [
    "AGGREGATE_FUNCTIONS", "DELETE", "ENGINES", "INSERT", "SEQUENCE", "UPDATE_AFTER",
    "UPDATE_BEFORE", "VALUE_KIND", "MergeConfig", "merge",
    "prepare_input", "sort_by_key",
]


def sort_by_key(table: pa.Table, key_columns: Sequence[str]) -> pa.Table:
    """``table`` sorted by key ascending, then ``_SEQUENCE_NUMBER`` (if present) ascending."""
    cols = [*key_columns, *([SEQUENCE] if SEQUENCE in table.column_names else [])]
    return table.take(sort_order(table, cols))


def merge(table: pa.Table, config: MergeConfig, *, keep_deletes: bool) -> pa.Table:
    """Merge the rows of each key of ``table`` into one, sorted by key (see module doc).

    Raises:
        InvalidArgumentError: a key, sequence or system column is missing; a bad
            ``_VALUE_KIND``; a -U/-D row for partial-update / first-row without
            ``ignore-delete`` (or remove-record-on-delete); a retraction of an aggregate
            function that cannot retract (names the field and function).
        UnsupportedOptionError: an aggregate function does not fit its column's type.
    """
    for name in (*config.key_columns, SEQUENCE, VALUE_KIND, *filter(None, [config.sequence_field])):
        if name not in table.column_names:
            raise InvalidArgumentError(f"merge input lacks column {name!r}")
    table = table.combine_chunks()
    kinds = table.column(VALUE_KIND).to_numpy()
    if len(kinds) and (kinds.min() < INSERT or kinds.max() > DELETE):
        raise InvalidArgumentError("_VALUE_KIND holds a value outside 0..3 (+I, -U, +U, -D)")
    retract = (kinds == UPDATE_BEFORE) | (kinds == DELETE)
    engine = config.engine
    if config.ignore_delete or (retract.any() and engine in ("first-row", "partial-update")):
        if config.ignore_delete:
            keep = ~retract
        elif engine == "partial-update" and config.partial_update_remove_on_delete:
            keep = kinds != UPDATE_BEFORE
        elif engine == "partial-update":
            keep = None  # sequence groups retract; otherwise a merged retraction raises
        else:
            raise InvalidArgumentError(
                "first-row cannot accept delete or update-before rows; set 'ignore-delete' = 'true'")
        if keep is not None and not keep.all():
            table = table.filter(pa.array(keep))
            kinds = kinds[keep]
            retract = retract[keep]
    if table.num_rows == 0:
        return table
    if unique_in_key_order(table, config):  # a sorted write of distinct keys: nothing to merge
        if engine in ("deduplicate", "first-row"):
            return finish(table, None, retract, keep_deletes, own_kinds=True)
        if not keep_deletes and retract.any():  # lone rows pass through; a lone retraction goes
            return table.filter(pa.array(~retract))
        return table
    g = Groups(table, config)
    seq = table.column(SEQUENCE).to_numpy()
    if config.sequence_field is None:  # sorted by sequence within a key: the last is max
        max_seq = seq[g.order[g.ends]]
    else:
        max_seq = np.maximum.reduceat(seq[g.order], g.starts)
    if engine in ("deduplicate", "first-row"):
        if g.singles_in_order:  # every row is its key's (a sorted write of distinct keys): no copy
            return finish(table, max_seq, retract, keep_deletes, own_kinds=True)
        rows = g.order[g.ends if engine == "deduplicate" else g.starts]
        return finish(table.take(rows), max_seq, retract[rows], keep_deletes, own_kinds=True)
    return _fold(table, config, g, kinds, retract, max_seq, keep_deletes)


def _fold(table: pa.Table, config: MergeConfig, g: Groups, kinds: np.ndarray,
          retract: np.ndarray, max_seq: np.ndarray, keep_deletes: bool) -> pa.Table:
    """Partial-update and aggregation: a key with one row passes through unmerged (its kind
    too: a lone retraction is dropped by a read or a bottom-level compaction, and kept by
    others); the keys of several rows merge into +I rows (see the module doc)."""
    lone = g.sizes == 1
    if lone.all():
        out = table.take(g.order)
    elif config.engine == "aggregation":  # lone keys' rows are the last rows of their groups
        merged_rows = np.empty(g.n, bool)
        merged_rows[g.order] = ~lone[g.gid]
        folded, removed = None, np.zeros(len(g.starts), bool)
        if config.aggregation_remove_on_delete:  # a -D resets its key (aggregation.delete_resets)
            folded, removed = delete_resets(g, kinds)
            merged_rows &= kinds != DELETE
        out = aggregate(table, config, g, retract & merged_rows, lone, folded)
        out_kinds = np.where(lone, kinds[g.order[g.ends]], np.where(removed, DELETE, INSERT)).astype(np.int8)
        out = replace_column(replace_column(out, SEQUENCE, pa.array(max_seq, pa.int64())),
                             VALUE_KIND, pa.array(out_kinds))
    else:
        out = _partial_update_pieces(table, config, g, lone, max_seq, keep_deletes)
    if not keep_deletes and retract.any():  # a lone retraction: dropped
        out_kinds = out.column(VALUE_KIND).to_numpy()
        live = (out_kinds == INSERT) | (out_kinds == UPDATE_AFTER)
        if not live.all():
            out = out.filter(pa.array(live))
    return out


def _partial_update_pieces(table: pa.Table, config: MergeConfig, g: Groups, lone: np.ndarray,
                           max_seq: np.ndarray, keep_deletes: bool) -> pa.Table:
    """Lone keys' rows and the merged rows of the others, in key order."""
    pieces: list[tuple[pa.Table, np.ndarray]] = []
    if lone.any():
        pieces.append((table.take(g.order[g.starts[lone]]), np.flatnonzero(lone)))
    sub, sg, multi = g.merged_only(table)
    sub_kinds = sub.column(VALUE_KIND).to_numpy()
    sub_retract = (sub_kinds == UPDATE_BEFORE) | (sub_kinds == DELETE)
    if sub_retract.any() and not (config.sequence_groups or config.ignore_delete
                                  or config.partial_update_remove_on_delete):
        raise InvalidArgumentError(partial_update_refuses_retractions())
    merged_ids = np.flatnonzero(multi)
    pieces.extend((t, merged_ids[ids]) for t, ids in partial_update(
        sub, config, sg, sub_kinds, max_seq[multi], sub_retract, keep_deletes))
    out = pa.concat_tables([t.cast(table.schema) for t, _ in pieces])
    return out.take(np.argsort(np.concatenate([ids for _, ids in pieces]), kind="stable"))
