"""Issue 16 "must show": a changelog stream (upserts, deletes, compactions) into a
primary-key sink, stopped at random points across 12 restarts from one checkpoint and one
consumer-id; after each restart catches up, the sink equals the source table.

Seeded (``MINIPAIMON_CHAOS_SEED``); a stop lands anywhere: before the first batch, during
a micro-batch (planning, the tasks, the sink's commit, Spark's checkpoint) or between
batches. The source is ``changelog_source.py``'s, as in ``test_exactly_once.py``, which
kills (SIGKILL, whole process tree, 4 rounds, also inside the commit/checkpoint window) a
driver that streams the same kind of changelog source, and compares after each restart: 16
restarts with changelog sources in all.
"""

from __future__ import annotations

import os
import random
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")

import minipaimon_core as mp  # noqa: E402
from tests.spark.changelog_source import ChangelogSource, rows  # noqa: E402

SEED = int(os.environ.get("MINIPAIMON_CHAOS_SEED", "1616"))
ROUNDS = 12


def test_random_stops_across_restarts_keep_the_sink_equal_to_the_source(spark: Any, tmp_path: Path) -> None:
    rng = random.Random(SEED)
    src_path, dst_path, ck = (str(tmp_path / n) for n in ("src", "dst", "ck"))
    src = ChangelogSource(src_path)
    src.mutate(rng)

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
                src.mutate(rng)
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
        assert rows(dst_path) == src.rows(), f"round {round_} (seed {SEED})"
    assert "chaos" in mp.open_table(src_path).consumers()  # progress recorded, once batches committed
