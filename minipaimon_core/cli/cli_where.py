"""``--where`` of the command line: one condition syntax for every command.

``minipaimon plan`` and ``minipaimon delete`` take the same SQL condition
(minipaimon_core.expressions.condition: ``dt = '2024-05-01' AND id > 3 OR id IN (1, 2)``). The earlier
``plan`` syntax (one ``COL OP VALUE`` term per ``--where``, values unquoted, several
``--where`` ANDed) still works for one release with a deprecation warning.
"""

from __future__ import annotations

import itertools
import re
import warnings
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from ..errors import InvalidArgumentError
from ..expressions.condition import parse_condition

_TERM = re.compile(r"^\s*(\w+)\s*(=|!=|<>|<=|>=|<|>)\s*(.*?)\s*$")
_NULL_TERM = re.compile(r"^\s*(\w+)\s+is\s+(not\s+)?null\s*$", re.IGNORECASE)

DNF = list[list[tuple[str, str, Any]]]


def parse_where(conditions: Sequence[str], schema: pa.Schema) -> DNF | None:
    """The filter of the ``--where`` conditions (all of them must hold), None for none.

    Raises InvalidArgumentError naming the condition that is malformed.
    """
    parsed: list[DNF] = []
    for text in conditions:
        try:
            parsed.append(parse_condition(text, schema))
        except InvalidArgumentError as e:
            legacy = _legacy_term(text, schema)
            if legacy is None:
                raise InvalidArgumentError(f"--where: {e}") from None
            warnings.warn(f"--where {text!r}: an unquoted value is deprecated and will be refused "
                          f"in the next release; write SQL literals, e.g. {_quoted(legacy)}",
                          DeprecationWarning, stacklevel=2)
            parsed.append([[legacy]])
    if len(parsed) > 1:
        warnings.warn("several --where options are deprecated and will be refused in the next "
                      "release: join the terms with AND in one --where", DeprecationWarning, stacklevel=2)
    if not parsed:
        return None
    # (a OR b) AND (c OR d) = every combination of one conjunction from each
    return [[t for conj in combo for t in conj] for combo in itertools.product(*parsed)]


def _quoted(term: tuple[str, str, Any]) -> str:
    column, op, value = term
    if value is None:
        return f"\"{column} {op}\""
    literal = repr(value) if isinstance(value, (int, float)) else "'" + str(value).replace("'", "''") + "'"
    return f"\"{column} {op} {literal}\""


def _legacy_term(text: str, schema: pa.Schema) -> tuple[str, str, Any] | None:
    """One term of the earlier syntax (``COL OP VALUE``, the value cast to the column's
    type), or None if ``text`` is not one."""
    m, n = _TERM.match(text), _NULL_TERM.match(text)
    match = n or m
    column = match.group(1) if match is not None else None
    if column is None or column not in schema.names:
        return None
    if n is not None:
        return (column, "is not null" if n.group(2) else "is null", None)
    assert m is not None
    raw = m.group(3).strip("'\"")
    try:
        value = pa.array([raw]).cast(schema.field(column).type).to_pylist()[0]
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    return (column, "!=" if m.group(2) == "<>" else m.group(2), value)


__all__ = ["parse_where"]
