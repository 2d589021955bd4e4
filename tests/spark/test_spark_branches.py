"""Branches from Spark: Paimon's ``branch`` read and write option, the branch procedures
(``minipaimon_create_branch``, ``_delete_branch``, ``_fast_forward``, ``_branches``), a
write-audit-publish round, and ``scan.fallback-branch`` read by the Python source and by
``minipaimon_spark.table``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

pytest.importorskip("pyspark")

import minipaimon_core as mp  # noqa: E402
import minipaimon_spark  # noqa: E402

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string()),
                    pa.field("dt", pa.string(), nullable=False)])


@pytest.fixture(scope="module")
def sql(spark: Any) -> Any:
    minipaimon_spark.register(spark)
    return spark.sql


def _ids(df: Any) -> list[int]:
    return sorted(r.id for r in df.collect())


def test_write_audit_publish_with_the_branch_option_and_procedures(spark: Any, sql: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "orders")
    t = mp.create_table(path, SCHEMA, primary_key=["id", "dt"], partition_by=["dt"], options={"bucket": "2"})
    t.write(pa.table({"id": [1, 2], "v": ["a", "b"], "dt": ["d1", "d1"]}, schema=SCHEMA))
    row = sql(f"SELECT * FROM minipaimon_create_branch('{path}', 'audit')").collect()[0]
    assert (row.branch, row.tag, row.snapshot_id) == ("audit", None, None)
    t.create_tag("t1")
    sql(f"SELECT * FROM minipaimon_create_branch('{path}', 'from_tag', 't1')").collect()
    assert sorted((r.branch, r.latest_snapshot_id) for r in sql(f"SELECT * FROM minipaimon_branches('{path}')").collect()) \
        == [("audit", None), ("from_tag", 1)]
    # write: to the audit branch only
    batch = spark.createDataFrame([(3, "c", "d2"), (4, "d", "d2")], "id bigint, v string, dt string")
    batch.write.format("minipaimon").mode("append").option("branch", "audit").save(path)
    audit = spark.read.format("minipaimon").option("branch", "audit").load(path)
    assert _ids(audit) == [3, 4]
    assert _ids(spark.read.format("minipaimon").load(path)) == [1, 2]
    assert _ids(minipaimon_spark.table(spark, path, branch="audit")) == [3, 4]
    assert _ids(spark.read.format("minipaimon").option("branch", "from_tag").load(path)) == [1, 2]
    # audit: check, then publish by fast-forwarding main to the branch
    assert audit.filter("v IS NULL").count() == 0
    row = sql(f"SELECT * FROM minipaimon_fast_forward('{path}', 'audit')").collect()[0]
    assert (row.branch, row.snapshot_id) == ("audit", 1)
    assert _ids(spark.read.format("minipaimon").load(path)) == [3, 4]
    sql(f"SELECT * FROM minipaimon_delete_branch('{path}', 'from_tag')").collect()
    assert mp.open_table(path).branches() == ["audit"]


def test_bad_branches_fail_at_analysis_or_before_a_write(spark: Any, sql: Any, tmp_path: Path) -> None:
    from pyspark.errors import AnalysisException

    path = str(tmp_path / "t")
    mp.create_table(path, SCHEMA, primary_key=["id", "dt"], options={"bucket": "1"})
    for query in (f"SELECT * FROM minipaimon_create_branch('{path}', 'main')",
                  f"SELECT * FROM minipaimon_create_branch('{path}', '../x')",
                  f"SELECT * FROM minipaimon_create_branch('{path}', 'b', 'no_tag')",
                  f"SELECT * FROM minipaimon_delete_branch('{path}', 'nope')",
                  f"SELECT * FROM minipaimon_fast_forward('{path}', 'nope')"):
        with pytest.raises(AnalysisException):
            sql(query).collect()
    assert mp.open_table(path).branches() == []
    batch = spark.createDataFrame([(1, "a", "d")], "id bigint, v string, dt string")
    with pytest.raises(Exception, match="BranchNotFoundError|no branch 'nope'"):
        batch.write.format("minipaimon").mode("append").option("branch", "nope").save(path)
    with pytest.raises(Exception, match="TableNotFoundError"):
        batch.write.format("minipaimon").mode("append").option("branch", "x").save(str(tmp_path / "none"))
    assert not (tmp_path / "none").exists()
    with pytest.raises(Exception, match="BranchNotFoundError|no branch"):
        spark.read.format("minipaimon").option("branch", "nope").load(path).collect()


def test_fallback_branch_read_by_spark(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    t = mp.create_table(path, SCHEMA, primary_key=["id", "dt"], partition_by=["dt"], options={"bucket": "1"})
    stream = t.create_branch("stream")
    stream.write(pa.table({"id": [1, 2, 3], "v": ["s1", "s2", "s3"], "dt": ["d1", "d1", "d2"]}, schema=SCHEMA))
    t.set_options({"scan.fallback-branch": "stream"})
    t.write(pa.table({"id": [1], "v": ["batch"], "dt": ["d1"]}, schema=SCHEMA))
    want = [(1, "batch", "d1"), (3, "s3", "d2")]
    python = spark.read.format("minipaimon").load(path)
    assert sorted((r.id, r.v, r.dt) for r in python.collect()) == want
    native = minipaimon_spark.table(spark, path)
    assert sorted((r.id, r.v, r.dt) for r in native.collect()) == want


def test_a_stream_reads_a_branch_and_a_sink_writes_one(spark: Any, tmp_path: Path) -> None:
    """readStream/writeStream with the ``branch`` option: the stream sees the branch's
    snapshots only, and the sink commits into the target's branch."""
    src = str(tmp_path / "src")
    t = mp.create_table(src, SCHEMA, primary_key=["id", "dt"], options={"bucket": "1"})
    t.write(pa.table({"id": [1], "v": ["main"], "dt": ["d"]}, schema=SCHEMA))
    t.create_tag("t1")
    br = t.create_branch("br", "t1")
    br.write(pa.table({"id": [2], "v": ["br"], "dt": ["d"]}, schema=SCHEMA))
    t.write(pa.table({"id": [3], "v": ["main-only"], "dt": ["d"]}, schema=SCHEMA))
    dst = str(tmp_path / "dst")
    d = mp.create_table(dst, SCHEMA, primary_key=["id", "dt"], options={"bucket": "1"})
    d.create_branch("copy")
    q = (spark.readStream.format("minipaimon").option("branch", "br").load(src)
         .writeStream.format("minipaimon").option("branch", "copy")
         .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start(dst))
    q.awaitTermination()
    assert sorted(mp.open_table(dst, options={"branch": "copy"}).to_arrow().column("id").to_pylist()) == [1, 2]
    assert mp.open_table(dst).to_arrow().num_rows == 0


def test_connector_objects_take_the_branch_option_through_pickling(tmp_path: Path) -> None:
    """Without a session: the data source's writer and reader, pickled as Spark ships them,
    write and read the branch the option names; ``branch`` = main is the table itself (and
    creates it on a first write, never storing the option)."""
    from tests.spark.test_connector_objects import batch, read_all, write_job

    path = tmp_path / "t"
    write_job(path, [[batch([1, 2])]], branch="main")
    t = mp.open_table(str(path))
    assert "branch" not in t.options()
    t.create_tag("t1")
    t.create_branch("b", "t1")
    write_job(path, [[batch([3])], [batch([4])]], branch="b")
    assert sorted(read_all(path, branch="b").column("id").to_pylist()) == [1, 2, 3, 4]
    assert sorted(read_all(path).column("id").to_pylist()) == [1, 2]
    assert sorted(read_all(path, branch="b", **{"scan.tag-name": "t1"}).column("id").to_pylist()) == [1, 2]


def test_a_branch_named_in_the_path_as_paimon_identifies_it(spark: Any, tmp_path: Path) -> None:
    """``<table>$branch_<name>`` (Paimon's identifier of a branch) reads and writes the
    branch, also with a catalog name and before a system table's suffix; it must agree
    with a ``branch`` option; ``$branch_main`` is the table itself."""
    warehouse = str(tmp_path / "wh")
    t = mp.Catalog(warehouse).create_table("shop.orders", SCHEMA, primary_key=["id", "dt"], options={"bucket": "1"})
    t.write(pa.table({"id": [1], "v": ["main"], "dt": ["d"]}, schema=SCHEMA))
    t.create_branch("audit")
    path = t.path
    batch = spark.createDataFrame([(2, "b", "d")], "id bigint, v string, dt string")
    batch.write.format("minipaimon").mode("append").save(f"{path}$branch_audit")
    assert sorted(mp.open_table(path, options={"branch": "audit"}).to_arrow().column("id").to_pylist()) == [2]
    assert _ids(spark.read.format("minipaimon").load(path)) == [1]
    assert _ids(spark.read.format("minipaimon").load(f"{path}$branch_audit")) == [2]
    assert _ids(spark.read.format("minipaimon").load(f"{path}$branch_main")) == [1]
    by_name = spark.read.format("minipaimon").option("warehouse", warehouse)
    assert _ids(by_name.load("shop.orders$branch_audit")) == [2]
    snapshots = by_name.load("shop.orders$branch_audit$snapshots").collect()
    assert [(r.snapshot_id, r.commit_kind) for r in snapshots] == [(1, "APPEND")]
    assert _ids(minipaimon_spark.table(spark, f"{path}$branch_audit")) == [2]
    assert _ids(spark.read.format("minipaimon").option("branch", "audit").load(f"{path}$branch_audit")) == [2]
    with pytest.raises(Exception, match="names branch 'audit' and the option 'branch' 'other'"):
        spark.read.format("minipaimon").option("branch", "other").load(f"{path}$branch_audit").collect()
    with pytest.raises(Exception, match="invalid branch name '..'"):
        batch.write.format("minipaimon").mode("append").save(f"{path}$branch_..")
    with pytest.raises(Exception, match="BranchNotFoundError|no branch 'nope'"):
        spark.read.format("minipaimon").load(f"{path}$branch_nope").collect()
    assert mp.open_table(path).branches() == ["audit"]
    assert sorted(mp.open_table(path).to_arrow().column("id").to_pylist()) == [1]
