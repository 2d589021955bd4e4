"""Primary-key tables through the table API: upserts, deletes, engines, filters, ordering."""

from __future__ import annotations

import subprocess
import sys

import pyarrow as pa
import pytest

import minipaimon_core as mp

KV = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.float64()), ("s", pa.string())])


def kv(ids, vs, ss=None, kinds=None) -> pa.Table:
    cols = {"id": pa.array(ids, pa.int64()), "v": pa.array(vs, pa.float64()),
            "s": pa.array(ss if ss is not None else [None] * len(ids), pa.string())}
    if kinds is not None:
        cols["_row_kind"] = pa.array(kinds)
    return pa.table(cols)


def as_dict(t: mp.Table, **scan) -> dict:
    out = t.scan(**scan).to_arrow()
    return {r["id"]: (r["v"], r["s"]) for r in out.to_pylist()}


def test_upsert_and_delete(tmp_path):
    t = mp.create_table(str(tmp_path / "t"), KV, primary_key=["id"], options={"bucket": "2"})
    t.write(kv([1, 2, 3], [1.0, 2.0, 3.0]))
    t.write(kv([2, 4], [20.0, 40.0]))
    t.write(kv([3], [None], kinds=["-D"]))
    assert as_dict(t) == {1: (1.0, None), 2: (20.0, None), 4: (40.0, None)}
    assert as_dict(t, snapshot_id=1) == {1: (1.0, None), 2: (2.0, None), 3: (3.0, None)}


def test_later_row_in_one_write_wins(tmp_path):
    t = mp.create_table(str(tmp_path / "t"), KV, primary_key=["id"])
    t.write(kv([1, 1, 2, 1], [1.0, 2.0, 5.0, 3.0]))
    assert as_dict(t) == {1: (3.0, None), 2: (5.0, None)}


def test_null_primary_key_is_rejected_and_nothing_written(tmp_path):
    t = mp.create_table(str(tmp_path / "t"), KV, primary_key=["id"])
    with pytest.raises(mp.InvalidArgumentError, match="primary-key column 'id'"):
        t.write(pa.table({"id": pa.array([1, None], pa.int64()), "v": [1.0, 2.0], "s": ["a", "b"]}))
    assert t.latest_snapshot() is None


def test_partition_keys_outside_the_primary_key_need_dynamic_buckets(tmp_path):
    """As in Paimon: a key without a partition column (cross-partition updates) needs
    ``bucket`` = -1 (the default); fixed buckets are refused, nothing created."""
    schema = KV.append(pa.field("dt", pa.string()))
    with pytest.raises(mp.UnsupportedOptionError, match="needs dynamic buckets"):
        mp.create_table(str(tmp_path / "t"), schema, primary_key=["id"], partition_by=["dt"],
                        options={"bucket": "2"})
    assert not (tmp_path / "t").exists()
    t = mp.create_table(str(tmp_path / "t"), schema, primary_key=["id"], partition_by=["dt"])
    assert t.options()["bucket"] == "-1"


def test_partial_update_fills_columns_from_different_writes(tmp_path):
    t = mp.create_table(str(tmp_path / "t"), KV, primary_key=["id"], options={"merge-engine": "partial-update"})
    t.write(kv([1], [1.0], [None]))
    t.write(kv([1], [None], ["hello"]))
    t.write(kv([1], [2.0], [None]))
    assert as_dict(t) == {1: (2.0, "hello")}
    with pytest.raises(mp.InvalidArgumentError):
        t.write(kv([1], [None], kinds=["-D"]))


def test_aggregation_sums_and_maxes(tmp_path):
    t = mp.create_table(str(tmp_path / "t"), KV, primary_key=["id"], options={
        "merge-engine": "aggregation", "fields.v.aggregate-function": "sum",
        "fields.s.aggregate-function": "max"})
    t.write(kv([1, 2], [1.0, 10.0], ["a", "x"]))
    t.write(kv([1], [2.5], ["c"]))
    t.write(kv([1], [0.5], ["b"]))
    assert as_dict(t) == {1: (4.0, "c"), 2: (10.0, "x")}
    t.compact(full=True)
    assert as_dict(t) == {1: (4.0, "c"), 2: (10.0, "x")}


def test_first_row_keeps_the_first(tmp_path):
    t = mp.create_table(str(tmp_path / "t"), KV, primary_key=["id"], options={"merge-engine": "first-row"})
    t.write(kv([1], [1.0], ["first"]))
    t.write(kv([1, 2], [2.0, 3.0], ["second", "x"]))
    assert as_dict(t) == {1: (1.0, "first"), 2: (3.0, "x")}


def test_filter_on_non_key_column_sees_the_merged_value(tmp_path):
    t = mp.create_table(str(tmp_path / "t"), KV, primary_key=["id"], options={"write-only": "true"})
    t.write(kv([1, 2], [100.0, 5.0]))  # old file: v in [5, 100]
    t.write(kv([1], [1.0]))             # new file: key 1 now has v = 1
    assert as_dict(t, filter=[("v", ">", 50)]) == {}
    assert as_dict(t, filter=[("v", "<", 2)]) == {1: (1.0, None)}
    assert as_dict(t, filter=[("id", "=", 2)]) == {2: (5.0, None)}


def test_compaction_keeps_results_and_history(tmp_path):
    t = mp.create_table(str(tmp_path / "t"), KV, primary_key=["id"], options={"bucket": "2", "write-only": "true",
                                                                     "num-sorted-run.stop-trigger": "100"})
    expected = {}
    for i in range(8):
        ids = list(range(i, i + 20))
        t.write(kv(ids, [float(i)] * 20))
        expected.update({k: (float(i), None) for k in ids})
    before = t.latest_snapshot().id
    snap = t.compact(full=True)
    assert snap == before + 1 and t.latest_snapshot().commit_kind == "COMPACT"
    assert as_dict(t) == expected
    for s in t.scan().plan():
        assert {f.level for f in s.files} == {5} and s.raw_convertible  # Paimon's 6 levels
    t.write(kv([0], [99.0]))
    expected[0] = (99.0, None)
    assert as_dict(t) == expected


def test_automatic_compaction_bounds_sorted_runs(tmp_path):
    t = mp.create_table(str(tmp_path / "t"), KV, primary_key=["id"])
    for i in range(30):
        t.write(kv([i % 7, 100 + i], [float(i), float(i)]))
    for s in t.scan().plan():
        level0 = [f for f in s.files if f.level == 0]
        assert len(level0) <= 5
    assert "COMPACT" in {s.commit_kind for s in t.snapshots()}
    got = as_dict(t)
    assert got[0] == (28.0, None) and len(got) == 37


TWO_WRITERS = """
import sys
import pyarrow as pa
import minipaimon_core as mp
t = mp.open_table(sys.argv[1])
me = int(sys.argv[2])
for r in range(int(sys.argv[3])):
    w = t.new_write(f"w{me}")
    w.write(pa.table({"id": pa.array(list(range(50)), pa.int64()), "v": [float(me)] * 50,
                      "s": [f"{me}-{r}"] * 50}))
    msgs = w.prepare_commit()
    t.new_commit(f"w{me}").commit(msgs, r)
"""


def test_two_processes_writing_the_same_keys_later_commit_wins(tmp_path):
    t = mp.create_table(str(tmp_path / "t"), KV, primary_key=["id"], options={"bucket": "1"})
    rounds = 15
    procs = [subprocess.Popen([sys.executable, "-c", TWO_WRITERS, t.path, str(i), str(rounds)]) for i in range(2)]
    assert [p.wait(timeout=300) for p in procs] == [0, 0]
    t = mp.open_table(t.path)
    for snap in t.snapshots():
        if snap.commit_kind != "APPEND":
            continue
        got = as_dict(t, snapshot_id=snap.id)
        me = int(snap.commitUser[1:])
        # every key has the value of the writer of this (the latest) APPEND snapshot
        assert {v for v, _ in got.values()} == {float(me)}, snap.id
        assert {s for _, s in got.values()} == {f"{me}-{snap.commitIdentifier}"}


def test_write_only_still_bounds_sorted_runs_at_the_stop_trigger(tmp_path):
    t = mp.create_table(str(tmp_path / "t"), KV, primary_key=["id"], options={
        "write-only": "true", "num-sorted-run.stop-trigger": "6"})
    for i in range(20):
        t.write(kv([i], [float(i)]))
        assert max(len(s.files) for s in t.scan().plan()) <= 6
    assert len(as_dict(t)) == 20


def test_two_compactions_with_overlapping_outputs_in_one_level_conflict(tmp_path):
    from minipaimon_core.metadata.commit_message import CommitMessage
    from minipaimon_core.metadata.manifest_io import live_files
    from minipaimon_core.read.read import SplitReader
    from minipaimon_core.write.kv_writer import write_sorted_run

    t = mp.create_table(str(tmp_path / "t"), KV, primary_key=["id"], options={"write-only": "true"})
    t.write(kv([1, 5], [1.0, 5.0]))
    t.write(kv([3, 8], [3.0, 8.0]))
    first, second = sorted((e.file for e in live_files(t.manifests, t.latest_snapshot())),
                           key=lambda f: f.minSequenceNumber)
    split = t.scan().plan()[0]

    def rewrite(f):  # what a compaction moving one file to level 2 would commit
        raw = SplitReader(t.io, t.layout, t._schemas, t.table_schema).read_file(
            split, f, [*KV.names, "_SEQUENCE_NUMBER", "_VALUE_KIND"])
        after = write_sorted_run(t.io, t.layout, t.table_schema, "", 0, raw, level=2,
                                 target=1 << 30, compression="zstd")
        return CommitMessage([], "", 0, 1, compactBefore=[f], compactAfter=after)

    t.new_commit("c1").commit([rewrite(first)], 1)
    with pytest.raises(mp.CommitConflictError) as raised:
        t.new_commit("c2").commit([rewrite(second)], 1)
    assert raised.value.reason == mp.ConflictReason.LEVEL_OVERLAP
    assert as_dict(t) == {1: (1.0, None), 3: (3.0, None), 5: (5.0, None), 8: (8.0, None)}


def _runs_per_bucket(t: mp.Table) -> dict[int, int]:
    from minipaimon_core.read.read import sorted_runs_newest_first

    files = {s.bucket: s.files for s in t.scan().plan()}
    return {b: len(sorted_runs_newest_first(list(fs))) for b, fs in files.items()}


@pytest.mark.parametrize("how", [{}, {"strategy": "full"}, {"strategy": "minor"}, {"full": False}])
def test_an_explicit_compaction_compacts_every_bucket_with_several_runs(tmp_path, how):
    """Three level-0 files per bucket are below the automatic trigger; a compaction the
    user asks for does the work anyway (full by default, or minor)."""
    t = mp.create_table(str(tmp_path / "t"), KV, primary_key=["id"],
                        options={"bucket": "2", "write-only": "true"})
    for i in range(3):
        t.write(kv(list(range(i, 20 + i)), [float(i)] * 20))
    assert set(_runs_per_bucket(t).values()) == {3}
    before = as_dict(t)
    assert t.compact(**how) is not None
    assert set(_runs_per_bucket(t.refresh()).values()) == {1}
    assert as_dict(t.refresh()) == before
    assert t.refresh().compact(**how) is None  # nothing left to do


def test_a_compaction_strategy_that_does_not_exist_is_refused(tmp_path):
    t = mp.create_table(str(tmp_path / "t"), KV, primary_key=["id"])
    t.write(kv([1], [1.0]))
    for bad in ({"strategy": "medium"}, {"strategy": "minor", "full": True}, {"full": "yes"}):
        with pytest.raises(mp.InvalidArgumentError):
            t.compact(**bad)
    assert len(t.snapshots()) == 1


@pytest.mark.parametrize("options", [{}, {"deletion-vectors.enabled": "true"},
                                     {"changelog-producer": "input"}], ids=["plain", "dv", "input"])
def test_a_writer_that_started_first_but_commits_last_wins(tmp_path, options):
    """Both writers number from the same next sequence number; the committer moves the
    numbers of the later commit above the earlier one's (minipaimon_core.metadata.resequence)."""
    t = mp.create_table(str(tmp_path / "t"), KV, primary_key=["id"], options={"bucket": "1", **options})
    t.write(kv([1, 2, 3], [0.0, 0.0, 0.0]))
    slow, fast = t.new_write("slow"), t.new_write("fast")
    slow.write(kv([1], [1.0]))
    fast.write(kv(list(range(100)), [2.0] * 100))  # its numbers reach far above slow's
    t.new_commit("fast").commit(fast.prepare_commit(), 1)
    t.new_commit("slow").commit(slow.prepare_commit(), 1)
    got = as_dict(mp.open_table(t.path))
    assert got[1][0] == 1.0 and {got[k][0] for k in range(2, 100)} == {2.0}
    t.compact()  # the numbers in the files decide compaction too
    assert as_dict(mp.open_table(t.path)) == got
    if "changelog-producer" in options:  # a stream hands fast's row of key 1 over before slow's
        from minipaimon_core.stream.stream import changes_between

        changes = changes_between(mp.open_table(t.path), 1, 3)
        assert changes.filter(pa.compute.equal(changes["id"], 1))["v"].to_pylist() == [2.0, 1.0]
