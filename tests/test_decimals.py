"""Decimals of every precision up to 38 round-trip with exact stats; wider ones are refused."""

from __future__ import annotations

import decimal
import shutil
import struct
from pathlib import Path

import msgspec
import pyarrow as pa
import pytest
import xxhash
import zstandard

import minipaimon_core as mp
from minipaimon_core.format import legacy

D = decimal.Decimal
CTX = decimal.Context(prec=80)
FIXTURE = Path(__file__).parent / "fixtures" / "v1_decimal_table"


def test_spark_default_decimal_38_18_holds_18_45(tmp_path):
    ty = pa.decimal128(38, 18)
    t = mp.create_table(str(tmp_path / "t"), pa.schema([("x", ty)]))
    t.write(pa.table({"x": pa.array([D("18.45")], ty)}))
    t.write(pa.table({"x": pa.array([D("-0.000000000000000001"), None], ty)}))
    t = mp.open_table(t.path)
    assert sorted(v for v in t.to_arrow().column("x").to_pylist() if v is not None) == \
        [D("-0.000000000000000001"), D("18.45")]
    assert t.scan(filter=[("x", "=", D("18.45"))]).to_arrow().column("x").to_pylist() == [D("18.45")]
    assert t.scan(filter=[("x", ">", 18)]).to_arrow().num_rows == 1
    assert t.scan(filter=[("x", "<", 0)]).to_arrow().num_rows == 1


@pytest.mark.parametrize("scale", [0, 18, 38])
def test_extreme_values_of_decimal_38_round_trip_with_exact_stats(tmp_path, scale):
    ty = pa.decimal128(38, scale)
    top = D(10**38 - 1).scaleb(-scale, CTX)
    t = mp.create_table(str(tmp_path / "t"), pa.schema([("x", ty)]))
    t.write(pa.table({"x": pa.array([top, top.copy_negate()], ty)}))
    t.write(pa.table({"x": pa.array([D(1).scaleb(-scale, CTX)], ty)}))
    assert sorted(mp.open_table(t.path).to_arrow().column("x").to_pylist()) == [top.copy_negate(), D(1).scaleb(-scale, CTX), top]
    assert t.scan(filter=[("x", "=", top)]).to_arrow().num_rows == 1
    assert t.scan(filter=[("x", "<=", top.copy_negate())]).to_arrow().num_rows == 1
    files = t.system_table("files")
    assert str(10**38 - 1) in "".join(files.column("max_value_stats").to_pylist())


def test_big_decimal_30_0_primary_key(tmp_path):
    ty = pa.decimal128(30, 0)
    schema = pa.schema([pa.field("k", ty, nullable=False), ("v", pa.int64())])
    t = mp.create_table(str(tmp_path / "t"), schema, primary_key=["k"], options={"bucket": "3"})
    keys = [D("123456789012345678901234567890"), D("-123456789012345678901234567890"), D(10**29 + 7), D(5)]
    t.write(pa.table({"k": pa.array(keys, ty), "v": [1, 2, 3, 4]}, schema=schema))
    t.write(pa.table({"k": pa.array(keys[:2], ty), "v": [10, 20]}, schema=schema))  # upserts
    for full in (False, True):
        got = dict(zip(*mp.open_table(t.path).to_arrow().to_pydict().values(), strict=True))
        assert got == {keys[0]: 10, keys[1]: 20, keys[2]: 3, keys[3]: 4}
        assert t.scan(filter=[("k", "=", keys[0])]).to_arrow().column("v").to_pylist() == [10]
        assert t.scan(filter=[("k", "in", [keys[1], keys[2]])]).to_arrow().num_rows == 2
        assert t.scan(filter=[("k", ">", 10**29)]).to_arrow().num_rows == 2
        t.compact(full=full)


def test_decimal_wider_than_38_digits_is_refused_at_create(tmp_path):
    with pytest.raises(mp.SchemaMismatchError, match="50, 2"):
        mp.create_table(str(tmp_path / "t"), pa.schema([("x", pa.decimal256(50, 2))]))
    assert not (tmp_path / "t").exists() or not any((tmp_path / "t").rglob("schema-*"))
    t = mp.create_table(str(tmp_path / "u"), pa.schema([("x", pa.decimal256(20, 2))]))
    assert t.schema().field("x").type == pa.decimal128(20, 2)
    with pytest.raises(mp.SchemaMismatchError):
        t.add_column("y", pa.decimal256(40, 0))


def _v1_bytes(obj: object) -> bytes:
    """A version-1 manifest built here from the format description, not by the codec."""
    payload = zstandard.ZstdCompressor().compress(msgspec.msgpack.encode(obj))
    return struct.pack("<3sBQ", b"MPM", 1, xxhash.xxh64_intdigest(payload)) + payload


def test_the_earlier_format_reader_takes_versions_1_and_2():
    """minipaimon's earlier manifests: version 1 (64-bit integers) and version 2 (msgpack
    ext 1 for wider integers), built here from the format description."""
    assert legacy.decode_binary(_v1_bytes([1, [2, 3]]), list, "x") == [1, [2, 3]]
    big = msgspec.msgpack.Ext(1, (2**70).to_bytes(10, "big", signed=True))
    payload = zstandard.ZstdCompressor().compress(msgspec.msgpack.encode([big, 5]))
    data = struct.pack("<3sBQ", b"MPM", 2, xxhash.xxh64_intdigest(payload)) + payload
    assert legacy.decode_binary(data, list, "x") == [2**70, 5]


def test_wide_decimal_stats_round_trip_in_paimon_manifests(tmp_path):
    ty = pa.decimal128(38, 18)
    t = mp.create_table(str(tmp_path / "t"), pa.schema([("x", ty)]))
    values = [D("-12345678901234567890.123456789012345678"), D("18.45")]
    t.write(pa.table({"x": pa.array(values, ty)}))
    (entry,) = [e for m in mp.open_table(t.path).manifests.data_manifests(t.latest_snapshot())
                for e in t.manifests.read_entries(m.fileName)]
    scaled = [int(v.scaleb(18, CTX)) for v in values]
    assert entry.file.valueStats.minValues == (min(scaled),) and entry.file.valueStats.maxValues == (max(scaled),)


def test_table_written_by_an_older_version_keeps_working(tmp_path):
    path = tmp_path / "t"
    shutil.copytree(FIXTURE, path)
    t = mp.open_table(str(path))
    rows = sorted(t.to_arrow().to_pylist(), key=lambda r: r["k"])
    assert [r["d"] for r in rows] == [D("1.5"), D("-2.25"), D("99999999999.9999")]
    assert t.scan(filter=[("d", ">", 2)]).to_arrow().column("k").to_pylist() == [3]
    big = D("1234567890123456789012345678901234.5678")
    ty = t.schema().field("d").type
    more = pa.table({"k": [2, 4], "d": pa.array([big, D("0.0001")], ty), "s": ["x", "y"]}, schema=t.schema())
    with pytest.raises(mp.UnsupportedFeatureError, match="migrate"):  # read, never written
        t.write(more)
    assert sorted(mp.open_table(str(path)).to_arrow().column("k").to_pylist()) == [1, 2, 3]


def test_wide_decimal_partition_values_are_exact(tmp_path):
    ty = pa.decimal128(38, 18)
    schema = pa.schema([pa.field("p", ty, nullable=False), ("v", pa.int64())])
    t = mp.create_table(str(tmp_path / "t"), schema, partition_by=["p"])
    a, b = D("12345678901234567890.123456789012345678"), D("12345678901234567890.123456789012345679")
    t.write(pa.table({"p": pa.array([a, b, D("18.45")], ty), "v": [1, 2, 3]}, schema=schema))
    t = mp.open_table(t.path)
    assert {r["p"]: r["v"] for r in t.to_arrow().to_pylist()} == {a: 1, b: 2, D("18.45"): 3}
    assert t.scan(filter=[("p", "=", b)]).to_arrow().column("v").to_pylist() == [2]
    assert (tmp_path / "t" / f"p={a}").is_dir() and (tmp_path / "t" / f"p={b}").is_dir()


def _widest(precision: int, scale: int) -> list[decimal.Decimal]:
    """The extreme values of DECIMAL(precision, scale), and a small one."""
    top = CTX.subtract(CTX.power(10, precision - scale), D(1).scaleb(-scale, CTX))
    return [top, CTX.minus(top), D(1).scaleb(-scale, CTX)]


@pytest.mark.parametrize("target", [(10, 2), (38, 18), (5, 0), (38, 0), (38, 38)])
def test_every_narrower_decimal_is_written_exactly(tmp_path, target):
    """Every DECIMAL(p, s) whose values all fit DECIMAL(P, S) (s <= S, p - s <= P - S) is
    accepted and read back equal; the rest (a digit would be lost) are refused."""
    big_p, big_s = target
    ty = pa.decimal128(big_p, big_s)
    t = mp.create_table(str(tmp_path / "t"), pa.schema([("x", ty)]))
    want: list[decimal.Decimal] = []
    refused = 0
    for p in range(1, 39):
        for s in range(0, p + 1):
            data = pa.table({"x": pa.array(_widest(p, s), pa.decimal128(p, s))})
            if s <= big_s and p - s <= big_p - big_s:
                t.write(data)
                want += _widest(p, s)
            else:
                refused += 1
                with pytest.raises(mp.SchemaMismatchError, match="'x'"):
                    t.write(data)
    assert refused and want
    got = mp.open_table(t.path).to_arrow().column("x").to_pylist()
    assert sorted(got) == sorted(want)
    assert len(mp.open_table(t.path).snapshots()) == len(want) // 3  # refusals wrote nothing
