"""Java's hashCode() of the values Paimon's merge functions put in hash sets
(minipaimon_core.format.java_hash): each case's value was printed by Java 17 with Paimon
0.9's classes (paimon-python-java-bridge-0.9.0.jar: BinaryString, Decimal, Timestamp) and
the JDK's boxed types; strings also against a plain per-byte transcription of Paimon's
MurmurHashUtils.hashBytes."""

from __future__ import annotations

import datetime as dt
import random
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from minipaimon_core.format.java_hash import java_hashes

JAVA: list[tuple[pa.DataType, list[Any], list[int]]] = [
    (pa.int64(), [-5, 1 << 40, -(1 << 63)], [4, 256, -2147483648]),  # Long.hashCode
    (pa.float64(), [1.5, float("nan"), -0.0], [1073217536, 2146959360, -2147483648]),
    (pa.float32(), [1.5, float("nan")], [1069547520, 2143289344]),
    # Decimal.hashCode (BigDecimal's): compact and inflated unscaled values, both signs
    (pa.decimal128(38, 2), [Decimal("123.45"), Decimal("-123.45"),
                            Decimal("123456789012345678901234567.89"),
                            Decimal("-123456789012345678901234567.89"),
                            Decimal("-92233720368547758.08")],
     [382697, -382693, 354583180, -354583176, -2147483646]),
    (pa.decimal128(5, 1), [Decimal("3.5")], [1086]),
    # Timestamp.fromEpochMillis(1700000000123, 456000) and (-1, 999000)
    (pa.timestamp("us"), [1700000000123456, -1], [751749456, 999000]),
    (pa.bool_(), [True, False], [1231, 1237]),
    (pa.int32(), [7, -7, None], [7, -7, 0]),
    (pa.int16(), [-2], [-2]),
    (pa.date32(), [dt.date(1970, 1, 3)], [2]),
    # BinaryString.hashCode: a HashSet of c1, c0, c2, c3 iterates c3, c2, c1, c0
    (pa.string(), ["c0", "c1", "c2", "c3"], [956191803, -1307940722, 2028705561, -887556648]),
]


@pytest.mark.parametrize(("typ", "values", "want"), JAVA, ids=[str(c[0]) for c in JAVA])
def test_hashes_are_javas(typ: pa.DataType, values: list[Any], want: list[int]) -> None:
    got = java_hashes(pa.array(values, typ))
    assert got is not None
    assert got.view(np.int32).tolist() == want


def _murmur_bytes(data: bytes) -> int:
    """MurmurHashUtils.hashBytes (seed 42), one byte at a time after the whole words."""
    m = 0xFFFFFFFF

    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (32 - r))) & m

    def mix(h: int, k: int) -> int:
        k = rotl(k * 0xCC9E2D51 & m, 15) * 0x1B873593 & m
        return (rotl(h ^ k, 13) * 5 + 0xE6546B64) & m

    h, whole = 42, len(data) // 4 * 4
    for i in range(0, whole, 4):
        h = mix(h, int.from_bytes(data[i:i + 4], "little"))
    for b in data[whole:]:
        h = mix(h, (b - 256 if b > 127 else b) & m)
    h ^= len(data)
    h = (h ^ h >> 16) * 0x85EBCA6B & m
    h = (h ^ h >> 13) * 0xC2B2AE35 & m
    return h ^ h >> 16


def test_string_hashes_of_every_length_match_the_per_byte_transcription() -> None:
    rng = random.Random(3)
    alphabet = "ab€ÿ😀 z"
    values = ["".join(rng.choice(alphabet) for _ in range(rng.randrange(40))) for _ in range(300)]
    got = java_hashes(pa.array(values + [None]))
    assert got is not None
    assert got.tolist() == [_murmur_bytes(v.encode()) for v in values] + [0]
    sliced = pa.array(values, pa.large_string()).slice(5, 50)
    assert java_hashes(sliced).tolist() == [_murmur_bytes(v.encode()) for v in values[5:55]]


def test_types_without_a_reproducible_java_hash() -> None:
    assert java_hashes(pa.array([b"x"], pa.binary())) is None  # byte[]: identity
    assert java_hashes(pa.array([[1]], pa.list_(pa.int32()))) is None
