"""Paimon's BinaryRow codec and bucket hash (minipaimon_core.format.binary_row).

Known answers come from Apache Paimon's Java engine 0.9 (the jar bundled with pypaimon 0.2.0),
embedded at the end of this file (JAVA_ROWS, JAVA_BUCKETS): for each row of stats-domain
values, the bytes of ``SerializationUtils.serializeBinaryRow(InternalRowSerializer.toBinaryRow)``
and their ``BinaryRow.hashCode()``; the bytes and hash of the row Java's generated projection
(``CodeGenUtils.newProjection``, used for partition / key / bucket-key rows) builds, where those
differ; and the bucket ``FixedBucketRowKeyExtractor`` assigns with ``bucket-key`` = every field
for N in BUCKET_NS. The generator (a Java program fed one line per row) is kept in
/work/notes/binary_row_java/.
"""

from __future__ import annotations

import contextlib
import math
import random
import struct
import sys
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from minipaimon_core.errors import (
    CorruptMetadataError,
    InvalidArgumentError,
    UnsupportedFeatureError,
)
from minipaimon_core.format.binary_row import decode, encode, hash_row
from minipaimon_core.format.bucket_hash import bucket_hashes, buckets

NAN, INF = float("nan"), float("inf")
F32_MAX, F32_TINY = 3.4028234663852886e38, 1.401298464324817e-45
BUCKET_NS = [1, 2, 3, 7, 16, 100]  # JAVA_ROWS buckets
JAVA_BUCKET_NS = [1, 2, 3, 7, 16, 100, 1000, 2147483647]  # JAVA_BUCKETS
_UNIT = ["s", "ms", "ms", "ms", "us", "us", "us", "ns", "ns", "ns"]


def _null_at(values: list[Any], k: int) -> list[Any]:
    out = list(values)
    out[k] = None
    return out


def _wide_ints(arity: int) -> list[Any]:
    nulls = {0, 23, 24, 54, arity - 1}
    return [None if i in nulls else i * 7919 - 100000 for i in range(arity)]


def _wide_strings(arity: int) -> list[Any]:
    return [None if i % 5 == 0 else f"s{i}" * (i % 4) for i in range(arity)]


def _precision(t: str) -> int:
    return int(t.split("(")[1].split(")")[0].split(",")[0])


def _same(a: Any, b: Any) -> bool:
    """Equal values; floats compared bit for bit (NaN equals NaN, -0.0 differs from 0.0)."""
    if isinstance(a, float) and isinstance(b, float):
        return struct.pack("<d", a) == struct.pack("<d", b) or (math.isnan(a) and math.isnan(b))
    return type(a) is type(b) and a == b


def _stored(t: str, value: Any) -> Any:
    """What decoding gives back: Paimon keeps TIME as milliseconds."""
    if value is None or not t.startswith("TIME("):
        return value
    per_milli = {"s": 0, "ms": 1, "us": 1000, "ns": 10**6}[_UNIT[_precision(t)]]
    return value - value % per_milli if per_milli else value


def _arrow_type(t: str) -> pa.DataType:
    base = t.split("(")[0].split(" ")[0]
    if base == "DECIMAL":
        p, s = t[8:-1].split(",")
        return pa.decimal128(int(p), int(s))
    if base == "TIME":
        unit = _UNIT[_precision(t)]
        return pa.time32(unit) if unit in ("s", "ms") else pa.time64(unit)
    if base == "TIMESTAMP":
        return pa.timestamp(_UNIT[_precision(t)], "UTC" if "ZONE" in t else None)
    return {"BOOLEAN": pa.bool_(), "TINYINT": pa.int8(), "SMALLINT": pa.int16(),
            "INT": pa.int32(), "BIGINT": pa.int64(), "FLOAT": pa.float32(),
            "DOUBLE": pa.float64(), "STRING": pa.string(), "CHAR": pa.string(),
            "VARCHAR": pa.string(), "BYTES": pa.binary(), "BINARY": pa.binary(),
            "VARBINARY": pa.binary(), "DATE": pa.date32()}[base]


def _arrow(values: list[Any], t: str) -> pa.Array:
    """An Arrow column holding stats-domain ``values`` of Paimon type ``t``."""
    at = _arrow_type(t)
    if pa.types.is_decimal(at):
        data = b"".join((v or 0).to_bytes(16, "little", signed=True) for v in values)
        valid = pa.array([v is not None for v in values]).buffers()[1]
        return pa.Array.from_buffers(at, len(values), [valid, pa.py_buffer(data)])
    if pa.types.is_temporal(at):
        return pa.array(values, pa.int64() if at.bit_width == 64 else pa.int32()).view(at)
    return pa.array(values, at)


def _row_hash(values: list[Any], types: list[str]) -> int:
    return hash_row(encode(values, types, reserve_nulls=True)[4:])


# ---------------------------------------------------------------------------------------------
# Known answers: the spec's verified dumps, then Java 0.9


@pytest.mark.parametrize(
    ("types", "values", "dump"),
    [
        (["INT", "STRING", "BIGINT"], [5, "ab", None],
         "00000003 0004000000000000 0500000000000000 6162000000000082 0000000000000000"),
        (["STRING", "DECIMAL(30, 1)"], ["hello world!", -12345678901234567890125],
         "00000002 0000000000000000 0c00000018000000 0a00000028000000"
         "68656c6c6f20776f726c642100000000 fd62bd49b1898ebdbb33000000000000"),
        (["TIMESTAMP(9)", "TIMESTAMP(3)"], [1700000000123456789, 1700000000123],
         "00000002 0000000000000000 55f8060018000000 7b68e5cf8b010000 7b68e5cf8b010000"),
        (["STRING"], ["a"], "00000001 0000000000000000 6100000000000081"),
        (["STRING"], ["abcdefgh"], "00000001 0000000000000000 0800000010000000 6162636465666768"),
        ([], [], "00000000 0000000000000000"),
    ],
)
def test_spec_dumps(types: list[str], values: list[Any], dump: str) -> None:
    expected = bytes.fromhex(dump.replace(" ", ""))
    assert encode(values, types) == expected
    assert decode(expected, types) == tuple(values)


def test_spec_hashes() -> None:
    assert hash_row(encode([5, "ab", None], ["INT", "STRING", "BIGINT"])[4:]) == -396456074
    assert _row_hash(["a"], ["STRING"]) == 943281246
    assert _row_hash(["abcdefgh"], ["STRING"]) == -843760178
    int_keys = {0: (-300363099, 1, 3), 1: (1465514398, 0, 2), 2: (1340390384, 0, 0),
                3: (-771300025, 1, 1), 4: (1447522506, 0, 2), 5: (260196596, 0, 0),
                100: (694654213, 1, 1), -1: (1133687267, 1, 3)}
    hashes = bucket_hashes([pa.array(list(int_keys), pa.int32())], ["INT"])
    for (key, (h, b2, b4)), got in zip(int_keys.items(), hashes):
        assert (_row_hash([key], ["INT"]), int(got)) == (h, h), key
        assert buckets(np.array([h], np.int32), 2)[0] == b2
        assert buckets(np.array([h], np.int32), 4)[0] == b4


def test_java_rows_encode() -> None:
    """encode() = InternalRowSerializer bytes; reserve_nulls=True = projection bytes."""
    for types, values, row_hex, row_hash, projection, _ in JAVA_ROWS:
        data = encode(values, types)
        assert (data.hex(), hash_row(data[4:])) == (row_hex, row_hash), (types, values)
        projected = encode(values, types, reserve_nulls=True)
        assert (projected.hex(), hash_row(projected[4:])) == (projection or (row_hex, row_hash))


def test_java_rows_decode() -> None:
    for types, values, row_hex, _, projection, _ in JAVA_ROWS:
        expected = [_stored(t, v) for t, v in zip(types, values)]
        for blob in (row_hex, projection[0] if projection else row_hex):
            got = decode(bytes.fromhex(blob), types)
            assert len(got) == len(expected) and all(map(_same, got, expected)), (types, got)


def _key_rows() -> list[tuple[list[str], list[Any], int, list[int]]]:
    """JAVA_ROWS usable as bucket keys: (types, values, Java bucket-key hash, buckets)."""
    out = []
    for types, values, _, row_hash, projection, java_buckets in JAVA_ROWS:
        if types and not any(t.startswith(("ARRAY", "MAP")) for t in types):
            out.append((types, values, projection[1] if projection else row_hash, java_buckets))
    return out


def test_java_bucket_hashes_row_by_row() -> None:
    for types, values, java_hash, java_buckets in _key_rows():
        hashes = bucket_hashes([_arrow([v], t) for t, v in zip(types, values)], types)
        assert hashes.dtype == np.int32 and int(hashes[0]) == java_hash, (types, values)
        assert [int(buckets(hashes, n)[0]) for n in BUCKET_NS] == java_buckets, (types, values)


def test_java_bucket_hashes_batched() -> None:
    """All Java rows of one key type as one batch (mixed lengths, nulls, inline and chunks)."""
    groups: dict[tuple[str, ...], list[tuple[list[Any], int]]] = {}
    for types, values, java_hash, _ in _key_rows():
        groups.setdefault(tuple(types), []).append((values, java_hash))
    for key, rows in groups.items():
        columns = [_arrow([r[0][i] for r in rows], t) for i, t in enumerate(key)]
        got = bucket_hashes(columns, list(key)).tolist()
        assert got == [r[1] for r in rows], key


def test_java_buckets() -> None:
    for h, java in JAVA_BUCKETS.items():
        assert buckets(np.array([h], dtype=np.int32), 1)[0] == 0
        assert [int(buckets(np.array([h], np.int32), n)[0]) for n in JAVA_BUCKET_NS] == java, h
        assert buckets(np.array([h, h]), 7).dtype == np.int32


# ---------------------------------------------------------------------------------------------
# Round trips


ROUND_TRIPS: list[tuple[str, list[Any]]] = [
    ("BOOLEAN", [True, False]),
    ("TINYINT", [-128, -1, 0, 127]),
    ("SMALLINT", [-32768, 32767]),
    ("INT", [-(2**31), 2**31 - 1]),
    ("BIGINT", [-(2**63), -1, 2**63 - 1]),
    ("FLOAT", [0.0, -0.0, NAN, INF, -INF, F32_MAX, -F32_TINY, 0.1875]),
    ("DOUBLE", [0.0, -0.0, NAN, INF, -INF, 5e-324, -1.7976931348623157e308, 0.1]),
    ("STRING", ["", "a", "1234567", "12345678", "123456789", "é", "日本語", "\U0001f600" * 2]),
    ("VARCHAR(10)", ["\x00\x00", "ünïcødé ok"]),
    ("BYTES", [b"", b"\x00", b"\xff" * 7, b"\x80" * 8, bytes(range(256))]),
    ("BINARY(3)", [b"abc"]),
    ("DATE", [-719162, -1, 0, 2932896]),
    ("TIME(0)", [0, 86399]),
    ("TIME(3)", [0, 86399999]),
    ("TIME(6)", [86399999000]),
    ("TIME(9)", [1000000]),
    ("TIMESTAMP(0)", [-62135596800, 0, 253402300799]),
    ("TIMESTAMP(3)", [-(2**63), -1, 2**63 - 1]),
    ("TIMESTAMP(6)", [-1, -999, -1001, 1700000000123456, -(2**63), 2**63 - 1]),
    ("TIMESTAMP(9)", [-1, -1000001, 1700000000123456789, -(2**63), 2**63 - 1]),
    ("TIMESTAMP(6) WITH LOCAL TIME ZONE", [-86400000001]),
    ("TIMESTAMP(2)", [12345]),
    ("DECIMAL(1, 0)", [-9, 9]),
    ("DECIMAL(18, 18)", [10**18 - 1, -(10**18 - 1)]),
    ("DECIMAL(19, 0)", [10**18, -(10**19 - 1)]),
    ("DECIMAL(38, 0)", [0, -1, 127, 128, -128, -129, 2**63, -(2**64), 10**38 - 1, -(10**38 - 1)]),
    ("ARRAY<INT>", []),
    ("MAP<STRING, ROW<a INT>>", []),
]


@pytest.mark.parametrize(("t", "values"), ROUND_TRIPS, ids=[t for t, _ in ROUND_TRIPS])
def test_round_trip(t: str, values: list[Any]) -> None:
    types = [t] * (len(values) + 1) + [f"{t} NOT NULL"]
    row = [*values, None, values[0] if values else None]
    for reserve in (False, True):
        data = encode(row, types, reserve_nulls=reserve)
        got = decode(memoryview(data), types)
        assert len(got) == len(row) and all(map(_same, got, row)), got
        assert encode(list(got), types, reserve_nulls=reserve) == data
        assert len(data) % 8 == 4


def test_empty_row() -> None:
    assert encode([], []) == bytes(12)
    assert decode(bytes(12), []) == ()
    assert hash_row(bytes(8)) == hash_row(encode([], [])[4:])


def test_header_width_and_null_bits() -> None:
    """The header is RowKind + one bit per field, in 8-byte words: 57 fields need 16 bytes."""
    for arity, width in [(1, 8), (56, 8), (57, 16), (120, 16), (121, 24)]:
        data = encode([None] + [1] * (arity - 1), ["INT"] * arity)
        assert len(data) == 4 + width + 8 * arity
        assert data[4:6] == b"\x00\x01" and not any(data[6 : 4 + width])
    assert encode([1] * 55 + [None], ["INT"] * 56)[4 + 7] == 0x80  # field 55: bit 63
    assert encode([1] * 56 + [None], ["INT"] * 57)[4 + 8] == 0x01  # field 56: bit 64


def _random_value(rng: random.Random, t: str) -> Any:
    """A random stats-domain value of type ``t`` (TIME with whole milliseconds)."""
    base = t.split("(")[0].split(" ")[0]
    if base in ("TINYINT", "SMALLINT", "INT", "BIGINT"):
        bits = {"TINYINT": 8, "SMALLINT": 16, "INT": 32, "BIGINT": 64}[base]
        return rng.choice([-(2 ** (bits - 1)), 2 ** (bits - 1) - 1, rng.randint(-9, 9),
                           rng.randint(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)])
    if base in ("FLOAT", "DOUBLE"):
        v = rng.choice([NAN, -INF, -0.0, rng.uniform(-1e30, 1e30), rng.uniform(-1, 1)])
        return struct.unpack("<f", struct.pack("<f", v))[0] if base == "FLOAT" else v
    if base in ("STRING", "CHAR", "VARCHAR"):
        return "".join(rng.choice("aZ9 é日\U0001f600") for _ in range(rng.randint(0, 20)))
    if base in ("BYTES", "BINARY", "VARBINARY"):
        return bytes(rng.randrange(256) for _ in range(rng.randint(0, 30)))
    if base == "DATE":
        return rng.randint(-719162, 2932896)
    if base == "TIME":
        per_milli = {"s": 0, "ms": 1, "us": 1000, "ns": 10**6}[_UNIT[_precision(t)]]
        return rng.randrange(86400) if not per_milli else rng.randrange(86400000) * per_milli
    if base == "TIMESTAMP":
        limit = 2**63 // 1000 if _precision(t) == 0 else 2**63
        return rng.choice([rng.randrange(-limit, limit), rng.randrange(-(10**7), 10**7)])
    if base == "DECIMAL":
        digits = rng.randint(0, int(t[8:-1].split(",")[0]))
        return rng.choice([-1, 1]) * rng.randrange(10**digits)
    return rng.choice([True, False])


RANDOM_TYPES = ["BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "STRING",
                "BYTES", "DATE", "TIME(0)", "TIME(3)", "TIME(6)", "TIME(9)", "TIMESTAMP(0)",
                "TIMESTAMP(3)", "TIMESTAMP(5)", "TIMESTAMP(6)", "TIMESTAMP(9)",
                "TIMESTAMP(3) WITH LOCAL TIME ZONE", "TIMESTAMP(6) WITH LOCAL TIME ZONE",
                "DECIMAL(5, 2)", "DECIMAL(18, 4)", "DECIMAL(19, 0)", "DECIMAL(27, 3)",
                "DECIMAL(38, 10)", "CHAR(3)", "VARBINARY(12)"]


def test_random_round_trips() -> None:
    rng = random.Random(7)
    for _ in range(400):
        types = [rng.choice(RANDOM_TYPES) for _ in range(rng.randint(1, 12))]
        row = [None if rng.random() < 0.2 else _random_value(rng, t) for t in types]
        reserve = rng.random() < 0.5
        data = encode(row, types, reserve_nulls=reserve)
        got = decode(data, types)
        assert all(map(_same, got, row)), (types, row, got)
        assert encode(list(got), types, reserve_nulls=reserve) == data


# ---------------------------------------------------------------------------------------------
# Bad values and bad bytes


@pytest.mark.parametrize(
    ("types", "values"),
    [
        (["TINYINT"], [128]), (["TINYINT"], [-129]), (["SMALLINT"], [2**15]),
        (["INT"], [2**31]), (["INT"], [-(2**31) - 1]), (["BIGINT"], [2**63]),
        (["DATE"], [2**31]), (["TIME(3)"], [2**31]), (["TIME(0)"], [2**31 // 1000 + 1]),
        (["TIMESTAMP(0)"], [2**63 // 1000 + 1]), (["TIMESTAMP(6)"], [2**73]),
        (["DECIMAL(5, 2)"], [100000]), (["DECIMAL(38, 0)"], [-(10**38)]),
        (["DECIMAL(19, 0)"], [10**19]), (["DECIMAL(10, 0)"], [1.5]),
        (["FLOAT"], [1e300]), (["FLOAT"], ["1.0"]), (["DOUBLE"], [None, 1.0]),
        (["INT"], [True]), (["INT"], [1.0]), (["BOOLEAN"], [1]), (["BIGINT"], ["1"]),
        (["STRING"], [b"bytes"]), (["BYTES"], ["str"]), (["STRING"], ["\ud800"]),
        (["ARRAY<INT>"], [[1]]), (["INT", "INT"], [1]), (["GEOMETRY"], [1]),
        (["DECIMAL(39, 0)"], [1]), (["TIMESTAMP(10)"], [1]), (["INT(3)"], [1]),
        (["STRING WITH LOCAL TIME ZONE"], ["x"]),
    ],
)
def test_encode_rejects(types: list[str], values: list[Any]) -> None:
    with pytest.raises(InvalidArgumentError):
        encode(values, types)


SAMPLE_TYPES = ["INT", "STRING", "TIMESTAMP(9)", "DECIMAL(20, 0)", "BOOLEAN", "STRING"]
SAMPLE = encode([7, "twelve bytes", -1000001, -(10**19), True, "sixteen bytes!!!"], SAMPLE_TYPES)


def test_decode_rejects_wrong_arity() -> None:
    with pytest.raises(CorruptMetadataError, match="arity 6, expected 5"):
        decode(SAMPLE, SAMPLE_TYPES[:5])
    with pytest.raises(CorruptMetadataError, match="arity 6, expected 7"):
        decode(SAMPLE, [*SAMPLE_TYPES, "INT"])
    for arity in (-1, 5, 7, 2**31 - 1):
        with pytest.raises(CorruptMetadataError):
            decode(struct.pack(">i", arity) + SAMPLE[4:], SAMPLE_TYPES)


def test_decode_rejects_every_truncation() -> None:
    assert SAMPLE[-16:] == b"sixteen bytes!!!"  # the last chunk ends the row: cuts lose data
    for size in range(len(SAMPLE)):
        with pytest.raises(CorruptMetadataError):
            decode(SAMPLE[:size], SAMPLE_TYPES)


def _flip(data: bytes, bit: int) -> bytes:
    out = bytearray(data)
    out[bit // 8] ^= 1 << bit % 8
    return bytes(out)


# SAMPLE: prefix 0-3, header 4-11, slots 12-59 (INT, STRING, TIMESTAMP(9), DECIMAL(20, 0),
# BOOLEAN, STRING), chunks: "twelve bytes" 60-75, millis 76-83, decimal 84-99, string 100-115.
@pytest.mark.parametrize(
    ("byte", "bit", "why"),
    [
        (4, 2, "RowKind 4"),
        (5, 6, "null bit of field 6 (no such field)"),
        (11, 7, "last header bit"),
        (26, 2, "string offset beyond the row"),
        (22, 7, "string length 2**23 + 12"),
        (34, 0, "timestamp chunk offset beyond the row"),
        (31, 7, "nano of millisecond >= 10**6"),
        (36, 4, "decimal length 25 > 16"),
        (40, 6, "decimal offset 16, inside the fixed part"),
        (44, 1, "boolean byte 3"),
        (60, 7, "string byte 0 not UTF-8"),
        (84, 6, "decimal -(10**19) - 2**70 has 22 digits"),
    ],
)
def test_decode_rejects_bit_flip(byte: int, bit: int, why: str) -> None:
    assert decode(SAMPLE, SAMPLE_TYPES)  # the sample is valid
    with pytest.raises(CorruptMetadataError):
        decode(_flip(SAMPLE, 8 * byte + bit), SAMPLE_TYPES)


def _with_slot_word(data: bytes, field: int, half: int, value: int) -> bytes:
    """``data`` (a one-header-word row) with 4-byte half ``half`` of field's slot = ``value``."""
    out = bytearray(data)
    struct.pack_into("<I", out, 4 + 8 + 8 * field + 4 * half, value)
    return bytes(out)


def test_decode_rejects_crafted_slots() -> None:
    one = encode([b"12345678"], ["BYTES"])  # slot: length 8, offset 16
    assert decode(_with_slot_word(one, 0, 1, 16), ["BYTES"]) == (b"12345678",)
    for offset in (0, 8, 9, 17):  # inside the fixed part, or past the end
        with pytest.raises(CorruptMetadataError):
            decode(_with_slot_word(one, 0, 1, offset), ["BYTES"])
    dec = encode([-1], ["DECIMAL(20, 0)"])
    assert decode(dec, ["DECIMAL(20, 0)"]) == (-1,)
    for size in (0, 17):
        with pytest.raises(CorruptMetadataError, match="decimal of"):
            decode(_with_slot_word(dec, 0, 0, size), ["DECIMAL(20, 0)"])
    ts = encode([-1], ["TIMESTAMP(9)"])  # nano of millisecond 999_999
    assert decode(_with_slot_word(ts, 0, 0, 0), ["TIMESTAMP(9)"]) == (-1_000_000,)
    with pytest.raises(CorruptMetadataError, match="nano"):
        decode(_with_slot_word(ts, 0, 0, 10**6), ["TIMESTAMP(9)"])


def test_decode_rejects_inline_lengths_over_7() -> None:
    data = bytearray(encode(["ab"], ["STRING"]))
    for mark in range(0x88, 0x100):
        data[-1] = mark
        with pytest.raises(CorruptMetadataError, match="inline length"):
            decode(bytes(data), ["STRING"])


def test_decode_never_raises_anything_else() -> None:
    """Every single-bit flip and random damage: a value or CorruptMetadataError."""
    for bit in range(8 * len(SAMPLE)):
        with contextlib.suppress(CorruptMetadataError):
            decode(_flip(SAMPLE, bit), SAMPLE_TYPES)
    rng = random.Random(3)
    for _ in range(3000):
        damaged = bytearray(SAMPLE)
        for _ in range(rng.randint(1, 6)):
            damaged[rng.randrange(len(damaged))] = rng.randrange(256)
        with contextlib.suppress(CorruptMetadataError):
            decode(bytes(damaged[: rng.randint(0, len(damaged))]), SAMPLE_TYPES)


def test_decode_nested_value_is_unsupported() -> None:
    data = encode([1, None], ["INT", "INT"])
    assert decode(data, ["INT", "ARRAY<INT>"]) == (1, None)
    with pytest.raises(UnsupportedFeatureError):
        decode(data, ["ARRAY<INT>", "INT"])
    with pytest.raises(InvalidArgumentError):
        decode(data, ["INT", "BLOB"])


# ---------------------------------------------------------------------------------------------
# bucket_hashes against the one-row path


def _variants(t: str, values: list[Any]) -> list[pa.Array | pa.ChunkedArray]:
    """The same column as plain, sliced and chunked Arrow arrays, plus other Arrow types."""
    base = _arrow([None, *values, None], t).slice(1, len(values))
    out: list[pa.Array | pa.ChunkedArray] = [base, pa.chunked_array([base[:3], base[3:]])]
    if pa.types.is_string(base.type):
        out += [base.cast(pa.large_string()), base.cast(pa.string_view())]
    elif pa.types.is_binary(base.type):
        out += [base.cast(pa.large_binary())]
    elif pa.types.is_decimal(base.type):
        out += [base.cast(pa.decimal256(base.type.precision, base.type.scale))]
    return out


@pytest.mark.parametrize("t", RANDOM_TYPES)
def test_bucket_hashes_match_hash_row(t: str) -> None:
    rng = random.Random(t)
    values = [None if rng.random() < 0.2 else _random_value(rng, t) for _ in range(300)]
    expected = [_row_hash([v], [t]) for v in values]
    for column in _variants(t, values):
        assert bucket_hashes([column], [t]).tolist() == expected, column.type


def test_bucket_hashes_multi_column_keys() -> None:
    rng = random.Random(11)
    for _ in range(40):
        types = [rng.choice(RANDOM_TYPES) for _ in range(rng.randint(2, 6))]
        rows = [[None if rng.random() < 0.15 else _random_value(rng, t) for t in types]
                for _ in range(60)]
        columns = [_arrow([r[i] for r in rows], t) for i, t in enumerate(types)]
        assert bucket_hashes(columns, types).tolist() == [_row_hash(r, types) for r in rows]


def test_bucket_hashes_in_blocks_match_hash_row(monkeypatch: pytest.MonkeyPatch) -> None:
    """Columns longer than a block are hashed block by block (sliced, chunked inputs too)."""
    from minipaimon_core.format import bucket_hash

    monkeypatch.setattr(bucket_hash, "_BLOCK", 7)
    rng = random.Random(23)
    for _ in range(15):
        types = [rng.choice(RANDOM_TYPES) for _ in range(rng.randint(1, 3))]
        rows = [[None if rng.random() < 0.15 else _random_value(rng, t) for t in types]
                for _ in range(rng.randint(8, 40))]
        columns = [_variants(t, [r[i] for r in rows])[rng.randint(0, 1)] for i, t in enumerate(types)]
        assert bucket_hashes(columns, types).tolist() == [_row_hash(r, types) for r in rows], types


def test_bucket_hashes_fixed_size_binary_and_long_strings() -> None:
    values = [bytes([i]) * 12 for i in range(50)]
    column = pa.array(values, pa.binary(12))
    assert bucket_hashes([column], ["BINARY(12)"]).tolist() == [
        _row_hash([v], ["BINARY(12)"]) for v in values
    ]
    strings = ["x" * n for n in range(0, 3000, 7)] + [None]
    assert bucket_hashes([pa.array(strings)], ["STRING"]).tolist() == [
        _row_hash([s], ["STRING"]) for s in strings
    ]


def test_bucket_hashes_convert_arrow_units_like_java() -> None:
    """An Arrow unit finer than the type's precision is floored to what Paimon stores."""
    ns = [-1, -1_000_001, 1_700_000_000_123_456_789, None]
    column = pa.array(ns, pa.timestamp("ns"))
    for t, div in [("TIMESTAMP(6)", 1000), ("TIMESTAMP(3)", 10**6), ("TIMESTAMP(9)", 1)]:
        expected = [_row_hash([None if v is None else v // div], [t]) for v in ns]
        assert bucket_hashes([column], [t]).tolist() == expected, t
    times = pa.array([0, 1_999, 86_399_999_999, None], pa.time64("us"))
    assert bucket_hashes([times], ["TIME(3)"]).tolist() == [
        _row_hash([v], ["TIME(3)"]) for v in [0, 1, 86_399_999, None]
    ]


@pytest.mark.parametrize(
    ("columns", "types"),
    [
        ([pa.array([1])], ["INT", "INT"]),
        ([], []),
        ([pa.array([1]), pa.array([1, 2])], ["INT", "INT"]),
        ([pa.array([2**40])], ["INT"]),
        ([pa.array(["x"])], ["DATE"]),
        ([pa.array([1], pa.int32())], ["TIMESTAMP(3)"]),
        ([pa.array([1], pa.date32())], ["INT"]),
        ([pa.array([[1]])], ["ARRAY<INT>"]),
        ([pa.array([[1]])], ["STRING"]),
        ([pa.array([Decimal(10**20)], pa.decimal128(38, 0))], ["DECIMAL(10, 0)"]),
        ([pa.array([Decimal("0.5")], pa.decimal128(10, 1))], ["DECIMAL(10, 0)"]),
        ([pa.array([2**62], pa.timestamp("s"))], ["TIMESTAMP(3)"]),
    ],
)
def test_bucket_hashes_reject(columns: list[pa.Array], types: list[str]) -> None:
    with pytest.raises(InvalidArgumentError):
        bucket_hashes(columns, types)


def test_bucket_hashes_ignore_values_under_nulls() -> None:
    """Arrow leaves any bytes under a null; the hash must not see them."""
    valid = pa.array([True, False, True, False]).buffers()[1]

    def dec(values: list[int]) -> bytes:
        return b"".join(v.to_bytes(16, "little", signed=True) for v in values)

    cases: list[tuple[str, list[Any], bytes]] = [
        ("BIGINT", [1, -7, 2, 99], struct.pack("<4q", 1, -7, 2, 99)),
        ("INT", [1, -7, 2, 99], struct.pack("<4i", 1, -7, 2, 99)),
        ("DOUBLE", [1.5, NAN, 2.5, -1.0], struct.pack("<4d", 1.5, NAN, 2.5, -1.0)),
        ("TIMESTAMP(6)", [1, -7, 2, 99], struct.pack("<4q", 1, -7, 2, 99)),
        ("DECIMAL(10, 0)", [1, -7, 2, 99], dec([1, -7, 2, 99])),
        ("DECIMAL(30, 0)", [1, -7, 2, 10**20], dec([1, -7, 2, 10**20])),
    ]
    for t, values, data in cases:
        column = pa.Array.from_buffers(_arrow_type(t), 4, [valid, pa.py_buffer(data)])
        clean = [values[0], None, values[2], None]
        assert bucket_hashes([column], [t]).tolist() == [_row_hash([v], [t]) for v in clean], t
    offsets = pa.py_buffer(struct.pack("<5i", 0, 1, 12, 13, 20))  # nulls span 11 and 7 bytes
    strings = pa.Array.from_buffers(pa.string(), 4, [valid, offsets, pa.py_buffer(b"a" * 20)])
    assert bucket_hashes([strings], ["STRING"]).tolist() == [
        _row_hash([v], ["STRING"]) for v in ["a", None, "a", None]
    ]


def test_bucket_hashes_empty_input() -> None:
    hashes = bucket_hashes([pa.array([], pa.string())], ["STRING"])
    assert hashes.dtype == np.int32 and len(hashes) == 0


def test_buckets_is_javas_truncating_abs_mod() -> None:
    rng = np.random.default_rng(5)
    hashes = np.concatenate([rng.integers(-(2**31), 2**31, 10000), [-(2**31), 2**31 - 1, -1]])
    for n in (1, 2, 3, 10, 1024, 2**31 - 1):
        expected = [abs(int(math.fmod(h, n))) for h in hashes.tolist()]
        assert buckets(hashes.astype(np.int32), n).tolist() == expected
    with pytest.raises(InvalidArgumentError):
        buckets(hashes, 0)


def _python_lines(f: Callable[[], Any]) -> int:
    """How many lines of Python ``f`` runs (``sys.settrace``)."""
    count = 0

    def trace(frame: Any, event: str, arg: Any) -> Any:
        nonlocal count
        count += event == "line"
        return trace

    sys.settrace(trace)
    try:
        f()
    finally:
        sys.settrace(None)
    return count


@pytest.mark.parametrize("type_name", ["BIGINT", "STRING"])
def test_bucket_hashes_are_vectorised(type_name: str) -> None:
    """The Python run to hash keys does not grow with their number, as a per-row loop's
    would: the work is Arrow's and NumPy's (a count of lines, not a time)."""
    rng = np.random.default_rng(1)

    def keys(n: int) -> pa.Array:
        ints = rng.integers(-(2**63), 2**63 - 1, n, dtype=np.int64)
        return pa.array(ints) if type_name == "BIGINT" else pa.array([f"k{i:019d}" for i in ints.tolist()])

    few, many = keys(1_000), keys(100_000)
    bucket_hashes([few], [type_name])  # what is made once, on first use
    assert _python_lines(lambda: bucket_hashes([many], [type_name])) == \
        _python_lines(lambda: bucket_hashes([few], [type_name]))


# ---------------------------------------------------------------------------------------------
# Java 0.9 known answers: (types, values, serializeBinaryRow hex, hashCode,
# projection (hex, hashCode) where it differs, FixedBucketRowKeyExtractor bucket per BUCKET_NS)

ALL_TYPES = ["BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "STRING",
             "BYTES", "DATE", "TIME(3)", "TIMESTAMP(3)", "TIMESTAMP(6)",
             "TIMESTAMP(9) WITH LOCAL TIME ZONE", "DECIMAL(10, 2)", "DECIMAL(38, 4)", "STRING",
             "BYTES"]
ALL_VALUES = [True, -5, 300, -70000, 1 << 40, 2.5, -0.125, "a string of 24 bytes....",
              b"\x01" * 9, 20000, 3723004, -1234, -1234567, 1234567890123456789, -99, -(10**30),
              "short", b"\xff\xfe\xfd\xfc\xfb\xfa\xf9\xf8\xf7"]
JAVA_ROWS: list[tuple[list[str], list[Any], str, int, tuple[str, int] | None, list[int]]] = [
    (["BOOLEAN"], [True], "0000000100000000000000000100000000000000", 1465514398, None,
     [0, 0, 1, 5, 14, 98]),
    (["BOOLEAN"], [False], "0000000100000000000000000000000000000000", -300363099, None,
     [0, 1, 0, 1, 11, 99]),
    (["BOOLEAN"], [None], "0000000100010000000000000000000000000000", -1748325344, None,
     [0, 0, 2, 3, 0, 44]),
    (["TINYINT"], [0], "0000000100000000000000000000000000000000", -300363099, None,
     [0, 1, 0, 1, 11, 99]),
    (["TINYINT"], [1], "0000000100000000000000000100000000000000", 1465514398, None,
     [0, 0, 1, 5, 14, 98]),
    (["TINYINT"], [-1], "000000010000000000000000ff00000000000000", 2004758659, None,
     [0, 1, 1, 1, 3, 59]),
    (["TINYINT"], [127], "0000000100000000000000007f00000000000000", 1260004151, None,
     [0, 1, 2, 0, 7, 51]),
    (["TINYINT"], [-128], "0000000100000000000000008000000000000000", -1226381822, None,
     [0, 0, 2, 1, 14, 22]),
    (["TINYINT"], [None], "0000000100010000000000000000000000000000", -1748325344, None,
     [0, 0, 2, 3, 0, 44]),
    (["SMALLINT"], [-32768], "0000000100000000000000000080000000000000", -141722409, None,
     [0, 1, 0, 3, 9, 9]),
    (["SMALLINT"], [32767], "000000010000000000000000ff7f000000000000", 589084209, None,
     [0, 1, 0, 0, 1, 9]),
    (["SMALLINT"], [-1], "000000010000000000000000ffff000000000000", 2143727727, None,
     [0, 1, 0, 1, 15, 27]),
    (["SMALLINT"], [1234], "000000010000000000000000d204000000000000", -1096042293, None,
     [0, 1, 0, 3, 5, 93]),
    (["SMALLINT"], [None], "0000000100010000000000000000000000000000", -1748325344, None,
     [0, 0, 2, 3, 0, 44]),
    (["INT"], [-2147483648], "0000000100000000000000000000008000000000", 916225219, None,
     [0, 1, 1, 0, 3, 19]),
    (["INT"], [2147483647], "000000010000000000000000ffffff7f00000000", -1125657321, None,
     [0, 1, 0, 5, 9, 21]),
    (["INT"], [-1], "000000010000000000000000ffffffff00000000", 1133687267, None,
     [0, 1, 2, 6, 3, 67]),
    (["INT"], [0], "0000000100000000000000000000000000000000", -300363099, None,
     [0, 1, 0, 1, 11, 99]),
    (["INT"], [42], "0000000100000000000000002a00000000000000", 907821237, None,
     [0, 1, 0, 1, 5, 37]),
    (["INT"], [None], "0000000100010000000000000000000000000000", -1748325344, None,
     [0, 0, 2, 3, 0, 44]),
    (["BIGINT"], [-9223372036854775808], "0000000100000000000000000000000000000080", 302122119,
     None, [0, 1, 0, 5, 7, 19]),
    (["BIGINT"], [9223372036854775807], "000000010000000000000000ffffffffffffff7f", -1566569095,
     None, [0, 1, 1, 0, 7, 95]),
    (["BIGINT"], [-1], "000000010000000000000000ffffffffffffffff", -821098432, None,
     [0, 0, 1, 0, 0, 32]),
    (["BIGINT"], [1], "0000000100000000000000000100000000000000", 1465514398, None,
     [0, 0, 1, 5, 14, 98]),
    (["BIGINT"], [1234567890123], "000000010000000000000000cb04fb711f010000", -1873221036, None,
     [0, 0, 0, 1, 12, 36]),
    (["BIGINT"], [None], "0000000100010000000000000000000000000000", -1748325344, None,
     [0, 0, 2, 3, 0, 44]),
    (["FLOAT"], [0.0], "0000000100000000000000000000000000000000", -300363099, None,
     [0, 1, 0, 1, 11, 99]),
    (["FLOAT"], [-0.0], "0000000100000000000000000000008000000000", 916225219, None,
     [0, 1, 1, 0, 3, 19]),
    (["FLOAT"], [1.5], "0000000100000000000000000000c03f00000000", -173842779, None,
     [0, 1, 0, 5, 11, 79]),
    (["FLOAT"], [-3.25], "000000010000000000000000000050c000000000", -2091921791, None,
     [0, 1, 2, 1, 15, 91]),
    (["FLOAT"], [NAN], "0000000100000000000000000000c07f00000000", -2039172089, None,
     [0, 1, 2, 3, 9, 89]),
    (["FLOAT"], [INF], "0000000100000000000000000000807f00000000", 2139216202, None,
     [0, 0, 1, 4, 10, 2]),
    (["FLOAT"], [-INF], "000000010000000000000000000080ff00000000", -106221671, None,
     [0, 1, 2, 3, 7, 71]),
    (["FLOAT"], [3.4028234663852886e+38], "000000010000000000000000ffff7f7f00000000", 1220654719,
     None, [0, 1, 1, 4, 15, 19]),
    (["FLOAT"], [1.401298464324817e-45], "0000000100000000000000000100000000000000", 1465514398,
     None, [0, 0, 1, 5, 14, 98]),
    (["FLOAT"], [None], "0000000100010000000000000000000000000000", -1748325344, None,
     [0, 0, 2, 3, 0, 44]),
    (["DOUBLE"], [0.0], "0000000100000000000000000000000000000000", -300363099, None,
     [0, 1, 0, 1, 11, 99]),
    (["DOUBLE"], [-0.0], "0000000100000000000000000000000000000080", 302122119, None,
     [0, 1, 0, 5, 7, 19]),
    (["DOUBLE"], [3.141592653589793], "000000010000000000000000182d4454fb210940", 955224847, None,
     [0, 1, 1, 3, 15, 47]),
    (["DOUBLE"], [NAN], "000000010000000000000000000000000000f87f", -1323214697, None,
     [0, 1, 2, 0, 9, 97]),
    (["DOUBLE"], [INF], "000000010000000000000000000000000000f07f", -1556713404, None,
     [0, 0, 0, 1, 12, 4]),
    (["DOUBLE"], [-INF], "000000010000000000000000000000000000f0ff", -2079171840, None,
     [0, 0, 0, 4, 0, 40]),
    (["DOUBLE"], [1.7976931348623157e+308], "000000010000000000000000ffffffffffffef7f",
     -1658572535, None, [0, 1, 2, 4, 7, 35]),
    (["DOUBLE"], [5e-324], "0000000100000000000000000100000000000000", 1465514398, None,
     [0, 0, 1, 5, 14, 98]),
    (["DOUBLE"], [None], "0000000100010000000000000000000000000000", -1748325344, None,
     [0, 0, 2, 3, 0, 44]),
    (["STRING"], [""], "0000000100000000000000000000000000000080", 302122119, None,
     [0, 1, 0, 5, 7, 19]),
    (["STRING"], ["a"], "0000000100000000000000006100000000000081", 943281246, None,
     [0, 0, 0, 5, 14, 46]),
    (["STRING"], ["abcdefg"], "0000000100000000000000006162636465666787", -1431907323, None,
     [0, 1, 0, 0, 11, 23]),
    (["STRING"], ["abcdefgh"], "00000001000000000000000008000000100000006162636465666768",
     -843760178, None, [0, 0, 2, 2, 2, 78]),
    (["STRING"], ["abcdefghi"],
     "000000010000000000000000090000001000000061626364656667686900000000000000", 890550442, None,
     [0, 0, 1, 5, 10, 42]),
    (["STRING"], ["abcdefghijklmnop"],
     "00000001000000000000000010000000100000006162636465666768696a6b6c6d6e6f70", -712211938, None,
     [0, 0, 1, 4, 2, 38]),
    (["STRING"], ["abcdefghijklmnopq"],
     "00000001000000000000000011000000100000006162636465666768696a6b6c6d6e6f707100000000000000",
     576074594, None, [0, 0, 2, 4, 2, 94]),
    (["STRING"], ["héllo"], "00000001000000000000000068c3a96c6c6f0086", -452836664, None,
     [0, 0, 2, 0, 8, 64]),
    (["STRING"], ["日本語テキスト"],
     "0000000100000000000000001500000010000000e697a5e69cace8aa9ee38386e382ade382b9e38388000000",
     -1736449133, None, [0, 1, 2, 6, 13, 33]),
    (["STRING"], ["😀"], "000000010000000000000000f09f988000000084", -1697268522, None,
     [0, 0, 0, 5, 10, 22]),
    (["STRING"], ["ab\x00c"], "0000000100000000000000006162006300000084", -984282968, None,
     [0, 0, 2, 4, 8, 68]),
    (["STRING"], [None], "0000000100010000000000000000000000000000", -1748325344, None,
     [0, 0, 2, 3, 0, 44]),
    (["CHAR(5)"], ["abc"], "0000000100000000000000006162630000000083", -101922419, None,
     [0, 1, 2, 4, 3, 19]),
    (["CHAR(5)"], [None], "0000000100010000000000000000000000000000", -1748325344, None,
     [0, 0, 2, 3, 0, 44]),
    (["VARCHAR(20)"], ["a longer varchar!"],
     "000000010000000000000000110000001000000061206c6f6e67657220766172636861722100000000000000",
     1065551876, None, [0, 0, 2, 4, 4, 76]),
    (["VARCHAR(20)"], [None], "0000000100010000000000000000000000000000", -1748325344, None,
     [0, 0, 2, 3, 0, 44]),
    (["BYTES"], [b''], "0000000100000000000000000000000000000080", 302122119, None,
     [0, 1, 0, 5, 7, 19]),
    (["BYTES"], [b'\x00'], "0000000100000000000000000000000000000081", 1226533353, None,
     [0, 1, 0, 3, 9, 53]),
    (["BYTES"], [b'\xff\xff\xff\xff\xff\xff\xff'], "000000010000000000000000ffffffffffffff87",
     1867377871, None, [0, 1, 1, 2, 15, 71]),
    (["BYTES"], [b'\x00\x00\x00\x00\x00\x00\x00\x00'],
     "00000001000000000000000008000000100000000000000000000000", -2074941042, None,
     [0, 0, 0, 6, 2, 42]),
    (["BYTES"], [b'\x00\x01\x02\x03\x04\x05\x06\x07\x08\t\n\x0b\x0c\r\x0e\x0f\x10\x11\x12\x13'],
     "0000000100000000000000001400000010000000000102030405060708090a0b0c0d0e0f1011121300000000",
     -1401208527, None, [0, 1, 0, 5, 15, 27]),
    (["BYTES"], [None], "0000000100010000000000000000000000000000", -1748325344, None,
     [0, 0, 2, 3, 0, 44]),
    (["BINARY(8)"], [b'\x01\x02\x03\x04\x05\x06\x07\x08'],
     "00000001000000000000000008000000100000000102030405060708", -703675362, None,
     [0, 0, 0, 5, 2, 62]),
    (["BINARY(8)"], [None], "0000000100010000000000000000000000000000", -1748325344, None,
     [0, 0, 2, 3, 0, 44]),
    (["VARBINARY(10)"], [b'\xfe\xff'], "000000010000000000000000feff000000000082", -17512933,
     None, [0, 1, 1, 4, 5, 33]),
    (["VARBINARY(10)"], [None], "0000000100010000000000000000000000000000", -1748325344, None,
     [0, 0, 2, 3, 0, 44]),
    (["DATE"], [0], "0000000100000000000000000000000000000000", -300363099, None,
     [0, 1, 0, 1, 11, 99]),
    (["DATE"], [-1], "000000010000000000000000ffffffff00000000", 1133687267, None,
     [0, 1, 2, 6, 3, 67]),
    (["DATE"], [19000], "000000010000000000000000384a000000000000", -1241043695, None,
     [0, 1, 2, 3, 15, 95]),
    (["DATE"], [-719162], "000000010000000000000000c606f5ff00000000", -84903071, None,
     [0, 1, 2, 1, 15, 71]),
    (["DATE"], [2932896], "000000010000000000000000a0c02c0000000000", 256900136, None,
     [0, 0, 2, 3, 8, 36]),
    (["DATE"], [None], "0000000100010000000000000000000000000000", -1748325344, None,
     [0, 0, 2, 3, 0, 44]),
    (["TIME(0)"], [0], "0000000100000000000000000000000000000000", -300363099, None,
     [0, 1, 0, 1, 11, 99]),
    (["TIME(0)"], [86399], "0000000100000000000000001858260500000000", 1049622229, None,
     [0, 1, 1, 5, 5, 29]),
    (["TIME(0)"], [None], "0000000100010000000000000000000000000000", -1748325344, None,
     [0, 0, 2, 3, 0, 44]),
    (["TIME(3)"], [0], "0000000100000000000000000000000000000000", -300363099, None,
     [0, 1, 0, 1, 11, 99]),
    (["TIME(3)"], [86399999], "000000010000000000000000ff5b260500000000", -370972758, None,
     [0, 0, 0, 2, 6, 58]),
    (["TIME(3)"], [12345678], "0000000100000000000000004e61bc0000000000", 1151482978, None,
     [0, 0, 1, 2, 2, 78]),
    (["TIME(3)"], [None], "0000000100010000000000000000000000000000", -1748325344, None,
     [0, 0, 2, 3, 0, 44]),
    (["TIME(6)"], [12345678901], "0000000100000000000000004e61bc0000000000", 1151482978, None,
     [0, 0, 1, 2, 2, 78]),
    (["TIME(6)"], [None], "0000000100010000000000000000000000000000", -1748325344, None,
     [0, 0, 2, 3, 0, 44]),
    (["TIME(9)"], [86399999999999], "000000010000000000000000ff5b260500000000", -370972758, None,
     [0, 0, 0, 2, 6, 58]),
    (["TIME(9)"], [None], "0000000100010000000000000000000000000000", -1748325344, None,
     [0, 0, 2, 3, 0, 44]),
    (["TIMESTAMP(0)"], [0], "0000000100000000000000000000000000000000", -300363099, None,
     [0, 1, 0, 1, 11, 99]),
    (["TIMESTAMP(0)"], [-1], "00000001000000000000000018fcffffffffffff", -71979735, None,
     [0, 1, 0, 2, 7, 35]),
    (["TIMESTAMP(0)"], [1700000000], "0000000100000000000000000068e5cf8b010000", -234226969, None,
     [0, 1, 1, 4, 9, 69]),
    (["TIMESTAMP(0)"], [None], "0000000100010000000000000000000000000000", -1748325344, None,
     [0, 0, 2, 3, 0, 44]),
    (["TIMESTAMP(1)"], [1700000000123], "0000000100000000000000007b68e5cf8b010000", -1285420957,
     None, [0, 1, 1, 2, 13, 57]),
    (["TIMESTAMP(1)"], [None], "0000000100010000000000000000000000000000", -1748325344, None,
     [0, 0, 2, 3, 0, 44]),
    (["TIMESTAMP(3)"], [-1], "000000010000000000000000ffffffffffffffff", -821098432, None,
     [0, 0, 1, 0, 0, 32]),
    (["TIMESTAMP(3)"], [1700000000123], "0000000100000000000000007b68e5cf8b010000", -1285420957,
     None, [0, 1, 1, 2, 13, 57]),
    (["TIMESTAMP(3)"], [-62135596800000], "0000000100000000000000000028d3ed7cc7ffff", -1946233213,
     None, [0, 1, 1, 1, 13, 13]),
    (["TIMESTAMP(3)"], [None], "0000000100010000000000000000000000000000", -1748325344, None,
     [0, 0, 2, 3, 0, 44]),
    (["TIMESTAMP(4)"], [1700000000123456],
     "00000001000000000000000040f50600100000007b68e5cf8b010000", 1196670069, None,
     [0, 1, 0, 0, 5, 69]),
    (["TIMESTAMP(4)"], [None], "0000000100010000000000000000000000000000", -1748325344,
     ("00000001000100000000000000000000100000000000000000000000", -340882661),
     [0, 1, 2, 0, 5, 61]),
    (["TIMESTAMP(6)"], [1700000000123456],
     "00000001000000000000000040f50600100000007b68e5cf8b010000", 1196670069, None,
     [0, 1, 0, 0, 5, 69]),
    (["TIMESTAMP(6)"], [-1], "000000010000000000000000583e0f0010000000ffffffffffffffff",
     1236894319, None, [0, 1, 1, 3, 15, 19]),
    (["TIMESTAMP(6)"], [-1500], "00000001000000000000000020a1070010000000feffffffffffffff",
     -756168353, None, [0, 1, 2, 3, 1, 53]),
    (["TIMESTAMP(6)"], [0], "00000001000000000000000000000000100000000000000000000000",
     2132375054, None, [0, 0, 2, 5, 14, 54]),
    (["TIMESTAMP(6)"], [None], "0000000100010000000000000000000000000000", -1748325344,
     ("00000001000100000000000000000000100000000000000000000000", -340882661),
     [0, 1, 2, 0, 5, 61]),
    (["TIMESTAMP(7)"], [-1000001], "0000000100000000000000003f420f0010000000feffffffffffffff",
     -1329611038, None, [0, 0, 1, 0, 14, 38]),
    (["TIMESTAMP(7)"], [None], "0000000100010000000000000000000000000000", -1748325344,
     ("00000001000100000000000000000000100000000000000000000000", -340882661),
     [0, 1, 2, 0, 5, 61]),
    (["TIMESTAMP(9)"], [1700000000123456789],
     "00000001000000000000000055f80600100000007b68e5cf8b010000", -71831406, None,
     [0, 0, 0, 3, 14, 6]),
    (["TIMESTAMP(9)"], [-1], "0000000100000000000000003f420f0010000000ffffffffffffffff", 61627685,
     None, [0, 1, 2, 0, 5, 85]),
    (["TIMESTAMP(9)"], [-1000001], "0000000100000000000000003f420f0010000000feffffffffffffff",
     -1329611038, None, [0, 0, 1, 0, 14, 38]),
    (["TIMESTAMP(9)"], [None], "0000000100010000000000000000000000000000", -1748325344,
     ("00000001000100000000000000000000100000000000000000000000", -340882661),
     [0, 1, 2, 0, 5, 61]),
    (["TIMESTAMP(3) WITH LOCAL TIME ZONE"], [1700000000123],
     "0000000100000000000000007b68e5cf8b010000", -1285420957, None, [0, 1, 1, 2, 13, 57]),
    (["TIMESTAMP(3) WITH LOCAL TIME ZONE"], [None], "0000000100010000000000000000000000000000",
     -1748325344, None, [0, 0, 2, 3, 0, 44]),
    (["TIMESTAMP(6) WITH LOCAL TIME ZONE"], [-86400000001],
     "000000010000000000000000583e0f0010000000ffa3d9faffffffff", 1711694347, None,
     [0, 1, 1, 6, 11, 47]),
    (["TIMESTAMP(6) WITH LOCAL TIME ZONE"], [None], "0000000100010000000000000000000000000000",
     -1748325344, ("00000001000100000000000000000000100000000000000000000000", -340882661),
     [0, 1, 2, 0, 5, 61]),
    (["DECIMAL(10, 2)"], [0], "0000000100000000000000000000000000000000", -300363099, None,
     [0, 1, 0, 1, 11, 99]),
    (["DECIMAL(10, 2)"], [12345], "0000000100000000000000003930000000000000", 767607022, None,
     [0, 0, 1, 0, 14, 22]),
    (["DECIMAL(10, 2)"], [-12345], "000000010000000000000000c7cfffffffffffff", 280263423, None,
     [0, 1, 0, 6, 15, 23]),
    (["DECIMAL(10, 2)"], [9999999999], "000000010000000000000000ffe30b5402000000", 515728252,
     None, [0, 0, 1, 4, 12, 52]),
    (["DECIMAL(10, 2)"], [None], "0000000100010000000000000000000000000000", -1748325344, None,
     [0, 0, 2, 3, 0, 44]),
    (["DECIMAL(18, 0)"], [999999999999999999], "000000010000000000000000ffff63a7b3b6e00d",
     892685092, None, [0, 0, 1, 5, 4, 92]),
    (["DECIMAL(18, 0)"], [-999999999999999999], "00000001000000000000000001009c584c491ff2",
     -391672493, None, [0, 1, 2, 2, 13, 93]),
    (["DECIMAL(18, 0)"], [None], "0000000100010000000000000000000000000000", -1748325344, None,
     [0, 0, 2, 3, 0, 44]),
    (["DECIMAL(19, 0)"], [1000000000000000000],
     "00000001000000000000000008000000100000000de0b6b3a76400000000000000000000", -1317624139,
     None, [0, 1, 1, 6, 11, 39]),
    (["DECIMAL(19, 0)"], [-1000000000000000000],
     "0000000100000000000000000800000010000000f21f494c589c00000000000000000000", 1178005182, None,
     [0, 0, 0, 4, 14, 82]),
    (["DECIMAL(19, 0)"], [None], "0000000100010000000000000000000000000000", -1748325344,
     ("000000010001000000000000000000001000000000000000000000000000000000000000", -1380280760),
     [0, 0, 2, 5, 8, 60]),
    (["DECIMAL(20, 2)"], [None], "0000000100010000000000000000000000000000", -1748325344,
     ("000000010001000000000000000000001000000000000000000000000000000000000000", -1380280760),
     [0, 0, 2, 5, 8, 60]),
    (["DECIMAL(20, 2)"], [-1],
     "0000000100000000000000000100000010000000ff000000000000000000000000000000", 907730780, None,
     [0, 0, 2, 5, 12, 80]),
    (["DECIMAL(38, 10)"], [99999999999999999999999999999999999999],
     "00000001000000000000000010000000100000004b3b4ca85a86c47a098a223fffffffff", -1064641625,
     None, [0, 1, 2, 5, 9, 25]),
    (["DECIMAL(38, 10)"], [-99999999999999999999999999999999999999],
     "0000000100000000000000001000000010000000b4c4b357a5793b85f675ddc000000001", 2078814714, None,
     [0, 0, 0, 4, 10, 14]),
    (["DECIMAL(38, 10)"], [0],
     "000000010000000000000000010000001000000000000000000000000000000000000000", 728486185, None,
     [0, 1, 1, 0, 9, 85]),
    (["DECIMAL(38, 10)"], [-1],
     "0000000100000000000000000100000010000000ff000000000000000000000000000000", 907730780, None,
     [0, 0, 2, 5, 12, 80]),
    (["DECIMAL(38, 10)"], [1],
     "000000010000000000000000010000001000000001000000000000000000000000000000", 1322040517, None,
     [0, 1, 1, 0, 5, 17]),
    (["DECIMAL(38, 10)"], [127],
     "00000001000000000000000001000000100000007f000000000000000000000000000000", 1891628258, None,
     [0, 0, 2, 2, 2, 58]),
    (["DECIMAL(38, 10)"], [128],
     "000000010000000000000000020000001000000000800000000000000000000000000000", -795104203, None,
     [0, 1, 1, 5, 11, 3]),
    (["DECIMAL(38, 10)"], [-128],
     "000000010000000000000000010000001000000080000000000000000000000000000000", 1196242097, None,
     [0, 1, 2, 1, 1, 97]),
    (["DECIMAL(38, 10)"], [-129],
     "0000000100000000000000000200000010000000ff7f0000000000000000000000000000", -104809469, None,
     [0, 1, 2, 2, 13, 69]),
    (["DECIMAL(38, 10)"], [255],
     "000000010000000000000000020000001000000000ff0000000000000000000000000000", -1938711619,
     None, [0, 1, 1, 5, 3, 19]),
    (["DECIMAL(38, 10)"], [256],
     "000000010000000000000000020000001000000001000000000000000000000000000000", 1457316290, None,
     [0, 0, 2, 3, 2, 90]),
    (["DECIMAL(38, 10)"], [-256],
     "0000000100000000000000000200000010000000ff000000000000000000000000000000", -8367636, None,
     [0, 0, 0, 4, 4, 36]),
    (["DECIMAL(38, 10)"], [-9223372036854775808],
     "000000010000000000000000080000001000000080000000000000000000000000000000", -295701232, None,
     [0, 0, 1, 1, 0, 32]),
    (["DECIMAL(38, 10)"], [9223372036854775808],
     "000000010000000000000000090000001000000000800000000000000000000000000000", 672101069, None,
     [0, 1, 2, 3, 13, 69]),
    (["DECIMAL(38, 10)"], [-18446744073709551616],
     "0000000100000000000000000900000010000000ff000000000000000000000000000000", 1746183703, None,
     [0, 1, 1, 5, 7, 3]),
    (["DECIMAL(38, 10)"], [18446744073709551616],
     "000000010000000000000000090000001000000001000000000000000000000000000000", -1037944221,
     None, [0, 1, 0, 6, 13, 21]),
    (["DECIMAL(38, 10)"], [-1329227995784915872903807060280344576],
     "0000000100000000000000001000000010000000ff000000000000000000000000000000", -46070556, None,
     [0, 0, 0, 0, 12, 56]),
    (["DECIMAL(38, 10)"], [None], "0000000100010000000000000000000000000000", -1748325344,
     ("000000010001000000000000000000001000000000000000000000000000000000000000", -1380280760),
     [0, 0, 2, 5, 8, 60]),
    (["ARRAY<INT>"], [None], "0000000100010000000000000000000000000000", -1748325344, None,
     [0, 0, 2, 3, 0, 44]),
    (["MAP<STRING, INT>"], [None], "0000000100010000000000000000000000000000", -1748325344, None,
     [0, 0, 2, 3, 0, 44]),
    (["INT", "STRING", "BIGINT"], [5, "ab", None],
     "000000030004000000000000050000000000000061620000000000820000000000000000", -396456074, None,
     [0, 0, 2, 0, 10, 74]),
    (["STRING", "DECIMAL(30, 1)"], ["hello world!", -12345678901234567890125],
     "0000000200000000000000000c000000180000000a0000002800000068656c6c6f20776f726c642100000000"
     "fd62bd49b1898ebdbb33000000000000", 1217812172, None, [0, 0, 2, 3, 12, 72]),
    (["TIMESTAMP(9)", "TIMESTAMP(3)"], [1700000000123456789, 1700000000123],
     "00000002000000000000000055f80600180000007b68e5cf8b0100007b68e5cf8b010000", 164371183, None,
     [0, 1, 1, 4, 15, 83]),
    ([], [], "000000000000000000000000", -1670924195, None, []),
    (["INT", "ARRAY<INT>", "STRING", "MAP<STRING, INT>"], [1, None, "nested are null", None],
     "00000004000a000000000000010000000000000000000000000000000f000000280000000000000000000000"
     "6e657374656420617265206e756c6c00", 73532469, None, [0, 1, 0, 3, 5, 69]),
    (ALL_TYPES, ALL_VALUES,
     "0000001200000000000000000100000000000000fb000000000000002c0100000000000090eefeff00000000"
     "00000000000100000000204000000000000000000000c0bf180000009800000009000000b0000000204e0000"
     "00000000fcce3800000000002efbffffffffffff689b0600c000000055f80600c80000009dffffffffffffff"
     "0d000000d000000073686f727400008509000000e00000006120737472696e67206f66203234206279746573"
     "2e2e2e2e010101010101010101000000000000002dfbffffffffffffcb04fb711f010000f360d3632fb98b12"
     "15c0000000000000fffefdfcfbfaf9f8f700000000000000", 838300043, None, [0, 1, 2, 0, 11, 43]),
    (ALL_TYPES, _null_at(ALL_VALUES, 0),
     "0000001200010000000000000000000000000000fb000000000000002c0100000000000090eefeff00000000"
     "00000000000100000000204000000000000000000000c0bf180000009800000009000000b0000000204e0000"
     "00000000fcce3800000000002efbffffffffffff689b0600c000000055f80600c80000009dffffffffffffff"
     "0d000000d000000073686f727400008509000000e00000006120737472696e67206f66203234206279746573"
     "2e2e2e2e010101010101010101000000000000002dfbffffffffffffcb04fb711f010000f360d3632fb98b12"
     "15c0000000000000fffefdfcfbfaf9f8f700000000000000", -328127909, None, [0, 1, 2, 4, 5, 9]),
    (ALL_TYPES, _null_at(ALL_VALUES, 1),
     "000000120002000000000000010000000000000000000000000000002c0100000000000090eefeff00000000"
     "00000000000100000000204000000000000000000000c0bf180000009800000009000000b0000000204e0000"
     "00000000fcce3800000000002efbffffffffffff689b0600c000000055f80600c80000009dffffffffffffff"
     "0d000000d000000073686f727400008509000000e00000006120737472696e67206f66203234206279746573"
     "2e2e2e2e010101010101010101000000000000002dfbffffffffffffcb04fb711f010000f360d3632fb98b12"
     "15c0000000000000fffefdfcfbfaf9f8f700000000000000", -363942184, None, [0, 0, 1, 4, 8, 84]),
    (ALL_TYPES, _null_at(ALL_VALUES, 2),
     "0000001200040000000000000100000000000000fb00000000000000000000000000000090eefeff00000000"
     "00000000000100000000204000000000000000000000c0bf180000009800000009000000b0000000204e0000"
     "00000000fcce3800000000002efbffffffffffff689b0600c000000055f80600c80000009dffffffffffffff"
     "0d000000d000000073686f727400008509000000e00000006120737472696e67206f66203234206279746573"
     "2e2e2e2e010101010101010101000000000000002dfbffffffffffffcb04fb711f010000f360d3632fb98b12"
     "15c0000000000000fffefdfcfbfaf9f8f700000000000000", 1367393441, None, [0, 1, 2, 1, 1, 41]),
    (ALL_TYPES, _null_at(ALL_VALUES, 3),
     "0000001200080000000000000100000000000000fb000000000000002c010000000000000000000000000000"
     "00000000000100000000204000000000000000000000c0bf180000009800000009000000b0000000204e0000"
     "00000000fcce3800000000002efbffffffffffff689b0600c000000055f80600c80000009dffffffffffffff"
     "0d000000d000000073686f727400008509000000e00000006120737472696e67206f66203234206279746573"
     "2e2e2e2e010101010101010101000000000000002dfbffffffffffffcb04fb711f010000f360d3632fb98b12"
     "15c0000000000000fffefdfcfbfaf9f8f700000000000000", -1819119556, None, [0, 0, 1, 2, 4, 56]),
    (ALL_TYPES, _null_at(ALL_VALUES, 4),
     "0000001200100000000000000100000000000000fb000000000000002c0100000000000090eefeff00000000"
     "00000000000000000000204000000000000000000000c0bf180000009800000009000000b0000000204e0000"
     "00000000fcce3800000000002efbffffffffffff689b0600c000000055f80600c80000009dffffffffffffff"
     "0d000000d000000073686f727400008509000000e00000006120737472696e67206f66203234206279746573"
     "2e2e2e2e010101010101010101000000000000002dfbffffffffffffcb04fb711f010000f360d3632fb98b12"
     "15c0000000000000fffefdfcfbfaf9f8f700000000000000", 131610887, None, [0, 1, 2, 2, 7, 87]),
    (ALL_TYPES, _null_at(ALL_VALUES, 5),
     "0000001200200000000000000100000000000000fb000000000000002c0100000000000090eefeff00000000"
     "00000000000100000000000000000000000000000000c0bf180000009800000009000000b0000000204e0000"
     "00000000fcce3800000000002efbffffffffffff689b0600c000000055f80600c80000009dffffffffffffff"
     "0d000000d000000073686f727400008509000000e00000006120737472696e67206f66203234206279746573"
     "2e2e2e2e010101010101010101000000000000002dfbffffffffffffcb04fb711f010000f360d3632fb98b12"
     "15c0000000000000fffefdfcfbfaf9f8f700000000000000", -1682786878, None, [0, 0, 1, 3, 14, 78]),
    (ALL_TYPES, _null_at(ALL_VALUES, 6),
     "0000001200400000000000000100000000000000fb000000000000002c0100000000000090eefeff00000000"
     "000000000001000000002040000000000000000000000000180000009800000009000000b0000000204e0000"
     "00000000fcce3800000000002efbffffffffffff689b0600c000000055f80600c80000009dffffffffffffff"
     "0d000000d000000073686f727400008509000000e00000006120737472696e67206f66203234206279746573"
     "2e2e2e2e010101010101010101000000000000002dfbffffffffffffcb04fb711f010000f360d3632fb98b12"
     "15c0000000000000fffefdfcfbfaf9f8f700000000000000", 1125642888, None, [0, 0, 0, 6, 8, 88]),
    (ALL_TYPES, _null_at(ALL_VALUES, 7),
     "0000001200800000000000000100000000000000fb000000000000002c0100000000000090eefeff00000000"
     "00000000000100000000204000000000000000000000c0bf00000000000000000900000098000000204e0000"
     "00000000fcce3800000000002efbffffffffffff689b0600a800000055f80600b00000009dffffffffffffff"
     "0d000000b800000073686f727400008509000000c8000000010101010101010101000000000000002dfbffff"
     "ffffffffcb04fb711f010000f360d3632fb98b1215c0000000000000fffefdfcfbfaf9f8f700000000000000",
     1663782364, None, [0, 0, 1, 6, 12, 64]),
    (ALL_TYPES, _null_at(ALL_VALUES, 8),
     "0000001200000100000000000100000000000000fb000000000000002c0100000000000090eefeff00000000"
     "00000000000100000000204000000000000000000000c0bf18000000980000000000000000000000204e0000"
     "00000000fcce3800000000002efbffffffffffff689b0600b000000055f80600b80000009dffffffffffffff"
     "0d000000c000000073686f727400008509000000d00000006120737472696e67206f66203234206279746573"
     "2e2e2e2e2dfbffffffffffffcb04fb711f010000f360d3632fb98b1215c0000000000000fffefdfcfbfaf9f8"
     "f700000000000000", -17228728, None, [0, 0, 1, 6, 8, 28]),
    (ALL_TYPES, _null_at(ALL_VALUES, 9),
     "0000001200000200000000000100000000000000fb000000000000002c0100000000000090eefeff00000000"
     "00000000000100000000204000000000000000000000c0bf180000009800000009000000b000000000000000"
     "00000000fcce3800000000002efbffffffffffff689b0600c000000055f80600c80000009dffffffffffffff"
     "0d000000d000000073686f727400008509000000e00000006120737472696e67206f66203234206279746573"
     "2e2e2e2e010101010101010101000000000000002dfbffffffffffffcb04fb711f010000f360d3632fb98b12"
     "15c0000000000000fffefdfcfbfaf9f8f700000000000000", 2121020389, None, [0, 1, 1, 5, 5, 89]),
    (ALL_TYPES, _null_at(ALL_VALUES, 10),
     "0000001200000400000000000100000000000000fb000000000000002c0100000000000090eefeff00000000"
     "00000000000100000000204000000000000000000000c0bf180000009800000009000000b0000000204e0000"
     "0000000000000000000000002efbffffffffffff689b0600c000000055f80600c80000009dffffffffffffff"
     "0d000000d000000073686f727400008509000000e00000006120737472696e67206f66203234206279746573"
     "2e2e2e2e010101010101010101000000000000002dfbffffffffffffcb04fb711f010000f360d3632fb98b12"
     "15c0000000000000fffefdfcfbfaf9f8f700000000000000", -1826059326, None, [0, 0, 0, 0, 14, 26]),
    (ALL_TYPES, _null_at(ALL_VALUES, 11),
     "0000001200000800000000000100000000000000fb000000000000002c0100000000000090eefeff00000000"
     "00000000000100000000204000000000000000000000c0bf180000009800000009000000b0000000204e0000"
     "00000000fcce3800000000000000000000000000689b0600c000000055f80600c80000009dffffffffffffff"
     "0d000000d000000073686f727400008509000000e00000006120737472696e67206f66203234206279746573"
     "2e2e2e2e010101010101010101000000000000002dfbffffffffffffcb04fb711f010000f360d3632fb98b12"
     "15c0000000000000fffefdfcfbfaf9f8f700000000000000", 1191593797, None, [0, 1, 1, 2, 5, 97]),
    (ALL_TYPES, _null_at(ALL_VALUES, 12),
     "0000001200001000000000000100000000000000fb000000000000002c0100000000000090eefeff00000000"
     "00000000000100000000204000000000000000000000c0bf180000009800000009000000b0000000204e0000"
     "00000000fcce3800000000002efbffffffffffff000000000000000055f80600c00000009dffffffffffffff"
     "0d000000c800000073686f727400008509000000d80000006120737472696e67206f66203234206279746573"
     "2e2e2e2e01010101010101010100000000000000cb04fb711f010000f360d3632fb98b1215c0000000000000"
     "fffefdfcfbfaf9f8f700000000000000", 1444556762,
     ("0000001200001000000000000100000000000000fb000000000000002c0100000000000090eefeff00000000"
     "00000000000100000000204000000000000000000000c0bf180000009800000009000000b0000000204e0000"
     "00000000fcce3800000000002efbffffffffffff00000000c000000055f80600c80000009dffffffffffffff"
     "0d000000d000000073686f727400008509000000e00000006120737472696e67206f66203234206279746573"
     "2e2e2e2e010101010101010101000000000000000000000000000000cb04fb711f010000f360d3632fb98b12"
     "15c0000000000000fffefdfcfbfaf9f8f700000000000000", 1143570094), [0, 0, 1, 2, 14, 94]),
    (ALL_TYPES, _null_at(ALL_VALUES, 13),
     "0000001200002000000000000100000000000000fb000000000000002c0100000000000090eefeff00000000"
     "00000000000100000000204000000000000000000000c0bf180000009800000009000000b0000000204e0000"
     "00000000fcce3800000000002efbffffffffffff689b0600c000000000000000000000009dffffffffffffff"
     "0d000000c800000073686f727400008509000000d80000006120737472696e67206f66203234206279746573"
     "2e2e2e2e010101010101010101000000000000002dfbfffffffffffff360d3632fb98b1215c0000000000000"
     "fffefdfcfbfaf9f8f700000000000000", -1585414497,
     ("0000001200002000000000000100000000000000fb000000000000002c0100000000000090eefeff00000000"
     "00000000000100000000204000000000000000000000c0bf180000009800000009000000b0000000204e0000"
     "00000000fcce3800000000002efbffffffffffff689b0600c000000000000000c80000009dffffffffffffff"
     "0d000000d000000073686f727400008509000000e00000006120737472696e67206f66203234206279746573"
     "2e2e2e2e010101010101010101000000000000002dfbffffffffffff0000000000000000f360d3632fb98b12"
     "15c0000000000000fffefdfcfbfaf9f8f700000000000000", 479122581), [0, 1, 0, 0, 5, 81]),
    (ALL_TYPES, _null_at(ALL_VALUES, 14),
     "0000001200004000000000000100000000000000fb000000000000002c0100000000000090eefeff00000000"
     "00000000000100000000204000000000000000000000c0bf180000009800000009000000b0000000204e0000"
     "00000000fcce3800000000002efbffffffffffff689b0600c000000055f80600c80000000000000000000000"
     "0d000000d000000073686f727400008509000000e00000006120737472696e67206f66203234206279746573"
     "2e2e2e2e010101010101010101000000000000002dfbffffffffffffcb04fb711f010000f360d3632fb98b12"
     "15c0000000000000fffefdfcfbfaf9f8f700000000000000", -2112446217, None, [0, 1, 0, 0, 9, 17]),
    (ALL_TYPES, _null_at(ALL_VALUES, 15),
     "0000001200008000000000000100000000000000fb000000000000002c0100000000000090eefeff00000000"
     "00000000000100000000204000000000000000000000c0bf180000009800000009000000b0000000204e0000"
     "00000000fcce3800000000002efbffffffffffff689b0600c000000055f80600c80000009dffffffffffffff"
     "000000000000000073686f727400008509000000d00000006120737472696e67206f66203234206279746573"
     "2e2e2e2e010101010101010101000000000000002dfbffffffffffffcb04fb711f010000fffefdfcfbfaf9f8"
     "f700000000000000", -1917229085,
     ("0000001200008000000000000100000000000000fb000000000000002c0100000000000090eefeff00000000"
     "00000000000100000000204000000000000000000000c0bf180000009800000009000000b0000000204e0000"
     "00000000fcce3800000000002efbffffffffffff689b0600c000000055f80600c80000009dffffffffffffff"
     "00000000d000000073686f727400008509000000e00000006120737472696e67206f66203234206279746573"
     "2e2e2e2e010101010101010101000000000000002dfbffffffffffffcb04fb711f0100000000000000000000"
     "0000000000000000fffefdfcfbfaf9f8f700000000000000", 1858477782), [0, 0, 0, 0, 6, 82]),
    (ALL_TYPES, _null_at(ALL_VALUES, 16),
     "0000001200000001000000000100000000000000fb000000000000002c0100000000000090eefeff00000000"
     "00000000000100000000204000000000000000000000c0bf180000009800000009000000b0000000204e0000"
     "00000000fcce3800000000002efbffffffffffff689b0600c000000055f80600c80000009dffffffffffffff"
     "0d000000d0000000000000000000000009000000e00000006120737472696e67206f66203234206279746573"
     "2e2e2e2e010101010101010101000000000000002dfbffffffffffffcb04fb711f010000f360d3632fb98b12"
     "15c0000000000000fffefdfcfbfaf9f8f700000000000000", -1796050668, None, [0, 0, 0, 6, 12, 68]),
    (ALL_TYPES, _null_at(ALL_VALUES, 17),
     "0000001200000002000000000100000000000000fb000000000000002c0100000000000090eefeff00000000"
     "00000000000100000000204000000000000000000000c0bf180000009800000009000000b0000000204e0000"
     "00000000fcce3800000000002efbffffffffffff689b0600c000000055f80600c80000009dffffffffffffff"
     "0d000000d000000073686f727400008500000000000000006120737472696e67206f66203234206279746573"
     "2e2e2e2e010101010101010101000000000000002dfbffffffffffffcb04fb711f010000f360d3632fb98b12"
     "15c0000000000000", -558921178, None, [0, 0, 1, 4, 10, 78]),
    (ALL_TYPES, [None] * len(ALL_TYPES),
     "0000001200ffff03000000000000000000000000000000000000000000000000000000000000000000000000"
     "0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
     "0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
     "000000000000000000000000000000000000000000000000", 154275083,
     ("0000001200ffff03000000000000000000000000000000000000000000000000000000000000000000000000"
     "0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
     "0000000000000000000000000000000000000000000000009800000000000000a00000000000000000000000"
     "00000000a8000000000000000000000000000000000000000000000000000000000000000000000000000000"
     "000000000000000000000000", -392735285), [0, 1, 2, 5, 5, 85]),
    (["STRING", "DECIMAL(20, 2)", "TIMESTAMP(6)", "STRING"],
     ["xxxxxxxxxx", None, None, "yyyyyyyyy"],
     "0000000400060000000000000a00000028000000000000000000000000000000000000000900000038000000"
     "7878787878787878787800000000000079797979797979797900000000000000", -1776689792,
     ("0000000400060000000000000a00000028000000000000003800000000000000480000000900000050000000"
     "7878787878787878787800000000000000000000000000000000000000000000000000000000000079797979"
     "797979797900000000000000", 1549956904), [0, 0, 1, 6, 8, 4]),
    (["DECIMAL(38, 0)", "DECIMAL(38, 0)"], [-1, None],
     "00000002000200000000000001000000180000000000000000000000ff000000000000000000000000000000",
     -1610077935,
     ("00000002000200000000000001000000180000000000000028000000ff000000000000000000000000000000"
     "00000000000000000000000000000000", 894555462), [0, 0, 0, 3, 6, 62]),
    (["INT"] * 55, _wide_ints(55),
     "00000037000100800100004000000000000000004f98feff000000003eb7feff000000002dd6feff00000000"
     "1cf5feff000000000b14ffff00000000fa32ffff00000000e951ffff00000000d870ffff00000000c78fffff"
     "00000000b6aeffff00000000a5cdffff0000000094ecffff00000000830b000000000000722a000000000000"
     "614900000000000050680000000000003f870000000000002ea60000000000001dc50000000000000ce40000"
     "00000000fb02010000000000ea2101000000000000000000000000000000000000000000b77e010000000000"
     "a69d01000000000095bc01000000000084db01000000000073fa010000000000621902000000000051380200"
     "0000000040570200000000002f760200000000001e950200000000000db4020000000000fcd2020000000000"
     "ebf1020000000000da10030000000000c92f030000000000b84e030000000000a76d030000000000968c0300"
     "0000000085ab03000000000074ca03000000000063e903000000000052080400000000004127040000000000"
     "30460400000000001f650400000000000e84040000000000fda2040000000000ecc1040000000000dbe00400"
     "000000000000000000000000", -1198558035, None, [0, 1, 0, 3, 3, 35]),
    (["INT"] * 56, _wide_ints(56),
     "0000003800010080010000c000000000000000004f98feff000000003eb7feff000000002dd6feff00000000"
     "1cf5feff000000000b14ffff00000000fa32ffff00000000e951ffff00000000d870ffff00000000c78fffff"
     "00000000b6aeffff00000000a5cdffff0000000094ecffff00000000830b000000000000722a000000000000"
     "614900000000000050680000000000003f870000000000002ea60000000000001dc50000000000000ce40000"
     "00000000fb02010000000000ea2101000000000000000000000000000000000000000000b77e010000000000"
     "a69d01000000000095bc01000000000084db01000000000073fa010000000000621902000000000051380200"
     "0000000040570200000000002f760200000000001e950200000000000db4020000000000fcd2020000000000"
     "ebf1020000000000da10030000000000c92f030000000000b84e030000000000a76d030000000000968c0300"
     "0000000085ab03000000000074ca03000000000063e903000000000052080400000000004127040000000000"
     "30460400000000001f650400000000000e84040000000000fda2040000000000ecc1040000000000dbe00400"
     "0000000000000000000000000000000000000000", 1332413154, None, [0, 0, 0, 2, 2, 54]),
    (["STRING"] * 56, _wide_strings(56),
     "0000003800218410420821840000000000000000733100000000008273327332000000847333733373330086"
     "0000000000000080000000000000000073367336000000847337733773370086000000000000008073390000"
     "00000082000000000000000009000000c8010000000000000000008073313300000000837331347331340086"
     "000000000000000000000000000000807331370000000083733138733138008609000000d801000000000000"
     "000000007332310000000083733232733232008609000000e801000000000000000000800000000000000000"
     "733236733236008609000000f801000000000000000000807332390000000083000000000000000009000000"
     "0802000000000000000000807333330000000083733334733334008600000000000000000000000000000080"
     "7333370000000083733338733338008609000000180200000000000000000000733431000000008373343273"
     "3432008609000000280200000000000000000080000000000000000073343673343600860900000038020000"
     "0000000000000080733439000000008300000000000000000900000048020000000000000000008073353300"
     "0000008373353473353400860000000000000000733131733131733131000000000000007331397331397331"
     "3900000000000000733233733233733233000000000000007332377332377332370000000000000073333173"
     "3331733331000000000000007333397333397333390000000000000073343373343373343300000000000000"
     "7334377334377334370000000000000073353173353173353100000000000000", 2055053738, None,
     [0, 0, 2, 3, 10, 38]),
    (["INT"] * 57, _wide_ints(57),
     "000000390001008001000040010000000000000000000000000000004f98feff000000003eb7feff00000000"
     "2dd6feff000000001cf5feff000000000b14ffff00000000fa32ffff00000000e951ffff00000000d870ffff"
     "00000000c78fffff00000000b6aeffff00000000a5cdffff0000000094ecffff00000000830b000000000000"
     "722a000000000000614900000000000050680000000000003f870000000000002ea60000000000001dc50000"
     "000000000ce4000000000000fb02010000000000ea2101000000000000000000000000000000000000000000"
     "b77e010000000000a69d01000000000095bc01000000000084db01000000000073fa01000000000062190200"
     "00000000513802000000000040570200000000002f760200000000001e950200000000000db4020000000000"
     "fcd2020000000000ebf1020000000000da10030000000000c92f030000000000b84e030000000000a76d0300"
     "00000000968c03000000000085ab03000000000074ca03000000000063e90300000000005208040000000000"
     "412704000000000030460400000000001f650400000000000e84040000000000fda2040000000000ecc10400"
     "00000000dbe00400000000000000000000000000b91e0500000000000000000000000000", -260370123, None,
     [0, 1, 0, 6, 11, 23]),
    (["INT"] * 120, _wide_ints(120),
     "000000780001008001000040000000000000008000000000000000004f98feff000000003eb7feff00000000"
     "2dd6feff000000001cf5feff000000000b14ffff00000000fa32ffff00000000e951ffff00000000d870ffff"
     "00000000c78fffff00000000b6aeffff00000000a5cdffff0000000094ecffff00000000830b000000000000"
     "722a000000000000614900000000000050680000000000003f870000000000002ea60000000000001dc50000"
     "000000000ce4000000000000fb02010000000000ea2101000000000000000000000000000000000000000000"
     "b77e010000000000a69d01000000000095bc01000000000084db01000000000073fa01000000000062190200"
     "00000000513802000000000040570200000000002f760200000000001e950200000000000db4020000000000"
     "fcd2020000000000ebf1020000000000da10030000000000c92f030000000000b84e030000000000a76d0300"
     "00000000968c03000000000085ab03000000000074ca03000000000063e90300000000005208040000000000"
     "412704000000000030460400000000001f650400000000000e84040000000000fda2040000000000ecc10400"
     "00000000dbe00400000000000000000000000000b91e050000000000a83d050000000000975c050000000000"
     "867b050000000000759a05000000000064b905000000000053d805000000000042f705000000000031160600"
     "0000000020350600000000000f54060000000000fe72060000000000ed91060000000000dcb0060000000000"
     "cbcf060000000000baee060000000000a90d070000000000982c070000000000874b070000000000766a0700"
     "00000000658907000000000054a807000000000043c707000000000032e60700000000002105080000000000"
     "1024080000000000ff42080000000000ee61080000000000dd80080000000000cc9f080000000000bbbe0800"
     "00000000aadd08000000000099fc080000000000881b090000000000773a0900000000006659090000000000"
     "5578090000000000449709000000000033b609000000000022d509000000000011f409000000000000130a00"
     "00000000ef310a0000000000de500a0000000000cd6f0a0000000000bc8e0a0000000000abad0a0000000000"
     "9acc0a000000000089eb0a0000000000780a0b000000000067290b000000000056480b000000000045670b00"
     "0000000034860b000000000023a50b000000000012c40b000000000001e30b0000000000f0010c0000000000"
     "df200c0000000000ce3f0c0000000000bd5e0c0000000000ac7d0c00000000009b9c0c00000000008abb0c00"
     "000000000000000000000000", -1353317920, None, [0, 0, 1, 3, 0, 20]),
]
JAVA_BUCKETS = {  # hash -> Java bucket for each of BUCKET_NS
    -2147483648: [0, 0, 2, 2, 0, 48, 648, 1],
    -2147483647: [0, 1, 1, 1, 15, 47, 647, 0],
    -1000000007: [0, 1, 2, 6, 7, 7, 7, 1000000007],
    -7: [0, 1, 1, 0, 7, 7, 7, 7],
    -1: [0, 1, 1, 1, 1, 1, 1, 1],
    0: [0, 0, 0, 0, 0, 0, 0, 0],
    1: [0, 1, 1, 1, 1, 1, 1, 1],
    7: [0, 1, 1, 0, 7, 7, 7, 7],
    1000000007: [0, 1, 2, 6, 7, 7, 7, 1000000007],
    2147483647: [0, 1, 1, 1, 15, 47, 647, 0],
}
