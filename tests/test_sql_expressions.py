"""Spark SQL expressions in the core (minipaimon_core.expressions.sql_parser / sql_compiler):
what is refused when the text is analyzed, the filter the planner prunes by, and
``Table.delete`` / ``update`` with an expression filter. Their values against Spark's own:
tests/spark/test_sql_expressions.py."""

from __future__ import annotations

import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import minipaimon_core as mp
from minipaimon_core.expressions.sql_compiler import compile_assignments, compile_condition
from minipaimon_core.expressions.sql_pruning import pruning_filter
from minipaimon_core.io.fileio import LocalFileIO

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string()), ("b", pa.int32()),
                    ("f", pa.float64()), ("d", pa.decimal128(10, 2)), ("dt", pa.date32()),
                    ("ts", pa.timestamp("us", tz="UTC")), ("tags", pa.list_(pa.string())), ("wall", pa.timestamp("ms"))])


@pytest.mark.parametrize(("text", "error", "says"), [
    ("id >", mp.InvalidArgumentError, "unexpected end"),
    ("upper(name", mp.InvalidArgumentError, "expected )"),
    ("b IS 3", mp.InvalidArgumentError, "expected NULL"),
    ("name = 'open", mp.InvalidArgumentError, "cannot read"),
    ("nope = 1", mp.InvalidArgumentError, "column 'nope' is not in the table"),
    ("soundex(name) = 'x'", mp.InvalidArgumentError, "function soundex() is not supported"),
    ("concat(name, f) = 'x'", mp.InvalidArgumentError, "DOUBLE as text"),
    ("ts < '2025-01-01 00:00:00'", mp.InvalidArgumentError, "comparison of TIMESTAMP"),
    ("tags IS NULL", mp.InvalidArgumentError, "atomic columns"),
    ("b + 1", mp.InvalidArgumentError, "expected a boolean, got INT"),
    ("b = 'x'", mp.InvalidArgumentError, "'x' is not a INT"),
    ("substr(name, b) = 'x'", mp.InvalidArgumentError, "integer literal"),
    ("name LIKE name", mp.InvalidArgumentError, "string literal pattern"),
])
def test_a_condition_is_refused_when_analyzed_in_one_line(text: str, error: type, says: str) -> None:
    with pytest.raises(error) as raised:
        compile_condition(text, SCHEMA)
    assert says in str(raised.value) and "\n" not in str(raised.value)


@pytest.mark.parametrize(("text", "error", "says"), [
    ("b = 'x'", mp.SchemaMismatchError, "STRING value is not stored into a INT column"),
    ("dt = b", mp.SchemaMismatchError, "INT value is not stored into a DATE column"),
    ("b = 1, B = 2", mp.InvalidArgumentError, "set twice"),
    ("b 1", mp.InvalidArgumentError, "expected '='"),
])
def test_a_set_list_is_refused_when_analyzed(text: str, error: type, says: str) -> None:
    with pytest.raises(error, match=says):
        compile_assignments(text, SCHEMA)


def test_assignments_say_which_values_are_constants() -> None:
    values = compile_assignments("name = upper(name), b = 3000000000, d = 1.5 * 2", SCHEMA)
    assert {n: constant for n, (_, constant) in values.items()} == {"name": False, "b": True, "d": True}


@pytest.mark.parametrize(("text", "dnf"), [
    ("id = 3", [[("id", "=", 3)]]),
    ("dt >= '2025-01-02' AND b > 0", [[("dt", ">=", datetime.date(2025, 1, 2)), ("b", ">", 0)]]),
    ("id % 3 = 0 AND name = 'x'", [[("name", "=", "x")]]),            # the term it can use
    ("id % 3 = 0 OR name = 'x'", None),                                 # an OR of an unknown
    ("id IN (1, 2) OR b IS NULL", [[("id", "in", [1, 2])], [("b", "is null", None)]]),
    ("d > 1.5 AND f < 2", [[("d", ">", Decimal("1.5")), ("f", "<", 2.0)]]),
    ("b > 1.5e0", None),                                                # a double against integers
    ("b = '7'", [[("b", "=", 7)]]),
    ("NOT (b = 1)", None),
    ("wall >= '2025-01-02 12:00:00'", [[("wall", ">=", datetime.datetime(2025, 1, 2, 12))]]),
])
def test_the_filter_the_planner_prunes_by(text: str, dnf: Any) -> None:
    assert pruning_filter(text, SCHEMA) == dnf


class OpenedIO(LocalFileIO):
    def __init__(self) -> None:
        super().__init__()
        self.opened = 0

    def open_input(self, path: str) -> Any:
        self.opened += "/bucket-" in path
        return super().open_input(path)


@pytest.mark.parametrize("primary_key", [True, False], ids=["primary-key", "append"])
def test_delete_and_update_take_an_expression_and_prune_by_a_filter(tmp_path: Path, primary_key: bool) -> None:
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                        ("name", pa.string())])
    data = pa.table({"id": list(range(20)), "dt": [f"d{i % 4}" for i in range(20)],
                     "name": [f"n{i}" for i in range(20)]}, schema=schema)
    tables = []
    for n in ("expression", "filter"):
        t = mp.create_table(str(tmp_path / n), schema, partition_by=["dt"],
                            primary_key=["id", "dt"] if primary_key else None)
        t.write(data)
        tables.append(t)
    io = OpenedIO()
    by_expression = mp.open_table(tables[0].path, io=io)
    text = "dt = 'd1' AND id % 3 = 0"
    condition = compile_condition(text, schema)
    assert by_expression.delete(condition, prune=pruning_filter(text, schema)) == 1  # d1: 1, 5, 9, 13, 17
    assert io.opened == 1  # the d1 partition's file only
    tables[1].delete([("id", "in", [9])])
    values = {n: e for n, (e, _) in compile_assignments("name = upper(name)", schema).items()}
    by_expression.update(compile_condition("id < 4", schema), set=values)
    tables[1].update([("id", "<", 4)], set={"name": pc.utf8_upper(pc.field("name"))})
    assert by_expression.to_arrow().sort_by("id").equals(tables[1].to_arrow().sort_by("id"))
    with pytest.raises(mp.InvalidArgumentError, match="prune goes with"):
        tables[1].delete([("id", "=", 1)], prune=[("dt", "=", "d1")])


def test_a_wall_clock_time_compares_with_a_text_as_spark_casts_it() -> None:
    """A TIMESTAMP_NTZ column against a text: the text's wall-clock time, no zone (an
    instant column is refused: its text needs the session's zone)."""
    import pyarrow.dataset as ds

    rows = pa.table({"wall": pa.array([datetime.datetime(2025, 1, 2, 11, 59), datetime.datetime(2025, 1, 2, 12),
                                       None], pa.timestamp("ms"))})
    got = ds.dataset(rows).to_table(columns={"c": compile_condition("wall >= '2025-01-02 12:00:00'", rows.schema)})
    assert got.column("c").to_pylist() == [False, True, None]
