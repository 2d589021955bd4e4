"""SQL conditions as the core's filters (minipaimon_core.expressions.condition): what the command line
and the SQL procedures take."""

from __future__ import annotations

import datetime
from decimal import Decimal

import pyarrow as pa
import pytest

from minipaimon_core.errors import InvalidArgumentError
from minipaimon_core.expressions.condition import parse_assignments, parse_condition

SCHEMA = pa.schema([("id", pa.int64()), ("s", pa.string()), ("d", pa.date32()),
                    ("ts", pa.timestamp("us")), ("x", pa.decimal128(10, 2)), ("f", pa.float64()),
                    ("b", pa.bool_())])


@pytest.mark.parametrize("text,expected", [
    ("id = 1", [[("id", "=", 1)]]),
    ("id <> 1 and s = 'it''s'", [[("id", "!=", 1), ("s", "=", "it's")]]),
    ("id < 3 OR id >= 10 AND s IS NOT NULL", [[("id", "<", 3)], [("id", ">=", 10), ("s", "is not null", None)]]),
    ("d < '2025-01-01'", [[("d", "<", datetime.date(2025, 1, 1))]]),
    ("d = DATE '2025-01-02'", [[("d", "=", datetime.date(2025, 1, 2))]]),
    ("ts >= TIMESTAMP '2025-01-02 03:04:05'", [[("ts", ">=", datetime.datetime(2025, 1, 2, 3, 4, 5))]]),
    ("ts < '2025-01-02T03:04'", [[("ts", "<", datetime.datetime(2025, 1, 2, 3, 4))]]),
    ("x > 1.25", [[("x", ">", Decimal("1.25"))]]),
    ("f <= -2.5e3", [[("f", "<=", -2500.0)]]),
    ("id IN (1, 2,3)", [[("id", "in", [1, 2, 3])]]),
    ("s not in ('a')", [[("s", "not in", ["a"])]]),
    ("b = TRUE", [[("b", "=", True)]]),
    ("`id` is null", [[("id", "is null", None)]]),
    # NULL as SQL has it: a comparison with NULL is never true (the core's IN with only NULL)
    ("id = NULL", [[("id", "in", [None])]]),
    ("s <> null OR id = 1", [[("s", "in", [None])], [("id", "=", 1)]]),
    ("id IN (1, NULL)", [[("id", "in", [1, None])]]),
    ("id NOT IN (1, NULL)", [[("id", "not in", [1, None])]]),
])
def test_conditions_parse_to_filters(text, expected):
    assert parse_condition(text, SCHEMA) == expected


@pytest.mark.parametrize("text,message", [
    ("", "empty"),
    ("nope = 1", "'nope' is not a column"),
    ("id = ", "literal"),
    ("(id = 1)", "parentheses"),
    ("id = 1 AND (s = 'a' OR s = 'b')", "parentheses"),
    ("id = 1 s = 2", "unexpected"),
    ("d = 'yesterday'", "not a date32"),
    ("id ~ 3", "cannot read"),
    ("id NOT = 3", "NOT"),
    ("s = 'open", "cannot read"),
])
def test_malformed_conditions_are_typed_errors(text, message):
    with pytest.raises(InvalidArgumentError, match=message):
        parse_condition(text, SCHEMA)


@pytest.mark.parametrize("text,message", [
    ("id = ", "expected a literal"),
    ("nope = 1", "'nope' is not a column"),
    ("id = 1 s = 'a'", "expected ,"),
])
def test_a_bad_set_list_is_called_an_assignment_not_a_condition(text, message):
    with pytest.raises(InvalidArgumentError, match=message) as e:
        parse_assignments(text, SCHEMA)
    said = str(e.value)
    assert said.startswith(f"SET list {text!r}") and "condition" not in said
    assert "column = literal" in said  # what to write instead


def test_comparisons_with_null_select_what_sql_selects(tmp_path):
    """No row for ``= NULL`` / ``<> NULL`` / ``NOT IN (.., NULL)``; IN ignores the NULL."""
    import minipaimon_core as mp

    data = pa.table({"id": pa.array([1, 2, None], pa.int64()), "s": ["a", None, "c"]})
    t = mp.create_table(str(tmp_path / "t"), data.schema)
    t.write(data)
    got = {text: sorted(t.scan(filter=parse_condition(text, data.schema)).to_arrow().column("s").to_pylist(),
                        key=str)
           for text in ("id = NULL", "s <> NULL", "id IN (1, NULL)", "id NOT IN (1, NULL)",
                        "id = NULL OR s = 'c'")}
    assert got == {"id = NULL": [], "s <> NULL": [], "id IN (1, NULL)": ["a"],
                   "id NOT IN (1, NULL)": [], "id = NULL OR s = 'c'": ["c"]}


def test_any_column_name_quoted_as_spark_quotes_it() -> None:
    schema = pa.schema([("a`b.c", pa.int64()), ("g h", pa.string())])
    assert parse_condition("`a``b.c` = 1 AND `g h` IS NULL", schema) == [[("a`b.c", "=", 1), ("g h", "is null", None)]]
    assert parse_assignments("`a``b.c` = 2, `g h` = 'x'", schema) == {"a`b.c": 2, "g h": "x"}
    with pytest.raises(InvalidArgumentError, match="cannot read"):  # a lone backtick ends the name
        parse_condition("`a`b.c` = 1", schema)
