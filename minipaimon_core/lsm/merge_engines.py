"""Merge engines: vectorised merge-on-read of the rows of one (partition, bucket).

``merge`` takes the rows of several sorted runs concatenated (user columns plus
``_SEQUENCE_NUMBER`` int64 and ``_VALUE_KIND`` int8: 0 +I, 1 -U, 2 +U, 3 -D) and returns one
row per key, sorted by key.  A key's rows are ordered by (``sequence.field`` nulls first,
``_SEQUENCE_NUMBER``), ties by input position.  All work is over whole arrays: one sort,
adjacent-key comparison for group boundaries, ``reduceat`` / Arrow hash aggregates, ``take``.
Output rows are +I, or -D for a deleted key when ``keep_deletes`` (compaction into a
non-bottom level: the delete must still shadow older levels); ``_SEQUENCE_NUMBER`` is the
largest of the key.  Merging runs with ``keep_deletes=True`` and later merging that output
with other runs gives the same result as merging everything at once (piecewise property).

* ``deduplicate``: the last row wins; a -U/-D winner deletes the key.
* ``first-row``: the first +I/+U row wins; -U/-D raise unless ``ignore-delete``.
* ``partial-update``: per column the last non-null +I/+U value.  -U/-D raise unless
  ``ignore-delete`` (dropped) or ``partial-update.remove-record-on-delete`` (-U dropped; -D
  forgets earlier values and deletes the key unless a +I/+U follows it; with
  ``keep_deletes`` such a re-written key keeps its -D row before its +I row, the only case
  of two output rows for one key).
* ``aggregation``: per column a function (default ``last_non_null_value``); -U/-D rows are
  retractions: ``sum``/``count`` subtract, ``product`` of a float column divides (an integer
  ``product`` refuses retractions: a retraction-only state cannot be exact),
  ``last_value`` becomes null, ``last_non_null_value`` becomes null on a non-null value.
  ``min``, ``max``, ``first_value``, ``first_non_null_value``, ``bool_and``, ``bool_or``,
  ``listagg`` raise InvalidArgumentError on a retraction unless the field ignores
  retractions.  Nulls are skipped except by ``last_value``/``first_value``; no value gives
  null (``count``: 0).  As in Paimon a key is never deleted: a key of only retractions gives
  +I with the retracted state (e.g. a negative sum).  A decimal ``sum``/``product`` that
  leaves its column's precision is null (as in Paimon); later values add to the null as to
  no value.

Aggregated rows are states, valid as input: ``count`` stores the running count and merging
sums it, so user rows must pass :func:`prepare_input` (non-null -> 1, null -> 0) exactly
once.  Piecewise limits, as in Paimon: a merged row cannot tell "reset to null" from "no
value" (``last_non_null_value`` after a retraction; ``first_value``/``last_value`` of a key
with only ignored retractions), and carries one ``sequence.field`` value, so for
partial-update/aggregation newer rows must not sort before older ones.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from minipaimon_core.errors import InvalidArgumentError, UnsupportedOptionError

from .. import options as option_values

__all__ = [
    "AGGREGATE_FUNCTIONS", "DELETE", "ENGINES", "INSERT", "SEQUENCE", "UPDATE_AFTER",
    "UPDATE_BEFORE", "VALUE_KIND", "MergeConfig", "is_single_run_sorted_unique", "merge",
    "prepare_input", "sort_by_key",
]

SEQUENCE = "_SEQUENCE_NUMBER"
VALUE_KIND = "_VALUE_KIND"
INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE = 0, 1, 2, 3
ENGINES = option_values.MERGE_ENGINES
AGGREGATE_FUNCTIONS = frozenset(option_values.AGGREGATE_FUNCTIONS)
_RETRACTABLE = frozenset({"sum", "count", "product", "last_value", "last_non_null_value"})
_ARROW_AGG = {"sum": "sum", "count": "sum", "min": "min", "max": "max",
              "bool_and": "all", "bool_or": "any", "product": "product"}
_IGNORE_DELETE_KEYS = ("ignore-delete", "partial-update.ignore-delete",
                       "first-row.ignore-delete", "deduplicate.ignore-delete")


@dataclass(frozen=True)
class MergeConfig:
    """How the rows of one key merge.  Build with :meth:`from_options` from table options.

    Raises (on construction):
        InvalidArgumentError: no key columns.
        UnsupportedOptionError: unknown engine or aggregate function.
    """

    key_columns: tuple[str, ...]
    engine: str = "deduplicate"
    sequence_field: str | None = None
    ignore_delete: bool = False
    partial_update_remove_on_delete: bool = False
    aggregate_functions: Mapping[str, str] = field(default_factory=dict)
    default_aggregate_function: str = "last_non_null_value"
    ignore_retract: frozenset[str] = frozenset()
    listagg_delimiter: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.key_columns:
            raise InvalidArgumentError("a merge needs at least one primary-key column")
        if self.engine not in ENGINES:
            raise UnsupportedOptionError(
                f"option 'merge-engine' = {self.engine!r} is unknown; use one of {ENGINES}")
        for name, fn in [*self.aggregate_functions.items(),
                         ("default", self.default_aggregate_function)]:
            if fn not in AGGREGATE_FUNCTIONS:
                key = ("fields.default-aggregate-function" if name == "default"
                       else f"fields.{name}.aggregate-function")
                raise UnsupportedOptionError(
                    f"option {key!r} = {fn!r} is unknown; use one of {sorted(AGGREGATE_FUNCTIONS)}")

    @staticmethod
    def from_options(key_columns: Sequence[str], options: Mapping[str, str]) -> MergeConfig:
        """Parse Paimon option names: ``merge-engine``, ``sequence.field``, ``ignore-delete``
        (and its legacy per-engine names), ``partial-update.remove-record-on-delete``,
        ``fields.default-aggregate-function``, ``fields.<f>.aggregate-function``,
        ``fields.<f>.ignore-retract``, ``fields.<f>.list-agg-delimiter``.

        Raises:
            UnsupportedOptionError: unknown engine or function, a non-boolean flag, several
                sequence fields, or ``fields.<f>.sequence-group`` (not supported).
        """
        typed = option_values.Options(options)
        functions: dict[str, str] = {}
        delimiters: dict[str, str] = {}
        ignore_retract: set[str] = set()
        for key in options:
            if key.startswith("fields.") and key.endswith(".sequence-group"):
                option_values.spec_of(key)  # raises: sequence groups are not supported
            if (f := option_values.field_option(key)) is None:
                continue
            name, suffix = f
            if suffix == "aggregate-function":
                functions[name] = typed[key]
            elif suffix == "list-agg-delimiter":
                delimiters[name] = typed[key]
            elif typed[key]:
                ignore_retract.add(name)
        seq = (options.get("sequence.field") or "").strip() or None
        if seq is not None and "," in seq:
            raise UnsupportedOptionError(
                f"option 'sequence.field' = {seq!r}: only one sequence field is supported")
        return MergeConfig(
            key_columns=tuple(key_columns),
            engine=typed["merge-engine"],
            sequence_field=seq,
            ignore_delete=any(typed[k] for k in _IGNORE_DELETE_KEYS),
            partial_update_remove_on_delete=typed["partial-update.remove-record-on-delete"],
            aggregate_functions=functions,
            default_aggregate_function=typed["fields.default-aggregate-function"],
            ignore_retract=frozenset(ignore_retract),
            listagg_delimiter=delimiters,
        )

    @property
    def keeps_tombstones(self) -> bool:
        """Deletes must be kept at every level, the bottom one included: with a
        ``sequence.field`` a late row with a lower sequence value must still lose against a
        -D with a higher one, whenever compaction ran (the reader drops -D rows)."""
        return self.sequence_field is not None and self.engine in ("deduplicate", "partial-update")

    def function_of(self, column: str) -> str:
        """The aggregate function of a non-key column."""
        return self.aggregate_functions.get(column, self.default_aggregate_function)


def prepare_input(table: pa.Table, config: MergeConfig) -> pa.Table:
    """Turn rows written by a user into merge input: for ``count`` columns of an aggregation
    table a non-null value becomes 1 and a null 0 (the column's type is kept).  Apply exactly
    once, before the first :func:`merge` of those rows; other engines return ``table``."""
    if config.engine != "aggregation":
        return table
    for i, name in enumerate(table.column_names):
        if name in config.key_columns or name in (SEQUENCE, VALUE_KIND):
            continue
        if config.function_of(name) == "count":
            col = table.column(i)
            ones = pc.cast(pc.is_valid(col), pa.int8()).cast(col.type)
            table = table.set_column(i, table.schema.field(i), ones)
    return table


def sort_by_key(table: pa.Table, key_columns: Sequence[str]) -> pa.Table:
    """``table`` sorted by key ascending, then ``_SEQUENCE_NUMBER`` (if present) ascending."""
    cols = [*key_columns, *([SEQUENCE] if SEQUENCE in table.column_names else [])]
    return table.take(_sort_order(table, cols))


def is_single_run_sorted_unique(table: pa.Table, key_columns: Sequence[str]) -> bool:
    """True if the keys are strictly ascending: ``table`` is one sorted run with one row per
    key, so a merge has nothing to combine (only deletes to drop)."""
    n = table.num_rows
    if n < 2:
        return True
    ascending = np.zeros(n - 1, bool)  # decided: this pair is in strictly ascending order
    undecided = np.ones(n - 1, bool)  # all key columns so far are equal
    for name in key_columns:
        col = table.column(name)
        a, b = col.slice(0, n - 1), col.slice(1)
        lt = pc.fill_null(pc.less(a, b), False).to_numpy(zero_copy_only=False)
        eq = pc.fill_null(pc.equal(a, b), False).to_numpy(zero_copy_only=False)
        ascending |= undecided & lt
        undecided &= eq
    return bool(ascending.all())


def merge(table: pa.Table, config: MergeConfig, *, keep_deletes: bool) -> pa.Table:
    """Merge the rows of each key of ``table`` into one, sorted by key (see module doc).

    Raises:
        InvalidArgumentError: a key, sequence or system column is missing; a bad
            ``_VALUE_KIND``; a -U/-D row for partial-update / first-row without
            ``ignore-delete`` (or remove-record-on-delete); a retraction of an aggregate
            function that cannot retract (names the field and function).
        UnsupportedOptionError: an aggregate function does not fit its column's type.
    """
    for name in (*config.key_columns, SEQUENCE, VALUE_KIND, *filter(None, [config.sequence_field])):
        if name not in table.column_names:
            raise InvalidArgumentError(f"merge input lacks column {name!r}")
    table = table.combine_chunks()
    kinds = table.column(VALUE_KIND).to_numpy()
    if len(kinds) and (kinds.min() < INSERT or kinds.max() > DELETE):
        raise InvalidArgumentError("_VALUE_KIND holds a value outside 0..3 (+I, -U, +U, -D)")
    retract = (kinds == UPDATE_BEFORE) | (kinds == DELETE)
    engine = config.engine
    if config.ignore_delete or (retract.any() and engine != "aggregation"):
        if config.ignore_delete:
            keep = ~retract
        elif engine == "partial-update" and config.partial_update_remove_on_delete:
            keep = kinds != UPDATE_BEFORE
        elif engine == "deduplicate":
            keep = None
        else:
            raise InvalidArgumentError(
                f"{engine} cannot accept delete or update-before rows; set 'ignore-delete' = "
                "'true'" + (" or 'partial-update.remove-record-on-delete' = 'true'"
                            if engine == "partial-update" else ""))
        if keep is not None and not keep.all():
            table = table.filter(pa.array(keep))
            kinds = kinds[keep]
            retract = retract[keep]
    if table.num_rows == 0:
        return table
    g = _Groups(table, config)
    seq = table.column(SEQUENCE).to_numpy()
    if config.sequence_field is None:  # sorted by sequence within a key: the last is max
        max_seq = seq[g.order[g.ends]]
    else:
        max_seq = np.maximum.reduceat(seq[g.order], g.starts)
    if engine in ("deduplicate", "first-row"):
        rows = g.order[g.ends if engine == "deduplicate" else g.starts]
        return _finish(table.take(rows), max_seq, retract[rows], keep_deletes)
    if engine == "partial-update":
        return _partial_update(table, config, g, kinds[g.order], max_seq, keep_deletes)
    return _aggregate(table, config, g, retract, max_seq)


class _Groups:
    """Sort order of the rows and the key groups in it (positions are sorted positions)."""

    def __init__(self, table: pa.Table, config: MergeConfig) -> None:
        sort_cols = [*config.key_columns, *filter(None, [config.sequence_field]), SEQUENCE]
        self.order = _sort_order(table, sort_cols)
        n = len(self.order)
        new = np.zeros(n, bool)
        new[0] = True
        for name in config.key_columns:
            new |= _differs(table.column(name), self.order)
        self._new = new
        self.starts = np.flatnonzero(new)
        self.ends = np.empty_like(self.starts)
        self.ends[:-1] = self.starts[1:] - 1
        self.ends[-1] = n - 1
        self.n = n
        self._gid: np.ndarray | None = None

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


def _sort_order(table: pa.Table, columns: Sequence[str]) -> np.ndarray:
    arrays = [table.column(c) for c in columns]
    if all(a.null_count == 0 and (pa.types.is_integer(a.type) or pa.types.is_temporal(a.type))
           for a in arrays):
        return np.lexsort([_ints(a) for a in reversed(arrays)])
    keys = [(c, "ascending", "at_start") for c in columns]
    try:
        options = pc.SortOptions(sort_keys=keys)
    except (TypeError, ValueError):  # pyarrow < 25: one null placement for all keys
        options = pc.SortOptions([k[:2] for k in keys], null_placement="at_start")
    return pc.sort_indices(table.select(list(columns)), options=options).to_numpy().astype(np.int64)


def _ints(col: pa.Array | pa.ChunkedArray) -> np.ndarray:
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    if pa.types.is_temporal(arr.type):
        arr = arr.view(pa.int32() if arr.type.bit_width == 32 else pa.int64())
    return arr.to_numpy()


def _differs(col: pa.Array | pa.ChunkedArray, order: np.ndarray) -> np.ndarray:
    """``d[i]`` = sorted value i differs from sorted value i-1 (``d[0]`` False)."""
    out = np.zeros(len(order), bool)
    if len(order) < 2:
        return out
    if col.null_count == 0 and (pa.types.is_integer(col.type) or pa.types.is_temporal(col.type)):
        v = _ints(col)[order]
        out[1:] = v[1:] != v[:-1]
        return out
    s = pc.take(col, pa.array(order))
    a, b = s.slice(1), s.slice(0, len(order) - 1)
    ne = pc.fill_null(pc.not_equal(a, b), True)
    if pa.types.is_floating(col.type):
        ne = pc.and_(ne, pc.invert(pc.and_(pc.is_nan(a), pc.is_nan(b))))
    out[1:] = ne.to_numpy(zero_copy_only=False)
    return out


def _finish(out: pa.Table, max_seq: np.ndarray, deleted: np.ndarray,
            keep_deletes: bool) -> pa.Table:
    """Set ``_SEQUENCE_NUMBER`` / ``_VALUE_KIND`` and drop deleted keys unless kept."""
    out = _replace(out, SEQUENCE, pa.array(max_seq, pa.int64()))
    kinds = np.where(deleted, DELETE, INSERT).astype(np.int8)
    out = _replace(out, VALUE_KIND, pa.array(kinds))
    if deleted.any() and not keep_deletes:
        out = out.filter(pa.array(~deleted))
    return out


def _replace(table: pa.Table, name: str, values: pa.Array) -> pa.Table:
    """``table`` with column ``name`` replaced, keeping its field (type, nullability)."""
    i = table.column_names.index(name)
    return table.set_column(i, table.schema.field(i), values.cast(table.schema.field(i).type))


def _value_columns(table: pa.Table, config: MergeConfig) -> list[int]:
    skip = {*config.key_columns, SEQUENCE, VALUE_KIND}
    return [i for i, name in enumerate(table.column_names) if name not in skip]


def _partial_update(table: pa.Table, config: MergeConfig, g: _Groups, kinds: np.ndarray,
                    max_seq: np.ndarray, keep_deletes: bool) -> pa.Table:
    is_delete = kinds == DELETE  # -U were dropped; remaining retractions are -D
    if is_delete.any():
        last_delete = g.last_where(is_delete)
        live_rows = ~is_delete & (np.arange(g.n) > last_delete[g.gid])
        deleted = g.last_where(live_rows) < 0  # nothing written after the latest -D
    else:
        last_delete = np.full(len(g.starts), -1)
        live_rows = np.ones(g.n, bool)
        deleted = np.zeros(len(g.starts), bool)
    out = table.take(g.order[g.ends])
    for i in _value_columns(table, config):
        if table.column_names[i] == config.sequence_field:
            continue  # the last row's (the largest): a kept -D must keep it to win later
        col = table.column(i)
        if col.null_count == 0 and not is_delete.any():
            continue  # the last row's value is the latest non-null one
        valid = live_rows & pc.is_valid(col).to_numpy(zero_copy_only=False)[g.order]
        out = out.set_column(i, table.schema.field(i), g.take(col, g.last_where(valid)))
    out = _finish(out, max_seq, deleted, keep_deletes)
    if not keep_deletes:
        return out
    shadow = (last_delete >= 0) & ~deleted  # deleted, then written again: keep the -D too
    if not shadow.any():
        return out
    d = table.take(g.order[last_delete[shadow]])
    d = _replace(d, VALUE_KIND, pa.array(np.full(d.num_rows, DELETE, np.int8)))
    both = pa.concat_tables([out, d.cast(out.schema)])
    sort_cols = [*config.key_columns, *filter(None, [config.sequence_field]), SEQUENCE]
    return both.take(_sort_order(both, sort_cols))


def _aggregate(table: pa.Table, config: MergeConfig, g: _Groups, retract: np.ndarray,
               max_seq: np.ndarray) -> pa.Table:
    out = table.take(g.order[g.ends])
    retract_sorted = retract[g.order]
    for i in _value_columns(table, config):
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
    return _finish(out, max_seq, np.zeros(len(g.starts), bool), False)


def _aggregate_column(col: pa.ChunkedArray, fn: str, g: _Groups, use: np.ndarray,
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


def _reduce_numeric(col: pa.ChunkedArray, fn: str, g: _Groups, seen: np.ndarray,
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
