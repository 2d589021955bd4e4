"""A consumer's pin against an expiration in flight (issue 32 item 18, the residual).

A stream with a consumer id writes its start into its consumer file, then checks that the
snapshot survived. An expiration that read the consumers before the pin landed had decided
to delete that snapshot and could still do so just after the check: the stream then failed
(SnapshotExpiredError) on every restart. Expiration now marks the ids it will delete,
reads the consumers again and spares what they pin; the pin's check fails on a marked id
(docs/format.md, "Expiration order"). Directed interleavings (tests/interleavings.Gates) and
seeded ones (Scheduler)."""

from __future__ import annotations

import threading

import pytest

import minipaimon_core as mp
from minipaimon_core.io.fileio import LocalFileIO
from minipaimon_core.metadata.consumer import ConsumerManager
from tests.helpers import SCHEMA, rows, sorted_ids
from tests.interleavings import Gates, Scheduler, expiration_standing_at

KEEP_ALL = {"snapshot.num-retained.max": "1000"}  # no automatic expiration: the tests expire


def _five(path: str) -> mp.Table:
    """Snapshots 1-5, snapshot i appending the row of id i - 1."""
    t = mp.create_table(path, SCHEMA, options=KEEP_ALL)
    for i in range(5):
        t.write(rows(i, 1))
    return t


def _marks(method: str, path: str) -> bool:
    return method == "write_if_absent" and path.endswith(".expired")


def _all(stream) -> list[int]:
    return sorted(i for batch in stream for i in batch.data.column("id").to_pylist())


def test_a_pin_landing_after_the_expiration_decided_keeps_its_snapshot(tmp_path):
    """The expiration read the consumers (none) and stands before its marks; the
    stream pins snapshot 2 and checks it. Then the expiration spares 2 and what follows it:
    the stream reads every row from 2 on (before: snapshots 2-4 went, and the stream failed)."""
    path = str(tmp_path / "t")
    _five(path)
    thread, io, out = expiration_standing_at(path, _marks, every=True)
    stream = mp.open_table(path).stream("c", {"scan.mode": "from-snapshot", "scan.snapshot-id": "2"})
    io.release()
    thread.join()
    assert out[0].snapshots == [1]
    assert _all(stream) == [1, 2, 3, 4]
    assert mp.open_table(path).snapshot_manager.earliest_id() == 2


def test_a_latest_full_pin_landing_after_the_expiration_decided_keeps_its_snapshot(tmp_path):
    """latest-full: the stream chose snapshot 5 and stands before pinning it; a sixth commit
    lands and an expiration down to it decides to take 5, standing before its first mark;
    the pin lands and is checked. The full scan of 5 and the change of 6 are read whole."""
    path = str(tmp_path / "t")
    _five(path)
    io = Gates(LocalFileIO(), lambda m, p: m == "replace" and "/consumer/" in p)
    made: list = []
    opener = threading.Thread(target=lambda: made.append(mp.open_table(path, io=io).stream("c")))
    opener.start()
    io.wait()  # the stream's start is snapshot 5, not yet pinned
    mp.open_table(path).write(rows(5, 1))
    thread, expirer_io, out = expiration_standing_at(path, _marks, every=True)
    io.release()
    opener.join()
    expirer_io.release()
    thread.join()
    assert out[0].snapshots == [1, 2, 3, 4]
    assert _all(made[0]) == [0, 1, 2, 3, 4, 5]


def test_a_pin_that_finds_its_snapshot_marked_is_refused_and_leaves_no_consumer(tmp_path):
    """The expiration marked 1-4 (and read the consumers again: none) and stands before it
    deletes snapshot-2: a stream from snapshot 2 is refused (SnapshotExpiredError naming the
    options) rather than started on a snapshot about to go, and leaves no consumer file (a
    consumer left at an expired snapshot holds back all expiration and fails every restart)."""
    path = str(tmp_path / "t")
    _five(path)
    thread, io, out = expiration_standing_at(path, lambda m, p: m == "delete" and p.endswith("/snapshot/snapshot-2"))
    with pytest.raises(mp.SnapshotExpiredError):
        mp.open_table(path).stream("c", {"scan.mode": "from-snapshot", "scan.snapshot-id": "2"})
    io.release()
    thread.join()
    assert out[0].snapshots == [1, 2, 3, 4]
    t = mp.open_table(path)
    assert ConsumerManager(t.io, t.layout).read("c") is None
    assert sorted_ids(t.to_arrow()) == [0, 1, 2, 3, 4]


def test_a_restarted_stream_whose_pin_was_never_checked_starts_again(tmp_path):
    """A stream killed between its pin and the check left an unchecked pin: a restart does
    not trust it (an expiration in flight may still take its snapshot) but checks it again,
    and when it fails starts as a new stream would."""
    path = str(tmp_path / "t")
    t = _five(path)
    consumers = ConsumerManager(t.io, t.layout)
    consumers.write("c", 3, full_scan_pending=True, unchecked=True)  # killed before the check
    t.io.write_if_absent(t.layout.expired_marker_path(3), b"marked\n")  # an expiration marked 3
    stream = mp.open_table(path).stream("c")
    assert stream.position.snapshot == 5 and stream.position.full  # started again, at the latest
    assert (consumers.read("c").nextSnapshot, consumers.read("c").pinUnchecked) == (5, False)
    assert _all(stream) == [0, 1, 2, 3, 4]


# 292: the stream failed with SnapshotExpiredError before the fix (1 seed of 300 tried)
@pytest.mark.parametrize("seed", [292, *range(8)])
def test_interleaved_consumer_writer_and_expiration(tmp_path, seed):
    """A writer committing single rows with automatic expiration down to the latest
    snapshot, and a new latest-full stream with a consumer id, interleaved at every FileIO
    call: the stream starts and reads rows 0..k-1 for some k, each once, without error."""
    path = str(tmp_path / "t")
    mp.create_table(path, SCHEMA, options={
        "snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1",
        "snapshot.time-retained": "1 ms", "commit.min-retry-wait": "1 ms", "commit.max-retry-wait": "2 ms"})
    mp.open_table(path).write(rows(0, 1))
    s = Scheduler(seed)
    read: list[int] = []

    def writer():
        t = mp.open_table(path, io=s.io(LocalFileIO(fsync=False)))
        for i in range(1, 6):
            t.write(rows(i, 1))
            assert t.last_after_commit.errors == []

    def consumer():
        stream = mp.open_table(path, io=s.io(LocalFileIO(fsync=False))).stream("c")
        read.extend(_all(stream))

    s.run({"writer": writer, "consumer": consumer})
    assert s.errors == []
    assert read == list(range(len(read))) and read
