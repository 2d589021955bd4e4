"""Changelog rows from two states of the same keys (pure, vectorised).

``diff(before, after)`` takes one row per key in each (-U/-D rows are dropped first) and
returns what a consumer must see to go from ``before`` to ``after``: ``+I`` for a new key,
``-D`` (old values) for a removed key, ``-U`` (old) then ``+U`` (new) for a changed key.
Keys whose values did not change produce nothing. Rows come out sorted by key, with
``_VALUE_KIND`` set and ``_SEQUENCE_NUMBER`` taken from the side they show.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .merge_engines import (
    DELETE,
    INSERT,
    SEQUENCE,
    UPDATE_AFTER,
    UPDATE_BEFORE,
    VALUE_KIND,
    sort_by_key,
)

_B = "__before_row"
_A = "__after_row"


def diff(before: pa.Table, after: pa.Table, key_columns: Sequence[str]) -> pa.Table:
    """Changelog taking ``before`` to ``after`` (same columns, one row per key in each)."""
    keys = list(key_columns)
    before, after = _live(before), _live(after)
    left = before.select(keys).append_column(_B, pa.array(np.arange(before.num_rows, dtype=np.int64)))
    right = after.select(keys).append_column(_A, pa.array(np.arange(after.num_rows, dtype=np.int64)))
    joined = left.join(right, keys=keys, join_type="full outer", use_threads=False)
    b_idx = joined.column(_B)
    a_idx = joined.column(_A)
    only_after = pc.is_null(b_idx)
    only_before = pc.is_null(a_idx)
    both = pc.and_(pc.invert(only_after), pc.invert(only_before))
    both_b = pc.filter(b_idx, both)
    both_a = pc.filter(a_idx, both)
    changed = _rows_differ(before.take(both_b), after.take(both_a), keys)
    parts = [
        _with_kind(after.take(pc.filter(a_idx, only_after)), INSERT),
        _with_kind(before.take(pc.filter(b_idx, only_before)), DELETE),
        _with_kind(before.take(pc.filter(both_b, changed)), UPDATE_BEFORE),
        _with_kind(after.take(pc.filter(both_a, changed)), UPDATE_AFTER),
    ]
    out = pa.concat_tables(parts)
    # by key, and -U before +U of one key (kinds 1 < 2); ties keep concat order
    order = pc.sort_indices(out, sort_keys=[*((k, "ascending") for k in keys), (VALUE_KIND, "ascending")])
    return out.take(order)


def _live(t: pa.Table) -> pa.Table:
    """``t`` without -U/-D rows (tombstones a merge kept, see MergeConfig.keeps_tombstones:
    a deduplicate merge keeps the winner's own kind)."""
    if VALUE_KIND not in t.column_names or t.num_rows == 0:
        return t
    retract = pc.is_in(t.column(VALUE_KIND), pa.array([UPDATE_BEFORE, DELETE], pa.int8()))
    return t.filter(pc.invert(retract))


def _with_kind(t: pa.Table, kind: int) -> pa.Table:
    col = pa.array(np.full(t.num_rows, kind, dtype=np.int8))
    i = t.column_names.index(VALUE_KIND)
    return t.set_column(i, VALUE_KIND, col)


def _rows_differ(b: pa.Table, a: pa.Table, keys: list[str]) -> pa.Array:
    """Per row: does any non-key, non-system column differ (null = null)?"""
    differ = np.zeros(b.num_rows, dtype=bool)
    for name in b.column_names:
        if name in keys or name in (SEQUENCE, VALUE_KIND):
            continue
        x, y = b.column(name), a.column(name)
        try:
            eq = pc.fill_null(pc.equal(x, y), False)
            same = pc.or_(eq, pc.and_(pc.is_null(x), pc.is_null(y)))
            if pa.types.is_floating(x.type):  # NaN = NaN: an unchanged NaN is no change
                same = pc.or_(same, pc.fill_null(pc.and_(pc.is_nan(x), pc.is_nan(y)), False))
            differ |= ~same.to_numpy(zero_copy_only=False)
        except (pa.ArrowNotImplementedError, pa.ArrowInvalid):  # nested types
            xs, ys = x.to_pylist(), y.to_pylist()
            differ |= np.array([not _same(p, q) for p, q in zip(xs, ys)], dtype=bool)
    return pa.array(differ)


def _same(p: object, q: object) -> bool:
    """Equality of two nested values where NaN equals NaN (an unchanged NaN is no change)."""
    if isinstance(p, float) and isinstance(q, float):
        return p == q or (p != p and q != q)
    if isinstance(p, (list, tuple)) and isinstance(q, (list, tuple)):
        return len(p) == len(q) and all(_same(a, b) for a, b in zip(p, q))
    if isinstance(p, dict) and isinstance(q, dict):
        return p.keys() == q.keys() and all(_same(p[k], q[k]) for k in p)
    return p == q


__all__ = ["diff", "sort_by_key"]
