"""Folds that must go row by row, as Paimon's ``product`` does when it meets a retraction
(an integer division truncates at each step; a retraction from the null state gives the
retracted value itself) and on a decimal column (each step rounds half-up to the column's
scale and a product that leaves the precision is null).

Vectorised across groups in lockstep: step k folds the k-th contributing value of every
group that has one, as one NumPy or Arrow operation. Groups are ordered by their number of
values, longest first, so the groups still folding at step k are a prefix of the state.
The cost is one operation per step: as many steps as the most values one key has in the
merge (typically the number of sorted runs holding it). The aggregation engine calls this
only for a decimal ``product``, and for an integer ``product`` with a retraction or that
may overflow (:mod:`.agg_integers`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from minipaimon_core.errors import InvalidArgumentError

from . import agg_integers
from .merge_groups import Groups


def product(col: pa.ChunkedArray, g: Groups, seen: np.ndarray, ret: np.ndarray) -> pa.Array:
    """Paimon's ``product`` of each group of ``g`` over the rows ``seen`` (sorted positions:
    non-null values the column sees) in merge order; ``ret`` (sorted) marks retractions.
    From a null state the first value is taken as it is (multiplied or retracted); then
    ``+x`` multiplies and ``-x`` divides. Null for a group without values.

    Raises:
        InvalidArgumentError: an integer retraction divides by zero (Paimon fails too).
        OverflowError: an integer step leaves the column's type (see :mod:`.agg_integers`).
    """
    typ = col.type
    pos = np.flatnonzero(seen)
    gid = g.gid[pos]
    ngroups = len(g.starts)
    counts = np.bincount(gid, minlength=ngroups)
    by_size = np.argsort(-counts, kind="stable")
    sizes = counts[by_size]
    first = np.concatenate([[0], np.cumsum(counts)[:-1]])[by_size]  # start of each group in pos
    has = int((sizes > 0).sum())
    values = pc.take(col, pa.array(g.order[pos], pa.int64()))
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    retracts = ret[pos]
    if pa.types.is_decimal(typ):
        step = _decimal_step(typ)
        state: Any = values.take(pa.array(first[:has])).cast(pa.decimal256(typ.precision, typ.scale))
        values = values.cast(state.type)
    else:
        step = _number_step(typ)
        state = values.to_numpy(zero_copy_only=False)[first[:has]]
        values = values.to_numpy(zero_copy_only=False)
    for k in range(1, int(sizes[0]) if has else 0):
        m = int(np.searchsorted(-sizes, -k, side="left"))  # groups with more than k values
        idx = first[:m] + k
        head = step(state[:m], _at(values, idx), retracts[idx])
        state = pa.concat_arrays([head, state[m:]]) if isinstance(state, pa.Array) else \
            np.concatenate([head, state[m:]])
    folded = state.cast(typ) if isinstance(state, pa.Array) else pa.array(state).cast(typ, safe=False)
    where = np.empty(ngroups, np.int64)
    where[by_size] = np.arange(ngroups)  # group -> its place in the by-size order
    return pc.take(folded, pa.array(where, mask=where >= has))


def _at(values: Any, idx: np.ndarray) -> Any:
    return values.take(pa.array(idx)) if isinstance(values, pa.Array) else values[idx]


def _number_step(typ: pa.DataType) -> Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]:
    """acc * x, or acc / x for a retraction, in the column's own arithmetic: Java's
    ``float``/``double``, or exact integers (division truncates toward zero) that must fit
    the column's type (:func:`~minipaimon_core.lsm.agg_integers.checked_step`)."""
    floating = pa.types.is_floating(typ)
    narrow = np.dtype(typ.to_pandas_dtype())

    def step(acc: np.ndarray, x: np.ndarray, retract: np.ndarray) -> np.ndarray:
        if floating:
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                return np.where(retract, acc / x, acc * x).astype(acc.dtype)
        try:
            return agg_integers.checked_step(acc, x, retract, np.iinfo(narrow)).astype(narrow)
        except ZeroDivisionError:
            raise InvalidArgumentError("product: a retraction divides an integer by zero") from None

    return step


def _decimal_step(typ: pa.DataType) -> Callable[[pa.Array, pa.Array, np.ndarray], pa.Array]:
    """acc * x, or acc / x for a retraction, rounded half-up to the column's scale; null if
    it leaves the column's precision (Paimon's ``Decimal.fromBigDecimal``)."""
    wide = pa.decimal256(typ.precision, typ.scale)
    common = pa.decimal256(76, typ.scale)
    bound = pa.scalar(10 ** (typ.precision - typ.scale), pa.decimal256(76, 0)).cast(common)

    def half_up(v: pa.Array) -> pa.Array:
        return pc.round(v, ndigits=typ.scale, round_mode="half_towards_infinity").cast(common)

    def step(acc: pa.Array, x: pa.Array, retract: np.ndarray) -> pa.Array:
        r = pa.array(retract)
        divisor = pc.if_else(r, x, pa.scalar(1, x.type))
        if pc.any(pc.and_(r, pc.equal(x, pa.scalar(0, x.type)))).as_py():
            raise InvalidArgumentError("product: a retraction divides a decimal by zero")
        folded = pc.if_else(r, half_up(pc.divide(acc, divisor)), half_up(pc.multiply(acc, x)))
        folded = pc.if_else(pc.greater_equal(pc.abs(folded), bound), pa.scalar(None, common), folded)
        folded = pc.if_else(pc.is_null(acc), x.cast(common), folded)  # from null: x
        return folded.cast(wide, safe=False)

    return step
