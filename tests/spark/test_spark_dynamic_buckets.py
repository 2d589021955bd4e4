"""Spark writes into dynamic-bucket tables (``bucket`` = -1, the default of a primary-key
table): each task assigns buckets from the job's start snapshot, the driver's commit keeps
one key in one bucket (minipaimon_core.dynamic)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")

import minipaimon_core as mp  # noqa: E402
from tests.helpers import check_hash_index, key_places  # noqa: E402

DDL = "id long, dt string, v double"


def save(df: Any, path: Path, mode: str = "append", **options: str) -> None:
    writer = df.write.format("minipaimon").mode(mode)
    for key, value in options.items():
        writer = writer.option(key, value)
    writer.save(str(path))


def test_tasks_that_see_the_same_new_keys_leave_each_key_in_one_bucket(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "t"
    first = [(i, f"d{i % 2}", float(i)) for i in range(60)]
    save(spark.createDataFrame(first, DDL).repartition(3), path, **{
        "primary-key": "id,dt", "partition-keys": "dt", "dynamic-bucket.target-row-num": "7"})
    t = mp.open_table(str(path))
    assert t.options()["bucket"] == "-1"
    # every new key in three tasks (same values), updates of old keys in one task each
    new = [(i, f"d{i % 2}", -1.0) for i in range(100, 130)]
    updates = [(i, f"d{i % 2}", float(i) + 0.5) for i in range(0, 60, 5)]
    save(spark.createDataFrame(new * 3 + updates, DDL).repartition(4), path)
    t = mp.open_table(str(path))
    got = {(r["id"], r["dt"]): r["v"] for r in t.to_arrow().to_pylist()}
    want = {(i, dt): v for i, dt, v in first + new + updates}
    assert got == want
    check_hash_index(t)
    # tasks fill the buckets open at the job's start alike: a bucket takes at most
    # (tasks of a job) x target-row-num keys (documented in docs/format.md)
    sizes = Counter(key_places(t).values())
    assert len(sizes) >= 4 and max(sizes.values()) <= 4 * 7


def test_a_cross_partition_table_moves_keys_written_from_spark(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "t"
    save(spark.createDataFrame([(i, "a", float(i)) for i in range(20)], DDL).repartition(2), path,
         **{"primary-key": "id", "partition-keys": "dt"})
    moved = [(i, "b", 100.0 + i) for i in range(0, 20, 2)]
    save(spark.createDataFrame(moved, DDL).repartition("id"), path)
    t = mp.open_table(str(path))
    got = {r["id"]: (r["dt"], r["v"]) for r in t.to_arrow().to_pylist()}
    assert got == {i: ("b", 100.0 + i) if i % 2 == 0 else ("a", float(i)) for i in range(20)}
    assert len(key_places(t)) == 20
