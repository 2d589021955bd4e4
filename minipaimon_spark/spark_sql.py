"""Spark SQL conditions and values of :class:`minipaimon_spark.MiniPaimonTable`: a string of
Spark SQL (``"id % 3 = 0"``, ``"upper(name)"``) or a Column, analyzed by Spark on the driver
before any task runs, failures turned into one typed line; and what the planner can learn
from them (the units a change can touch).

* :func:`column_of`: a string, Column or Python literal as a Column; :func:`analyzed` runs
  Spark's analysis of a DataFrame and turns a parse or analysis error (an unparsable
  condition, an unknown column, a non-boolean condition) into an
  :class:`~minipaimon_core.errors.InvalidArgumentError` of one line naming the column (the
  first line of Spark's message).
* :func:`pruning_filter`: the part of a condition string the core's filter expresses
  exactly as Spark evaluates it (``dt < '2025-01-01' AND id IN (1, 2)``), so that a delete or
  update reads only the partitions and files it may change.
* :func:`equalities`: the ``t.a = s.b`` terms a merge condition is a conjunction of, so that
  a merge reads only the target between the source's bounds.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pyarrow as pa

from minipaimon_core.errors import InvalidArgumentError


def column_of(value: Any, what: str) -> Any:
    """``value`` as a Column: a string is Spark SQL (``F.expr``), a Column is itself, any
    other Python value a literal. Raises InvalidArgumentError (one line) if the string does
    not parse."""
    from pyspark.errors import PySparkException
    from pyspark.sql import Column
    from pyspark.sql import functions as F

    if isinstance(value, Column):
        return value
    if isinstance(value, str):
        try:
            return F.expr(value)
        except PySparkException as e:
            raise InvalidArgumentError(f"{what}: {value!r}: {one_line(e)}") from None
    if value is None or isinstance(value, (bool, int, float)):
        return F.lit(value)
    raise InvalidArgumentError(f"{what}: expected a Spark SQL string or a Column, got {value!r}")


def analyzed(build: Callable[[], Any], what: str) -> Any:
    """``build()`` (a DataFrame), analyzed now (its schema, which Spark Connect also
    resolves eagerly). Raises InvalidArgumentError with Spark's first line for a parse or
    analysis error."""
    from pyspark.errors import PySparkException

    try:
        df = build()
        _ = df.schema
    except PySparkException as e:
        raise InvalidArgumentError(f"{what}: {one_line(e)}") from None
    return df


def one_line(error: BaseException) -> str:
    """The first line of a Spark error message (its class, message and SQLSTATE; the plan
    after it left out)."""
    text = str(error).strip().split("\n", 1)[0]
    return text.rstrip(";").strip()


# -- what the planner can use --------------------------------------------------------------

# column types whose comparison with a literal the core's filter makes as Spark does (floats
# compare a decimal literal as a double in Spark, exactly in the core; instants in the session
# time zone; text with escapes Spark reads otherwise): terms on other columns are left out
def _comparable(t: pa.DataType) -> bool:
    return (pa.types.is_integer(t) or pa.types.is_string(t) or pa.types.is_large_string(t)
            or pa.types.is_date(t) or pa.types.is_decimal(t) or pa.types.is_boolean(t))


def pruning_filter(condition: Any, schema: pa.Schema) -> list[list[tuple[str, str, Any]]] | None:
    """The core filter of a condition string, where the whole condition is in the core's
    grammar (``col op literal`` terms, AND / OR, IN, IS [NOT] NULL: see
    minipaimon_core.expressions.condition); terms on columns whose comparisons could differ
    from Spark's are left out (a wider filter). None: no pruning (a Column, another
    grammar, or nothing left)."""
    from minipaimon_core.expressions.condition import parse_condition

    if not isinstance(condition, str) or "\\" in condition or '"' in condition:
        return None  # Spark reads escapes (and double quotes) otherwise than the core
    try:
        groups = parse_condition(condition, schema)
    except InvalidArgumentError:
        return None
    kept = []
    for group in groups:
        terms = [t for t in group if _comparable(schema.field(t[0]).type)]
        if not terms:
            return None  # one group selects every row: the OR does
        kept.append(terms)
    return kept


_IDENT = r"(?:`(?:[^`]|``)+`|[A-Za-z_][A-Za-z0-9_]*)"
_EQUALITY = re.compile(rf"^\s*\(?\s*({_IDENT}(?:\.{_IDENT})?)\s*==?\s*({_IDENT}(?:\.{_IDENT})?)\s*\)?\s*$")


def equalities(condition: Any) -> list[tuple[list[str], list[str]]] | None:
    """The terms of a condition string that is a conjunction of equalities of two column
    references (``t.id = s.id AND t.dt = s.dt``), each as its two names split on the
    qualifier (``(["t", "id"], ["s", "id"])``); None if it is anything else."""
    if not isinstance(condition, str) or "'" in condition or '"' in condition:
        return None
    parts = re.split(r"\s+AND\s+", condition.strip(), flags=re.IGNORECASE)
    out = []
    for part in parts:
        m = _EQUALITY.match(part)
        if m is None:
            return None
        out.append((_names(m.group(1)), _names(m.group(2))))
    return out


def _names(reference: str) -> list[str]:
    return [p[1:-1].replace("``", "`") if p.startswith("`") else p
            for p in re.findall(_IDENT, reference)]


__all__ = ["analyzed", "column_of", "equalities", "one_line", "pruning_filter"]
