"""The plain-Python streaming consumer and its exactly-once hand-off to another table."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow as pa
import pytest

import minipaimon_core as mp
from tests.helpers import SCHEMA, rows, sorted_ids


def test_batches_are_one_snapshot_each_and_resume_after_commit(tmp_path: Path) -> None:
    src = mp.create_table(str(tmp_path / "src"), SCHEMA)
    src.write(rows(0, 10))
    src.write(rows(10, 5))
    stream = src.stream(consumer_id="job")
    first = list(stream)
    assert [(b.identifier, b.data.num_rows) for b in first] == [(2, 15)]  # the full scan
    stream.commit(first[0])
    src.write(rows(15, 3))
    src.write(rows(18, 2))
    assert [(b.identifier, sorted_ids(b.data)) for b in stream] == [
        (3, list(range(15, 18))), (4, [18, 19])]
    # not committed: a new stream of the same consumer starts after batch 2 again
    resumed = src.stream(consumer_id="job")
    again = list(resumed)
    assert [b.identifier for b in again] == [3, 4]
    resumed.commit(again[-1])
    assert list(src.stream(consumer_id="job")) == []
    assert src.consumers() == {"job": 5}


def test_a_stream_that_never_commits_registers_no_consumer(tmp_path: Path) -> None:
    src = mp.create_table(str(tmp_path / "src"), SCHEMA)
    src.write(rows(0, 3))
    assert len(list(src.stream(consumer_id="reader"))) == 1
    assert src.consumers() == {}


def test_changelog_batches_carry_row_kinds(tmp_path: Path) -> None:
    src = mp.create_table(str(tmp_path / "src"), SCHEMA, primary_key=["id"],
                          options={"changelog-producer": "input"})
    src.write(rows(0, 3))
    stream = src.stream(options={"scan.mode": "latest", "read.changelog": "true"})
    src.write(pa.table({"id": [1], "k": [None], "v": [None], "dt": ["d1"], "_row_kind": ["-D"]}))
    [batch] = list(stream)
    assert batch.data.column("_row_kind").to_pylist() == ["-D"]


def test_commit_of_a_batch_not_read_is_refused(tmp_path: Path) -> None:
    src = mp.create_table(str(tmp_path / "src"), SCHEMA)
    src.write(rows(0, 3))
    [batch] = list(src.stream())
    fresh = mp.create_table(str(tmp_path / "other"), SCHEMA).stream(consumer_id="c")
    with pytest.raises(mp.InvalidArgumentError):
        fresh.commit(batch)


CONSUMER = textwrap.dedent('''
    import os, signal, sys
    import minipaimon_core as mp
    src, dst, kill_at = mp.open_table(sys.argv[1]), mp.open_table(sys.argv[2]), int(sys.argv[3])
    stream = src.stream(consumer_id="copy")
    for batch in stream:
        w = dst.new_write("copy")
        w.write(batch.data)
        dst.new_commit("copy").commit(w.prepare_commit(), commit_identifier=batch.identifier)
        if batch.identifier == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)   # after the downstream commit, before ours
        stream.commit(batch)
''')


def test_kill_between_downstream_commit_and_consumer_commit_writes_once(tmp_path: Path) -> None:
    src = mp.create_table(str(tmp_path / "src"), SCHEMA)
    dst = mp.create_table(str(tmp_path / "dst"), SCHEMA)  # an append table: a replay would duplicate
    script = tmp_path / "consumer.py"
    script.write_text(CONSUMER)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    written = 0
    # round r writes snapshots 2r+1, 2r+2; the first batch is the full scan of snapshot 2
    for round_, kill_at in enumerate([2, 3, 6, -1, 10]):
        for _ in range(2):
            src.write(rows(written, 4))
            written += 4
        proc = subprocess.run([sys.executable, str(script), src.path, dst.path, str(kill_at)], env=env,
                              capture_output=True, text=True, timeout=120)
        killed = kill_at > 0
        assert proc.returncode == (-signal.SIGKILL if killed else 0), proc.stderr
        if killed:  # restart: the re-read batch is a no-op downstream
            proc = subprocess.run([sys.executable, str(script), src.path, dst.path, "-1"], env=env,
                                  capture_output=True, text=True, timeout=120)
            assert proc.returncode == 0, proc.stderr
        assert sorted_ids(mp.open_table(dst.path).to_arrow()) == list(range(written)), round_
