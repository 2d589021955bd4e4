"""Crash injection: a failing k-th write, and kill -9 of a committing process."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time

import pyarrow as pa
import pytest

import minipaimon_core as mp
from minipaimon_core.fileio import FileIO, LocalFileIO
from minipaimon_core.maintenance import TableFiles
from minipaimon_core.maintenance.orphans import remove_orphan_files
from tests.helpers import SCHEMA, rows, sorted_ids


class InjectedFault(OSError):
    pass


class FailingFileIO:
    """Wraps a FileIO (local by default) and fails its k-th write-like call (1-based);
    k=0 never fails. Reads, listings and deletes pass through."""

    def __init__(self, fail_at: int, inner: FileIO | None = None) -> None:
        self.inner: FileIO = inner or LocalFileIO()
        self.fail_at = fail_at
        self.writes = 0

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def _tick(self) -> None:
        self.writes += 1
        if self.writes == self.fail_at:
            raise InjectedFault(f"injected failure at write {self.writes}")

    def write_bytes(self, path, data):
        self._tick()
        return self.inner.write_bytes(path, data)

    def write_if_absent(self, path, data):
        self._tick()
        return self.inner.write_if_absent(path, data)

    def replace(self, path, data):
        self._tick()
        return self.inner.replace(path, data)

    def open_output(self, path):
        self._tick()
        return self.inner.open_output(path)


def _state(path: str) -> list[int]:
    return sorted_ids(mp.open_table(path).to_arrow())


def _live_files(t: mp.Table) -> set[str]:
    files = TableFiles.of(t)
    out: set[str] = set()
    for snap in t.snapshots():
        out |= files.used_paths(snap)
    return out


def _clean_orphans(t: mp.Table) -> list[str]:
    """Orphan cleanup as if a day had passed: every unreferenced file is old enough."""
    later = int(time.time() * 1000) + 2 * 86_400_000
    return remove_orphan_files(TableFiles.of(t), older_than_ms=later - 1, now_ms=later).files


def test_a_failure_at_any_write_of_a_commit_leaves_before_or_after(storage):
    """On local disk and on S3: a commit failed at its k-th write, for every k, leaves the
    table before or after it; orphan cleanup then removes the debris and nothing live; the
    retry commits exactly once."""
    k = 1
    while True:
        path = storage.path(f"t{k}")
        t = mp.create_table(path, SCHEMA, options={"manifest.merge-min-count": "3"})
        for i in range(4):  # enough history that the commit also merges manifests
            t.write(rows(i * 10, 10))
        before = _state(path)
        w = t.new_write("job")
        w.write(rows(100, 5))
        msgs = w.prepare_commit()
        failing = mp.open_table(path, io=FailingFileIO(k, t.io))
        try:
            failing.new_commit("job").commit(msgs, 7)
            failed = False
        except InjectedFault:
            failed = True
        after_crash = _state(path)
        assert after_crash in (before, before + list(range(100, 105))), k
        mp.open_table(path).new_commit("job").commit(msgs, 7)  # the retry
        assert _state(path) == before + list(range(100, 105)), k
        assert len([s for s in mp.open_table(path).snapshots() if s.commitUser == "job"]) == 1
        reopened = mp.open_table(path)
        live = _live_files(reopened)
        removed = set(_clean_orphans(reopened))
        assert not removed & live, k
        files = storage.list_all(path)
        assert {p for p in files if "/manifest/" in p or p.endswith(".parquet")} == live, k
        assert not [p for p in files if p.rsplit("/", 1)[-1].startswith(".")], k  # no temp files
        for snap in reopened.snapshots():  # every snapshot still whole
            assert reopened.scan(snapshot_id=snap.id).to_arrow().num_rows == snap.totalRecordCount
        if not failed:
            break
        k += 1
    assert k > 4  # the commit did several writes, each of which was failed once


def test_a_failure_while_writing_data_commits_nothing(storage):
    path = storage.path("t")
    base = mp.create_table(path, SCHEMA, options={"target-file-size": "16 kb"})
    t = mp.open_table(path, io=FailingFileIO(3, base.io))
    with pytest.raises(mp.StorageError, match="InjectedFault"):  # typed, naming the file
        t.write(rows(0, 5000))
    assert mp.open_table(path).latest_snapshot() is None
    data_files = [f for f in storage.list_all(path) if f.endswith(".parquet")]
    assert data_files == []  # the failed write cleaned up its files


KILLED_WRITER = """
import sys
import minipaimon_core as mp
from tests.helpers import rows
t = mp.open_table(sys.argv[1])
start = int(sys.argv[2])
print("ready", flush=True)
for i in range(1000):
    t.write(rows(start + i * 10, 10))
"""


def test_kill_9_during_commits_leaves_a_consistent_table(tmp_path):
    path = str(tmp_path / "t")
    mp.create_table(path, SCHEMA, options={"manifest.merge-min-count": "4"})
    rng = random.Random(7)
    for round_ in range(8):
        p = subprocess.Popen([sys.executable, "-c", KILLED_WRITER, path, str(round_ * 100000)],
                             stdout=subprocess.PIPE)
        assert p.stdout is not None
        p.stdout.readline()
        try:
            p.wait(timeout=rng.uniform(0.05, 0.6))
        except subprocess.TimeoutExpired:
            os.kill(p.pid, signal.SIGKILL)
            p.wait()
        t = mp.open_table(path)
        snaps = t.snapshots()
        assert [s.id for s in snaps] == list(range(1, len(snaps) + 1))
        assert [s.totalRecordCount for s in snaps] == [10 * s.id for s in snaps]
        for s in [*rng.sample(snaps, min(3, len(snaps))), *snaps[-2:]]:  # whole and readable
            assert t.scan(snapshot_id=s.id).to_arrow().num_rows == 10 * s.id
        total = 10 * len(snaps)
        assert pa.compute.count_distinct(t.to_arrow().column("id")).as_py() == total
