"""Merge-on-read fast paths give exactly the rows of the sort-based merge.

``newest_wins`` (deduplicate, one key) probes sorted runs by a flag per key value (dense
integer and temporal keys), by binary search (sparse ones) and by hash otherwise; both are compared with :func:`merge` on seeded random
runs (several files per run with disjoint key ranges, deletes, -U/+U, ``ignore_delete``,
unsorted files). Table reads whose run files are read concurrently are compared with a
sequential read, for every engine, multi-column keys and ``sequence.field``.
"""

from __future__ import annotations

import datetime
import multiprocessing
import os
import random

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import minipaimon_core as mp
from minipaimon_core.io import pools
from minipaimon_core.lsm.merge_engines import SEQUENCE, VALUE_KIND, MergeConfig, merge
from minipaimon_core.lsm.newest_wins import newest_wins
from minipaimon_core.read import file_read
from minipaimon_core.read import read as read_module

KEY_TYPES = {
    "int64": (pa.int64(), lambda i: i),
    "int16": (pa.int16(), lambda i: i - 300),
    "int64-sparse": (pa.int64(), lambda i: (i - 300) * 10**15),  # binary search, not a flag per value
    "timestamp": (pa.timestamp("us"), lambda i: datetime.datetime(2026, 1, 1) + datetime.timedelta(seconds=i)),
    "string": (pa.string(), lambda i: f"k{i:05d}"),
}


def random_runs(rng: random.Random, key_type: str, shuffle_one: bool) -> list[list[pa.Table]]:
    """Sorted runs, newest first: each a list of files (one row per key, keys ascending,
    disjoint and ascending ranges across a run's files); sequence numbers grow with age."""
    t, make = KEY_TYPES[key_type]
    n_runs = rng.randint(1, 5)
    seq = 10_000
    runs: list[list[pa.Table]] = []
    for _ in range(n_runs):
        keys = sorted(rng.sample(range(600), rng.randint(0, 120)))
        cuts = sorted(rng.sample(range(1, max(2, len(keys))), min(rng.randint(0, 3), max(0, len(keys) - 1))))
        files = []
        for lo, hi in zip([0, *cuts], [*cuts, len(keys)], strict=True):
            part = keys[lo:hi]
            if not part:
                continue
            kinds = [rng.choice([0, 0, 0, 2, 3, 1]) for _ in part]
            seqs = list(range(seq, seq - len(part), -1))
            seq -= len(part)
            files.append(pa.table({
                "k": pa.array([make(i) for i in part], t),
                "v": pa.array([rng.choice([None, rng.random()]) for _ in part], pa.float64()),
                SEQUENCE: pa.array(seqs, pa.int64()),
                VALUE_KIND: pa.array(kinds, pa.int8())}))
        runs.append(files)
    if shuffle_one and any(len(f) > 2 for run in runs for f in run):  # not sorted: the hash path
        run = next(r for r in runs if any(len(f) > 2 for f in r))
        i = next(i for i, f in enumerate(run) if len(f) > 2)
        idx = list(range(len(run[i])))
        rng.shuffle(idx)
        run[i] = run[i].take(pa.array(idx))
    # sequence numbers: newer runs hold larger ones (the LSM invariant the readers rely on)
    return runs


def by_merge(runs: list[list[pa.Table]], ignore_delete: bool) -> list[dict]:
    tables = [t for run in runs for t in run]
    if not tables:
        return []
    cfg = MergeConfig(("k",), ignore_delete=ignore_delete)
    out = merge(pa.concat_tables(tables), cfg, keep_deletes=False)
    return sorted(out.select(["k", "v"]).to_pylist(), key=lambda r: r["k"])


@pytest.mark.parametrize("key_type", sorted(KEY_TYPES))
@pytest.mark.parametrize("ignore_delete", [False, True])
@pytest.mark.parametrize("shuffle_one", [False, True])
@pytest.mark.parametrize("seed", range(15))
def test_newest_wins_equals_the_sort_merge(key_type, ignore_delete, shuffle_one, seed):
    rng = random.Random(seed * 7919 + len(key_type))
    runs = random_runs(rng, key_type, shuffle_one)
    runs = [run for run in runs if run]
    if not runs:
        return
    got = newest_wins(runs, "k", ignore_delete)
    assert sorted(got.select(["k", "v"]).to_pylist(), key=lambda r: r["k"]) == by_merge(runs, ignore_delete)


def test_dense_keys_of_a_narrow_type_spanning_its_whole_range_are_probed_exactly():
    """int16 keys from -32768 to 32766: offsets from the first key overflow int16 (wrapped,
    key -1 and key 0 would share a flag)."""
    old = pa.table({"k": pa.array(range(-32768, 32767, 2), pa.int16()), "v": pa.array(range(32768), pa.float64()),
                    SEQUENCE: pa.array(range(32768), pa.int64()), VALUE_KIND: pa.array([0] * 32768, pa.int8())})
    new_keys = [-32768, -2, -1, 5, 32766]
    new = pa.table({"k": pa.array(new_keys, pa.int16()), "v": pa.array([-1.0] * 5, pa.float64()),
                    SEQUENCE: pa.array(range(10**6, 10**6 + 5), pa.int64()), VALUE_KIND: pa.array([0, 0, 0, 0, 1], pa.int8())})
    got = newest_wins([[new], [old]], "k", ignore_delete=False)
    assert sorted(got.select(["k", "v"]).to_pylist(), key=lambda r: r["k"]) == by_merge([[new], [old]], False)
    assert got.num_rows == 32768 + 1  # 3 old keys shadowed (32766 by a -U), 2 new; 0 kept


def test_newest_wins_probes_only_overlapping_files_and_keeps_untouched_files_whole():
    old = [pa.table({"k": pa.array([1, 2, 3], pa.int64()), VALUE_KIND: pa.array([0, 0, 0], pa.int8())}),
           pa.table({"k": pa.array([10, 11], pa.int64()), VALUE_KIND: pa.array([0, 0], pa.int8())})]
    new = [pa.table({"k": pa.array([2, 5], pa.int64()), VALUE_KIND: pa.array([3, 0], pa.int8())})]
    got = newest_wins([new, old], "k", ignore_delete=False)
    assert got.column("k").to_pylist() == [5, 1, 3, 10, 11]  # 2 deleted by the newer -D
    assert newest_wins([new, old], "k", ignore_delete=True).column("k").to_pylist() == [5, 1, 2, 3, 10, 11]


# ---------------------------------------------------------------- tables: concurrent reads

ENGINES = [
    ("deduplicate", ["id"], {}),
    ("deduplicate", ["id", "g"], {}),
    ("deduplicate-seq", ["id"], {"sequence.field": "ts"}),
    ("partial-update", ["id"], {"merge-engine": "partial-update"}),
    ("aggregation", ["id", "g"], {"merge-engine": "aggregation", "fields.v.aggregate-function": "sum"}),
    ("first-row", ["id"], {"merge-engine": "first-row"}),
    ("dedup-string-key", ["s"], {}),
]


def build_table(path: str, keys: list[str], opts: dict, seed: int) -> mp.Table:
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("g", pa.int32(), nullable=False),
                        pa.field("s", pa.string(), nullable=False), ("v", pa.int64()), ("ts", pa.int64())])
    t = mp.create_table(path, schema, primary_key=keys,
                        options={"bucket": "2", "write-only": "true", **opts})
    rng = random.Random(seed)
    for w in range(5):
        ids = rng.sample(range(400), 150)
        t.write(pa.table({"id": ids, "g": [i % 3 for i in ids], "s": [f"s{i}" for i in ids],
                          "v": [rng.choice([None, rng.randint(0, 9)]) for _ in ids],
                          "ts": [rng.randint(0, 5) for _ in ids]}, schema=schema))
        if w == 2:
            t.compact(full=True)  # a level run under the newer level-0 files
    return t


@pytest.mark.parametrize("name,keys,opts", ENGINES, ids=[e[0] for e in ENGINES])
def test_concurrent_run_reads_equal_sequential_reads(tmp_path, monkeypatch, name, keys, opts):
    t = build_table(str(tmp_path / "t"), keys, opts, seed=len(name))
    splits = t.scan().plan()
    assert any(len(s.files) > 1 and not s.raw_convertible for s in splits)
    concurrent = t.to_arrow().sort_by([("id", "ascending"), ("g", "ascending")])

    def sequential(self, split, files, names_of, dictionary=()):
        return [self.read_file(split, f, names_of(f), dictionary) for f in files]

    monkeypatch.setattr(read_module.SplitReader, "read_each", sequential)
    assert t.to_arrow().sort_by([("id", "ascending"), ("g", "ascending")]).equals(concurrent)
    t.compact(full=True)  # one run: the merged result must not change
    assert t.to_arrow().sort_by([("id", "ascending"), ("g", "ascending")]).equals(concurrent)


def test_file_pool_is_made_anew_after_fork(monkeypatch):
    pool = read_module.file_pool()
    assert read_module.file_pool() is pool
    monkeypatch.setattr(pools.os, "getpid", lambda: -1)  # as in a forked child
    assert read_module.file_pool() is not pool


def _write_and_read_in_child(path: str) -> None:
    t = mp.open_table(path)
    t.write(pa.table({"id": pa.array([7], pa.int64()), "g": pa.array([1], pa.int64())}))
    os._exit(0 if 7 in t.to_arrow().column("id").to_pylist() else 1)


def test_a_forked_child_writes_and_reads_with_the_parents_pools_used(tmp_path):
    """The parent's read and stats pools have threads; the child's copies have none, so a
    child that used them would wait forever."""
    path = str(tmp_path / "t")
    t = mp.create_table(path, pa.schema([("id", pa.int64()), ("g", pa.int64())]))
    t.write(pa.table({"id": pa.array([1], pa.int64()), "g": pa.array([1], pa.int64())}))
    assert t.to_arrow().num_rows == 1  # the parent's pools now have threads
    child = multiprocessing.get_context("fork").Process(target=_write_and_read_in_child, args=(path,))
    child.start()
    child.join(timeout=120)
    if child.is_alive():
        child.kill()
    assert child.exitcode == 0
    assert sorted(mp.open_table(path).to_arrow().column("id").to_pylist()) == [1, 7]


# ---------------------------------------------------------------- merge: runs not re-sorted

def random_merge_input(rng: random.Random, n_keys: int, key_type: pa.DataType, runs_order: bool) -> pa.Table:
    """Rows of up to 4 runs, each sorted by key; sequence numbers grow with the run when
    ``runs_order`` (concatenated oldest first), else are shuffled (ties included)."""
    parts = []
    seq = 0
    for _ in range(rng.randint(1, 4)):
        ids = sorted(rng.sample(range(60), rng.randint(1, 40)))
        seqs = list(range(seq, seq + len(ids)))
        seq += len(ids)
        parts.append((ids, seqs))
    ids = [i for p, _ in parts for i in p]
    seqs = [s for _, p in parts for s in p]
    if not runs_order:
        rng.shuffle(seqs)
        seqs = [s if rng.random() < 0.8 else 0 for s in seqs]  # ties
    cols = {"a": pa.array(ids, pa.int32()).view(key_type) if key_type == pa.date32()
            else pa.array(ids, pa.int64()).cast(key_type)}
    if n_keys == 2:
        cols["b"] = pa.array([i % 3 for i in ids], pa.int32())
    return pa.table({**cols, "v": pa.array([rng.choice([None, rng.random()]) for _ in ids]),
                     SEQUENCE: pa.array(seqs, pa.int64()),
                     VALUE_KIND: pa.array([rng.choice([0, 0, 2, 3]) for _ in ids], pa.int8())})


@pytest.mark.parametrize("key_type", [pa.int64(), pa.int8(), pa.date32()], ids=str)
@pytest.mark.parametrize("n_keys", [1, 2])
@pytest.mark.parametrize("runs_order", [True, False])
@pytest.mark.parametrize("seed", range(10))
def test_groups_order_is_the_full_sort_order(key_type, n_keys, runs_order, seed):
    from minipaimon_core.lsm import merge_groups

    t = random_merge_input(random.Random(seed), n_keys, key_type, runs_order)
    keys = ("a", "b")[:n_keys]
    full = merge_groups.sort_order(t, [*keys, SEQUENCE])
    found = merge_groups._runs_order(t, MergeConfig(keys))
    assert (found is not None) or not runs_order  # runs concatenated oldest first: no re-sort
    assert (merge_groups.Groups(t, MergeConfig(keys)).order == full).all()


@pytest.mark.parametrize("engine", ["deduplicate", "first-row", "partial-update", "aggregation"])
@pytest.mark.parametrize("runs_order", [True, False])
@pytest.mark.parametrize("seed", range(8))
def test_merge_without_the_presorted_path_gives_the_same_rows(monkeypatch, engine, runs_order, seed):
    from minipaimon_core.lsm import merge_groups

    t = random_merge_input(random.Random(seed), 2, pa.int64(), runs_order)
    if engine in ("first-row", "partial-update"):
        t = t.filter(pc.not_equal(t.column(VALUE_KIND), 3))
    cfg = MergeConfig(("a", "b"), engine=engine, aggregate_functions={"v": "sum"} if engine == "aggregation" else {})
    fast = merge(t, cfg, keep_deletes=True)
    monkeypatch.setattr(merge_groups, "_runs_order", lambda table, config: None)
    assert merge(t, cfg, keep_deletes=True).equals(fast)


@pytest.mark.parametrize("engine", ["deduplicate", "first-row"])
@pytest.mark.parametrize("keep_deletes", [False, True])
@pytest.mark.parametrize("seed", range(4))
def test_a_merge_of_distinct_keys_in_order_copies_no_column_and_equals_the_full_sort(
        monkeypatch, engine, keep_deletes, seed):
    """A write of distinct keys in key order (a bulk load): every row is its key's, so the
    merge passes the columns through (kinds and sequence numbers as the full merge sets
    them) instead of taking a copy."""
    from minipaimon_core.lsm import merge_groups

    rng = random.Random(seed)
    n = 2_000
    keys = sorted(rng.sample(range(10 * n), n))
    kinds = [rng.choice([0, 0, 2, 3, 1]) for _ in keys] if engine == "deduplicate" else [0] * n
    t = pa.table({"a": pa.array(keys, pa.int64()), "v": pa.array([rng.random() for _ in keys]),
                  SEQUENCE: pa.array(range(n), pa.int64()), VALUE_KIND: pa.array(kinds, pa.int8())})
    cfg = MergeConfig(("a",), engine=engine)
    fast = merge(t, cfg, keep_deletes=keep_deletes)
    if keep_deletes:
        assert fast.column("v").chunks[0].buffers()[1].address == t.column("v").chunks[0].buffers()[1].address
    monkeypatch.setattr(merge_groups, "_runs_order", lambda table, config: None)
    assert merge(t, cfg, keep_deletes=keep_deletes).equals(fast)


def test_filter_columns_in_the_pool_equals_table_filter():
    n = 70_000  # above the size filtered column by column
    t = pa.table({"a": pa.array(range(n), pa.int64()), "s": pa.array([str(i) if i % 7 else None for i in range(n)]),
                  "f": pa.array([i * 0.5 for i in range(n)])})
    t = pa.concat_tables([t.slice(0, 30_000), t.slice(30_000)])  # chunked, as a file read gives
    mask = pa.array([i % 5 != 0 for i in range(n)])
    assert read_module.filter_columns(t, mask).equals(t.filter(mask))
    assert read_module.filter_columns(t.slice(0, 10), mask.slice(0, 10)).equals(t.slice(0, 10).filter(mask.slice(0, 10)))


# ---------------------------------------------------------------- files newer runs shadow

def _columns_read(monkeypatch) -> list[tuple[str, list[str]]]:
    """(file name, columns) of every data-file read of the split reader from now on."""
    seen: list[tuple[str, list[str]]] = []
    real = file_read.read_data_file

    def spy(io, layout, partition_path, bucket, file, columns=None, *args, **kwargs):
        seen.append((file.fileName, list(columns or [])))
        return real(io, layout, partition_path, bucket, file, columns, *args, **kwargs)

    monkeypatch.setattr(file_read, "read_data_file", spy)
    return seen


def test_a_file_whose_keys_newer_commits_rewrote_is_read_by_key_and_kind_only(tmp_path, monkeypatch):
    """Three commits each rewriting every key (a table fed whole snapshots): the older two
    files' values are never decoded, and the rows are the newest commit's."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("s", pa.string()), ("v", pa.float64())])
    t = mp.create_table(str(tmp_path / "t"), schema, primary_key=["id"],
                        options={"bucket": "1", "write-only": "true"})
    for r in range(3):
        t.write(pa.table({"id": list(range(500)), "s": [f"c{(i + r) % 4}" for i in range(500)],
                          "v": [i + r * 0.5 for i in range(500)]}, schema=schema))
    newest = max(t.scan().plan()[0].files, key=lambda f: f.maxSequenceNumber).fileName
    seen = _columns_read(monkeypatch)
    got = mp.open_table(t.path).to_arrow().sort_by("id")
    assert got.to_pylist() == [{"id": i, "s": f"c{(i + 2) % 4}", "v": i + 1.0} for i in range(500)]
    assert got.schema.field("s").type == pa.string()
    older = [cols for name, cols in seen if name != newest]
    assert len(older) == 2 and all(sorted(cols) == ["_VALUE_KIND", "id"] for cols in older)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("ignore_delete", [False, True])
def test_merged_read_of_mostly_shadowed_files_equals_the_model(tmp_path, seed, ignore_delete):
    """Commits rewriting most keys (read in two phases), few (read whole at once), deleting
    some, with strings stored dictionary-encoded or plain: the read equals a dict of the
    newest row of each key, and the read after a full compaction."""
    rng = random.Random(seed)
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("s", pa.string()), ("v", pa.int64())])
    t = mp.create_table(str(tmp_path / "t"), schema, primary_key=["id"],
                        options={"bucket": str(rng.choice([1, 2])), "write-only": "true",
                                 "ignore-delete": str(ignore_delete).lower()})
    model: dict[int, tuple[str, int]] = {}
    for c in range(rng.randint(2, 4)):  # with the deletes, fewer runs than the stop trigger
        share = 1.0 if c == 0 else rng.choice([1.0, 0.9, 0.6, 0.1])
        ids = sorted(rng.sample(range(300), int(300 * share)))
        low = rng.random() < 0.6  # dictionary-encoded strings, else unique ones (plain)
        rows = {i: (f"low{i % 3}" if low else f"unique-{i}-{c}", c * 1000 + i) for i in ids}
        t.write(pa.table({"id": ids, "s": [rows[i][0] for i in ids], "v": [rows[i][1] for i in ids]},
                         schema=schema))
        model.update(rows)
        if c and rng.random() < 0.5:
            gone = sorted(rng.sample(ids, len(ids) // 5))
            t.write(pa.table({"id": pa.array(gone, pa.int64()), "s": [None] * len(gone),
                              "v": pa.array([None] * len(gone), pa.int64()), "_row_kind": ["-D"] * len(gone)}))
            if not ignore_delete:
                for i in gone:
                    model.pop(i, None)
    expected = [{"id": i, "s": s, "v": v} for i, (s, v) in sorted(model.items())]
    assert any(not s.raw_convertible for s in t.scan().plan())
    assert mp.open_table(t.path).to_arrow().sort_by("id").to_pylist() == expected
    t.compact(full=True)
    assert mp.open_table(t.path).to_arrow().sort_by("id").to_pylist() == expected
