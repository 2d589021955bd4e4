"""Issue 16 "must show": a changelog stream (upserts, deletes, compactions) into a
primary-key sink, stopped at random points across 12 restarts from one checkpoint and one
consumer-id; after each restart catches up, the sink equals the source table.

Seeded (``MINIPAIMON_CHAOS_SEED``); a stop lands anywhere: before the first batch, during
a micro-batch (planning, the tasks, the sink's commit, Spark's checkpoint) or between
batches. Driver kills (SIGKILL inside the commit/checkpoint window) are in
``test_exactly_once.py``.
"""

from __future__ import annotations

import os
import random
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

pytest.importorskip("pyspark")

import minipaimon_core as mp  # noqa: E402

SEED = int(os.environ.get("MINIPAIMON_CHAOS_SEED", "1616"))
ROUNDS = 12
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("k", pa.string()), ("v", pa.int64())])


def mutate(t: mp.Table, rng: random.Random, live: set[int]) -> None:
    """One random source change: upserts (new and existing ids), deletes, or a compaction."""
    roll = rng.random()
    if roll < 0.15:
        t.compact(full=rng.random() < 0.5)
        return
    if roll < 0.4 and live:
        gone = rng.sample(sorted(live), min(len(live), rng.randint(1, 5)))
        t.write(pa.table({"id": gone, "k": ["x"] * len(gone), "v": [0] * len(gone),
                          "_row_kind": ["-D"] * len(gone)}))
        live.difference_update(gone)
        return
    ids = sorted(set(rng.randint(0, 80) for _ in range(rng.randint(1, 20))))
    t.write(pa.table({"id": ids, "k": [f"k{rng.randint(0, 3)}" for _ in ids],
                      "v": [rng.randint(0, 1000) for _ in ids],
                      "_row_kind": ["+U" if i in live else "+I" for i in ids]}))
    live.update(ids)


def rows(t: mp.Table) -> list[tuple[Any, ...]]:
    data = t.to_arrow().select(["id", "k", "v"]).sort_by("id")
    return list(zip(*data.to_pydict().values()))


def test_random_stops_across_restarts_keep_the_sink_equal_to_the_source(spark: Any, tmp_path: Path) -> None:
    rng = random.Random(SEED)
    src_path, dst_path, ck = (str(tmp_path / n) for n in ("src", "dst", "ck"))
    src = mp.create_table(src_path, SCHEMA, primary_key=["id"],
                          options={"bucket": "2", "changelog-producer": "input"})
    live: set[int] = set()
    mutate(src, rng, live)

    def start() -> Any:
        return (spark.readStream.format("minipaimon").option("read.changelog", "true")
                .option("consumer-id", "chaos").load(src_path)
                .writeStream.format("minipaimon").option("primary-key", "id")
                .option("bucket", "2").option("checkpointLocation", ck)
                .trigger(processingTime="0 seconds").start(dst_path))

    for round_ in range(ROUNDS):
        q = start()
        try:
            for _ in range(rng.randint(0, 4)):
                mutate(src, rng, live)
                if rng.random() < 0.5:  # let the query get somewhere: a random stop point
                    time.sleep(rng.uniform(0.0, 0.4))
            if rng.random() < 0.3:
                q.processAllAvailable()
        finally:
            q.stop()  # anywhere: before, inside or between micro-batches
        q = start()
        try:
            q.processAllAvailable()
        finally:
            q.stop()
        src = mp.open_table(src_path)
        assert rows(mp.open_table(dst_path)) == rows(src), f"round {round_} (seed {SEED})"
    assert "chaos" in src.consumers()  # progress recorded, once batches committed
