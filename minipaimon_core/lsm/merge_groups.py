"""Key groups of merge input: one sort, group boundaries by adjacent-key comparison, and
the helpers every engine uses to build its output (pure, vectorised)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .merge_config import DELETE, INSERT, SEQUENCE, VALUE_KIND, MergeConfig


class Groups:
    """Sort order of the rows and the key groups in it (positions are sorted positions)."""

    def __init__(self, table: pa.Table, config: MergeConfig) -> None:
        found = _runs_order(table, config)
        if found is None:
            sort_cols = [*config.key_columns, *filter(None, [config.sequence_field]), SEQUENCE]
            self.order = sort_order(table, sort_cols)
            new = np.zeros(len(self.order), bool)
            new[0] = True
            for name in config.key_columns:
                new |= differs(table.column(name), self.order)
        else:
            self.order, new = found
        n = len(self.order)
        #: one row per key, input in key order (``order`` is the identity): nothing to merge
        self.singles_in_order = found is not None and bool(new.all()) and bool((self.order == np.arange(n)).all())
        self._new = new
        self.starts = np.flatnonzero(new)
        self.ends = np.empty_like(self.starts)
        self.ends[:-1] = self.starts[1:] - 1
        self.ends[-1] = n - 1
        self.n = n
        self._gid: np.ndarray | None = None

    @classmethod
    def presorted(cls, starts: np.ndarray, n: int) -> Groups:
        """The groups of rows already in merge order (``order`` is the identity) that
        start at ``starts`` (non-empty, ascending, ``starts[0]`` == 0)."""
        g = cls.__new__(cls)
        g.order = np.arange(n)
        g.singles_in_order = len(starts) == n
        g._new = np.zeros(n, bool)
        g._new[starts] = True
        g.starts = starts
        g.ends = np.append(starts[1:] - 1, n - 1)
        g.n = n
        g._gid = None
        return g

    @property
    def sizes(self) -> np.ndarray:
        """The number of rows of each group."""
        return self.ends - self.starts + 1

    def merged_only(self, table: pa.Table) -> tuple[pa.Table, Groups, np.ndarray]:
        """The rows of the groups of more than one row, in merge order, their groups, and
        which groups those are (a mask over groups). A key with one row is passed through
        unmerged (Paimon merges a key only when it has several rows)."""
        multi = self.sizes > 1
        rows = self.order[np.repeat(multi, self.sizes)]
        sizes = self.sizes[multi]
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        return table.take(rows), Groups.presorted(starts, len(rows)), multi

    @property
    def gid(self) -> np.ndarray:
        """The group of each sorted position."""
        if self._gid is None:
            self._gid = np.cumsum(self._new) - 1
        return self._gid

    @property
    def input_gid(self) -> np.ndarray:
        """The group of each input row."""
        out = np.empty(self.n, np.int64)
        out[self.order] = self.gid
        return out

    def last_where(self, mask: np.ndarray) -> np.ndarray:
        """Per group, the last sorted position where ``mask`` (sorted) holds, else -1."""
        return np.maximum.reduceat(np.where(mask, np.arange(self.n), -1), self.starts)

    def first_where(self, mask: np.ndarray) -> np.ndarray:
        """Per group, the first sorted position where ``mask`` (sorted) holds, else -1."""
        first = np.minimum.reduceat(np.where(mask, np.arange(self.n), self.n), self.starts)
        return np.where(first == self.n, -1, first)

    def take(self, col: pa.Array | pa.ChunkedArray, positions: np.ndarray) -> pa.Array:
        """Values of ``col`` (input order) at sorted ``positions``; null where -1."""
        idx = pa.array(self.order[np.maximum(positions, 0)], mask=positions < 0)
        return pc.take(col, idx)


def unique_in_key_order(table: pa.Table, config: MergeConfig) -> bool:
    """Whether ``table`` holds one row per key, in key order (a sorted write of distinct
    keys), told cheaply: one integer or temporal key column without nulls, strictly
    ascending, and no ``sequence.field``. False says nothing."""
    if config.sequence_field is not None or len(config.key_columns) != 1 or table.num_rows < 2:
        return table.num_rows == 1 and config.sequence_field is None
    col = table.column(config.key_columns[0])
    if col.null_count or not (pa.types.is_integer(col.type) or pa.types.is_temporal(col.type)):
        return False
    v = int_values(col)
    return bool((v[1:] > v[:-1]).all())


def _runs_order(table: pa.Table, config: MergeConfig) -> tuple[np.ndarray, np.ndarray] | None:
    """The sort order by (key, ``_SEQUENCE_NUMBER``) and its group starts, found by a stable
    sort on the key alone, which is the whole order when, within every key, input order
    already has strictly increasing sequence numbers (checked) -- as when sorted runs are
    concatenated oldest first. Timsort merges such presorted runs in near-linear time, so
    runs are not re-sorted. None (sort fully) for a ``sequence.field``, keys other than
    integer/temporal without nulls, or a failed check."""
    cols = [table.column(c) for c in config.key_columns]
    if config.sequence_field is not None or table.num_rows == 0 or not all(
            c.null_count == 0 and (pa.types.is_integer(c.type) or pa.types.is_temporal(c.type))
            for c in cols):
        return None
    keys = [int_values(c) for c in cols]
    if len(keys) == 1 and len(keys[0]) > 1 and bool((keys[0][1:] > keys[0][:-1]).all()):
        return np.arange(len(keys[0])), np.ones(len(keys[0]), bool)  # one row per key, in order
    order = np.argsort(keys[0], kind="stable") if len(keys) == 1 else np.lexsort(keys[::-1])
    new = np.zeros(len(order), bool)
    new[0] = True
    for k in keys:
        s = k[order]
        new[1:] |= s[1:] != s[:-1]
    seq = int_values(table.column(SEQUENCE))[order]
    if ((seq[1:] <= seq[:-1]) & ~new[1:]).any():
        return None
    return order, new


def sort_order(table: pa.Table, columns: Sequence[str]) -> np.ndarray:
    arrays = [table.column(c) for c in columns]
    if all(a.null_count == 0 and (pa.types.is_integer(a.type) or pa.types.is_temporal(a.type))
           for a in arrays):
        return np.lexsort([int_values(a) for a in reversed(arrays)])
    keys = [(c, "ascending", "at_start") for c in columns]
    try:
        options = pc.SortOptions(sort_keys=keys)
    except (TypeError, ValueError):  # pyarrow < 25: one null placement for all keys
        options = pc.SortOptions([k[:2] for k in keys], null_placement="at_start")
    return pc.sort_indices(table.select(list(columns)), options=options).to_numpy().astype(np.int64)


def int_values(col: pa.Array | pa.ChunkedArray) -> np.ndarray:
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    if pa.types.is_temporal(arr.type):
        arr = arr.view(pa.int32() if arr.type.bit_width == 32 else pa.int64())
    return arr.to_numpy()


def differs(col: pa.Array | pa.ChunkedArray, order: np.ndarray) -> np.ndarray:
    """``d[i]`` = sorted value i differs from sorted value i-1 (``d[0]`` False)."""
    out = np.zeros(len(order), bool)
    if len(order) < 2:
        return out
    if col.null_count == 0 and (pa.types.is_integer(col.type) or pa.types.is_temporal(col.type)):
        v = int_values(col)[order]
        out[1:] = v[1:] != v[:-1]
        return out
    s = pc.take(col, pa.array(order))
    a, b = s.slice(1), s.slice(0, len(order) - 1)
    ne = pc.fill_null(pc.not_equal(a, b), True)
    if pa.types.is_floating(col.type):
        ne = pc.and_(ne, pc.invert(pc.and_(pc.is_nan(a), pc.is_nan(b))))
    out[1:] = ne.to_numpy(zero_copy_only=False)
    return out


def finish(out: pa.Table, max_seq: np.ndarray | None, deleted: np.ndarray,
           keep_deletes: bool, own_kinds: bool = False) -> pa.Table:
    """Set ``_SEQUENCE_NUMBER`` (``max_seq``; None: as it is) and drop deleted keys unless
    kept. ``_VALUE_KIND``: the rows' own if ``own_kinds`` (each is a stored row, as Paimon's
    deduplicate and first-row return it: a ``+U`` stays ``+U``, a ``-U`` ``-U``), else
    ``+I`` (a row built by a merge), ``-D`` where ``deleted``."""
    if max_seq is not None:
        out = replace_column(out, SEQUENCE, pa.array(max_seq, pa.int64()))
    if not own_kinds:
        kinds = np.where(deleted, DELETE, INSERT).astype(np.int8)
        out = replace_column(out, VALUE_KIND, pa.array(kinds))
    if deleted.any() and not keep_deletes:
        out = out.filter(pa.array(~deleted))
    return out


def replace_column(table: pa.Table, name: str, values: pa.Array) -> pa.Table:
    """``table`` with column ``name`` replaced, keeping its field (type, nullability)."""
    i = table.column_names.index(name)
    return table.set_column(i, table.schema.field(i), values.cast(table.schema.field(i).type))


def value_columns(table: pa.Table, config: MergeConfig) -> list[int]:
    skip = {*config.key_columns, SEQUENCE, VALUE_KIND}
    return [i for i, name in enumerate(table.column_names) if name not in skip]
