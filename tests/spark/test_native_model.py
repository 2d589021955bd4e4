"""Model-based test of ``minipaimon_spark.table`` (Spark's own Parquet reader, rows left out
by bitsets) against a plain dict, over long random histories.

Each configuration runs random batches of upserts and deletes (one commit each), full
compactions now and then; after every few commits the native read must equal the model
and the core's read must too; at the end every tenth snapshot, re-read by time travel
(``scan.snapshot-id``), must equal the model as it was. Configurations: ``deduplicate``
with overlapping sorted runs (``write-only``) over dense keys (the merge's flag per key
value) and over sparse ones (its binary search), with deletion vectors, ``first-row``, and
an evolved schema (a column renamed and one added mid-history). CI runs COMMITS = 60 a
configuration (MP_NATIVE_MODEL_COMMITS for longer runs).
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

pytest.importorskip("pyspark")

import minipaimon_core as mp  # noqa: E402
import minipaimon_spark  # noqa: E402

COMMITS = int(os.environ.get("MP_NATIVE_MODEL_COMMITS", "60"))
CHECK_EVERY = 6


@dataclass(frozen=True)
class Config:
    options: dict[str, str]
    key_scale: int = 1  # keys are i * key_scale, i < 300
    first_row: bool = False
    evolve: bool = False


CONFIGS = {
    "dedup-runs-dense": Config({"bucket": "2", "write-only": "true"}),
    "dedup-runs-sparse": Config({"bucket": "2", "write-only": "true"}, key_scale=10**12 + 7),
    "dedup-vectors": Config({"bucket": "1", "deletion-vectors.enabled": "true"}),
    "first-row": Config({"bucket": "2", "merge-engine": "first-row", "ignore-delete": "true"}, first_row=True),
    "dedup-evolved": Config({"bucket": "2", "write-only": "true"}, evolve=True),
}


def batch(ids: list[int], values: list[float], kind: str, value_column: str) -> pa.Table:
    columns = {"id": pa.array(ids, pa.int64()), value_column: pa.array(values, pa.float64())}
    if value_column == "value":  # the evolved schema
        columns["note"] = pa.array([None] * len(ids), pa.string())
    return pa.table({**columns, "_row_kind": pa.array([kind] * len(ids))})


def native_rows(spark: Any, path: str, value_column: str, **options: str) -> dict[int, float]:
    df = minipaimon_spark.table(spark, path, **options)
    rows = df.select("id", value_column).collect()
    got = {r["id"]: r[value_column] for r in rows}
    assert len(got) == len(rows), "a key read twice"
    return got


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_native_reads_equal_the_model_over_a_long_history(spark: Any, tmp_path: Path, name: str) -> None:
    cfg = CONFIGS[name]
    rng = random.Random(f"native-{name}")
    path = str(tmp_path / "t")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.float64())])
    t = mp.create_table(path, schema, primary_key=["id"], options=cfg.options)
    model: dict[int, float] = {}
    history: dict[int, tuple[dict[int, float], str]] = {}  # snapshot id: the model, the value column
    value_column = "v"
    for commit in range(1, COMMITS + 1):
        if cfg.evolve and commit == COMMITS // 2:
            t.rename_column("v", "value")
            t.add_column("note", pa.string())
            value_column = "value"
        if not cfg.options.get("write-only") and commit % 15 == 0:
            t.compact(full=True)
        elif cfg.options.get("write-only") and commit % 25 == 0:
            t.compact(full=True)  # runs pile up in between: merged buckets
        else:
            ids = sorted({rng.randrange(300) * cfg.key_scale for _ in range(rng.randint(1, 60))})
            kind = "-D" if rng.random() < 0.25 else "+I"
            values = [float(commit * 1000 + i % 1000) for i in range(len(ids))]
            t.write(batch(ids, values, kind, value_column))
            for k, v in zip(ids, values):
                if kind == "-D":
                    if not cfg.first_row:  # first-row with ignore-delete: deletes change nothing
                        model.pop(k, None)
                elif cfg.first_row:
                    model.setdefault(k, v)
                else:
                    model[k] = v
        t = mp.open_table(path)
        snapshot = t.latest_snapshot()
        assert snapshot is not None
        history[snapshot.id] = (dict(model), value_column)
        if commit % CHECK_EVERY == 0 or commit == COMMITS:
            assert native_rows(spark, path, value_column) == model, f"commit {commit}"
            core = t.to_arrow()
            assert dict(zip(core.column("id").to_pylist(), core.column(value_column).to_pylist())) == model
    for sid, (expected, column) in sorted(history.items())[::10]:  # read in its own schema
        assert native_rows(spark, path, column, **{"scan.snapshot-id": str(sid)}) == expected, f"snapshot {sid}"
