"""Spark's default decimal(38,18) and wide decimal keys round-trip through minipaimon."""

from __future__ import annotations

import decimal
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")

import minipaimon_core as mp  # noqa: E402

D = decimal.Decimal


@pytest.mark.smoke
def test_default_decimal_38_18_holds_18_45(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    df = spark.createDataFrame([(1, D("18.45")), (2, D("-12345678901234567890.000000000000000001")), (3, None)],
                               "id long, x decimal(38,18)")
    df.write.format("minipaimon").mode("append").save(path)
    back = spark.read.format("minipaimon").load(path)
    assert str(back.schema["x"].dataType) == "DecimalType(38,18)"
    got = {r["id"]: r["x"] for r in back.collect()}
    assert got == {1: D("18.45"), 2: D("-12345678901234567890.000000000000000001"), 3: None}
    assert [r["id"] for r in back.filter("x = 18.45").collect()] == [1]
    assert sorted(r["id"] for r in back.filter("x < 100").collect()) == [1, 2]
    assert mp.open_table(path).scan(filter=[("x", "=", D("18.45"))]).to_arrow().num_rows == 1


def test_wide_decimal_primary_key(spark: Any, tmp_path: Path, pushdown: None) -> None:
    path = str(tmp_path / "t")
    big = D("123456789012345678901234567890")
    opts = {"primary-key": "k", "bucket": "2"}
    first = spark.createDataFrame([(big, 1), (big.copy_negate(), 2), (D(7), 3)], "k decimal(30,0), v long")
    first.write.format("minipaimon").mode("append").options(**opts).save(path)
    spark.createDataFrame([(big, 10)], "k decimal(30,0), v long").write.format("minipaimon") \
        .mode("append").save(path)
    back = spark.read.format("minipaimon").load(path)
    assert {r["k"]: r["v"] for r in back.collect()} == {big: 10, big.copy_negate(): 2, D(7): 3}
    assert [r["v"] for r in back.filter(f"k = {big}").collect()] == [10]
