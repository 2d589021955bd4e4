"""Merge engines: vectorised merge-on-read of the rows of one (partition, bucket).

``merge`` takes the rows of several sorted runs concatenated (user columns plus
``_SEQUENCE_NUMBER`` int64 and ``_VALUE_KIND`` int8: 0 +I, 1 -U, 2 +U, 3 -D) and returns one
row per key, sorted by key.  A key's rows are ordered by (``sequence.field`` nulls first,
``_SEQUENCE_NUMBER``), ties by input position.  All work is over whole arrays: one sort,
adjacent-key comparison for group boundaries, ``reduceat`` / Arrow hash aggregates, ``take``.
Sorted runs concatenated oldest first are not re-sorted: for integer/temporal keys a stable
sort on the key alone merges them and is the whole order once checked (see ``Groups``).
Output rows are +I, or -D for a deleted key when ``keep_deletes`` (compaction into a
non-bottom level: the delete must still shadow older levels); ``_SEQUENCE_NUMBER`` is the
largest of the key.  Merging runs with ``keep_deletes=True`` and later merging that output
with other runs gives the same result as merging everything at once (piecewise property).

* ``deduplicate``: the last row wins; a -U/-D winner deletes the key.
* ``first-row``: the first +I/+U row wins; -U/-D raise unless ``ignore-delete``.
* ``partial-update``: per column the last non-null +I/+U value.  -U/-D raise unless
  ``ignore-delete`` (dropped) or ``partial-update.remove-record-on-delete`` (-U dropped; -D
  forgets earlier values and deletes the key unless a +I/+U follows it; with
  ``keep_deletes`` such a re-written key keeps its -D row before its +I row, the only case
  of two output rows for one key).
* ``aggregation``: per column a function (default ``last_non_null_value``); -U/-D rows are
  retractions: ``sum``/``count`` subtract, ``product`` of a float column divides (an integer
  ``product`` refuses retractions: a retraction-only state cannot be exact),
  ``last_value`` becomes null, ``last_non_null_value`` becomes null on a non-null value.
  ``min``, ``max``, ``first_value``, ``first_non_null_value``, ``bool_and``, ``bool_or``,
  ``listagg`` raise InvalidArgumentError on a retraction unless the field ignores
  retractions.  Nulls are skipped except by ``last_value``/``first_value``; no value gives
  null (``count``: 0).  As in Paimon a key is never deleted: a key of only retractions gives
  +I with the retracted state (e.g. a negative sum).  A decimal ``sum``/``product`` that
  leaves its column's precision is null (as in Paimon); later values add to the null as to
  no value.

Aggregated rows are states, valid as input: ``count`` stores the running count and merging
sums it, so user rows must pass :func:`prepare_input` (non-null -> 1, null -> 0) exactly
once.  Piecewise limits, as in Paimon: a merged row cannot tell "reset to null" from "no
value" (``last_non_null_value`` after a retraction; ``first_value``/``last_value`` of a key
with only ignored retractions), and carries one ``sequence.field`` value, so for
partial-update/aggregation newer rows must not sort before older ones.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from minipaimon_core.errors import InvalidArgumentError

from .aggregation import aggregate
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
    prepare_input,
)
from .merge_groups import Groups, finish, replace_column, sort_order, value_columns

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
    if config.ignore_delete or (retract.any() and engine != "aggregation"):
        if config.ignore_delete:
            keep = ~retract
        elif engine == "partial-update" and config.partial_update_remove_on_delete:
            keep = kinds != UPDATE_BEFORE
        elif engine == "deduplicate":
            keep = None
        else:
            raise InvalidArgumentError(
                f"{engine} cannot accept delete or update-before rows; set 'ignore-delete' = "
                "'true'" + (" or 'partial-update.remove-record-on-delete' = 'true'"
                            if engine == "partial-update" else ""))
        if keep is not None and not keep.all():
            table = table.filter(pa.array(keep))
            kinds = kinds[keep]
            retract = retract[keep]
    if table.num_rows == 0:
        return table
    g = Groups(table, config)
    seq = table.column(SEQUENCE).to_numpy()
    if config.sequence_field is None:  # sorted by sequence within a key: the last is max
        max_seq = seq[g.order[g.ends]]
    else:
        max_seq = np.maximum.reduceat(seq[g.order], g.starts)
    if engine in ("deduplicate", "first-row"):
        rows = g.order[g.ends if engine == "deduplicate" else g.starts]
        return finish(table.take(rows), max_seq, retract[rows], keep_deletes)
    if engine == "partial-update":
        return _partial_update(table, config, g, kinds[g.order], max_seq, keep_deletes)
    return aggregate(table, config, g, retract, max_seq)


def _partial_update(table: pa.Table, config: MergeConfig, g: Groups, kinds: np.ndarray,
                    max_seq: np.ndarray, keep_deletes: bool) -> pa.Table:
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
        # a deleted key keeps its -D row's own values (the last row): a -D row written or
        # dropped carries values of the column's type, never nulls in a NOT NULL column
        positions = np.where(deleted, g.ends, g.last_where(valid))
        out = out.set_column(i, table.schema.field(i), g.take(col, positions))
    out = finish(out, max_seq, deleted, keep_deletes)
    if not keep_deletes:
        return out
    shadow = (last_delete >= 0) & ~deleted  # deleted, then written again: keep the -D too
    if not shadow.any():
        return out
    d = table.take(g.order[last_delete[shadow]])
    d = replace_column(d, VALUE_KIND, pa.array(np.full(d.num_rows, DELETE, np.int8)))
    both = pa.concat_tables([out, d.cast(out.schema)])
    sort_cols = [*config.key_columns, *filter(None, [config.sequence_field]), SEQUENCE]
    return both.take(sort_order(both, sort_cols))
