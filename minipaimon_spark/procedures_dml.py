"""Row-level changes from Spark SQL: ``minipaimon_delete(path, condition)`` and
``minipaimon_update(path, assignments, condition)`` (see minipaimon_spark.procedures).

Conditions and SET values are Spark SQL expressions (``"id % 3 = 0 AND dt >= '2025-01-01'"``,
``"name = upper(name), amount = amount * 1.1"``), evaluated as Spark evaluates them by the
core over Arrow (minipaimon_core.expressions.sql_compiler: the functions and operators it
covers; a table function cannot hand a text to Spark's own evaluator). Values are stored as
Spark's INSERT stores them. Both are checked when Spark analyzes the query: the text parses,
every column and function is known, the types fit, a constant value fits its column; the
change itself prunes partitions and files by the comparisons of columns with literals.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from minipaimon_spark.procedure_support import Args, Connection, analyzed

UPDATE = "minipaimon_update"


def row_change_procedures(conn: Connection, table_arg: Callable[[Args], Any]) -> dict[str, Any]:
    """SQL name -> UDTF class of the row-level change procedures; ``table_arg`` opens the
    table of a call's constant first argument (None if it is not a constant)."""

    def check_row_change(a: Args, condition_at: int, set_at: int | None) -> None:
        from minipaimon_core.dml import dml

        table = table_arg(a)
        if table is None:
            return
        dml.check_changeable(table.context(), deletes=set_at is None, updates=set_at is not None,
                             by_condition=True)
        if a.known(condition_at) and a.value(condition_at) is not None:
            condition_of(a.value(condition_at), table.schema())
        if set_at is not None and a.known(set_at):
            values_of(table.context(), a.value(set_at))

    class Delete:
        """``minipaimon_delete(path, condition)``: delete the rows ``condition`` selects
        (NULL: every row) in one commit; one row: rows deleted, the new snapshot (null:
        nothing deleted). Checked at analysis (table, condition)."""

        analyze = analyzed("rows_deleted bigint, snapshot_id bigint", lambda a: check_row_change(a, 1, None))

        def eval(self, path: str, condition: str | None) -> Iterator[tuple[Any, ...]]:
            table = conn.table(path)
            flt, prune = condition_of(condition, table.schema()) if condition is not None else (None, None)
            before = table.latest_snapshot()
            n = table.delete(flt, prune=prune)
            after = table.latest_snapshot()
            yield n, (after.id if after is not None and after != before and n else None)

    class Update:
        """``minipaimon_update(path, assignments, condition)``: set columns to Spark SQL
        values (``"status = 'void', amount = amount * 2"``) in the rows ``condition`` selects
        (NULL: every row), in one commit; one row: rows updated, the new snapshot."""

        analyze = analyzed("rows_updated bigint, snapshot_id bigint", lambda a: check_row_change(a, 2, 1))

        def eval(self, path: str, assignments: str, condition: str | None = None) -> Iterator[tuple[Any, ...]]:
            table = conn.table(path)
            flt, prune = condition_of(condition, table.schema()) if condition is not None else (None, None)
            before = table.latest_snapshot()
            n = table.update(flt, set=values_of(table.context(), assignments), prune=prune)
            after = table.latest_snapshot()
            yield n, (after.id if after is not None and after != before and n else None)

    return {"minipaimon_delete": Delete, "minipaimon_update": Update}


def condition_of(text: Any, schema: Any) -> tuple[Any, Any]:
    """A condition as (its Arrow expression, the filter the planner prunes by), its types
    bound over no rows now. Raises InvalidArgumentError."""
    from minipaimon_core.dml import dml_values
    from minipaimon_core.expressions.sql_compiler import compile_condition
    from minipaimon_core.expressions.sql_pruning import pruning_filter

    expression = compile_condition(text, schema, "condition")
    dml_values.mask_of(schema.empty_table(), expression, f"condition {text!r}")
    return expression, pruning_filter(text, schema)


def values_of(ctx: Any, text: Any) -> dict[str, Any]:
    """The SET list ``text`` as column -> Arrow expression, checked as an update checks it
    (the core's ``set_expressions`` and conversion): types over no rows, and every constant
    value computed now, so a value that does not fit fails matching rows or not.

    Raises:
        InvalidArgumentError: malformed text, an unknown or primary-key column, an unknown
            function, NULL for a NOT NULL column.
        SchemaMismatchError: a value that does not fit its column.
    """
    import pyarrow as pa

    from minipaimon_core.dml import dml_values
    from minipaimon_core.errors import InvalidArgumentError, SchemaMismatchError
    from minipaimon_core.expressions.sql_compiler import compile_assignments
    from minipaimon_core.write import conform

    arrow = ctx.schema.arrow_schema()
    values = compile_assignments(text, arrow, UPDATE)
    exprs = dml_values.set_expressions(ctx, {name: e for name, (e, _) in values.items()}, UPDATE)
    typed = dml_values.evaluate(arrow.empty_table(), exprs, UPDATE)
    one = pa.table({"row": [0]})
    for name, (expression, constant) in values.items():
        what = f"{UPDATE} of {name!r}"
        column = typed.column(name)
        if constant:
            try:
                column = dml_values.evaluate(one, {name: expression}, what).column(name)
            except InvalidArgumentError as e:
                raise SchemaMismatchError(f"{what}: the value does not fit column {name!r}: {e}") from None
        conform.column(arrow.field(name), column, what=what)
    return exprs


__all__ = ["condition_of", "row_change_procedures", "values_of"]
