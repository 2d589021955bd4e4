"""The Spark SQL functions the procedures' expressions take (:mod:`.sql_compiler`), each
as Spark evaluates it: ``upper`` / ``ucase``, ``lower`` / ``lcase``, ``length`` /
``char_length``, ``concat``, ``substring`` / ``substr``, ``trim`` / ``ltrim`` / ``rtrim``
(spaces, as Spark), ``replace``, ``coalesce`` / ``nvl`` / ``ifnull``, ``nullif``, ``if``,
``abs``. Any other name is refused when the text is analyzed."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from .sql_parser import Lit
from .sql_types import Compiler, Typed, as_text, as_type, common, compare, is_numeric, type_name

E = pc.Expression._call


def function(c: Compiler, name: str, args: tuple[Any, ...]) -> Typed:
    """``name(args)`` typed. Raises InvalidArgumentError for an unknown function or wrong
    arguments."""

    def arity(*counts: int) -> None:
        if len(args) not in counts:
            raise c.fail(f"{name}() takes {' or '.join(map(str, counts))} arguments, got {len(args)}")

    def literal_int(node: Any, what: str) -> int:
        if not isinstance(node, Lit) or not isinstance(node.value, int) or isinstance(node.value, bool):
            raise c.fail(f"{name}(): {what} must be an integer literal here")
        return int(node.value)

    def literal_text(node: Any, what: str) -> str:
        if not isinstance(node, Lit) or node.kind != "string":
            raise c.fail(f"{name}(): {what} must be a string literal here")
        return str(node.value)

    if name in ("upper", "ucase", "lower", "lcase"):
        arity(1)
        kernel = "utf8_upper" if name in ("upper", "ucase") else "utf8_lower"
        return E(kernel, [as_text(c, c.typed(args[0]))]), pa.string()
    if name in ("length", "char_length", "character_length"):
        arity(1)
        return E("utf8_length", [as_text(c, c.typed(args[0]))]), pa.int32()
    if name == "concat":
        if not args:
            return pc.scalar(""), pa.string()
        parts = [as_text(c, c.typed(a)) for a in args]
        return E("binary_join_element_wise", [*parts, pc.scalar("")]), pa.string()
    if name in ("substring", "substr"):
        arity(2, 3)
        text = as_text(c, c.typed(args[0]))
        pos = literal_int(args[1], "the position")
        length = literal_int(args[2], "the length") if len(args) == 3 else None
        start, stop = _slice(pos, length)
        return E("utf8_slice_codeunits", [text], pc.SliceOptions(start, stop)), pa.string()
    if name in ("trim", "ltrim", "rtrim"):
        arity(1)
        kernel = {"trim": "utf8_trim", "ltrim": "utf8_ltrim", "rtrim": "utf8_rtrim"}[name]
        return E(kernel, [as_text(c, c.typed(args[0]))], pc.TrimOptions(" ")), pa.string()
    if name == "replace":
        arity(2, 3)
        text = as_text(c, c.typed(args[0]))
        search = literal_text(args[1], "the search text")
        replacement = literal_text(args[2], "the replacement") if len(args) == 3 else ""
        if not search:
            return text, pa.string()  # Spark: an empty search text changes nothing
        return E("replace_substring", [text], pc.ReplaceSubstringOptions(search, replacement)), pa.string()
    if name in ("coalesce", "nvl", "ifnull"):
        if name != "coalesce":
            arity(2)
        if not args:
            raise c.fail("coalesce() takes at least one argument")
        values = [c.typed(a) for a in args]
        t = common(c, [v[1] for v in values], name)
        return E("coalesce", [as_type(v, t) for v in values]), t
    if name == "nullif":
        arity(2)
        value = c.typed(args[0])
        same = E("coalesce", [compare(c, "=", args[0], args[1]), pc.scalar(False)])
        if value[1] == pa.null():
            return value
        return E("if_else", [same, pc.scalar(pa.scalar(None, value[1])), value[0]]), value[1]
    if name == "if":
        arity(3)
        test = E("coalesce", [c.boolean(args[0]), pc.scalar(False)])
        values = [c.typed(args[1]), c.typed(args[2])]
        t = common(c, [v[1] for v in values], "if")
        return E("if_else", [test, as_type(values[0], t), as_type(values[1], t)]), t
    if name == "abs":
        arity(1)
        expr, t = c.typed(args[0])
        if not is_numeric(t):
            raise c.fail(f"abs() of {type_name(t)}")
        return E("abs" if pa.types.is_decimal(t) or pa.types.is_floating(t) else "abs_checked", [expr]), t
    raise c.fail(f"function {name}() is not supported by the procedures' expressions (see "
                 "minipaimon_core.expressions.sql_compiler); MiniPaimonTable from PySpark takes any")


def _slice(pos: int, length: int | None) -> tuple[int, int | None]:
    """Spark's ``substring(s, pos, length)`` (1-based ``pos``; 0 is 1; negative counts from
    the end, clamped to the start) as a Python slice ``[start:stop]`` of code points."""
    if pos > 0:
        start = pos - 1
    elif pos == 0:
        start = 0
    else:
        start = pos
    if length is None:
        return start, None
    if length <= 0:
        return 0, 0  # nothing
    stop = start + length
    if start < 0 <= stop:
        return start, None  # to the end (python's negative start is clamped as Spark's)
    return start, stop


__all__ = ["function"]
