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


BIG = D("123456789012345678901234567890")


def _wide_key_table(spark: Any, path: str) -> Any:
    opts = {"primary-key": "k", "bucket": "2"}
    first = spark.createDataFrame([(BIG, 1), (BIG.copy_negate(), 2), (D(7), 3)], "k decimal(30,0), v long")
    first.write.format("minipaimon").mode("append").options(**opts).save(path)
    spark.createDataFrame([(BIG, 10)], "k decimal(30,0), v long").write.format("minipaimon") \
        .mode("append").save(path)
    return spark.read.format("minipaimon").load(path)


def test_wide_decimal_primary_key(spark: Any, tmp_path: Path) -> None:
    back = _wide_key_table(spark, str(tmp_path / "t"))
    assert {r["k"]: r["v"] for r in back.collect()} == {BIG: 10, BIG.copy_negate(): 2, D(7): 3}


def test_core_filter_on_wide_key_written_by_spark(spark: Any, tmp_path: Path) -> None:
    _wide_key_table(spark, str(tmp_path / "t"))
    assert mp.open_table(str(tmp_path / "t")).scan(filter=[("k", "=", BIG)]).to_arrow().column("v").to_pylist() == [10]


def test_pushed_filter_on_a_30_digit_decimal(spark: Any, tmp_path: Path, pushdown: None) -> None:
    back = _wide_key_table(spark, str(tmp_path / "t"))
    assert [r["v"] for r in back.filter(f"k = {BIG}").collect()] == [10]


def test_narrower_decimals_write_into_a_wider_column(spark: Any, tmp_path: Path) -> None:
    """decimal(3,2) (what Decimal("1.25") infers) into DECIMAL(10,2), by a batch write and
    by the streaming sink; decimal(5,3) would lose a digit and is refused."""
    import pyarrow as pa

    wide = pa.schema([pa.field("id", pa.int64(), nullable=False), ("x", pa.decimal128(10, 2))])
    dst = mp.create_table(str(tmp_path / "dst"), wide)
    df = spark.createDataFrame([(1, D("1.25")), (2, D("-9.99"))], "id long, x decimal(3,2)")
    df.write.format("minipaimon").mode("append").save(dst.path)
    src = mp.create_table(str(tmp_path / "src"), pa.schema([("id", pa.int64()), ("x", pa.decimal128(3, 2))]))
    src.write(pa.table({"id": [3], "x": pa.array([D("0.01")], pa.decimal128(3, 2))}))
    query = (spark.readStream.format("minipaimon").load(src.path).writeStream.format("minipaimon")
             .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start(dst.path))
    query.awaitTermination(120)
    assert query.exception() is None
    got = {r["id"]: r["x"] for r in mp.open_table(dst.path).to_arrow().to_pylist()}
    assert got == {1: D("1.25"), 2: D("-9.99"), 3: D("0.01")}
    lossy = spark.createDataFrame([(4, D("1.125"))], "id long, x decimal(5,3)")
    with pytest.raises(Exception, match="SchemaMismatchError"):
        lossy.write.format("minipaimon").mode("append").save(dst.path)
    assert len(mp.open_table(dst.path).snapshots()) == 2
