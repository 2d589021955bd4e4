"""A sorted load is written once (commit/placement.py): a write into an empty bucket, or into
a key range no file of its bucket holds, is committed at the bottom level as files that do
not overlap, and no compaction rewrites it; a write that meets existing keys stays at level 0
and is merged as before."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import minipaimon_core as mp
from minipaimon_core.lsm.key_range import find_overlap
from minipaimon_core.metadata.manifest_io import live_files

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
BOTTOM = 5  # num-levels 6


def rows(ids: Any, tag: str) -> pa.Table:
    ids = np.asarray(ids, dtype=np.int64)
    return pa.table({"id": ids, "v": pa.array([f"{tag}{i}" for i in ids])}, schema=SCHEMA)


def table(tmp_path: Any, **options: str) -> mp.Table:
    # small files: a load of 20k rows is ~10 level-0 files, past the compaction trigger (5)
    return mp.create_table(str(tmp_path / "t"), SCHEMA, primary_key=["id"],
                           options={"bucket": "1", "target-file-size": "32 kb", **options})


def files(t: mp.Table) -> list[Any]:
    return [f for s in t.scan().plan() for f in s.files]


def levels(t: mp.Table) -> list[int]:
    return sorted(f["level"] for f in t.system_table("files").to_pylist())


def test_a_large_load_into_an_empty_bucket_is_written_once(tmp_path: Any) -> None:
    t = table(tmp_path)
    t.write(rows(range(20_000), "a"))
    assert [s.commit_kind for s in t.snapshots()] == ["APPEND"]  # no compaction rewrote it
    written = files(t)
    assert len(written) >= 6 and {f.level for f in written} == {BOTTOM}
    assert find_overlap(written) is None
    assert t.scan().to_arrow().sort_by("id").equals(rows(range(20_000), "a"))
    assert t.compact(full=False) is None  # one sorted run: nothing to do


def test_a_write_into_a_key_range_nothing_holds_joins_the_bottom(tmp_path: Any) -> None:
    t = table(tmp_path)
    t.write(rows(range(0, 10_000), "a"))
    t.write(rows(range(20_000, 30_000), "b"))  # above every key
    assert set(levels(t)) == {BOTTOM}
    assert [s.commit_kind for s in t.snapshots()] == ["APPEND", "APPEND"]
    t.write(rows(range(5_000, 6_000), "c"))  # meets the first load: level 0, merged on read
    assert 0 in levels(t)
    want = {**{i: f"a{i}" for i in range(10_000)}, **{i: f"b{i}" for i in range(20_000, 30_000)},
            **{i: f"c{i}" for i in range(5_000, 6_000)}}
    got = t.scan().to_arrow()
    assert dict(zip(got.column("id").to_pylist(), got.column("v").to_pylist())) == want
    t.compact(full=True)
    got = t.scan().to_arrow()
    assert dict(zip(got.column("id").to_pylist(), got.column("v").to_pylist())) == want


def test_two_writers_of_one_commit_whose_files_overlap_stay_at_level_0(tmp_path: Any) -> None:
    t = table(tmp_path, **{"write-only": "true"})
    messages = []
    for tag, ids in (("a", range(0, 100)), ("b", range(50, 150))):
        w = t.new_write("job")
        w.write(rows(ids, tag))
        messages += w.prepare_commit()
    t.new_commit("job").commit(messages, 1)
    assert set(levels(t)) == {0}
    got = t.scan().to_arrow().sort_by("id")  # (of one commit, which writer wins a key is not fixed)
    assert got.column("id").to_pylist() == list(range(150))


@pytest.mark.parametrize("options", [{"changelog-producer": "lookup"}, {"changelog-producer": "full-compaction"},
                                     {"deletion-vectors.enabled": "true"}, {"merge-engine": "first-row"}])
def test_tables_that_need_level_0_or_place_otherwise_are_unchanged(tmp_path: Any, options: dict[str, str]) -> None:
    """A lookup / full-compaction producer makes new files visible by compacting them (their
    changelog); deletion vectors and first-row place writes above level 0 themselves."""
    t = table(tmp_path, **options)
    t.write(rows(range(2_000), "a"))
    assert BOTTOM not in levels(t) or "changelog-producer" in options
    assert t.scan().to_arrow().num_rows == 2_000


def test_a_load_into_a_postponed_bucket_stays_at_level_0(tmp_path: Any) -> None:
    """Files of the postponed bucket (-2) are rows to replay into real buckets, at level 0 as
    Paimon's postpone writers leave them, however sorted; the compaction that replays them
    writes the real buckets."""
    t = table(tmp_path, bucket="-2", **{"postpone.batch-write-fixed-bucket": "false"})
    t.write(rows(range(20_000), "a"))
    postponed = [e.file for e in live_files(t.manifests, t.latest_snapshot())]
    assert len(postponed) >= 6 and {f.level for f in postponed} == {0}
    assert t.scan().to_arrow().num_rows == 0  # not read until compacted
    t.compact()
    assert mp.open_table(t.path).scan().to_arrow().sort_by("id").equals(rows(range(20_000), "a"))
