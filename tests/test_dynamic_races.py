"""Concurrent writers of dynamic-bucket tables in four OS processes: keys every process
writes (new at first, in buckets of two keys, so their assignments race), keys of one
process each, and, cross-partition, shared keys moving between partitions. A commit
refused with CommitConflictError BUCKET_ASSIGNMENT is written again from the new snapshot
(Paimon's single-writer rule, checked); in the end no key is in two places, the HASH index
is right, and every write is there."""

from __future__ import annotations

import json
import subprocess
import sys

import pyarrow as pa
import pytest

import minipaimon_core as mp
from tests.helpers import check_hash_index, key_places

WRITES = 12
WRITER = """
import json, sys
import pyarrow as pa
import minipaimon_core as mp
from minipaimon_core.errors import ConflictReason
path, proc, n, cross = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "cross"
t = mp.open_table(path)
retries = 0
for i in range(n):
    ids = [i % 6, 1000 + 100 * proc + i]  # a key every process writes, one of its own
    dts = [f"d{(proc + i) % 3}" if cross else "d0", "d0"]
    data = pa.table({"id": pa.array(ids, pa.int64()), "v": pa.array([proc, proc], pa.int64()),
                     "dt": dts})
    while True:
        try:
            t.write(data)
            break
        except mp.CommitConflictError as e:
            assert e.reason == ConflictReason.BUCKET_ASSIGNMENT, e
            retries += 1
print(json.dumps(retries))
"""

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.int64()),
                    pa.field("dt", pa.string(), nullable=False)])


def four_writers(path: str, cross: bool) -> int:
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, path, str(p), str(WRITES),
                               "cross" if cross else "hash"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for p in range(4)]
    retries = 0
    for p in procs:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err[-3000:]
        retries += json.loads(out.strip().splitlines()[-1])
    return retries


@pytest.mark.parametrize("cross", [False, True], ids=["hash", "cross-partition"])
def test_four_processes_never_put_a_key_in_two_places(tmp_path, cross):
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, primary_key=["id"] if cross else ["id", "dt"],
                        partition_by=["dt"], options={"dynamic-bucket.target-row-num": "2",
                                                      "commit.max-retries": "500"})
    four_writers(t.path, cross)
    t = mp.open_table(t.path)
    places = key_places(t)  # each key read once
    ids = sorted(k[0] for k in places)
    assert ids == sorted(list(range(6)) + [1000 + 100 * p + i for p in range(4) for i in range(WRITES)])
    got = {r["id"]: r["v"] for r in t.to_arrow().to_pylist()}
    assert all(got[1000 + 100 * p + i] == p for p in range(4) for i in range(WRITES))
    if not cross:
        check_hash_index(t)


def test_a_failure_at_any_write_of_a_dynamic_commit_leaves_before_or_after(tmp_path):
    """A commit of two writers that disagree (reconciled: rows moved, files rewritten) into
    a dynamic-bucket table, failed at its k-th write for every k: the table is as before
    or after it, the HASH index right, orphan cleanup removes only debris, the retry commits
    once."""
    from minipaimon_core.metadata.sequence import start_of
    from tests.test_crash import FailingFileIO, InjectedFault, _clean_orphans, _live_files

    def rows(ids: list[int], tag: str) -> pa.Table:
        return pa.table({"id": pa.array(ids, pa.int64()), "v": pa.array([len(tag)] * len(ids), pa.int64()),
                         "dt": ["d0"] * len(ids)}, schema=SCHEMA)

    k = 1
    while True:
        path = str(tmp_path / f"t{k}")
        t = mp.create_table(path, SCHEMA, primary_key=["id", "dt"], partition_by=["dt"],
                            options={"dynamic-bucket.target-row-num": "2"})
        t.write(rows([1], "a"))
        before = {r["id"] for r in t.to_arrow().to_pylist()}
        start = start_of(t.context().manifests, t.latest_snapshot())
        tasks = [t.new_write("job", sequence=start.for_task(i)) for i in range(2)]
        tasks[0].write(rows([50, 7], "bb"))  # 7 -> bucket 1
        tasks[1].write(rows([7, 60], "ccc"))  # 7 -> bucket 0: moved at commit
        messages = [m for w in tasks for m in w.prepare_commit()]
        failing = mp.open_table(path, io=FailingFileIO(k, t.io))
        try:
            failing.new_commit("job").commit(messages, 7)
            failed = False
        except (InjectedFault, mp.StorageError):  # StorageError: a wrapped fault
            failed = True
        assert {r["id"] for r in mp.open_table(path).to_arrow().to_pylist()} in (before, before | {7, 50, 60}), k
        mp.open_table(path).new_commit("job").commit(messages, 7)  # the retry
        reopened = mp.open_table(path)
        assert {r["id"] for r in reopened.to_arrow().to_pylist()} == before | {7, 50, 60}, k
        check_hash_index(reopened)
        removed = set(_clean_orphans(reopened))
        assert not removed & _live_files(reopened), k
        if not failed:
            break
        k += 1
    assert k > 5
