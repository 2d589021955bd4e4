"""Threads sharing the core: writes, reads and compactions on one table and on several
(issue 15, item 1b: a shared zstd compressor corrupted manifests under threads)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa

import minipaimon_core as mp
from tests.helpers import SCHEMA, rows, sorted_ids

KV = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.int64())])
WRITES = 40


def kv(ids: list[int], v: int) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "v": pa.array([v] * len(ids), pa.int64())})


def _run_all(tasks) -> None:
    with ThreadPoolExecutor(max_workers=len(tasks)) as pool:
        for f in [pool.submit(t) for t in tasks]:
            f.result()  # re-raises a thread's error


def test_threads_each_writing_their_own_table(tmp_path):
    def job(n: int) -> None:
        if n % 2:
            t = mp.create_table(str(tmp_path / f"t{n}"), SCHEMA)
            for i in range(WRITES):
                t.write(rows(i * 3, 3))
                if i % 10 == 9:
                    t.compact(full=True)
        else:
            t = mp.create_table(str(tmp_path / f"t{n}"), KV, primary_key=["id"], options={
                "bucket": "2", "changelog-producer": "lookup", "snapshot.num-retained.max": "5",
                "snapshot.num-retained.min": "2"})
            for i in range(WRITES):
                t.write(kv([i % 9, 100 + i], i))
                assert t.last_after_commit is not None and t.last_after_commit.ok
                t.scan().to_arrow()

    _run_all([lambda n=n: job(n) for n in range(4)])
    for n in range(4):  # every table is readable from a fresh handle, with every row
        t = mp.open_table(str(tmp_path / f"t{n}"))
        got = t.to_arrow()
        if n % 2:
            assert sorted_ids(got) == list(range(WRITES * 3))
        else:
            assert sorted_ids(got) == sorted(set(range(9)) | set(range(100, 100 + WRITES)))


def test_threads_writing_reading_and_compacting_one_table(tmp_path):
    path = str(tmp_path / "t")
    shared = mp.create_table(path, KV, primary_key=["id"], options={
        "bucket": "2", "changelog-producer": "full-compaction", "commit.max-retries": "200"})

    def writer(n: int) -> None:
        for i in range(WRITES // 2):
            shared.write(kv([n * 1000 + i], i))

    def reader() -> None:
        for _ in range(WRITES):
            ids = sorted_ids(shared.scan().to_arrow())
            assert len(ids) == len(set(ids))

    def compactor() -> None:
        for _ in range(5):
            shared.compact(full=True)

    _run_all([lambda n=n: writer(n) for n in range(3)] + [reader, compactor])
    expected = sorted(n * 1000 + i for n in range(3) for i in range(WRITES // 2))
    assert sorted_ids(mp.open_table(path).to_arrow()) == expected
