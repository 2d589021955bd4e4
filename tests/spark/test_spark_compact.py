"""Distributed compaction: ``minipaimon_spark.compact`` on the shared local session."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

pytest.importorskip("pyspark")

import minipaimon_core as mp  # noqa: E402
import minipaimon_spark  # noqa: E402

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False),
                    pa.field("dt", pa.string(), nullable=False), pa.field("v", pa.float64())])


def rows(ids: range, dt: str, v: float) -> pa.Table:
    return pa.table({"id": list(ids), "dt": [dt] * len(ids), "v": [v] * len(ids)}, schema=SCHEMA)


def runs_per_bucket(table: mp.Table) -> dict[tuple[Any, ...], int]:
    files: dict[tuple[Any, ...], list[Any]] = defaultdict(list)
    for split in table.scan().plan():
        files[(tuple(split.partition), split.bucket)].extend(split.files)
    return {k: sum(1 for f in fs if f.level == 0) + len({f.level for f in fs if f.level > 0})
            for k, fs in files.items()}


@pytest.mark.smoke
def test_full_compaction_on_executors_commits_once(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    table = mp.create_table(path, SCHEMA, primary_key=["id", "dt"], partition_by=["dt"],
                            options={"bucket": "2", "write-only": "true"})
    for version in range(4):
        table.write(pa.concat_tables([rows(range(0, 50), "d1", version),
                                      rows(range(25, 75), "d2", version)]))
    before = mp.open_table(path).to_arrow().sort_by([("dt", "ascending"), ("id", "ascending")])
    assert max(runs_per_bucket(mp.open_table(path)).values()) == 4
    snap = minipaimon_spark.compact(spark, path, full=True)
    table = mp.open_table(path)
    assert snap == table.latest_snapshot().id == 5  # type: ignore[union-attr]
    assert table.latest_snapshot().commitKind == "COMPACT"  # type: ignore[union-attr]
    assert set(runs_per_bucket(table).values()) == {1}
    assert table.to_arrow().sort_by([("dt", "ascending"), ("id", "ascending")]).equals(before)
    assert minipaimon_spark.compact(spark, path, full=True) is None  # nothing left to do


def test_compacting_an_empty_table_does_nothing(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    mp.create_table(path, SCHEMA)
    assert minipaimon_spark.compact(spark, path) is None
