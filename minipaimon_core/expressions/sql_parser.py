"""Spark SQL expressions as a syntax tree: what the SQL procedures take for conditions and
SET values (``upper(name)``, ``id % 3 = 0 AND dt >= '2025-01-01'``); typed and turned into
Arrow expressions by :mod:`.sql_compiler`.

Spark's grammar for the part it covers, with its precedence (lowest first): ``OR``;
``AND``; ``NOT``; the predicates ``IS [NOT] NULL``, ``[NOT] IN (...)``, ``[NOT] BETWEEN a
AND b``, ``[NOT] LIKE``; comparisons ``= == != <> <=> < <= > >=``; ``+ - ||``; ``* / %
DIV``; unary ``- +``; then literals, columns, function calls, ``CASE``, ``CAST(x AS t)``
and parentheses. Lexical rules are Spark's: keywords in any case; a column name plain or
in backticks (a backtick doubled inside); strings in single or double quotes with
backslash escapes and a doubled quote for a quote (``'it''s'``), adjacent strings joined
(``'a' 'b'`` is ``'ab'``); numbers typed as
Spark types them (``1`` INT, ``3000000000`` BIGINT, ``1.5`` DECIMAL(2,1), ``1e3`` DOUBLE,
suffixes ``L S Y D F BD``); ``DATE '...'`` literals.

Raises :class:`~minipaimon_core.errors.InvalidArgumentError` naming where the text went
wrong.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from ..errors import InvalidArgumentError


@dataclass(frozen=True)
class Lit:
    value: Any  # int, float, Decimal, str, bool, datetime.date text, None
    kind: str  # "int", "bigint", "smallint", "tinyint", "double", "float", "decimal", "string", "boolean", "null", "date"


@dataclass(frozen=True)
class Col:
    name: str


@dataclass(frozen=True)
class Op:
    """An operator or a function call: ``name`` (lowercase) over ``args``."""

    name: str
    args: tuple[Any, ...]


@dataclass(frozen=True)
class Case:
    whens: tuple[tuple[Any, Any], ...]  # (condition, value)
    otherwise: Any  # None: NULL


@dataclass(frozen=True)
class Cast:
    arg: Any
    type: str  # Spark's type name, lowercase: "int", "decimal(10,2)", ...


_TOKEN = re.compile(r"""\s*(?:
      (?P<string>'(?:[^'\\]|\\.|'')*'|"(?:[^"\\]|\\.|"")*")
    | (?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?(?:BD|[LSYDF])?(?![A-Za-z0-9_]))
    | (?P<op><=>|<=|>=|<>|!=|==|\|\||[=<>+\-*/%(),])
    | (?P<word>[A-Za-z_][A-Za-z0-9_]*|`(?:[^`]|``)+`)
    )""", re.VERBOSE | re.IGNORECASE)
_ESCAPES = {"0": "\0", "b": "\b", "n": "\n", "r": "\r", "t": "\t", "Z": "\x1a", "%": "\\%", "_": "\\_"}
_COMPARE = {"=": "=", "==": "=", "!=": "!=", "<>": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">=",
            "<=>": "<=>"}
KEYWORDS = {"and", "or", "not", "is", "null", "true", "false", "in", "between", "like", "case", "when", "then",
            "else", "end", "cast", "as", "div", "date"}


def _unescape(quoted: str) -> str:
    """The text of a string token: backslash escapes read, a doubled quote one quote."""
    body = quoted[1:-1].replace(quoted[0] * 2, quoted[0])
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), body, flags=re.S)


class _Parser:
    def __init__(self, text: str, what: str) -> None:
        self.text, self.what = text, what
        self.tokens: list[tuple[str, str]] = []
        pos, text = 0, text.rstrip()
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if m is None or m.end() == pos:
                raise self.fail(f"cannot read {text[pos:].strip()[:20]!r}")
            kind = m.lastgroup
            assert kind is not None
            value = m.group(kind)
            if kind == "string" and self.tokens and self.tokens[-1][0] == "string":
                self.tokens[-1] = ("string", self.tokens[-1][1] + _unescape(value))  # 'a' 'b'
            else:
                self.tokens.append((kind, _unescape(value) if kind == "string" else value))
            pos = m.end()
        self.i = 0

    def fail(self, why: str) -> InvalidArgumentError:
        return InvalidArgumentError(f"{self.what} {self.text!r}: {why}")

    def peek(self, k: int = 0) -> tuple[str, str]:
        return self.tokens[self.i + k] if self.i + k < len(self.tokens) else ("end", "")

    def keyword(self, *words: str) -> bool:
        kind, value = self.peek()
        if kind == "word" and value.lower() in words:
            self.i += 1
            return True
        return False

    def op(self, *ops: str) -> str | None:
        kind, value = self.peek()
        if kind == "op" and value in ops:
            self.i += 1
            return value
        return None

    def expect(self, check: Any, what: str) -> Any:
        got = check()
        if not got:
            shown = self.peek()[1] or "the end"
            raise self.fail(f"expected {what} at {shown!r}")
        return got

    # -- the grammar, lowest precedence first -------------------------------------------------

    def expression(self) -> Any:
        left = self.conjunction()
        while self.keyword("or"):
            left = Op("or", (left, self.conjunction()))
        return left

    def conjunction(self) -> Any:
        left = self.negation()
        while self.keyword("and"):
            left = Op("and", (left, self.negation()))
        return left

    def negation(self) -> Any:
        if self.keyword("not"):
            return Op("not", (self.negation(),))
        return self.predicate()

    def predicate(self) -> Any:
        value = self.comparison()
        if self.keyword("is"):
            negated = self.keyword("not")
            self.expect(lambda: self.keyword("null"), "NULL")
            return Op("is not null" if negated else "is null", (value,))
        negated = self.keyword("not")
        if self.keyword("in"):
            self.expect(lambda: self.op("("), "(")
            items = [self.expression()]
            while self.op(","):
                items.append(self.expression())
            self.expect(lambda: self.op(")"), ")")
            out: Any = Op("in", (value, *items))
        elif self.keyword("between"):
            low = self.comparison()
            self.expect(lambda: self.keyword("and"), "AND")
            out = Op("between", (value, low, self.comparison()))
        elif self.keyword("like"):
            out = Op("like", (value, self.comparison()))
        elif negated:
            raise self.fail(f"expected IN, BETWEEN or LIKE after NOT at {self.peek()[1]!r}")
        else:
            return value
        return Op("not", (out,)) if negated else out

    def comparison(self) -> Any:
        left = self.additive()
        while (op := self.op(*_COMPARE)) is not None:
            left = Op(_COMPARE[op], (left, self.additive()))
        return left

    def additive(self) -> Any:
        left = self.multiplicative()
        while (op := self.op("+", "-", "||")) is not None:
            left = Op(op, (left, self.multiplicative()))
        return left

    def multiplicative(self) -> Any:
        left = self.unary()
        while True:
            op = self.op("*", "/", "%") or ("div" if self.keyword("div") else None)
            if op is None:
                return left
            left = Op(op, (left, self.unary()))

    def unary(self) -> Any:
        if self.op("-"):
            inner = self.unary()
            if isinstance(inner, Lit) and inner.kind not in ("string", "boolean", "null", "date"):
                return _negative(inner)
            return Op("negative", (inner,))
        if self.op("+"):
            return self.unary()
        return self.primary()

    def primary(self) -> Any:
        kind, value = self.peek()
        if kind == "end":
            raise self.fail("unexpected end")
        self.i += 1
        if kind == "string":
            return Lit(value, "string")
        if kind == "number":
            return _number(value, self)
        if kind == "op" and value == "(":
            inner = self.expression()
            self.expect(lambda: self.op(")"), ")")
            return inner
        if kind != "word":
            raise self.fail(f"unexpected {value!r}")
        word = value.lower()
        if word in ("true", "false"):
            return Lit(word == "true", "boolean")
        if word == "null":
            return Lit(None, "null")
        if word == "date" and self.peek()[0] == "string":
            self.i += 1
            return Lit(self.tokens[self.i - 1][1], "date")
        if word == "case":
            return self.case()
        if word == "cast" and self.op("("):
            arg = self.expression()
            self.expect(lambda: self.keyword("as"), "AS")
            type_name = self.type_name()
            self.expect(lambda: self.op(")"), ")")
            return Cast(arg, type_name)
        if not value.startswith("`") and self.op("("):
            args = []
            if not self.op(")"):
                args.append(self.expression())
                while self.op(","):
                    args.append(self.expression())
                self.expect(lambda: self.op(")"), ")")
            return Op(f"fn:{word}", tuple(args))
        if not value.startswith("`") and word in KEYWORDS:
            raise self.fail(f"unexpected {value!r}")
        return Col(value[1:-1].replace("``", "`") if value.startswith("`") else value)

    def case(self) -> Case:
        kind, word = self.peek()
        operand = None if kind == "word" and word.lower() == "when" else self.expression()
        whens = []
        while self.keyword("when"):
            test = self.expression()
            self.expect(lambda: self.keyword("then"), "THEN")
            test = test if operand is None else Op("=", (operand, test))
            whens.append((test, self.expression()))
        if not whens:
            raise self.fail("CASE needs a WHEN")
        otherwise = self.expression() if self.keyword("else") else None
        self.expect(lambda: self.keyword("end"), "END")
        return Case(tuple(whens), otherwise)

    def type_name(self) -> str:
        kind, value = self.peek()
        if kind != "word":
            raise self.fail(f"expected a type at {value!r}")
        self.i += 1
        name = value.lower()
        if self.op("("):
            sizes = [self.expect(lambda: self.number_token(), "a number")]
            while self.op(","):
                sizes.append(self.expect(lambda: self.number_token(), "a number"))
            self.expect(lambda: self.op(")"), ")")
            name += "(" + ",".join(sizes) + ")"
        return name

    def number_token(self) -> str | None:
        kind, value = self.peek()
        if kind == "number" and value.isdigit():
            self.i += 1
            return value
        return None


def _number(text: str, parser: _Parser) -> Lit:
    upper = text.upper()
    if upper.endswith("BD"):
        return Lit(Decimal(text[:-2]), "decimal")
    suffix = {"L": "bigint", "S": "smallint", "Y": "tinyint", "D": "double", "F": "float"}.get(upper[-1])
    body = text[:-1] if suffix else text
    if suffix in ("double", "float") or "e" in body.lower():
        return Lit(float(body), suffix or "double")
    if "." in body:
        return Lit(Decimal(body), "decimal")
    value = int(body)
    if suffix:
        return Lit(value, suffix)
    if value < 2**31:
        return Lit(value, "int")
    if value < 2**63:
        return Lit(value, "bigint")
    raise parser.fail(f"{text} is out of the range of BIGINT")


def _negative(lit: Lit) -> Lit:
    return Lit(-lit.value, lit.kind)


def parse(text: str, what: str = "expression") -> Any:
    """The syntax tree of the Spark SQL expression ``text``. Raises InvalidArgumentError."""
    if not isinstance(text, str) or not text.strip():
        raise InvalidArgumentError(f"{what}: expected a Spark SQL expression, got {text!r}")
    p = _Parser(text, what)
    tree = p.expression()
    if p.i != len(p.tokens):
        raise p.fail(f"unexpected {p.peek()[1]!r}")
    return tree


def parse_assignments(text: str, what: str = "SET list") -> list[tuple[str, Any]]:
    """``"name = upper(name), b = b * 2"`` as (column, syntax tree) pairs, in order.
    Raises InvalidArgumentError (malformed text, a column set twice)."""
    if not isinstance(text, str) or not text.strip():
        raise InvalidArgumentError(f"{what}: expected 'column = expression, ...', got {text!r}")
    p = _Parser(text, what)
    out: list[tuple[str, Any]] = []
    while True:
        kind, word = p.peek()
        if kind != "word":
            raise p.fail(f"expected a column at {word or 'the end'!r}")
        p.i += 1
        column = word[1:-1].replace("``", "`") if word.startswith("`") else word
        if any(c.lower() == column.lower() for c, _ in out):
            raise p.fail(f"{column!r} is set twice")
        p.expect(lambda: p.op("=", "=="), "'='")
        out.append((column, p.expression()))
        if p.i == len(p.tokens):
            return out
        p.expect(lambda: p.op(","), "','")


__all__ = ["Case", "Cast", "Col", "Lit", "Op", "parse", "parse_assignments"]
