"""Which of many data files a filter may match, decided from their stats as arrays.

The same decision as :func:`minipaimon_core.expressions.predicate.might_match` on each file's stats,
made once per term over all files: the stats of a column are gathered into arrays (min and
max as Arrow arrays, null and row counts as NumPy) and compared with the term's literal by
Arrow kernels. A term falls back to the per-file decision where an array comparison could
differ from Python's: a column whose stats mix value types (an ``int`` column evolved to
``double``), or a literal of another type than the stats, or a value Arrow cannot hold
(integers past 64 bits: decimals, unsigned 64-bit). Unknown stats (a file whose schema lacks
the column, a None min or max) may match, as in :func:`might_match`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..format.manifest_file import DataFileMeta
from .literals import FALSE
from .predicate import DNF, IS_NAN, NOT_NAN, Term, term_might_match

Mask = np.ndarray  # one bool per file

# Python type of the stats values -> the Arrow type that holds them exactly and compares as
# Python does (UTF-8 order is code point order).
_ARROW_TYPES: dict[type, pa.DataType] = {int: pa.int64(), float: pa.float64(), str: pa.string(),
                                         bytes: pa.binary(), bool: pa.bool_()}


@dataclass
class _ColumnStats:
    """One column's stats over the files: ``known`` is False where a file has none."""

    mins: list[Any]
    maxs: list[Any]
    nulls: np.ndarray
    rows: np.ndarray
    known: np.ndarray

    @cached_property
    def arrays(self) -> tuple[pa.Array, pa.Array] | None:
        """(min, max) as Arrow arrays of one exact type, or None if the values do not allow
        it (mixed Python types, out of range)."""
        types = {type(v) for v in self.mins} | {type(v) for v in self.maxs}
        types.discard(type(None))
        if len(types) > 1:
            return None
        arrow_type = _ARROW_TYPES.get(types.pop()) if types else pa.null()
        if arrow_type is None:
            return None
        try:
            return pa.array(self.mins, arrow_type), pa.array(self.maxs, arrow_type)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
            return None


def may_match(dnf: DNF | None, files: Sequence[DataFileMeta],
              positions: Mapping[int, Mapping[str, int]], columns: Sequence[str] | None = None
              ) -> Mask:
    """For each file, False only if no row of it can match ``dnf`` by its value stats.

    ``positions``: schema id -> column name -> the column's position in the stats of files
    of that schema. Terms on columns outside ``columns`` (when given) may match.
    """
    n = len(files)
    if not dnf or n == 0:
        return np.ones(n, dtype=bool)
    allowed = None if columns is None else set(columns)
    stats: dict[str, _ColumnStats] = {}
    out = np.zeros(n, dtype=bool)
    for group in dnf:
        acc = np.ones(n, dtype=bool)
        for t in group:
            if allowed is not None and t.column not in allowed:
                continue
            if t.column not in stats:
                stats[t.column] = _gather(files, positions, t.column)
            acc &= _term_mask(t, stats[t.column])
        out |= acc
    return out


def _gather(files: Sequence[DataFileMeta], positions: Mapping[int, Mapping[str, int]],
            column: str) -> _ColumnStats:
    at = {sid: p.get(column, -1) for sid, p in positions.items()}
    index = [at.get(f.schemaId, -1) for f in files]
    stats = [f.valueStats for f in files]
    # a null count of None (Paimon's writers leave it out, e.g. pypaimon's) makes the column's
    # stats of that file unknown: the file is kept
    known = np.fromiter((0 <= i < len(s.nullCounts) and s.nullCounts[i] is not None
                         for s, i in zip(stats, index)), bool, len(files))
    if known.all():
        mins = [s.minValues[i] for s, i in zip(stats, index)]
        maxs = [s.maxValues[i] for s, i in zip(stats, index)]
        nulls = np.fromiter((s.nullCounts[i] for s, i in zip(stats, index)), np.int64, len(files))
    else:
        mins = [s.minValues[i] if k else None for s, i, k in zip(stats, index, known)]
        maxs = [s.maxValues[i] if k else None for s, i, k in zip(stats, index, known)]
        nulls = np.fromiter((s.nullCounts[i] if k else 0 for s, i, k in zip(stats, index, known)),
                            np.int64, len(files))
    rows = np.fromiter((f.rowCount for f in files), np.int64, len(files))
    return _ColumnStats(mins, maxs, nulls, rows, known)


def _term_mask(t: Term, s: _ColumnStats) -> Mask:
    """:func:`predicate.term_might_match` of ``t`` for every file of ``s``."""
    if t.op == FALSE:
        return np.zeros(len(s.known), dtype=bool)
    unknown = ~s.known
    if t.op == "is null":
        return unknown | (s.nulls > 0)
    if t.op in ("is not null", NOT_NAN):
        return unknown | (s.nulls < s.rows)
    if t.op == IS_NAN:  # only a file whose min or max is unknown (or NaN) may hold NaN
        open_ended = np.fromiter((lo is None or hi is None or _is_nan(lo) or _is_nan(hi)
                                  for lo, hi in zip(s.mins, s.maxs)), bool, len(s.known))
        return unknown | ((s.nulls < s.rows) & open_ended)
    compared = _compare(t, s)
    if compared is None:  # per file, as might_match
        return np.fromiter(
            (term_might_match(t, (lo, hi, nulls, rows) if k else None)
             for lo, hi, nulls, rows, k in zip(s.mins, s.maxs, s.nulls.tolist(), s.rows.tolist(), s.known)),
            bool, len(s.known))
    return unknown | ((s.nulls < s.rows) & compared)


def _is_nan(stat: Any) -> bool:
    return isinstance(stat, float) and math.isnan(stat)


def _compare(t: Term, s: _ColumnStats) -> Mask | None:
    """Whether ``[min, max]`` may hold a value matching ``t`` (True where min or max is
    None), or None if it cannot be decided on arrays exactly."""
    if s.arrays is None:
        return None
    lo, hi = s.arrays
    if lo.type == pa.null():  # no file has a min or max: all unknown
        return np.ones(len(lo), dtype=bool)
    open_ended = pc.or_(lo.is_null(), hi.is_null())
    if pa.types.is_floating(lo.type):  # a NaN as min or max is not trusted (predicate docs)
        open_ended = pc.or_(open_ended, pc.or_(pc.is_nan(lo), pc.is_nan(hi)))
    open_ended = pc.fill_null(open_ended, True).to_numpy(zero_copy_only=False)
    literals = t.stat if t.op in ("in", "not in") else [t.stat]
    if any(_ARROW_TYPES.get(type(v)) != lo.type for v in literals):
        return None
    try:
        values = [pa.scalar(v, lo.type) for v in literals]
    except (pa.ArrowInvalid, OverflowError):
        return None

    def done(result: pa.Array) -> Mask:  # a None min or max may match anything
        return open_ended | pc.fill_null(result, True).to_numpy(zero_copy_only=False)

    if t.op == "in":
        hit = None
        for v in values:
            inside = pc.and_(pc.less_equal(lo, v), pc.less_equal(v, hi))
            hit = inside if hit is None else pc.or_(hit, inside)
        assert hit is not None
        return done(hit)
    if t.op == "not in":
        single = pc.equal(lo, hi)
        return done(pc.invert(pc.and_(single, pc.is_in(lo, value_set=pa.array(t.stat, lo.type)))))
    v = values[0]
    if t.op == "=":
        return done(pc.and_(pc.less_equal(lo, v), pc.less_equal(v, hi)))
    if t.op == "!=":
        return done(pc.invert(pc.and_(pc.equal(lo, hi), pc.equal(lo, v))))
    if t.op == "<":
        return done(pc.less(lo, v))
    if t.op == "<=":
        return done(pc.less_equal(lo, v))
    if t.op == ">":
        return done(pc.greater(hi, v))
    if t.op == ">=":
        return done(pc.greater_equal(hi, v))
    return None
