"""Streaming k-way merge of sorted runs: key-aligned chunks, each merged by the vectorised
merge engines (pure; no IO).

A sorted run arrives as consecutive key-sorted tables (a file's batches, file after file).
:func:`key_chunks` cuts all runs at the same keys and yields, per step, one slice of every
run, so that the slices of one step cover one key range and every row of a key, from every
run, is in the same step::

    run A  | a1 a2 a3 | a4 a5 ...          boundary = the smallest "last buffered key"
    run B  | b1 b2 | b3 ...                  among the runs that still hold rows
             \\______/
             step: A's rows <= boundary, B's rows <= boundary  -> merge -> output

Each run buffers one table (and peeks at the next one only when a key continues into it),
so memory is about one table per run whatever the runs hold. By the piecewise property of
the merge engines (:mod:`.merge_engines`), merging the steps one by one and concatenating
the results equals merging all rows at once: a key's group sees exactly the same rows in
the same order (slices are concatenated in run order, as the runs would be).

Keys compare as Arrow sorts them (the order of the files): integer and temporal single
keys by their integer values, any other key column by Arrow's comparison kernels, NaN before
every number (the merge's order; writers refuse NaN keys). REQUIRES every run's tables
sorted by key (across tables too), all tables of all runs with the same key column types; a key may repeat within a run (a kept -D before its
+I) and continue from one table into the next.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .merge_engines import MergeConfig, merge
from .merge_groups import int_values

__all__ = ["key_chunks", "merged_chunks"]


def key_chunks(runs: Sequence[Iterable[pa.Table]],
               key_columns: Sequence[str]) -> Iterator[list[pa.Table | None]]:
    """Aligned slices of ``runs`` (see module doc): each step yields one entry per run, in
    the order of ``runs``: its rows in the step's key range, or None where it holds none;
    the steps' key ranges ascend and never overlap. A run's tables may be empty."""
    keys = list(key_columns)
    sources = [_Run(iter(r), keys) for r in runs]
    while True:
        live = [s.fill() for s in sources]
        if not any(live):
            return
        owner = min((s for s, has in zip(sources, live) if has), key=lambda s: s.last_key())
        boundary = owner.last_key()
        yield [s.take(s.size() if s is owner else s.count_at_most(boundary)) if has else None
               for s, has in zip(sources, live)]


def merged_chunks(runs: Sequence[Iterable[pa.Table]], config: MergeConfig, *, keep_deletes: bool,
                  before_merge: Callable[[list[pa.Table | None]], pa.Table] | None = None) -> Iterator[pa.Table]:
    """The merge (:func:`~.merge_engines.merge`) of all rows of ``runs`` as consecutive
    key-sorted tables, step by step; concatenated they equal ``merge`` of the runs'
    rows concatenated in run order. ``before_merge`` builds a step's merge input from its
    slices (default: concatenated). Steps that merge to no row are skipped."""
    concat = before_merge or _concat
    for parts in key_chunks(runs, config.key_columns):
        rows = concat(parts)
        if rows.num_rows:
            out = merge(rows, config, keep_deletes=keep_deletes)
            if out.num_rows:
                yield out


def _concat(parts: list[pa.Table | None]) -> pa.Table:
    nonempty = [p for p in parts if p is not None]
    return pa.concat_tables(nonempty) if len(nonempty) != 1 else nonempty[0]


class _Run:
    """One run's buffered rows (a prefix of the run not yet taken), always ending at a key
    boundary: the rows of the buffer's last key that the next table holds are moved in."""

    def __init__(self, tables: Iterator[pa.Table], keys: list[str]) -> None:
        self._tables = tables
        self._keys = keys
        self._buffer: pa.Table | None = None
        self._peeked: pa.Table | None = None
        self._view: _Keys | None = None

    def size(self) -> int:
        return self._buffer.num_rows if self._buffer is not None else 0

    def _pull(self) -> pa.Table | None:
        if self._peeked is not None:
            out, self._peeked = self._peeked, None
            return out
        while True:
            t = next(self._tables, None)
            if t is None:
                return None
            if isinstance(t, pa.RecordBatch):
                t = pa.Table.from_batches([t])
            if t.num_rows:
                return t

    def fill(self) -> bool:
        """Make the buffer non-empty and complete in its last key; False when the run is
        exhausted."""
        if self.size():
            return True
        t = self._pull()
        if t is None:
            self._buffer = None
            self._view = None
            return False
        view = _keys_of(t, self._keys)
        while True:  # the last key continues into the next table: move its rows in
            nxt = self._pull()
            if nxt is None:
                break
            n = _keys_of(nxt, self._keys).count_at_most(view.last())
            if n < nxt.num_rows:
                self._peeked = nxt.slice(n) if n else nxt
            if n == 0:
                break
            t = pa.concat_tables([t, nxt.slice(0, n)])
            view = _keys_of(t, self._keys)
            if self._peeked is not None:
                break
        self._buffer, self._view = t, view
        return True

    def last_key(self) -> Any:
        assert self._view is not None
        return self._view.last()

    def count_at_most(self, boundary: Any) -> int:
        assert self._view is not None
        return self._view.count_at_most(boundary)

    def take(self, n: int) -> pa.Table | None:
        """The first ``n`` buffered rows, removed from the buffer (None if ``n`` is 0)."""
        assert self._buffer is not None and self._view is not None
        if n == 0:
            return None
        head = self._buffer.slice(0, n)
        if n == self._buffer.num_rows:
            self._buffer, self._view = None, None
        else:
            self._buffer = self._buffer.slice(n)
            self._view = self._view.slice(n, self._buffer)
        return head


class _Keys:
    """The key columns of one key-sorted table: its last key and prefix counts."""

    def last(self) -> Any:
        raise NotImplementedError

    def count_at_most(self, boundary: Any) -> int:
        """Rows whose key is <= ``boundary`` (a key of :meth:`last`'s kind)."""
        raise NotImplementedError

    def slice(self, n: int, rest: pa.Table) -> _Keys:
        """The view of ``rest``, this table without its first ``n`` rows."""
        raise NotImplementedError


def _keys_of(table: pa.Table, keys: list[str]) -> _Keys:
    if len(keys) == 1:
        col = table.column(keys[0])
        if col.null_count == 0 and (pa.types.is_integer(col.type) or pa.types.is_temporal(col.type)):
            return _IntKeys(int_values(col))
    return _ArrowKeys(table, keys)


class _IntKeys(_Keys):
    """One integer or temporal key column without nulls, as integers (binary search)."""

    def __init__(self, values: np.ndarray) -> None:
        self._v = values

    def last(self) -> Any:
        return int(self._v[-1])

    def count_at_most(self, boundary: Any) -> int:
        return int(np.searchsorted(self._v, boundary, side="right"))

    def slice(self, n: int, rest: pa.Table) -> _Keys:
        return _IntKeys(self._v[n:])


class _ArrowKeys(_Keys):
    """Any key columns: Python values for the last key, Arrow kernels for counts."""

    def __init__(self, table: pa.Table, keys: list[str]) -> None:
        self._table = table
        self._keys = keys

    def last(self) -> Any:
        i = self._table.num_rows - 1
        return tuple(_sort_key(self._table.column(k)[i].as_py()) for k in self._keys)

    def count_at_most(self, boundary: Any) -> int:
        at_most: pa.Array | None = None
        equal_so_far: pa.Array | None = None
        for name, (rank, value) in zip(self._keys, boundary):
            less, equal = _less_equal(self._table.column(name), rank, value)
            term = less if equal_so_far is None else pc.and_(equal_so_far, less)
            at_most = term if at_most is None else pc.or_(at_most, term)
            equal_so_far = equal if equal_so_far is None else pc.and_(equal_so_far, equal)
        assert at_most is not None and equal_so_far is not None
        mask = np.asarray(pc.or_(at_most, equal_so_far).to_numpy(zero_copy_only=False), dtype=bool)
        return int(mask.size if mask.all() else np.argmin(mask))  # sorted: a prefix

    def slice(self, n: int, rest: pa.Table) -> _Keys:
        return _ArrowKeys(rest, self._keys)


def _sort_key(value: Any) -> tuple[int, Any]:
    """Python order matching the merge's sort of a key value (NaN before every number)."""
    if isinstance(value, float) and value != value:
        return (0, 0.0)
    return (1, value)


def _less_equal(column: pa.ChunkedArray, rank: int, value: Any) -> tuple[pa.Array, pa.Array]:
    """(column < value, column == value), with NaN equal to NaN and before every number."""
    if not pa.types.is_floating(column.type):
        scalar = pa.scalar(value, column.type)
        return pc.less(column, scalar), pc.equal(column, scalar)
    is_nan = pc.is_nan(column)
    if rank == 0:  # the boundary is NaN: no key is less
        return pc.and_(is_nan, pc.invert(is_nan)), is_nan
    scalar = pa.scalar(value, column.type)
    return pc.or_(is_nan, pc.less(column, scalar)), pc.equal(column, scalar)
