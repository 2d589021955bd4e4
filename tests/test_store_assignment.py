"""Spark's store assignment (minipaimon_core.expressions.store_assignment), the one rule
behind ``minipaimon_spark.merge`` (Arrow values), the SQL procedures' SET values (Arrow
expressions) and ``MiniPaimonTable`` (Spark's types mapped to it). The cases are Spark 4's
INSERT into a Parquet table, measured (tests/spark/test_sql_expressions.py checks them
against Spark itself): a table of (values, column type) -> stored values or the error."""

from __future__ import annotations

import datetime
from decimal import Decimal

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pytest

from minipaimon_core.errors import InvalidArgumentError, SchemaMismatchError
from minipaimon_core.expressions.sql_compiler import compile_assignments
from minipaimon_core.expressions.store_assignment import assignable, nulls_non_finite, store_values

D = Decimal
NAN, INF = float("nan"), float("inf")

# (source type, values, column type, what Spark's INSERT stores)
STORED = [
    (pa.float64(), [990.0000000000001, -3.7, None], pa.int32(), [990, -3, None]),  # cut toward zero
    (pa.float64(), [2147483647.9], pa.int32(), [2147483647]),
    (pa.decimal128(12, 1), [D("990.0"), D("-3.7")], pa.int32(), [990, -3]),
    (pa.int64(), [7, -2], pa.decimal128(5, 2), [D("7.00"), D("-2.00")]),
    (pa.decimal128(6, 3), [D("1.005"), D("-1.005")], pa.decimal128(5, 2), [D("1.01"), D("-1.01")]),  # HALF_UP
    (pa.decimal128(5, 3), [D("99.995")], pa.decimal128(5, 2), [D("100.00")]),  # rounds up to a new digit
    (pa.int64(), [2**40 + 1], pa.float32(), [float(2**40)]),  # the nearest value
    (pa.int64(), [2**53 + 1], pa.float64(), [float(2**53)]),
    (pa.float64(), [1e300], pa.float32(), [INF]),
    (pa.decimal128(30, 3), [D("12345678901234567890123.456")], pa.float64(), [1.2345678901234568e22]),
    # a double into a DECIMAL: its shortest text, HALF_UP (binary 1.005 is 1.00499...: still 1.01)
    (pa.float64(), [1.005, 2.675, 0.125, -1.005, 1.015, 1.5, None], pa.decimal128(5, 2),
     [D("1.01"), D("2.68"), D("0.13"), D("-1.01"), D("1.02"), D("1.50"), None]),
    (pa.float64(), [NAN, INF, -INF], pa.decimal128(5, 2), [None, None, None]),  # no decimal: null
    (pa.float32(), [1.005], pa.decimal128(5, 2), [D("1.00")]),  # widened to 1.0049999952316284 first
    (pa.float64(), [0.1 + 0.2, 1e-5, 2e-44], pa.decimal128(20, 18),
     [D("0.300000000000000040"), D("0.000010000000000000"), D("0E-18")]),
    (pa.float64(), [5e37], pa.decimal128(38, 0), [D("5" + "0" * 37)]),
    (pa.int32(), [1, None], pa.string(), ["1", None]),
    (pa.bool_(), [True, False], pa.string(), ["true", "false"]),
    (pa.decimal128(10, 8), [D("0.00000010"), D("0"), D("-12.5")], pa.string(),
     ["0.00000010", "0.00000000", "-12.50000000"]),  # plainly, every digit of the scale
    (pa.date32(), [datetime.date(2024, 1, 2)], pa.string(), ["2024-01-02"]),
    (pa.large_string(), ["x"], pa.string(), ["x"]),
    (pa.date32(), [datetime.date(1969, 12, 31)], pa.timestamp("us"), [datetime.datetime(1969, 12, 31)]),
    (pa.timestamp("us"), [datetime.datetime(2024, 1, 2, 10), datetime.datetime(1969, 12, 31, 23, 59)],
     pa.date32(), [datetime.date(2024, 1, 2), datetime.date(1969, 12, 31)]),
    (pa.null(), [None], pa.int32(), [None]),
]


@pytest.mark.parametrize(("source", "values", "column", "want"), STORED)
def test_values_are_stored_as_spark_insert_stores_them(source: pa.DataType, values: list, column: pa.DataType,
                                                       want: list) -> None:
    got = store_values(pa.array(values, source), column, "merge")
    assert got.type == column and _same(got.to_pylist(), want)


@pytest.mark.parametrize(("source", "values", "column", "want"), [c for c in STORED if c[0] != pa.null()])
def test_the_procedures_expressions_store_the_same(source: pa.DataType, values: list, column: pa.DataType,
                                                   want: list) -> None:
    """The SQL procedures' SET value (an Arrow expression) stores what the arrays path does."""
    schema = pa.schema([("x", source), ("c", column)])
    ((_, (expression, _)),) = compile_assignments("c = x", schema).items()
    rows = pa.table({"x": pa.array(values, source), "c": pa.nulls(len(values), column)})
    got = ds.dataset(rows).to_table(columns={"v": expression}).column("v")
    assert _same(got.to_pylist(), want)


@pytest.mark.parametrize(("source", "values", "column"), [
    (pa.int64(), [2**40], pa.int32()),
    (pa.float64(), [NAN], pa.int32()),
    (pa.float32(), [INF], pa.int32()),
    (pa.float64(), [2147483648.0], pa.int32()),
    (pa.float64(), [1e20], pa.int64()),
    (pa.decimal128(6, 1), [D("12345.6")], pa.decimal128(5, 2)),
    (pa.int32(), [12345], pa.decimal128(5, 2)),
    (pa.float64(), [1e20], pa.decimal128(5, 2)),
    (pa.float64(), [999.995], pa.decimal128(5, 2)),  # rounds to 1000.00: one digit too many
    (pa.float64(), [1e38], pa.decimal128(38, 0)),
])
def test_a_value_out_of_the_columns_range_fails(source: pa.DataType, values: list, column: pa.DataType) -> None:
    # ANSI: an error (Spark's CAST_OVERFLOW_IN_TABLE_INSERT), not a wrapped or null value
    with pytest.raises(InvalidArgumentError, match="store assignment"):
        store_values(pa.array(values, source), column, "merge")


@pytest.mark.parametrize(("source", "column", "says"), [
    (pa.string(), pa.int32(), "not stored into a INT column"),          # Spark refuses these
    (pa.bool_(), pa.int32(), "not stored into a INT column"),
    (pa.date32(), pa.int32(), "not stored into a INT column"),
    (pa.int32(), pa.bool_(), "not stored into a BOOLEAN column"),
    (pa.string(), pa.binary(), "not stored into a BINARY column"),
    (pa.float64(), pa.string(), "Spark's digits differ"),               # Spark stores these, not reproduced
    (pa.binary(), pa.string(), "not supported here"),
    (pa.timestamp("us", tz="UTC"), pa.date32(), "session time zone"),
    (pa.date32(), pa.timestamp("us", tz="UTC"), "session time zone"),
    (pa.timestamp("us"), pa.timestamp("us", tz="UTC"), "session time zone"),
])
def test_a_type_the_rule_does_not_store_is_refused(source: pa.DataType, column: pa.DataType, says: str) -> None:
    with pytest.raises(SchemaMismatchError, match=says):
        store_values(pa.nulls(1, source), column, "merge")


@pytest.mark.parametrize(("source", "column"), [
    (pa.timestamp("ms"), pa.timestamp("us")),                            # one kind, another unit
    (pa.list_(pa.int32()), pa.list_(pa.int64())),                        # nested: element by element
])
def test_the_columns_own_kind_is_left_to_the_exact_conversion(source: pa.DataType, column: pa.DataType) -> None:
    values = pa.nulls(2, source)
    assert store_values(values, column, "merge") is values


def _list(t: pa.DataType, nullable: bool = True) -> pa.DataType:
    return pa.list_(pa.field("element", t, nullable))


@pytest.mark.parametrize(("source", "column", "stored"), [
    (pa.int32(), pa.int64(), True), (pa.int64(), pa.int32(), True), (pa.float64(), pa.int32(), True),
    (pa.decimal128(10, 2), pa.int32(), True), (pa.string(), pa.int32(), False), (pa.int32(), pa.string(), True),
    (pa.bool_(), pa.int32(), False), (pa.bool_(), pa.string(), True), (pa.date32(), pa.timestamp("us", "UTC"), True),
    (pa.timestamp("us"), pa.timestamp("us", "UTC"), True), (pa.string(), pa.date32(), False),
    (pa.binary(), pa.string(), True), (pa.string(), pa.binary(), False), (pa.large_binary(), pa.binary(), True),
    (pa.duration("us"), pa.string(), True), (pa.null(), _list(pa.int32()), True),
    (_list(pa.int32()), _list(pa.int64()), True), (_list(pa.string()), _list(pa.int32()), False),
    (_list(pa.int32()), _list(pa.int64(), False), False), (_list(pa.int32(), False), _list(pa.int64()), True),
    (_list(pa.int32()), pa.string(), False),
    (pa.struct([("a", pa.int32())]), pa.struct([("x", pa.int64())]), True),  # by position, as Spark
    (pa.struct([("a", pa.int32())]), pa.struct([("a", pa.int32()), ("b", pa.int32())]), False),
    (pa.map_(pa.string(), pa.int32()), pa.map_(pa.string(), pa.float64()), True),
])
def test_which_types_are_stored(source: pa.DataType, column: pa.DataType, stored: bool) -> None:
    # what Spark's INSERT accepts at analysis (tests/spark/test_minipaimon_table.py asks Spark)
    assert assignable(source, column) is stored


def test_only_a_float_into_a_decimal_stores_a_nan_as_null() -> None:
    assert nulls_non_finite(pa.float64(), pa.decimal128(5, 2)) and nulls_non_finite(pa.float32(), pa.decimal128(5, 2))
    assert not nulls_non_finite(pa.float64(), pa.int32()) and not nulls_non_finite(pa.decimal128(5, 2), pa.float64())


def test_the_arrays_path_keeps_chunks_and_order() -> None:
    values = pa.chunked_array([pa.array([1.5, 2.5]), pa.array([-3.9])])
    assert store_values(values, pa.int32(), "merge").to_pylist() == [1, 2, -3]
    assert pc.equal(store_values(values, pa.float64(), "merge"), values).to_pylist() == [True] * 3


def _same(got: list, want: list) -> bool:
    return len(got) == len(want) and all(a == b or (a != a and b != b) for a, b in zip(got, want))
