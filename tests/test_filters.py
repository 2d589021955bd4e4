"""Filters: exact literals in the finer unit, SQL three-valued logic, typed errors."""

from __future__ import annotations

import datetime
import decimal

import pyarrow as pa
import pytest

import minipaimon_core as mp

UTC = datetime.timezone.utc


def _table(tmp_path, data: pa.Table, **kw) -> mp.Table:
    t = mp.create_table(str(tmp_path / "t"), data.schema, **kw)
    t.write(data)
    return t


def test_date_column_with_datetime_literal_keeps_matching_file(tmp_path):
    d = pa.table({"x": pa.array([datetime.date(2024, 1, 1)], pa.date32())})
    t = _table(tmp_path, d)
    got = t.scan(filter=[("x", "<", datetime.datetime(2024, 1, 1, 12))]).to_arrow()
    assert got.num_rows == 1
    assert t.scan(filter=[("x", ">", datetime.datetime(2024, 1, 1, 12))]).to_arrow().num_rows == 0
    assert t.scan(filter=[("x", ">=", datetime.datetime(2023, 12, 31, 0, 0, 1))]).to_arrow().num_rows == 1
    assert t.scan(filter=[("x", "=", datetime.datetime(2024, 1, 1, 0, 0))]).to_arrow().num_rows == 1
    assert t.scan(filter=[("x", "=", datetime.datetime(2024, 1, 1, 0, 1))]).to_arrow().num_rows == 0
    assert t.scan(filter=[("x", "!=", datetime.datetime(2024, 1, 1, 0, 1))]).to_arrow().num_rows == 1


def test_millisecond_column_with_microsecond_literal_keeps_matching_file(tmp_path):
    d = pa.table({"x": pa.array([1000], pa.timestamp("ms"))})  # 1970-01-01 00:00:01
    t = _table(tmp_path, d)
    lit = datetime.datetime(1970, 1, 1, 0, 0, 1, 1)  # one microsecond later
    assert t.scan(filter=[("x", "<", lit)]).to_arrow().num_rows == 1
    assert t.scan(filter=[("x", ">=", lit)]).to_arrow().num_rows == 0
    assert t.scan(filter=[("x", "in", [lit])]).to_arrow().num_rows == 0
    assert t.scan(filter=[("x", "not in", [lit])]).to_arrow().num_rows == 1


def test_in_with_null_never_matches_null_rows_in_any_file(tmp_path):
    t = mp.create_table(str(tmp_path / "t"), pa.schema([("x", pa.string())]))
    t.write(pa.table({"x": ["z", None]}))
    t.write(pa.table({"x": pa.array([None, None], pa.string())}))
    assert t.scan(filter=[("x", "in", ["z", None])]).to_arrow().column("x").to_pylist() == ["z"]
    assert t.scan(filter=[("x", "in", [None])]).to_arrow().num_rows == 0
    # NOT IN with a NULL is unknown or false for every row (SQL): no row matches
    assert t.scan(filter=[("x", "not in", ["y", None])]).to_arrow().num_rows == 0
    assert t.scan(filter=[("x", "not in", [None])]).to_arrow().num_rows == 0
    assert t.scan(filter=[("x", "not in", ["y"])]).to_arrow().column("x").to_pylist() == ["z"]


def test_literal_out_of_the_column_range_is_evaluated_exactly(tmp_path):
    t = _table(tmp_path, pa.table({"id": pa.array([1, None, 3], pa.int64())}))
    assert t.scan(filter=[("id", ">", 2**70)]).to_arrow().num_rows == 0
    assert t.scan(filter=[("id", "<", 2**70)]).to_arrow().num_rows == 2
    assert t.scan(filter=[("id", ">=", -(2**70))]).to_arrow().num_rows == 2
    assert t.scan(filter=[("id", "=", 2**70)]).to_arrow().num_rows == 0
    assert t.scan(filter=[("id", "!=", 2**70)]).to_arrow().num_rows == 2
    assert t.scan(filter=[("id", "in", [2**70, 3])]).to_arrow().column("id").to_pylist() == [3]
    assert t.scan(filter=[("id", "<", 1.5)]).to_arrow().column("id").to_pylist() == [1]
    assert t.scan(filter=[("id", ">", 1.5)]).to_arrow().column("id").to_pylist() == [3]


def test_int_and_decimal_literals_on_a_decimal_column_are_exact(tmp_path):
    ty = pa.decimal128(10, 2)
    t = _table(tmp_path, pa.table({"d": pa.array([decimal.Decimal("1.50"), decimal.Decimal("2.00")], ty)}))
    assert t.scan(filter=[("d", ">", 1)]).to_arrow().num_rows == 2
    assert t.scan(filter=[("d", "=", 2)]).to_arrow().num_rows == 1
    assert t.scan(filter=[("d", "<", decimal.Decimal("1.505"))]).to_arrow().num_rows == 1
    assert t.scan(filter=[("d", "=", decimal.Decimal("1.505"))]).to_arrow().num_rows == 0
    assert t.scan(filter=[("d", "<", 10**20)]).to_arrow().num_rows == 2


def test_float32_column_with_double_literal(tmp_path):
    t = _table(tmp_path, pa.table({"f": pa.array([0.1], pa.float32())}))
    f32 = t.to_arrow().column("f")[0].as_py()  # 0.10000000149...
    assert f32 > 0.1
    assert t.scan(filter=[("f", "=", 0.1)]).to_arrow().num_rows == 0
    assert t.scan(filter=[("f", ">", 0.1)]).to_arrow().num_rows == 1
    assert t.scan(filter=[("f", "<=", 0.1)]).to_arrow().num_rows == 0


@pytest.mark.parametrize("schema, filter, words", [
    (pa.schema([("ts", pa.timestamp("us", "UTC"))]), [("ts", "<", datetime.datetime(2024, 1, 1))], ["ts", "2024"]),
    (pa.schema([("ts", pa.timestamp("us"))]), [("ts", "<", datetime.datetime(2024, 1, 1, tzinfo=UTC))], ["ts"]),
    (pa.schema([("s", pa.struct([("a", pa.int64())]))]), [("s", "=", {"a": 1})], ["'s'", "nested"]),
    (pa.schema([("id", pa.int64())]), [("id", "=", "x")], ["'id'", "'x'"]),
    (pa.schema([("id", pa.int64())]), [("id", "=", True)], ["'id'"]),
    (pa.schema([("d", pa.decimal128(10, 2))]), [("d", "=", "1.5")], ["'d'"]),
])
def test_unfit_literals_are_typed_errors_naming_column_and_literal(tmp_path, schema, filter, words):
    t = mp.create_table(str(tmp_path / "t"), schema)
    with pytest.raises(mp.InvalidArgumentError) as e:
        t.scan(filter=filter).to_arrow()
    for w in words:
        assert w in str(e.value)


def test_struct_column_supports_null_tests(tmp_path):
    ty = pa.struct([("a", pa.int64())])
    t = _table(tmp_path, pa.table({"s": pa.array([{"a": 1}, None], ty)}))
    assert t.scan(filter=[("s", "is null")]).to_arrow().num_rows == 1
    assert t.scan(filter=[("s", "is not null")]).to_arrow().num_rows == 1


def test_arrow_scalars_as_literals(tmp_path):
    t = _table(tmp_path, pa.table({"s": ["a", "b"], "n": pa.array([1, 2], pa.int16())}))
    assert t.scan(filter=[("s", "=", pa.scalar("b"))]).to_arrow().num_rows == 1
    assert t.scan(filter=[("n", ">", pa.scalar(1.5))]).to_arrow().num_rows == 1


def test_huge_literals_on_float_columns(tmp_path):
    inf = float("inf")
    t = _table(tmp_path, pa.table({"f": pa.array([1.0, inf, None], pa.float32()),
                                   "g": pa.array([1.0, inf, None], pa.float64())}))
    for c in ("f", "g"):
        assert t.scan(filter=[(c, "<", 10**400)]).to_arrow().num_rows == 1
        assert t.scan(filter=[(c, ">", 10**400)]).to_arrow().num_rows == 1  # inf
        assert t.scan(filter=[(c, "=", 10**400)]).to_arrow().num_rows == 0
        assert t.scan(filter=[(c, ">", -(10**400))]).to_arrow().num_rows == 2


def test_sql_and_python_spellings_of_equal_and_not_equal(tmp_path):
    """Issue 38 item 13: ``<>`` is ``!=`` and ``==`` is ``=``; any other operator is refused
    with the list of operators."""
    t = mp.create_table(str(tmp_path / "t"), pa.schema([("id", pa.int64()), ("s", pa.string())]))
    t.write(pa.table({"id": [1, 2, 3], "s": ["a", "b", None]}))

    def ids(f):
        return sorted(t.scan(filter=f).to_arrow().column("id").to_pylist())

    assert ids([("s", "<>", "a")]) == ids([("s", "!=", "a")]) == [2]
    assert ids([("s", "==", "a")]) == ids([("s", "=", "a")]) == [1]
    with pytest.raises(mp.InvalidArgumentError, match=r"unknown filter operator '=>'.*operators are "
                       r"=, == \(the same\), !=, <> \(the same\), <, <=, >, >=, in, \"not in\""):
        t.scan(filter=[("id", "=>", 1)])
