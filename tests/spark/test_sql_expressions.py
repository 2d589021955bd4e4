"""The procedures' Spark SQL expressions (minipaimon_core.expressions.sql_compiler) against
Spark itself: every construct they cover, evaluated by Spark and by the core over the same
rows, gives the same values (and fails where Spark fails); and the procedures take them:
``UPDATE ... SET name = upper(name) WHERE id % 3 = 0`` as ``minipaimon_update``."""

from __future__ import annotations

import datetime
import math
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds
import pytest

pytest.importorskip("pyspark")

from chispa import assert_df_equality  # noqa: E402

import minipaimon_core as mp  # noqa: E402
from minipaimon_core.expressions.sql_compiler import compile_assignments, compile_condition  # noqa: E402

ROWS = pa.table({
    "id": pa.array([0, 1, 2, 3, 4, 5, 6], pa.int64()),
    "b": pa.array([5, -7, 0, 100, None, 7, -3], pa.int32()),
    "s": pa.array([1, 2, -3, None, 4, 5, 6], pa.int16()),
    "f": [1.5, float("nan"), None, -2.0, 3.25, 0.0, 12345.678],
    "d": pa.array([Decimal("1.10"), Decimal("-2.55"), None, Decimal("0.00"), Decimal("99.99"),
                   Decimal("5.05"), Decimal("-0.01")], pa.decimal128(10, 2)),
    "name": ["ab", "Cd", None, " x y ", "Éé", "", "50%_off"],
    "dt": pa.array([datetime.date(2025, 1, d) for d in (1, 2, 3, 4, 5, 6, 7)]),
})

CONDITIONS = [
    "id % 3 = 0", "b > 0 AND s < 5", "b > 0 OR s IS NULL", "NOT (b < 0)", "b <=> NULL", "s <=> 2",
    "f > 1", "f = 'NaN'", "f < 2", "f >= 0", "f != 1.5", "d > 1", "d = 1.1", "d < '0.5'",
    "dt >= '2025-01-03'", "dt = DATE '2025-01-02'", "b BETWEEN -10 AND 5", "id NOT BETWEEN 2 AND 4",
    "name LIKE 'a%'", "name LIKE '%\\\\%\\\\_%'", "name NOT LIKE '_b'", "id IN (1, 3, NULL)",
    "id NOT IN (1, NULL)", "b IN (5, 100)", "upper(name) = 'AB'", "length(trim(name)) = 3",
    "CASE WHEN b > 0 THEN 'p' WHEN b < 0 THEN 'n' END = 'p'", "CASE s WHEN 1 THEN TRUE ELSE FALSE END",
    "b * 1.1 > 5", "coalesce(b, 0) = 0", "nullif(b, 5) IS NULL", "if(b > 0, s, -s) > 1",
    "substr(name, 2) = 'b'", "abs(s) = 3", "b DIV 2 = 2", "s / 2 > 0.9", "name || 'x' = 'abx'",
    "concat(name, id) = 'ab0'", "replace(name, 'a', 'A') = 'Ab'", "CAST(d AS INT) = 1", "id = '3'",
    "d / 4 > 0.27", "s / 3 * 3 = s", "concat(name, 'x''y', \"z\") = 'abx\\'yz'", "concat(name, 'x' 'y') = 'abxy'", "name = 'a\\tb'",
]

VALUES = {  # SET value -> the column it is stored into (Spark: CAST(value AS type), ANSI)
    "upper(name)": "name", "lower(name)": "name", "concat(name, '!', id)": "name",
    "substring(name, -2, 1)": "name", "substring(name, 2, 2)": "name", "substr(name, 0, 1)": "name",
    "trim(name)": "name", "ltrim(name)": "name", "rtrim(name)": "name", "name || s": "name",
    "CAST(dt AS STRING)": "name", "CAST(d AS STRING)": "name",
    "b * 1.1": "b", "b + s": "b", "s - 10": "s", "b % 3": "b", "-b": "b", "d * 2": "d", "d + 0.005": "d",
    "f * 2": "f", "b / 4": "f", "s / 0.25": "f", "CASE WHEN b > 0 THEN d ELSE 0 END": "d",
    "coalesce(s, 0)": "s", "d": "b", "f": "d",
    "CAST(f AS DECIMAL(10,1))": "d", "length(name)": "s", "abs(d)": "d", "d / 3": "d", "s / 0.5": "d",
    "1.0 / 3": "d", "d / 7": "f",
}


def spark_values(spark: Any, exprs: list[str]) -> pa.Table:
    df = spark.createDataFrame(ROWS.select(["id", "b", "s", "f", "d", "name", "dt"]))
    return df.selectExpr("id", *[f"{e} AS c{i}" for i, e in enumerate(exprs)]).toArrow().sort_by("id")


def same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    return bool(a == b)


def test_conditions_select_what_spark_selects(spark: Any) -> None:
    want = spark_values(spark, CONDITIONS)
    got = ds.dataset(ROWS).to_table(columns={f"c{i}": compile_condition(c, ROWS.schema)
                                             for i, c in enumerate(CONDITIONS)})
    for i, condition in enumerate(CONDITIONS):
        assert got.column(f"c{i}").to_pylist() == want.column(f"c{i}").to_pylist(), condition


def test_values_are_what_spark_stores(spark: Any) -> None:
    exprs = list(VALUES)
    types = {c: spark.createDataFrame(ROWS.slice(0, 0)).schema[c].dataType.simpleString() for c in VALUES.values()}
    want = spark_values(spark, [f"CAST({e} AS {types[VALUES[e]]})" for e in exprs])
    for i, e in enumerate(exprs):
        text = f"{VALUES[e]} = {e}"
        ((_, (expression, _)),) = compile_assignments(text, ROWS.schema).items()
        got = ds.dataset(ROWS).to_table(columns={"v": expression}).column("v").to_pylist()
        expected = want.column(f"c{i}").to_pylist()
        assert all(same(a, b) for a, b in zip(got, expected)), (text, got, expected)


@pytest.mark.parametrize("value", ["b * 2147483647", "s / 0", "CAST(name AS INT)", "b + 2147483647"])
def test_values_fail_where_spark_fails(spark: Any, value: str) -> None:
    from pyspark.errors import PySparkException

    with pytest.raises(PySparkException):
        spark_values(spark, [f"CAST({value} AS INT)"])
    ((_, (expression, _)),) = compile_assignments(f"b = {value}", ROWS.schema).items()
    with pytest.raises(pa.ArrowException):
        ds.dataset(ROWS).to_table(columns={"v": expression})


SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    pa.field("name", pa.string()), pa.field("b", pa.int32())])


def test_update_set_name_upper_where_id_mod_3_as_spark_sql(spark: Any, tmp_path: Path) -> None:
    """The issue's statement through the procedure, equal to the same UPDATE evaluated by
    Spark on the rows (a DataFrame); then a delete with a function in its condition."""
    from pyspark.sql import functions as F

    import minipaimon_spark

    minipaimon_spark.register(spark)
    for primary_key in (True, False):
        t = mp.create_table(str(tmp_path / str(primary_key)), SCHEMA, partition_by=["dt"],
                            primary_key=["id", "dt"] if primary_key else None)
        t.write(pa.table({"id": list(range(12)), "dt": [f"d{i % 2}" for i in range(12)],
                          "name": [f"n{i}" for i in range(12)], "b": list(range(12))}, schema=SCHEMA))
        before = spark.createDataFrame(t.to_arrow())
        row = spark.sql(f"SELECT * FROM minipaimon_update('{t.path}', 'name = upper(name), b = b * 1.1', "
                        "'id % 3 = 0')").collect()[0]
        assert row.rows_updated == 4
        hit = F.col("id") % 3 == 0
        want = before.withColumn("name", F.when(hit, F.upper("name")).otherwise(F.col("name"))) \
            .withColumn("b", F.when(hit, (F.col("b") * 1.1).cast("int")).otherwise(F.col("b")))
        got = spark.createDataFrame(mp.open_table(t.path).to_arrow())
        assert_df_equality(got, want, ignore_row_order=True, ignore_nullable=True)
        spark.sql(f"SELECT * FROM minipaimon_delete('{t.path}', \"dt = 'd1' AND length(name) > 2\")").collect()
        assert sorted(mp.open_table(t.path).to_arrow().column("id").to_pylist()) == list(range(11))  # n11 went
