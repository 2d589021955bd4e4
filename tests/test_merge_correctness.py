"""Merge results that must not depend on flush or compaction timing (issue 15 items 7, 8,
10b, 13: sequence.field tombstones, product retractions, decimal sum overflow, an
unchanged NaN in a full-compaction changelog)."""

from __future__ import annotations

from decimal import Decimal

import pyarrow as pa
import pytest

import minipaimon_core as mp
from minipaimon_core.stream.stream import StreamOffset, StreamScanner

KV = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.int64()), ("ts", pa.int64())])


def kv(ids, vs, ts, kinds=None):
    cols = {"id": ids, "v": vs, "ts": ts}
    schema = KV
    if kinds is not None:
        cols["_row_kind"] = kinds
        schema = KV.append(pa.field("_row_kind", pa.string()))
    return pa.table(cols, schema=schema)


@pytest.mark.parametrize("engine", ["deduplicate", "partial-update"])
@pytest.mark.parametrize("compact_between", [False, True])
def test_sequence_field_delete_outlives_full_compaction(tmp_path, engine, compact_between):
    opts = {"sequence.field": "ts", "merge-engine": engine, "write-only": "true"}
    if engine == "partial-update":
        opts["partial-update.remove-record-on-delete"] = "true"
    t = mp.create_table(str(tmp_path / "t"), KV, primary_key=["id"], options=opts)
    t.write(kv([1, 2], [10, 20], [5, 5]))
    t.write(kv([1], [10], [100], ["-D"]))  # a delete with a high sequence value
    if compact_between:
        t.compact(full=True)
    t.write(kv([1], [11], [50]))  # late: lower sequence value than the delete
    assert t.to_arrow().to_pylist() == [{"id": 2, "v": 20, "ts": 5}]
    t.compact(full=True)
    assert t.to_arrow().to_pylist() == [{"id": 2, "v": 20, "ts": 5}]
    t.write(kv([1], [12], [101]))  # newer than the delete: visible again
    t.compact(full=True)
    assert t.to_arrow().sort_by("id").to_pylist() == [
        {"id": 1, "v": 12, "ts": 101}, {"id": 2, "v": 20, "ts": 5}]


def test_product_retractions_divide_as_paimon_does(tmp_path):
    """Paimon's product divides on a retraction (integers truncate, step by step) and takes
    a retraction of a null state as the value itself; a compaction between the writes
    changes nothing."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("p", pa.int64()),
                        ("f", pa.float64())])
    rk = schema.append(pa.field("_row_kind", pa.string()))
    for compact in (False, True):
        t = mp.create_table(str(tmp_path / f"t{compact}"), schema, primary_key=["id"], options={
            "merge-engine": "aggregation", "fields.p.aggregate-function": "product",
            "fields.f.aggregate-function": "product"})
        t.write(pa.table({"id": [1], "p": [7], "f": [7.0]}, schema=schema))
        if compact:
            t.compact(full=True)
        t.write(pa.table({"id": [1, 2, 2], "p": [2, 4, 3], "f": [2.0, 4.0, 3.0],
                          "_row_kind": ["-U", "-D", "+I"]}, schema=rk))
        assert t.to_arrow().sort_by("id").to_pylist() == [
            {"id": 1, "p": 3, "f": 3.5}, {"id": 2, "p": 12, "f": 12.0}]


def test_decimal_sum_overflow_is_null(tmp_path):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("d", pa.decimal128(5, 2))])
    t = mp.create_table(str(tmp_path / "t"), schema, primary_key=["id"], options={
        "merge-engine": "aggregation", "fields.d.aggregate-function": "sum"})
    t.write(pa.table({"id": [1, 2], "d": [Decimal("999.99"), Decimal("1.00")]}, schema=schema))
    t.write(pa.table({"id": [1, 2], "d": [Decimal("999.99"), Decimal("-2.50")]}, schema=schema))
    assert t.to_arrow().sort_by("id").to_pylist() == [
        {"id": 1, "d": None}, {"id": 2, "d": Decimal("-1.50")}]
    t.compact(full=True)
    assert t.to_arrow().sort_by("id").to_pylist() == [
        {"id": 1, "d": None}, {"id": 2, "d": Decimal("-1.50")}]


def test_full_compaction_changelog_ignores_unchanged_nan(tmp_path):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("x", pa.float64())])
    t = mp.create_table(str(tmp_path / "t"), schema, primary_key=["id"],
                        options={"changelog-producer": "full-compaction"})
    t.write(pa.table({"id": [1, 2], "x": [float("nan"), 1.0]}, schema=schema))
    start = StreamOffset(t.latest_snapshot().id)
    t.write(pa.table({"id": [2], "x": [2.0]}, schema=schema))
    sc = StreamScanner(t, {"scan.mode": "latest", "read.changelog": "true"})
    end = sc.latest_offset(start)
    got = [(r["_row_kind"], r["id"], r["x"]) for s in sc.plan(start, end) for b in sc.read(s)
           for r in pa.Table.from_batches([b]).to_pylist()]
    assert got == [("-U", 2, 1.0), ("+U", 2, 2.0)]


def test_full_compaction_changelog_ignores_unchanged_nan_in_nested_values(tmp_path):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("x", pa.list_(pa.float64())),
                        ("m", pa.struct([("f", pa.float64())]))])
    t = mp.create_table(str(tmp_path / "t"), schema, primary_key=["id"],
                        options={"changelog-producer": "full-compaction"})
    nan = float("nan")
    t.write(pa.table({"id": [1, 2], "x": [[nan, 1.0], [2.0]], "m": [{"f": nan}, {"f": 1.0}]},
                     schema=schema))
    start = StreamOffset(t.latest_snapshot().id)
    t.write(pa.table({"id": [2], "x": [[3.0]], "m": [{"f": 1.0}]}, schema=schema))
    sc = StreamScanner(t, {"scan.mode": "latest", "read.changelog": "true"})
    got = [(r["_row_kind"], r["id"]) for s in sc.plan(start, sc.latest_offset(start))
           for b in sc.read(s) for r in pa.Table.from_batches([b]).to_pylist()]
    assert got == [("-U", 2), ("+U", 2)]
