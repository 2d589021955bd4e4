"""``minipaimon_spark.merge``: a merge of a DataFrame into a table, the join in Spark, files
written on the executors, one commit on the driver (minipaimon_core.dml.merge_units).

```
driver     source bounds on the join columns (one aggregate) -> plan: target units
executors  each unit's join columns + row numbers           (mapInArrow)
Spark      source JOIN keys (inner: matched rows carry unit and row; left anti: unmatched)
executors  per unit: the matched clauses, files written     (groupBy(unit).applyInArrow)
executors  unmatched rows: the insert clauses, files written (mapInArrow)
driver     one commit of every task's files (re-planned and retried on a conflict)
```

Goes through the DataFrame API only (no RDDs), so it also works over Spark Connect.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql.types import IntegerType, LongType, StructField, StructType

import minipaimon_core as mp
from minipaimon_core.dml import dml, dml_values
from minipaimon_core.dml.assignment import SPARK
from minipaimon_core.dml.merge_into import (
    SOURCE,
    TARGET,
    Bounds,
    MergeClauses,
    MergeResult,
    update_expressions,
)
from minipaimon_core.dml.merge_units import (
    ROW,
    UNIT,
    MergePlan,
    UnitResult,
    commit_units,
    discard_units,
    plan_merge,
    unit_keys,
)
from minipaimon_core.errors import InvalidArgumentError
from minipaimon_core.metadata.context import TableContext
from minipaimon_spark.common.types import quoted, to_arrow_schema, to_spark_type
from minipaimon_spark.common.zones import align_source
from minipaimon_spark.dml.compaction import default_parallelism
from minipaimon_spark.dml.unit_tasks import (
    RESULT,
    inserter,
    open_context,
    plain_names,
    unit_changer,
)

_KEY = "__minipaimon_key_"  # the target's join columns in the key index (the source keeps its names)


class SparkMerge(MergeClauses):
    """The builder of ``Table.merge`` (same clauses, values and conditions) for a DataFrame
    source; ``execute()`` runs it as Spark jobs and commits once. The source is read more
    than once (its bounds, the join, the inserts): cache or checkpoint a source that could
    change between reads (a nondeterministic one). Source timestamp columns named like a
    target column of the other kind (TimestampType for a TIMESTAMP column, TimestampNTZType
    for TIMESTAMP_LTZ) are cast in Spark, in the session time zone, before anything compares
    or writes them (:func:`minipaimon_spark.common.zones.align_source`)."""

    def __init__(self, spark: Any, table: mp.Table, source: Any, on: list[str] | str,
                 connection: dict[str, str]) -> None:
        super().__init__(on)
        self._policy = SPARK  # values stored by Spark's store assignment (dml/assignment.py)
        self._spark = spark
        self._table = table
        self._source = align_source(source, table.schema())
        self._connection = connection
        self._check_join_columns(table.schema().names, list(source.columns))

    def _context(self) -> TableContext:
        return self._table.refresh().context()

    def execute(self) -> MergeResult:
        """Apply the clauses in one commit; raises as ``MergeBuilder.execute``."""
        ctx = self._context()
        self._check_clauses(ctx, list(self._source.columns))
        self._check_time_kinds(ctx)
        keys = ctx.schema.primaryKeys
        if keys and not set(keys) <= set(self._on):
            # Rows of one key could then change in several tasks: merged on the driver instead.
            builder = self._table.merge(self._source.toArrow(), self._on)
            builder._clauses = list(self._clauses)
            result: MergeResult = builder.execute()
            return result
        bounds = self._bounds() if not self._by_source else {}
        return dml.with_retries(self._context, lambda ctx: self._attempt(ctx, bounds))

    def _check_time_kinds(self, ctx: TableContext) -> None:
        """Refuse a value that is a timestamp of the other kind than its column (a source
        column of another name): Spark's cast needs the session zone, which the values'
        evaluation on the executors does not apply. Raises InvalidArgumentError."""
        arrow = ctx.schema.arrow_schema()
        names = list(self._source.columns)
        pairs = pa.schema([pa.field(TARGET + f.name, f.type) for f in arrow]
                          + [pa.field(SOURCE + f.name, f.type) for f in to_arrow_schema(self._source.schema)])
        for c in self._clauses:
            if c.action == "update":
                exprs = update_expressions(ctx, c, names, self._on)
            elif c.action == "insert" and c.values is not None:
                exprs = {n: dml_values.as_expression(v, arrow.field(n), f"merge insert of {n!r}", references=True,
                                                     policy=c.policy)
                         for n, v in c.values.items() if n in arrow.names}
            else:
                continue
            try:
                types = dml_values.evaluate(pairs.empty_table(), exprs, "merge").schema
            except InvalidArgumentError:
                continue  # a bad value: the merge itself reports it
            for name in exprs:
                have, want = types.field(name).type, arrow.field(name).type
                if pa.types.is_timestamp(have) and pa.types.is_timestamp(want) and bool(have.tz) != bool(want.tz):
                    kind, cast = ("TimestampType", "timestamp_ntz") if have.tz else ("TimestampNTZType", "timestamp")
                    raise InvalidArgumentError(
                        f"merge: the value for column {name!r} is a Spark {kind} and the column is "
                        f"{to_spark_type(want).simpleString()}; cast the source column in Spark first, "
                        f"e.g. F.col('...').cast('{cast}') (Spark's cast in the session time zone)")

    def _bounds(self) -> Bounds:
        """Min and max of the source's join columns, in one aggregate: for the types whose
        values come back from Spark exactly as the table compares them (integers, decimals,
        strings, dates); other columns (timestamps, which Spark hands back in the session's
        time zone; floats, with NaN; binary, nested) prune nothing."""
        from pyspark.sql import functions as F
        from pyspark.sql.types import DateType, DecimalType, IntegralType, StringType

        exact = (IntegralType, DecimalType, StringType, DateType)
        flat = [c for c in self._on if isinstance(self._source.schema[c].dataType, exact)]
        if not flat:
            return {}
        aggs = [f(quoted(c)).alias(f"{i}_{k}") for i, c in enumerate(flat) for k, f in (("min", F.min), ("max", F.max))]
        row = self._source.agg(*aggs).collect()[0]
        return {c: None if row[f"{i}_min"] is None else (row[f"{i}_min"], row[f"{i}_max"])
                for i, c in enumerate(flat)}

    def _attempt(self, ctx: TableContext, bounds: Bounds) -> MergeResult:
        self._check_clauses(ctx, list(self._source.columns))
        plan = plan_merge(ctx, self._table.path, self._connection, self._clauses, self._on, bounds)
        spark, source = self._spark, self._source
        slices = max(1, min(len(plan.units), default_parallelism(spark)))
        units = spark.createDataFrame([(i,) for i in range(len(plan.units))], f"{UNIT} int")
        units = units.repartition(slices, UNIT)
        arrow = ctx.schema.arrow_schema()
        key_schema = StructType([StructField(_KEY + c, to_spark_type(arrow.field(c).type)) for c in self._on]
                                + [StructField(UNIT, IntegerType()), StructField(ROW, LongType())])
        keys = units.mapInArrow(_key_reader(plan), key_schema)
        joined_on = [source[quoted(c)] == keys[quoted(_KEY + c)] for c in self._on]
        parts = []
        if any(c.kind in ("matched", "not_matched_by_source") for c in self._clauses):
            matched = source.join(keys, joined_on, "inner").drop(*[_KEY + c for c in self._on])
            if self._by_source:  # every unit, matched or not, must see its clauses
                matched = matched.unionByName(units, allowMissingColumns=True)
            names = matched.columns
            parts.append(matched.toDF(*plain_names(names)).groupBy(UNIT).applyInArrow(unit_changer(plan, names), RESULT))
        if any(c.kind == "not_matched" for c in self._clauses):
            unmatched = source.join(keys, joined_on, "left_anti")
            names = unmatched.columns
            parts.append(unmatched.toDF(*plain_names(names)).mapInArrow(inserter(plan, names), RESULT))
        results: list[UnitResult] = []
        try:
            for part in parts:
                results += [UnitResult.from_bytes(r.result) for r in part.collect()]
        except BaseException:  # a Spark job failed: the files of the jobs that finished go
            discard_units(self._context(), plan, results)
            raise
        return commit_units(self._context(), plan, results)


def _key_reader(plan: MergePlan) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """Executors: the key index rows of each incoming unit."""
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        ctx = open_context(plan)  # once a task, not once a unit
        for batch in batches:
            for index in batch.column(UNIT).to_pylist():
                keys = unit_keys(plan, ctx, index)
                if keys is None:  # the schema changed: the unit's task reports it, typed
                    continue
                keys = keys.rename_columns([_KEY + n if n in plan.on else n for n in keys.column_names])
                yield from keys.to_batches()
    return run


__all__ = ["SparkMerge"]
