"""Aggregate functions over collections, as Paimon folds them: ``collect`` (ARRAY; with
``fields.<f>.distinct``), ``merge_map`` (MAP) and ``nested_update`` (ARRAY<ROW>; with
``fields.<f>.nested-key``). Vectorised over every element of every row at once.

Each row's elements become events (the element, its group, its time: the row's place in
merge order, then its place in the row) that add or retract. Sorting the events by (group,
element identity, time) gives, for each element of each group, its history; the fold's
result follows from it in closed form:

* ``collect``: the concatenation of the non-null arrays added; a retraction removes, for
  each element it holds, the earliest remaining equal element (multiset difference). The
  survivors of an element are its last L additions, L being the largest sum of (+1 per
  addition, -1 per retraction) over a suffix of its history (a queue that drops from the
  front and never goes below empty). ``distinct``: an element is kept iff its last event
  adds it, placed where it was (re-)added.
* ``merge_map``: an addition puts its entries (a later key replaces an earlier one), a
  retraction removes its keys; a key is kept iff its last event puts it, with that value.
* ``nested_update``: with a nested key, rows of one key replace each other as map entries
  do (a retraction removes the key), once two non-null arrays met; without, the rows are
  concatenated and a retraction removes every equal row.

A group is null until a non-null array is added (a retraction of a null state keeps it
null). Order: ``collect`` and unkeyed ``nested_update`` keep the order elements came in;
``collect`` distinct (primitive elements) and keyed ``nested_update`` the order of the
Java hash set / map Paimon 0.9 builds at each step (:mod:`.agg_hash_order`, hashes from
:mod:`minipaimon_core.format.java_hash` and, for nested keys, BinaryRow's); distinct ROW
elements (Paimon compares them in a list) and BYTES (Java hashes ``byte[]`` by identity)
first-added order; ``merge_map`` first-added order (a MAP's entries have none). Paimon
fails on a retraction whose value is null; minipaimon skips it. Elements are compared by
value (NaN equals NaN; Java tells 0.0 from -0.0 in a set, minipaimon does not); they must be
primitive or rows of primitives.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from minipaimon_core.errors import UnsupportedOptionError

from ..format import data_types
from ..format.bucket_hash import bucket_hashes
from ..format.java_hash import java_hashes
from . import agg_hash_order
from .merge_config import MergeConfig
from .merge_groups import Groups, sort_order

FUNCTIONS = frozenset({"collect", "merge_map", "nested_update"})


def fold(col: pa.ChunkedArray, fn: str, g: Groups, use: np.ndarray, ret: np.ndarray,
         config: MergeConfig, name: str) -> pa.Array:
    """``fn`` of list/map column ``col`` per group of ``g`` over the rows ``use`` marks
    (input order); ``ret`` marks retractions among them."""
    typ = col.type
    if fn == "merge_map" and not pa.types.is_map(typ) or fn != "merge_map" and not (
            pa.types.is_list(typ) or pa.types.is_large_list(typ)):
        raise UnsupportedOptionError(f"{fn} does not apply to a column of type {typ}")
    valid = pc.is_valid(col).to_numpy(zero_copy_only=False)
    rows = np.flatnonzero((use & valid)[g.order])  # sorted positions of contributing rows
    lists = pc.take(col, pa.array(g.order[rows], pa.int64())).combine_chunks() \
        if isinstance(col, pa.ChunkedArray) else pc.take(col, pa.array(g.order[rows], pa.int64()))
    if pa.types.is_map(typ):  # as a list of its (key, value) entries
        entries = pa.StructArray.from_arrays([lists.keys, lists.items], ["key", "value"])
        lists = pa.ListArray.from_arrays(lists.offsets, entries, mask=lists.is_null())
    adding = ~ret[g.order][rows]
    ngroups = len(g.starts)
    nonnull = np.bincount(g.gid[rows[adding]], minlength=ngroups)  # non-null arrays added
    parent = pc.list_parent_indices(lists).to_numpy()
    elements = pc.list_flatten(lists)
    events = _Events(g.gid[rows][parent], adding[parent])
    if adding.all() and (fn == "collect" and name not in config.collect_distinct or
                         fn == "nested_update" and name not in config.nested_keys):
        every = np.arange(events.n)  # nothing retracted: the concatenation
        return _assemble(typ, elements, events.gid, (every, every), ngroups, nonnull > 0)
    if fn == "merge_map":
        kept = events.last_event_adds(_identity(elements.field("key"), name))
    elif fn == "nested_update" and name in config.nested_keys:
        key = _nested_key(elements, config.nested_keys[name], name)
        kept = events.last_event_adds(key)
        # a group with a single non-null array, never combined with another, keeps it as is
        first_add = np.full(ngroups, len(rows))
        np.minimum.at(first_add, g.gid[rows[adding]], np.flatnonzero(adding))
        later_retract = ~adding & (np.arange(len(rows)) > first_add[g.gid[rows]])
        touched = np.zeros(ngroups, bool)
        touched[g.gid[rows[later_retract]]] = True
        as_is = (nonnull == 1) & ~touched
        whole = np.flatnonzero(as_is[events.gid] & events.adds)
        other = ~as_is[events.gid[kept[0]]]
        kept = (np.concatenate([kept[0][other], whole]), np.concatenate([kept[1][other], whole]))
    elif fn == "nested_update":
        kept = events.added_after_last_retraction(_identity(elements, name))
    elif name in config.collect_distinct:
        key = _identity(elements, name)
        kept = events.last_event_adds(key)
    else:
        kept = events.queue_survivors(_identity(elements, name))
    hashes = None  # of the kept elements
    which = pa.array(kept[1], pa.int64())
    if fn == "nested_update" and name in config.nested_keys:
        hashes = bucket_hashes([k.take(which) for k in key],
                               [_paimon_type(k.type) for k in key]).view(np.uint32)
    elif fn == "collect" and name in config.collect_distinct and not pa.types.is_struct(elements.type):
        hashes = java_hashes(elements.take(which))  # None for BYTES: Java hashes byte[] by identity
    order = None
    if hashes is not None and len(hashes):  # Java's hash-set order (see the module doc)
        op_gid, op_row, op_entries = _hash_ops(fn, g, use, ret, rows, lists, events, key)
        place = kept[0]
        order = agg_hash_order.hash_order(events.gid[place], place, rows[parent[place]],
                                          hashes, op_gid, op_row, op_entries)
    return _assemble(typ, elements, events.gid, kept, ngroups, nonnull > 0, order)


def _hash_ops(fn: str, g: Groups, use: np.ndarray, ret: np.ndarray, rows: np.ndarray,
              lists: pa.Array, events: _Events, key: list[pa.Array]
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The fold steps that build a fresh Java hash set (``collect`` distinct) or map (keyed
    ``nested_update``), as (group, sorted row position, entries the table held), sorted.

    ``collect`` distinct: every +I/+U row once the state or the row is not null (a null
    row re-hashes the state), entries after it. Keyed ``nested_update``: a row with an
    array once the state is not null (the first array is kept as it is); an addition holds
    the entries after it, a retraction those before it (it removes from a full map).
    REQUIRES events (``events.n`` > 0)."""
    counts = np.zeros(g.n, np.int64)  # events of each sorted row position
    counts[rows] = pc.list_value_length(lists).to_numpy()  # (rows with an array only)
    last = np.maximum(np.cumsum(counts) - 1, 0)  # the last event at or before each position
    held = events.entries_after(key)
    mine = (np.cumsum(counts) > 0) & (events.gid[last] == g.gid)  # an event of its group
    after = np.where(mine, held[last], 0)  # entries after each row
    before = np.concatenate([[0], after[:-1]])
    before[g.starts] = 0
    adds = (use & ~ret)[g.order]
    added = np.zeros(g.n, np.int64)
    added[rows[adds[rows]]] = 1  # arrays added (not null)
    run = np.cumsum(added) - added
    state = (run - run[g.starts][g.gid]) > 0  # not null before the row
    has_array = np.zeros(g.n, bool)
    has_array[rows] = True
    if fn == "collect":
        op, entries = adds & (has_array | state), after
    else:
        op, entries = use[g.order] & has_array & state, np.where(adds, after, before)
    at = np.flatnonzero(op)
    return g.gid[at], at, entries[at]


Kept = tuple[np.ndarray, np.ndarray]  # (where each kept element sits: an event's time,
#                                        which event's element it is)


class _Events:
    """The elements of the contributing rows in merge order (an event's time is its index):
    their group and whether they are added (else retracted)."""

    def __init__(self, gid: np.ndarray, adds: np.ndarray) -> None:
        self.gid = gid
        self.adds = adds
        self.n = len(gid)
        self._sorted: tuple[list[pa.Array], tuple[np.ndarray, np.ndarray, np.ndarray]] | None = None

    def _histories(self, identity: list[pa.Array]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The events ordered by (group, identity, time), where each element's history
        starts (sorted positions), and the history of each sorted position (kept for the
        next call with the same ``identity``)."""
        if self._sorted is None or self._sorted[0] is not identity:
            self._sorted = identity, self._sort(identity)
        return self._sorted[1]

    def _sort(self, identity: list[pa.Array]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        cols = {"g": pa.array(self.gid, pa.int64()),
                **{f"k{i}": k for i, k in enumerate(identity)},
                "t": pa.array(np.arange(self.n), pa.int64())}
        order = sort_order(pa.table(cols), list(cols)) if self.n else np.zeros(0, np.int64)
        new = np.zeros(self.n, bool)
        if self.n:
            new[0] = True
            new[1:] |= self.gid[order][1:] != self.gid[order][:-1]
            for k in identity:
                new |= _differs(k, order)
        return order, np.flatnonzero(new), np.cumsum(new) - 1

    def _last_retraction(self, adds: np.ndarray, starts: np.ndarray) -> np.ndarray:
        """Per history, the sorted position of its last retraction (-1 if none)."""
        if not len(starts):
            return np.zeros(0, np.int64)
        return np.maximum.reduceat(np.where(~adds, np.arange(self.n), -1), starts)

    def entries_after(self, identity: list[pa.Array]) -> np.ndarray:
        """Per event (time order), the distinct elements its group holds right after it (an
        addition of a held element or a retraction of a missing one changes nothing)."""
        order, starts, _ = self._histories(identity)
        adds = self.adds[order]
        held_before = np.zeros(self.n, bool)
        held_before[1:] = adds[:-1]
        held_before[starts] = False
        delta = np.empty(self.n, np.int64)
        delta[order] = adds.astype(np.int64) - held_before
        run = np.cumsum(delta)
        first = np.ones(self.n, bool)  # the first event of its group (groups are contiguous)
        first[1:] = self.gid[1:] != self.gid[:-1]
        return run - (run - delta)[first][np.cumsum(first) - 1]

    def last_event_adds(self, identity: list[pa.Array]) -> Kept:
        """An element is kept iff its history ends with an addition: placed at its first
        addition after its last retraction, valued as its latest addition."""
        order, starts, seg = self._histories(identity)
        adds = self.adds[order]
        ends = np.append(starts[1:] - 1, self.n - 1).astype(np.int64)
        after = adds & (np.arange(self.n) > self._last_retraction(adds, starts)[seg])
        first_after = np.full(len(starts), self.n)
        np.minimum.at(first_after, seg[after], np.flatnonzero(after))
        kept = adds[ends] if self.n else np.zeros(0, bool)
        return order[first_after[kept]], order[ends[kept]]

    def added_after_last_retraction(self, identity: list[pa.Array]) -> Kept:
        """The additions after the last retraction of an equal element."""
        order, starts, seg = self._histories(identity)
        adds = self.adds[order]
        keep = adds & (np.arange(self.n) > self._last_retraction(adds, starts)[seg])
        return order[keep], order[keep]

    def queue_survivors(self, identity: list[pa.Array]) -> Kept:
        """The last L additions of each element (see the module doc)."""
        order, starts, seg = self._histories(identity)
        if not self.n:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        adds = self.adds[order]
        delta = np.where(adds, 1, -1)
        before = np.cumsum(delta) - delta  # sum of the deltas before each sorted position
        suffix = np.add.reduceat(delta, starts)[seg] - (before - before[starts][seg])
        survivors = np.maximum(np.maximum.reduceat(suffix, starts), 0)
        added_before = np.cumsum(adds) - adds
        rank_from_end = np.add.reduceat(adds.astype(np.int64), starts)[seg] - (
            added_before - added_before[starts][seg])  # 1 for the history's last addition
        keep = adds & (rank_from_end <= survivors[seg])
        return order[keep], order[keep]


def _assemble(typ: pa.DataType, elements: pa.Array, gid: np.ndarray, kept: Kept,
              ngroups: int, present: np.ndarray, order: np.ndarray | None = None) -> pa.Array:
    """The kept elements, in the order of their places (or ``order``, a permutation of them
    that keeps groups in order), as one list or map per group; null where ``present`` is
    False."""
    place, source = kept
    by_place = np.argsort(place, kind="stable") if order is None else order
    source = source[by_place]
    values = elements.take(pa.array(source, pa.int64()))
    counts = np.bincount(gid[source], minlength=ngroups)
    offsets = pa.array(np.concatenate([[0], np.cumsum(counts)]).astype(np.int32))
    mask = pa.array(~present)
    if pa.types.is_map(typ):
        return pa.MapArray.from_arrays(offsets, values.field("key"), values.field("value"),
                                       type=typ, mask=mask)
    return pa.ListArray.from_arrays(offsets, values, type=typ, mask=mask)


def _paimon_type(t: pa.DataType) -> str:
    """The Paimon type name of a nested key field (to hash its BinaryRow)."""
    name = data_types.from_arrow(t, True, lambda: 0)
    assert isinstance(name, str)  # nested fields were refused (_check_comparable)
    return name


def _identity(values: pa.Array, name: str) -> list[pa.Array]:
    """Columns that are equal exactly when two elements are: the value itself, or a row's
    validity and fields."""
    if pa.types.is_struct(values.type):
        valid = pc.is_valid(values)
        fields = [pc.if_else(valid, values.field(i), None) for i in range(values.type.num_fields)]
        for f in fields:
            _check_comparable(f.type, name)
        return [valid, *fields]
    _check_comparable(values.type, name)
    return [values]


def _nested_key(rows: pa.Array, keys: tuple[str, ...], name: str) -> list[pa.Array]:
    typ = rows.type
    if not pa.types.is_struct(typ):
        raise UnsupportedOptionError(
            f"option 'fields.{name}.nested-key': column {name!r} must be ARRAY<ROW>, not {typ}")
    names = [typ.field(i).name for i in range(typ.num_fields)]
    for k in keys:
        if k not in names:
            raise UnsupportedOptionError(
                f"option 'fields.{name}.nested-key': {k!r} is not a field of {typ}")
    fields = [rows.field(names.index(k)) for k in keys]
    for f in fields:
        _check_comparable(f.type, name)
    return fields


def _check_comparable(typ: pa.DataType, name: str) -> None:
    if pa.types.is_nested(typ):
        raise UnsupportedOptionError(
            f"column {name!r}: elements holding {typ} cannot be compared by minipaimon's "
            "collection functions (primitive elements or rows of primitives only)")


def _differs(col: pa.Array, order: np.ndarray) -> np.ndarray:
    """``d[i]``: sorted element i differs from sorted element i-1 (nulls equal each other,
    NaN equals NaN)."""
    out = np.zeros(len(order), bool)
    if len(order) < 2:
        return out
    s = pc.take(col, pa.array(order))
    a, b = s.slice(1), s.slice(0, len(order) - 1)
    both_null = pc.and_(pc.is_null(a), pc.is_null(b))
    ne = pc.fill_null(pc.not_equal(a, b), True)
    if pa.types.is_floating(col.type):
        ne = pc.and_(ne, pc.invert(pc.fill_null(pc.and_(pc.is_nan(a), pc.is_nan(b)), False)))
    out[1:] = pc.and_(ne, pc.invert(both_null)).to_numpy(zero_copy_only=False)
    return out
