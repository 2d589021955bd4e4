"""Model-based test of dynamic-bucket tables (``bucket`` = -1), both modes, against a dict.

Random operations on a table with small buckets (``dynamic-bucket.target-row-num`` 3-5):
writes of 1-30 rows (one commit each), full and minor compactions, reopenings, expiration,
whole-table overwrites, and concurrency: two writers started on one snapshot committing
one after the other (the second may fail with ``CommitConflictError`` BUCKET_ASSIGNMENT
when the two put a key in different places: then its rows are not in the model), and two
writers of one commit (Spark tasks: one start, interleaved sequence numbers; a
cross-partition key they put in two partitions fails the commit). After every operation
the table equals the model, no key is read twice, a HASH_DYNAMIC table's HASH index holds
each live key in its bucket and no hash in two buckets, and with deletion vectors Paimon's
view (level >= 1 files unmerged) equals the model too.

Keys within a partition (``HASH_DYNAMIC``, key (id, dt)) follow the engines' rules per key
(tests/test_pk_model.py's :func:`expected`); cross-partition keys (key id, partitioned by dt)
live in the partition of their last row (deduplicate) or of their first (partial-update,
aggregation, first-row), with the engine's value. CI runs 600 rows per configuration
(ten): about 700 snapshots compared, ~90 s on the shared 2-core machine; more with
``MP_DYN_OPS=5000 MP_DYN_SEEDS=3``.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pytest

import minipaimon_core as mp
from minipaimon_core.errors import ConflictReason
from minipaimon_core.metadata.sequence import SPARK_STRIDE, start_of
from tests.helpers import check_hash_index
from tests.test_pk_model import Config as EngineConfig
from tests.test_pk_model import expected, paimon_state

OPS = int(os.environ.get("MP_DYN_OPS", "600"))
SEEDS = int(os.environ.get("MP_DYN_SEEDS", "1"))
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    ("v", pa.int64()), ("s", pa.string()), ("ts", pa.int64())])


@dataclass(frozen=True)
class Config:
    cross: bool  # primary key id (cross-partition) or (id, dt)
    engine: str
    options: dict[str, str]
    kinds: tuple[str, ...] = ()  # retractions written besides +I/+U

    def engine_config(self) -> EngineConfig:
        return EngineConfig(self.engine, self.options, self.kinds)


CONFIGS = {
    "hash-dedup": Config(False, "deduplicate", {"dynamic-bucket.target-row-num": "3",
                                                "dynamic-bucket.initial-buckets": "2",
                                                "num-sorted-run.compaction-trigger": "3"}, ("-D",)),
    "hash-dv-lookup": Config(False, "deduplicate", {"dynamic-bucket.target-row-num": "4",
                                                    "deletion-vectors.enabled": "true",
                                                    "changelog-producer": "lookup"}, ("-D", "-U")),
    "hash-partial-update": Config(False, "partial-update", {
        "dynamic-bucket.target-row-num": "5", "partial-update.remove-record-on-delete": "true"}, ("-D",)),
    "hash-aggregation": Config(False, "aggregation", {
        "dynamic-bucket.target-row-num": "4", "fields.v.aggregate-function": "sum",
        "fields.s.aggregate-function": "max", "fields.s.ignore-retract": "true"}, ("-U", "-D")),
    "hash-first-row": Config(False, "first-row", {"dynamic-bucket.target-row-num": "3",
                                                  "ignore-delete": "true"}, ("-D",)),
    "cross-dedup": Config(True, "deduplicate", {"dynamic-bucket.target-row-num": "3",
                                                "num-sorted-run.compaction-trigger": "3"}, ("-D",)),
    "cross-dv": Config(True, "deduplicate", {"dynamic-bucket.target-row-num": "4",
                                             "deletion-vectors.enabled": "true"}, ("-D",)),
    "cross-partial-update": Config(True, "partial-update", {"dynamic-bucket.target-row-num": "4"}),
    # no retractions: the partition column of a cross-partition key is a value column, and
    # its default aggregate (last_non_null_value) retracts to null, as in Paimon
    "cross-aggregation": Config(True, "aggregation", {
        "dynamic-bucket.target-row-num": "4", "fields.v.aggregate-function": "sum",
        "fields.s.aggregate-function": "max"}),
    "cross-first-row": Config(True, "first-row", {"dynamic-bucket.target-row-num": "3",
                                                  "dynamic-bucket.initial-buckets": "2"}),
}

Event = tuple[str, Any, int, Any, Any, str]  # kind, ts, order, v, s, dt


class Model:
    """Events per key; a key's row (and, cross-partition, its partition) by the engine."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.events: dict[Any, list[Event]] = {}

    def apply(self, rows: list[dict[str, Any]], order: list[int]) -> None:
        for r, o in sorted(zip(rows, order), key=lambda x: x[1]):
            key = r["id"] if self.config.cross else (r["id"], r["dt"])
            self.events.setdefault(key, []).append((r["_row_kind"], r["ts"], o, r["v"], r["s"], r["dt"]))

    def state(self) -> dict[Any, tuple[Any, ...]]:
        out = {}
        for key, events in self.events.items():
            events = sorted(events, key=lambda e: e[2])  # by sequence (tasks interleave)
            row = expected([e[:5] for e in events], self.config.engine_config())
            if row is None:
                continue
            if self.config.cross:  # the last row's partition, or the first row's
                out[key] = (events[-1 if self.config.engine == "deduplicate" else 0][5], *row)
            else:
                out[key] = row
        return out


def table_state(t: mp.Table, cross: bool) -> dict[Any, tuple[Any, ...]]:
    rows = t.to_arrow().to_pylist()
    if cross:
        out: dict[Any, tuple[Any, ...]] = {r["id"]: (r["dt"], r["v"], r["s"]) for r in rows}
    else:
        out = {(r["id"], r["dt"]): (r["v"], r["s"]) for r in rows}
    assert len(out) == len(rows), "a key was read twice"
    return out


def random_rows(rng: random.Random, config: Config, n: int, known: Any = ()) -> list[dict[str, Any]]:
    """``n`` random rows; a retraction only of a key of ``known`` (committed already): what a
    leading retraction leaves depends on when compaction ran (as in Paimon's Java engine, a
    key's lone row passes through unmerged), so no key starts with one."""
    out = []
    for _ in range(n):
        kind = rng.choice(config.kinds) if config.kinds and rng.random() < 0.15 else rng.choice(["+I", "+U"])
        row = {"id": rng.randint(0, 60), "dt": rng.choice(["a", "b", "c"]),
               "v": None if rng.random() < 0.2 else rng.randint(-5, 100),
               "s": None if rng.random() < 0.2 else rng.choice(["x", "y", "z"]),
               "ts": rng.randint(0, 60)}
        key = row["id"] if config.cross else (row["id"], row["dt"])
        row["_row_kind"] = kind if kind in ("+I", "+U") or key in known else "+I"
        out.append(row)
    return out


def arrow(rows: list[dict[str, Any]]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=SCHEMA.append(pa.field("_row_kind", pa.string())))


class Run:
    def __init__(self, path: str, config: Config, rng: random.Random) -> None:
        self.path, self.config, self.rng = path, config, rng
        key = ["id"] if config.cross else ["id", "dt"]
        self.t = mp.create_table(path, SCHEMA, primary_key=key, partition_by=["dt"],
                                 options={"merge-engine": config.engine, **config.options})
        self.model = Model(config)
        self.order = 0
        self.conflicts = 0

    def orders(self, n: int) -> list[int]:
        self.order += n
        return list(range(self.order - n, self.order))

    def write(self, n: int, mode: str = "append") -> None:
        known = self.model.events if mode == "append" else ()  # an overwrite starts afresh
        rows = random_rows(self.rng, self.config, n, known)
        self.t.write(arrow(rows), mode=mode)
        if mode == "overwrite":
            self.model = Model(self.config)
        self.model.apply(rows, self.orders(n))

    def two_writers(self, n: int) -> None:
        """Two writers on one snapshot, committed one after the other."""
        rows = [random_rows(self.rng, self.config, n, self.model.events) for _ in range(2)]
        writers = [self.t.new_write(f"w{i}") for i in range(2)]
        messages = []
        for w, r in zip(writers, rows):
            w.write(arrow(r))
            messages.append(w.prepare_commit())
        for i, (r, m) in enumerate(zip(rows, messages)):
            try:
                self.t.new_commit(f"w{i}").commit(m, self.order)  # identifiers only grow
            except mp.CommitConflictError as e:
                assert e.reason == ConflictReason.BUCKET_ASSIGNMENT, e
                self.t.new_commit(f"w{i}").abort(m)
                self.conflicts += 1
                continue
            self.t.after_commit(m)  # as every writer does (a lookup table compacts here)
            self.model.apply(r, self.orders(len(r)))

    def tasks(self, n: int) -> None:
        """Two writers of one commit (Spark tasks): one start, interleaved numbers."""
        start = start_of(self.t.context().manifests, self.t.latest_snapshot())
        rows = [random_rows(self.rng, self.config, n, self.model.events) for _ in range(2)]
        messages = []
        for i, r in enumerate(rows):
            w = self.t.new_write("job", sequence=start.for_task(i))
            w.write(arrow(r))
            messages += w.prepare_commit()
        try:
            self.t.new_commit("job").commit(messages, self.order)
        except mp.CommitConflictError as e:
            assert self.config.cross and e.reason == ConflictReason.BUCKET_ASSIGNMENT, e
            self.t.new_commit("job").abort(messages)
            self.conflicts += 1
            return
        self.t.after_commit(messages)
        base = self.order
        self.order += 2 * SPARK_STRIDE * (n + 1)
        for i, r in enumerate(rows):  # row j of task i is numbered j * stride + i
            self.model.apply(r, [base + j * SPARK_STRIDE + i for j in range(len(r))])

    def check(self) -> None:
        want = self.model.state()
        assert table_state(self.t, self.config.cross) == want
        if not self.config.cross:
            check_hash_index(self.t)
        if self.config.options.get("deletion-vectors.enabled") == "true":
            got = paimon_state(self.t)
            if self.config.cross:
                assert {k[0]: (k[1], *v) for k, v in got.items()} == want
            else:
                assert got == want


def run(path: str, config: Config, seed: int, ops: int) -> Run:
    rng = random.Random(seed)
    r = Run(path, config, rng)
    done = 0
    while done < ops:
        op = rng.random()
        if op < 0.07:
            r.t.compact(full=rng.random() < 0.5)
        elif op < 0.10:
            r.t = mp.open_table(path)
        elif op < 0.12:
            r.t.expire_snapshots(retain_max=rng.randint(2, 5), retain_min=1)
        elif op < 0.14:
            r.write(rng.randint(1, 10), mode="overwrite")
        elif op < 0.24:
            n = rng.randint(1, 12)
            r.two_writers(n)
            done += 2 * n
        elif op < 0.34:
            n = rng.randint(1, 12)
            r.tasks(n)
            done += 2 * n
        else:
            n = rng.randint(1, 30)
            r.write(n)
            done += n
        r.check()
    return r


@pytest.mark.parametrize("name", list(CONFIGS))
@pytest.mark.parametrize("seed", range(SEEDS))
def test_random_operations_match_the_model(tmp_path, name, seed):
    r = run(str(tmp_path / "t"), CONFIGS[name], seed * 1000 + len(name), OPS)
    assert len(r.model.state()) > 10
    assert len({b for s in r.t.scan().plan() for b in [s.bucket]}) >= 3  # buckets filled up


def test_concurrent_writers_do_conflict_sometimes(tmp_path):
    """The races above are real: some second commits are refused."""
    r = run(str(tmp_path / "t"), CONFIGS["hash-dedup"], 7, OPS)
    c = run(str(tmp_path / "c"), CONFIGS["cross-dedup"], 7, OPS)
    assert r.conflicts > 0 and c.conflicts > 0
