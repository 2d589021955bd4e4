"""The plain-Python streaming consumer and its exactly-once hand-off to another table."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

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


def test_a_new_consumer_records_its_start_before_the_first_batch(tmp_path: Path) -> None:
    src = mp.create_table(str(tmp_path / "src"), SCHEMA)
    src.write(rows(0, 3))
    src.write(rows(3, 3))
    stream = src.stream(consumer_id="reader")
    assert src.consumers() == {"reader": 2}  # the full scan of snapshot 2 is pending
    assert [b.identifier for b in stream] == [2]
    src.write(rows(6, 3))
    again = list(src.stream(consumer_id="reader"))  # not committed: the same full scan first
    assert [(b.identifier, sorted_ids(b.data)) for b in again] == [
        (2, list(range(6))), (3, [6, 7, 8])]


class _Killed(Exception):
    """Stands for the consumer process dying at one point of its loop."""


def _hand_off(src: mp.Table, dst: mp.Table, options: dict[str, str], kill: tuple[int, str] | None) -> None:
    """The README's consumer loop, dying at ``kill`` = (batch number, point) if given."""
    stream = src.stream(consumer_id="copy", options=options)
    for number, batch in enumerate(stream, start=1):
        if kill == (number, "before-write"):
            raise _Killed
        w = dst.new_write("copy")
        w.write(batch.data)
        msgs = w.prepare_commit()
        if kill == (number, "before-commit"):
            raise _Killed
        dst.new_commit("copy").commit(msgs, commit_identifier=batch.identifier)
        if kill == (number, "after-commit"):
            raise _Killed
        stream.commit(batch)
        if kill == (number, "after-consumer-commit"):
            raise _Killed


@pytest.mark.parametrize("mode", ["latest-full", "latest", "from-snapshot-full"])
@pytest.mark.parametrize("batch", [1, 2])
@pytest.mark.parametrize("point", ["before-write", "before-commit", "after-commit",
                                   "after-consumer-commit"])
def test_hand_off_killed_in_its_first_batches_with_upstream_commits_between(
        tmp_path: Path, mode: str, batch: int, point: str) -> None:
    """Killed anywhere in batch 1 or 2, with upstream commits before the restart: the
    downstream holds each row the stream delivers exactly once."""
    src = mp.create_table(str(tmp_path / "src"), SCHEMA)
    dst = mp.create_table(str(tmp_path / "dst"), SCHEMA)  # append: a replay would duplicate
    src.write(rows(0, 3))
    options = {"scan.mode": mode, **({"scan.snapshot-id": "1"} if mode.startswith("from") else {})}
    src.stream(consumer_id="copy", options=options)  # the consumer starts (at snapshot 1) ...
    src.write(rows(3, 2))  # ... and the upstream commits before its loop reads
    src.write(rows(5, 2))
    with pytest.raises(_Killed):
        _hand_off(src, dst, options, (batch, point))
    src.write(rows(7, 2))  # upstream commits between the kill and the restart
    src.write(rows(9, 2))
    _hand_off(src, dst, options, None)
    first = 3 if mode == "latest" else 0  # latest starts after what was there
    assert sorted_ids(dst.to_arrow()) == list(range(first, 11))


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


def test_a_hand_off_replayed_after_its_snapshot_expired_writes_once(tmp_path: Path) -> None:
    """Issue 32 item 6: the consumer committed batch 2 downstream and died before
    ``stream.commit``; other writers then committed into the destination and its retention
    expired the hand-off's snapshot (and all history but the latest). The restarted
    consumer replays batch 2: the commit finds its own, expired, commit and is a no-op."""
    src = mp.create_table(str(tmp_path / "src"), SCHEMA)
    src.write(rows(0, 5))
    src.write(rows(5, 5))
    dst = mp.create_table(str(tmp_path / "dst"), SCHEMA, options={
        "snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"})

    def hand_off(batch) -> int | None:
        w = dst.new_write("job")
        w.write(batch.data)
        return dst.new_commit("job").commit(w.prepare_commit(), commit_identifier=batch.identifier)

    [batch] = list(src.stream(consumer_id="job"))
    assert hand_off(batch) is not None  # committed downstream; the consumer dies here
    for i in range(3):  # other writers; each write expires all but the latest snapshot
        dst.write(rows(100 + i, 1))
    assert all(s.commitUser != "job" for s in dst.snapshots())  # the hand-off's expired
    stream = src.stream(consumer_id="job")
    [replayed] = list(stream)
    assert replayed.identifier == batch.identifier
    assert hand_off(replayed) is None  # already committed: nothing written
    stream.commit(replayed)
    assert sorted_ids(dst.to_arrow()) == [*range(10), 100, 101, 102]
    src.write(rows(10, 2))  # and the next batch is handed off as usual
    [nxt] = list(stream)
    assert hand_off(nxt) is not None
    assert sorted_ids(dst.to_arrow()) == [*range(12), 100, 101, 102]


def test_records_of_expired_commits_stay_one_per_replayable_user(tmp_path: Path) -> None:
    """What expiration keeps for exactly-once costs one small file per replayable commit
    user (the highest identifier), none for the fresh users of ``Table.write``."""
    t = mp.create_table(str(tmp_path / "t"), SCHEMA, options={
        "snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"})
    for ident in range(1, 6):
        for user in ("a", "b"):
            w = t.new_write(user)
            w.write(rows(ident * 10 + len(user), 1))
            t.new_commit(user).commit(w.prepare_commit(), ident)
        t.write(rows(1000 + ident, 1))
    records = os.listdir(tmp_path / "t" / "snapshot" / ".committed")
    assert sorted(r.split("-", 1)[1] for r in records) == ["5-APPEND", "5-APPEND"]
    for user in ("a", "b"):
        assert t.new_commit(user).is_committed(5) and t.new_commit(user).is_committed(3)
        assert not t.new_commit(user).is_committed(6)
