"""Exactly once end to end: a streaming pipeline killed with SIGKILL and restarted.

``stream_pipeline.py`` runs as its own Spark driver process (its own local JVM) with two
queries from the source table: a copy into an append table and sums per key into an
aggregation table. Each round appends to the source (before the start and while the queries
run), then kills the whole pipeline — the driver, its JVM and every Python worker, found by
a marker in their environment — either the moment a sink commit lands (before Spark can
write its own commit log: the replay case) or at a random point after the first new batch
started. The next round restarts from the same checkpoints. A last run with
``Trigger.AvailableNow`` drains the source; then the copy must equal the source (no
duplicate, no loss) and the sums must equal the source's sums (a batch committed twice
would double-count). ``MINIPAIMON_KILL_ROUNDS`` sets the number of kill rounds (default 4).
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

pytest.importorskip("pyspark")

import minipaimon_core as mp  # noqa: E402

PIPELINE = Path(__file__).with_name("stream_pipeline.py")
REPO = Path(__file__).resolve().parents[2]
MARK = "MINIPAIMON_PIPELINE_RUN"
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("k", pa.string()), ("v", pa.float64())])
ROUNDS = int(os.environ.get("MINIPAIMON_KILL_ROUNDS", "4"))  # more for a soak run
SEED = 20261122


class Source:
    """The source table and the rows appended to it so far."""

    def __init__(self, path: Path) -> None:
        self.table = mp.create_table(str(path), SCHEMA)
        self.next_id = 0

    def append(self, n: int) -> None:
        ids = list(range(self.next_id, self.next_id + n))
        self.next_id += n
        self.table.write(pa.table({"id": pa.array(ids, pa.int64()), "k": [f"k{i % 5}" for i in ids],
                                   "v": [float(i % 7) for i in ids]}, schema=SCHEMA))


def marked_processes(run_id: str) -> list[int]:
    """Every live process that inherited ``MARK=run_id`` (driver, JVM, Python workers)."""
    mark = f"{MARK}={run_id}".encode()
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            environ = Path("/proc", entry, "environ").read_bytes()
        except OSError:
            continue
        if mark in environ.split(b"\0"):
            pids.append(int(entry))
    return pids


def kill_pipeline(run_id: str, proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL every process of the run, until none is left."""
    deadline = time.monotonic() + 30
    while pids := marked_processes(run_id):
        assert time.monotonic() < deadline, f"processes {pids} survive SIGKILL"
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.01)
    proc.wait(timeout=30)


def latest_id(path: Path) -> int:
    snapshots = path / "snapshot"
    if not snapshots.is_dir():
        return 0
    return max((int(n.split("-")[1]) for n in os.listdir(snapshots) if n.startswith("snapshot-")), default=0)


def offsets(ck: Path) -> int:
    d = ck / "offsets"
    return sum(1 for n in os.listdir(d) if n.isdigit()) if d.is_dir() else 0


def replay_pending(workdir: Path, table: str, ck: str) -> bool:
    """Whether the sink's last commit landed but Spark did not log it (it will replay it)."""
    if latest_id(workdir / table) == 0:
        return False
    batches = [s.commitIdentifier for s in mp.open_table(str(workdir / table)).snapshots()
               if s.commitUser.startswith("stream-")]
    return bool(batches) and not (workdir / ck / "commits" / str(max(batches))).exists()


def note(log: Path, line: str) -> None:
    with open(log, "a") as f:
        f.write(f"[test] {line}\n")


def start(workdir: Path, mode: str, run_id: str, log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, MARK: run_id, "PYTHONPATH": str(REPO)}
    with open(log, "ab") as out:
        return subprocess.Popen([sys.executable, str(PIPELINE), str(workdir), mode],
                                env=env, cwd=REPO, stdout=out, stderr=subprocess.STDOUT)


def run_round(workdir: Path, source: Source, rng: random.Random, style: str, log: Path) -> None:
    """Start the pipeline, feed the source while it runs, kill it at a point of ``style``.

    A pipeline that fails by itself (a query error ends it) is one more crash point; a
    pipeline that is broken for good fails the final run.
    """
    source.append(50)
    source.append(50)
    run_id = uuid.uuid4().hex
    agg_before, offsets_before = latest_id(workdir / "agg"), offsets(workdir / "ck-copy")
    proc = start(workdir, "forever", run_id, log)
    try:
        kill_at = None
        writes = rng.randint(3, 8)
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                return  # it failed by itself (e.g. a worker timed out): one more crash point
            assert time.monotonic() < deadline, f"no progress:\n{log.read_text()[-3000:]}"
            started = offsets(workdir / "ck-copy") > offsets_before
            if style == "after-commit":
                if latest_id(workdir / "agg") > agg_before:
                    break  # a sink commit landed; Spark's commit log may not be written yet
            elif started:
                kill_at = kill_at or time.monotonic() + rng.uniform(0.0, 2.0)
                if time.monotonic() >= kill_at:
                    break
            if started and writes:
                source.append(rng.randint(5, 30))
                writes -= 1
            time.sleep(0.002)
    finally:
        kill_pipeline(run_id, proc)


@pytest.mark.timeout(420)
def test_pipeline_killed_at_random_points_neither_duplicates_nor_loses(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    log = tmp_path / "pipeline.log"
    source = Source(tmp_path / "src")
    began = time.monotonic()
    for i in range(ROUNDS):
        style = "after-commit" if i % 2 == 0 else "random"
        run_round(tmp_path, source, rng, style, log)
        note(log, f"round {i} ({style}) killed at {time.monotonic() - began:.1f} s, "
                  f"{offsets(tmp_path / 'ck-copy')} batches planned, "
                  f"replay of a committed batch pending: {replay_pending(tmp_path, 'agg', 'ck-sums')}")
    source.append(40)
    for _ in range(3):  # a run that fails by itself (overloaded machine) is restarted too
        proc = start(tmp_path, "available-now", uuid.uuid4().hex, log)
        if proc.wait(timeout=240) == 0:
            note(log, f"final run done at {time.monotonic() - began:.1f} s")
            break
    else:
        pytest.fail(f"the final run failed 3 times:\n{log.read_text()[-3000:]}")

    want = source.table.to_arrow()
    copy = mp.open_table(str(tmp_path / "dst")).to_arrow()
    assert copy.num_rows == want.num_rows == source.next_id
    assert sorted(copy.column("id").to_pylist()) == list(range(source.next_id))
    sums = mp.open_table(str(tmp_path / "agg")).to_arrow()
    want_sums = want.group_by("k").aggregate([("v", "sum")])
    assert dict(zip(sums.column("k").to_pylist(), sums.column("v").to_pylist())) == dict(
        zip(want_sums.column("k").to_pylist(), want_sums.column("v_sum").to_pylist()))
    assert pc.sum(sums.column("v")).as_py() == pc.sum(want.column("v")).as_py()
