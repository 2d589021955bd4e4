"""Postponed buckets (``bucket`` = -2) between pypaimon 2.1 and minipaimon (issue 39, item 2).

pypaimon 2.1 writes such tables two ways: rows into ``bucket-postpone`` (its batch writer;
no read sees them until a compaction), and ``postpone.batch-write-fixed-bucket`` writes into
real buckets of a count chosen per partition (``new_postpone_fixed_bucket_write_builder``).
pypaimon has no compaction: minipaimon compacts the postponed rows into real buckets as
Paimon's compaction does, and each client must then read what the other reads, row for
row. Java 0.9 knows no postponed buckets (a later Paimon feature), so pypaimon is the judge.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import minipaimon_core as mp
from minipaimon_core.format.bucket_names import POSTPONE_BUCKET
from minipaimon_core.metadata.manifest_io import live_files
from tests.interop import harness
from tests.interop.compare import differences

pytestmark = pytest.mark.interop

PYPAIMON = harness.PYPAIMON
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    pa.field("v", pa.string())])


def rows(*items: tuple[int, str, str]) -> pa.Table:
    return pa.table({"id": [i for i, _, _ in items], "dt": [d for _, d, _ in items],
                     "v": [v for _, _, v in items]}, schema=SCHEMA)


def mine(path: str) -> pa.Table:
    return mp.open_table(path).to_arrow().select(SCHEMA.names).cast(SCHEMA)


def expect(*items: tuple[int, str, str]) -> pa.Table:
    return rows(*items)


def buckets(path: str) -> dict[str, set[int]]:
    """Partition -> the bucket counts (totalBuckets) of its real-bucket files."""
    t = mp.open_table(path)
    out: dict[str, set[int]] = {}
    for e in live_files(t.manifests, t.latest_snapshot()):
        if e.bucket != POSTPONE_BUCKET:
            out.setdefault(e.partition[0], set()).add(e.totalBuckets)
    return out


def test_minipaimon_reads_and_compacts_what_pypaimon_postponed(tmp_path: Path) -> None:
    judge = harness.judge(PYPAIMON)
    wh = tmp_path / "wh"
    path = str(wh / "db.db" / "p")
    b = judge.batch(tmp_path)
    b.create(wh, "db.p", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"], options={"bucket": "-2"})
    b.commit(wh, "db.p", rows((1, "a", "x1"), (2, "a", "x1"), (1, "b", "b1")))  # postponed
    b.commit(wh, "db.p", rows((1, "a", "x2"), (3, "a", "x2")))  # postponed
    b.commit(wh, "db.p", rows((5, "c", "c"), (6, "c", "c")), fixed_bucket=True)  # real buckets
    b.commit(wh, "db.p", rows((1, "a", "fixed"), (7, "a", "fixed")), fixed_bucket=True)
    before = b.read(wh, "db.p")
    out = b.run()
    # only real buckets are read, by both
    assert differences(mine(path), out[before].table()) is None
    assert differences(mine(path), expect((1, "a", "fixed"), (7, "a", "fixed"), (5, "c", "c"), (6, "c", "c"))) is None

    snapshot = mp.open_table(path).compact()
    assert snapshot is not None
    # Paimon's replay: the postponed rows in write order, after what the buckets hold
    want = expect((1, "a", "x2"), (2, "a", "x1"), (3, "a", "x2"), (7, "a", "fixed"), (1, "b", "b1"),
                  (5, "c", "c"), (6, "c", "c"))
    assert differences(mine(path), want) is None
    assert buckets(path) == {"a": {1}, "b": {1}, "c": {1}}
    b = judge.batch(tmp_path)
    after = b.read(wh, "db.p")
    b.commit(wh, "db.p", rows((2, "a", "py"), (8, "b", "py")), fixed_bucket=True)  # into minipaimon's buckets
    b.commit(wh, "db.p", rows((3, "a", "late")))  # postponed again
    again = b.read(wh, "db.p")
    out = b.run()
    assert differences(out[after].table(), want) is None
    assert differences(mine(path), out[again].table()) is None
    mp.open_table(path).compact()
    final = expect((1, "a", "x2"), (2, "a", "py"), (3, "a", "late"), (7, "a", "fixed"), (1, "b", "b1"),
                   (8, "b", "py"), (5, "c", "c"), (6, "c", "c"))
    b = judge.batch(tmp_path)
    last = b.read(wh, "db.p")
    out = b.run()
    assert differences(mine(path), final) is None
    assert differences(out[last].table(), final) is None


def test_pypaimon_reads_and_writes_what_minipaimon_postponed(tmp_path: Path) -> None:
    judge = harness.judge(PYPAIMON)
    wh = tmp_path / "wh"
    path = str(wh / "db.db" / "m")
    t = mp.create_table(path, SCHEMA, primary_key=["id", "dt"], partition_by=["dt"],
                        options={"bucket": "-2", "postpone.default-bucket-num": "3"})
    t.write(rows(*[(i, "a", "m1") for i in range(12)], (1, "b", "m1")))  # a batch write: real buckets
    w = t.new_write("stream")  # a streaming writer's rows stay postponed
    w.write(rows((1, "a", "pending"), (20, "b", "pending")))
    t.new_commit("stream").commit(w.prepare_commit(), 1)
    assert buckets(path) == {"a": {3}, "b": {3}}
    visible = [(i, "a", "m1") for i in range(12)] + [(1, "b", "m1")]
    b = judge.batch(tmp_path)
    first = b.read(wh, "db.m")
    # pypaimon's fixed-bucket writer takes minipaimon's count for "a": the keys must land
    # in the buckets minipaimon hashed them into, or a key would be read twice
    b.commit(wh, "db.m", rows(*[(i, "a", "py") for i in range(0, 12, 2)], (30, "d", "py")), fixed_bucket=True)
    b.commit(wh, "db.m", rows((3, "a", "py-pending")))  # postponed by pypaimon
    second = b.read(wh, "db.m")
    out = b.run()
    assert differences(out[first].table(), expect(*visible)) is None
    updated = [(i, "a", "py" if i % 2 == 0 else "m1") for i in range(12)] + [(1, "b", "m1"), (30, "d", "py")]
    assert differences(out[second].table(), expect(*updated)) is None
    assert differences(mine(path), expect(*updated)) is None
    mp.open_table(path).compact()  # minipaimon's and pypaimon's postponed rows, in write order
    final = [(1, "a", "pending"), (3, "a", "py-pending")] + [r for r in updated if r[0] not in (1, 3) or r[1] != "a"] \
        + [(20, "b", "pending")]
    b = judge.batch(tmp_path)
    last = b.read(wh, "db.m")
    out = b.run()
    assert differences(mine(path), expect(*final)) is None
    assert differences(out[last].table(), expect(*final)) is None
