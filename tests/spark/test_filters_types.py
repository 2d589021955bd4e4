"""Filter conversion, type mapping, registration and the shim, without a Spark session."""

from __future__ import annotations

import datetime
import decimal
import math
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

pytest.importorskip("pyspark")

from pyspark.sql.datasource import DataSource  # noqa: E402

import minipaimon_core as mp  # noqa: E402
import minipaimon_spark  # noqa: E402
from minipaimon_core.errors import SchemaMismatchError  # noqa: E402
from minipaimon_spark.common.types import (  # noqa: E402
    BatchConformer,
    to_arrow_schema,
    to_spark_schema,
)
from minipaimon_spark.read.filters import convert, split_filters  # noqa: E402
from minipaimon_spark.read.reader import PushdownReader  # noqa: E402
from minipaimon_spark.source import MiniPaimonDataSource  # noqa: E402


# Stand-ins with the names and fields of pyspark's filter classes (4.1+), so the tests run
# on 4.0 too; on 4.1+ the real classes are checked as well.
@dataclass(frozen=True)
class EqualTo:
    attribute: tuple[str, ...]
    value: Any


@dataclass(frozen=True)
class EqualNullSafe(EqualTo):
    pass


@dataclass(frozen=True)
class GreaterThan(EqualTo):
    pass


@dataclass(frozen=True)
class LessThanOrEqual(EqualTo):
    pass


@dataclass(frozen=True)
class In(EqualTo):
    pass


@dataclass(frozen=True)
class StringStartsWith(EqualTo):
    pass


@dataclass(frozen=True)
class IsNull:
    attribute: tuple[str, ...]


@dataclass(frozen=True)
class IsNotNull(IsNull):
    pass


@dataclass(frozen=True)
class Not:
    child: Any


TYPES = {
    "i": pa.int64(), "s": pa.string(), "f": pa.float64(), "b": pa.bool_(),
    "d": pa.date32(), "ts": pa.timestamp("us", tz="UTC"), "ntz": pa.timestamp("us"),
    "dec": pa.decimal128(10, 2), "arr": pa.list_(pa.int64()),
}
UTC = datetime.timezone.utc

CASES: list[tuple[Any, Any]] = [
    (EqualTo(("i",), 3), [("i", "=", 3)]),
    (GreaterThan(("s",), "x"), [("s", ">", "x")]),
    (LessThanOrEqual(("d",), datetime.date(2024, 1, 2)), [("d", "<=", datetime.date(2024, 1, 2))]),
    (EqualTo(("b",), True), [("b", "=", True)]),
    (EqualTo(("dec",), decimal.Decimal("1.50")), [("dec", "=", decimal.Decimal("1.50"))]),
    (EqualTo(("ts",), datetime.datetime(2024, 1, 1, 12)),
     [("ts", "=", datetime.datetime(2024, 1, 1, 12, tzinfo=UTC))]),
    (EqualTo(("ntz",), datetime.datetime(2024, 1, 1, 12)), [("ntz", "=", datetime.datetime(2024, 1, 1, 12))]),
    (EqualTo(("ntz",), datetime.datetime(2024, 1, 1, 12, tzinfo=UTC)), None),  # instant or wall clock?
    (In(("i",), (1, 2)), [("i", "in", [1, 2])]),
    (IsNull(("f",)), [("f", "is null", None)]),
    (IsNotNull(("s",)), [("s", "is not null", None)]),
    (EqualNullSafe(("i",), None), [("i", "is null", None)]),
    (EqualNullSafe(("i",), 4), [("i", "=", 4)]),
    (Not(EqualTo(("i",), 3)), [("i", "!=", 3), ("i", "is not null", None)]),
    (Not(In(("s",), ("a",))), [("s", "not in", ["a"]), ("s", "is not null", None)]),
    (Not(IsNull(("i",))), [("i", "is not null", None)]),
    # refused: Spark keeps these
    (EqualTo(("f",), 1.0), None),  # NaN ordering differs
    (In(("i",), (1, None)), None),  # three-valued IN
    (Not(In(("i",), (1, None))), None),
    (StringStartsWith(("s",), "a"), None),
    (EqualTo(("arr",), [1]), None),
    (EqualTo(("nested", "x"), 1), None),
    (EqualTo(("missing",), 1), None),
    (EqualTo(("i",), "3"), None),  # value of the wrong type
    (Not(GreaterThan(("i",), 3)), None),
    (Not(Not(EqualTo(("i",), 3))), None),
]


@pytest.mark.parametrize(("spark_filter", "expected"), CASES)
def test_convert(spark_filter: Any, expected: Any) -> None:
    assert convert(spark_filter, TYPES) == expected


def test_real_pyspark_filter_classes() -> None:
    datasource = pytest.importorskip("pyspark.sql.datasource")
    if not hasattr(datasource, "EqualTo"):
        pytest.skip("this pyspark has no filter pushdown (4.0)")
    real = [datasource.EqualTo(("i",), 3), datasource.Not(datasource.In(("s",), ("a", "b"))),
            datasource.IsNotNull(("i",)), datasource.StringContains(("s",), "x")]
    accepted, rejected = split_filters(real, TYPES)
    assert accepted == [("i", "=", 3), ("s", "not in", ["a", "b"]), ("s", "is not null", None),
                        ("i", "is not null", None)]
    assert rejected == [real[3]] and rejected[0] is real[3]


def test_split_keeps_unaccepted_filters_by_identity() -> None:
    filters = [EqualTo(("i",), 1), EqualTo(("f",), 1.0), IsNotNull(("i",)), IsNotNull(("i",))]
    accepted, rejected = split_filters(filters, TYPES)
    assert accepted == [("i", "=", 1), ("i", "is not null", None)]
    assert len(rejected) == 1 and rejected[0] is filters[1]


def sql_where(table: pa.Table, column: str, predicate: Any) -> list[int]:
    """Rows a SQL WHERE keeps: those where the predicate is true (not null, not false)."""
    return [r["id"] for r in table.to_pylist() if predicate(r[column]) is True]


def test_pushed_filters_give_sql_results_with_nulls(tmp_path: Path) -> None:
    """Spark does not re-check accepted filters: the core must return exactly SQL's rows."""
    path = str(tmp_path / "t")
    data = pa.table({
        "id": pa.array(range(6), pa.int64()),
        "i": pa.array([1, None, 3, 4, None, 6], pa.int64()),
        "s": pa.array(["a", "b", None, "d", "a", None]),
    })
    mp.create_table(path, data.schema).write(data)
    source = MiniPaimonDataSource({"path": path})
    schema = source.schema()

    def pushed(*filters: Any) -> list[int]:
        reader = PushdownReader(source.reader(schema).options, schema)
        assert list(reader.pushFilters(list(filters))) == []
        out = [b for p in reader.partitions() for b in reader.read(p)]
        return sorted(pa.Table.from_batches(out, to_arrow_schema(schema)).column("id").to_pylist())

    def neq(v: Any, x: Any) -> bool | None:
        return None if v is None else v != x

    assert pushed(Not(EqualTo(("i",), 3))) == sql_where(data, "i", lambda v: neq(v, 3))
    assert pushed(Not(In(("s",), ("a",)))) == sql_where(data, "s", lambda v: neq(v, "a"))
    assert pushed(In(("s",), ("a", "d"))) == [0, 3, 4]
    assert pushed(GreaterThan(("i",), 3)) == [3, 5]
    assert pushed(IsNull(("i",))) == [1, 4]
    assert pushed(EqualNullSafe(("s",), None)) == [2, 5]


def test_float_filters_stay_with_spark_because_of_nan() -> None:
    values = pa.array([1.0, math.nan])
    arrow_says = pc.greater(values, 0.5).to_pylist()
    assert arrow_says == [True, False]  # Spark says [True, True]: NaN is the largest double
    assert convert(GreaterThan(("f",), 0.5), TYPES) is None


# -- types --------------------------------------------------------------------------------


def test_types_round_trip_to_the_schema_spark_expects() -> None:
    table_schema = pa.schema([
        pa.field("id", pa.int64(), nullable=False), pa.field("b", pa.bool_()),
        pa.field("i8", pa.int8()), pa.field("i16", pa.int16()), pa.field("i32", pa.int32()),
        pa.field("f", pa.float32()), pa.field("d", pa.float64()), pa.field("s", pa.string()),
        pa.field("bin", pa.binary()), pa.field("dt", pa.date32()),
        pa.field("dec", pa.decimal128(12, 3)), pa.field("ts", pa.timestamp("us", tz="UTC")),
        pa.field("ntz", pa.timestamp("us")), pa.field("arr", pa.list_(pa.string())),
        pa.field("m", pa.map_(pa.string(), pa.int64())),
        pa.field("st", pa.struct([pa.field("x", pa.int32())])),
    ])
    spark_schema = to_spark_schema(table_schema)
    assert spark_schema.simpleString() == (
        "struct<id:bigint,b:boolean,i8:tinyint,i16:smallint,i32:int,f:float,d:double,"
        "s:string,bin:binary,dt:date,dec:decimal(12,3),ts:timestamp,ntz:timestamp_ntz,"
        "arr:array<string>,m:map<string,bigint>,st:struct<x:int>>"
    )
    assert to_arrow_schema(spark_schema).equals(table_schema)


def test_unsupported_type_names_the_column() -> None:
    with pytest.raises(SchemaMismatchError, match="'u'"):
        to_spark_schema(pa.schema([pa.field("u", pa.uint64())]))


def test_conformer_casts_once_built_schema() -> None:
    target = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("s", pa.string()),
                        pa.field("ts", pa.timestamp("us", tz="UTC"))])
    conform = BatchConformer(target)
    same = pa.RecordBatch.from_pylist([{"id": 1, "s": "a", "ts": None}], schema=target)
    assert conform(same) is same
    other = pa.RecordBatch.from_pydict({
        "s": pa.array(["x"], pa.large_string()), "id": pa.array([2], pa.int64()),
        "ts": pa.array([1_000_000_001], pa.timestamp("ns", tz="Europe/Paris")),
    })
    out = conform(other)
    assert out.schema.equals(target)
    assert out.column("ts").to_pylist()[0] == datetime.datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC)


# -- registration and the shim ---------------------------------------------------------------


class FakeUDTFRegistry:
    def __init__(self) -> None:
        self.names: list[str] = []

    def register(self, name: str, function: object) -> None:
        self.names.append(name)


class FakeSession:
    def __init__(self) -> None:
        self.registered: list[type] = []
        self.settings: dict[str, str] = {}
        self.statements: list[str] = []
        self.dataSource = self
        self.conf = self
        self.udtf = FakeUDTFRegistry()
        self.udf = FakeUDTFRegistry()
        self.sparkContext = type("Context", (), {"defaultParallelism": 2})()

    def register(self, cls: type) -> None:
        self.registered.append(cls)

    def set(self, key: str, value: str) -> None:
        self.settings[key] = value

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.settings.get(key, default)

    def sql(self, statement: str) -> None:
        self.statements.append(statement)


def test_register_adds_the_source_and_enables_pushdown_where_available() -> None:
    session = FakeSession()
    minipaimon_spark.register(session)  # type: ignore[arg-type]
    assert session.registered == [MiniPaimonDataSource]
    assert "minipaimon_compact" in session.udtf.names
    assert any("minipaimon_compact_distributed" in s for s in session.statements)
    from pyspark.sql.datasource import DataSourceReader

    has = hasattr(DataSourceReader, "pushFilters")
    assert session.settings == ({minipaimon_spark.FILTER_PUSHDOWN_CONF: "true"} if has else {})


def test_shim_is_found_like_spark_finds_it_and_is_cheap() -> None:
    """Spark imports every top-level ``pyspark_*`` module found by ``pkgutil.iter_modules``."""
    code = (
        "import pkgutil, importlib, sys\n"
        "names = [m.name for m in pkgutil.iter_modules() if m.name == 'pyspark_minipaimon']\n"
        "mod = importlib.import_module('pyspark_minipaimon')\n"
        "print(names, mod.DefaultSource.name(), 'pyarrow' in sys.modules,"
        " 'minipaimon_core' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd="/", capture_output=True, text=True,
                         check=True).stdout.split()
    assert out[0] == "['pyspark_minipaimon']", (
        "Spark's pkgutil.iter_modules() lookup cannot see pyspark_minipaimon, so auto-registration "
        "fails outside the repository directory: a setuptools editable install must use "
        "`pip install -e . --config-settings editable_mode=compat` (or install non-editable)"
    )
    assert out[1:] == ["minipaimon", "False", "False"]
    import pyspark_minipaimon

    assert issubclass(pyspark_minipaimon.DefaultSource, DataSource)
