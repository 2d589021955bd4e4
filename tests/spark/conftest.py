"""One shared local Spark session for the connector's end-to-end tests (one a test process:
scripts/test.sh runs two pytest-xdist workers).

The session reads the repository's ``spark-conf/`` (``SPARK_CONF_DIR``), so tests run with
the settings users get. It never calls ``minipaimon_spark.register``: every test that uses
``format("minipaimon")`` also proves auto-registration through ``pyspark_minipaimon``.

Tests marked ``smoke`` are the subset run on the oldest supported pyspark (4.0.x):
``pytest tests/spark -m smoke``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SPARK_CONF_DIR = REPO / "spark-conf"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "smoke: Spark tests also run on pyspark 4.0.x")
    # pyspark 4.x warns about pandas 3 on every session start; the connector uses no pandas.
    config.addinivalue_line(
        "filterwarnings", "ignore:PySpark does not yet fully support pandas:FutureWarning")


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """A local SparkSession (2 cores) configured by spark-conf/, shared by the process's tests; its
    catalog's managed tables go under the run's temporary directory, not the repository."""
    pytest.importorskip("pyspark")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ["SPARK_CONF_DIR"] = str(SPARK_CONF_DIR)
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2,2]")  # 2 threads; a failed task is retried once
        .appName("minipaimon-tests")
        .config("spark.sql.warehouse.dir", str(tmp_path_factory.mktemp("spark-warehouse")))
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture
def pushdown(spark: object) -> Iterator[None]:
    """Filter pushdown on for one test (the session default comes from spark-conf)."""
    from minipaimon_spark import FILTER_PUSHDOWN_CONF

    conf = spark.conf  # type: ignore[attr-defined]
    before = conf.get(FILTER_PUSHDOWN_CONF, "false")
    conf.set(FILTER_PUSHDOWN_CONF, "true")
    yield
    conf.set(FILTER_PUSHDOWN_CONF, before)


@pytest.fixture
def no_pushdown(spark: object) -> Iterator[None]:
    """Filter pushdown off for one test."""
    from minipaimon_spark import FILTER_PUSHDOWN_CONF

    conf = spark.conf  # type: ignore[attr-defined]
    before = conf.get(FILTER_PUSHDOWN_CONF, "false")
    conf.set(FILTER_PUSHDOWN_CONF, "false")
    yield
    conf.set(FILTER_PUSHDOWN_CONF, before)


@pytest.fixture(params=["s3", "azure"])
def object_store(request: pytest.FixtureRequest) -> tuple[str, dict[str, str]]:
    """(a fresh warehouse root, its connection options) on moto's S3 or on Azurite
    (tests/conftest.py): the same Spark test on each object store."""
    if request.param == "s3":
        server = request.getfixturevalue("moto_server")
        return f"s3://{server.create_bucket()}/wh", server.options()
    azurite = request.getfixturevalue("azurite_server")
    return f"az://{azurite.create_container()}/wh", azurite.options()
