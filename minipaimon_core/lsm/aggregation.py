"""The aggregation merge engine: one function per value column, folded over the rows of each
key that has several rows, as Paimon's ``AggregateMergeFunction`` folds them (rules in
:mod:`minipaimon_core.lsm.merge_engines`). NumPy ``reduceat`` for numbers and booleans,
Arrow hash aggregates otherwise; collections in :mod:`.agg_collections`; the few folds that
must go row by row (a ``product`` with retractions, a decimal ``product``) in
:mod:`.agg_sequential`, over the groups that need it only.

Each function's fold, from a null state, row by row in merge order (``+`` an insert or
update-after, ``-`` a retraction: update-before or delete):

==========================  ============================================================
``sum`` (``count``)         ``+x``: add; ``-x``: subtract (from null: ``-x``); nulls skip
``product``                 ``+x``: multiply; ``-x``: divide (from null: ``x``); nulls skip
                            (integers: a step that leaves the type raises, never wraps)
``last_value``              ``+x``: x (null too); ``-x``: null
``last_non_null_value``     ``+x``: x if not null; ``-x``: null if x is not null
``first_value``             the first ``+`` row's value (null too)
``first_non_null_value``    the first non-null ``+`` value
``min`` ``max``             smallest / largest non-null (NaN is the largest float)
``bool_and`` ``bool_or``    over the non-null values
``listagg``                 non-null values joined by the delimiter, in merge order
                            (``distinct``: new tokens only, :mod:`.agg_listagg`)
``collect`` ...             see :mod:`.agg_collections`
==========================  ============================================================

A retraction reaching a function without one (``min``, ``max``, ``first_*``, ``bool_*``,
``listagg``) raises InvalidArgumentError, unless ``fields.<f>.ignore-retract`` (then the
row is skipped by that column).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from minipaimon_core.errors import InvalidArgumentError, UnsupportedOptionError

from . import agg_collections, agg_integers, agg_listagg, agg_sequential
from .merge_config import DELETE, MergeConfig
from .merge_groups import Groups, value_columns

_ARROW_AGG = {"min": "min", "max": "max", "bool_and": "all", "bool_or": "any"}


def aggregate(table: pa.Table, config: MergeConfig, g: Groups, retract: np.ndarray,
              unmerged: np.ndarray | None = None, rows: np.ndarray | None = None) -> pa.Table:
    """One row per group of ``g`` with every value column folded (``retract`` marks the
    -U/-D rows, input order) over the rows ``rows`` marks (input order; all if None);
    other columns are the last row's. The groups ``unmerged`` marks keep their last row as
    it is (keys of one row: their retractions must not be marked). Raises
    InvalidArgumentError / UnsupportedOptionError (see the module)."""
    out = table.take(g.order[g.ends])
    keep = pa.array(unmerged) if unmerged is not None and unmerged.any() else None
    for i in value_columns(table, config):
        name = table.column_names[i]
        folded = fold_column(table.column(i), name, config.function_of(name), g, retract, config, rows)
        if keep is not None:
            folded = pc.if_else(keep, out.column(i), folded)
        out = out.set_column(i, table.schema.field(i), folded)
    return out


def delete_resets(g: Groups, kinds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``aggregation.remove-record-on-delete``, as Paimon's ``AggregateMergeFunction``: a -D
    row (not a -U) replaces its key's state by its own values, so a key's fold starts at its
    last -D, which is folded as an insert, and the rows before it are forgotten; a key
    whose last row is a -D is removed (its merged row is that -D). Returns (the rows folded,
    input order; which groups end in a -D).

    Paimon folds the later rows onto the -D's values (a ``sum`` of +10, -D 10, +5 is 15;
    after a compaction dropped the -D, 5), and so does this; its ``first_value`` of a key
    whose merge starts at a -D takes the next row's value, where this keeps the -D's (the
    result of merging the key's rows at once)."""
    deletes = (kinds == DELETE)[g.order]
    last = g.last_where(deletes)
    before = np.arange(g.n) < np.repeat(last, g.sizes)  # sorted positions
    folded = np.empty(g.n, bool)
    folded[g.order] = ~before
    return folded, (last >= 0) & (last == g.ends)


def fold_column(col: pa.ChunkedArray, name: str, fn: str, g: Groups, retract: np.ndarray,
                config: MergeConfig, rows: np.ndarray | None = None) -> pa.Array:
    """Column ``name``'s fold by ``fn`` per group of ``g``, over the rows (input order)
    ``rows`` marks (all if None). ``retract`` marks the retractions (input order)."""
    seen = np.ones(len(retract), bool) if rows is None else rows
    retracting = bool((retract & seen).any()) and config.retracts(name, fn)
    ret = retract & seen if retracting else np.zeros(len(retract), bool)
    use = seen & (~retract | ret)  # rows this column sees
    try:
        if fn in agg_collections.FUNCTIONS:
            return agg_collections.fold(col, fn, g, use, ret, config, name)
        if fn == "listagg" and name in config.collect_distinct:
            return agg_listagg.distinct_listagg(col, g, use, config.listagg_delimiter.get(name, ","))
        return _fold(col, fn, g, use, ret, config.listagg_delimiter.get(name, ","))
    except (pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        raise UnsupportedOptionError(
            f"option 'fields.{name}.aggregate-function' = {fn!r} does not support column "
            f"type {col.type}: {e}") from e
    except pa.ArrowInvalid as e:
        raise InvalidArgumentError(f"aggregating field {name!r} with {fn!r}: {e}") from e
    except OverflowError as e:  # agg_integers: nothing wrapped is ever returned or stored
        raise InvalidArgumentError(
            f"aggregating field {name!r} with {fn!r}: {e} (Paimon fails too, apache/paimon#7992); "
            f"nothing was merged. Widen the column (alter_column_type to a wider integer or a "
            f"DECIMAL), or roll back the commit that overflowed") from None


def _fold(col: pa.ChunkedArray, fn: str, g: Groups, use: np.ndarray, ret: np.ndarray,
          delimiter: str) -> pa.Array:
    valid = pc.is_valid(col).to_numpy(zero_copy_only=False)
    use_s, ret_s = use[g.order], ret[g.order]
    if fn in ("first_value", "first_non_null_value", "last_value", "last_non_null_value"):
        rows = use_s & (valid[g.order] if fn.endswith("non_null_value") else True)
        pos = g.first_where(rows) if fn.startswith("first") else g.last_where(rows)
        pos = np.where((pos >= 0) & ret_s[np.maximum(pos, 0)], -1, pos)  # a retraction: null
        return g.take(col, pos)
    ngroups = len(g.starts)
    if fn == "listagg":
        rows = g.order[(use & valid)[g.order]]  # in merge order
        lists = _grouped(col, g.input_gid, rows, "list", ngroups)
        return pc.binary_join(lists, delimiter).cast(col.type)
    typ = col.type
    seen = (use & valid)[g.order]
    if fn == "product" and (pa.types.is_decimal(typ) or (ret_s & seen).any()
                            or _product_may_overflow(col, g, seen)):
        return agg_sequential.product(col, g, seen, ret_s)
    if pa.types.is_integer(typ) or pa.types.is_floating(typ) or pa.types.is_boolean(typ):
        return _reduce_numeric(col, fn, g, seen, ret_s)
    rows = np.flatnonzero(use & valid)  # decimals, temporals, strings: Arrow hash aggregates
    gid = g.input_gid
    if fn in ("sum", "count"):
        signed = pc.if_else(pa.array(ret), pc.negate_checked(col), col)
        result = _fit_decimal(_grouped(signed, gid, rows, "sum", ngroups), typ)
        return pc.fill_null(result, 0) if fn == "count" else result
    if fn not in _ARROW_AGG:
        raise UnsupportedOptionError(f"{fn} does not apply to a column of type {typ}")
    return _grouped(col, gid, rows, _ARROW_AGG[fn], ngroups).cast(typ)


def _fit_decimal(values: pa.Array, typ: pa.DataType) -> pa.Array:
    """``values`` cast to ``typ``; a decimal that does not fit its precision becomes null
    (Paimon: decimal overflow gives null)."""
    if pa.types.is_decimal(typ) and len(values):
        wide = values.cast(pa.decimal128(38, typ.scale))
        bound = pa.scalar(10 ** (typ.precision - typ.scale), pa.decimal128(38, 0))
        over = pc.fill_null(pc.greater_equal(pc.abs(wide), bound.cast(wide.type)), False)
        values = pc.if_else(over, pa.scalar(None, wide.type), wide)
    return values.cast(typ, safe=False)


def _reduce_numeric(col: pa.ChunkedArray, fn: str, g: Groups, seen: np.ndarray,
                    retract: np.ndarray) -> pa.Array:
    """``fn`` of a numeric/boolean column with NumPy ``reduceat`` over the sorted groups,
    in merge order; ``seen`` (sorted) marks the contributing non-null rows. Integer sums
    are exact and must fit the column's type at every step (:mod:`.agg_integers`: raises
    OverflowError); products here are those that cannot overflow. Floats add and multiply
    in their own width, as Java's ``float``/``double`` (NumPy sums a group of 8 or more
    values pairwise, so such a float sum may differ from Java's in the last bits)."""
    typ = col.type
    if fn in ("bool_and", "bool_or") and not pa.types.is_boolean(typ):
        raise UnsupportedOptionError(f"{fn} needs a boolean column, not {typ}")
    if fn not in ("bool_and", "bool_or") and pa.types.is_boolean(typ):
        raise UnsupportedOptionError(f"{fn} does not apply to a boolean column")
    floating = pa.types.is_floating(typ)
    raw = pc.fill_null(col, False if pa.types.is_boolean(typ) else 0)
    v = raw.to_numpy()[g.order] if isinstance(raw, pa.Array) else np.asarray(raw)[g.order]
    if not pa.types.is_boolean(typ):
        v = v.astype(v.dtype if floating else np.int64)
    starts = g.starts
    if fn == "bool_and":
        result = np.logical_and.reduceat(np.where(seen, v, True), starts)
    elif fn == "bool_or":
        result = np.logical_or.reduceat(np.where(seen, v, False), starts)
    elif fn in ("min", "max"):
        big = np.inf if floating else np.iinfo(np.int64).max
        if fn == "min":  # fmin: NaN only if every value is NaN (Java: NaN is the largest)
            result = np.fmin.reduceat(np.where(seen, v, big), starts)
        else:
            result = np.maximum.reduceat(np.where(seen, v, -big), starts)
    elif fn in ("sum", "count") and not floating:
        result = agg_integers.checked_sums(v, seen, retract, g, np.iinfo(typ.to_pandas_dtype()))
    elif fn in ("sum", "count"):
        result = np.add.reduceat(np.where(seen, np.where(retract, -v, v), 0), starts)
    else:  # product without retractions
        result = np.multiply.reduceat(np.where(seen, v, 1), starts)
    present = np.logical_or.reduceat(seen, starts)
    mask = None if fn == "count" else ~present
    return pa.array(result, mask=mask).cast(typ, safe=False)


def _product_may_overflow(col: pa.ChunkedArray, g: Groups, seen: np.ndarray) -> bool:
    """Whether an integer ``product`` of ``col`` may leave its type (then it is folded step
    by step, exactly: :mod:`.agg_integers`)."""
    if not pa.types.is_integer(col.type):
        return False
    v = pc.fill_null(col, 0).to_numpy()[g.order].astype(np.int64)
    return agg_integers.product_may_overflow(v, seen, g, np.iinfo(col.type.to_pandas_dtype()))


def _grouped(col: pa.ChunkedArray | pa.Array, gid: np.ndarray, rows: np.ndarray, agg: str,
             ngroups: int) -> pa.Array:
    """Arrow hash aggregate ``agg`` of ``col[rows]`` per group; null for groups without rows."""
    sub = pa.table({"g": gid[rows], "v": pc.take(col, pa.array(rows, pa.int64()))})
    res = sub.group_by("g", use_threads=False).aggregate([("v", agg)])
    where = np.full(ngroups, -1, np.int64)
    where[res.column("g").to_numpy()] = np.arange(res.num_rows)
    values = res.column(f"v_{agg}").combine_chunks()
    return pc.take(values, pa.array(np.maximum(where, 0), mask=where < 0))
