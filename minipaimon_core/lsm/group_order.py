"""Where each row of a key stands in a partial-update sequence group's order when it comes:
the rank of its sequence fields and the largest rank of the rows before it (pure,
vectorised). Paimon's ``PartialUpdateMergeFunction`` compares each row with the record as
it is then (``compare(kv, row) >= 0``: the row wins, ties included); since a winning row
sets the group's sequence fields, "the record as it is then" is the largest sequence of the
group's rows before (:func:`running_ranks`). Two uses: a -D winning the removal group
(:mod:`.partial_update`), and the functions whose result depends on that order,
``first_value`` and ``last_value`` in a sequence group (:func:`ordered_value`)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .merge_config import GROUP_ORDERED_FUNCTIONS, MergeConfig, SequenceGroup
from .merge_groups import Groups, sort_order

#: functions of a partial-update sequence group whose result depends on the rows' order
ORDERED_FUNCTIONS = GROUP_ORDERED_FUNCTIONS


def running_ranks(table: pa.Table, g: Groups, sg: SequenceGroup,
                  rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For the sorted positions ``rows`` marks (sorted mask): (those positions, the rank of
    each one's sequence fields of ``sg``, from 1, equal sequences alike, nulls first as
    Paimon compares; the largest rank of the earlier marked rows of its key, 0 if none)."""
    at = np.flatnonzero(rows)
    if not len(at):
        return at, np.zeros(0, np.int64), np.zeros(0, np.int64)
    seq = table.take(g.order[at]).select(list(sg.sequence_fields))
    order = sort_order(seq, list(sg.sequence_fields))
    new = np.zeros(len(order), bool)
    new[0] = True
    for name in sg.sequence_fields:
        col = seq.column(name).take(pa.array(order))
        a, b = col.slice(1), col.slice(0, len(order) - 1)
        same = pc.or_kleene(pc.equal(a, b), pc.and_(pc.is_null(a), pc.is_null(b)))
        new[1:] |= ~np.asarray(pc.fill_null(same, False).to_numpy(zero_copy_only=False), bool)
    rank = np.empty(len(order), np.int64)
    rank[order] = np.cumsum(new)
    gid = g.gid[at]
    offset = gid * (len(at) + 1)  # keys are contiguous and ascending: a running max per key
    running = np.maximum.accumulate(rank + offset) - offset
    before = np.zeros(len(at), np.int64)
    before[1:] = np.where(gid[1:] == gid[:-1], running[:-1], 0)
    return at, rank, before


def ordered_value(col: pa.ChunkedArray, name: str, fn: str, g: Groups, sg: SequenceGroup,
                  table: pa.Table, members: np.ndarray, adds: np.ndarray, config: MergeConfig) -> pa.Array:
    """``first_value`` / ``last_value`` of column ``name`` of group ``sg`` per key of
    ``g``, as Paimon folds them (``agg`` for a row that wins, ``aggReversed`` for an older
    one). ``members``: the sorted positions that take part (the group's sequence fields not
    all null, and a key's removal row); ``adds``: which of all sorted positions are +I/+U.

    * ``last_value``: the value of the last row that wins when it comes, or null if a
      retraction comes after it (``retract`` gives null, for a winning or an older one;
      not with ``fields.<f>.ignore-retract``);
    * ``first_value``: the value of the last addition older than the record when it comes
      (``aggReversed`` takes it), else of the key's first addition if that one wins, else
      null. A retraction raises unless ``ignore-retract`` (``first_value`` has none).

    Raises InvalidArgumentError for a retraction ``fn`` cannot take."""
    at, rank, before = running_ranks(table, g, sg, members)
    wins = np.zeros(g.n, bool)
    wins[at] = rank >= before
    in_group = np.zeros(g.n, bool)
    in_group[at] = True
    retractions = in_group & ~adds
    if retractions.any() and not config.retracts(name, fn):
        retractions = np.zeros(g.n, bool)  # ignored (ignore-retract)
    if fn == "last_value":
        last = g.last_where(in_group & adds & wins | retractions)
        last = np.where((last >= 0) & ~retractions[np.maximum(last, 0)], last, -1)
        return g.take(col, last)
    additions = in_group & adds
    first = g.first_where(additions)
    late = additions & ~wins
    late[first[first >= 0]] = False
    pos = g.last_where(late)
    first_ok = np.where((first >= 0) & wins[np.maximum(first, 0)], first, -1)
    return g.take(col, np.where(pos >= 0, pos, first_ok))


__all__ = ["ORDERED_FUNCTIONS", "ordered_value", "running_ranks"]
