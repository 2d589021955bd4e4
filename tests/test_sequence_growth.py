"""Sequence numbers grow by the rows written, whatever the changelog producer, and every
retained snapshot's changelog stays readable under automatic expiration (issue 15, item 1).

CI runs 300 one-row writes per producer; ``MINIPAIMON_SEQUENCE_WRITES=1000`` runs the
issue's 1,000 (about 25 s per producer).
"""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import minipaimon_core as mp
from minipaimon_core.format.snapshot import APPEND, COMPACT
from minipaimon_core.maintenance import TableFiles

KV = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.int64())])
WRITES = int(os.environ.get("MINIPAIMON_SEQUENCE_WRITES", "300"))


def one_row(i: int) -> pa.Table:
    return pa.table({"id": pa.array([i % 7], pa.int64()), "v": pa.array([i], pa.int64())})


def changelog_rows(t: mp.Table, snap: mp.Snapshot) -> int:
    """Rows of every changelog file ``snap`` lists (each must exist and be readable)."""
    return sum(pq.read_table(p).num_rows for p in TableFiles.of(t).changelog_paths(snap))


@pytest.mark.parametrize("producer", ["lookup", "full-compaction", "input"])
def test_next_sequence_number_grows_by_one_per_one_row_write(tmp_path, producer):
    t = mp.create_table(str(tmp_path / "t"), KV, primary_key=["id"], options={
        "changelog-producer": producer, "bucket": "1",
        "snapshot.num-retained.min": "1", "snapshot.num-retained.max": "3"})
    for i in range(WRITES):
        t.write(one_row(i))
        latest = t.latest_snapshot()
        assert latest.nextSequenceNumber == i + 1, (i, latest)
        for snap in t.snapshots():
            changelog_rows(t, snap)  # raises if a retained snapshot's changelog is gone
    assert {r["id"]: r["v"] for r in t.to_arrow().to_pylist()} == {
        i % 7: i for i in range(WRITES - 7, WRITES)}


@pytest.mark.parametrize("producer", ["lookup", "full-compaction"])
def test_a_compaction_is_one_compact_snapshot_carrying_its_changelog(tmp_path, producer):
    t = mp.create_table(str(tmp_path / "t"), KV, primary_key=["id"], options={
        "changelog-producer": producer, "bucket": "1"})
    t.write(one_row(1))
    t.write(one_row(2))
    snaps = t.snapshots()
    assert [s.commitKind for s in snaps] == [APPEND, COMPACT, APPEND, COMPACT]
    assert [s.changelogManifestList is not None for s in snaps] == [False, True, False, True]
    assert [s.nextSequenceNumber for s in snaps] == [1, 1, 2, 2]


def test_expiring_to_one_snapshot_keeps_its_changelog(tmp_path):
    t = mp.create_table(str(tmp_path / "t"), KV, primary_key=["id"], options={
        "changelog-producer": "lookup", "bucket": "1"})
    t.write(one_row(1))
    t.write(one_row(8))  # the same key: -U/+U
    t.expire_snapshots(retain_max=1)
    [snap] = t.snapshots()
    assert snap.commitKind == COMPACT and changelog_rows(t, snap) == 2


ROUTES = {
    "fixed": (["id", "p"], {"bucket": "4"}),
    "dynamic": (["id", "p"], {"bucket": "-1", "dynamic-bucket.target-row-num": "7"}),
    "cross-partition": (["id"], {"bucket": "-1", "dynamic-bucket.target-row-num": "7"}),
    "postponed": (["id", "p"], {"bucket": "-2"}),
}


def file_rows(t: mp.Table, snap: mp.Snapshot) -> list[dict]:
    """Every row of ``snap``'s data files as written (sequence numbers, kinds)."""
    paths = [p for p in TableFiles.of(t).live_paths(snap) if p.endswith(".parquet")]
    return [r for p in paths for r in pq.read_table(p).to_pylist()]


@pytest.mark.parametrize("task", [False, True], ids=["one-writer", "spark-task"])
@pytest.mark.parametrize("route", list(ROUTES))
def test_a_writes_rows_are_numbered_in_input_order_whichever_way_they_are_routed(tmp_path, route, task):
    """A row's _SEQUENCE_NUMBER is its writer's number of its position in the input (rows
    are numbered once split by partition and bucket, from their positions): with the
    interleaving stride of a Spark task too; a cross-partition key that moves is retracted
    from its old partition under the number of the row that moved it."""
    from minipaimon_core.metadata.sequence import start_of

    keys, options = ROUTES[route]
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("p", pa.int64(), nullable=False),
                        ("i", pa.int64())])
    t = mp.create_table(str(tmp_path / "t"), schema, primary_key=keys, partition_by=["p"], options=options)
    t.write(pa.table({"id": pa.array(range(30), pa.int64()), "p": pa.array([k % 2 for k in range(30)], pa.int64()),
                      "i": pa.array([-1] * 30, pa.int64())}))
    before = t.latest_snapshot()
    ids = np.random.default_rng(3).permutation(200)  # in no order; keys of the first write too
    batch = pa.table({"id": pa.array(ids, pa.int64()), "p": pa.array(ids * 7 % 3, pa.int64()),
                      "i": pa.array(range(200), pa.int64())})
    start = start_of(t.context().manifests, before)
    start = start.for_task(5) if task else start
    w = t.new_write("w", sequence=start)
    w.write(batch)
    t.new_commit("w").commit(w.prepare_commit(), 1)
    rows = [r for r in file_rows(t, t.latest_snapshot()) if r["_SEQUENCE_NUMBER"] >= start.base]
    number = {r["i"]: r["_SEQUENCE_NUMBER"] for r in rows if r["_VALUE_KIND"] != 3}
    assert number == {i: start.base + i * start.stride + start.offset for i in range(200)}
    retracted = [r for r in rows if r["_VALUE_KIND"] == 3]
    assert bool(retracted) == (route == "cross-partition")
    last_of = {int(k): i for i, k in enumerate(ids)}
    for r in retracted:  # the number of the key's last row, in its old partition
        assert r["_SEQUENCE_NUMBER"] == number[last_of[r["id"]]]
        assert r["p"] != ids[last_of[r["id"]]] * 7 % 3
