"""The pure parts of dynamic-bucket assignment, as tables of cases: filling buckets
(Java's HashBucketAssigner rules), the partition index, and the sorted-set helpers."""

from __future__ import annotations

import numpy as np
import pytest

from minipaimon_core.dynamic.assigner import (
    MAX_BUCKETS,
    HashAssigner,
    PartitionIndex,
    fill,
    lanes_of,
)
from minipaimon_core.dynamic.hash_index import union
from minipaimon_core.errors import InvalidArgumentError
from minipaimon_core.expressions.sets import distinct, search

FILL_CASES = [
    # (counts before, lanes of the new keys, number of lanes, target) -> buckets, counts after
    ({}, [0, 0, 0, 0, 0], 1, 2, [0, 0, 1, 1, 2], {0: 2, 1: 2, 2: 1}),
    ({0: 2, 1: 1}, [0, 0, 0], 1, 2, [1, 2, 2], {0: 2, 1: 2, 2: 2}),  # the open bucket first
    ({0: 5, 2: 1}, [0, 0], 1, 5, [2, 2], {0: 5, 2: 3}),  # a gap is not refilled before 2 is full
    ({0: 5, 2: 5}, [0], 1, 5, [1], {0: 5, 1: 1, 2: 5}),  # the lowest unused id
    ({}, [0, 1, 0, 1, 1], 2, 1, [0, 1, 2, 3, 5], {0: 1, 1: 1, 2: 1, 3: 1, 5: 1}),  # lanes own b % n
    ({1: 1}, [1, 0], 2, 3, [1, 0], {0: 1, 1: 2}),
]


@pytest.mark.parametrize(("counts", "lanes", "n", "target", "want", "after"), FILL_CASES)
def test_new_keys_fill_buckets_as_paimon(counts, lanes, n, target, want, after):
    counts = dict(counts)
    got = fill(counts, np.array(lanes, dtype=np.int64), n, target)
    assert got.tolist() == want and counts == after


def test_a_key_past_the_last_bucket_id_is_refused():
    counts = {b: 1 for b in range(MAX_BUCKETS - 1)}
    assert fill(dict(counts), np.zeros(1, np.int64), 1, 1).tolist() == [MAX_BUCKETS - 1]
    with pytest.raises(InvalidArgumentError, match="target-row-num"):
        fill(dict(counts), np.zeros(2, np.int64), 1, 1, "partition ['a']")


def test_lanes_are_javas_abs_of_the_remainder():
    assert lanes_of(np.array([-7, -6, 0, 5, 2**31 - 1], dtype=np.int32), 3).tolist() == [1, 0, 0, 2, 1]


@pytest.mark.parametrize("buckets", [3, 40], ids=["file-by-file", "merged"])
def test_the_partition_index_finds_each_hash_in_its_lowest_bucket(buckets):
    rng = np.random.default_rng(buckets)
    files = {b: distinct(rng.integers(-1000, 1000, 30).astype(np.int32)) for b in range(buckets)}
    index = PartitionIndex(files)
    queries = rng.integers(-1200, 1200, 500).astype(np.int32)
    want = [min((b for b, h in files.items() if q in h), default=-1) for q in queries.tolist()]
    assert index.lookup(queries).tolist() == want
    assert index.counts == {b: len(h) for b, h in files.items()}
    new = np.array([5000, 5001], dtype=np.int32)
    index.add(new, np.array([buckets, 0], dtype=np.int32))
    assert index.lookup(np.array([5001, 5000], dtype=np.int32)).tolist() == [0, buckets]
    assert index.counts[buckets] == 1 and index.counts[0] == len(files[0]) + 1


def test_search_finds_positions_of_any_dtype():
    for dtype in (np.int32, np.uint64):
        values = distinct(np.array([9, 3, 7, 1], dtype=dtype))
        assert search(values, np.array([7, 2, 9, 1], dtype=dtype)).tolist() == [2, -1, 3, 0]


@pytest.mark.parametrize(("have", "new", "want"), [
    ([], [1, 2], [1, 2]), ([1, 5], [], [1, 5]), ([1, 5], [0, 5, 9], [0, 1, 5, 9]),
    ([1, 5, 7], [5, 7], [1, 5, 7]), ([-3, 4], [-4, 0, 8], [-4, -3, 0, 4, 8]),
])
def test_a_buckets_new_hashes_merge_into_its_file(have, new, want):
    got = union(np.array(have, dtype=np.int32), np.array(new, dtype=np.int32))
    assert got.tolist() == want


def _route_model(files, batches, lanes, target):
    """The buckets of each batch's rows and the distinct hashes each bucket gets, computed
    the plain way: look up, rank new keys by first arrival, fill, then group per bucket."""
    index, out = PartitionIndex(files), []
    for hashes in batches:
        buckets = index.lookup(hashes)
        unknown = np.flatnonzero(buckets < 0)
        if len(unknown):
            arrived = hashes[unknown].tolist()
            first = list(dict.fromkeys(arrived))  # distinct, in the order they first arrive
            new = np.array(first, dtype=hashes.dtype)
            inverse = np.array([first.index(h) for h in arrived], dtype=np.int64)
            assigned = fill(dict(index.counts), lanes_of(new, lanes), lanes, target)
            index.add(new, assigned)
            buckets[unknown] = assigned[inverse]
        out.append((buckets.tolist(), {b: distinct(hashes[buckets == b]).tolist() for b in set(buckets.tolist())}))
    return out


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("first", ["distinct", "repeated"])
@pytest.mark.parametrize("empty", [True, False], ids=["empty-partition", "indexed-partition"])
def test_route_gives_each_row_its_bucket_and_each_bucket_its_distinct_hashes(seed, first, empty):
    """HashAssigner.route, one sort for lookup, arrival order and grouping, against the plain
    way: batches of new keys only (distinct, or repeated), known keys, keys of an earlier batch.
    An empty partition's first batch of distinct keys (a first load: no lookup, no sort
    with positions) and one with a key twice (the general way) too."""
    rng = np.random.default_rng(seed)
    lanes, target = int(rng.integers(1, 4)), int(rng.integers(1, 40))
    files = {} if empty else {b: distinct(rng.integers(-300, 300, 20).astype(np.int32))
                              for b in range(int(rng.integers(1, 5)))}
    new = np.arange(1000, 1000 + 97, dtype=np.int32)[rng.permutation(97)]
    if first == "repeated":
        new[rng.integers(0, 97, 5)] = new[rng.integers(0, 97, 5)]
    batches = [new,  # all new
               rng.integers(-400, 400, 300).astype(np.int32),  # known, new, repeated
               rng.integers(900, 1200, 200).astype(np.int32),  # keys of the first batch again
               np.zeros(0, dtype=np.int32)]
    assigner = HashAssigner(lambda partition: dict(files), target, lanes)
    want = _route_model(files, batches, lanes, target)
    for hashes, (rows, placed) in zip(batches, want):
        got_rows, got_placed = assigner.route(("p",), hashes)
        assert got_rows.tolist() == rows
        assert {b: h.tolist() for b, h in got_placed.items()} == placed
