"""Cross-partition primary-key tables: a key without every partition column, ``bucket`` = -1.
An update may name another partition than the key's; what happens follows the merge engine
as in Paimon (minipaimon_core.dynamic.cross_partition)."""

from __future__ import annotations

from collections import Counter

import pyarrow as pa
import pytest

import minipaimon_core as mp
from minipaimon_core.errors import ConflictReason
from minipaimon_core.metadata.sequence import start_of

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.int64()),
                    pa.field("dt", pa.string(), nullable=False)])


def rows(ids: list[int], v: list[int | None], dt: list[str], kinds: list[str] | None = None) -> pa.Table:
    t = pa.table({"id": ids, "v": v, "dt": dt}, schema=SCHEMA)
    return t.append_column("_row_kind", pa.array(kinds)) if kinds else t


def create(path, engine: str = "deduplicate", **options: str) -> mp.Table:
    return mp.create_table(str(path), SCHEMA, primary_key=["id"], partition_by=["dt"],
                           options={"merge-engine": engine, **options})


def state(t: mp.Table) -> dict[int, tuple[int | None, str]]:
    out: dict[int, tuple[int | None, str]] = {}
    for r in t.to_arrow().to_pylist():
        assert r["id"] not in out, f"key {r['id']} in two places"
        out[r["id"]] = (r["v"], r["dt"])
    return out


def places(t: mp.Table) -> dict[int, tuple[str, int]]:
    """id -> (dt, bucket) of each live key."""
    out = {}
    for split in t.scan().plan():
        for batch in t.read_split(split):
            for r in batch.to_pylist():
                assert r["id"] not in out
                out[r["id"]] = (r["dt"], split.bucket)
    return out


def test_deduplicate_moves_a_key_to_the_partition_of_its_last_row(tmp_path):
    t = create(tmp_path / "t", **{"dynamic-bucket.target-row-num": "2"})
    assert t.options()["bucket"] == "-1"
    t.write(rows([1, 2, 3], [10, 20, 30], ["a", "a", "a"]))
    t.write(rows([1, 4, 2, 2], [11, 40, 21, 22], ["b", "a", "b", "a"]))
    assert state(t) == {1: (11, "b"), 2: (22, "a"), 3: (30, "a"), 4: (40, "a")}
    # 1 left bucket 0 of a: room there for 4; 2 came back to a in its own bucket
    assert places(t) == {1: ("b", 0), 2: ("a", 0), 3: ("a", 1), 4: ("a", 0)}
    t.write(rows([3], [None], ["b"], ["-D"]))  # a delete named in another partition deletes it
    assert 3 not in state(t)
    # a new writer builds the map from the table again
    t2 = mp.open_table(t.path)
    t2.write(rows([1, 5], [12, 50], ["a", "b"]))
    assert state(t2) == {1: (12, "a"), 2: (22, "a"), 4: (40, "a"), 5: (50, "b")}


@pytest.mark.parametrize(("engine", "options", "want"), [
    ("partial-update", {}, {1: (11, "a"), 2: (21, "b")}),
    ("aggregation", {"fields.v.aggregate-function": "sum"}, {1: (21, "a"), 2: (21, "b")}),
    ("first-row", {}, {1: (10, "a"), 2: (21, "b")}),
])
def test_other_engines_keep_a_key_in_its_first_partition(tmp_path, engine, options, want):
    """partial-update / aggregation merge the update into the key's partition; first-row
    ignores it (Paimon's UseOld / SkipNew processors)."""
    t = create(tmp_path / "t", engine, **options)
    t.write(rows([1], [10], ["a"]))
    t.write(rows([1, 2, 2], [11, 21, None], ["b", "b", "a"]))
    assert state(t) == want


def test_the_map_is_built_from_the_table_once_per_writer(tmp_path):
    t = create(tmp_path / "t", **{"dynamic-bucket.target-row-num": "3"})
    t.write(rows(list(range(10)), list(range(10)), ["a"] * 5 + ["b"] * 5))
    w = t.new_write("job")
    for i in range(10):  # ten batches move every key to the other partition and back
        w.write(rows([i], [100 + i], ["b" if i < 5 else "a"]))
    w.write(rows([0], [1000], ["a"]))
    t.new_commit("job").commit(w.prepare_commit(), 1)
    want = {i: (100 + i, "b" if i < 5 else "a") for i in range(10)}
    want[0] = (1000, "a")
    assert state(t) == want
    assert max(Counter(places(t).values()).values()) <= 3


def test_a_key_written_elsewhere_since_the_writer_started_fails_the_commit(tmp_path):
    t = create(tmp_path / "t")
    t.write(rows([1, 2], [10, 20], ["a", "a"]))
    mover, updater = t.new_write("mover"), t.new_write("updater")
    mover.write(rows([1], [11], ["b"]))
    updater.write(rows([1, 2], [12, 22], ["a", "a"]))
    m1, m2 = mover.prepare_commit(), updater.prepare_commit()
    t.new_commit("mover").commit(m1, 1)
    snapshot = t.latest_snapshot().id
    with pytest.raises(mp.CommitConflictError) as e:
        t.new_commit("updater").commit(m2, 1)
    assert e.value.reason == ConflictReason.BUCKET_ASSIGNMENT
    t.new_commit("updater").abort(m2)
    assert t.latest_snapshot().id == snapshot and state(t) == {1: (11, "b"), 2: (20, "a")}


def test_writers_of_one_commit_that_put_a_key_in_two_partitions_are_refused(tmp_path):
    t = create(tmp_path / "t")
    start = start_of(t.context().manifests, None)
    tasks = [t.new_write("job", sequence=start.for_task(i)) for i in range(2)]
    tasks[0].write(rows([1, 2], [10, 20], ["a", "a"]))
    tasks[1].write(rows([1, 3], [11, 30], ["b", "b"]))
    messages = [m for w in tasks for m in w.prepare_commit()]
    with pytest.raises(mp.CommitConflictError, match="repartition") as e:
        t.new_commit("job").commit(messages, 1)
    assert e.value.reason == ConflictReason.BUCKET_ASSIGNMENT and t.latest_snapshot() is None


def test_a_dynamic_partition_overwrite_is_refused_a_full_one_replaces_the_table(tmp_path):
    t = create(tmp_path / "t", **{"dynamic-partition-overwrite": "true"})
    t.write(rows([1, 2], [10, 20], ["a", "b"]))
    with pytest.raises(mp.UnsupportedFeatureError, match="dynamic partition overwrite"):
        t.write(rows([1], [11], ["b"]), mode="overwrite")
    assert state(t) == {1: (10, "a"), 2: (20, "b")}
    assert len(list((tmp_path / "t").rglob("data-*"))) == 2
    t.set_options({"dynamic-partition-overwrite": "false"})
    t.write(rows([1], [11], ["b"]), mode="overwrite")
    assert state(t) == {1: (11, "b")}


def test_row_level_changes_move_a_key_with_its_partition_column(tmp_path):
    t = create(tmp_path / "t")
    t.write(rows([1, 2], [10, 20], ["a", "a"]))
    t.update(filter=[("id", "=", 1)], set={"dt": "c"})
    t.delete(filter=[("id", "=", 2)])
    assert state(t) == {1: (10, "c")}


def test_an_index_ttl_leaves_old_buckets_out_of_the_map(tmp_path):
    """Paimon's ``cross-partition-upsert.index-ttl``: keys of buckets whose files are all
    older are not looked up (documented: they may then be in two partitions)."""
    t = create(tmp_path / "t", **{"cross-partition-upsert.index-ttl": "0 ms"})
    t.write(rows([1], [10], ["a"]))
    t.write(rows([1], [11], ["b"]))
    assert sorted(r["dt"] for r in t.to_arrow().to_pylist()) == ["a", "b"]


def test_a_stream_sees_a_moved_key_leave_its_old_partition(tmp_path):
    """With the ``input`` changelog producer a streaming reader gets the move as Paimon
    writes it: the key's -D in its old partition and its row in the new one."""
    t = create(tmp_path / "t", **{"changelog-producer": "input"})
    t.write(rows([1, 2], [10, 20], ["a", "a"]))
    stream = t.stream(consumer_id="s", options={"read.changelog": "true"})
    for batch in stream:  # the full scan of snapshot 1
        stream.commit(batch)
    t.write(rows([1], [11], ["b"]))
    changes = [r for b in stream for r in b.data.to_pylist()]
    assert sorted((r["_row_kind"], r["id"], r["dt"]) for r in changes) == [("+I", 1, "b"), ("-D", 1, "a")]
