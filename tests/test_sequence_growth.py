"""Sequence numbers grow by the rows written, whatever the changelog producer, and every
retained snapshot's changelog stays readable under automatic expiration (issue 15, item 1).

CI runs 300 one-row writes per producer; ``MINIPAIMON_SEQUENCE_WRITES=1000`` runs the
issue's 1,000 (about 25 s per producer).
"""

from __future__ import annotations

import os

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
