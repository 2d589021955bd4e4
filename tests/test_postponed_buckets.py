"""Postponed buckets (``bucket`` = -2, Paimon 1.x): rows written into ``bucket-postpone``,
invisible to reads until a compaction puts them into real buckets (maintenance.postpone)."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

import minipaimon_core as mp
from minipaimon_core.errors import UnsupportedFeatureError, UnsupportedOptionError
from minipaimon_core.format.bucket_names import POSTPONE_BUCKET
from minipaimon_core.metadata.manifest_io import live_files

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    pa.field("v", pa.int64())])


def rows(ids: list[int], dt: str, vs: list[int | None] | int = 0, kinds: list[str] | None = None) -> pa.Table:
    values = vs if isinstance(vs, list) else [vs] * len(ids)
    t = pa.table({"id": ids, "dt": [dt] * len(ids), "v": pa.array(values, pa.int64())}, schema=SCHEMA)
    return t if kinds is None else t.append_column("_row_kind", pa.array(kinds))


def table(tmp_path, options: dict[str, str] | None = None) -> mp.Table:
    return mp.create_table(str(tmp_path / "t"), SCHEMA, primary_key=["id", "dt"], partition_by=["dt"],
                           options={"bucket": "-2", **(options or {})})


def read(t: mp.Table) -> list[tuple[int, str, int | None]]:
    got = mp.open_table(t.path).to_arrow()
    return sorted(zip(got.column("id").to_pylist(), got.column("dt").to_pylist(), got.column("v").to_pylist()))


def layout(t: mp.Table) -> dict[tuple[str, int], int]:
    """(partition, bucket) -> totalBuckets of the latest snapshot's files."""
    t = mp.open_table(t.path)
    return {(e.partition[0], e.bucket): e.totalBuckets for e in live_files(t.manifests, t.latest_snapshot())}


def postpone_only(t: mp.Table, data: pa.Table, identifier: int) -> None:
    """A commit that leaves its rows postponed (a streaming writer's: no end of input)."""
    w = t.new_write("stream")
    w.write(data)
    t.new_commit("stream").commit(w.prepare_commit(), identifier)
    t.after_commit()


def test_a_batch_write_lands_in_real_buckets_as_paimons_fixed_bucket_writes(tmp_path):
    t = table(tmp_path, {"postpone.default-bucket-num": "3"})
    t.write(rows(list(range(8)), "a"))
    assert [s.commit_kind for s in t.snapshots()] == ["APPEND", "COMPACT"]
    assert read(t) == [(i, "a", 0) for i in range(8)]
    assert set(layout(t)) == {("a", 0), ("a", 1), ("a", 2)} and set(layout(t).values()) == {3}
    # the postponed file left the snapshot (expiration deletes it with snapshot 1)
    assert len(os.listdir(os.path.join(t.path, "dt=a", "bucket-postpone"))) == 1
    t.set_options({"postpone.default-bucket-num": "5"})
    t.write(rows([1, 9], "a", 7))  # a partition keeps the bucket count it has
    t.write(rows([1], "b", 1))  # a new one takes the default
    counts = layout(t)
    assert {n for (p, _), n in counts.items() if p == "a"} == {3} and {n for (p, _), n in counts.items() if p == "b"} == {5}
    assert read(t) == sorted([(i, "a", 7 if i in (1, 9) else 0) for i in [*range(8), 9]] + [(1, "b", 1)])


def test_the_bucket_count_of_a_new_partition_is_estimated_as_paimon_does(tmp_path):
    t = table(tmp_path, {"postpone.target-row-num-per-bucket": "4"})
    t.write(rows(list(range(10)), "a"))  # 10 postponed rows / 4 a bucket: 3 buckets
    assert set(layout(t).values()) == {3}
    u = mp.create_table(str(tmp_path / "u"), SCHEMA, primary_key=["id", "dt"], partition_by=["dt"],
                        options={"bucket": "-2"})
    u.write(rows(list(range(10)), "a"))  # by size: far below 1 gb, one bucket
    assert set(layout(u).values()) == {1}


def test_postponed_rows_are_not_read_until_compacted_and_replay_in_order(tmp_path):
    """A streaming writer's rows stay postponed (as Paimon's streaming writers); compaction
    replays them in write order with numbers above the table's, so the later write wins,
    deletes included, and a postponed row wins over an older one already in a bucket."""
    t = table(tmp_path)
    t.write(rows([1, 2, 3], "a", 0))
    postpone_only(t, rows([1, 2], "a", 1), 1)
    postpone_only(t, rows([1, 4], "a", 2), 2)
    postpone_only(t, rows([2], "a", None, kinds=["-D"]), 3)
    assert read(t) == [(1, "a", 0), (2, "a", 0), (3, "a", 0)]  # postponed: not read yet
    assert sum(1 for (_, b) in layout(t) if b == POSTPONE_BUCKET) == 1
    assert t.count() == 3
    snap = t.compact()
    assert snap is not None and read(t) == [(1, "a", 2), (3, "a", 0), (4, "a", 2)]
    assert all(b >= 0 for (_, b) in layout(t))


def test_aggregation_and_partial_update_replay_every_postponed_row(tmp_path):
    t = table(tmp_path, {"merge-engine": "aggregation", "fields.v.aggregate-function": "sum"})
    t.write(rows([1, 2], "a", 1))
    postpone_only(t, rows([1, 1], "a", [10, 100]), 1)
    postpone_only(t, rows([2], "a", 5), 2)
    t.compact()
    assert read(t) == [(1, "a", 111), (2, "a", 6)]
    u = mp.create_table(str(tmp_path / "u"), SCHEMA, primary_key=["id", "dt"], partition_by=["dt"],
                        options={"bucket": "-2", "merge-engine": "partial-update"})
    u.write(rows([1], "a", 1))
    postpone_only(u, rows([1], "a", [None]), 1)  # null: keeps the value
    u.compact()
    assert read(u) == [(1, "a", 1)]


def test_updates_deletes_and_overwrites_of_a_postponed_table(tmp_path):
    t = table(tmp_path, {"postpone.default-bucket-num": "2"})
    t.write(rows([1, 2, 3], "a"))
    assert t.delete([("id", "=", 2)]) == 1
    assert t.update([("id", "=", 3)], set={"v": 9}) == 1
    assert read(t) == [(1, "a", 0), (3, "a", 9)]
    t.write(rows([7], "b"), mode="overwrite")
    assert read(t) == [(7, "b", 0)]


def test_postponed_files_are_named_as_paimons_postpone_writers_name_them(tmp_path):
    t = table(tmp_path)
    postpone_only(t, rows([1], "a"), 1)
    (name,) = os.listdir(os.path.join(t.path, "dt=a", "bucket-postpone"))
    assert name.startswith("data--u-") and "-s-" in name and "-w-" in name  # Paimon's writer prefix


def test_orphan_cleanup_and_expiration_know_the_postpone_directory(tmp_path):
    t = table(tmp_path, {"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"})
    postpone_only(t, rows([1], "a"), 1)
    stray = os.path.join(t.path, "dt=a", "bucket-postpone", "data--u-x-s-0-w-stray-0.parquet")
    with open(stray, "wb") as f:
        f.write(b"x")
    for name in os.listdir(os.path.dirname(stray)):  # every file there old enough to be an orphan
        os.utime(os.path.join(os.path.dirname(stray), name), (1e9, 1e9))
    result = t.remove_orphan_files(older_than="1d", dry_run=True)
    assert [os.path.basename(p) for p in result.files] == [os.path.basename(stray)]  # not the live one
    t.compact()
    t.expire_snapshots()
    assert [n for n in os.listdir(os.path.join(t.path, "dt=a", "bucket-postpone")) if "stray" not in n] == []
    assert read(t) == [(1, "a", 0)]


def test_what_minipaimon_does_not_write_in_postponed_tables_is_refused(tmp_path):
    with pytest.raises(UnsupportedOptionError, match="'bucket'"):
        mp.create_table(str(tmp_path / "append"), SCHEMA, options={"bucket": "-2"})  # Paimon: keys only
    for n, options in enumerate(({"merge-engine": "first-row"}, {"changelog-producer": "lookup"},
                                 {"changelog-producer": "input"})):
        t = mp.create_table(str(tmp_path / f"t{n}"), SCHEMA, primary_key=["id", "dt"], partition_by=["dt"],
                            options={"bucket": "-2", **options})
        with pytest.raises(UnsupportedFeatureError, match="postpones buckets"):
            t.write(rows([1], "a"))
        assert t.latest_snapshot() is None
    t = table(tmp_path)
    t.write(rows([1], "a"))
    with pytest.raises(UnsupportedFeatureError, match="postpones buckets"):
        t.stream()  # its rows reach buckets in COMPACT snapshots, which streams skip


def test_with_fixed_bucket_writes_off_batch_writes_stay_postponed(tmp_path):
    t = table(tmp_path, {"postpone.batch-write-fixed-bucket": "false"})
    t.write(rows([1], "a"))
    assert read(t) == [] and [s.commit_kind for s in t.snapshots()] == ["APPEND"]
    t.compact()
    assert read(t) == [(1, "a", 0)]
