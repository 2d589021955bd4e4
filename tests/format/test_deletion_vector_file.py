"""Paimon V1 deletion-vector index files: round trips, known answers, damage.

Known answers were produced once, outside this test (neither Java nor pyroaring is imported
here): ``JAVA`` holds, per pattern, the roaring payload Paimon 0.9's
``BitmapDeletionVector.serializeToBytes`` wrote (jar of pypaimon 0.2.0, positions added with
``delete()`` and also via ``DeletionVector.deserializeFromBytes``); pyroaring 1.2.0's
``BitMap(p); run_optimize(); serialize()`` gave the same bytes for every pattern. ``PLAIN``
holds pyroaring's ``BitMap(p, optimize=False).serialize()`` (no run containers) where it
differs. Payloads over 120 bytes are recorded as the sha256 of the payload.
"""

from __future__ import annotations

import glob
import hashlib
import io
import os
import struct
import zlib
from typing import Any

import numpy as np
import pytest
import zstandard

from minipaimon_core.errors import (
    CorruptMetadataError,
    InvalidArgumentError,
    UnsupportedFeatureError,
)
from minipaimon_core.format.deletion_vector_file import (
    DeletionVectorRange,
    _serialize,
    decode_index_file,
    decode_vector,
    encode_index_file,
)

PATH = "warehouse/db.db/t/index/index-test-0"


def _hashed(n: int, universe: int, mult: int = 2654435761) -> np.ndarray:
    """About n distinct positions below universe from a multiplicative hash (no RNG)."""
    i = np.arange(n, dtype=np.uint64)
    return np.unique((i * np.uint64(mult)) % np.uint64(universe)).astype(np.uint32)


def _runs(count: int, length: int, gap: int, base: int = 0) -> np.ndarray:
    """count runs of `length` values separated by `gap` missing values."""
    starts = base + np.arange(count, dtype=np.int64) * (length + gap)
    return (starts[:, None] + np.arange(length)).ravel().astype(np.uint32)


def _u32(*parts: object) -> np.ndarray:
    return np.concatenate([np.atleast_1d(np.asarray(p, dtype=np.int64)) for p in parts]).astype(
        np.uint32
    )


PATTERNS: dict[str, np.ndarray] = {
    "row_1": _u32([1]),
    "row_0": _u32([0]),
    "chunk_edges": _u32([65535, 65536]),
    "three_array": _u32([0, 1, 2]),
    "four_run": _u32([0, 1, 2, 3]),
    "two_runs_card5_array": _u32([0, 1, 2, 4, 5]),
    "two_runs_card6_run": _u32([0, 1, 2, 4, 5, 6]),
    "u32_extremes": _u32([0, 2**31 - 1, 2**31, 2**32 - 2, 2**32 - 1]),
    "array_4096": np.arange(0, 8192, 2, dtype=np.uint32),
    "bitmap_4097": np.arange(0, 8194, 2, dtype=np.uint32),
    "ten_arrays": _u32(np.arange(10) * 65536 + (np.arange(10) * 7919) % 65536),
    "three_with_runs": _u32(np.arange(10), np.arange(65541, 65557), 200000),
    "five_with_runs": _u32(
        np.arange(10), 70000, np.arange(140000, 140100), 300000, np.arange(400000, 400003)
    ),
    "full_chunk": np.arange(65536, 65536 * 2, dtype=np.uint32),
    "bitmap_2047_runs": _runs(2047, 3, 1),
    "bitmap_2048_runs": _runs(2048, 3, 1),
    "sparse_1k_of_10m": _hashed(1000, 10_000_000),
    "dense_1m_of_10m": _hashed(1_000_000, 10_000_000),
    "mixed": _u32(
        _runs(50, 100, 20),
        _hashed(3000, 65536).astype(np.int64) + 2 * 65536,
        np.arange(5 * 65536, 5 * 65536 + 40000, 3),
    ),
}

JAVA = {
    "row_1": "3a3000000100000000000000100000000100",
    "row_0": "3a3000000100000000000000100000000000",
    "chunk_edges": "3a300000020000000000000001000000180000001a000000ffff0000",
    "three_array": "3a300000010000000000020010000000000001000200",
    "four_run": "3b3000000100000300010000000300",
    "two_runs_card5_array": "3a30000001000000000004001000000000000100020004000500",
    "two_runs_card6_run": "3b300000010000050002000000020004000200",
    "u32_extremes": "3a3000000400000000000000ff7f000000800000ffff0100280000002a0000002c00"
    "00002e0000000000ffff0000feffffff",
    "array_4096": "sha256:94ffe61b4714334a0ec6ec81d2c7923cc9fdfb3362f1a91c3397d730f789d4bc",
    "bitmap_4097": "sha256:e9985b0e78c9b1e945def79394b0dd2e16049bb0db7070f44b8f023d91ee18df",
    "ten_arrays": "3a3000000a000000000000000100000002000000030000000400000005000000060000"
    "00070000000800000009000000580000005a0000005c0000005e0000006000000062000000640000006600"
    "0000680000006a0000000000ef1ede3dcd5cbc7bab9a9ab989d878f76716",
    "three_with_runs": "3b300200030000090001000f0003000000010000000900010005000f00400d",
    "five_with_runs": "3b3004000500000900010000000200630004000000060002002d0000003300000035"
    "0000003b0000003d00000001000000090070110100e0226300e093801a811a821a",
    "full_chunk": "3b300000010100ffff01000000ffff",
    "bitmap_2047_runs": "sha256:874d518e6aa59080c9c3a76c3f5bbe89c3943438345a130ca5c04bf40ff82c91",
    "bitmap_2048_runs": "sha256:1a18c75d397157808dd559461e6546afd12510a6fa2c255ad892047680004398",
    "sparse_1k_of_10m": "sha256:8c7183265a52665dd2649774d8d09040692e472b70248e4d4fc890ac9a8b641e",
    "dense_1m_of_10m": "sha256:bc1ec7f6345eb91b5e180f9518d9ab1a707fb8ad4715e8051d98327c6e4487f6",
    "mixed": "sha256:43d91e6fde97aabdcc60ab9e51594feecddf38889c4d8d6e3f63922bdaedfce9",
}

PLAIN = {
    "four_run": "3a3000000100000000000300100000000000010002000300",
    "two_runs_card6_run": "3a300000010000000000050010000000000001000200040005000600",
    "three_with_runs": "3a300000030000000000090001000f000300000020000000340000005400000000000100"
    "02000300040005000600070008000900050006000700080009000a000b000c000d000e000f0010001100"
    "120013001400400d",
    "five_with_runs": "sha256:a79e251150f984bd89f482e5c7d807e355428bbb7e76372741fba838c78143cd",
    "full_chunk": "sha256:a6d25b4672e5f34492fb31dc1a4e8d86565235ed8cb6c4f22f7783af6f9e2f7f",
    "bitmap_2047_runs": "sha256:da2ee10eaf7d870cdc5745583c724c820cda5f4ff5ea1fa7392913cea9d3ed79",
    "mixed": "sha256:086143901ebe3ca676c300d7790efb50861e647e569efff06ee1de7015af8646",
}

# The spec's VERIFIED Java 0.9 index file: one vector deleting row 1.
JAVA_ROW_1_FILE = "01000000165e43f2d03a3000000100000000000000100000000100fa2b5192"

# A Java 0.9 index file from a table with deletion vectors (bucket 1 of
# /work/notes/samples/java09/db.db/d_pk_dv), the ranges its index manifest lists, and the
# positions pyroaring read from it. The second vector is a run container.
JAVA_TWO_VECTOR_FILE = (
    "010000001a5e43f2d03a300000010000000000020010000000000001000200dd861c02000000135e43f2d0"
    "3b3000000100000500010002000500f25d6841"
)
JAVA_TWO_VECTOR_RANGES = [
    DeletionVectorRange("data-6f7b7ce7-4da5-4b67-a112-c86fc3cb9f6d-0.parquet", 1, 26, -1),
    DeletionVectorRange("data-051b7e3b-4fb4-4a9e-9f8d-9b68c012b7f2-0.parquet", 35, 19, -1),
]
JAVA_TWO_VECTOR_POSITIONS = [[0, 1, 2], [2, 3, 4, 5, 6, 7]]

SAMPLES = "/work/notes/samples/java09"


def _matches(payload: bytes, expected: str) -> bool:
    if expected.startswith("sha256:"):
        return hashlib.sha256(payload).hexdigest() == expected[len("sha256:") :]
    return payload.hex() == expected


def _payload(data: bytes, r: DeletionVectorRange) -> bytes:
    return data[r.offset + 8 : r.offset + 4 + r.length]


def _forge(payload: bytes, magic: int = 1581511376) -> tuple[bytes, DeletionVectorRange]:
    """An index file with one vector whose size and CRC fit an arbitrary roaring payload."""
    body = struct.pack(">i", magic) + payload
    data = b"\x01" + struct.pack(">i", len(body)) + body + struct.pack(">I", zlib.crc32(body))
    return data, DeletionVectorRange("f.parquet", 1, len(body), -1)


def _roundtrip(vectors: list[tuple[str, np.ndarray]]) -> bytes:
    data, ranges = encode_index_file(vectors)
    decoded = decode_index_file(data, ranges, PATH)
    assert list(decoded) == [name for name, _ in vectors]
    for (name, positions), r in zip(vectors, ranges):
        assert decoded[name].dtype == np.uint32
        np.testing.assert_array_equal(decoded[name], positions)
        assert r.file_name == name and r.cardinality == len(positions)
        np.testing.assert_array_equal(decode_vector(memoryview(data), r, PATH), positions)
    assert encode_index_file(list(decoded.items()))[0] == data
    return data


# ----------------------------------------------------------------------------- round trips


def test_empty_file_is_the_version_byte() -> None:
    assert encode_index_file([]) == (b"\x01", [])
    assert decode_index_file(b"\x01", [], PATH) == {}


@pytest.mark.parametrize(
    "positions",
    [
        [],
        [0],
        [7],
        [65535],
        [65536],
        [65535, 65536],
        [2**32 - 1],
        [0, 2**31, 2**32 - 1],
        list(range(65536)),
        list(range(100_000)),
    ],
    ids=repr,
)
def test_roundtrip_small_sets(positions: list[int]) -> None:
    _roundtrip([("f.parquet", np.array(positions, dtype=np.uint32))])


@pytest.mark.parametrize("step", [1, 2, 3])
def test_array_up_to_4096_values_then_bitmap(step: int) -> None:
    """A chunk of 4096 values is an array container (8192 bytes), 4097 a bitmap (8192 bytes),
    unless runs are smaller (step 1: one run)."""
    for count in (4095, 4096, 4097):
        positions = np.arange(0, step * count, step, dtype=np.uint32)
        data = _roundtrip([("f", positions)])
        (r,) = encode_index_file([("f", positions)])[1]
        payload = _payload(data, r)
        expected = 15 if step == 1 else 16 + (2 * count if count <= 4096 else 8192)
        assert len(payload) == expected


@pytest.mark.parametrize("containers", [1, 2, 3, 4, 5, 17, 300])
def test_roundtrip_container_counts(containers: int) -> None:
    """Below 4 containers a bitmap with runs has no offset header; from 4 on it has one."""
    rng = np.random.default_rng(containers)
    chunks = [
        k * 65536 + np.unique(rng.integers(0, 65536, size=int(rng.integers(1, 9000))))
        for k in np.sort(rng.choice(65536, containers, replace=False))
    ]
    chunks[0] = np.arange(chunks[0][0], chunks[0][0] + 10)  # one run container
    positions = np.unique(np.concatenate(chunks)).astype(np.uint32)
    payload = _payload(_roundtrip([("f", positions)]), encode_index_file([("f", positions)])[1][0])
    assert payload[:2] == struct.pack("<H", 12347)
    header = 4 + (containers + 7) // 8 + 4 * containers
    has_offsets = containers >= 4
    if has_offsets:
        (first_offset,) = struct.unpack_from("<I", payload, header)
        assert first_offset == header + 4 * containers
    assert len(payload) > header + (4 * containers if has_offsets else 0)


@pytest.mark.parametrize("seed", range(40))
def test_roundtrip_random_sets(seed: int) -> None:
    """Random mixes of sparse points, runs and dense chunks, several vectors per file."""
    rng = np.random.default_rng(seed)
    vectors = []
    for v in range(int(rng.integers(1, 4))):
        parts = [rng.integers(0, 2**32, size=int(rng.integers(0, 50)), dtype=np.uint64)]
        for _ in range(int(rng.integers(0, 4))):
            base = int(rng.integers(0, 2**32 - 200_000))
            span = int(rng.integers(1, 200_000))
            density = float(rng.choice([0.001, 0.05, 0.5, 0.97, 1.0]))
            picked = np.flatnonzero(rng.random(span) < density) + base
            parts.append(picked.astype(np.uint64))
        positions = np.unique(np.concatenate(parts)).astype(np.uint32)
        vectors.append((f"data-{v}.parquet", positions))
    data = _roundtrip(vectors)
    # Without run containers the same sets decode too (cookie 12346, offsets always).
    for _, positions in vectors:
        plain_data, r = _forge(_serialize(positions, run_optimize=False))
        np.testing.assert_array_equal(decode_vector(plain_data, r, PATH), positions)
    assert data[0] == 1


def test_ranges_locate_each_vector() -> None:
    vectors = [("a", _u32([1])), ("b", _u32([0, 1, 2, 3])), ("c", _u32([]))]
    data, ranges = encode_index_file(vectors)
    assert [(r.offset, r.length, r.cardinality) for r in ranges] == [
        (1, 22, 1),
        (31, 19, 4),
        (58, 12, 0),
    ]
    assert len(data) == 58 + 8 + 12
    # Any subset, in any order, decodes on its own.
    assert list(decode_index_file(data, ranges[::-1][:2], PATH)) == ["c", "b"]


def test_encode_accepts_any_integer_dtype() -> None:
    data32, _ = encode_index_file([("f", np.array([3, 70000], dtype=np.uint32))])
    for dtype in (np.int64, np.uint64, np.int32):
        assert encode_index_file([("f", np.array([3, 70000], dtype=dtype))])[0] == data32


@pytest.mark.parametrize(
    "vectors",
    [
        [("f", np.array([2, 1], dtype=np.int64))],
        [("f", np.array([1, 1], dtype=np.int64))],
        [("f", np.array([-1, 1], dtype=np.int64))],
        [("f", np.array([2**32], dtype=np.int64))],
        [("f", np.array([[1, 2]], dtype=np.int64))],
        [("f", np.array([1.0, 2.0]))],
        [("f", np.array([1], dtype=np.int64)), ("f", np.array([2], dtype=np.int64))],
    ],
)
def test_encode_rejects_bad_input(vectors: list[tuple[str, np.ndarray]]) -> None:
    with pytest.raises(InvalidArgumentError, match="f"):
        encode_index_file(vectors)


# --------------------------------------------------------------------------- known answers


def test_spec_java_file_row_1() -> None:
    data, ranges = encode_index_file([("data-0.parquet", _u32([1]))])
    assert data.hex() == JAVA_ROW_1_FILE
    assert ranges == [DeletionVectorRange("data-0.parquet", 1, 22, 1)]
    decoded = decode_index_file(bytes.fromhex(JAVA_ROW_1_FILE), ranges, PATH)
    np.testing.assert_array_equal(decoded["data-0.parquet"], [1])


def test_java_written_two_vector_file() -> None:
    data = bytes.fromhex(JAVA_TWO_VECTOR_FILE)
    decoded = decode_index_file(data, JAVA_TWO_VECTOR_RANGES, PATH)
    assert [d.tolist() for d in decoded.values()] == JAVA_TWO_VECTOR_POSITIONS
    vectors = [
        (r.file_name, _u32(p)) for r, p in zip(JAVA_TWO_VECTOR_RANGES, JAVA_TWO_VECTOR_POSITIONS)
    ]
    ours, ranges = encode_index_file(vectors)
    assert ours == data
    assert [(r.offset, r.length) for r in ranges] == [(1, 26), (35, 19)]


@pytest.mark.parametrize("name", list(PATTERNS))
def test_payload_equals_java_runoptimized_serialization(name: str) -> None:
    positions = PATTERNS[name]
    data, (r,) = encode_index_file([(name, positions)])
    payload = _payload(data, r)
    assert _matches(payload, JAVA[name])
    np.testing.assert_array_equal(decode_vector(data, r, PATH), positions)


@pytest.mark.parametrize("name", list(PATTERNS))
def test_plain_serialization_equals_pyroaring(name: str) -> None:
    """Without runOptimize the payload is pyroaring's ``BitMap(p, optimize=False)`` one, and
    it decodes to the same positions."""
    payload = _serialize(PATTERNS[name], run_optimize=False)
    assert _matches(payload, PLAIN.get(name, JAVA[name]))
    data, r = _forge(payload)
    np.testing.assert_array_equal(decode_vector(data, r, PATH), PATTERNS[name])


@pytest.mark.parametrize("name", [n for n, h in {**JAVA, **PLAIN}.items() if "sha" not in h])
def test_decode_embedded_foreign_payloads(name: str) -> None:
    """Bytes written by Java / pyroaring (run-optimized and plain) decode without our
    encoder in the loop."""
    for table in (JAVA, PLAIN):
        if name in table and not table[name].startswith("sha256:"):
            data, r = _forge(bytes.fromhex(table[name]))
            np.testing.assert_array_equal(decode_vector(data, r, PATH), PATTERNS[name])


def _zstd_block(fo: Any) -> io.BytesIO:
    """fastavro block reader for Paimon's zstd manifests (fastavro's own needs
    backports.zstd): varint length, then one zstd frame without a content size."""
    size = shift = 0
    while True:
        byte = fo.read(1)[0]
        size |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            break
    data = fo.read((size >> 1) ^ -(size & 1))
    return io.BytesIO(zstandard.ZstdDecompressor().decompressobj().decompress(data))


def _sample_index_files(
    monkeypatch: pytest.MonkeyPatch,
) -> list[tuple[str, list[DeletionVectorRange]]]:
    fastavro_read = pytest.importorskip("fastavro._read")
    monkeypatch.setitem(fastavro_read.BLOCK_READERS, "zstandard", _zstd_block)
    import fastavro

    found = []
    for manifest in sorted(glob.glob(f"{SAMPLES}/*/*/manifest/index-manifest-*")):
        table_dir = os.path.dirname(os.path.dirname(manifest))
        with open(manifest, "rb") as f:
            entries: list[dict[str, Any]] = list(fastavro.reader(f))  # type: ignore[arg-type]
            for entry in entries:
                if entry["_INDEX_TYPE"] != "DELETION_VECTORS":
                    continue
                ranges = [
                    DeletionVectorRange(m["f0"], m["f1"], m["f2"], m.get("_CARDINALITY") or -1)
                    for m in entry["_DELETIONS_VECTORS_RANGES"]
                ]
                found.append((os.path.join(table_dir, "index", entry["_FILE_NAME"]), ranges))
    return found


@pytest.mark.skipif(not os.path.isdir(SAMPLES), reason="no Java 0.9 samples on this machine")
def test_java_sample_tables_decode_and_reencode_identically(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every index file the Java 0.9 sample tables hold, located by their index manifests:
    decodes, and our encoder writes the same bytes and ranges back."""
    files = [(p, r) for p, r in _sample_index_files(monkeypatch) if os.path.exists(p)]
    if not any(ranges for _, ranges in files):
        pytest.skip("no deletion vectors among the Java samples")
    for path, ranges in files:
        with open(path, "rb") as f:
            data = f.read()
        decoded = decode_index_file(data, ranges, path)
        expected = [
            DeletionVectorRange(r.file_name, r.offset, r.length, len(decoded[r.file_name]))
            for r in ranges
        ]
        assert encode_index_file(list(decoded.items())) == (data, expected)


# ---------------------------------------------------------------------------------- damage

SMALL = [("a.parquet", _u32([1, 5, 70000])), ("b.parquet", _u32(np.arange(100, 140), 65536 * 3))]


def test_every_truncation_is_corruption() -> None:
    data, ranges = encode_index_file(SMALL)
    for cut in range(len(data)):
        with pytest.raises(CorruptMetadataError, match=PATH):
            decode_index_file(data[:cut], ranges, PATH)


def test_every_single_bit_flip_is_corruption() -> None:
    data, ranges = encode_index_file(SMALL)
    for bit in range(8 * len(data)):
        damaged = bytearray(data)
        damaged[bit // 8] ^= 1 << (bit % 8)
        with pytest.raises(CorruptMetadataError, match=PATH):
            decode_index_file(bytes(damaged), ranges, PATH)


def _flip(data: bytes, at: int) -> bytes:
    return data[:at] + bytes([data[at] ^ 0x10]) + data[at + 1 :]


@pytest.mark.parametrize(
    ("where", "message"),
    [(1, "size"), (5, "magic"), (12, "CRC32"), (-1, "CRC32")],
    ids=["size", "magic", "bitmap", "crc"],
)
def test_flipped_bit_names_the_field(where: int, message: str) -> None:
    data, ranges = encode_index_file(SMALL[:1])
    with pytest.raises(CorruptMetadataError, match=message) as e:
        decode_index_file(_flip(data, where % len(data)), ranges, PATH)
    assert PATH in str(e.value) and "a.parquet" in str(e.value)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"length": 25}, "size"),
        ({"length": 2}, "outside"),
        ({"length": 10_000}, "outside"),
        ({"offset": 0}, "size"),
        ({"offset": 2}, "size"),
        ({"offset": -1}, "outside"),
        ({"cardinality": 2}, "manifest says 2"),
    ],
)
def test_wrong_range_is_corruption(change: dict[str, int], message: str) -> None:
    data, (r, _) = encode_index_file(SMALL)
    bad = DeletionVectorRange(**{**r.__dict__, **change})
    with pytest.raises(CorruptMetadataError, match=message):
        decode_vector(data, bad, PATH)


def test_unknown_cardinality_is_not_checked() -> None:
    data, (r,) = encode_index_file(SMALL[:1])
    unknown = DeletionVectorRange(r.file_name, r.offset, r.length, -1)
    np.testing.assert_array_equal(decode_vector(data, unknown, PATH), SMALL[0][1])


def test_version_2_is_bitmap64_and_unsupported() -> None:
    data, ranges = encode_index_file(SMALL)
    with pytest.raises(UnsupportedFeatureError, match="deletion-vectors.bitmap64") as e:
        decode_index_file(b"\x02" + data[1:], ranges, PATH)
    assert PATH in str(e.value)


@pytest.mark.parametrize("version", [b"", b"\x00", b"\x03", b"\xff"])
def test_unknown_version_is_corruption(version: bytes) -> None:
    with pytest.raises(CorruptMetadataError, match=PATH):
        decode_index_file(version + b"\x00" * 30, [], PATH)


def test_bitmap64_vector_is_unsupported() -> None:
    data, r = _forge(bytes(12), magic=struct.unpack("<i", struct.pack(">i", 1681511377))[0])
    with pytest.raises(UnsupportedFeatureError, match="bitmap64"):
        decode_vector(data, r, PATH)


def _desc(*key_card: tuple[int, int]) -> bytes:
    return b"".join(struct.pack("<HH", k, c - 1) for k, c in key_card)


MALFORMED = {
    "empty payload": (b"", "truncated"),
    "unknown cookie": (struct.pack("<II", 12345, 0), "cookie"),
    "too many containers": (struct.pack("<II", 12346, 65537), "containers"),
    "missing descriptions": (struct.pack("<II", 12346, 2) + _desc((0, 1)), "truncated"),
    "keys not increasing": (
        struct.pack("<II", 12346, 2)
        + _desc((1, 1), (1, 1))
        + struct.pack("<II", 24, 26)
        + struct.pack("<HH", 0, 0),
        "keys",
    ),
    "wrong offset": (
        struct.pack("<II", 12346, 1) + _desc((0, 1)) + struct.pack("<I", 17) + b"\x00\x00",
        "offset",
    ),
    "array not sorted": (
        struct.pack("<II", 12346, 1) + _desc((0, 2)) + struct.pack("<IHH", 16, 5, 3),
        "sorted",
    ),
    "array duplicate": (
        struct.pack("<II", 12346, 1) + _desc((0, 2)) + struct.pack("<IHH", 16, 5, 5),
        "sorted",
    ),
    "array short": (
        struct.pack("<II", 12346, 1) + _desc((0, 3)) + struct.pack("<IH", 16, 1),
        "truncated",
    ),
    "bitmap cardinality": (
        struct.pack("<II", 12346, 1) + _desc((0, 4097)) + struct.pack("<I", 16) + b"\xff" * 8192,
        "bits",
    ),
    "trailing bytes": (bytes.fromhex(JAVA["row_1"]) + b"\x00", "left over"),
    "run overlap": (
        struct.pack("<I", 12347) + b"\x01" + _desc((0, 8)) + struct.pack("<HHHHH", 2, 0, 3, 2, 3),
        "overlap",
    ),
    "run unsorted": (
        struct.pack("<I", 12347) + b"\x01" + _desc((0, 4)) + struct.pack("<HHHHH", 2, 10, 1, 0, 1),
        "overlap",
    ),
    "run past 65535": (
        struct.pack("<I", 12347) + b"\x01" + _desc((0, 2)) + struct.pack("<HHH", 1, 65535, 1),
        "65535",
    ),
    "run cardinality": (
        struct.pack("<I", 12347) + b"\x01" + _desc((0, 5)) + struct.pack("<HHH", 1, 0, 3),
        "holds 4",
    ),
    "run count truncated": (
        struct.pack("<I", 12347) + b"\x01" + _desc((0, 5)) + struct.pack("<HHH", 2, 0, 4),
        "truncated",
    ),
}


@pytest.mark.parametrize("name", list(MALFORMED))
def test_malformed_roaring_with_valid_crc(name: str) -> None:
    payload, message = MALFORMED[name]
    data, r = _forge(payload)
    with pytest.raises(CorruptMetadataError, match=message) as e:
        decode_vector(data, r, PATH)
    assert PATH in str(e.value) and "malformed roaring bitmap" in str(e.value)


def test_mutated_payloads_never_escape_as_other_errors() -> None:
    """Random byte changes behind a recomputed CRC: decoded (to sorted, distinct positions)
    or CorruptMetadataError, never IndexError / ValueError / struct.error."""
    rng = np.random.default_rng(7)
    seeds = [_serialize(PATTERNS[n]) for n in ("ten_arrays", "five_with_runs", "bitmap_4097")]
    seeds += [_serialize(PATTERNS["five_with_runs"], run_optimize=False)]
    for trial in range(1500):
        payload = bytearray(seeds[trial % len(seeds)])
        for _ in range(int(rng.integers(1, 4))):
            at = int(rng.integers(0, min(len(payload), 64 if trial % 2 else len(payload))))
            payload[at] = int(rng.integers(0, 256))
        if trial % 5 == 0:
            payload = payload[: int(rng.integers(0, len(payload)))]
        data, r = _forge(bytes(payload))
        try:
            positions = decode_vector(data, r, PATH)
        except CorruptMetadataError:
            continue
        assert positions.dtype == np.uint32
        assert positions.size < 2 or bool(np.all(positions[1:] > positions[:-1]))
