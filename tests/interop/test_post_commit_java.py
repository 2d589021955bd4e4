"""Partition expiration and automatic tags after a minipaimon commit as after Java's (issue
39, item 4): Paimon's Java engine 0.9 and minipaimon each make the same commits into the
same table (Java creates both), with the same time inputs, and their tables must end alike:
the snapshots (kinds, watermarks), the partitions left, the tags (names, snapshots,
retention) and the rows; then each reads the other's tags.

Time inputs: tags follow the commits' watermarks (``tag.automatic-creation`` = watermark,
given to both committers) or, for ``process-time``, the snapshots' times, which
minipaimon's clock replays from Java's snapshots; partition values lie days away from the
expiration boundary, so Java's wall clock and minipaimon's injected one (the test's start)
decide alike; tags planted with creation times years in the past or future test the
retention. Nothing waits for time to pass.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import pyarrow as pa
import pytest

import minipaimon_core as mp
from minipaimon_core.metadata.tags import TagManager
from tests.interop import harness
from tests.interop.compare import differences

pytestmark = pytest.mark.interop

JAVA = harness.JAVA
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False)])
POST_COMMIT = {
    "bucket": "1",
    "partition.expiration-time": "30 d",
    "partition.expiration-check-interval": "0 s",
    "partition.timestamp-formatter": "yyyyMMdd",
    "tag.automatic-creation": "watermark",
    "tag.creation-period": "daily",
    "tag.num-retained-max": "3",
    "tag.default-time-retained": "3650 d",
}
TODAY = date.today()


def day(offset: int) -> str:
    return (TODAY + timedelta(days=offset)).strftime("%Y%m%d")


def utc(*args: int) -> int:
    return int(datetime(*args, tzinfo=timezone.utc).timestamp() * 1000)


# (rows (id, partition day offset), watermark): 90 and 40 days old expire, 10 and -1 do not
COMMITS: list[tuple[list[tuple[int, int]], int | None]] = [
    ([(1, -90), (2, -10)], utc(2024, 3, 1, 10)),
    ([(3, -40)], utc(2024, 3, 2, 12)),
    ([(4, 1)], None),  # no watermark: the last one is carried forward
    ([(5, -10)], utc(2024, 3, 5, 1)),
    ([(6, 1)], utc(2024, 3, 9, 0)),  # exactly the end of a period
    ([(7, -40), (8, -10)], utc(2024, 3, 10, 23)),
    ([(9, 1)], utc(2024, 3, 1, 0)),  # an older watermark: the snapshots keep the newest
]
PLANT_AFTER = 3  # tags planted in both tables after the third commit


def data(rows: list[tuple[int, int]]) -> pa.Table:
    return pa.table({"id": [i for i, _ in rows], "dt": [day(d) for _, d in rows]}, schema=SCHEMA)


def plant(path: str) -> None:
    """Tags minipaimon writes with Paimon's retention members: one whose retention passed
    long ago, one made in the future (kept), one without a retention."""
    t = mp.open_table(path)
    tags, snap = TagManager(t.io, t.layout), t.latest_snapshot()
    assert snap is not None
    tags.create("old", snap, 86_400_000, datetime(2020, 1, 1, 8, 30, 15, 250000))
    tags.create("future", snap, 86_400_000, datetime(2999, 1, 1))
    tags.create("plain", snap)


def state(path: str) -> dict[str, object]:
    t = mp.open_table(path)
    tags = TagManager(t.io, t.layout).infos()
    return {
        "snapshots": [(s.id, s.commitKind, s.watermark) for s in t.snapshots()],
        "partitions": sorted(set(t.to_arrow().column("dt").to_pylist())),
        "tags": {n: (tag.snapshot.id, tag.snapshot.watermark, tag.time_retained_ms) for n, tag in tags.items()},
    }


def test_partition_expiration_and_watermark_tags_match_javas(tmp_path: Path) -> None:
    java = harness.judge(JAVA)
    wh = tmp_path / "wh"
    b = java.batch(tmp_path)
    for name in ("java", "mini"):
        b.create(wh, f"db.{name}", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"], options=POST_COMMIT)
    for i, (rows, watermark) in enumerate(COMMITS[:PLANT_AFTER]):
        b.commit(wh, "db.java", data(rows), identifier=i + 1, watermark=watermark)
    b.run()
    java_path, mini_path = str(wh / "db.db" / "java"), str(wh / "db.db" / "mini")
    started = int(datetime.now().timestamp() * 1000)
    mini = mp.open_table(mini_path, clock=lambda: started)

    def commit(i: int) -> None:
        rows, watermark = COMMITS[i]
        w = mini.new_write("job")
        w.write(data(rows))
        mini.new_commit("job").commit(w.prepare_commit(), i + 1, watermark=watermark)
        result = mini.after_commit()
        assert result.ok, result.errors

    for i in range(PLANT_AFTER):
        commit(i)
    plant(java_path)
    plant(mini_path)
    b = java.batch(tmp_path)
    for i in range(PLANT_AFTER, len(COMMITS)):
        b.commit(wh, "db.java", data(COMMITS[i][0]), identifier=i + 1, watermark=COMMITS[i][1])
    b.run()
    for i in range(PLANT_AFTER, len(COMMITS)):
        commit(i)

    java_state, mini_state = state(java_path), state(mini_path)
    assert java_state == mini_state
    # what happened, as Paimon 0.9 decides it
    assert mini_state["partitions"] == [day(-10), day(1)]
    assert [k for _, k, _ in mini_state["snapshots"]].count("OVERWRITE") == 3  # drops after commits 1, 2, 6
    assert sorted(mini_state["tags"]) == ["2024-03-04", "2024-03-08", "2024-03-09", "future", "plain"]
    b = java.batch(tmp_path)
    seen = {name: b.tags(wh, f"db.{name}") for name in ("java", "mini")}
    reads = {(name, tag): b.read(wh, f"db.{name}", tag=tag)
             for name in ("java", "mini") for tag in mini_state["tags"]}  # type: ignore[union-attr]
    out = b.run()
    java_tags, mini_tags = out[seen["java"]].values["tags"], out[seen["mini"]].values["tags"]
    assert {n: v[0] for n, v in java_tags.items()} == {n: v[0] for n, v in mini_tags.items()}
    assert mini_tags["future"][1] == "2999-01-01T00:00" and mini_tags["future"][2] == 86_400_000
    assert mini_tags["plain"][1] is None and mini_tags["plain"][2] is None
    assert mini_tags["2024-03-09"][2] == 3650 * 86_400_000 and mini_tags["2024-03-09"][1] is not None
    for (name, tag), job in reads.items():
        mine = mp.open_table(java_path if name == "java" else mini_path).scan(tag=tag).to_arrow()
        assert differences(mine, out[job].table()) is None, (name, tag)


def test_a_batch_committer_checks_partitions_as_javas(tmp_path: Path) -> None:
    """Default check interval (1 h): a one-off batch commit does not expire (the committer
    was just made), unless end-input.check-partition-expire, in Java and in minipaimon."""
    java = harness.judge(JAVA)
    wh = tmp_path / "wh"
    b = java.batch(tmp_path)
    cases = {"default": {"partition.expiration-time": "30 d"},
             "end_input": {"partition.expiration-time": "30 d", "end-input.check-partition-expire": "true"}}
    for name, options in cases.items():
        for who in ("java", "mini"):
            b.create(wh, f"db.{who}_{name}", SCHEMA, partition_keys=["dt"],
                     options={**options, "partition.timestamp-formatter": "yyyyMMdd", "bucket": "-1"})
        b.commit(wh, f"db.java_{name}", data([(1, -60), (2, -5)]))
    b.run()
    for name in cases:
        mp.open_table(str(wh / "db.db" / f"mini_{name}")).write(data([(1, -60), (2, -5)]))
        java_t, mini_t = (mp.open_table(str(wh / "db.db" / f"{who}_{name}")) for who in ("java", "mini"))
        assert sorted(java_t.to_arrow().column("dt").to_pylist()) == \
            sorted(mini_t.to_arrow().column("dt").to_pylist()), name
        assert [s.commitKind for s in java_t.snapshots()] == [s.commitKind for s in mini_t.snapshots()], name
    assert mp.open_table(str(wh / "db.db" / "mini_end_input")).to_arrow().column("dt").to_pylist() == [day(-5)]


def test_process_time_tags_from_the_same_snapshot_times_as_javas(tmp_path: Path) -> None:
    """Hourly process-time tags (names with a space): minipaimon's clock replays the
    times of Java's snapshots; each reads the other's tag."""
    java = harness.judge(JAVA)
    wh = tmp_path / "wh"
    options = {"bucket": "1", "tag.automatic-creation": "process-time", "tag.creation-period": "hourly"}
    b = java.batch(tmp_path)
    for who in ("java", "mini"):
        b.create(wh, f"db.{who}", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"], options=options)
    b.commit(wh, "db.java", data([(1, 0)]))
    b.commit(wh, "db.java", data([(2, 0)]))
    b.run()
    java_t = mp.open_table(str(wh / "db.db" / "java"))
    times = iter([s.timeMillis for s in java_t.snapshots()])
    now = [0]

    def clock() -> int:
        return now[0]

    mini = mp.open_table(str(wh / "db.db" / "mini"), clock=clock)
    for rows in ([(1, 0)], [(2, 0)]):
        now[0] = next(times)
        mini.write(data(rows))
    assert java_t.tags() == mini.tags() and len(mini.tags()) == 1
    (name,) = mini.tags()
    assert " " in name  # "yyyy-MM-dd HH"
    b = java.batch(tmp_path)
    read = b.read(wh, "db.mini", tag=name)
    out = b.run()
    assert differences(mini.scan(tag=name).to_arrow(), out[read].table()) is None
    assert differences(java_t.scan(tag=name).to_arrow(), out[read].table()) is None
