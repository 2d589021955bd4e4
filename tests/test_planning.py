"""Scan planning on many partitions: manifests clustered by partition and skipped unread."""

from __future__ import annotations

import random
import threading
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import minipaimon_core as mp
from minipaimon_core.expressions.stats import values_stats
from minipaimon_core.format.manifest_file import DataFileMeta
from minipaimon_core.io.fileio import LocalFileIO
from minipaimon_core.metadata.manifest_io import live_files
from minipaimon_core.read.scan import Planner, SplitSizing

SCHEMA = pa.schema([pa.field("p", pa.int32()), pa.field("q", pa.string()), pa.field("v", pa.int64())])
PARTITIONS = 200
COMMITS = 20


class CountingIO(LocalFileIO):
    """Counts the bytes of manifest files read."""

    def __init__(self) -> None:
        super().__init__()
        self.manifest_bytes = 0

    def read_bytes(self, path: str) -> bytes:
        data = super().read_bytes(path)
        if "/manifest/manifest-" in path and "manifest-list" not in path:
            self.manifest_bytes += len(data)
        return data


@pytest.fixture(scope="module")
def wide_table(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = str(tmp_path_factory.mktemp("planning") / "t")
    table = mp.create_table(path, SCHEMA, partition_by=["p", "q"],
                            options={"manifest.target-file-size": "2 kb"})
    rng = random.Random(1)
    for c in range(COMMITS):  # every commit touches every partition
        p = list(range(PARTITIONS))
        table.write(pa.table({
            "p": pa.array([None if i == 7 else i for i in p], pa.int32()),
            "q": [f"q{i % 3}" for i in p],
            "v": [rng.randrange(1000) + c for _ in p]}, schema=SCHEMA))
    return path


def files_of(table: mp.Table, flt: Any) -> set[str]:
    return {f.fileName for s in table.scan(filter=flt).plan() for f in s.files}


def test_rewrite_lets_a_one_partition_filter_skip_most_manifest_bytes(wide_table: str) -> None:
    table = mp.open_table(wide_table)
    before = table.to_arrow().sort_by([("p", "ascending"), ("v", "ascending")])
    result = table.rewrite_manifests()
    assert result.snapshot_id == COMMITS + 1 and result.manifests_after > 10
    assert table.latest_snapshot().commitKind == "COMPACT"  # type: ignore[union-attr]
    assert table.to_arrow().sort_by([("p", "ascending"), ("v", "ascending")]).equals(before)
    full_io, one_io = CountingIO(), CountingIO()
    full = mp.open_table(wide_table, io=full_io).scan().plan()
    one = mp.open_table(wide_table, io=one_io).scan(filter=[("p", "=", 123)]).plan()
    assert sum(len(s.files) for s in full) == PARTITIONS * COMMITS
    assert [len(s.files) for s in one] == [COMMITS]
    assert one_io.manifest_bytes <= 0.05 * full_io.manifest_bytes, (one_io.manifest_bytes, full_io.manifest_bytes)
    scan = mp.open_table(wide_table).scan(filter=[("p", "=", 123)])
    scan.plan()
    stats = scan.stats  # what `minipaimon plan` prints
    assert stats.manifests == result.manifests_after and 1 <= stats.manifests_read <= 0.05 * stats.manifests
    assert (stats.files, stats.splits) == (COMMITS, 1) and stats.entries < PARTITIONS * COMMITS / 10
    # the rewritten table keeps taking commits and time travel to before the rewrite works
    table.write(pa.table({"p": [123], "q": ["q0"], "v": [-1]}, schema=SCHEMA))
    assert len(files_of(table, [("p", "=", 123)])) == COMMITS + 1
    assert table.scan(snapshot_id=COMMITS).to_arrow().num_rows == PARTITIONS * COMMITS


def random_term(rng: random.Random) -> tuple[Any, ...]:
    column = rng.choice(["p", "q", "v"])
    if column == "p":
        value: Any = rng.randrange(-5, PARTITIONS + 5)
    elif column == "q":
        value = rng.choice(["q0", "q1", "q2", "q9", ""])
    else:
        value = rng.randrange(0, 1100)
    op = rng.choice(["=", "!=", "<", "<=", ">", ">=", "in", "not in", "is null", "is not null"])
    if op in ("in", "not in"):
        return (column, op, [value, value if column == "q" else rng.randrange(0, 50)])
    if op in ("is null", "is not null"):
        return (column, op, None)
    return (column, op, value)


def test_pruned_plans_equal_unpruned_plans_for_random_filters(
        wide_table: str, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(7)
    filters = [[[random_term(rng) for _ in range(rng.randrange(1, 3))]
                for _ in range(rng.randrange(1, 3))] for _ in range(60)]
    table = mp.open_table(wide_table)
    pruned = [files_of(table, f) for f in filters]
    monkeypatch.setattr(Planner, "prune_manifests", lambda self, metas, dnf: metas)
    unpruned = [files_of(table, f) for f in filters]
    for flt, a, b in zip(filters, pruned, unpruned):
        assert a == b, flt
    assert any(0 < len(a) < PARTITIONS * COMMITS for a in pruned)


def test_rewrite_of_an_empty_table_and_after_deletes(tmp_path: Path) -> None:
    table = mp.create_table(str(tmp_path / "t"), SCHEMA, partition_by=["p"])
    assert table.rewrite_manifests().snapshot_id is None
    for i in range(5):
        table.write(pa.table({"p": [i], "q": ["a"], "v": [i]}, schema=SCHEMA))
    table.write(pa.table({"p": [1], "q": ["b"], "v": [9]}, schema=SCHEMA), mode="overwrite")
    table.rewrite_manifests()
    assert table.to_arrow().column("v").to_pylist() == [9]
    assert files_of(table, [("p", "=", 3)]) == set()


MB = 1 << 20


@pytest.mark.parametrize("target_size, open_cost, parallelism, total, want", [
    (128 * MB, 4 * MB, None, 1000 * MB, 128 * MB),  # no parallelism: the option
    (128 * MB, 4 * MB, 2, 60 * MB, 30 * MB),  # small table: total / tasks
    (128 * MB, 4 * MB, 2, 1000 * MB, 128 * MB),  # big table: capped by the option
    (128 * MB, 4 * MB, 8, 8 * MB, 4 * MB),  # tiny table: not below the open-file cost
    (128 * MB, MB, 3, 10 * MB + 1, 10 * MB // 3 + 1),  # total / tasks, rounded up
    (100, 0, 1, 7, 7),
])
def test_split_target_follows_sparks_rule(target_size: int, open_cost: int, parallelism: int | None,
                                          total: int, want: int) -> None:
    assert SplitSizing(target_size, open_cost, parallelism).target(total) == want


def data_file(seq: int, size: int) -> DataFileMeta:
    empty = values_stats([], 0)
    return DataFileMeta(fileName=f"f{seq}", fileSize=size, rowCount=1, minKey=(), maxKey=(),
                        valueStats=empty, minSequenceNumber=seq, maxSequenceNumber=seq,
                        schemaId=0, level=0, creationTime=0)


@pytest.mark.parametrize("sizes, open_cost, target, want", [
    ([10, 10, 10, 10], 0, 20, [[0, 1], [2, 3]]),
    ([10, 10, 10, 10], 0, 19, [[0], [1], [2], [3]]),
    ([50, 1, 1, 1], 0, 20, [[0], [1, 2, 3]]),  # a file past the target is a split of its own
    ([1, 1, 1, 1], 5, 10, [[0, 1], [2, 3]]),  # small files weigh the open-file cost
    ([], 0, 10, []),
])
def test_pack_keeps_sequence_order_and_cuts_at_the_target(
        sizes: list[int], open_cost: int, target: int, want: list[list[int]]) -> None:
    files = [data_file(i, s) for i, s in enumerate(sizes)]
    packed = SplitSizing(1, open_cost).pack(list(reversed(files)), target)
    assert [[f.minSequenceNumber for f in chunk] for chunk in packed] == want


def test_parallelism_and_scan_options_cut_an_append_bucket(tmp_path: Path) -> None:
    table = mp.create_table(str(tmp_path / "t"), SCHEMA)
    for i in range(4):  # files of one size (a column of zeros would compress a few bytes smaller)
        table.write(pa.table({"p": [1 + i] * 100, "q": ["x"] * 100, "v": list(range(100))}, schema=SCHEMA))
    assert len({e.file.fileSize for e in live_files(table.manifests, table.latest_snapshot())}) == 1
    one = table.scan().plan()
    assert [len(s.files) for s in one] == [4]  # 4 small files, default sizing: one split
    two = table.scan(parallelism=2, options={"source.split.open-file-cost": "0"}).plan()
    assert [len(s.files) for s in two] == [2, 2]
    tiny = table.scan(options={"source.split.target-size": "1 b"}).plan()
    assert [len(s.files) for s in tiny] == [1, 1, 1, 1]
    assert [f.minSequenceNumber for s in tiny for f in s.files] == \
        sorted(f.minSequenceNumber for s in tiny for f in s.files)
    rows = pa.Table.from_batches([b for s in tiny for b in table.read_split(s)])
    assert rows.sort_by("v").equals(table.to_arrow().sort_by("v"))


def test_primary_key_buckets_stay_whole_whatever_the_sizing(tmp_path: Path) -> None:
    table = mp.create_table(str(tmp_path / "t"), SCHEMA, primary_key=["p"], options={"bucket": "1"})
    for i in range(3):
        table.write(pa.table({"p": [i], "q": ["x"], "v": [i]}, schema=SCHEMA))
    splits = table.scan(parallelism=8, options={"source.split.target-size": "1 b"}).plan()
    assert [len(s.files) for s in splits] == [3]


@pytest.mark.parametrize("kwargs, error, words", [
    ({"options": {"bucket": "2"}}, mp.InvalidArgumentError, "'bucket'"),
    ({"options": {"source.split.target-size": "big"}}, mp.UnsupportedOptionError, "source.split.target-size"),
    ({"options": {"source.split.target-size": "0"}}, mp.UnsupportedOptionError, "source.split.target-size"),
    ({"parallelism": 0}, mp.InvalidArgumentError, "parallelism"),
])
def test_bad_scan_sizing_is_a_typed_error(tmp_path: Path, kwargs: dict[str, Any], error: type,
                                          words: str) -> None:
    table = mp.create_table(str(tmp_path / "t"), SCHEMA)
    with pytest.raises(error, match=words):
        table.scan(**kwargs)


class MeetingIO(LocalFileIO):
    """The first two manifest reads must meet at a barrier: only reads made at once can."""

    def __init__(self) -> None:
        super().__init__()
        self.barrier = threading.Barrier(2, timeout=10)
        self.slots = 2
        self.lock = threading.Lock()

    def read_bytes(self, path: str) -> bytes:
        name = path.rsplit("/", 1)[-1]
        if name.startswith("manifest-") and not name.startswith("manifest-list-"):
            with self.lock:
                wait, self.slots = self.slots > 0, self.slots - 1
            if wait:
                self.barrier.wait()
        return super().read_bytes(path)


def test_a_plan_reads_its_manifests_in_parallel(wide_table: str) -> None:
    io = MeetingIO()
    splits = mp.open_table(wide_table, io=io).scan().plan()
    assert not io.barrier.broken and io.slots < 0
    assert sum(len(s.files) for s in splits) >= PARTITIONS * COMMITS


def test_rewritten_manifests_survive_the_commits_small_manifest_merge(tmp_path: Path) -> None:
    """A commit merges the manifests smaller than ``manifest.target-file-size`` into one;
    every rewritten manifest but the last reaches the target, so the commits after a
    rewrite leave the clustered manifests alone."""
    target = 8192
    table = mp.create_table(str(tmp_path / "t"), SCHEMA, partition_by=["p"], options={
        "manifest.target-file-size": str(target), "manifest.merge-min-count": "3"})

    def commit(c: int) -> None:  # 100 partitions: a delta manifest is small (~4.5 kb)
        table.write(pa.table({"p": list(range(100)), "q": ["x"] * 100, "v": [c] * 100}, schema=SCHEMA))

    for c in range(20):
        commit(c)
    table.rewrite_manifests()
    rewritten = table.manifests.data_manifests(table.latest_snapshot())  # type: ignore[arg-type]
    assert len(rewritten) > 5 and all(m.fileSize >= target for m in rewritten[:-1]), \
        [m.fileSize for m in rewritten]
    for c in range(20, 24):  # the small-manifest merge runs
        commit(c)
    now = {m.fileName for m in table.manifests.data_manifests(table.latest_snapshot())}  # type: ignore[arg-type]
    assert {m.fileName for m in rewritten[:-1]} <= now
