"""Spark's types and comparisons for the procedures' expressions (:mod:`.sql_compiler`,
:mod:`.sql_functions`): type names, the common type of two (Spark's widening), implicit
conversions to text, and comparisons with Spark's NaN rules."""

from __future__ import annotations

import datetime
from decimal import Decimal, InvalidOperation
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import InvalidArgumentError
from .sql_parser import Lit

Typed = tuple[pc.Expression, pa.DataType]
E = pc.Expression._call
NULL = pa.null()
INTS = [pa.int8(), pa.int16(), pa.int32(), pa.int64()]
COMPARISONS = {"=": "equal", "!=": "not_equal", "<": "less", "<=": "less_equal", ">": "greater",
               ">=": "greater_equal"}


class Compiler(Protocol):
    """What the functions and comparisons use of the compiler (sql_compiler._Compiler)."""

    def fail(self, why: str) -> InvalidArgumentError: ...

    def typed(self, node: Any) -> Typed: ...

    def boolean(self, node: Any) -> pc.Expression: ...


def type_name(t: pa.DataType) -> str:
    names = {pa.int8(): "TINYINT", pa.int16(): "SMALLINT", pa.int32(): "INT", pa.int64(): "BIGINT",
             pa.float32(): "FLOAT", pa.float64(): "DOUBLE", pa.string(): "STRING", pa.bool_(): "BOOLEAN",
             pa.date32(): "DATE", NULL: "NULL"}
    if pa.types.is_decimal(t):
        return f"DECIMAL({t.precision},{t.scale})"
    return names.get(t, str(t).upper())


def is_numeric(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)


def as_decimal(t: pa.DataType) -> pa.DataType:
    return {pa.int8(): pa.decimal128(3, 0), pa.int16(): pa.decimal128(5, 0), pa.int32(): pa.decimal128(10, 0),
            pa.int64(): pa.decimal128(20, 0)}.get(t, t)


def common(c: Compiler, types: list[pa.DataType], what: str) -> pa.DataType:
    """Spark's common type of ``types`` (NULL fits any); refused if there is none."""
    known = [t for t in types if t != NULL]
    if not known:
        return NULL
    out = known[0]
    for t in known[1:]:
        out = _wider(c, out, t, what)
    return out


def _wider(c: Compiler, a: pa.DataType, b: pa.DataType, what: str) -> pa.DataType:
    if a == b:
        return a
    if is_numeric(a) and is_numeric(b):
        if pa.types.is_floating(a) or pa.types.is_floating(b):
            if pa.types.is_decimal(a) or pa.types.is_decimal(b) or pa.float64() in (a, b):
                return pa.float64()
            return pa.float32()
        if pa.types.is_integer(a) and pa.types.is_integer(b):
            return INTS[max(INTS.index(a), INTS.index(b))]
        da, db = as_decimal(a), as_decimal(b)
        scale = max(da.scale, db.scale)
        return pa.decimal128(min(38, max(da.precision - da.scale, db.precision - db.scale) + scale), scale)
    raise c.fail(f"{what} of {type_name(a)} and {type_name(b)}: cast one of them")


def as_type(value: Typed, t: pa.DataType) -> pc.Expression:
    """``value`` in the wider type ``t`` (a widening: exact)."""
    expr, have = value
    if have == t or t == NULL:
        return expr
    if have == NULL:
        return pc.scalar(pa.scalar(None, t))
    return expr.cast(t)


def as_text(c: Compiler, value: Typed) -> pc.Expression:
    """``value`` as Spark turns it into a string (implicitly, in concat / upper / ...)."""
    expr, t = value
    if t in (pa.string(), NULL):
        return as_type(value, pa.string())
    if pa.types.is_floating(t):
        raise c.fail(f"{type_name(t)} as text: Spark's digits differ from Arrow's; use format_number in Spark")
    if pa.types.is_integer(t) or pa.types.is_decimal(t) or pa.types.is_date(t) or pa.types.is_boolean(t):
        return expr.cast(pa.string())
    raise c.fail(f"{type_name(t)} as text is not supported here")


# -- operators -------------------------------------------------------------------------------

def text_as(text: str, t: pa.DataType) -> tuple[Any, pa.DataType] | None:
    """A string literal read as a value of number, date or TIMESTAMP_NTZ type ``t``, as Spark
    casts it (``dt < '2025-01-01'``): the value and its literal type; None if ``t`` is none
    of those (a TIMESTAMP instant would need the session's time zone).
    Raises ValueError / InvalidOperation if the text is not one."""
    text = text.strip()
    if pa.types.is_date(t):
        return datetime.date.fromisoformat(text), pa.date32()
    if pa.types.is_timestamp(t) and t.tz is None:  # a wall-clock time: no zone involved
        return datetime.datetime.fromisoformat(text), t
    if pa.types.is_integer(t):
        return int(text), pa.int64()
    if pa.types.is_floating(t):
        return float(text), pa.float64()
    if pa.types.is_decimal(t):
        value = Decimal(text)
        return value, pa.scalar(value).type
    return None


def _typed_beside(c: Compiler, node: Any, other: Any) -> Typed:
    """``node`` typed, a string literal read as the type of ``other`` when that is a number,
    a date or a TIMESTAMP_NTZ (:func:`text_as`)."""
    if not (isinstance(node, Lit) and node.kind == "string"):
        return c.typed(node)
    t = c.typed(other)[1]
    try:
        read = text_as(node.value, t)
        if read is not None:
            return pc.scalar(pa.scalar(read[0], read[1])), read[1]
    except (ValueError, InvalidOperation, pa.ArrowException, OverflowError):
        raise c.fail(f"{node.value!r} is not a {type_name(t)}") from None
    return c.typed(node)


def compare(c: Compiler, op: str, left_node: Any, right_node: Any) -> pc.Expression:
    """A comparison with Spark's NaN rules (NaN equals NaN and is above every number)."""
    left, right = _typed_beside(c, left_node, right_node), _typed_beside(c, right_node, left_node)
    t = common(c, [left[1], right[1]], "comparison")
    if t != NULL and not (is_numeric(t) or t in (pa.string(), pa.bool_(), pa.date32()) or pa.types.is_timestamp(t)):
        raise c.fail(f"comparison of {type_name(t)} is not supported here")
    a, b = as_type(left, t), as_type(right, t)
    if op == "<=>":
        both, either = E("and", [E("is_null", [a]), E("is_null", [b])]), E("or", [E("is_null", [a]), E("is_null", [b])])
        equal = _compare_floats("=", a, b) if pa.types.is_floating(t) else E("equal", [a, b])
        return E("if_else", [both, pc.scalar(True), E("if_else", [either, pc.scalar(False), equal])])
    if pa.types.is_floating(t):
        return _compare_floats(op, a, b)
    return E(COMPARISONS[op], [a, b])


def _compare_floats(op: str, a: pc.Expression, b: pc.Expression) -> pc.Expression:
    nan_a, nan_b = E("is_nan", [a]), E("is_nan", [b])
    equal = E("or_kleene", [E("equal", [a, b]), E("and_kleene", [nan_a, nan_b])])
    less = E("or_kleene", [E("less", [a, b]), E("and_kleene", [E("invert", [nan_a]), nan_b])])
    greater = E("or_kleene", [E("greater", [a, b]), E("and_kleene", [nan_a, E("invert", [nan_b])])])
    return {"=": equal, "!=": E("invert", [equal]), "<": less, ">": greater,
            "<=": E("or_kleene", [less, equal]), ">=": E("or_kleene", [greater, equal])}[op]


__all__ = ["COMPARISONS", "Compiler", "NULL", "Typed", "as_decimal", "as_text", "as_type", "common", "compare",
           "is_numeric", "text_as", "type_name"]
