"""The executor side of the changes written in the core's merge units
(:mod:`minipaimon_core.dml.merge_units`), shared by ``minipaimon_spark.merge``
(:mod:`.distributed_merge`) and :class:`minipaimon_spark.MiniPaimonTable`'s delete, update and
merge (:mod:`.row_changes`): the Arrow functions Spark runs on the rows each task gets, and
the one-column result (:data:`RESULT`: a serialized ``UnitResult`` per task) the driver
collects and commits.

Each function is a closure over a picklable :class:`MergePlan`; the table is opened again
on the executor from the plan's path and connection options (:func:`open_context`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pyarrow as pa

import minipaimon_core as mp
from minipaimon_core.dml.merge_units import ROW, UNIT, MergePlan, change_unit, insert_rows_of
from minipaimon_core.metadata.context import TableContext

RESULT = "result binary"  # the Spark schema of every task's output: one UnitResult's bytes


def open_context(plan: MergePlan) -> TableContext:
    """The plan's table, opened (on an executor or the driver) with its connection options."""
    return mp.open_table(plan.path, options=plan.connection).context()


def plain_names(names: list[str]) -> list[str]:
    """Column names PySpark's ``applyInArrow`` / ``mapInArrow`` can pass on: they name each
    column unquoted (``df[name]``), which fails for a name holding '.' or '`'. The Arrow
    functions get ``names`` back (same order)."""
    return [n if n in (UNIT, ROW) else f"__minipaimon_column_{i}" for i, n in enumerate(names)]


def unit_changer(plan: MergePlan, names: list[str]) -> Callable[[pa.Table], pa.Table]:
    """Executors: one unit's change (``groupBy(UNIT).applyInArrow``), from the rows matched to
    it (columns :func:`plain_names`, renamed back to ``names``)."""
    def run(rows: pa.Table) -> pa.Table:
        rows = rows.rename_columns(names)
        index = rows.column(UNIT)[0].as_py()
        result = change_unit(plan, open_context(plan), index, rows)
        return pa.table({"result": pa.array([result.to_bytes()], pa.binary())})
    return run


def inserter(plan: MergePlan, names: list[str]) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """Executors: the inserts of one partition of rows (``mapInArrow``; columns
    :func:`plain_names`, renamed back to ``names``)."""
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        task = TaskContext.get()
        rows = [b for b in batches if b.num_rows]
        if rows:
            result = insert_rows_of(plan, open_context(plan), pa.Table.from_batches(rows).rename_columns(names),
                                    task.partitionId() if task else 0)
            yield pa.RecordBatch.from_pydict({"result": pa.array([result.to_bytes()], pa.binary())})
    return run


__all__ = ["RESULT", "inserter", "open_context", "plain_names", "unit_changer"]
