"""Fixtures of the cluster tests: an S3 server, a Spark standalone cluster on 127.0.0.1 and a
SparkSession that drives it.

These tests are marked ``cluster`` and deselected from the main run (pyproject's addopts):
a process holds one SparkContext, so they cannot share a process with the local session of
tests/spark. Run them on their own (scripts/test.sh does)::

    pytest -m cluster tests/cluster

The executors are separate JVMs started by the workers; their Python (PYSPARK_PYTHON, this
interpreter) must have minipaimon installed, which the session fixture checks first. The S3
server is moto's (tests/conftest.py); every node reaches it through the AWS_* variables of
spark-conf/cluster.env, with AWS_ENDPOINT_URL pointing at the server.
"""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.cluster.spark_cluster import SPARK_CONF_DIR, SparkCluster, node_env, start_cluster
from tests.s3_servers import S3Server


@pytest.fixture(scope="session")
def host_env(moto_server: S3Server) -> dict[str, str]:
    """The host-specific variables of this machine's cluster (the rest is cluster.env)."""
    return {"AWS_ENDPOINT_URL": moto_server.endpoint, "SPARK_CONF_DIR": str(SPARK_CONF_DIR),
            "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}


@pytest.fixture(scope="session")
def spark_cluster(tmp_path_factory: pytest.TempPathFactory,
                  host_env: dict[str, str]) -> Iterator[SparkCluster]:
    """A master and two one-core workers on 127.0.0.1, stopped (by process group) at the end."""
    cluster = start_cluster(tmp_path_factory.mktemp("spark-cluster"), host_env, workers=2)
    yield cluster
    cluster.stop()


@pytest.fixture(scope="session")
def driver_env(host_env: dict[str, str]) -> Iterator[dict[str, str]]:
    """This process gets a node's environment (cluster.env + host_env) for the session: it
    is the driver, and it reads the tables back through minipaimon_core."""
    saved = dict(os.environ)
    env = {**node_env(host_env), "PYSPARK_DRIVER_PYTHON": sys.executable}
    os.environ.update(env)
    yield env
    os.environ.clear()
    os.environ.update(saved)


@pytest.fixture(scope="session")
def warehouse(moto_server: S3Server, driver_env: dict[str, str]) -> str:
    """$MINIPAIMON_WAREHOUSE of cluster.env, its bucket created on the server."""
    root = driver_env["MINIPAIMON_WAREHOUSE"]
    moto_server.create_bucket(root.split("://", 1)[1].split("/", 1)[0])
    return root


@pytest.fixture
def table_path(warehouse: str) -> str:
    """A fresh table path under the warehouse."""
    return f"{warehouse}/t-{uuid.uuid4().hex[:12]}"


@pytest.fixture(scope="module")
def cluster_spark(spark_cluster: SparkCluster, warehouse: str) -> Iterator[Any]:
    """A SparkSession in this process whose executors run on the cluster's workers.

    Fails first, with a clear message, if the executors' Python imports minipaimon from
    elsewhere than this interpreter.
    """
    pytest.importorskip("pyspark")
    from pyspark.sql import SparkSession

    session = (SparkSession.builder.master(spark_cluster.master_url)
               .appName("minipaimon-cluster-tests").getOrCreate())
    try:
        session.sparkContext.setLogLevel("ERROR")
        _check_executors(session, spark_cluster)
        yield session
    finally:
        session.stop()


def _check_executors(spark: Any, cluster: SparkCluster) -> None:
    """Every executor runs a Python that imports this minipaimon_core (not another copy)."""
    import minipaimon_core

    def where(_: Any) -> Any:
        import socket

        import minipaimon_core as core

        yield (core.__file__, os.getpid(), socket.gethostname())

    seen = spark.sparkContext.parallelize(range(4), 4).mapPartitions(where).collect()
    files = {f for f, _, _ in seen}
    assert files == {minipaimon_core.__file__}, (
        f"the executors import minipaimon_core from {files}, the driver from "
        f"{minipaimon_core.__file__}: install the package into PYSPARK_PYTHON\n{cluster.logs()}")
