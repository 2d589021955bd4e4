"""Bucket assignment: vectorised XXH64 of canonical key bytes, checked row by row against
the ``xxhash`` package on random keys of every supported type."""

from __future__ import annotations

import datetime as dt
import decimal
import struct

import numpy as np
import pyarrow as pa
import pytest
import xxhash
from hypothesis import given, settings
from hypothesis import strategies as st

from minipaimon_core.bucket import bucket_ids, canonical_key_bytes, key_hashes
from minipaimon_core.errors import InvalidArgumentError

RNG_SEED = 20240601


def reference_hashes(table: pa.Table, keys: list[str]) -> np.ndarray:
    """The oracle: per row, xxhash of the per-row reference encoding."""
    types = [table.schema.field(k).type for k in keys]
    if any(pa.types.is_dictionary(t) for t in types):
        types = [t.value_type if pa.types.is_dictionary(t) else t for t in types]
    rows = table.select(keys).to_pylist()
    return np.array(
        [xxhash.xxh64_intdigest(canonical_key_bytes([r[k] for k in keys], types)) for r in rows],
        dtype=np.uint64,
    )


def assert_matches_reference(table: pa.Table, keys: list[str]) -> None:
    got = key_hashes(table, keys)
    want = reference_hashes(table, keys)
    bad = np.flatnonzero(got != want)
    assert len(bad) == 0, f"rows {bad[:5]} differ: {table.slice(int(bad[0]), 1).to_pylist()}"
    for n in (1, 7, 16, 1000):
        assert np.array_equal(bucket_ids(table, keys, n), (want % np.uint64(n)).astype(np.int32))


def random_strings(rng: np.random.Generator, lengths: list[int]) -> list[str]:
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789-_é€😀"
    out = []
    for n in lengths:
        s = "".join(alphabet[i] for i in rng.integers(0, len(alphabet), n))
        out.append(s)
    return out


def random_column(rng: np.random.Generator, typ: pa.DataType, n: int) -> pa.Array:
    if pa.types.is_boolean(typ):
        return pa.array(rng.integers(0, 2, n).astype(bool))
    if pa.types.is_integer(typ):
        info = np.iinfo(typ.to_pandas_dtype())
        return pa.array(rng.integers(info.min, info.max, n, endpoint=True, dtype=info.dtype))
    if pa.types.is_floating(typ):
        values = rng.normal(0, 1e6, n)
        values[::7] = 0.0
        values[1::7] = -0.0
        values[2::7] = np.nan
        values[3::7] = np.inf
        values[4::7] = -np.inf
        return pa.array(values.astype(typ.to_pandas_dtype()))
    if pa.types.is_decimal(typ):
        bound = 10 ** min(typ.precision, 18)
        digits = rng.integers(-bound + 1, bound, n)
        return pa.array([decimal.Decimal(int(d)).scaleb(-typ.scale) for d in digits], typ)
    if pa.types.is_temporal(typ):
        return temporal_column(rng, typ, n)
    lengths = list(rng.integers(0, 60, n))
    strings = random_strings(rng, lengths)
    if pa.types.is_fixed_size_binary(typ):
        return pa.array([s.encode()[: typ.byte_width].ljust(typ.byte_width, b"\0") for s in strings], typ)
    if pa.types.is_dictionary(typ):
        return pa.array(strings).dictionary_encode()
    if "binary" in str(typ):
        return pa.array([s.encode() for s in strings], typ)
    return pa.array(strings, typ)


def temporal_column(rng: np.random.Generator, typ: pa.DataType, n: int) -> pa.Array:
    """Values that survive ``to_pylist`` (whole days for date64, microseconds for ns)."""
    day = {"s": 86_400, "ms": 86_400_000, "us": 86_400_000_000, "ns": 86_400_000_000_000}
    if pa.types.is_date32(typ):
        raw = rng.integers(-20_000, 50_000, n)
    elif pa.types.is_date64(typ):
        raw = rng.integers(-20_000, 50_000, n) * 86_400_000
    elif pa.types.is_time(typ):
        raw = rng.integers(0, day[typ.unit], n)
    else:  # timestamps and durations: up to ~100 years either side of the epoch
        raw = rng.integers(-(10**9), 10**9, n) * (day[typ.unit] // 86_400) * 3
    if getattr(typ, "unit", None) == "ns":
        raw = raw // 1000 * 1000
    width = pa.int32() if typ.bit_width == 32 else pa.int64()
    return pa.array(raw).cast(width).view(typ)


SINGLE_TYPES = [
    pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint16(), pa.uint32(),
    pa.uint64(), pa.bool_(), pa.float16(), pa.float32(), pa.float64(), pa.date32(),
    pa.date64(), pa.timestamp("s"), pa.timestamp("ms"), pa.timestamp("us", tz="UTC"),
    pa.timestamp("ns", tz="Europe/Berlin"), pa.time32("s"), pa.time32("ms"), pa.time64("us"),
    pa.time64("ns"), pa.duration("us"), pa.decimal128(38, 10), pa.decimal128(10, 2),
    pa.decimal256(20, 3), pa.string(), pa.large_string(), pa.binary(), pa.large_binary(),
    pa.string_view(), pa.binary_view(), pa.binary(5), pa.dictionary(pa.int32(), pa.string()),
]


@pytest.mark.parametrize("typ", SINGLE_TYPES, ids=str)
def test_every_key_type_matches_xxhash(typ: pa.DataType) -> None:
    rng = np.random.default_rng(RNG_SEED)
    if typ == pa.float16():
        arr = pa.array(rng.normal(0, 100, 300).astype(np.float16))
    else:
        arr = random_column(rng, typ, 300)
    assert_matches_reference(pa.table({"k": arr}), ["k"])


def test_strings_of_every_length_cover_all_xxh64_paths() -> None:
    """Lengths 0..100 hit 0-3 stripes and every 8-, 4- and 1-byte tail combination."""
    rng = np.random.default_rng(RNG_SEED)
    lengths = [n for n in range(101) for _ in range(3)] + [127, 128, 129, 1000, 4097]
    order = rng.permutation(len(lengths))
    strings = [random_strings(rng, [lengths[i]])[0] for i in order]
    table = pa.table({"s": pa.array(strings)})
    assert_matches_reference(table, ["s"])
    # pure ASCII: byte length equals the character count
    ascii_ = ["".join(chr(97 + c) for c in rng.integers(0, 26, n)) for n in range(101)]
    assert_matches_reference(pa.table({"s": ascii_}), ["s"])
    got = key_hashes(pa.table({"s": ascii_}), ["s"])
    assert [int(h) for h in got] == [xxhash.xxh64_intdigest(s.encode()) for s in ascii_]


@pytest.mark.parametrize(
    "types",
    [
        [pa.string(), pa.int64()],
        [pa.int64(), pa.decimal128(20, 4), pa.float64()],
        [pa.binary(), pa.string(), pa.int32()],
        [pa.int64()] * 5,  # 40 fixed bytes: one stripe plus a tail on the fixed path
        [pa.int32(), pa.date32(), pa.timestamp("us"), pa.bool_()],
        [pa.large_string(), pa.large_string()],
    ],
    ids=lambda ts: ",".join(map(str, ts)),
)
def test_composite_keys_match_xxhash(types: list[pa.DataType]) -> None:
    rng = np.random.default_rng(RNG_SEED)
    cols = {f"c{i}": random_column(rng, t, 400) for i, t in enumerate(types)}
    assert_matches_reference(pa.table(cols), list(cols))


def test_encoding_is_canonical() -> None:
    """Equal keys of different widths hash alike; -0.0 is 0.0; every NaN is one NaN."""
    ints = [key_hashes(pa.table({"k": pa.array([5, -1], t)}), ["k"]) for t in
            (pa.int8(), pa.int16(), pa.int32(), pa.int64())]
    assert all(np.array_equal(ints[0], other) for other in ints[1:])
    nan2 = struct.unpack("<d", struct.pack("<Q", 0x7FF0000000000001))[0]
    floats = key_hashes(pa.table({"k": [0.0, -0.0, float("nan"), nan2]}), ["k"])
    assert floats[0] == floats[1] and floats[2] == floats[3]
    assert np.array_equal(
        key_hashes(pa.table({"k": pa.array([1.5], pa.float32())}), ["k"]),
        key_hashes(pa.table({"k": [1.5]}), ["k"]),
    )
    # the length prefix keeps ("ab", "c") and ("a", "bc") apart
    t = pa.table({"a": ["ab", "a"], "b": ["c", "bc"]})
    h = key_hashes(t, ["a", "b"])
    assert h[0] != h[1]


def test_golden_values_never_change() -> None:
    """Pinned outputs: a change here re-buckets every existing table."""
    assert int(key_hashes(pa.table({"k": [1]}), ["k"])[0]) == 11468921228449061269
    assert int(key_hashes(pa.table({"k": ["paimon"]}), ["k"])[0]) == 615975309333239268
    assert canonical_key_bytes([decimal.Decimal("-1.5")], [pa.decimal128(5, 1)]) == (
        (-15).to_bytes(16, "little", signed=True))
    assert canonical_key_bytes(["ab", 1], [pa.string(), pa.int64()]) == (
        b"\x02\x00\x00\x00ab" + struct.pack("<q", 1))
    assert canonical_key_bytes([dt.date(1970, 1, 2)], [pa.date32()]) == struct.pack("<q", 1)
    assert bucket_ids(pa.table({"k": list(range(8))}), ["k"], 10).tolist() == [
        xxhash.xxh64_intdigest(struct.pack("<q", i)) % 10 for i in range(8)]


def test_sliced_chunked_and_record_batch_inputs() -> None:
    rng = np.random.default_rng(RNG_SEED)
    table = pa.table({
        "s": random_column(rng, pa.string(), 200),
        "d": random_column(rng, pa.decimal128(30, 5), 200),
        "i": random_column(rng, pa.int64(), 200),
    })
    whole = key_hashes(table, ["s", "d", "i"])
    sliced = table.slice(37, 100)
    assert np.array_equal(key_hashes(sliced, ["s", "d", "i"]), whole[37:137])
    assert np.array_equal(key_hashes(sliced.combine_chunks(), ["d"]), key_hashes(table, ["d"])[37:137])
    chunked = pa.concat_tables([table.slice(0, 50), table.slice(50)])
    assert np.array_equal(key_hashes(chunked, ["s", "d", "i"]), whole)
    batch = table.to_batches()[0]
    assert np.array_equal(key_hashes(batch, ["s", "d", "i"]), whole)


def test_bucket_ids_range_and_dtype() -> None:
    table = pa.table({"k": np.arange(10_000, dtype=np.int64)})
    for n in (1, 3, 8, 1024, 2**31 - 1):
        ids = bucket_ids(table, ["k"], n)
        assert ids.dtype == np.int32 and len(ids) == 10_000
        assert ids.min() >= 0 and ids.max() < n
    assert set(bucket_ids(table, ["k"], 4).tolist()) == {0, 1, 2, 3}
    assert len(bucket_ids(table.slice(0, 0), ["k"], 4)) == 0


def test_errors() -> None:
    table = pa.table({"k": pa.array([1, None]), "s": ["a", "b"], "l": [[1], [2]]})
    with pytest.raises(InvalidArgumentError, match="'k'.*null"):
        bucket_ids(table, ["k"], 4)
    with pytest.raises(InvalidArgumentError, match=">= 1"):
        bucket_ids(table, ["s"], 0)
    with pytest.raises(InvalidArgumentError, match="'missing'"):
        bucket_ids(table, ["missing"], 4)
    with pytest.raises(InvalidArgumentError, match="'l'.*unsupported"):
        bucket_ids(table, ["l"], 4)
    with pytest.raises(InvalidArgumentError, match="at least one"):
        bucket_ids(table, [], 4)
    with pytest.raises(InvalidArgumentError, match="null"):
        canonical_key_bytes([None], [pa.int64()])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.text(max_size=80), st.binary(max_size=80).map(bytes.hex)),
                min_size=1, max_size=40),
       st.lists(st.integers(-(2**63), 2**63 - 1), min_size=40, max_size=40))
def test_property_text_and_int_keys(strings: list[str], ints: list[int]) -> None:
    table = pa.table({"s": strings, "i": pa.array(ints[: len(strings)], pa.int64())})
    assert_matches_reference(table, ["s"])
    assert_matches_reference(table, ["s", "i"])
    assert_matches_reference(table, ["i", "s"])
