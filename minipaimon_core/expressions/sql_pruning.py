"""The filter the planner prunes by for a Spark SQL condition (:mod:`.sql_compiler`): the
comparisons of columns with literals the condition is an AND / OR of, each literal read as
the condition's evaluation reads it, so every row the condition selects satisfies the
filter and the partitions and files it rules out need not be read."""

from __future__ import annotations

import datetime
from decimal import InvalidOperation
from typing import Any

import pyarrow as pa

from ..errors import InvalidArgumentError
from .sql_compiler import ExpressionCompiler, spark_type
from .sql_parser import Col, Lit, Op, parse
from .sql_types import is_numeric, text_as


def pruning_filter(text: str, schema: pa.Schema) -> list[list[tuple[str, str, Any]]] | None:
    """The core filter (DNF) of the comparisons of columns with literals that condition
    ``text`` is an AND / OR of, each literal read as :func:`compile_condition` reads it:
    every row the condition selects satisfies it, so the planner may skip what it rules out.
    Other terms are left out of their AND (a wider filter); None: nothing to prune by."""
    c = ExpressionCompiler(schema, "condition", text)
    try:
        groups = _dnf(c, parse(text))
    except InvalidArgumentError:
        return None
    return groups if groups else None


def _dnf(c: ExpressionCompiler, node: Any) -> list[list[tuple[str, str, Any]]] | None:
    if isinstance(node, Op) and node.name == "or":
        a, b = _dnf(c, node.args[0]), _dnf(c, node.args[1])
        return None if a is None or b is None or len(a) + len(b) > 32 else a + b
    if isinstance(node, Op) and node.name == "and":
        a, b = _dnf(c, node.args[0]), _dnf(c, node.args[1])
        if a is None or b is None:
            return a if b is None else b
        product = [x + y for x in a for y in b]
        return product if len(product) <= 32 else (a if len(a) <= len(b) else b)
    term = _term(c, node)
    return None if term is None else [[term]]


def _term(c: ExpressionCompiler, node: Any) -> tuple[str, str, Any] | None:
    """A comparison of a column with literals as a filter term (None: not one)."""
    if not isinstance(node, Op) or not node.args or not isinstance(node.args[0], Col):
        return None
    column = c.column(node.args[0].name)
    t = spark_type(c.schema.field(column).type)
    if node.name in ("is null", "is not null"):
        return column, node.name, None
    values = [_value(c, x, t) for x in node.args[1:]]
    if not values or any(v is _NO for v in values):
        return None
    if node.name in ("=", "!=", "<", "<=", ">", ">=") and values[0] is not None:
        return column, node.name, values[0]
    if node.name == "in":
        return column, "in", values
    return None


_NO = object()


def _value(c: ExpressionCompiler, node: Any, t: pa.DataType) -> Any:
    """The Python value of literal ``node`` as compared with a column of type ``t`` where
    the filter compares it alike (no float literal against integers or decimals: the
    expression compares those as doubles)."""
    if not isinstance(node, Lit):
        return _NO
    if node.kind == "null":
        return None
    if node.kind == "string" and (is_numeric(t) or pa.types.is_date(t) or (pa.types.is_timestamp(t) and t.tz is None)):
        try:
            read = text_as(node.value, t)
        except (ValueError, InvalidOperation):
            return _NO
        return _NO if read is None or (pa.types.is_floating(read[1]) and not pa.types.is_floating(t)) else read[0]
    if pa.types.is_integer(t) or pa.types.is_decimal(t):
        return node.value if node.kind in ("int", "bigint", "smallint", "tinyint", "decimal") else _NO
    if pa.types.is_floating(t):
        return float(node.value) if node.kind not in ("string", "boolean", "date") else _NO
    if t == pa.string():
        return node.value if node.kind == "string" else _NO
    if pa.types.is_date(t):
        return _NO if node.kind != "date" else datetime.date.fromisoformat(node.value.strip())
    if pa.types.is_boolean(t):
        return node.value if node.kind == "boolean" else _NO
    return _NO


__all__ = ["pruning_filter"]
