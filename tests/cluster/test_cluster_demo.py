"""The demo job, submitted to the loopback cluster exactly as docker-compose.yml's driver
submits it (``spark-submit --master … scripts/demo_job.py``, warehouse from cluster.env),
on S3.

This module runs before test_cluster_jobs.py (file order), while no other application holds
the workers' cores; the demo's driver is a separate ``spark-submit`` process.
"""

from __future__ import annotations

import subprocess

import pytest

import minipaimon_core as mp
from tests.cluster.spark_cluster import DEMO, SparkCluster, demo_argv, spark_home

pytestmark = pytest.mark.cluster


def test_the_demo_job_on_the_cluster_against_s3(spark_cluster: SparkCluster,
                                               warehouse: str) -> None:
    argv = demo_argv(str(spark_home() / "bin" / "spark-submit"), spark_cluster.master_url, str(DEMO))
    done = subprocess.run(argv, env=spark_cluster.env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}\n{spark_cluster.logs()}"
    assert f"load the first day into {warehouse}/demo.db/orders" in done.stdout

    table = mp.catalog(warehouse).table("demo.orders")
    rows = table.to_arrow().sort_by("order_id").to_pylist()
    assert [(r["order_id"], r["customer"], r["amount"]) for r in rows] == [
        (1, "alice", 12.5), (2, "bob", 9.0), (3, "carol", 30.0), (5, "erin", 15.0)]
    assert [s.commitKind for s in table.snapshots()][:2] == ["APPEND", "APPEND"]
    # the job ran on the cluster: the master lists it as a completed application
    status = spark_cluster.status()
    apps = [*status["activeapps"], *status["completedapps"]]  # type: ignore[misc]
    assert any(a["name"] == "minipaimon-demo" for a in apps), status
