"""Model-based test: random upserts, deletes, compactions and reopenings against a dict.

For every merge engine, after every commit the table must equal the model, and at the end
every earlier snapshot, re-read by time travel, must equal the model as it was then.
"""

from __future__ import annotations

import random

import pyarrow as pa
import pytest

import minipaimon_core as mp

SCHEMA = pa.schema([
    pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
    ("v", pa.int64()), ("s", pa.string()),
])
ENGINES = {
    "deduplicate": {},
    "partial-update": {"partial-update.remove-record-on-delete": "true"},
    "aggregation": {"fields.v.aggregate-function": "sum", "fields.s.aggregate-function": "max"},
    "first-row": {"ignore-delete": "true"},
}


def apply(model: dict, engine: str, key, v, s, kind: str) -> None:
    old = model.get(key)
    if kind == "-D":
        if engine in ("deduplicate", "partial-update"):
            model.pop(key, None)
        return
    if engine == "deduplicate" or old is None:
        if engine == "aggregation" and old is None:
            model[key] = (v, s)
        else:
            model[key] = (v, s) if engine != "partial-update" or old is None else model[key]
        return
    if engine == "partial-update":
        model[key] = (v if v is not None else old[0], s if s is not None else old[1])
    elif engine == "aggregation":
        nv = old[0] if v is None else v if old[0] is None else old[0] + v
        ns = old[1] if s is None else s if old[1] is None else max(old[1], s)
        model[key] = (nv, ns)
    # first-row: keep old


def table_state(t: mp.Table, **scan) -> dict:
    return {(r["id"], r["dt"]): (r["v"], r["s"]) for r in t.scan(**scan).to_arrow().to_pylist()}


@pytest.mark.parametrize("engine", list(ENGINES))
def test_random_operations_match_the_model(tmp_path, engine):
    rng = random.Random(hash(engine) % 1000)
    options = {"bucket": "4", "merge-engine": engine, "num-sorted-run.compaction-trigger": "3",
               "write-only": "true", **ENGINES[engine]}
    path = str(tmp_path / "t")
    t = mp.create_table(path, SCHEMA, primary_key=["id", "dt"], partition_by=["dt"], options=options)
    model: dict = {}
    history: dict[int, dict] = {}
    deletes = engine in ("deduplicate", "partial-update", "first-row")
    for step in range(70):
        op = rng.random()
        if op < 0.12:
            if t.compact(full=rng.random() < 0.4) is not None:
                history[t.latest_snapshot().id] = dict(model)
        elif op < 0.18:
            t = mp.open_table(path)
        else:
            n = rng.randint(1, 60)
            batch = {"id": [], "dt": [], "v": [], "s": [], "_row_kind": []}
            for _ in range(n):
                key = (rng.randint(0, 80), rng.choice(["a", "b"]))
                kind = "-D" if deletes and rng.random() < 0.15 else rng.choice(["+I", "+U"])
                v = None if rng.random() < 0.2 else rng.randint(-5, 100)
                s = None if rng.random() < 0.2 else rng.choice(["x", "y", "z", "w"])
                for col, val in zip(batch, (*key, v, s, kind)):
                    batch[col].append(val)
                apply(model, engine, key, v, s, kind)
            t.write(pa.table({**{c: batch[c] for c in ("id", "dt", "v", "s")}, "_row_kind": batch["_row_kind"]},
                             schema=SCHEMA.append(pa.field("_row_kind", pa.string()))))
            history[t.latest_snapshot().id] = dict(model)
        if rng.random() < 0.1 and t.latest_snapshot() is not None:
            t.maybe_compact()
            history[t.latest_snapshot().id] = dict(model)
        assert table_state(t) == model, (engine, step)
    reader = mp.open_table(path)
    for snap_id, expected in history.items():
        assert table_state(reader, snapshot_id=snap_id) == expected, (engine, snap_id)
    assert len({s.commit_kind for s in reader.snapshots()}) >= 2
