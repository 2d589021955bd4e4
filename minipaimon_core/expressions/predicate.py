"""Filters in disjunctive normal form, as pyarrow.parquet and deltalake take them.

``[("dt", "=", "d1"), ("v", ">", 3)]`` is an AND of terms; ``[[...], [...]]`` is an OR of
such ANDs. Operators: ``=`` (or ``==``), ``!=`` (or ``<>``), ``< <= > >= in "not in"`` and
``"is null"`` / ``"is not null"`` (value ignored). Comparison semantics are SQL's: a null never matches a comparison,
``IN (..., NULL)`` ignores the NULL and ``NOT IN (..., NULL)`` matches no row. Literals are
compared exactly, in the finer of the literal's and the column's unit (see :mod:`.literals`):
``date_col < datetime(2024, 1, 1, 12)`` keeps 2024-01-01; ``int_col > 2**70`` is false.

A filter is used two ways: :func:`might_match` decides from stats whether a partition or
file can hold a matching row (pruning), and :func:`to_expression` filters rows exactly.

NaN, as Spark, Delta and DuckDB order it: above every number (+inf included) and equal to
itself, so ``f > 5.0`` keeps NaN rows and ``f = NaN`` finds them (Arrow's kernels, which
say false to every comparison with NaN, get the NaN part spelled out). A comparison with a
NaN literal on a float column becomes one of the internal ops ``"is nan"`` / ``"not nan"``
(non-null, not NaN). Stats: a float column's known min and max hold no NaN (measured:
minipaimon and Paimon's Java writer leave min/max unknown for a file with NaN, pypaimon
writes no stats), so they prune as before; a NaN as min or max is not trusted (unknown).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import InvalidArgumentError
from .literals import FALSE, Literal, to_scalar

IS_NAN, NOT_NAN = "is nan", "not nan"  # ops of NaN-literal terms on float columns (internal)

# every spelling a filter term takes -> the operator it means (SQL's and Python's spellings)
_OPS = {"=": "=", "==": "=", "!=": "!=", "<>": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">=",
        "in": "in", "not in": "not in", "is null": "is null", "is not null": "is not null"}
#: the operators as messages list them
OPERATORS = '=, == (the same), !=, <> (the same), <, <=, >, >=, in, "not in", "is null", "is not null"'


class Term(NamedTuple):
    column: str
    op: str
    value: Any  # pa.Scalar of the column type (pa.Array for in / not in; None for null tests)
    stat: Any  # the same value(s) in the stats domain


DNF = list[list[Term]]
# (min, max, null_count, row_count) of a column in the stats domain, or None if unknown
StatsLookup = Callable[[str], "tuple[Any, Any, int, int] | None"]


def normalize(filter: Any, schema: pa.Schema) -> DNF | None:
    """Validate a user filter against ``schema`` and return it as DNF of :class:`Term`.

    ``None`` selects every row; an empty list (or an empty AND group in an OR) is refused,
    never read as "every row": a filter built from an empty selection would otherwise
    delete or update the whole table.

    Raises:
        InvalidArgumentError: malformed or empty filter, unknown column or operator, or a
            value that does not fit the column type.
    """
    if filter is None:
        return None
    if not isinstance(filter, (list, tuple)):
        raise InvalidArgumentError(f"filter must be a list of (column, op, value) tuples, got {filter!r}")
    groups = filter if filter and all(isinstance(g, list) for g in filter) else [filter]
    if any(len(g) == 0 for g in groups):
        raise InvalidArgumentError(
            f"filter {filter!r} is empty (or has an empty AND group): give at least one "
            "(column, op, value) term, or filter=None to select every row")
    return [[_term(t, schema) for t in group] for group in groups]


def _term(raw: Any, schema: pa.Schema) -> Term:
    if not isinstance(raw, (tuple, list)) or len(raw) not in (2, 3):
        raise InvalidArgumentError(f"filter term must be (column, op, value), got {raw!r}")
    column, op = raw[0], str(raw[1]).lower()
    value = raw[2] if len(raw) == 3 else None
    if op not in _OPS:
        raise InvalidArgumentError(
            f"unknown filter operator {raw[1]!r} in {raw!r}: the operators are {OPERATORS}")
    op = _OPS[op]
    if not isinstance(column, str) or column not in schema.names:
        raise InvalidArgumentError(f"filter column {column!r} is not in the table {schema.names}")
    t = schema.field(column).type
    if op in ("is null", "is not null"):
        return Term(column, op, None, None)
    if op in ("in", "not in"):
        if not isinstance(value, (list, tuple, set, frozenset)):
            raise InvalidArgumentError(f"'{op}' needs a list of values in {raw!r}")
        return _in_term(column, op, list(value), t)
    if value is None:
        raise InvalidArgumentError(f"compare with None in {raw!r}: use 'is null' / 'is not null'")
    lit = Literal(column, t, value)
    exact = lit.exact()
    if isinstance(exact, float) and math.isnan(exact):  # a float column: NaN is the top value
        nan_op = {"=": IS_NAN, ">=": IS_NAN, "<": NOT_NAN, "!=": NOT_NAN, "<=": "is not null", ">": FALSE}[op]
        return Term(column, nan_op, None, None)
    if exact is not None:
        return Term(column, op, to_scalar(exact, t), exact)
    if op in ("=", "!="):  # no value of the column equals the literal
        return Term(column, "is not null", None, None) if op == "!=" else Term(column, FALSE, None, None)
    bound = lit.floor() if op in ("<", "<=") else lit.ceil()
    if bound is None:
        return Term(column, FALSE, None, None)
    return Term(column, "<=" if op in ("<", "<=") else ">=", to_scalar(bound, t), bound)


def _in_term(column: str, op: str, values: list[Any], t: pa.DataType) -> Term:
    """IN drops NULL and literals no column value equals; NOT IN with a NULL matches
    nothing (SQL: ``x NOT IN (1, NULL)`` is unknown or false for every x)."""
    if op == "not in" and any(v is None for v in values):
        return Term(column, FALSE, None, None)
    stats = [e for e in (Literal(column, t, v).exact() for v in values if v is not None) if e is not None]
    if pa.types.is_floating(t):  # -0.0 equals 0.0: one value in the set (see _term_expression)
        stats = [0.0 if s == 0 else s for s in stats]
    if not stats:
        return Term(column, FALSE, None, None) if op == "in" else Term(column, "is not null", None, None)
    return Term(column, op, pa.array([to_scalar(s, t) for s in stats], t), stats)


def columns_of(dnf: DNF | None) -> set[str]:
    return {t.column for g in dnf or [] for t in g}


def to_expression(dnf: DNF) -> pc.Expression:
    """The exact row filter of ``dnf`` as an Arrow compute expression."""
    ors = None
    for group in dnf:
        ands = None
        for t in group:
            e = _term_expression(t)
            ands = e if ands is None else ands & e
        assert ands is not None
        ors = ands if ors is None else ors | ands
    assert ors is not None
    return ors


def _term_expression(t: Term) -> pc.Expression:
    f = pc.field(t.column)
    if t.op == FALSE:
        return pc.scalar(False)
    if t.op == "is null":
        return f.is_null()
    if t.op == "is not null":
        return f.is_valid()
    if t.op == IS_NAN:
        return f.is_nan()
    if t.op == NOT_NAN:
        return f.is_valid() & ~f.is_nan()
    if t.op in ("in", "not in"):
        # Arrow's is_in finds NaN as NaN but tells -0.0 from 0.0: adding +0.0 makes -0.0 0.0
        x = f + pc.scalar(pa.scalar(0.0, t.value.type)) if pa.types.is_floating(t.value.type) else f
        return x.isin(t.value) if t.op == "in" else ~x.isin(t.value) & f.is_valid()
    ops: dict[str, Callable[[Any, Any], pc.Expression]] = {
        "=": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b,
        "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
    }
    out = ops[t.op](f, pc.scalar(t.value))
    if t.op in (">", ">=") and pa.types.is_floating(t.value.type):
        out = out | f.is_nan()  # NaN is above every number; Arrow says false (NaN != x holds)
    return out


def _is_nan(stat: Any) -> bool:
    return isinstance(stat, float) and math.isnan(stat)


def might_match(dnf: DNF | None, lookup: StatsLookup, columns: Sequence[str] | None = None) -> bool:
    """False only if no row described by ``lookup`` can match ``dnf``.

    Terms on columns outside ``columns`` (when given) are treated as unknown (may match).
    """
    if not dnf:
        return True
    allowed = None if columns is None else set(columns)
    for group in dnf:
        if all(allowed is not None and t.column not in allowed or term_might_match(t, lookup(t.column))
               for t in group):
            return True
    return False


def term_might_match(t: Term, stats: tuple[Any, Any, int, int] | None) -> bool:
    if t.op == FALSE:
        return False
    if stats is None:
        return True
    lo, hi, nulls, rows = stats
    if t.op == "is null":
        return nulls > 0
    if t.op in ("is not null", NOT_NAN):  # known min/max: values other than NaN exist
        return nulls < rows
    if nulls >= rows:
        return False  # only nulls: no comparison can match
    if lo is None or hi is None or _is_nan(lo) or _is_nan(hi):
        return True  # unknown (a NaN as min or max is not trusted)
    if t.op == IS_NAN:
        return False  # known min and max: no NaN in the file (see the module docs)
    try:
        if t.op in ("in", "not in"):
            if t.op == "in":
                return any(lo <= s <= hi for s in t.stat)
            return not (lo == hi and lo in t.stat)
        s = t.stat
        return {
            "=": lambda: lo <= s <= hi,
            "!=": lambda: not (lo == hi == s),
            "<": lambda: lo < s,
            "<=": lambda: lo <= s,
            ">": lambda: hi > s,
            ">=": lambda: hi >= s,
        }[t.op]()
    except TypeError:
        return True
