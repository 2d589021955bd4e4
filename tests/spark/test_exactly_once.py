"""Exactly once end to end: a streaming pipeline killed with SIGKILL and restarted.

``stream_pipeline.py`` runs as its own Spark driver process (its own local JVM) with four
queries: from the append table ``src`` a copy into an append table and sums per key into an
aggregation table; from the changelog of ``csrc`` (a primary-key table, bucket 2,
``changelog-producer=input``, changed by the test with upserts, deletes and compactions:
``changelog_source.py``) a mirror into a primary-key table and an audit of every change row
into an append table. Each round changes both sources (before the start and while the
queries run), then kills the whole pipeline — the driver, its JVM and every Python worker,
found by a marker in their environment — either the moment a sink commit lands (of ``agg``
or of ``mirror``, before Spark can write its own commit log: the replay case) or at a random
point after the first new batch started. The next round restarts from the same checkpoints
and, once the mirror has caught up, compares it with ``csrc`` (all rows, sorted). A last run
with ``Trigger.AvailableNow`` drains the sources; then the copy must equal the source (no
duplicate, no loss), the sums the source's sums (a batch committed twice would
double-count), the mirror ``csrc``, and the audit every change row written to ``csrc``
exactly once (a lost or replayed delete shows there even where the mirror cannot tell).
``MINIPAIMON_KILL_ROUNDS`` sets the number of kill rounds (default 3, one of each kill style).

With ``test_stream_chaos.py`` (12 stops, each followed by a restart compared with the
source) this makes 16 restarts of changelog streams with deletes and compactions, each
compared with the source table: 4 after a kill, 12 after a stop.
"""

from __future__ import annotations

import contextlib
import json
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
from minipaimon_core.stream.stream import StreamOffset  # noqa: E402
from tests.spark.changelog_source import ChangelogSource, rows  # noqa: E402

PIPELINE = Path(__file__).with_name("stream_pipeline.py")
REPO = Path(__file__).resolve().parents[2]
MARK = "MINIPAIMON_PIPELINE_RUN"
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("k", pa.string()), ("v", pa.float64())])
# 3 rounds in CI: one of each kill style (STYLES); more for a soak run
ROUNDS = int(os.environ.get("MINIPAIMON_KILL_ROUNDS", "3"))
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


def failure_summary(text: str) -> str:
    """The first lines naming an exception (a Java trace's head is what tells its cause), then
    the log's tail."""
    heads = [line for line in text.splitlines()
             if ("Exception" in line or "Error" in line) and not line.startswith("\tat ")]
    return "\n".join(heads[:20]) + "\n...\n" + text[-1500:]


def note(log: Path, line: str) -> None:
    with open(log, "a") as f:
        f.write(f"[test] {line}\n")


def start(workdir: Path, mode: str, run_id: str, log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, MARK: run_id, "PYTHONPATH": str(REPO)}
    with open(log, "ab") as out:
        return subprocess.Popen([sys.executable, str(PIPELINE), str(workdir), mode],
                                env=env, cwd=REPO, stdout=out, stderr=subprocess.STDOUT)


def committed_snapshot(ck: Path) -> int:
    """The source snapshot up to which the query's last committed batch delivered (0: none)."""
    commits = ck / "commits"
    done = [int(n) for n in os.listdir(commits) if n.isdigit()] if commits.is_dir() else []
    if not done:
        return 0
    end = (ck / "offsets" / str(max(done))).read_text().splitlines()[-1]  # one source: last line
    return StreamOffset.from_dict(json.loads(end)).next_snapshot - 1


def catch_up(workdir: Path, proc: subprocess.Popen[bytes], log: Path) -> bool:
    """Wait until ``mirror`` has delivered every ``csrc`` snapshot (the test changes none
    meanwhile); False if the pipeline ended by itself first."""
    target = latest_id(workdir / "csrc")
    deadline = time.monotonic() + 120
    while committed_snapshot(workdir / "ck-mirror") < target:
        if proc.poll() is not None:
            return False
        assert time.monotonic() < deadline, f"mirror does not catch up:\n{failure_summary(log.read_text())}"
        time.sleep(0.01)
    return True


def run_round(workdir: Path, source: Source, changelog: ChangelogSource, rng: random.Random,
              style: str, log: Path) -> None:
    """Start the pipeline, compare ``mirror`` with ``csrc`` once it caught up, change both
    sources while it runs, kill it at a point of ``style``: ``random``, or ``after-commit``
    of the sink ``agg`` or ``mirror``.

    A pipeline that fails by itself (a query error ends it) is one more crash point; a
    pipeline that is broken for good fails the final run.
    """
    source.append(50)
    source.append(50)
    changelog.mutate(rng)
    changelog.mutate(rng)
    run_id = uuid.uuid4().hex
    offsets_before = offsets(workdir / "ck-copy")
    proc = start(workdir, "forever", run_id, log)
    try:
        if not catch_up(workdir, proc, log):
            return  # it failed by itself (e.g. a worker timed out): one more crash point
        assert rows(str(workdir / "mirror")) == changelog.rows(), "mirror != csrc after a restart"
        sink = style.removeprefix("after-commit-")
        sink_before = latest_id(workdir / sink)
        kill_at = None
        writes = rng.randint(3, 8)
        changed = False  # no commit of mirror without a change of csrc's rows
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                return  # it failed by itself: one more crash point
            assert time.monotonic() < deadline, f"no progress:\n{failure_summary(log.read_text())}"
            started = offsets(workdir / "ck-copy") > offsets_before
            if style != "random":
                if latest_id(workdir / sink) > sink_before:
                    break  # a sink commit landed; Spark's commit log may not be written yet
            elif started:
                kill_at = kill_at or time.monotonic() + rng.uniform(0.0, 2.0)
                if time.monotonic() >= kill_at:
                    break
            if started and (writes or not changed):
                source.append(rng.randint(5, 30))
                changed = changelog.mutate(rng) or changed
                writes = max(writes - 1, 0)
            time.sleep(0.002)
    finally:
        kill_pipeline(run_id, proc)


STYLES = ("after-commit-agg", "random", "after-commit-mirror", "random")
CHECKPOINTS = {"agg": "ck-sums", "mirror": "ck-mirror"}


@pytest.mark.timeout(420)
def test_pipeline_killed_at_random_points_neither_duplicates_nor_loses(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    log = tmp_path / "pipeline.log"
    source = Source(tmp_path / "src")
    changelog = ChangelogSource(str(tmp_path / "csrc"))
    while not changelog.mutate(rng):
        pass  # until snapshot 1 has rows: the changelog queries start from it
    began = time.monotonic()
    for i in range(ROUNDS):
        style = STYLES[i % len(STYLES)]
        run_round(tmp_path, source, changelog, rng, style, log)
        sink = "agg" if style == "after-commit-agg" else "mirror"
        note(log, f"round {i} ({style}) killed at {time.monotonic() - began:.1f} s, "
                  f"{offsets(tmp_path / 'ck-copy')} batches planned, replay of a committed "
                  f"{sink} batch pending: {replay_pending(tmp_path, sink, CHECKPOINTS[sink])}")
    source.append(40)
    changelog.mutate(rng)
    changelog.mutate(rng)
    for _ in range(3):  # a run that fails by itself (overloaded machine) is restarted too
        proc = start(tmp_path, "available-now", uuid.uuid4().hex, log)
        if proc.wait(timeout=240) == 0:
            note(log, f"final run done at {time.monotonic() - began:.1f} s")
            break
    else:
        pytest.fail(f"the final run failed 3 times:\n{failure_summary(log.read_text())}")

    want = source.table.to_arrow()
    copy = mp.open_table(str(tmp_path / "dst")).to_arrow()
    assert copy.num_rows == want.num_rows == source.next_id
    assert sorted(copy.column("id").to_pylist()) == list(range(source.next_id))
    sums = mp.open_table(str(tmp_path / "agg")).to_arrow()
    want_sums = want.group_by("k").aggregate([("v", "sum")])
    assert dict(zip(sums.column("k").to_pylist(), sums.column("v").to_pylist())) == dict(
        zip(want_sums.column("k").to_pylist(), want_sums.column("v_sum").to_pylist()))
    assert pc.sum(sums.column("v")).as_py() == pc.sum(want.column("v")).as_py()

    assert rows(str(tmp_path / "mirror")) == changelog.rows()
    audit = mp.open_table(str(tmp_path / "audit")).to_arrow().select(["id", "k", "v", "kind"])
    assert sorted(zip(*audit.to_pydict().values())) == sorted(changelog.changes)
