"""Row-level changes from Spark SQL: ``minipaimon_delete(path, condition)`` and
``minipaimon_update(path, assignments, condition)`` (see minipaimon_spark.procedures)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from minipaimon_spark.procedure_support import Args, Connection, analyzed


def row_change_procedures(conn: Connection, table_arg: Callable[[Args], Any]) -> dict[str, Any]:
    """SQL name -> UDTF class of the row-level change procedures; ``table_arg`` opens the
    table of a call's constant first argument (None if it is not a constant)."""

    def check_row_change(a: Args, condition_at: int, set_at: int | None) -> None:
        from minipaimon_core.dml import dml
        from minipaimon_core.expressions import predicate
        from minipaimon_core.expressions.condition import parse_assignments, parse_condition

        table = table_arg(a)
        if table is None:
            return
        dml.check_changeable(table.context(), deletes=set_at is None, updates=set_at is not None,
                             by_condition=True)
        if a.known(condition_at) and a.value(condition_at) is not None:
            # the literals against their columns, as the change itself checks them
            predicate.normalize(parse_condition(a.value(condition_at), table.schema()), table.schema())
        if set_at is not None and a.known(set_at):
            check_values(table.context(), parse_assignments(a.value(set_at), table.schema()))

    class Delete:
        """``minipaimon_delete(path, condition)``: delete the rows ``condition`` selects
        (NULL: every row) in one commit; one row: rows deleted, the new snapshot (null:
        nothing deleted). Checked at analysis (table, condition)."""

        analyze = analyzed("rows_deleted bigint, snapshot_id bigint", lambda a: check_row_change(a, 1, None))

        def eval(self, path: str, condition: str | None) -> Iterator[tuple[Any, ...]]:
            from minipaimon_core.expressions.condition import parse_condition

            table = conn.table(path)
            flt = parse_condition(condition, table.schema()) if condition is not None else None
            before = table.latest_snapshot()
            n = table.delete(flt)
            after = table.latest_snapshot()
            yield n, (after.id if after is not None and after != before and n else None)

    class Update:
        """``minipaimon_update(path, assignments, condition)``: set columns to literals
        (``"status = 'void', amount = 0"``) in the rows ``condition`` selects (NULL: every
        row), in one commit; one row: rows updated, the new snapshot."""

        analyze = analyzed("rows_updated bigint, snapshot_id bigint", lambda a: check_row_change(a, 2, 1))

        def eval(self, path: str, assignments: str, condition: str | None = None) -> Iterator[tuple[Any, ...]]:
            from minipaimon_core.expressions.condition import parse_assignments, parse_condition

            table = conn.table(path)
            flt = parse_condition(condition, table.schema()) if condition is not None else None
            before = table.latest_snapshot()
            n = table.update(flt, set=parse_assignments(assignments, table.schema()))
            after = table.latest_snapshot()
            yield n, (after.id if after is not None and after != before and n else None)

    return {"minipaimon_delete": Delete, "minipaimon_update": Update}


def check_values(ctx: Any, assignments: dict[str, Any]) -> None:
    """Each SET literal converted to its column as an update converts it (the core's
    ``set_expressions`` / ``cast_to``), so a value that would fail a matching row fails
    now, matching rows or not.

    Raises:
        InvalidArgumentError: an unknown or primary-key column, NULL for a NOT NULL column.
        SchemaMismatchError: a literal that does not fit its column's type.
    """
    import pyarrow as pa

    from minipaimon_core.dml import dml_values
    from minipaimon_core.write import conform

    what = "minipaimon_update"
    exprs = dml_values.set_expressions(ctx, assignments, what)
    values = dml_values.evaluate(pa.table({"row": [0]}), exprs, what)
    arrow = ctx.schema.arrow_schema()
    for name in exprs:  # stored as an update stores it: type and NOT NULL checked
        conform.column(arrow.field(name), values.column(name), what=f"{what} of {name!r}")

__all__ = ["row_change_procedures"]
