"""SQL conditions as the core's filters (and SET lists as an update's values): ``dt < '2025-01-01' AND status = 'void' OR id IN (1, 2)``
-> ``[[("dt", "<", date(2025, 1, 1)), ("status", "=", "void")], [("id", "in", [1, 2])]]``.

What the command line (``minipaimon delete --where``) takes, evaluated by the core exactly
as ``scan(filter=...)`` is (SQL semantics: a null never matches a comparison). The SQL
procedures take Spark SQL expressions instead (:mod:`.sql_compiler`), which read these
conditions alike except backslashes in a text (Spark: escapes).

Grammar (keywords in any case; AND binds tighter than OR; no parentheses, so every condition
is an OR of ANDs, the filter's own shape)::

    condition := conj ("OR" conj)*
    conj      := term ("AND" term)*
    term      := column op literal | column ["NOT"] "IN" "(" literal ("," literal)* ")"
               | column "IS" ["NOT"] "NULL"
    op        := = | == | != | <> | < | <= | > | >=
    literal   := 'text' ('' inside for ') | number | TRUE | FALSE | NULL
               | DATE 'yyyy-mm-dd' | TIMESTAMP 'yyyy-mm-dd hh:mm:ss[.ffffff]'

A text literal compared with a date or timestamp column is read as an ISO date/time. NULL
follows SQL: a comparison with NULL is never true, so ``dt = NULL`` selects no row (write
``dt IS NULL``); ``IN (1, NULL)`` is ``IN (1)``, and ``NOT IN (1, NULL)`` selects no row
(with no NOT around a term, SQL's unknown acts as false). Anything else is an
:class:`~minipaimon_core.errors.InvalidArgumentError` naming where it went wrong.
"""

from __future__ import annotations

import datetime
import re
from decimal import Decimal, InvalidOperation
from typing import Any

import pyarrow as pa

from ..errors import InvalidArgumentError

_TOKEN = re.compile(r"""
    \s*(?:
      (?P<string>'(?:[^']|'')*')
    | (?P<number>[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?))
    | (?P<op><=|>=|<>|!=|==|=|<|>)
    | (?P<punct>[(),])
    | (?P<word>[A-Za-z_][A-Za-z0-9_]*|`(?:[^`]|``)+`)
    )""", re.VERBOSE)
_OPS = {"=": "=", "==": "=", "!=": "!=", "<>": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}


def _column(word: str) -> str:
    """The column a word names: the word, or the name in backticks as Spark SQL quotes it
    (a backtick in the name doubled)."""
    return word[1:-1].replace("``", "`") if word.startswith("`") else word


def _tokens(text: str, what: str) -> list[tuple[str, str]]:
    out, pos = [], 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise InvalidArgumentError(f"{what} {text!r}: cannot read {text[pos:].strip()[:20]!r}")
        kind = m.lastgroup
        assert kind is not None
        out.append((kind, m.group(kind)))
        pos = m.end()
    return out


_CONDITION = ("condition", "write 'column op literal' terms joined by AND / OR")
_ASSIGNMENTS = ("SET list", "write 'column = literal' assignments separated by commas")


class _Parser:
    def __init__(self, text: str, schema: pa.Schema, what: tuple[str, str] = _CONDITION) -> None:
        """``what``: what the text is and how to write one, for error messages."""
        self.text = text
        self.schema = schema
        self.what = what
        self.tokens = _tokens(text, what[0])
        self.i = 0

    def fail(self, what: str) -> InvalidArgumentError:
        near = " ".join(v for _, v in self.tokens[self.i:self.i + 3]) or "the end"
        return InvalidArgumentError(f"{self.what[0]} {self.text!r}: {what} (at {near!r}); {self.what[1]}")

    def peek_word(self, *words: str) -> bool:
        return self.i < len(self.tokens) and self.tokens[self.i][0] == "word" \
            and self.tokens[self.i][1].upper() in words

    def take(self, kind: str, value: str | None = None) -> str:
        if self.i >= len(self.tokens):
            raise self.fail(f"expected {value or kind}")
        k, v = self.tokens[self.i]
        if k != kind or (value is not None and v.upper() != value):
            raise self.fail(f"expected {value or kind}")
        self.i += 1
        return v

    def parse(self) -> list[list[tuple[str, str, Any]]]:
        if not self.tokens:
            raise self.fail("the condition is empty")
        groups = [self.conj()]
        while self.peek_word("OR"):
            self.i += 1
            groups.append(self.conj())
        if self.i != len(self.tokens):
            if self.tokens[self.i][1] == "(":
                raise self.fail("parentheses are not supported")
            raise self.fail("unexpected text")
        return groups

    def conj(self) -> list[tuple[str, str, Any]]:
        terms = [self.term()]
        while self.peek_word("AND"):
            self.i += 1
            terms.append(self.term())
        return terms

    def term(self) -> tuple[str, str, Any]:
        if self.i < len(self.tokens) and self.tokens[self.i][1] == "(":
            raise self.fail("parentheses are not supported")
        column = _column(self.take("word"))
        if column not in self.schema.names:
            raise self.fail(f"{column!r} is not a column of {self.schema.names}")
        t = self.schema.field(column).type
        if self.peek_word("IS"):
            self.i += 1
            negated = self.peek_word("NOT")
            self.i += negated
            self.take("word", "NULL")
            return (column, "is not null" if negated else "is null", None)
        negated = self.peek_word("NOT")
        self.i += negated
        if self.peek_word("IN"):
            self.i += 1
            self.take("punct", "(")
            values = [self.literal(t)]
            while self.i < len(self.tokens) and self.tokens[self.i][1] == ",":
                self.i += 1
                values.append(self.literal(t))
            self.take("punct", ")")
            return (column, "not in" if negated else "in", values)
        if negated:
            raise self.fail("NOT is only allowed in NOT IN and IS NOT NULL")
        op = _OPS[self.take("op")]
        value = self.literal(t)
        if value is None:
            return (column, "in", [None])  # never true, as SQL's comparison with NULL
        return (column, op, value)

    def literal(self, t: pa.DataType) -> Any:
        if self.i >= len(self.tokens):
            raise self.fail("expected a literal")
        kind, value = self.tokens[self.i]
        self.i += 1
        if kind == "string":
            return _text(value[1:-1].replace("''", "'"), t, self)
        if kind == "number":
            return _number(value, t)
        if kind == "word" and value.upper() in ("TRUE", "FALSE"):
            return value.upper() == "TRUE"
        if kind == "word" and value.upper() in ("DATE", "TIMESTAMP"):
            text = self.take("string")[1:-1]
            try:
                return datetime.date.fromisoformat(text) if value.upper() == "DATE" \
                    else datetime.datetime.fromisoformat(text)
            except ValueError:
                raise self.fail(f"{text!r} is not a {value.upper()}") from None
        if kind == "word" and value.upper() == "NULL":
            return None
        self.i -= 1
        raise self.fail("expected a literal ('text', a number, TRUE/FALSE, DATE '...')")


def _text(value: str, t: pa.DataType, parser: _Parser) -> Any:
    """A text literal, read as a date / time for such a column (as SQL casts it)."""
    try:
        if pa.types.is_date(t):
            return datetime.date.fromisoformat(value)
        if pa.types.is_timestamp(t):
            return datetime.datetime.fromisoformat(value)
    except ValueError:
        raise parser.fail(f"{value!r} is not a {t}") from None
    return value


def _number(text: str, t: pa.DataType) -> Any:
    if pa.types.is_decimal(t):
        try:
            return Decimal(text)
        except InvalidOperation:  # pragma: no cover - the token is a number
            raise InvalidArgumentError(f"{text!r} is not a number") from None
    if re.fullmatch(r"[-+]?\d+", text):
        return int(text)
    return float(text)


def parse_condition(text: str, schema: pa.Schema) -> list[list[tuple[str, str, Any]]]:
    """``text`` (see the module docs) as a filter in disjunctive normal form for ``schema``.

    Raises InvalidArgumentError: malformed text, an unknown column, a literal that is not
    one.
    """
    if not isinstance(text, str):
        raise InvalidArgumentError(f"a condition must be a string, got {text!r}")
    return _Parser(text, schema).parse()


def parse_assignments(text: str, schema: pa.Schema) -> dict[str, Any]:
    """``"status = 'void', amount = 0, note = NULL"`` -> ``{"status": "void", "amount": 0,
    "note": None}``: the SET list of an update, literals only (as the condition's, plus
    NULL).

    Raises InvalidArgumentError: malformed text, an unknown column, a column set twice.
    """
    if not isinstance(text, str):
        raise InvalidArgumentError(f"assignments must be a string, got {text!r}")
    p = _Parser(text, schema, _ASSIGNMENTS)
    out: dict[str, Any] = {}
    if not p.tokens:
        raise p.fail("no assignment")
    while True:
        column = _column(p.take("word"))
        if column not in schema.names:
            raise p.fail(f"{column!r} is not a column of {schema.names}")
        if column in out:
            raise p.fail(f"{column!r} is set twice")
        if p.take("op") not in ("=", "=="):
            raise p.fail("expected '='")
        out[column] = p.literal(schema.field(column).type)
        if p.i == len(p.tokens):
            return out
        p.take("punct", ",")


__all__ = ["parse_assignments", "parse_condition"]
