"""NaN in filters, pruning and row-level changes (issue 32 item 14): as Spark, Delta and
DuckDB order it, NaN is above every number (+inf included) and equal to itself; a null
still matches no comparison. ``f > 5.0`` keeps NaN rows, ``f = NaN`` finds them."""

from __future__ import annotations

import math
from typing import Any

import pyarrow as pa
import pytest

import minipaimon_core as mp
from minipaimon_core.expressions import predicate
from minipaimon_core.expressions.stats_filter import may_match
from minipaimon_core.format.manifest_file import DataFileMeta, SimpleStats

NAN, INF = math.nan, math.inf
VALUES = [1.0, 6.0, INF, -INF, NAN, None, 5.0, -0.0]


def order(x: float) -> tuple[int, float]:
    """Spark's total order of non-null floats: NaN above +inf, equal to itself."""
    return (1, 0.0) if math.isnan(x) else (0, x)


def holds(x: float | None, op: str, v: Any) -> bool:
    if x is None:
        return False
    if op == "in":
        return any(order(x) == order(w) for w in v if w is not None)
    if op == "not in":
        return None not in v and all(order(x) != order(w) for w in v)
    a, b = order(x), order(v)
    return {"=": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]


LITERALS = [5.0, NAN, INF, -INF, 0.0, 7]
FILTERS = [(op, v) for op in ("=", "!=", "<", "<=", ">", ">=") for v in LITERALS] + [
    ("in", [NAN, 1.0]), ("in", [1.0]), ("in", [NAN]), ("not in", [NAN]), ("not in", [1.0, 6.0]),
    ("not in", [NAN, INF])]


def key(row_value: float | None) -> tuple[int, float]:
    return (2, 0.0) if row_value is None else order(row_value)


@pytest.fixture(params=[pa.float64(), pa.float32()], ids=["double", "float"])
def table(request: pytest.FixtureRequest, tmp_path) -> mp.Table:
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("f", request.param)])
    t = mp.create_table(str(tmp_path / "t"), schema)
    for part in (VALUES[:3], VALUES[3:6], VALUES[6:]):  # three files: one holds NaN
        start = VALUES.index(part[0])
        t.write(pa.table({"id": list(range(start, start + len(part))), "f": part}, schema=schema))
    return t


@pytest.mark.parametrize(("op", "value"), FILTERS, ids=[f"{o} {v}" for o, v in FILTERS])
def test_filters_order_nan_above_every_number(table: mp.Table, op: str, value: Any) -> None:
    got = sorted(table.scan(filter=[("f", op, value)]).to_arrow().column("id").to_pylist())
    want = [i for i, x in enumerate(VALUES) if holds(x, op, value)]
    assert got == want


@pytest.mark.parametrize(("op", "want"), [("<", [0, 1, 2]), ("<=", [0, 1, 2]), ("!=", [0, 1, 2]),
                                          ("=", []), (">", []), (">=", [])])
def test_a_nan_literal_on_an_integer_column_is_above_every_value(tmp_path, op: str, want: list[int]) -> None:
    schema = pa.schema([("id", pa.int64()), ("i", pa.int32())])
    t = mp.create_table(str(tmp_path / "t"), schema)
    t.write(pa.table({"id": [0, 1, 2, 3], "i": [1, -(2**31), 2**31 - 1, None]}, schema=schema))
    assert sorted(t.scan(filter=[("i", op, NAN)]).to_arrow().column("id").to_pylist()) == want


@pytest.mark.parametrize("pk", [None, ["id"]], ids=["append", "primary-key"])
def test_delete_and_update_select_nan_rows_as_a_filter_does(tmp_path, pk: list[str] | None) -> None:
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("f", pa.float64()), ("s", pa.string())])
    t = mp.create_table(str(tmp_path / "t"), schema, primary_key=pk, options={"bucket": "2"} if pk else None)
    t.write(pa.table({"id": range(len(VALUES)), "f": VALUES, "s": ["x"] * len(VALUES)}, schema=schema))
    assert t.update([("f", ">=", INF)], set={"s": "top"}) == 2  # +inf and NaN
    assert t.delete([("f", ">", 5.0)]) == 3  # 6.0, +inf and NaN
    rows = {r["id"]: r for r in t.to_arrow().to_pylist()}
    assert sorted(rows) == [0, 3, 5, 6, 7]
    assert t.update([("f", "=", NAN)], set={"s": "nan"}) == 0
    t.write(pa.table({"id": [9], "f": [NAN], "s": ["x"]}, schema=schema))
    assert t.delete([("f", "=", NAN)]) == 1 and t.delete([("f", "!=", NAN)]) == 4


def _file(name: str, lo: Any, hi: Any, nulls: int = 0, rows: int = 10) -> DataFileMeta:
    return DataFileMeta(fileName=name, fileSize=1, rowCount=rows, minKey=(), maxKey=(),
                        valueStats=SimpleStats((lo,), (hi,), (nulls,)), minSequenceNumber=0,
                        maxSequenceNumber=0, schemaId=0, level=0, creationTime=0)


@pytest.mark.parametrize(("flt", "kept"), [
    ([("f", ">", 5.0)], ["known-high", "unknown", "nan-max", "nan-min"]),
    ([("f", ">", 100.0)], ["unknown", "nan-max", "nan-min"]),
    ([("f", "=", NAN)], ["unknown", "nan-max", "nan-min"]),
    ([("f", ">=", NAN)], ["unknown", "nan-max", "nan-min"]),
    ([("f", ">", NAN)], []),
    ([("f", "<", NAN)], ["known-low", "known-high", "unknown", "nan-max", "nan-min"]),
    ([("f", "!=", NAN)], ["known-low", "known-high", "unknown", "nan-max", "nan-min"]),
    ([("f", "<=", NAN)], ["known-low", "known-high", "unknown", "nan-max", "nan-min"]),
    ([("f", "in", [NAN])], ["unknown", "nan-max", "nan-min"]),
    ([("f", "<", 0.0)], ["unknown", "nan-max", "nan-min"]),
])
def test_stats_pruning_keeps_every_file_that_may_hold_a_matching_nan(flt: Any, kept: list[str]) -> None:
    """What Paimon's writers put in stats for a file with NaN, measured: Java 0.9 and
    minipaimon leave min/max unknown (null), pypaimon 2.1 writes no stats. So a known min
    and max hold no NaN and prune as before; a NaN as min or max (another writer's
    Double.compare order) is not trusted: the file is kept."""
    files = [_file("known-low", 1.0, 4.0), _file("known-high", 1.0, 6.0), _file("unknown", None, None),
             _file("all-null", None, None, nulls=10), _file("nan-max", 1.0, NAN), _file("nan-min", NAN, NAN)]
    schema = pa.schema([("f", pa.float64())])
    dnf = predicate.normalize(flt, schema)
    by_arrays = [f.fileName for f, m in zip(files, may_match(dnf, files, {0: {"f": 0}})) if m]
    per_file = [f.fileName for f in files if predicate.might_match(
        dnf, lambda c, f=f: (f.valueStats.minValues[0], f.valueStats.maxValues[0], f.valueStats.nullCounts[0],
                             f.rowCount))]
    assert by_arrays == per_file == kept


def test_pruned_reads_of_nan_equal_unpruned_ones(tmp_path) -> None:
    """Files written by minipaimon: those without NaN keep their min/max and are pruned."""
    schema = pa.schema([("id", pa.int64()), ("f", pa.float64())])
    t = mp.create_table(str(tmp_path / "t"), schema)
    for k in range(6):
        part = [float(k * 10 + j) for j in range(5)] + ([NAN] if k == 3 else [])
        t.write(pa.table({"id": list(range(k * 10, k * 10 + len(part))), "f": part}, schema=schema))
    planned = {op: sum(len(s.files) for s in t.scan(filter=[("f", op, NAN)]).plan()) for op in ("=", "<")}
    assert planned == {"=": 1, "<": 6}  # only the file with NaN can hold one
    assert t.scan(filter=[("f", "=", NAN)]).to_arrow().column("id").to_pylist() == [35]
    assert t.scan(filter=[("f", ">", 54.0)]).to_arrow().column("id").to_pylist() == [35]
    assert sum(len(s.files) for s in t.scan(filter=[("f", ">", 54.0)]).plan()) == 1  # NaN-free files pruned


def test_a_merge_joined_on_a_float_column_matches_nan_with_nan(tmp_path) -> None:
    """NaN equals NaN in the join (Arrow's hash join, Spark's order): the source's bounds
    that prune the target hold NaN as their top, so a NaN target row is read and matched
    (a primary-key table's target is read with the bounds applied exactly)."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("f", pa.float64()), ("s", pa.string())])
    t = mp.create_table(str(tmp_path / "t"), schema, primary_key=["id"])
    t.write(pa.table({"id": [1, 2, 3], "f": [1.0, 2.0, NAN], "s": ["one", "two", "nan"]}, schema=schema))
    source = pa.table({"f": [NAN, 1.0], "s": ["NAN!", "ONE!"]})
    r = t.merge(source, on="f").when_matched_update(set={"s": "source.s"}).execute()
    assert (r.inserted, r.updated, r.deleted) == (0, 2, 0)
    assert t.to_arrow().sort_by("id").column("s").to_pylist() == ["ONE!", "two", "NAN!"]


@pytest.mark.parametrize(("op", "values", "want"), [("in", [0.0], [0, 1]), ("in", [-0.0], [0, 1]),
                                                    ("not in", [-0.0, NAN], [3]), ("=", -0.0, [0, 1])])
def test_minus_zero_equals_zero_in_every_comparison(tmp_path, op: str, values: Any, want: list[int]) -> None:
    """Found by the model test: Arrow's is_in told -0.0 from 0.0 where = does not."""
    schema = pa.schema([("id", pa.int64()), ("f", pa.float32())])
    t = mp.create_table(str(tmp_path / "t"), schema)
    t.write(pa.table({"id": [0, 1, 2, 3], "f": [0.0, -0.0, NAN, 1.0]}, schema=schema))
    assert sorted(t.scan(filter=[("f", op, values)]).to_arrow().column("id").to_pylist()) == want
