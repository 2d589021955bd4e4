"""Spark SQL expressions (:mod:`.sql_parser`) typed against a table and turned into Arrow
expressions with Spark's semantics (ANSI mode, Spark 4's default), for the SQL procedures'
conditions and SET values: ``compile_condition`` / ``compile_assignments``.

What is covered, each as Spark evaluates it (tests/spark compare every construct with Spark
itself on the same rows): literals and columns (case-insensitive, as Spark resolves them);
``+ - *`` (integer overflow fails, decimals typed as Spark types them), ``/`` (a DOUBLE, a
zero divisor fails), ``%`` and ``DIV`` on integers; comparisons (NaN is equal to itself
and above every number), ``<=>``, ``IS [NOT] NULL``, ``IN``, ``BETWEEN``, ``LIKE`` with a
literal pattern, ``AND`` / ``OR`` / ``NOT`` (three-valued); ``||`` and ``concat``, ``upper``,
``lower``, ``length``, ``substring`` / ``substr`` (literal positions), ``trim`` / ``ltrim`` /
``rtrim``, ``replace``, ``coalesce`` / ``nvl`` / ``ifnull``, ``nullif``, ``if``, ``abs``,
``CASE``, and ``CAST`` between numbers, strings, dates and booleans. A string literal
compared with a number, date or TIMESTAMP_NTZ column is read as one (``dt < '2025-01-01'``).

Refused when the text is analyzed (InvalidArgumentError naming the function, column or
operator), never evaluated otherwise than Spark would: other functions, decimal division,
floats turned into text (Spark's digits differ), a text compared with a TIMESTAMP (instant)
column (it needs the session's time zone; MiniPaimonTable takes it), nested types. Values are stored as Spark's INSERT stores them (ANSI store assignment: a
number into any number column, a DECIMAL or DOUBLE into an integer column truncated toward
zero, an overflow fails; atomic values into text), after which the core converts them as
every write does.
"""

from __future__ import annotations

import datetime
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import InvalidArgumentError, SchemaMismatchError
from .sql_functions import function
from .sql_parser import Case, Cast, Col, Lit, Op, parse, parse_assignments
from .sql_types import (
    NULL,
    Typed,
    as_decimal,
    as_text,
    as_type,
    common,
    compare,
    is_numeric,
    type_name,
)

E = pc.Expression._call
_NULL = NULL
_LIT_TYPES = {"int": pa.int32(), "bigint": pa.int64(), "smallint": pa.int16(), "tinyint": pa.int8(),
              "double": pa.float64(), "float": pa.float32(), "string": pa.string(), "boolean": pa.bool_(),
              "null": _NULL, "date": pa.date32()}
_TYPE_NAMES = {"tinyint": pa.int8(), "byte": pa.int8(), "smallint": pa.int16(), "short": pa.int16(),
               "int": pa.int32(), "integer": pa.int32(), "bigint": pa.int64(), "long": pa.int64(),
               "float": pa.float32(), "real": pa.float32(), "double": pa.float64(), "string": pa.string(),
               "boolean": pa.bool_(), "date": pa.date32()}
_COMPARISONS = ("=", "!=", "<", "<=", ">", ">=")


def spark_type(t: pa.DataType) -> pa.DataType:
    """The type Spark sees for a column of Arrow type ``t`` (unsigned integers widened)."""
    widened = {pa.uint8(): pa.int16(), pa.uint16(): pa.int32(), pa.uint32(): pa.int64(), pa.float16(): pa.float32(),
               pa.large_string(): pa.string(), pa.string_view(): pa.string(), pa.date64(): pa.date32()}
    return widened.get(t, t)


class ExpressionCompiler:
    def __init__(self, schema: pa.Schema, what: str, text: str) -> None:
        self.schema, self.what, self.text = schema, what, text

    def fail(self, why: str) -> InvalidArgumentError:
        return InvalidArgumentError(f"{self.what} {self.text!r}: {why}")

    def column(self, name: str) -> str:
        if name in self.schema.names:
            return name
        folded = [n for n in self.schema.names if n.lower() == name.lower()]
        if len(folded) == 1:
            return folded[0]
        raise self.fail(f"column {name!r} is not in the table {self.schema.names}")

    # -- one node ---------------------------------------------------------------------------

    def typed(self, node: Any) -> Typed:
        if isinstance(node, Lit):
            return self.literal(node)
        if isinstance(node, Col):
            name = self.column(node.name)
            t = self.schema.field(name).type
            want = spark_type(t)
            if pa.types.is_nested(want) or pa.types.is_binary(want) or pa.types.is_large_binary(want):
                raise self.fail(f"column {name!r} is {t}: the procedures' expressions take atomic columns")
            ref = pc.field(name)
            return (ref if want == t else ref.cast(want)), want
        if isinstance(node, Case):
            return self.case(node)
        if isinstance(node, Cast):
            target = self.type_named(node.type)
            return cast(self, self.typed(node.arg), target), target
        assert isinstance(node, Op)
        if node.name.startswith("fn:"):
            return function(self, node.name[3:], node.args)
        return self.operator(node)

    def literal(self, lit: Lit) -> Typed:
        if lit.kind == "decimal":
            digits = lit.value.as_tuple()
            scale = max(0, -int(digits.exponent))
            precision = max(len(digits.digits), scale, 1)
            if precision > 38:
                raise self.fail(f"{lit.value} has more than 38 digits")
            t: pa.DataType = pa.decimal128(precision, scale)
            return pc.scalar(pa.scalar(lit.value, t)), t
        t = _LIT_TYPES[lit.kind]
        value = lit.value
        if lit.kind == "date":
            try:
                value = datetime.date.fromisoformat(value.strip())
            except ValueError:
                raise self.fail(f"{lit.value!r} is not a date") from None
        try:
            return pc.scalar(pa.scalar(value, t)), t
        except (pa.ArrowException, OverflowError):
            raise self.fail(f"{lit.value!r} is out of the range of {lit.kind.upper()}") from None

    def type_named(self, name: str) -> pa.DataType:
        if name in _TYPE_NAMES:
            return _TYPE_NAMES[name]
        for prefix in ("decimal", "dec", "numeric"):
            if name == prefix:
                return pa.decimal128(10, 0)
            if name.startswith(prefix + "("):
                sizes = [int(x) for x in name[len(prefix) + 1:-1].split(",")]
                if 1 <= sizes[0] <= 38 and 0 <= (sizes[1] if len(sizes) > 1 else 0) <= sizes[0]:
                    return pa.decimal128(sizes[0], sizes[1] if len(sizes) > 1 else 0)
        raise self.fail(f"CAST to {name.upper()} is not supported here")

    def boolean(self, node: Any) -> pc.Expression:
        expr, t = self.typed(node)
        if t == _NULL:
            return pc.scalar(pa.scalar(None, pa.bool_()))
        if not pa.types.is_boolean(t):
            raise self.fail(f"expected a boolean, got {type_name(t)}")
        return expr

    def case(self, node: Case) -> Typed:
        conds = [E("coalesce", [self.boolean(c), pc.scalar(False)]) for c, _ in node.whens]
        values = [self.typed(v) for _, v in node.whens]
        values.append(self.typed(node.otherwise) if node.otherwise is not None else (pc.scalar(None), _NULL))
        t = common(self, [v[1] for v in values], "CASE")
        struct = E("make_struct", conds, pc.MakeStructOptions([f"c{i}" for i in range(len(conds))]))
        return E("case_when", [struct, *[as_type(v, t) for v in values]]), t

    def operator(self, node: Op) -> Typed:
        name, args = node.name, node.args
        if name in ("and", "or"):
            return E(f"{name}_kleene", [self.boolean(args[0]), self.boolean(args[1])]), pa.bool_()
        if name == "not":
            return E("invert", [self.boolean(args[0])]), pa.bool_()
        if name in ("is null", "is not null"):
            expr, _ = self.typed(args[0])
            out = E("is_null", [expr])
            return (out if name == "is null" else E("invert", [out])), pa.bool_()
        if name in _COMPARISONS or name == "<=>":
            return compare(self, name, args[0], args[1]), pa.bool_()
        if name == "in":
            hits = [compare(self, "=", args[0], item) for item in args[1:]]
            out = hits[0]
            for hit in hits[1:]:
                out = E("or_kleene", [out, hit])
            return out, pa.bool_()
        if name == "between":
            low = compare(self, ">=", args[0], args[1])
            return E("and_kleene", [low, compare(self, "<=", args[0], args[2])]), pa.bool_()
        if name == "like":
            text = as_text(self, self.typed(args[0]))
            if not isinstance(args[1], Lit) or args[1].kind != "string":
                raise self.fail("LIKE takes a string literal pattern here")
            return E("match_like", [text], pc.MatchSubstringOptions(args[1].value)), pa.bool_()
        if name == "||":
            return E("binary_join_element_wise", [as_text(self, self.typed(args[0])),
                                                  as_text(self, self.typed(args[1])), pc.scalar("")]), pa.string()
        if name == "negative":
            expr, t = self.typed(args[0])
            if not is_numeric(t):
                raise self.fail(f"cannot negate {type_name(t)}")
            return E("negate_checked" if not pa.types.is_decimal(t) else "negate", [expr]), t
        left, right = self.typed(args[0]), self.typed(args[1])
        return arithmetic(self, name, _beside_decimal(args[0], left, right[1]),
                          _beside_decimal(args[1], right, left[1]))


def _beside_decimal(node: Any, value: Typed, other: pa.DataType) -> Typed:
    """An integer literal next to a decimal, typed as Spark types it there: a DECIMAL of its
    digits (``d / 7``: 7 is DECIMAL(1,0), so the quotient has scale 6, not 13)."""
    if not (isinstance(node, Lit) and node.kind in ("int", "bigint", "smallint", "tinyint")
            and pa.types.is_decimal(other)):
        return value
    t = pa.decimal128(max(1, len(str(abs(node.value)))), 0)
    return pc.scalar(pa.scalar(Decimal(node.value), t)), t


def arithmetic(c: ExpressionCompiler, op: str, left: Typed, right: Typed) -> Typed:
    ta, tb = left[1], right[1]
    for t in (ta, tb):
        if t != _NULL and not is_numeric(t):
            raise c.fail(f"{op} of {type_name(t)}: expected numbers")
    if op == "/":
        if (pa.types.is_decimal(ta) or pa.types.is_decimal(tb)) and not (
                pa.types.is_floating(ta) or pa.types.is_floating(tb)):
            return _decimal_division(c, left, right)
        return E("divide_checked", [as_type(left, pa.float64()), as_type(right, pa.float64())]), pa.float64()
    if op in ("%", "div"):
        if not all(t == _NULL or pa.types.is_integer(t) for t in (ta, tb)):
            raise c.fail(f"{op.upper()} takes integers here")
        t = pa.int64() if op == "div" else common(c, [ta, tb], op)
        x, y = as_type(left, t), as_type(right, t)
        quotient = E("divide_checked", [x, y])
        return (quotient if op == "div" else E("subtract_checked", [x, E("multiply_checked", [y, quotient])])), t
    t = common(c, [ta, tb], op)
    kernel = {"+": "add", "-": "subtract", "*": "multiply"}[op]
    if pa.types.is_decimal(t):
        da, db = as_decimal(ta), as_decimal(tb)
        scale = da.scale + db.scale if op == "*" else max(da.scale, db.scale)
        digits = (da.precision + db.precision + 1) if op == "*" else \
            max(da.precision - da.scale, db.precision - db.scale) + scale + 1
        if digits > 38:
            raise c.fail(f"{op} of {type_name(ta)} and {type_name(tb)} needs more than 38 digits")
        out = pa.decimal128(digits, scale)
        return E(kernel, [as_type(left, da), as_type(right, db)]).cast(out), out
    checked = kernel + ("" if pa.types.is_floating(t) else "_checked")
    return E(checked, [as_type(left, t), as_type(right, t)]), t


def _decimal_division(c: ExpressionCompiler, left: Typed, right: Typed) -> Typed:
    """Spark's decimal ``/``: scale max(6, s1 + p2 + 1) (fewer digits past 38), the quotient
    rounded half up. Arrow's quotient of a dividend scaled to one more digit than that is
    truncated toward zero, then rounded half away from zero to the scale."""
    da, db = as_decimal(left[1]), as_decimal(right[1])
    scale = max(6, da.scale + db.precision + 1)
    digits = da.precision - da.scale + db.scale + scale
    if digits > 38:
        scale = max(38 - (digits - scale), min(scale, 6))
        digits = 38
    out = pa.decimal128(digits, scale)
    wide = pa.decimal128(da.precision - da.scale + scale + 1 + db.scale, scale + 1 + db.scale)
    if wide.precision > 38:
        raise c.fail(f"/ of {type_name(left[1])} and {type_name(right[1])} needs more than 38 digits")
    quotient = E("divide", [as_type(left, da).cast(wide), as_type(right, db)])
    return E("round", [quotient], pc.RoundOptions(scale, "half_towards_infinity")).cast(out), out


def cast(c: ExpressionCompiler, value: Typed, target: pa.DataType, store: bool = False) -> pc.Expression:
    """``CAST(value AS target)`` in ANSI mode (``store``: Spark's store assignment, which
    allows fewer conversions): a fraction truncated toward zero into an integer, a decimal
    rounded half up to fewer digits, an overflow or an unreadable text fails."""
    expr, t = value
    if t == target:
        return expr
    if t == _NULL:
        return pc.scalar(pa.scalar(None, target))
    if target == pa.string():
        return as_text(c, value)
    if store and not (is_numeric(t) and is_numeric(target)) and not (pa.types.is_date(t) and pa.types.is_date(target)):
        raise SchemaMismatchError(f"{c.what} {c.text!r}: a {type_name(t)} value is not stored into a "
                                  f"{type_name(target)} column (Spark's store assignment); cast it explicitly")
    if t == pa.string():
        trimmed = E("utf8_trim_whitespace", [expr])
        if pa.types.is_integer(target) or pa.types.is_floating(target) or pa.types.is_date(target):
            return trimmed.cast(target)
        raise c.fail(f"CAST of STRING to {type_name(target)} is not supported here")
    if pa.types.is_boolean(target):
        if pa.types.is_integer(t):
            return E("not_equal", [expr, pc.scalar(0)])
        raise c.fail(f"CAST of {type_name(t)} to BOOLEAN is not supported here")
    if pa.types.is_boolean(t) and pa.types.is_integer(target):
        return expr.cast(target)
    if not (is_numeric(t) and is_numeric(target)):
        raise c.fail(f"CAST of {type_name(t)} to {type_name(target)} is not supported here")
    if pa.types.is_integer(target) and not pa.types.is_integer(t):
        return E("trunc", [expr]).cast(target)  # the cast of a whole number: an overflow fails
    if pa.types.is_decimal(target) and not pa.types.is_integer(t):
        rounded = E("round", [expr], pc.RoundOptions(target.scale, "half_towards_infinity"))
        if pa.types.is_floating(t):  # Spark: NaN and infinities are no decimal: null
            finite = E("is_finite", [expr])
            return E("if_else", [finite, rounded, pc.scalar(pa.scalar(None, t))]).cast(target)
        return rounded.cast(target)
    return expr.cast(target)


# -- what the procedures take ----------------------------------------------------------------

def compile_condition(text: str, schema: pa.Schema, what: str = "condition") -> pc.Expression:
    """The Arrow expression of condition ``text`` over a table of ``schema`` (a null result
    selects no row). Raises InvalidArgumentError."""
    c = ExpressionCompiler(schema, what, text)
    return c.boolean(parse(text, what))


def compile_assignments(text: str, schema: pa.Schema, what: str = "SET list") -> dict[str, tuple[pc.Expression, bool]]:
    """Column -> (the Arrow expression of its new value, stored into the column's type as
    Spark's INSERT stores it; whether it is a constant: it references no column).

    Raises InvalidArgumentError (malformed, unknown column or function), SchemaMismatchError
    (a value the store assignment refuses for its column)."""
    c = ExpressionCompiler(schema, what, text)
    out = {}
    for name, node in parse_assignments(text, what):
        column = c.column(name)
        target = spark_type(schema.field(column).type)
        out[column] = (cast(c, c.typed(node), target, store=True), not _references(node))
    return out


def _references(node: Any) -> bool:
    """Whether a syntax tree references a column."""
    if isinstance(node, Col):
        return True
    if isinstance(node, Op):
        return any(_references(a) for a in node.args)
    if isinstance(node, Case):
        return any(_references(x) for pair in node.whens for x in pair) or \
            (node.otherwise is not None and _references(node.otherwise))
    if isinstance(node, Cast):
        return _references(node.arg)
    return False


__all__ = ["ExpressionCompiler", "compile_assignments", "compile_condition", "spark_type"]
