"""Apache Paimon's own dynamic-bucket scenarios, expressed with minipaimon's API: the options
``dynamic-bucket.assigner-parallelism`` and ``dynamic-bucket.max-buckets`` (issue 39).
Each test names the Paimon test it follows; the expected rows and buckets are Paimon's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import minipaimon_core as mp
from minipaimon_core.dynamic.assigner import fill
from minipaimon_core.errors import UnsupportedOptionError

STRINGS = pa.schema([pa.field("pk", pa.string(), nullable=False), ("v", pa.string()),
                     pa.field("pt", pa.string(), nullable=False)])
INTS = pa.schema([pa.field("pt", pa.int32(), nullable=False), pa.field("pk", pa.int32(), nullable=False),
                  ("v", pa.int32())])


def _strings(rows: list[tuple[str, str, str]]) -> pa.Table:
    return pa.Table.from_pylist([dict(zip(STRINGS.names, r)) for r in rows], schema=STRINGS)


def _ints(rows: list[tuple[int, int, int]]) -> pa.Table:
    return pa.Table.from_pylist([dict(zip(INTS.names, r)) for r in rows], schema=INTS)


def _rows(t: mp.Table, key: str = "pk") -> list[tuple]:
    return sorted(tuple(r.values()) for r in t.to_arrow().sort_by(key).to_pylist())


def _buckets(t: mp.Table) -> set[int]:
    return set(t.system_table("files").column("bucket").to_pylist())


FIVE = [("1", "a", "p"), ("2", "b", "p"), ("3", "c", "p"), ("4", "d", "p"), ("5", "e", "p")]


def test_write_with_assign_parallelism(tmp_path: Path) -> None:
    # paimon-spark DynamicBucketTableTest.scala, "Paimon dynamic bucket table: write with
    # assign parallelism": three assigners each open a bucket of their own
    t = mp.create_table(str(tmp_path / "t"), STRINGS, primary_key=["pk", "pt"], partition_by=["pt"],
                        options={"bucket": "-1", "dynamic-bucket.target-row-num": "3",
                                 "dynamic-bucket.assigner-parallelism": "3"})
    t.write(_strings(FIVE))
    assert _rows(t) == FIVE
    assert _buckets(t) == {0, 1, 2}


def test_write_with_initial_buckets_and_more_assigners(tmp_path: Path) -> None:
    # paimon-spark DynamicBucketTableTest.scala, "Paimon dynamic bucket table: write with
    # dynamic-bucket.initial-buckets": "Although `assigner-parallelism` is 10, but because
    # `initial-buckets` is 3, the size of generated buckets is still 3"
    t = mp.create_table(str(tmp_path / "t"), STRINGS, primary_key=["pk", "pt"], partition_by=["pt"],
                        options={"bucket": "-1", "dynamic-bucket.target-row-num": "3",
                                 "dynamic-bucket.initial-buckets": "3",
                                 "dynamic-bucket.assigner-parallelism": "10"})
    t.write(_strings(FIVE))
    assert _rows(t) == FIVE
    assert _buckets(t) == {0, 1, 2}


def test_write_with_max_buckets(tmp_path: Path) -> None:
    # paimon-spark DynamicBucketTableTest.scala, "Paimon dynamic bucket table: write with max
    # buckets". Paimon's Spark writer runs min(max-buckets, session parallelism) = 2 assigners
    # there; minipaimon's writer is one assigner unless told, so the test says 2.
    t = mp.create_table(str(tmp_path / "t"), STRINGS, primary_key=["pk", "pt"], partition_by=["pt"],
                        options={"bucket": "-1", "dynamic-bucket.max-buckets": "2",
                                 "dynamic-bucket.assigner-parallelism": "2"})
    first = [("1", "a", "p"), ("2", "b", "p"), ("3", "c", "p"), ("4", "d", "p"), ("5", "e", "p"), ("6", "e", "p")]
    second = [("11", "a", "p"), ("22", "b", "p"), ("33", "c", "p"), ("44", "d", "p"), ("55", "e", "p"),
              ("66", "e", "p")]
    t.write(_strings(first))
    t.write(_strings(second))
    assert _buckets(t) == {0, 1}
    assert _rows(t) == sorted(first + second)


def test_max_buckets_bounds_a_small_target(tmp_path: Path) -> None:
    # the bound itself: 3 keys a bucket would need 4 buckets for 12 keys; 2 are allowed, and
    # every key stays readable, updates included
    t = mp.create_table(str(tmp_path / "t"), STRINGS, primary_key=["pk", "pt"], partition_by=["pt"],
                        options={"bucket": "-1", "dynamic-bucket.target-row-num": "3",
                                 "dynamic-bucket.max-buckets": "2"})
    rows = [(str(i), "x", "p") for i in range(12)]
    t.write(_strings(rows[:7]))
    t.write(_strings(rows[7:]))
    t.write(_strings([(str(i), "y", "p") for i in range(0, 12, 2)]))
    assert _buckets(t) == {0, 1}
    want = sorted((pk, "y" if int(pk) % 2 == 0 else "x", pt) for pk, _, pt in rows)
    assert _rows(t) == want
    assert t.compact(full=True) is not None
    assert _rows(mp.open_table(t.path)) == want


def test_max_buckets_zero_is_refused(tmp_path: Path) -> None:
    # Paimon's CoreOptions: "either be equal to -1 (unlimited), or it must be greater than 0"
    with pytest.raises(UnsupportedOptionError, match="dynamic-bucket.max-buckets"):
        mp.create_table(str(tmp_path / "t"), STRINGS, primary_key=["pk", "pt"],
                        options={"bucket": "-1", "dynamic-bucket.max-buckets": "0"})
    assert not (tmp_path / "t").exists()


def _fill(lanes: list[int], num_lanes: int, max_buckets: int, counts: dict[int, int] | None = None) -> list[int]:
    return fill(counts if counts is not None else {}, np.array(lanes, np.int64), num_lanes, 5,
                max_buckets=max_buckets).tolist()


def test_each_partition_uses_all_buckets_with_upper_bound() -> None:
    # paimon-core HashBucketAssignerTest.testEachPartitionUsesAllBucketsWithUpperBound: one
    # assigner, target 5, max 4: 20 keys fill buckets 0..3 with 5 each
    got = _fill([0] * 20, 1, 4)
    assert {b: got.count(b) for b in set(got)} == {0: 5, 1: 5, 2: 5, 3: 5}


def test_assign_with_upper_bound() -> None:
    # paimon-core HashBucketAssignerTest.testAssignWithUpperBound: two assigners, max 2,
    # assigner 0 (even hashes): bucket 0 is its only one below the bound, full or not
    counts: dict[int, int] = {}
    assert _fill([0] * 5, 2, 2, counts) == [0] * 5
    assert _fill([0] * 5, 2, 2, counts) == [0] * 5  # "full": still 0
    assert set(_fill([0] * 200, 2, 2, counts)) <= {0, 2}


def test_assign_with_upper_bound_multi_assigners() -> None:
    # paimon-core HashBucketAssignerTest.testAssignWithUpperBoundMultiAssigners: two
    # assigners, max 3: assigner 0 owns 0 and 2, assigner 1 owns 1 only
    counts: dict[int, int] = {}
    assert _fill([0] * 5, 2, 3, counts) == [0] * 5
    assert _fill([0] * 5, 2, 3, counts) == [2] * 5
    assert set(_fill([0] * 200, 2, 3, counts)) <= {0, 2}
    assert _fill([1] * 5, 2, 3, counts) == [1] * 5
    assert set(_fill([1] * 200, 2, 3, counts)) == {1}


def test_cross_partition_with_partition_change(tmp_path: Path) -> None:
    # paimon-spark DynamicBucketTableTest.scala, "Paimon cross partition table: write with
    # partition change" (assigner parallelism 1)
    t = mp.create_table(str(tmp_path / "t"), INTS, primary_key=["pk"], partition_by=["pt"],
                        options={"bucket": "-1", "dynamic-bucket.target-row-num": "3",
                                 "dynamic-bucket.assigner-parallelism": "1"})
    t.write(_ints([(1, 1, 1), (1, 2, 2), (1, 3, 3), (1, 4, 4), (1, 5, 5)]))
    assert _rows(t) == [(1, 1, 1), (1, 2, 2), (1, 3, 3), (1, 4, 4), (1, 5, 5)]
    t.write(_ints([(1, 3, 33), (1, 1, 11)]))
    assert _rows(t) == [(1, 1, 11), (1, 2, 2), (1, 3, 33), (1, 4, 4), (1, 5, 5)]
    assert _buckets(t) == {0, 1}
    t.write(_ints([(2, 1, 2), (2, 2, 3)]))
    assert sorted(_rows(t), key=lambda r: r[1]) == [(2, 1, 2), (2, 2, 3), (1, 3, 33), (1, 4, 4), (1, 5, 5)]


def test_cross_partition_user_defined_assigner_parallelism(tmp_path: Path) -> None:
    # paimon-spark DynamicBucketTableTest.scala, "Paimon cross partition table: user define
    # assigner parallelism"
    t = mp.create_table(str(tmp_path / "t"), INTS, primary_key=["pk"], partition_by=["pt"],
                        options={"bucket": "-1", "dynamic-bucket.target-row-num": "3",
                                 "dynamic-bucket.assigner-parallelism": "3"})
    t.write(_ints([(1, 1, 1), (1, 2, 2), (1, 3, 3), (1, 4, 4), (1, 5, 5)]))
    assert _rows(t) == [(1, 1, 1), (1, 2, 2), (1, 3, 3), (1, 4, 4), (1, 5, 5)]
    assert _buckets(t) == {0, 1, 2}
