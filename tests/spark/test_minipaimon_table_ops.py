"""``MiniPaimonTable``'s reads and maintenance, delta-spark's names: ``forName``, ``toDF``,
``history``, ``detail``, ``restoreToVersion`` / ``restoreToTimestamp``,
``optimize().executeCompaction()``, ``vacuum``, each against the core on the same table."""

from __future__ import annotations

import datetime
import os
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

pytest.importorskip("pyspark")

from chispa import assert_df_equality  # noqa: E402

import minipaimon_core as mp  # noqa: E402
from minipaimon_spark import MiniPaimonTable  # noqa: E402
from tests.spark.test_minipaimon_table import SCHEMA, rows  # noqa: E402


def frame(spark: Any, table: pa.Table) -> Any:
    return spark.createDataFrame(table)


def test_history_detail_restore_optimize_vacuum_as_the_core(spark: Any, tmp_path: Path) -> None:
    core = mp.create_table(str(tmp_path / "t"), SCHEMA, primary_key=["id", "dt"], partition_by=["dt"],
                           options={"bucket": "2"})
    core.write(rows(range(0, 20)))
    core.write(rows(range(10, 30)).set_column(2, "name", pa.array(["second"] * 20)))
    t = MiniPaimonTable.forPath(spark, core.path)

    history = t.history().collect()
    want = core.history().to_pylist()
    assert [(r.version, r.operation, r.userId) for r in history] == \
        [(h["snapshot_id"], h["commit_kind"], h["commit_user"]) for h in want] == \
        [(2, "APPEND", want[0]["commit_user"]), (1, "APPEND", want[1]["commit_user"])]
    assert history[0].timestamp.replace(tzinfo=datetime.timezone.utc) == want[0]["committed_at"]
    assert history[0].operationMetrics["numAddedRecords"] == "20"
    assert [r.version for r in t.history(1).collect()] == [2]

    detail = t.detail().collect()[0]
    parts = core.system_table("partitions")
    assert (detail.format, detail.location, detail.partitionColumns, detail.primaryKeys) == \
        ("paimon", core.path, ["dt"], ["id", "dt"])
    assert detail.numFiles == sum(parts.column("file_count").to_pylist()) == 8  # 2 commits, 2 x 2 buckets
    assert detail.sizeInBytes == sum(parts.column("file_size_in_bytes").to_pylist())
    assert detail.properties["bucket"] == "2"

    # RESTORE to a version: a new snapshot that reads as snapshot 1, history kept
    restored = t.restoreToVersion(1).collect()[0]
    assert (restored.snapshot_id, restored.restored_from) == (3, 1)
    assert_df_equality(t.toDF(), frame(spark, core.scan(snapshot_id=1).to_arrow()),
                       ignore_row_order=True, ignore_nullable=True)
    # ... and to a time, a text in the session zone (UTC here): snapshot 2's
    at = datetime.datetime.fromtimestamp(core.snapshot(2).timeMillis / 1000, tz=datetime.timezone.utc)
    assert t.restoreToTimestamp(at.strftime("%Y-%m-%d %H:%M:%S.%f")).collect()[0].restored_from == 2
    assert mp.open_table(core.path).to_arrow().sort_by("id").equals(core.scan(snapshot_id=2).to_arrow().sort_by("id"))
    assert [r.operation for r in t.history(2).collect()] == ["OVERWRITE", "OVERWRITE"]

    compacted = t.optimize().executeCompaction().collect()[0].snapshot_id
    latest = mp.open_table(core.path).latest_snapshot()
    assert latest is not None and (compacted, latest.commitKind) == (latest.id, "COMPACT")
    assert_df_equality(t.toDF(), frame(spark, core.scan(snapshot_id=2).to_arrow()),
                       ignore_row_order=True, ignore_nullable=True)

    # vacuum: an old orphan goes, a fresh one (a writer may still be writing it) stays
    bucket = next(Path(core.path).glob("dt=d0/bucket-*"))
    old, fresh = bucket / "data-orphan-old.parquet", bucket / "data-orphan-new.parquet"
    for f in (old, fresh):
        f.write_bytes(b"debris")
    two_days_ago = time.time() - 2 * 86400
    os.utime(old, (two_days_ago, two_days_ago))
    removed = [r.path for r in t.vacuum(24).collect()]
    assert len(removed) == 1 and removed[0].endswith("data-orphan-old.parquet")
    assert not old.exists() and fresh.exists()
    with pytest.raises(mp.InvalidArgumentError):
        t.vacuum(-1)


def test_for_name_and_to_df_with_an_alias(spark: Any, tmp_path: Path) -> None:
    warehouse = str(tmp_path / "wh")
    table = mp.catalog(warehouse).create_table("sales.orders", SCHEMA, primary_key=["id", "dt"])
    table.write(rows(range(0, 5)))
    spark.conf.set("spark.minipaimon.warehouse", warehouse)
    try:
        t = MiniPaimonTable.forName(spark, "sales.orders")
        df = t.alias("o").toDF()
        assert sorted(r.id for r in df.select("o.id").collect()) == [0, 1, 2, 3, 4]
        t.delete("id >= 3")
        assert t.detail().collect()[0].name == "sales.orders"
        assert sorted(mp.open_table(table.path).to_arrow().column("id").to_pylist()) == [0, 1, 2]
        with pytest.raises(mp.TableNotFoundError):
            MiniPaimonTable.forName(spark, "sales.missing")
    finally:
        spark.conf.unset("spark.minipaimon.warehouse")
