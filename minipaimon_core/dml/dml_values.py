"""Values and conditions of row-level changes: Python literals and ``pyarrow.compute``
expressions, evaluated over Arrow tables (minipaimon_core.dml.dml, merge_into).

Values are stored as ``write()`` stores them (:mod:`minipaimon_core.write.conform`, the one
conversion): a literal is typed by its column (exactly, or refused) before anything is
read, an expression's result is converted as a written column is, and a null in a NOT
NULL column is refused before any file is written.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from ..errors import InvalidArgumentError, SchemaMismatchError
from ..metadata.context import TableContext
from ..write import conform
from .assignment import EXACT, SPARK, store


def as_expression(value: Any, field: pa.Field, what: str, references: bool = False,
                  policy: str = EXACT) -> pc.Expression:
    """``value``, stored into column ``field``, as an expression: a
    ``pyarrow.compute.Expression`` as it is; with ``references`` (merge) a string must name
    a column (``"source.c"`` / ``"target.c"``); any other value is a literal, typed by the
    column (:func:`minipaimon_core.write.conform.literal`; without ``references`` a string
    too), or under the SPARK policy, when it is not exactly one of the column's values,
    taken as the value it is (:mod:`.assignment` stores it).

    Raises InvalidArgumentError (a string naming no column), SchemaMismatchError (a
    literal that is not exactly a value of the column).
    """
    if isinstance(value, pc.Expression):
        return value
    if references and isinstance(value, str):
        if not value.startswith(("source.", "target.")):
            raise InvalidArgumentError(
                f"{what}: {value!r} is neither 'source.<column>' nor 'target.<column>'; give a "
                f"string literal as pyarrow.compute.scalar({value!r})")
        return pc.field(value)
    try:
        return pc.scalar(conform.literal(field, value, what))
    except SchemaMismatchError:
        if policy != SPARK or isinstance(value, pa.Scalar):
            raise
    try:  # not exactly a value of the column: Spark's store assignment converts it
        return pc.scalar(pa.scalar(value))
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        return pc.scalar(conform.literal(field, value, what))  # its error


def evaluate(rows: pa.Table, exprs: Mapping[str, pc.Expression], what: str) -> pa.Table:
    """Each of ``exprs`` evaluated over ``rows`` (one output column per name)."""
    try:
        return ds.dataset(rows).to_table(columns=dict(exprs))
    except (pa.ArrowException, KeyError, TypeError) as e:
        raise InvalidArgumentError(f"{what}: cannot evaluate over columns {rows.column_names}: {e}") from None


def mask_of(rows: pa.Table, condition: pc.Expression | None, what: str) -> np.ndarray:
    """The rows ``condition`` holds for (SQL: null is not true); all rows if None."""
    if condition is None:
        return np.ones(rows.num_rows, dtype=bool)
    out = evaluate(rows, {"c": condition}, what).column("c")
    if not pa.types.is_boolean(out.type):
        raise InvalidArgumentError(f"{what}: the condition gives {out.type}, not a boolean")
    return np.asarray(pc.fill_null(out, False).to_numpy(zero_copy_only=False), dtype=bool)


def cast_to(column: pa.ChunkedArray | pa.Array, field_: pa.Field, what: str) -> pa.ChunkedArray | pa.Array:
    """``column`` in ``field_``'s type to be compared with it (a merge's join column), refusing
    a value that does not convert; stored values go through :func:`conform.column`."""
    if column.type == field_.type:
        return column
    try:
        return column.cast(field_.type, safe=True)
    except (pa.ArrowException, TypeError) as e:
        raise SchemaMismatchError(f"{what}: values of type {column.type} do not fit column "
                                  f"{field_.name!r} of type {field_.type}: {e}") from None


def set_expressions(ctx: TableContext, set: Mapping[str, Any], what: str,
                    references: bool = False, pinned: Sequence[str] = (),
                    policy: str = EXACT) -> dict[str, pc.Expression]:
    """``set`` checked against the table (known columns, no primary-key column). A merge's
    join columns are ``pinned``: setting one of them to itself (``a = "source.a"`` or
    ``"target.a"``, which the join makes equal, as Paimon's MERGE takes ``SET a = source.a``
    under ``ON target.a = source.a``) changes nothing and is left out."""
    arrow = ctx.schema.arrow_schema()
    out = {}
    for column, value in set.items():
        if column not in arrow.names:
            raise InvalidArgumentError(f"{what}: column {column!r} is not in the table {arrow.names}")
        if column in ctx.schema.primaryKeys:
            if column in pinned and _names_itself(value, column):
                continue
            raise InvalidArgumentError(
                f"{what}: {column!r} is a primary-key column and cannot be set (but to itself, "
                "'source.<c>' of a join column); delete the row and insert the new one")
        out[column] = as_expression(value, arrow.field(column), f"{what} of {column!r}", references, policy)
    return out


def _names_itself(value: Any, column: str) -> bool:
    """Whether ``value`` is the join column ``column`` of the source or the target."""
    names = (f"source.{column}", f"target.{column}")
    if isinstance(value, str):
        return value in names
    return isinstance(value, pc.Expression) and any(value.equals(pc.field(n)) for n in names)


def updated_rows(rows: pa.Table, exprs: Mapping[str, pc.Expression], arrow: pa.Schema,
                 what: str, prefix: str = "", policy: str = EXACT) -> pa.Table:
    """``rows`` (columns named ``prefix`` + column) with ``exprs`` applied, in ``arrow``'s
    schema: each set column stored by ``policy`` (:mod:`.assignment`: as write() stores a
    column, or by Spark's store assignment), NOT NULL checked."""
    values = evaluate(rows, exprs, what) if exprs else None
    columns = []
    for f in arrow:
        if values is not None and f.name in exprs:
            columns.append(store(f, values.column(f.name), f"{what} of {f.name!r}", policy))
        else:
            columns.append(rows.column(prefix + f.name).cast(f.type))  # the row's own values
    return pa.Table.from_arrays(columns, schema=arrow)


__all__ = ["as_expression", "cast_to", "evaluate", "mask_of", "set_expressions", "updated_rows"]
