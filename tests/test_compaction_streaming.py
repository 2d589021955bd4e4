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
from minipaimon_core.read import merge_read
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

        def rows(f: DataFileMeta, names: list[str] | None = None, marks: bool = True) -> pa.Table:
            names = names or [*ctx.schema.field_names, SEQUENCE, VALUE_KIND]
            t = read_file_as(ctx.io, ctx.layout, ctx.schemas, ctx.schema, runs.path, runs.bucket, f, names)
            marked = runs._deleted.get(f.fileName)
            if marks and marked is not None and len(marked):
                keep = np.ones(t.num_rows, bool)
                keep[marked] = False
                t = t.filter(pa.array(keep))
            return t

        def read_all(fs: list[DataFileMeta], like: pa.Table, marks: bool = True) -> pa.Table:
            return pa.concat_tables([like.slice(0, 0), *(rows(f, marks=marks) for f in fs)])

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
            previous = [f for f in files if f.level == max_level]  # as written: marks set since are changes
            want = changelog.diff(merge(read_all(previous, merged, marks=False), config, keep_deletes=False),
                                  merged, keys)
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
    "dv-dedup-full": model.Config("deduplicate", {
        "bucket": "1", "deletion-vectors.enabled": "true", "changelog-producer": "full-compaction",
        "target-file-size": "400 b"}, ("-D", "-U"), replay_changelog=True),
}


@pytest.mark.parametrize("name", list(CONFIGS))
def test_every_compaction_streams_the_merge_at_once(tmp_path: Any, oracle: Oracle, name: str) -> None:
    config = CONFIGS[name]
    model.run(str(tmp_path / "t"), config, 7 + len(name), OPS)
    assert oracle.checked >= 5 and oracle.multi_step >= 3, (oracle.checked, oracle.multi_step)
    if config.options.get("changelog-producer") in ("lookup", "full-compaction"):
        assert oracle.changelogs >= 1


# The engines' options added since compaction first streamed (issues 38 and 39), in random
# histories checked compaction by compaction against the merge at once (no dict model: the
# oracle is the engine's merge of all inputs, tests/test_scenarios_merge.py checks that)
SCENARIOS: dict[str, tuple[pa.Schema, dict[str, str], tuple[str, ...]]] = {
    "aggregation-remove-on-delete-listagg-distinct": (
        pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.int32()), ("s", pa.string())]),
        {"merge-engine": "aggregation", "aggregation.remove-record-on-delete": "true",
         "fields.v.aggregate-function": "sum", "fields.s.aggregate-function": "listagg",
         "fields.s.distinct": "true", "changelog-producer": "full-compaction"},
        ("+I", "+U", "-D")),
    "partial-update-groups-first-last-remove": (
        pa.schema([pa.field("id", pa.int64(), nullable=False), ("x", pa.int64()), ("g1", pa.int64()),
                   ("b", pa.int64()), ("g2", pa.int64()), ("c", pa.int64()), ("d", pa.int64())]),
        {"merge-engine": "partial-update", "fields.g1.sequence-group": "b", "fields.g2.sequence-group": "c,d",
         "partial-update.remove-record-on-sequence-group": "g2", "fields.c.aggregate-function": "first_value",
         "fields.d.aggregate-function": "last_value", "fields.c.ignore-retract": "true",
         "changelog-producer": "lookup"},
        ("+I", "+U", "-U", "-D")),
    "first-row-updates": (
        pa.schema([pa.field("id", pa.int64(), nullable=False), ("x", pa.int64())]),
        {"merge-engine": "first-row", "ignore-delete": "true", "changelog-producer": "lookup"},
        ("+I", "+U", "-D")),
}


def _value(rng: random.Random, field: pa.Field) -> Any:
    if rng.random() < 0.25:
        return None
    if pa.types.is_string(field.type):
        return rng.choice(["", "q", "q,r", "r,st", "st,q"])
    return rng.randrange(-5, 6)


def _history(path: str, name: str, seed: int, ops: int) -> mp.Table:
    """``ops`` random writes (1-30 rows each, every row kind of the scenario) and explicit
    compactions of a table of scenario ``name``; automatic compactions follow the writes."""
    schema, options, kinds = SCENARIOS[name]
    rng = random.Random(seed)
    t = mp.create_table(path, schema, primary_key=["id"],
                        options={"bucket": "2", "target-file-size": "600 b", **options})
    for _ in range(ops):
        if rng.random() < 0.15:
            t.compact(full=rng.random() < 0.5)
            continue
        n = rng.randint(1, 30)
        data = {f.name: [rng.randrange(25) if f.name == "id" else _value(rng, f) for _ in range(n)]
                for f in schema}
        batch = pa.table(data, schema=schema).append_column(
            "_row_kind", pa.array([rng.choice(kinds) if rng.random() < 0.3 else "+I" for _ in range(n)]))
        t.write(batch)
    return t


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_scenario_options_compact_streamed_as_merged_at_once(tmp_path: Any, oracle: Oracle,
                                                             monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    t = _history(str(tmp_path / "t"), name, 3 + len(name), 50)
    assert oracle.checked >= 5 and oracle.multi_step >= 3 and oracle.changelogs >= 1, \
        (oracle.checked, oracle.multi_step, oracle.changelogs)
    # and every split read streamed, 3 rows a table, equals the split merged whole
    for split in t.scan().plan():
        monkeypatch.setattr(merge_read, "STREAM_SPLIT_BYTES", -1)
        monkeypatch.setattr(merge_read, "BATCH_ROWS", 3)
        streamed = pa.Table.from_batches(list(t.read_split(split)), schema=t.schema()).to_pylist()
        monkeypatch.setattr(merge_read, "STREAM_SPLIT_BYTES", 1 << 60)
        whole = pa.Table.from_batches(list(t.read_split(split)), schema=t.schema()).to_pylist()
        assert sorted(map(repr, streamed)) == sorted(map(repr, whole))


def test_an_overflow_part_way_through_a_streamed_compaction_leaves_no_file(
        tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """An INT sum that overflows in a late step of a compaction (issue 38 item 8) raises
    InvalidArgumentError after earlier steps were written: those files are deleted and the
    table is as before; a streamed merged read raises the same error."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.int32())])
    t = mp.create_table(str(tmp_path / "t"), schema, primary_key=["id"], options={
        "bucket": "1", "merge-engine": "aggregation", "fields.v.aggregate-function": "sum",
        "write-only": "true", "target-file-size": "1 kb"})
    ids = list(range(2_000))
    t.write(pa.table({"id": ids, "v": [1] * 1_999 + [2**31 - 1]}, schema=schema))
    t.write(pa.table({"id": ids, "v": [1] * 2_000}, schema=schema))  # the last key overflows
    before = sorted(os.listdir(tmp_path / "t" / "bucket-0"))
    monkeypatch.setattr(bucket_merge, "BATCH_ROWS", 100)
    monkeypatch.setattr(rolling, "ROW_GROUP_BYTES", 256)
    written: list[str] = []
    real = rolling.RollingWriter.write

    def write(self: rolling.RollingWriter, table: pa.Table) -> None:
        real(self, table)
        written.extend(n for n in os.listdir(tmp_path / "t" / "bucket-0") if n not in before)

    monkeypatch.setattr(rolling.RollingWriter, "write", write)
    with pytest.raises(mp.InvalidArgumentError, match="INT sum overflows at 2147483647 \\+ 1"):
        t.compact(full=True)
    assert written, "no file was written before the overflow"
    assert sorted(os.listdir(tmp_path / "t" / "bucket-0")) == before and len(t.snapshots()) == 2
    monkeypatch.setattr(merge_read, "STREAM_SPLIT_BYTES", -1)
    monkeypatch.setattr(merge_read, "BATCH_ROWS", 100)
    batches = t.scan().to_batches()
    with pytest.raises(mp.InvalidArgumentError, match="INT sum overflows"):
        list(batches)


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


def test_every_rolled_file_buffers_its_tables_into_row_groups(tmp_path: Any) -> None:
    """A rolling writer's files, the second and later ones too, hold row groups of about
    ``row_group_bytes``: after a file is closed the next one buffers tables again (not a
    row group of each table)."""
    import pyarrow.parquet as pq

    t = mp.create_table(str(tmp_path / "t"), pa.schema([("id", pa.int64()), ("v", pa.int64())]))
    writer = rolling.RollingWriter(t.io, t.layout, "", 0, schema=t.table_schema, target=64_000,
                                   compression="zstd", row_group_bytes=16_000)
    for start in range(0, 20_000, 100):  # 100-row tables of 1,600 bytes
        ids = pa.array(range(start, start + 100), pa.int64())
        writer.write(pa.table({"id": ids, "v": ids}))
    files = writer.finish()
    assert len(files) >= 4
    for f in files[:-1]:
        meta = pq.ParquetFile(t.layout.data_file_path("", 0, f.fileName)).metadata
        assert [meta.row_group(i).num_rows for i in range(meta.num_row_groups)] == [1_000] * 4, f.fileName


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
