"""Compaction streams (maintenance.bucket_merge): every compaction of random histories, for
every merge engine, changelog producer, deletion vectors and dynamic buckets, read with
tiny batches so that each merge takes many steps, writes exactly the files' rows and the
changelog that the in-memory merge of all its inputs at once gives (the oracle below is the
compaction as it was before it streamed: concatenate every input, ``merge``, diff)."""

from __future__ import annotations

import dataclasses
import os
import random
import subprocess
import sys
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import minipaimon_core as mp
from minipaimon_core.format.kinds import SEQUENCE, VALUE_KIND
from minipaimon_core.format.manifest_file import DataFileMeta
from minipaimon_core.lsm import changelog
from minipaimon_core.lsm.key_range import key_order, overlaps
from minipaimon_core.lsm.merge_engines import MergeConfig, merge
from minipaimon_core.maintenance import bucket_merge, compaction
from minipaimon_core.maintenance.bucket_merge import BucketRuns, semi_join_rows
from minipaimon_core.read.read import read_file_as
from minipaimon_core.write import rolling
from tests import test_pk_model as model

OPS = 400


class Oracle:
    """Checks each compaction against the merge of its inputs at once; counts the steps."""

    def __init__(self) -> None:
        self.checked = 0
        self.changelogs = 0
        self.multi_step = 0

    def __call__(self, runs: BucketRuns, config: MergeConfig, files: list[DataFileMeta],
                 inputs: list[DataFileMeta], output_level: int,
                 max_level: int) -> tuple[list[DataFileMeta], list[DataFileMeta]]:
        after, changes = bucket_merge.compact_runs(runs, config, files, inputs, output_level, max_level)
        ctx = runs.ctx

        def rows(f: DataFileMeta, names: list[str] | None = None) -> pa.Table:
            names = names or [*ctx.schema.field_names, SEQUENCE, VALUE_KIND]
            t = read_file_as(ctx.io, ctx.layout, ctx.schemas, ctx.schema, runs.path, runs.bucket, f, names)
            marked = runs._deleted.get(f.fileName)
            if marked is not None and len(marked):
                keep = np.ones(t.num_rows, bool)
                keep[marked] = False
                t = t.filter(pa.array(keep))
            return t

        def read_all(fs: list[DataFileMeta], like: pa.Table) -> pa.Table:
            return pa.concat_tables([like.slice(0, 0), *(rows(f) for f in fs)])

        bottom = output_level == max_level
        everything = pa.concat_tables([rows(f) for f in inputs])
        merged = merge(everything, config, keep_deletes=not bottom or config.keeps_tombstones)
        keys = list(config.key_columns)
        if config.engine == "first-row":
            names = {f.fileName for f in inputs}
            lo = min(key_order(f.minKey) for f in inputs)
            hi = max(key_order(f.maxKey) for f in inputs)
            held = [rows(f, keys) for f in files
                    if f.level > 0 and f.fileName not in names and overlaps(f, lo, hi)]
            if held and merged.num_rows:
                found = pa.concat_tables(held).group_by(keys).aggregate([])
                hit = np.zeros(merged.num_rows, bool)
                hit[semi_join_rows(merged, found, keys).to_numpy()] = True
                merged = merged.filter(pa.array(~hit))
        assert read_all(after, merged).to_pylist() == merged.to_pylist()
        for f in after:
            assert f.level == output_level
        assert len({(f.minKey, f.maxKey) for f in after}) == len(after)
        ordered = sorted(after, key=lambda f: key_order(f.minKey))
        assert all(key_order(a.maxKey) < key_order(b.minKey) for a, b in zip(ordered, ordered[1:]))
        producer = ctx.options["changelog-producer"]
        want = None
        if producer == "full-compaction" and bottom:
            previous = [f for f in files if f.level == max_level]
            want = changelog.diff(merge(read_all(previous, merged), config, keep_deletes=False), merged, keys)
        elif producer == "lookup" and any(f.level == 0 for f in inputs):
            new_files = [f for f in inputs if f.level == 0]
            new_rows = pa.concat_tables([rows(f) for f in new_files])
            lo = min(key_order(f.minKey) for f in new_files)
            hi = max(key_order(f.maxKey) for f in new_files)
            new_keys = new_rows.select(keys).group_by(keys).aggregate([])
            old = [new_rows.slice(0, 0)]
            for f in files:
                if f.level > 0 and overlaps(f, lo, hi):
                    t = rows(f)
                    old.append(t.take(semi_join_rows(t, new_keys, keys)))
            old_rows = pa.concat_tables(old)
            want = changelog.diff(merge(old_rows, config, keep_deletes=False),
                                  merge(pa.concat_tables([old_rows, new_rows]), config, keep_deletes=False), keys)
        got = read_all(changes, merged) if changes else None
        if want is None or want.num_rows == 0:
            assert got is None
        else:
            assert got is not None and got.to_pylist() == want.to_pylist()
            self.changelogs += 1
        self.checked += 1
        self.multi_step += sum(f.rowCount for f in inputs) > 3 * len(inputs)
        return after, changes


@pytest.fixture
def oracle(monkeypatch: pytest.MonkeyPatch) -> Oracle:
    check = Oracle()
    monkeypatch.setattr(compaction, "compact_runs", check)
    monkeypatch.setattr(bucket_merge, "BATCH_ROWS", 3)  # every file read 3 rows at a time
    monkeypatch.setattr(rolling, "ROW_GROUP_BYTES", 256)
    return check


CONFIGS = {
    **{name: dataclasses.replace(c, options={**c.options, "target-file-size": "600 b"})
       for name, c in model.CONFIGS.items()},
    "dynamic-lookup": model.Config("deduplicate", {"bucket": "-1", "dynamic-bucket.target-row-num": "20",
                                                   "changelog-producer": "lookup"}, ("-D",)),
    "aggregation-lookup-dv": model.Config("aggregation", {
        "bucket": "2", "fields.v.aggregate-function": "sum", "fields.s.aggregate-function": "max",
        "fields.s.ignore-retract": "true", "changelog-producer": "lookup"}, ("-U", "-D")),
    "partial-update-full": model.Config("partial-update", {
        "bucket": "1", "partial-update.remove-record-on-delete": "true",
        "changelog-producer": "full-compaction", "target-file-size": "400 b"}, ("-D",)),
}


@pytest.mark.parametrize("name", list(CONFIGS))
def test_every_compaction_streams_the_merge_at_once(tmp_path: Any, oracle: Oracle, name: str) -> None:
    config = CONFIGS[name]
    model.run(str(tmp_path / "t"), config, 7 + len(name), OPS)
    assert oracle.checked >= 5 and oracle.multi_step >= 3, (oracle.checked, oracle.multi_step)
    if config.options.get("changelog-producer") in ("lookup", "full-compaction"):
        assert oracle.changelogs >= 1


def test_rows_a_deletion_vector_marks_are_left_out_of_a_compaction(tmp_path: Any, oracle: Oracle) -> None:
    """A primary-key table with deletion vectors: the rows a vector marks (older versions of
    rewritten keys) are not merged into the compaction's output."""
    t = mp.create_table(str(tmp_path / "t"), pa.schema([pa.field("id", pa.int64(), nullable=False),
                                                        ("v", pa.int64())]),
                        primary_key=["id"], options={"bucket": "1", "deletion-vectors.enabled": "true",
                                                     "write-only": "true"})
    t.write(pa.table({"id": pa.array(range(100), pa.int64()), "v": pa.array(range(100), pa.int64())}))
    t.write(pa.table({"id": pa.array(range(0, 100, 2), pa.int64()), "v": pa.array([-1] * 50, pa.int64())}))
    assert t.compact(full=True) is not None
    assert oracle.checked == 1
    got = t.scan().to_arrow().sort_by("id")
    assert got.column("v").to_pylist() == [-1 if i % 2 == 0 else i for i in range(100)]


def test_compaction_memory_does_not_grow_with_the_bucket(tmp_path: Any) -> None:
    """Peak Arrow memory of a full compaction of one bucket of 4 overlapping sorted runs, in
    a child process reading 8,192 rows at a time with a 1 MB output buffer (so that both
    sizes fill them): 1.6M rows take less than twice what 200k rows take (measured: 10 and
    17 MB), where the merge of all rows at once took 8x more for 8x the rows (19 and 149 MB)."""
    peaks = [_compaction_peak(str(tmp_path / f"t{n}"), n) for n in (200_000, 1_600_000)]
    assert peaks[1] < 2 * peaks[0], peaks


_CHILD = r"""
import sys, numpy as np, pyarrow as pa, minipaimon_core as mp
from minipaimon_core.maintenance import bucket_merge
from minipaimon_core.write import rolling
bucket_merge.BATCH_ROWS, rolling.ROW_GROUP_BYTES = 8192, 1 << 20
path, n = sys.argv[1], int(sys.argv[2])
t = mp.create_table(path, pa.schema([pa.field("id", pa.int64(), nullable=False), ("k", pa.string()),
                                     ("v", pa.float64())]), primary_key=["id"],
                    options={"bucket": "1", "write-only": "true"})
rng = np.random.default_rng(1)
for run in range(4):
    ids = np.sort(rng.choice(2 * n, n // 4, replace=False)).astype(np.int64)
    t.write(pa.table({"id": ids, "k": pa.array([f"k{i}" for i in ids % 1000]), "v": ids * 0.5}))
pool = pa.default_memory_pool()
pool.release_unused()
base = pool.bytes_allocated()
start = pool.max_memory()
t.compact(full=True)
print(pool.max_memory() - base if pool.max_memory() > start else 0)
"""


def _compaction_peak(path: str, rows: int) -> int:
    out = subprocess.run([sys.executable, "-c", _CHILD, path, str(rows)], capture_output=True, text=True,
                         env={**os.environ, "ARROW_DEFAULT_MEMORY_POOL": "system"}, check=True)
    return int(out.stdout.strip().splitlines()[-1])


def test_a_compaction_that_fails_leaves_no_file(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A failure part way (the changelog writer's store fails) deletes every file the
    compaction wrote, data files of earlier steps included; the table is as before."""
    t = mp.create_table(str(tmp_path / "t"), pa.schema([pa.field("id", pa.int64(), nullable=False),
                                                        ("v", pa.int64())]),
                        primary_key=["id"], options={"bucket": "1", "write-only": "true",
                                                     "changelog-producer": "full-compaction",
                                                     "target-file-size": "2 kb"})
    rng = random.Random(5)
    for _ in range(3):
        ids = sorted(rng.sample(range(5000), 1000))
        t.write(pa.table({"id": pa.array(ids, pa.int64()), "v": pa.array(ids, pa.int64())}))
    before = sorted(os.listdir(tmp_path / "t" / "bucket-0"))
    rows = t.scan().to_arrow().sort_by("id")
    monkeypatch.setattr(bucket_merge, "BATCH_ROWS", 100)
    calls = {"n": 0}
    real = changelog.diff

    def failing(*args: Any, **kwargs: Any) -> pa.Table:
        calls["n"] += 1
        if calls["n"] == 5:
            raise OSError("the store failed")
        return real(*args, **kwargs)

    monkeypatch.setattr(bucket_merge.changelog, "diff", failing)
    with pytest.raises(OSError):
        t.compact(full=True)
    assert sorted(os.listdir(tmp_path / "t" / "bucket-0")) == before
    assert t.scan().to_arrow().sort_by("id").equals(rows)
    assert calls["n"] == 5  # it failed part way, after steps were written
