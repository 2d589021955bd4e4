"""The element order Paimon's ``collect`` with ``distinct`` and keyed ``nested_update`` give,
computed in closed form over all groups at once (pure, NumPy).

Paimon 0.9 (``FieldCollectAgg``, ``FieldNestedUpdateAgg``) builds a fresh ``java.util.HashSet``
(``HashMap`` by nested key) at each fold step (an *op*) and returns its elements in
iteration order; a ``collect`` retraction keeps the order it finds. A fresh table holds 16
slots and doubles whenever it holds more than 3/4 of them (:func:`table_sizes`); an element
of hash ``h`` sits in slot ``(h ^ (h >>> 16)) & (size - 1)``; a slot keeps its elements in
insertion order (a resize splits slots without reordering). An op inserts what the state
holds, in its order, then the new elements; an element already there keeps its place.

So each op stably sorts its insertion sequence by slot. Composed over the ops of a key, the
result is the elements sorted by (slot at the last op, slot at the op before it, ..., time
of insertion), where the slot of an element at an op before its (re-)insertion counts as
larger than any (it was not in the state then: the state's elements come first). An op
whose table is not larger than some later op's adds nothing to that order (equal slots
there mean equal slots at the smaller size), so only the *levels* count: the last op, then
going back each op whose table is larger than every later one's, at most log2(size / 16)
of them. Without retractions tables only grow, and the order is (slot at the last op,
insertion time).

Not modelled: a slot of more than 8 colliding elements (Java makes it a tree, or resizes
early), which honest data does not reach.
"""

from __future__ import annotations

import numpy as np


def table_sizes(entries: np.ndarray) -> np.ndarray:
    """The slot count of a fresh Java ``HashMap`` after ``entries`` distinct insertions:
    16, doubled while the entries are more than 3/4 of it (int64)."""
    need = np.maximum((4 * np.asarray(entries, np.int64) + 2) // 3, 16)  # size >= 4n / 3
    return (2 ** np.ceil(np.log2(need))).astype(np.int64)


def slots(hashes: np.ndarray, size: np.ndarray) -> np.ndarray:
    """``HashMap``'s slot of each hash (uint32) in a table of ``size`` slots."""
    h = hashes.astype(np.uint32)
    return ((h ^ (h >> np.uint32(16))).astype(np.int64)) & (size - 1)


def hash_order(gid: np.ndarray, time: np.ndarray, inserted: np.ndarray, hashes: np.ndarray,
               op_gid: np.ndarray, op_row: np.ndarray, op_entries: np.ndarray) -> np.ndarray:
    """The order of the final elements of every group (a permutation of them).

    Elements: ``gid`` (group), ``time`` (when it was inserted: ties of equal slots),
    ``inserted`` (the row position of its insertion), ``hashes`` (uint32). Ops, sorted by
    (group, row): ``op_gid``, ``op_row`` (row position), ``op_entries`` (distinct elements
    its table held). A group without ops keeps time order.
    """
    n = len(gid)
    if not len(op_gid) or not n:
        return np.lexsort((time, gid))
    size = table_sizes(op_entries)
    # levels: an op whose table is larger than every later op's of its group (the last op
    # included); by a running maximum over the ops reversed, groups kept apart by an offset
    rev = np.arange(len(op_gid))[::-1]
    offset = (op_gid.max() - op_gid[rev]).astype(np.int64) << 40
    running = np.maximum.accumulate(offset + size[rev])
    before = np.concatenate([[-1], running[:-1]])
    new_group = np.concatenate([[True], op_gid[rev][1:] != op_gid[rev][:-1]])
    is_level = new_group | (offset + size[rev] > before)
    lv = rev[is_level]  # level ops, each group's last op first
    lv_gid = op_gid[lv]
    first = np.concatenate([[True], lv_gid[1:] != lv_gid[:-1]])
    rank = np.arange(len(lv)) - np.maximum.accumulate(np.where(first, np.arange(len(lv)), 0))
    depth = int(rank.max()) + 1
    ngroups = int(max(gid.max(), op_gid.max())) + 1
    row = np.full((ngroups, depth), -1, np.int64)
    sizes = np.ones((ngroups, depth), np.int64)
    row[lv_gid, rank], sizes[lv_gid, rank] = op_row[lv], size[lv]
    keys = [time]
    for level in range(depth - 1, -1, -1):  # lexsort: the last key is the primary one
        at_row, at_size = row[gid, level], sizes[gid, level]
        present = inserted <= at_row  # in the state at that op (-1: the group has no level)
        keys.append(np.where(at_row < 0, 0, np.where(present, slots(hashes, at_size), 1 << 31)))
    keys[-1] = (gid.astype(np.int64) << 32) | keys[-1]  # (group, slot at the last op): one key
    return np.lexsort(keys)
