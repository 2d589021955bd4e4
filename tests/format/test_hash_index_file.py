"""The HASH index file codec (Paimon's ``IntFileUtils``: big-endian int32s)."""

from __future__ import annotations

import numpy as np
import pytest

from minipaimon_core.errors import CorruptMetadataError
from minipaimon_core.format import hash_index_file


def test_hashes_are_big_endian_int32s_sorted_and_distinct():
    data = hash_index_file.encode(np.array([5, -1, 5, 1 << 30], dtype=np.int32))
    assert data == bytes.fromhex("ffffffff" "00000005" "40000000")


def test_round_trip_gives_the_same_bytes():
    rng = np.random.default_rng(7)
    hashes = rng.integers(-(1 << 31), 1 << 31, 10_000).astype(np.int32)
    data = hash_index_file.encode(hashes)
    decoded = hash_index_file.decode(data, "index-x", len(np.unique(hashes)))
    assert hash_index_file.encode(decoded) == data
    assert set(decoded.tolist()) == set(hashes.tolist())


def test_any_order_is_read_as_java_writes_it():
    java = np.array([7, -3, 100], dtype=">i4").tobytes()  # an IntHashSet's order
    assert hash_index_file.decode(java, "index-x", 3).tolist() == [7, -3, 100]


@pytest.mark.parametrize(("data", "count", "what"), [
    (b"\x00\x00\x00\x01\x00", None, "multiple of 4"),
    (b"\x00\x00\x00\x01", 2, "says 2"),
])
def test_a_damaged_file_is_corrupt_metadata(data, count, what):
    with pytest.raises(CorruptMetadataError, match=what):
        hash_index_file.decode(data, "index-x", count)
