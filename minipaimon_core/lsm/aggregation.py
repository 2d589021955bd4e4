"""The aggregation merge engine: one function per value column over the key groups
(NumPy ``reduceat`` for numbers and booleans, Arrow hash aggregates otherwise). Rules in
:mod:`minipaimon_core.lsm.merge_engines`."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from minipaimon_core.errors import InvalidArgumentError, UnsupportedOptionError

from .merge_config import MergeConfig
from .merge_groups import Groups, finish, value_columns

_RETRACTABLE = frozenset({"sum", "count", "product", "last_value", "last_non_null_value"})
_ARROW_AGG = {"sum": "sum", "count": "sum", "min": "min", "max": "max",
              "bool_and": "all", "bool_or": "any", "product": "product"}


def aggregate(table: pa.Table, config: MergeConfig, g: Groups, retract: np.ndarray,
               max_seq: np.ndarray) -> pa.Table:
    out = table.take(g.order[g.ends])
    retract_sorted = retract[g.order]
    for i in value_columns(table, config):
        name = table.column_names[i]
        fn = config.function_of(name)
        ignore = name in config.ignore_retract
        if retract.any() and not ignore and (fn not in _RETRACTABLE or (
                fn == "product" and not pa.types.is_floating(table.schema.field(i).type))):
            raise InvalidArgumentError(
                f"field {name!r} with aggregate function {fn!r} cannot accept retractions "
                f"(-U/-D rows); set 'fields.{name}.ignore-retract' = 'true' or 'ignore-delete'")
        col = table.column(i)
        use = ~retract | (not ignore and fn in _RETRACTABLE)  # rows this field sees
        try:
            result = _aggregate_column(col, fn, g, use, retract, retract_sorted,
                                       config.listagg_delimiter.get(name, ","))
        except (pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
            raise UnsupportedOptionError(
                f"option 'fields.{name}.aggregate-function' = {fn!r} does not support "
                f"column type {col.type}: {e}") from e
        except pa.ArrowInvalid as e:
            raise InvalidArgumentError(f"aggregating field {name!r} with {fn!r}: {e}") from e
        out = out.set_column(i, table.schema.field(i), result)
    return finish(out, max_seq, np.zeros(len(g.starts), bool), False)


def _aggregate_column(col: pa.ChunkedArray, fn: str, g: Groups, use: np.ndarray,
                      retract: np.ndarray, retract_sorted: np.ndarray, delimiter: str) -> pa.Array:
    """One column's aggregate per group; ``use`` marks the rows (input order) it sees."""
    valid = pc.is_valid(col).to_numpy(zero_copy_only=False)
    if fn in ("first_value", "first_non_null_value", "last_value", "last_non_null_value"):
        rows = use[g.order] & (valid[g.order] if fn.endswith("non_null_value") else True)
        pos = g.first_where(rows) if fn.startswith("first") else g.last_where(rows)
        pos = np.where((pos >= 0) & retract_sorted[np.maximum(pos, 0)], -1, pos)
        return g.take(col, pos)
    ngroups = len(g.starts)
    if fn == "listagg":
        rows = g.order[(use & valid)[g.order]]  # in merge order
        lists = _grouped(col, g.input_gid, rows, "list", ngroups)
        return pc.binary_join(lists, delimiter).cast(col.type)
    typ = col.type
    if pa.types.is_integer(typ) or pa.types.is_floating(typ) or pa.types.is_boolean(typ):
        return _reduce_numeric(col, fn, g, (use & valid)[g.order], retract_sorted)
    rows = np.flatnonzero(use & valid)  # decimals, temporals, strings: Arrow hash aggregates
    gid = g.input_gid
    if fn in ("sum", "count"):
        signed = pc.if_else(pa.array(retract), pc.negate_checked(col), col)
        result = _fit_decimal(_grouped(signed, gid, rows, "sum", ngroups), typ)
        return pc.fill_null(result, 0) if fn == "count" else result
    if fn == "product":
        adds = _grouped(col, gid, rows[~retract[rows]], "product", ngroups)
        rets = _grouped(col, gid, rows[retract[rows]], "product", ngroups)
        seen = _grouped(col, gid, rows, "count", ngroups)
        one = pa.scalar(1, adds.type)
        prod = pc.divide(pc.fill_null(adds, one), pc.fill_null(rets, one))
        return _fit_decimal(pc.if_else(pc.greater(seen, 0), prod, None), typ)
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
    in merge order; ``seen`` (sorted) marks the contributing non-null rows."""
    typ = col.type
    if fn in ("bool_and", "bool_or") and not pa.types.is_boolean(typ):
        raise UnsupportedOptionError(f"{fn} needs a boolean column, not {typ}")
    if fn not in ("bool_and", "bool_or") and pa.types.is_boolean(typ):
        raise UnsupportedOptionError(f"{fn} does not apply to a boolean column")
    acc = np.float64 if pa.types.is_floating(typ) else np.int64
    raw = pc.fill_null(col, False if pa.types.is_boolean(typ) else 0)
    v = raw.to_numpy()[g.order] if isinstance(raw, pa.Array) else np.asarray(raw)[g.order]
    starts = g.starts
    if fn == "bool_and":
        result = np.logical_and.reduceat(np.where(seen, v, True), starts)
    elif fn == "bool_or":
        result = np.logical_or.reduceat(np.where(seen, v, False), starts)
    elif fn in ("min", "max"):
        big = np.inf if acc is np.float64 else np.iinfo(np.int64).max
        v = v.astype(acc)
        if fn == "min":
            result = np.minimum.reduceat(np.where(seen, v, big), starts)
        else:
            result = np.maximum.reduceat(np.where(seen, v, -big), starts)
    elif fn in ("sum", "count"):
        v = v.astype(acc)
        result = np.add.reduceat(np.where(seen, np.where(retract, -v, v), 0), starts)
    else:  # product
        v = v.astype(acc)
        adds = np.multiply.reduceat(np.where(seen & ~retract, v, 1), starts)
        rets = np.multiply.reduceat(np.where(seen & retract, v, 1), starts)
        if acc is np.float64:
            result = adds / rets
        else:
            if (rets == 0).any():
                raise InvalidArgumentError("product: a retraction divides by zero")
            result = np.sign(adds) * np.sign(rets) * (np.abs(adds) // np.abs(rets))
    present = np.logical_or.reduceat(seen, starts)
    mask = None if fn == "count" else ~present
    return pa.array(result, mask=mask).cast(typ, safe=False)


def _grouped(col: pa.ChunkedArray | pa.Array, gid: np.ndarray, rows: np.ndarray, agg: str,
             ngroups: int) -> pa.Array:
    """Arrow hash aggregate ``agg`` of ``col[rows]`` per group; null for groups without rows."""
    sub = pa.table({"g": gid[rows], "v": pc.take(col, pa.array(rows, pa.int64()))})
    res = sub.group_by("g", use_threads=False).aggregate([("v", agg)])
    where = np.full(ngroups, -1, np.int64)
    where[res.column("g").to_numpy()] = np.arange(res.num_rows)
    values = res.column(f"v_{agg}").combine_chunks()
    return pc.take(values, pa.array(np.maximum(where, 0), mask=where < 0))
