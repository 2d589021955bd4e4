"""Spill-to-disk write buffer: a large write with a small buffer leaves one sorted run per
bucket, equal to the same write merged in memory, and no temp file behind."""

from __future__ import annotations

import random
import tempfile
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import minipaimon_core as mp

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("k", pa.string(), nullable=False),
                    ("v", pa.int64()), ("s", pa.string())])
ENGINES = {
    "deduplicate": {},
    "partial-update": {},
    "aggregation": {"fields.v.aggregate-function": "sum"},
    "first-row": {},
}


@pytest.fixture
def spill_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "tmpdir"
    root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(root))
    return root


def batches(seed: int, engine: str, n: int = 12) -> list[pa.Table]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        size = rng.randrange(500, 3000)
        ids = [rng.randrange(4000) for _ in range(size)]
        kinds = ["-D" if engine == "deduplicate" and rng.random() < 0.1 else "+I" for _ in ids]
        out.append(pa.table({
            "id": ids, "k": [f"k{i % 7}" for i in ids],
            "v": [rng.choice([None, rng.randrange(100)]) for _ in ids],
            "s": [rng.choice([None, "x" * rng.randrange(1, 40)]) for _ in ids],
            "_row_kind": kinds,
        }))
    return out


def write(path: str, engine: str, data: list[pa.Table], buffer: str, spillable: bool) -> mp.Table:
    table = mp.create_table(path, SCHEMA, primary_key=["id", "k"], options={
        "bucket": "2", "merge-engine": engine, "write-buffer-size": buffer,
        "write-buffer-spillable": str(spillable).lower(), "write-only": "true", **ENGINES[engine]})
    w = table.new_write("w")
    for t in data:
        w.write(t)
    table.new_commit("w").commit(w.prepare_commit(), 1)
    return table


def level0_files_by_bucket(table: mp.Table) -> dict[Any, list[Any]]:
    """The files the write left in each bucket (every level: a first-row table's writes are
    placed above level 0, and level 0 is not read)."""
    from minipaimon_core.metadata.manifest_io import live_files

    out: dict[Any, list[Any]] = {}
    for e in live_files(table.manifests, table.refresh().latest_snapshot()):
        out.setdefault(e.bucket, []).append(e.file)
    return out


def disjoint(files: list[Any]) -> bool:
    ordered = sorted(files, key=lambda f: tuple(f.minKey))
    return all(tuple(a.maxKey) < tuple(b.minKey) for a, b in zip(ordered, ordered[1:]))


@pytest.mark.parametrize("engine", list(ENGINES))
def test_spilled_write_equals_in_memory_merge_and_is_one_run(
        tmp_path: Path, spill_root: Path, engine: str) -> None:
    data = batches(7, engine)
    spilled = write(str(tmp_path / "spilled"), engine, data, "64 kb", spillable=True)
    reference = write(str(tmp_path / "memory"), engine, data, "256 mb", spillable=False)
    assert spilled.to_arrow().sort_by([("id", "ascending"), ("k", "ascending")]).equals(
        reference.to_arrow().sort_by([("id", "ascending"), ("k", "ascending")]))
    files = level0_files_by_bucket(spilled)
    assert set(files) == {0, 1}
    assert all(disjoint(fs) for fs in files.values())  # one sorted run per bucket
    assert list(spill_root.iterdir()) == []
    unspilled = level0_files_by_bucket(write(str(tmp_path / "flushed"), engine, data, "64 kb", False))
    assert max(len(fs) for fs in unspilled.values()) > 5  # without spilling: many small runs


def test_spilled_runs_roll_at_the_target_file_size(tmp_path: Path, spill_root: Path) -> None:
    table = mp.create_table(str(tmp_path / "t"), SCHEMA, primary_key=["id", "k"], options={
        "write-buffer-size": "256 kb", "target-file-size": "200 kb"})
    w = table.new_write("w")
    for start in range(0, 60_000, 5_000):
        ids = list(range(start, start + 5_000))
        w.write(pa.table({"id": ids, "k": ["a"] * len(ids), "v": ids, "s": ["y" * 20] * len(ids)}))
    table.new_commit("w").commit(w.prepare_commit(), 1)
    files = level0_files_by_bucket(table)[0]
    assert len(files) > 2 and disjoint(files)
    assert table.to_arrow().num_rows == 60_000


def test_temp_files_are_removed_on_abort_and_failure(tmp_path: Path, spill_root: Path) -> None:
    data = batches(3, "deduplicate", n=6)
    table = mp.create_table(str(tmp_path / "t"), SCHEMA, primary_key=["id", "k"],
                            options={"write-buffer-size": "64 kb"})
    w = table.new_write("w")
    for t in data:
        w.write(t)
    assert any(spill_root.rglob("*.arrows"))  # spilled while writing
    w.abort()
    assert list(spill_root.iterdir()) == []
    bad = pa.table({"id": [None], "k": ["a"], "v": [1], "s": ["x"], "_row_kind": ["+I"]},
                   schema=data[0].schema)
    stream = pa.RecordBatchReader.from_batches(
        data[0].schema, (b for t in [*data, bad] for b in t.to_batches()))
    with pytest.raises(mp.MiniPaimonError, match="null"):
        table.write(stream)  # spills, then meets a null key
    assert list(spill_root.iterdir()) == []
    assert table.latest_snapshot() is None


def test_stats_of_a_file_written_in_parts_equal_stats_of_the_whole() -> None:
    from minipaimon_core.expressions.stats import merge_stats, table_stats

    rng = random.Random(5)
    whole = pa.table({
        "a": [rng.choice([None, rng.randrange(-50, 50)]) for _ in range(300)],
        "b": [None] * 150 + [rng.choice(["x", "yy", None]) for _ in range(150)],
        "c": [rng.choice([0.5, -1.0, None]) for _ in range(299)] + [float("nan")],
        "d": [[1]] * 300,
    })
    columns = ["a", "b", "c", "d"]
    for cuts in ([100, 200], [150], [1, 299], [299]):
        bounds = [0, *cuts, 300]
        parts = [whole.slice(lo, hi - lo) for lo, hi in zip(bounds, bounds[1:])]
        merged = merge_stats([(table_stats(p, columns), p.num_rows) for p in parts])
        assert merged == table_stats(whole, columns), cuts


def test_input_in_key_order_is_written_at_once_not_spilled(tmp_path: Path, spill_root: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Batches whose keys follow each other (a bulk load): each full buffer is written as
    level-0 files at once, nothing is spilled, and the files are one sorted run (placed at
    the bottom); a batch that goes back in key order is spilled and merged as before."""
    from minipaimon_core.lsm.key_range import find_overlap
    from minipaimon_core.write import spill

    spilled: list[int] = []
    real = spill.SpillDirectory.spill

    def counting(self: Any, run: pa.Table, key_columns: Any) -> Any:
        spilled.append(run.num_rows)
        return real(self, run, key_columns)

    monkeypatch.setattr(spill.SpillDirectory, "spill", counting)
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])

    def load(path: str, starts: list[int]) -> mp.Table:
        t = mp.create_table(path, schema, primary_key=["id"], options={
            "bucket": "1", "write-buffer-size": "256 kb", "write-only": "true"})
        w = t.new_write("w")
        for s in starts:
            w.write(pa.table({"id": list(range(s, s + 5000)), "v": [f"v{s}-{i}" for i in range(5000)]},
                             schema=schema))
        t.new_commit("w").commit(w.prepare_commit(), 1)
        return t

    t = load(str(tmp_path / "ordered"), [0, 5000, 10_000, 15_000, 20_000])
    assert spilled == []
    files = [f for s in t.scan().plan() for f in s.files]
    assert len(files) > 1 and find_overlap(files) is None
    got = t.scan().to_arrow().sort_by("id")
    assert got.column("id").to_pylist() == list(range(25_000))
    t = load(str(tmp_path / "back"), [0, 5000, 10_000, 2_500, 20_000])  # goes back: spilled
    assert spilled
    files = [f for s in t.scan().plan() for f in s.files]
    assert find_overlap(files) is None  # merged again into one sorted run
    assert sorted(p.name for p in (tmp_path / "back" / "bucket-0").iterdir()) == sorted(f.fileName for f in files)
    got = t.scan().to_arrow().sort_by("id")
    want = {**{i: f"v0-{i}" for i in range(5000)}, **{i: f"v5000-{i - 5000}" for i in range(5000, 10_000)},
            **{i: f"v10000-{i - 10_000}" for i in range(10_000, 15_000)},
            **{i: f"v2500-{i - 2500}" for i in range(2500, 7500)},
            **{i: f"v20000-{i - 20_000}" for i in range(20_000, 25_000)}}
    assert dict(zip(got.column("id").to_pylist(), got.column("v").to_pylist())) == want
