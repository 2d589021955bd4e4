"""Commits cluster the base manifests by partition on their own (issue 11 item 2): the rule of
``manifest_merge`` as a table of cases, then on real tables, with no explicit rewrite."""

from __future__ import annotations

import random
import shutil
import time
from pathlib import Path
from typing import Any

import msgspec
import pyarrow as pa
import pytest

import minipaimon_core as mp
from minipaimon_core.format import avro, manifest_list
from minipaimon_core.format import snapshot as snapshot_codec
from minipaimon_core.format.manifest_file import SimpleStats
from minipaimon_core.format.manifest_list import ManifestFileMeta
from minipaimon_core.maintenance import TableFiles
from minipaimon_core.maintenance.orphans import remove_orphan_files
from minipaimon_core.metadata.manifest_merge import (
    MergeLimits,
    column_ranges,
    may_overlap,
    pick_merge,
    union_ranges,
)
from minipaimon_core.migrate import migrate
from minipaimon_core.read.scan import Planner
from tests.test_commit_races import StallingFileIO
from tests.test_crash import FailingFileIO, InjectedFault
from tests.test_planning import CountingIO, random_term

SCHEMA = pa.schema([pa.field("p", pa.int32()), pa.field("q", pa.string()), pa.field("v", pa.int64())])
PARTITIONS = 200
MIN_COMMITS = 30  # a commit's delta (all partitions) is then ~3 % of the manifest bytes
AUTO = {"manifest.target-file-size": "2 kb", "manifest.full-compaction-threshold-size": "32 kb"}


# -- the rule, no IO ---------------------------------------------------------------------------

def meta(name: str, size: int, lo: Any, hi: Any, clustered: bool = False, deletes: int = 0,
         nulls: int = 0) -> ManifestFileMeta:
    """A manifest of 2 + ``deletes`` entries whose partitions (one column) span [lo, hi]."""
    return ManifestFileMeta(fileName=name, fileSize=size, numAddedFiles=2, numDeletedFiles=deletes,
                            partitionStats=SimpleStats((lo,), (hi,), (nulls,)), minBucket=0,
                            maxBucket=0, minLevel=0, maxLevel=0, schemaId=0, clustered=clustered)


LIMITS = MergeLimits(target=100, full_threshold=1000, min_count=3)


@pytest.mark.parametrize("metas, keep, full", [
    # unclustered bytes under the threshold: the list as it is
    ([meta("c1", 5000, 0, 9, True), meta("u1", 999, 0, 99)], ["c1", "u1"], False),
    # past the threshold and a tenth of all bytes: a full rewrite keeps the clustered
    # manifests that are big, DELETE-free and disjoint from the unclustered partitions
    ([meta("c1", 5000, 0, 9, True), meta("c2", 5000, 10, 19, True), meta("u1", 1200, 15, 30)],
     ["c1"], True),
    ([meta("c1", 5000, 0, 9, True), meta("c2", 50, 40, 41, True), meta("c3", 500, 50, 59, True, deletes=1),
      meta("u1", 1200, 15, 30)], ["c1"], True),  # small or with DELETEs: rewritten
    # null partitions: shared only with a manifest that holds a null too; a list written
    # before ranges were kept beside nulls (min/max None, some values not null): unknown
    ([meta("c1", 5000, 0, 9, True), meta("c2", 5000, 20, 29, True, nulls=1),
      meta("u1", 1200, None, None, nulls=2)], ["c1"], True),
    ([meta("c1", 5000, 0, 9, True), meta("u1", 1200, None, None, nulls=1)], [], True),
    # past the threshold but under a tenth of all bytes: not yet
    ([meta("c1", 20000, 0, 9, True), meta("u1", 1500, 50, 60)], ["c1", "u1"], False),
    # under the threshold, min_count small manifests: the small merge, not clustered
    ([meta("c1", 5000, 0, 9, True), meta("u1", 10, 0, 5), meta("u2", 10, 3, 7), meta("u3", 10, 8, 9)],
     ["c1"], False),
    ([meta("u1", 10, 0, 5), meta("u2", 10, 3, 7)], ["u1", "u2"], False),  # too few to merge
])
def test_pick_merge(metas: list[ManifestFileMeta], keep: list[str], full: bool) -> None:
    pick = pick_merge(metas, LIMITS)
    assert [m.fileName for m in pick.keep] == keep
    assert pick.full == full
    assert sorted(m.fileName for m in pick.keep + pick.rewrite) == sorted(m.fileName for m in metas)


@pytest.mark.parametrize("a, b, want", [  # (min, max, nulls) of a manifest of 2 entries
    ((0, 9, 0), (10, 19, 0), False), ((0, 10, 0), (10, 19, 0), True), (("a", "c", 0), ("b", "b", 0), True),
    ((0, 9, 1), (10, 19, 1), True),  # both hold the null partition
    ((0, 9, 1), (10, 19, 0), False), ((None, None, 2), (0, 1, 0), False), ((None, None, 2), (0, 1, 1), True),
    ((None, None, 1), (0, 1, 0), True),  # unknown (written before ranges beside nulls)
    ((0, 5, 0), ("a", "b", 0), True),  # incomparable: unknown
])
def test_may_overlap(a: tuple[Any, Any, int], b: tuple[Any, Any, int], want: bool) -> None:
    ranges = [column_ranges(meta("m", 1, lo, hi, nulls=n)) for lo, hi, n in (a, b)]
    assert may_overlap(*ranges) == may_overlap(*reversed(ranges)) == want
    assert union_ranges(ranges) == union_ranges(list(reversed(ranges)))


# -- real tables -------------------------------------------------------------------------------

def write_all(table: mp.Table, c: int, partitions: range = range(PARTITIONS)) -> None:
    """One row in each partition (p 7 is the null partition)."""
    table.write(pa.table({"p": pa.array([None if i == 7 else i for i in partitions], pa.int32()),
                          "q": [f"q{i % 3}" for i in partitions], "v": [c] * len(partitions)}, schema=SCHEMA))


def base_metas(table: mp.Table) -> list[ManifestFileMeta]:
    snap = table.latest_snapshot()
    assert snap is not None
    return table.manifests.read_list(snap.baseManifestList)


def rewrote(table: mp.Table) -> bool:
    """Did the latest commit rewrite the base? Then every base manifest is clustered (a commit
    without it adds the previous, unclustered, delta to the base)."""
    base = base_metas(table)
    return bool(base) and all(m.clustered for m in base)


@pytest.fixture(scope="module")
def auto_table(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, list[int]]:
    """200 partitions, every commit touching every one, committed until >= MIN_COMMITS and the
    last commit rewrote the base on its own. Returns the path and the commits that rewrote."""
    path = str(tmp_path_factory.mktemp("auto") / "t")
    table = mp.create_table(path, SCHEMA, partition_by=["p", "q"], options=AUTO)
    rewrites: list[int] = []
    for c in range(MIN_COMMITS * 2):
        write_all(table, c)
        if rewrote(table):
            rewrites.append(c + 1)
            if c + 1 >= MIN_COMMITS:
                break
    return path, rewrites


def files_of(table: mp.Table, flt: Any) -> set[str]:
    return {f.fileName for s in table.scan(filter=flt).plan() for f in s.files}


def test_commits_cluster_the_base_so_a_one_partition_filter_skips_most_bytes(
        auto_table: tuple[str, list[int]]) -> None:
    path, rewrites = auto_table
    commits = rewrites[-1]
    assert commits >= MIN_COMMITS
    assert 3 <= len(rewrites) <= commits // 3, rewrites  # rare: amortised over several commits
    table = mp.open_table(path)
    assert [s.commitKind for s in table.snapshots()] == ["APPEND"] * commits  # no explicit rewrite
    full_io, one_io = CountingIO(), CountingIO()
    full = mp.open_table(path, io=full_io).scan().plan()
    one = mp.open_table(path, io=one_io).scan(filter=[("p", "=", 123)]).plan()
    assert sum(len(s.files) for s in full) == PARTITIONS * commits
    # one partition's files (a split holds at most split-size / open-file-cost of them)
    assert sum(len(s.files) for s in one) == commits
    assert {tuple(s.partition) for s in one} == {tuple(one[0].partition)}
    assert one_io.manifest_bytes <= 0.05 * full_io.manifest_bytes, (one_io.manifest_bytes, full_io.manifest_bytes)
    got = table.scan(filter=[("p", "=", 123)]).to_arrow()
    assert sorted(got.column("v").to_pylist()) == list(range(commits))


def test_auto_clustered_plans_equal_unpruned_plans_for_random_filters(
        auto_table: tuple[str, list[int]], monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(11)
    filters = [[[random_term(rng) for _ in range(rng.randrange(1, 3))]
                for _ in range(rng.randrange(1, 3))] for _ in range(40)]
    table = mp.open_table(auto_table[0])
    pruned = [files_of(table, f) for f in filters]
    monkeypatch.setattr(Planner, "prune_manifests", lambda self, metas, dnf: metas)
    for flt, files in zip(filters, pruned):
        assert files == files_of(table, flt), flt


def test_a_commit_under_the_threshold_does_not_rewrite(tmp_path: Path) -> None:
    """With the default threshold (256 kb) these commits only append: base(N+1) is base(N) +
    delta(N), no manifest rewritten, every manifest ever written still in the base."""
    table = mp.create_table(str(tmp_path / "t"), SCHEMA, partition_by=["p"],
                            options={"manifest.target-file-size": "2 kb"})
    for c in range(8):
        before = table.latest_snapshot()
        write_all(table, c, range(50))
        if before is not None:
            delta = table.manifests.read_list(before.deltaManifestList)
            assert [m.fileName for m in base_metas(table)] == \
                [m.fileName for m in table.manifests.read_list(before.baseManifestList) + delta]
    assert not any(m.clustered for m in base_metas(table))


def test_the_small_merge_sorts_and_cuts_its_output_by_partition(tmp_path: Path) -> None:
    table = mp.create_table(str(tmp_path / "t"), SCHEMA, partition_by=["p"], options={
        "manifest.target-file-size": "8 kb", "manifest.merge-min-count": "6",
        "manifest.full-compaction-threshold-size": "1 gb"})
    for c in range(7):  # the 7th commit merges the 6 small deltas (each spans p 100..139)
        write_all(table, c, range(100, 140))
    merged = base_metas(table)
    assert len(merged) > 1 and not any(m.clustered for m in merged), [m.fileSize for m in merged]
    ranges = [(m.partitionStats.minValues[0], m.partitionStats.maxValues[0]) for m in merged]
    assert ranges[0][0] == 100 and ranges[-1][1] == 139
    assert all(a[1] <= b[0] for a, b in zip(ranges, ranges[1:])), ranges  # narrow, in order
    assert table.to_arrow().num_rows == 7 * 40


def test_clustered_manifests_outside_the_changed_partitions_are_reused(tmp_path: Path) -> None:
    table = mp.create_table(str(tmp_path / "t"), SCHEMA, partition_by=["p"], options=AUTO)
    for c in range(5):
        write_all(table, c, range(1000, 1200))
    table.rewrite_manifests()
    clustered = [m for m in base_metas(table) if m.fileSize >= 2048]
    assert len(clustered) > 10
    for c in range(20):  # commits to new partitions only
        write_all(table, c, range(2000, 2200))
        if rewrote(table):
            break
    assert rewrote(table)
    names = {m.fileName for m in base_metas(table)}
    assert {m.fileName for m in clustered} <= names  # the old clustered run, not rewritten
    assert table.to_arrow().num_rows == 200 * (5 + c + 1)


def test_bad_threshold_is_a_typed_error(tmp_path: Path) -> None:
    for value in ("big", "0", "-1 mb"):
        with pytest.raises(mp.UnsupportedOptionError, match="manifest.full-compaction-threshold-size"):
            mp.create_table(str(tmp_path / "t"), SCHEMA, options={"manifest.full-compaction-threshold-size": value})
    assert not (tmp_path / "t").exists()


# -- old tables, races, crashes ------------------------------------------------------------------

def make_lists_old(path: str) -> None:
    """Re-encode every manifest list as Paimon's writers do (without minipaimon's clustered
    flag and digest) and drop the list sizes and digests from the snapshots, as another
    writer's snapshots are."""
    schema = {**manifest_list.SCHEMA, "fields": [
        f for f in manifest_list.SCHEMA["fields"] if not f["name"].startswith("_MINIPAIMON")]}
    for f in Path(path, "manifest").glob("manifest-list-*"):
        records = avro.read_container(f.read_bytes(), str(f)).records
        f.write_bytes(avro.write_container(schema, [
            {k: v for k, v in r.items() if not k.startswith("_MINIPAIMON")} for r in records]))
    for f in Path(path, "snapshot").glob("snapshot-*"):
        snap = snapshot_codec.decode(f.read_bytes(), str(f))
        f.write_bytes(snapshot_codec.encode(msgspec.structs.replace(
            snap, baseManifestListSize=None, deltaManifestListSize=None, changelogManifestListSize=None,
            minipaimonDigests=None)))


def test_old_tables_plan_read_and_get_clustered(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    table = mp.create_table(path, SCHEMA, partition_by=["p"], options={"manifest.target-file-size": "2 kb"})
    for c in range(6):
        write_all(table, c, range(100))
    make_lists_old(path)
    old = mp.open_table(path)
    assert not any(m.clustered for m in base_metas(old))
    want = old.to_arrow().sort_by([("p", "ascending"), ("v", "ascending")])
    assert files_of(old, [("p", "=", 42)]) and len(files_of(old, [("p", "=", 42)])) == 6
    old.set_options({"manifest.full-compaction-threshold-size": "1 b"})
    write_all(old, 6, range(100, 101))  # the first commit on it clusters the old manifests
    now = mp.open_table(path)
    assert rewrote(now)
    extra = pa.table({"p": pa.array([100], pa.int32()), "q": ["q1"], "v": [6]}, schema=SCHEMA)
    assert now.to_arrow().sort_by([("p", "ascending"), ("v", "ascending")]).equals(
        pa.concat_tables([want, extra]).sort_by([("p", "ascending"), ("v", "ascending")]))
    assert len(files_of(now, [("p", "=", 42)])) == 6


def test_the_v1_fixture_table_migrated_takes_an_automatic_rewrite(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    shutil.copytree(Path(__file__).parent / "fixtures" / "v1_decimal_table", path)
    before = mp.open_table(path).to_arrow()
    assert migrate(path).migrated
    table = mp.open_table(path)
    assert table.to_arrow().equals(before)
    table.set_options({"manifest.full-compaction-threshold-size": "1 b"})
    new = before.slice(0, 1).set_column(0, before.schema.field(0), pa.array([4], pa.int64()))
    table.write(new)  # a new key of this primary-key table
    assert rewrote(mp.open_table(path))
    got = mp.open_table(path).to_arrow()
    assert sorted(map(str, got.to_pylist())) == sorted(map(str, before.to_pylist() + new.to_pylist()))


def used_manifests(table: mp.Table) -> set[str]:
    files = TableFiles.of(table)
    return {p for snap in table.snapshots() for p in files.used_paths(snap) if "/manifest/" in p}


def manifests_on_disk(path: str) -> set[str]:
    return {str(f) for f in Path(path, "manifest").iterdir()}


def test_a_committer_that_loses_the_race_during_a_rewrite_loses_nothing(tmp_path: Path) -> None:
    """B reads snapshot N, rewrites the base, then stalls before its create while A commits
    (rewriting too); B's create fails, it deletes its rewrite and commits on A's snapshot."""
    path = str(tmp_path / "t")
    table = mp.create_table(path, SCHEMA, partition_by=["p"], options={
        "manifest.target-file-size": "8 kb", "manifest.full-compaction-threshold-size": "1 b"})
    for c in range(4):
        write_all(table, c, range(30))

    def other_commits() -> None:
        for c in (100, 101):
            write_all(mp.open_table(path), c, range(30))

    stalled = mp.open_table(path, io=StallingFileIO(table.io, other_commits))
    write_all(stalled, 200, range(30))
    final = mp.open_table(path)
    assert rewrote(final)
    assert sorted(final.to_arrow().column("v").to_pylist()) == \
        sorted([c for c in (0, 1, 2, 3, 100, 101, 200) for _ in range(30)])
    for snap in final.snapshots():
        assert final.scan(snapshot_id=snap.id).to_arrow().num_rows == snap.totalRecordCount
    assert manifests_on_disk(path) == used_manifests(final)  # the lost attempt left nothing


def test_a_failure_at_any_write_of_a_rewriting_commit_leaves_before_or_after(tmp_path: Path) -> None:
    """Every write of a commit that rewrites the base fails once: the table is before or after
    the commit, the failed attempt left no manifest behind, and the retry commits once."""
    seed = str(tmp_path / "seed")
    table = mp.create_table(seed, SCHEMA, partition_by=["p"], options={
        "manifest.target-file-size": "1 kb", "manifest.full-compaction-threshold-size": "4 kb"})
    for c in range(3):
        write_all(table, c, range(40))
    k = 1
    while True:
        path = str(tmp_path / f"t{k}")
        shutil.copytree(seed, path)
        t = mp.open_table(path)
        before = sorted(t.to_arrow().column("v").to_pylist())
        w = t.new_write("job")
        w.write(pa.table({"p": pa.array(range(40), pa.int32()), "q": ["x"] * 40, "v": [9] * 40}, schema=SCHEMA))
        msgs = w.prepare_commit()
        data = {f for f in Path(path).rglob("*.parquet")}
        try:
            mp.open_table(path, io=FailingFileIO(k, t.io)).new_commit("job").commit(msgs, 1)
            failed = False
        except InjectedFault:
            failed = True
        after = sorted([*before, *[9] * 40])
        got = sorted(mp.open_table(path).to_arrow().column("v").to_pylist())
        assert got in (before, after), k
        if failed:
            assert manifests_on_disk(path) == used_manifests(mp.open_table(path)), k  # cleaned
        mp.open_table(path).new_commit("job").commit(msgs, 1)  # the retry
        reopened = mp.open_table(path)
        assert sorted(reopened.to_arrow().column("v").to_pylist()) == after, k
        assert rewrote(reopened), k  # the commit under test is one that rewrites
        assert {f for f in Path(path).rglob("*.parquet")} == data
        later = int(time.time() * 1000) + 2 * 86_400_000
        assert remove_orphan_files(TableFiles.of(reopened), older_than_ms=later - 1, now_ms=later).files == []
        if not failed:
            break
        k += 1
    assert k > 5  # the rewrite wrote several manifests, each failed once
