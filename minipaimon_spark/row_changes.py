"""Row-level changes whose conditions and values Spark evaluates: the delete, update and
merge of :class:`minipaimon_spark.MiniPaimonTable` (Spark SQL strings or Columns), written
by the executors through the core's merge units, one commit by the driver.

```
driver     units of the latest snapshot (core merge_units.plan_units), pruned by what the
           condition tells the planner (spark_sql)
executors  each unit's rows with their unit and row numbers          (mapInArrow) = T
Spark      over T (joined with a merge's source): each target row's clause (the first whose
           condition holds) and its new values, stored as Spark's INSERT stores them
           (store_assignment); a merge's source rows that match no target row, as rows to insert
executors  per unit: the clauses applied by the core               (groupBy(unit).applyInArrow)
executors  the inserts written                                      (mapInArrow)
driver     one commit (core commit_units); on a conflict with a concurrent commit
           (FILES_GONE, ROWS_CHANGED) planned and run again, as the core's DML
```

Why units and not the native read: a unit's row numbers are what lets an executor change
exactly the rows Spark chose, in an append file (copy-on-write or a deletion vector) or a
primary-key bucket (``-D`` / ``-U`` / ``+U`` through the LSM), with the core's conflict
rules, ``sequence.field`` and merge-engine semantics (the same functions as ``Table.delete``
/ ``update`` / ``merge``). The executor gets, per target row, the index of the clause Spark
chose and that clause's values; the core applies clause ``k`` as "delete" or "update these
columns" where ``source.__minipaimon_clause = k``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.types import IntegerType, LongType, StructField, StructType

import minipaimon_core as mp
from minipaimon_core.dml import dml
from minipaimon_core.dml.dml_rewrite import rewrites_deletes
from minipaimon_core.dml.merge_into import SOURCE, MergeClauses, MergeResult
from minipaimon_core.dml.merge_keys import check_inserted_keys
from minipaimon_core.dml.merge_units import (
    ROW,
    UNIT,
    MergePlan,
    UnitResult,
    commit_units,
    discard_units,
    plan_units,
    unit_keys,
)
from minipaimon_core.errors import UnsupportedFeatureError
from minipaimon_core.expressions import predicate
from minipaimon_core.metadata.context import TableContext
from minipaimon_spark import store_assignment
from minipaimon_spark.compaction import default_parallelism
from minipaimon_spark.distributed_merge import RESULT, _inserter, _plain, _unit_changer
from minipaimon_spark.types import BatchConformer, quoted, to_arrow_schema, to_spark_schema

CLAUSE = "__minipaimon_clause"  # the index of the clause a target row takes
KEY = "__minipaimon_key{}"  # a copy of the target's primary-key column j (inserts checked against it)


def value_name(clause: int, i: int) -> str:
    """The column of the ``i``-th value of clause ``clause`` (a plain name: see distributed_merge._plain)."""
    return f"__minipaimon_v{clause}_{i}"


@dataclass(frozen=True)
class Action:
    """What clause ``k`` of a change does to the target rows that take it: delete them, or
    update ``columns`` (to the values in columns ``value_name(k, i)``)."""

    delete: bool
    columns: tuple[str, ...] = ()


@dataclass
class SparkChange:
    """One change: its clauses, and how Spark computes, from the target rows ``T`` (the
    table's columns, ``UNIT``, ``ROW`` and the key copies), the rows that take a clause
    (``rows(T)``: UNIT, ROW, CLAUSE, the key copies and the clauses' values) and the rows to
    insert (``inserts(T)``: the table's columns, stored values).

    ``dnf``: the units it may touch (None: all); ``guard``: check the inserted primary keys
    against the table (a merge not pinned to the whole key, see merge_keys); ``on``: the
    condition, for messages; ``local``: ``rows(T)`` only filters and projects T, so each
    unit's rows stay in the partition that read them (a delete, an update)."""

    actions: list[Action]
    rows: Callable[[Any], Any] | None
    inserts: Callable[[Any], Any] | None
    dnf: Any = None
    guard: bool = False
    on: str = "the condition"
    local: bool = False  # rows(T) keeps T's partitions (no join): no shuffle to group units


def execute(spark: Any, table: mp.Table, connection: dict[str, str], change: SparkChange) -> MergeResult:
    """Run ``change`` as Spark jobs and commit once; again from the latest snapshot after a
    conflict with a concurrent commit, up to ``commit.max-retries`` times.

    Raises what the core's DML raises (UnsupportedFeatureError for a change the merge engine
    cannot express, CommitConflictError, InvalidArgumentError for several source rows
    matching one target row or an insert of a key the table holds), and SchemaMismatchError
    for a value that does not fit its column.
    """
    ctx = table.refresh().context()
    deletes = any(a.delete for a in change.actions)
    if deletes and rewrites_deletes(ctx):
        raise UnsupportedFeatureError(
            f"{ctx.path}: a '{ctx.options['merge-engine']}' table cannot take a -D row, and MiniPaimonTable "
            "writes its deletes as -D rows on the executors; delete by condition with Table.delete or the "
            "minipaimon_delete procedure, which rewrite its compacted files as Paimon's DELETE does")
    dml.check_changeable(ctx, deletes=deletes, updates=any(not a.delete for a in change.actions))
    clauses = _core_clauses(change)
    return dml.with_retries(lambda: table.refresh().context(),
                            lambda ctx: _attempt(spark, table.path, connection, ctx, change, clauses))


def _core_clauses(change: SparkChange) -> list[Any]:
    """The core's clauses of ``change``: clause k where the row's CLAUSE is k."""
    builder = MergeClauses([change.on])
    for k, action in enumerate(change.actions):
        condition = pc.field(SOURCE + CLAUSE) == k
        if action.delete:
            builder.when_matched_delete(condition=condition)
        else:
            builder.when_matched_update(
                set={c: SOURCE + value_name(k, i) for i, c in enumerate(action.columns)}, condition=condition)
    if change.inserts is not None:
        builder.when_not_matched_insert_all()
    return list(builder._clauses)


def target_schema(ctx: TableContext) -> StructType:
    """The Spark schema of T: the table's columns, UNIT, ROW and a copy of each key column."""
    table = to_spark_schema(ctx.schema.arrow_schema())
    keys = [StructField(KEY.format(j), table[k].dataType, False) for j, k in enumerate(ctx.schema.primaryKeys)]
    return StructType([*table.fields, StructField(UNIT, IntegerType(), False),
                       StructField(ROW, LongType(), False), *keys])


def _attempt(spark: Any, path: str, connection: dict[str, str], ctx: TableContext, change: SparkChange,
             clauses: list[Any]) -> MergeResult:
    dnf = predicate.normalize(change.dnf, ctx.schema.arrow_schema())
    plan = plan_units(ctx, path, connection, clauses, [change.on], dnf)
    from pyspark.sql import functions as F

    slices = max(1, min(len(plan.units), default_parallelism(spark)))
    units = spark.range(0, len(plan.units), 1, slices).select(F.col("id").cast("int").alias(UNIT))  # no shuffle
    schema = target_schema(ctx)
    target = units.mapInArrow(_row_reader(plan, schema), schema)
    results: list[UnitResult] = []
    parts = []
    if change.rows is not None:
        rows = change.rows(target)
        names = rows.columns
        plain = rows.toDF(*_plain(names))
        if change.local:  # a unit's rows are where its reader put them: changed in the same stage
            parts.append(plain.mapInArrow(_local_changer(plan, names), RESULT))
        else:
            parts.append(plain.groupBy(UNIT).applyInArrow(_unit_changer(plan, names), RESULT))
    if change.inserts is not None:
        inserts = change.inserts(target)
        if change.guard and ctx.schema.primaryKeys:
            results.append(UnitResult(removed_keys=_guarded(ctx, plan, change, inserts, target)))
        names = inserts.columns
        parts.append(inserts.toDF(*_plain(names)).mapInArrow(_inserter(plan, names), RESULT))
    written: list[UnitResult] = []
    try:
        for part in parts:
            written += [UnitResult.from_bytes(r.result) for r in part.collect()]
    except Exception as e:
        discard_units(table_context(plan), plan, written)  # files of the jobs that finished
        mismatch = store_assignment.task_error(e)
        if mismatch is None:
            raise
        raise mismatch from None
    return commit_units(table_context(plan), plan, results + written)


def _guarded(ctx: TableContext, plan: MergePlan, change: SparkChange, inserts: Any, target: Any) -> pa.Table | None:
    """A merge's check of its inserted primary keys (the core's merge_keys.check_inserted_keys:
    no key twice, none the table holds at the plan's snapshot unless the merge deletes it);
    the keys the commit must then find unwritten since. Two small Spark jobs: the inserted
    keys and the deleted ones."""
    keys = list(ctx.schema.primaryKeys)
    arrow = ctx.schema.arrow_schema()
    key_schema = pa.schema([arrow.field(k) for k in keys])
    inserted = inserts.select(*[quoted(k) for k in keys]).toArrow().cast(key_schema)
    deleted_at = [k for k, a in enumerate(change.actions) if a.delete]
    copies = [KEY.format(j) for j in range(len(keys))]
    if deleted_at and change.rows is not None:
        rows = change.rows(target)
        deleted = rows.where(rows[CLAUSE].isin(deleted_at)).select(*copies).toArrow() \
            .rename_columns(keys).cast(key_schema)
    else:
        deleted = inserted.slice(0, 0)
    base = ctx.snapshots.try_get(plan.snapshot_id) if plan.snapshot_id is not None else None
    return check_inserted_keys(ctx, base, [], inserted, deleted)


def _local_changer(plan: MergePlan, names: list[str]) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """Executors: the change of each unit whose rows reach this partition (all of them: the
    partition that read the unit), as ``_unit_changer`` does per group."""
    change = _unit_changer(plan, names)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        got = [b for b in batches if b.num_rows]
        if not got:
            return
        rows = pa.Table.from_batches(got)
        units = rows.column(UNIT)
        for index in pc.unique(units).to_pylist():
            yield from change(rows.filter(pc.equal(units, index))).to_batches()
    return run


def table_context(plan: MergePlan) -> TableContext:
    return mp.open_table(plan.path, options=plan.connection).context()


def _row_reader(plan: MergePlan, schema: StructType) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """Executors: the rows of each incoming unit (every column, its unit and row numbers,
    copies of the key columns), as Spark's Arrow schema of T."""
    target = to_arrow_schema(schema)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        conform = BatchConformer(target)
        ctx = table_context(plan)
        names = ctx.schema.arrow_schema().names
        whole = dataclasses.replace(plan, on=names)
        keys = ctx.schema.primaryKeys
        for batch in batches:
            for index in batch.column(UNIT).to_pylist():
                rows = unit_keys(whole, ctx, index)
                if rows is None:  # the schema changed: the commit reports the conflict, typed
                    continue
                for j, k in enumerate(keys):
                    rows = rows.append_column(KEY.format(j), rows.column(k))
                for part in rows.to_batches():
                    yield conform(part)
    return run


__all__ = ["CLAUSE", "KEY", "Action", "SparkChange", "execute", "target_schema", "value_name"]
