"""Model-based test of primary-key tables against a plain dict, compared at every commit.

The model maps each key to the list of its events (kind, ``sequence.field`` value, write
order, values); :func:`expected` derives a key's row from them by the engine's rules. The
table runs random operations: row upserts / deletes / update-befores written in batches,
full and automatic compactions, reopenings, explicit and automatic expiration. After every
commit the table must equal the model; at the end every retained snapshot, re-read by time
travel, must equal the model as it was then (an expired one raises SnapshotExpiredError),
and where the changelog is a full history of the table (deduplicate with the ``input``,
``lookup`` or ``full-compaction`` producer) replaying it gives the model too.

Configurations cover every merge engine, each changelog producer, ``sequence.field``,
deletes, compaction, expiration and float keys (``-0.0`` and ``0.0`` are one key). An
"operation" is one row written (in batches of 1-40, one commit each) or one table action.
CI runs OPS = 1,120 operations per configuration and one seed: 10,080 operations, about
600 commits compared, ~45-65 s on the shared 2-core machine. A nightly-sized run sets:

    MP_MODEL_OPS=20000 MP_MODEL_SEEDS=5 pytest tests/test_pk_model.py
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import minipaimon_core as mp
from minipaimon_core.lsm.merge_config import skips_level0
from minipaimon_core.stream.stream import StreamOffset, StreamScanner

OPS = int(os.environ.get("MP_MODEL_OPS", "1120"))
SEEDS = int(os.environ.get("MP_MODEL_SEEDS", "1"))


@dataclass(frozen=True)
class Config:
    engine: str
    options: dict[str, str]
    kinds: tuple[str, ...] = ("+I", "+U")  # row kinds written (besides +I/+U)
    float_keys: bool = False
    replay_changelog: bool = False
    # sequence values grow from batch to batch (within a batch they are random): a merged
    # partial-update row carries one sequence value, so a later batch must not sort before
    # an earlier one (the documented limit of merge_engines); deduplicate takes any order
    ordered_ts: bool = False

    @property
    def sequence_field(self) -> bool:
        return "sequence.field" in self.options


CONFIGS = {
    "dedup": Config("deduplicate", {"bucket": "4", "write-only": "true",
                                    "num-sorted-run.compaction-trigger": "3"}, ("-D",)),
    "dedup-input": Config("deduplicate", {"bucket": "2", "changelog-producer": "input"},
                          ("-D",), replay_changelog=True),
    "dedup-lookup-float": Config("deduplicate", {"bucket": "3", "changelog-producer": "lookup"},
                                 ("-D",), float_keys=True, replay_changelog=True),
    "dedup-full-seq": Config("deduplicate", {
        "bucket": "2", "changelog-producer": "full-compaction", "sequence.field": "ts"},
        ("-D",), replay_changelog=True),
    "dedup-seq-expire-float": Config("deduplicate", {
        "bucket": "2", "sequence.field": "ts", "snapshot.num-retained.min": "1",
        "snapshot.num-retained.max": "4", "num-sorted-run.compaction-trigger": "2"},
        ("-D", "-U"), float_keys=True),
    "partial-update": Config("partial-update", {
        "bucket": "2", "partial-update.remove-record-on-delete": "true",
        "changelog-producer": "lookup", "snapshot.num-retained.min": "2",
        "snapshot.num-retained.max": "5"}, ("-D",)),
    "partial-update-seq": Config("partial-update", {
        "bucket": "2", "partial-update.remove-record-on-delete": "true", "sequence.field": "ts",
        "write-only": "true"}, ("-D",), ordered_ts=True),
    "aggregation": Config("aggregation", {
        "bucket": "2", "fields.v.aggregate-function": "sum", "fields.s.aggregate-function": "max",
        "fields.s.ignore-retract": "true", "changelog-producer": "full-compaction"},
        ("-U", "-D")),
    "first-row": Config("first-row", {"bucket": "2", "ignore-delete": "true",
                                      "changelog-producer": "lookup"}, ("-D",)),
    # deletion vectors: reads take each file alone, dropping the rows the vectors mark
    "dv-dedup-expire": Config("deduplicate", {
        "bucket": "3", "deletion-vectors.enabled": "true", "snapshot.num-retained.min": "1",
        "snapshot.num-retained.max": "5", "num-sorted-run.compaction-trigger": "3"},
        ("-D", "-U")),
    "dv-dedup-seq-lookup-float": Config("deduplicate", {
        "bucket": "2", "deletion-vectors.enabled": "true", "sequence.field": "ts",
        "changelog-producer": "lookup"}, ("-D",), float_keys=True, replay_changelog=True),
    "dv-dedup-ignore-delete": Config("deduplicate", {
        "bucket": "2", "deletion-vectors.enabled": "true", "ignore-delete": "true",
        "write-only": "true"}, ("-D",)),
    # first-row without a changelog producer: writes committed above level 0, new rows of
    # keys already there dropped at commit (minipaimon_core.commit.first_row)
    "first-row-placed": Config("first-row", {"bucket": "2", "ignore-delete": "true",
                                             "num-sorted-run.compaction-trigger": "3"}, ("-D",)),
}


def schema_of(config: Config) -> pa.Schema:
    key = pa.float64() if config.float_keys else pa.int64()
    return pa.schema([pa.field("id", key, nullable=False), pa.field("dt", pa.string(), nullable=False),
                      ("v", pa.int64()), ("s", pa.string()), ("ts", pa.int64())])


Event = tuple[str, Any, int, Any, Any]  # kind, ts, write order, v, s


def expected(events: list[Event], config: Config) -> tuple[Any, Any] | None:
    """A key's row by the engine's rules, from its events (None: no row)."""
    if config.sequence_field:
        events = sorted(events, key=lambda e: (e[1] is not None, e[1] or 0, e[2]))
    engine = config.engine
    if config.options.get("ignore-delete") == "true":  # retractions neither show nor shadow
        events = [e for e in events if e[0] in ("+I", "+U")]
        if not events:
            return None
    if engine == "deduplicate":
        kind, _, _, v, s = events[-1]
        return None if kind in ("-D", "-U") else (v, s)
    if engine == "first-row":
        live = [e for e in events if e[0] in ("+I", "+U")]
        return (live[0][3], live[0][4]) if live else None
    if engine == "partial-update":
        deletes = [i for i, e in enumerate(events) if e[0] == "-D"]
        after = events[deletes[-1] + 1:] if deletes else events
        if not after:
            return None
        v = next((e[3] for e in reversed(after) if e[3] is not None), None)
        s = next((e[4] for e in reversed(after) if e[4] is not None), None)
        return v, s
    total = None  # aggregation: v sums (retractions subtract), s max (retractions ignored)
    for kind, _, _, v, _ in events:
        if v is not None:
            total = (total or 0) + (-v if kind in ("-U", "-D") else v)
    strings = [e[4] for e in events if e[0] in ("+I", "+U") and e[4] is not None]
    return total, max(strings) if strings else None


class Model:
    def __init__(self, config: Config) -> None:
        self.config = config
        self.events: dict[tuple[Any, str], list[Event]] = {}
        self.order = 0

    def apply(self, key: tuple[Any, str], kind: str, v: Any, s: Any, ts: Any) -> None:
        self.order += 1
        self.events.setdefault(key, []).append((kind, ts, self.order, v, s))

    def state(self) -> dict[tuple[Any, str], tuple[Any, Any]]:
        out = {}
        for key, events in self.events.items():
            row = expected(events, self.config)
            if row is not None:
                out[key] = row
        return out


def table_state(t: mp.Table, **scan: Any) -> dict:
    rows = t.scan(**scan).to_arrow().to_pylist()
    out = {(r["id"], r["dt"]): (r["v"], r["s"]) for r in rows}
    assert len(out) == len(rows), "a key was read twice"
    return out


def paimon_state(t: mp.Table) -> dict:
    """The rows as Paimon's readers take a table whose level 0 they skip (deletion vectors,
    first-row): every file at a level >= 1 on its own, its marked rows and retractions
    dropped, no merge; each key must come once."""
    rows = []
    for split in t.scan().plan():
        vectors = t.vectors.vectors(split.deletion_index) if split.deletion_index else {}
        for f in split.files:
            if f.level == 0:
                continue
            raw = t.read_file_rows(split, f, with_kind=True)
            keep = np.isin(raw.column("_VALUE_KIND").to_numpy(), [0, 2])
            keep[vectors.get(f.fileName, np.array([], dtype=np.int64))] = False
            rows += raw.filter(pa.array(keep)).to_pylist()
    out = {(r["id"], r["dt"]): (r["v"], r["s"]) for r in rows}
    assert len(out) == len(rows), "a key is in two files a Paimon reader takes unmerged"
    return out


def random_batch(rng: random.Random, config: Config, model: Model, n: int, base: int) -> pa.Table:
    cols: dict[str, list] = {"id": [], "dt": [], "v": [], "s": [], "ts": [], "_row_kind": []}
    for _ in range(n):
        k = rng.randint(0, 40)
        key_value: Any = k
        if config.float_keys:
            key_value = rng.choice([-0.0, 0.0]) if k == 0 else k / 4
        key = (key_value, rng.choice(["a", "b"]))
        kind = rng.choice(config.kinds) if rng.random() < 0.2 else rng.choice(["+I", "+U"])
        if config.engine == "aggregation" and key not in model.events:
            # a key's first row is an insert: what a leading retraction leaves depends on
            # when compaction drops it, as in Paimon (tests/test_aggregation_engine.py)
            kind = "+I"
        v = None if rng.random() < 0.2 else rng.randint(-5, 100)
        s = None if rng.random() < 0.2 else rng.choice(["x", "y", "z", "w"])
        ts = None if rng.random() < 0.05 and not config.ordered_ts else rng.randint(0, 60)
        if ts is not None and config.ordered_ts:
            ts += base * 100
        for col, val in zip(cols, (*key, v, s, ts, kind)):
            cols[col].append(val)
        model.apply(key, kind, v, s, ts)
    return pa.table(cols, schema=schema_of(config).append(pa.field("_row_kind", pa.string())))


def replay_changelog(t: mp.Table) -> dict:
    """The table rebuilt from its changelog (all of it, from snapshot 1)."""
    sc = StreamScanner(t, {"scan.mode": "from-snapshot", "scan.snapshot-id": "1",
                           "read.changelog": "true"})
    start = StreamOffset(0)
    state: dict = {}
    while (end := sc.latest_offset(start)) != start:
        for split in sc.plan(start, end):
            for batch in sc.read(split):
                for r in batch.to_pylist():
                    key = (r["id"], r["dt"])
                    if r["_row_kind"] in ("-U", "-D"):
                        state.pop(key, None)
                    else:
                        state[key] = (r["v"], r["s"])
        start = end
    return state


def run(path: str, config: Config, seed: int, ops: int) -> int:
    """``ops`` random operations on a new table; returns the number of commits checked."""
    rng = random.Random(seed)
    t = mp.create_table(path, schema_of(config), primary_key=["id", "dt"], partition_by=["dt"],
                        options={"merge-engine": config.engine, **config.options})
    model = Model(config)
    history: dict[int, dict] = {}
    done = checks = 0
    while done < ops:
        op = rng.random()
        if op < 0.08:
            t.compact(full=rng.random() < 0.5)
            done += 1
        elif op < 0.12:
            t = mp.open_table(path)
            done += 1
        elif op < 0.15 and t.latest_snapshot() is not None:
            t.maybe_compact()
            done += 1
        elif op < 0.17 and not config.replay_changelog:  # replay needs the whole history
            t.expire_snapshots(retain_max=rng.randint(2, 6), retain_min=1)
            done += 1
        else:
            n = rng.randint(1, 40)
            t.write(random_batch(rng, config, model, n, base=done))
            done += n
        state = model.state()
        latest = t.latest_snapshot()
        if latest is not None:
            history[latest.id] = state
        assert table_state(t) == state, (config, seed, done)
        if skips_level0(t.table_schema):
            assert paimon_state(t) == state, (config, seed, done)
        checks += 1
    retained = {s.id for s in t.snapshots()}
    reader = mp.open_table(path)
    for snap_id, want in history.items():
        if snap_id in retained:
            assert table_state(reader, snapshot_id=snap_id) == want, (config, snap_id)
        elif snap_id < min(retained):
            with pytest.raises(mp.SnapshotExpiredError):
                reader.scan(snapshot_id=snap_id)
    if config.replay_changelog:
        assert min(retained) == 1
        t.compact(full=True)
        assert replay_changelog(t) == model.state(), (config, seed)
    return checks


@pytest.mark.parametrize("name", list(CONFIGS))
@pytest.mark.parametrize("seed", range(SEEDS))
def test_random_operations_match_the_model(tmp_path, name, seed):
    checks = run(str(tmp_path / "t"), CONFIGS[name], seed * 1000 + len(name), OPS)
    assert checks > 10


def test_the_ci_run_covers_ten_thousand_operations():
    assert OPS * len(CONFIGS) * SEEDS >= 10_000
