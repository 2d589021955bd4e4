"""``Table.merge``: fold a batch of changes into a table by a join condition, in
delta-spark's shape (snake_case), as one commit.

```python
t.merge(source, on=["id"]) \\
    .when_matched_update(set={"v": "source.v"}, condition=pc.field("source.v") > pc.field("target.v")) \\
    .when_matched_delete(condition=pc.field("source.deleted")) \\
    .when_not_matched_insert_all() \\
    .execute()                       # MergeResult(inserted=..., updated=..., deleted=...)
```

Values and conditions (one form, as in the docs): a ``pyarrow.compute`` expression over the
columns ``"source.<c>"`` and ``"target.<c>"`` (``pc.field("source.v") + 1``), a string naming
one of them (``"source.v"``), or a Python literal other than a string (a string literal is
``pc.scalar("text")``). A condition that is null counts as false, as in SQL.

Semantics, as Delta's: a target row matched by source rows on ``on`` (equality of every
column; a null never matches) goes to the first ``when_matched_*`` clause whose condition
holds; a source row matching no target row to the first ``when_not_matched_*`` clause; a
target row matching no source row to the first ``when_not_matched_by_source_*`` clause
(``delete``, or ``update`` with values over ``"target.<c>"`` only).
Rows no clause takes are left as they are. Two source rows matching one target row are an
error when there is a matched clause (which of them would win is undefined).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import InvalidArgumentError
from ..expressions import predicate
from ..metadata.context import TableContext
from ..write.conform import to_batches
from . import dml
from . import dml_values as exprs_of
from .assignment import EXACT, store
from .dml_sequence import settle, shadowed
from .merge_keys import Bounds, bounds_of, check_inserted_keys, prune_filter

SOURCE, TARGET = "source.", "target."
_T_ROW, _S_ROW = "__minipaimon_target_row", "__minipaimon_source_row"


@dataclass(frozen=True)
class MergeResult:
    """Rows the merge inserted, updated and deleted."""

    inserted: int
    updated: int
    deleted: int


@dataclass(frozen=True)
class _Clause:
    kind: str  # "matched", "not_matched", "not_matched_by_source"
    action: str  # "update", "delete", "insert"
    condition: pc.Expression | None
    values: Mapping[str, Any] | None  # None: every column (update_all / insert_all)
    policy: str = EXACT  # how values of another type are stored (dml/assignment.py)


class MergeClauses:
    """The ``when_*`` clauses of a merge joined on ``on``, in the order they are added (the
    builder API; :class:`MergeBuilder` runs them in this process, ``minipaimon_spark.merge``
    on Spark's executors)."""

    def __init__(self, on: list[str] | str) -> None:
        self._on = [on] if isinstance(on, str) else list(on)
        if not self._on:
            raise InvalidArgumentError("merge: 'on' needs at least one column")
        self._clauses: list[_Clause] = []
        self._policy = EXACT  # minipaimon_spark.merge: SPARK (Spark's store assignment)

    def _check_join_columns(self, table: list[str], source: list[str]) -> None:
        for c in self._on:
            if c not in table or c not in source:
                raise InvalidArgumentError(
                    f"merge: join column {c!r} must be in the table {table} and in the source {source}")

    def _add(self, kind: str, action: str, condition: Any, values: Mapping[str, Any] | None) -> Any:
        if condition is not None and not isinstance(condition, pc.Expression):
            raise InvalidArgumentError(
                f"merge: a condition must be a pyarrow.compute expression, got {condition!r}")
        if values is not None and (not isinstance(values, Mapping) or not values):
            raise InvalidArgumentError(f"merge: values must be a non-empty dict, got {values!r}")
        self._clauses.append(_Clause(kind, action, condition, values, self._policy))
        return self

    def when_matched_update(self, set: Mapping[str, Any], condition: Any = None) -> Any:
        return self._add("matched", "update", condition, set)

    def when_matched_update_all(self, condition: Any = None) -> Any:
        return self._add("matched", "update", condition, None)

    def when_matched_delete(self, condition: Any = None) -> Any:
        return self._add("matched", "delete", condition, None)

    def when_not_matched_insert(self, values: Mapping[str, Any], condition: Any = None) -> Any:
        return self._add("not_matched", "insert", condition, values)

    def when_not_matched_insert_all(self, condition: Any = None) -> Any:
        return self._add("not_matched", "insert", condition, None)

    def when_not_matched_by_source_delete(self, condition: Any = None) -> Any:
        return self._add("not_matched_by_source", "delete", condition, None)

    def when_not_matched_by_source_update(self, set: Mapping[str, Any], condition: Any = None) -> Any:
        """Set columns of target rows that no source row matches (SQL's WHEN NOT MATCHED BY
        SOURCE THEN UPDATE): values and condition over ``"target.<c>"`` only."""
        return self._add("not_matched_by_source", "update", condition, set)

    def _check_clauses(self, ctx: TableContext, source_names: list[str]) -> None:
        """No clause, one the table cannot express, or a bad update value: a typed error
        before anything is read."""
        if not self._clauses:
            raise InvalidArgumentError("merge: add at least one when_* clause before execute()")
        actions = {c.action for c in self._clauses}
        dml.check_changeable(ctx, deletes="delete" in actions, updates="update" in actions)
        for c in self._clauses:
            if c.action == "update":
                update_expressions(ctx, c, source_names, self._on)
            if c.kind == "not_matched_by_source" and c.values is not None:
                named = [v for v in c.values.values() if isinstance(v, str) and v.startswith(SOURCE)]
                if named:
                    raise InvalidArgumentError(
                        f"merge: when_not_matched_by_source_update sets {named}, but a target row "
                        "no source row matches has no source values; use 'target.<column>' or literals")

    @property
    def _by_source(self) -> bool:
        return any(c.kind == "not_matched_by_source" for c in self._clauses)


class MergeBuilder(MergeClauses):
    """A merge of an Arrow-convertible source in this process; ``execute`` commits."""

    def __init__(self, ctx_of: Callable[[], TableContext], source: Any, on: list[str] | str) -> None:
        super().__init__(on)
        self._ctx_of = ctx_of
        self._source = _source_table(source)
        self._check_join_columns(ctx_of().schema.arrow_schema().names, self._source.column_names)

    def execute(self) -> MergeResult:
        """Apply the clauses in one commit (read again and retried on a conflict with a
        concurrent commit; see minipaimon_core.dml.dml).

        Raises:
            InvalidArgumentError: no clause, a bad value or condition, duplicate source rows
                matching one target row.
            UnsupportedFeatureError: a change the table's merge engine cannot express.
            SchemaMismatchError: a value that does not fit its column.
            CommitConflictError: conflicts kept winning (``commit.max-retries``).
        """
        self._check_clauses(self._ctx_of(), self._source.column_names)
        if self._source.num_rows == 0 and not self._by_source:
            return MergeResult(0, 0, 0)
        return dml.with_retries(self._ctx_of, self._attempt)

    def _attempt(self, ctx: TableContext) -> MergeResult:
        self._check_clauses(ctx, self._source.column_names)
        arrow = ctx.schema.arrow_schema()
        prune = None if self._by_source else prune_filter(self._on, bounds_of(self._source, self._on))
        target = dml.read_target(ctx, predicate.normalize(prune, arrow))
        t_rows, s_rows = self._match(target.rows)
        deleted, updated, values = decide_matched(ctx, self._clauses, self._on, target.rows, t_rows,
                                                  self._source.take(pa.array(s_rows)))
        unmatched = np.ones(self._source.num_rows, dtype=bool)
        unmatched[s_rows] = False
        inserts = insert_rows(self._clauses, self._source.filter(pa.array(unmatched)), arrow)
        inserts = inserts.filter(pa.array(~shadowed(ctx, target.snapshot, inserts)))
        guarded = check_inserted_keys(ctx, target.snapshot, self._on, inserts, target.rows.filter(pa.array(deleted)))
        change = settle(ctx, target.rows, dml.Change(deleted, updated, values, inserts))
        dml.apply_change(ctx, target, change, guarded)
        return MergeResult(inserts.num_rows, int(change.updated.sum()), int(deleted.sum()))

    def _match(self, target: pa.Table) -> tuple[np.ndarray, np.ndarray]:
        """Row numbers (target, source) of every pair that agrees on the join columns."""
        t = target.select(self._on).append_column(_T_ROW, pa.array(np.arange(target.num_rows, dtype=np.int64)))
        s = self._source.select(self._on)
        s = pa.Table.from_arrays([_comparable(s.column(c), target.schema.field(c).type) for c in self._on],
                                 names=self._on)
        s = s.append_column(_S_ROW, pa.array(np.arange(s.num_rows, dtype=np.int64)))
        if t.num_rows == 0 or s.num_rows == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        joined = t.join(s, self._on, join_type="inner")
        return (joined.column(_T_ROW).to_numpy().astype(np.int64),
                joined.column(_S_ROW).to_numpy().astype(np.int64))


# -- the clauses on rows (here, and on Spark's executors for one piece of the target each) ----

def decide_matched(ctx: TableContext, clauses: list[_Clause], on: list[str], target: pa.Table,
                   t_rows: np.ndarray, pairs_source: pa.Table) -> tuple[np.ndarray, np.ndarray, pa.Table]:
    """What the matched and not-matched-by-source clauses do to ``target``: masks of rows
    deleted and updated, and the updated rows' new values in target order. Pair ``i`` is
    target row ``t_rows[i]`` with source row ``pairs_source[i]``; every target row not in
    ``t_rows`` matched no source row.

    Raises InvalidArgumentError for several source rows matching one target row (when a
    matched clause needs the pair), or a bad value or condition.
    """
    arrow = ctx.schema.arrow_schema()
    matched = [c for c in clauses if c.kind == "matched"]
    if matched and len(np.unique(t_rows)) < len(t_rows):
        raise InvalidArgumentError(
            f"merge: several source rows match one target row on {on}; de-duplicate the "
            "source (which one would win is undefined)")
    n = target.num_rows
    deleted = np.zeros(n, dtype=bool)
    updated = np.zeros(n, dtype=bool)
    new_values: list[tuple[np.ndarray, pa.Table]] = []  # (target rows, their new values)
    pairs = _append(_prefixed(target.take(pa.array(t_rows)), TARGET), _prefixed(pairs_source, SOURCE))
    left = np.ones(len(t_rows), dtype=bool)
    for c in matched:
        take = left & exprs_of.mask_of(pairs, c.condition, "merge condition")
        left &= ~take
        rows = t_rows[take]
        if c.action == "delete":
            deleted[rows] = True
        else:
            updated[rows] = True
            exprs = update_expressions(ctx, c, pairs_source.column_names, on)
            new_values.append((rows, exprs_of.updated_rows(pairs.filter(pa.array(take)), exprs, arrow,
                                                       "merge update", prefix=TARGET, policy=c.policy)))
    by_source = [c for c in clauses if c.kind == "not_matched_by_source"]
    if by_source:
        unmatched_target = np.ones(n, dtype=bool)
        unmatched_target[t_rows] = False
        orphans = np.flatnonzero(unmatched_target)
        targets = _prefixed(target.take(pa.array(orphans)), TARGET)
        left = np.ones(len(orphans), dtype=bool)
        for c in by_source:
            take = left & exprs_of.mask_of(targets, c.condition, "merge by-source condition")
            left &= ~take
            if c.action == "delete":
                deleted[orphans[take]] = True
            else:
                updated[orphans[take]] = True
                exprs = update_expressions(ctx, c, pairs_source.column_names, on)
                new_values.append((orphans[take], exprs_of.updated_rows(
                    targets.filter(pa.array(take)), exprs, arrow, "merge by-source update", prefix=TARGET,
                    policy=c.policy)))
    return deleted, updated, _in_target_order(new_values, arrow)


def insert_rows(clauses: list[_Clause], unmatched: pa.Table, arrow: pa.Schema) -> pa.Table:
    """The rows the not-matched clauses insert for source rows ``unmatched`` (each to the
    first clause whose condition holds), in the table's schema."""
    sources = _prefixed(unmatched, SOURCE)
    left = np.ones(sources.num_rows, dtype=bool)
    inserted = []
    for c in clauses:
        if c.kind != "not_matched":
            continue
        take = left & exprs_of.mask_of(sources, c.condition, "merge insert condition")
        left &= ~take
        inserted.append(_inserted(sources.filter(pa.array(take)), c, arrow, unmatched.column_names))
    return pa.concat_tables(inserted) if inserted else arrow.empty_table()


def update_expressions(ctx: TableContext, c: _Clause, source_names: list[str],
                       on: list[str]) -> dict[str, pc.Expression]:
    """The set expressions of an update clause (``update_all``: every non-key column from
    the source); a join column of ``on`` set to itself is left out."""
    if c.values is not None:
        return exprs_of.set_expressions(ctx, c.values, "merge update", references=True, pinned=on,
                                        policy=c.policy)
    names = [n for n in ctx.schema.arrow_schema().names if n not in ctx.schema.primaryKeys]
    missing = [n for n in names if n not in source_names]
    if missing:
        raise InvalidArgumentError(f"merge: when_matched_update_all needs source columns {missing}")
    return {n: pc.field(SOURCE + n) for n in names}


def _inserted(sources: pa.Table, c: _Clause, arrow: pa.Schema, source_names: list[str]) -> pa.Table:
    if c.values is None:
        missing = [n for n in arrow.names if n not in source_names]
        if missing:
            raise InvalidArgumentError(f"merge: when_not_matched_insert_all needs source columns {missing}")
        exprs = {n: pc.field(SOURCE + n) for n in arrow.names}
    else:
        unknown = [n for n in c.values if n not in arrow.names]
        if unknown:
            raise InvalidArgumentError(f"merge insert: columns {unknown} are not in the table {arrow.names}")
        exprs = {n: exprs_of.as_expression(v, arrow.field(n), f"merge insert of {n!r}", references=True,
                                           policy=c.policy)
                 for n, v in c.values.items()}
        exprs.update({n: pc.scalar(pa.scalar(None, arrow.field(n).type)) for n in arrow.names if n not in exprs})
    values = exprs_of.evaluate(sources, exprs, "merge insert")
    return pa.Table.from_arrays(  # stored as write() stores them, by the clause's policy (keys: by the writer)
        [store(f, values.column(f.name), f"merge insert of {f.name!r}", c.policy) for f in arrow],
        schema=arrow)


def _comparable(column: pa.ChunkedArray, target_type: pa.DataType) -> pa.ChunkedArray:
    """A source join column in the target column's type (refused if it does not fit)."""
    if column.type == target_type:
        return column
    return exprs_of.cast_to(column, pa.field("join column", target_type), "merge join column")


def _source_table(source: Any) -> pa.Table:
    """``source`` as one Arrow table; an empty table or reader keeps its schema."""
    if isinstance(source, pa.Table):
        table = source.combine_chunks()
    elif isinstance(source, pa.RecordBatchReader):
        table = source.read_all().combine_chunks()
    else:
        batches = list(to_batches(source))
        if not batches:
            raise InvalidArgumentError("merge: the source has no schema (no batches)")
        table = pa.Table.from_batches(batches).combine_chunks()
    plain = pa.schema([f.with_type(_plain(f.type)) for f in table.schema])
    return table if plain == table.schema else table.cast(plain)


def _plain(t: pa.DataType) -> pa.DataType:
    """The type the evaluation kernels take for a view type (Polars hands out string views)."""
    if pa.types.is_string_view(t):
        return pa.string()
    if pa.types.is_binary_view(t):
        return pa.binary()
    return t


def _prefixed(rows: pa.Table, prefix: str) -> pa.Table:
    return rows.rename_columns([prefix + n for n in rows.column_names])


def _append(left: pa.Table, right: pa.Table) -> pa.Table:
    for name, col in zip(right.column_names, right.columns):
        left = left.append_column(name, col)
    return left


def _in_target_order(parts: list[tuple[np.ndarray, pa.Table]], arrow: pa.Schema) -> pa.Table:
    """New values of updated rows ordered by their target row (as ``Change`` wants)."""
    if not parts:
        return arrow.empty_table()
    rows = np.concatenate([r for r, _ in parts])
    values = pa.concat_tables([v for _, v in parts])
    return values.take(pa.array(np.argsort(rows, kind="stable")))


__all__ = ["Bounds", "MergeBuilder", "MergeClauses", "MergeResult", "decide_matched", "insert_rows", "prune_filter"]
