"""A Polars predicate as the core's filter (DNF), so that ``scan_polars`` prunes
partitions and files and reads primary keys by range (minipaimon_core.polars_scan).

Polars hands an IO source its predicate as an expression, whose JSON form
(``Expr.meta.serialize(format="json")``) is a tree of ``BinaryExpr`` / ``Function`` /
``Column`` / ``Literal`` nodes. Translated: a column compared with a literal (``== != < <=
> >=``, either side), ``is_in``, ``is_between``, ``is_null`` / ``is_not_null``, and ``&`` /
``|`` of those. Anything else (arithmetic, ``~``, string functions, casts, a literal NaN or
null, a node this Polars version spells otherwise) translates to "every row": the filter
only chooses what is read, and the scan applies the whole predicate to the rows with Polars
itself, so a part left out prunes less and never changes a result.

A literal is used only where the core compares it as Polars does: one of the column's own
kind (an integer for an integer column, a string for a string column, a date for a date
column, a datetime of the column's time zone, ...). A float literal against a decimal or
integer column, for one, is left out: Polars compares it as a float, the core exactly.
Polars orders NaN above every number and equal to itself, as the core's filters do.
"""

from __future__ import annotations

import datetime
from decimal import Decimal
from typing import Any

import pyarrow as pa

Term = tuple[str, str, Any]
Groups = list[list[Term]]  # an OR of ANDs; None where used: every row

MAX_GROUPS = 32  # an OR of ANDs past this prunes with the smaller side only (AND) or not at all
_COMPARE = {"Eq": "=", "NotEq": "!=", "Lt": "<", "LtEq": "<=", "Gt": ">", "GtEq": ">="}
_FLIPPED = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_BETWEEN = {"Both": (">=", "<="), "Left": (">=", "<"), "Right": (">", "<="), "None": (">", "<")}
_INTEGERS = {"Int8", "Int16", "Int32", "Int64", "Int128", "UInt8", "UInt16", "UInt32", "UInt64"}
_EPOCH = datetime.datetime(1970, 1, 1)


def to_dnf(tree: Any, schema: pa.Schema) -> Groups | None:
    """The part of the predicate ``tree`` (its JSON form, parsed) the core's filter can
    express, as DNF tuples over ``schema``'s columns; None: nothing to prune by."""
    try:
        return _node(tree, schema)
    except (KeyError, TypeError, ValueError, IndexError, AttributeError, pa.ArrowException):
        return None  # a shape this code does not know: no pruning


def _node(node: Any, schema: pa.Schema) -> Groups | None:
    if not isinstance(node, dict) or len(node) != 1:
        return None
    kind, body = next(iter(node.items()))
    if kind == "BinaryExpr":
        op = body["op"]
        if op in ("And", "LogicalAnd"):
            return _and(_node(body["left"], schema), _node(body["right"], schema))
        if op in ("Or", "LogicalOr"):
            return _or(_node(body["left"], schema), _node(body["right"], schema))
        if op in _COMPARE:
            return _comparison(body["left"], _COMPARE[op], body["right"], schema)
        return None
    if kind == "Function":
        return _function(body["function"], body["input"], schema)
    column = _column(node, schema)  # a boolean column alone (Polars' ``col == True``)
    if column is not None and pa.types.is_boolean(schema.field(column).type):
        return [[(column, "=", True)]]
    return None


def _and(a: Groups | None, b: Groups | None) -> Groups | None:
    if a is None or b is None:
        return a if b is None else b  # one side alone selects more: still a sound prune
    product = [x + y for x in a for y in b]
    if len(product) > MAX_GROUPS:
        return a if len(a) <= len(b) else b
    return product


def _or(a: Groups | None, b: Groups | None) -> Groups | None:
    if a is None or b is None or len(a) + len(b) > MAX_GROUPS:
        return None
    return a + b


def _comparison(left: Any, op: str, right: Any, schema: pa.Schema) -> Groups | None:
    column, literal = _column(left, schema), right
    if column is None:
        column, literal, op = _column(right, schema), left, _FLIPPED[op]
    if column is None or not isinstance(literal, dict) or "Literal" not in literal:
        return None
    value = _literal(literal["Literal"], schema.field(column).type)
    if value is _UNKNOWN:
        return None
    return [[(column, op, value)]]


def _function(function: Any, inputs: list[Any], schema: pa.Schema) -> Groups | None:
    if not isinstance(function, dict) or "Boolean" not in function or not inputs:
        return None
    which = function["Boolean"]
    column = _column(inputs[0], schema)
    if column is None:
        return None
    t = schema.field(column).type
    if which in ("IsNull", "IsNotNull"):
        return [[(column, "is null" if which == "IsNull" else "is not null", None)]]
    if isinstance(which, dict) and "IsBetween" in which and len(inputs) == 3:
        low_op, high_op = _BETWEEN[which["IsBetween"]["closed"]]
        low, high = (_literal(i["Literal"], t) if "Literal" in i else _UNKNOWN for i in inputs[1:])
        terms = [(column, op, v) for op, v in ((low_op, low), (high_op, high)) if v is not _UNKNOWN]
        return [terms] if terms else None
    if isinstance(which, dict) and "IsIn" in which and len(inputs) == 2 and "Literal" in inputs[1]:
        scalar = inputs[1]["Literal"].get("Scalar", {})
        if not isinstance(scalar, dict) or "List" not in scalar:
            return None
        values = pa.ipc.open_stream(bytes(scalar["List"])).read_all().column(0)
        if not _same_kind(values.type, t) or values.null_count:
            return None  # nulls: Polars' is_in and SQL's IN differ there
        return [[(column, "in", values.to_pylist())]]
    return None


def _column(node: Any, schema: pa.Schema) -> str | None:
    if isinstance(node, dict) and isinstance(node.get("Column"), str) and node["Column"] in schema.names:
        return str(node["Column"])
    return None


class _Unknown:
    pass


_UNKNOWN: Any = _Unknown()


def _literal(lit: Any, t: pa.DataType) -> Any:
    """The Python value of literal ``lit`` if the core compares it with a column of type
    ``t`` as Polars does, else ``_UNKNOWN``."""
    if not isinstance(lit, dict) or len(lit) != 1:
        return _UNKNOWN
    form, body = next(iter(lit.items()))
    if not isinstance(body, dict) or len(body) != 1:
        return _UNKNOWN
    kind, value = next(iter(body.items()))
    if form == "Dyn":  # an untyped Python literal the optimizer did not type (yet)
        kind = {"Int": "Int64", "Float": "Float64", "Str": "String"}.get(kind, "")
    if value is None:
        return _UNKNOWN  # null, or a NaN (JSON has none)
    if kind in _INTEGERS and (pa.types.is_integer(t) or pa.types.is_floating(t)):
        return int(value)
    if kind in ("Float32", "Float64") and pa.types.is_floating(t):
        return float(value)
    if kind == "String" and (pa.types.is_string(t) or pa.types.is_large_string(t)):
        return str(value)
    if kind == "Boolean" and pa.types.is_boolean(t):
        return bool(value)
    if kind == "Date" and pa.types.is_date(t):
        return datetime.date(1970, 1, 1) + datetime.timedelta(days=int(value))
    if kind == "Decimal" and pa.types.is_decimal(t):
        digits, _, scale = value
        return Decimal(int(digits)).scaleb(-int(scale))
    if kind == "Datetime" and pa.types.is_timestamp(t):
        return _datetime(value, t)
    return _UNKNOWN


def _datetime(value: Any, t: pa.TimestampType) -> Any:
    """A Datetime literal ``[count, unit, zone]`` as a datetime, where its zone is the
    column's (naive for a naive column, UTC for an instant column)."""
    count, unit, zone = value
    per_us = {"Microseconds": 1, "Milliseconds": 1000, "Nanoseconds": None}[unit]
    if per_us is None:
        if int(count) % 1000:
            return _UNKNOWN  # finer than a datetime holds
        micros = int(count) // 1000
    else:
        micros = int(count) * per_us
    naive = _EPOCH + datetime.timedelta(microseconds=micros)
    name = zone.get("inner") if isinstance(zone, dict) else zone
    if t.tz is None:
        return naive if name is None else _UNKNOWN
    if name is None or name.upper() not in ("UTC", "+00:00", "ETC/UTC"):
        return _UNKNOWN  # an instant is the same in any zone, but keep to the plain case
    return naive.replace(tzinfo=datetime.timezone.utc)


def _same_kind(values: pa.DataType, t: pa.DataType) -> bool:
    """Whether an ``is_in`` list of type ``values`` compares with column type ``t`` exactly."""
    if pa.types.is_integer(values):
        return pa.types.is_integer(t) or pa.types.is_floating(t)
    if pa.types.is_floating(values):
        return pa.types.is_floating(t)
    if pa.types.is_string(values) or pa.types.is_large_string(values) or pa.types.is_string_view(values):
        return pa.types.is_string(t) or pa.types.is_large_string(t)
    if pa.types.is_date(values):
        return pa.types.is_date(t)
    if pa.types.is_boolean(values):
        return pa.types.is_boolean(t)
    return False


__all__ = ["MAX_GROUPS", "to_dnf"]
