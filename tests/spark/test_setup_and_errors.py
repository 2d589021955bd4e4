"""Issue 30 items 1 and 2: what a Spark user sees when something is wrong, and what
installing gives without ``register()``.

- A missing table, an unknown option and a column of the wrong type fail at ``load()`` /
  ``save()`` with Spark's framing and the one-line minipaimon error: at most 6 lines, no
  frame of our internals, nothing written.
- A worker whose Python lacks the package: the pickled reader says so in one line naming
  PYSPARK_PYTHON (here: unpickled by a real interpreter without minipaimon; a whole Spark
  session with such workers is tests/cluster/test_worker_setup.py).
- Without ``register()`` a partition filter is pushed down when
  ``spark.sql.python.filterPushdown.enabled`` is on (spark-conf sets it), and not when it
  is off: that setting, with the SQL procedures, is what ``register()`` adds (README).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

pytest.importorskip("pyspark")

from pyspark import cloudpickle  # noqa: E402
from pyspark.sql.types import LongType, StringType, StructField, StructType  # noqa: E402

import minipaimon_core as mp  # noqa: E402
import minipaimon_spark  # noqa: E402
from minipaimon_core.metadata.manifest_io import live_files  # noqa: E402
from minipaimon_spark.source import MiniPaimonDataSource  # noqa: E402
from tests.spark.conftest import SPARK_CONF_DIR  # noqa: E402

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()), ("dt", pa.string())])
SPARK_SCHEMA = StructType([StructField("id", LongType(), False), StructField("v", StringType()),
                           StructField("dt", StringType())])
MAX_LINES = 6


def table(path: Path) -> mp.Table:
    t = mp.create_table(str(path), SCHEMA, partition_by=["dt"])
    t.write(pa.table({"id": [1, 2], "v": ["a", "b"], "dt": ["d1", "d2"]}, schema=SCHEMA))
    return t


def listing(root: Path) -> set[str]:
    return {os.path.join(d, n) for d, _, names in os.walk(root) for n in names}


def short(error: BaseException, *expected: str) -> str:
    """``error``'s message, checked: at most MAX_LINES lines, the expected text, and no
    traceback frame of minipaimon's code but the one line that re-raises it."""
    text = str(error)
    lines = text.splitlines()
    assert len(lines) <= MAX_LINES, text
    for part in expected:
        assert part in text, text
    frames = [i for i, line in enumerate(lines) if line.strip().startswith("File ")]
    assert len(frames) <= 1, text
    for i in frames:  # the method Spark called, raising the error again: nothing deeper
        assert "minipaimon_core" not in lines[i] and "raise error.with_traceback(None)" in lines[i + 1], text
    return text


@pytest.mark.smoke
def test_a_missing_table_fails_at_load_in_a_few_lines(spark: Any, tmp_path: Path) -> None:
    with pytest.raises(Exception) as info:
        spark.read.format("minipaimon").load(str(tmp_path / "nope"))
    short(info.value, "TableNotFoundError: no minipaimon table at", str(tmp_path / "nope"))
    assert not (tmp_path / "nope").exists()


@pytest.mark.smoke
def test_an_unknown_read_option_fails_at_load_in_a_few_lines(spark: Any, tmp_path: Path) -> None:
    table(tmp_path / "t")
    with pytest.raises(Exception) as info:
        spark.read.format("minipaimon").option("scan.snapshot_id", "1").load(str(tmp_path / "t"))
    short(info.value, "UnsupportedOptionError: unknown option 'scan.snapshot_id'; did you mean 'scan.snapshot-id'?")


def test_a_snapshot_that_does_not_exist_fails_in_a_few_lines(spark: Any, tmp_path: Path) -> None:
    table(tmp_path / "t")
    with pytest.raises(Exception) as info:
        spark.read.format("minipaimon").option("scan.snapshot-id", "9").load(str(tmp_path / "t")).collect()
    short(info.value, "SnapshotNotFoundError", "9")


@pytest.mark.smoke
def test_an_unknown_write_option_fails_at_save_and_writes_nothing(spark: Any, tmp_path: Path) -> None:
    df = spark.createDataFrame([(1, "a", "d1")], "id long, v string, dt string")
    with pytest.raises(Exception) as info:
        df.write.format("minipaimon").mode("append").option("buckett", "2").save(str(tmp_path / "new"))
    short(info.value, "UnsupportedOptionError: unknown option 'buckett'; did you mean 'bucket'?")
    assert not (tmp_path / "new").exists()
    t = table(tmp_path / "t")
    before = listing(tmp_path / "t")
    with pytest.raises(Exception) as info:
        df.write.format("minipaimon").mode("append").option("bucket-keyy", "id").save(t.path)
    short(info.value, "UnsupportedOptionError: unknown option 'bucket-keyy'")
    assert listing(tmp_path / "t") == before


@pytest.mark.smoke
def test_a_column_of_the_wrong_type_fails_at_save_and_writes_nothing(spark: Any, tmp_path: Path) -> None:
    t = table(tmp_path / "t")
    before = listing(tmp_path / "t")
    df = spark.createDataFrame([(3, 5, "d1")], "id long, v long, dt string")
    with pytest.raises(Exception) as info:
        df.write.format("minipaimon").mode("append").save(t.path)
    short(info.value, "SchemaMismatchError: column 'v' has type int64, the table has string")
    assert listing(tmp_path / "t") == before


def test_a_bug_keeps_its_whole_traceback(tmp_path: Path) -> None:
    """Only minipaimon's typed errors lose their frames: anything else keeps them."""
    class Broken(dict):  # options whose lookup fails as a bug would
        def items(self):  # type: ignore[override]
            raise ZeroDivisionError("a bug")

    with pytest.raises(ZeroDivisionError) as info:
        MiniPaimonDataSource(Broken(path="x")).schema()
    assert info.value.__traceback__ is not None and info.traceback[-1].name == "items"


def test_a_worker_without_minipaimon_says_what_to_install(tmp_path: Path) -> None:
    """Pickled as Spark pickles it (cloudpickle), a reader is unpickled by this venv's
    Python with no site-packages processing: pyspark and pyarrow import, minipaimon (an
    editable install found through a .pth file, and this checkout) does not."""
    t = table(tmp_path / "t")
    ds = MiniPaimonDataSource({"path": t.path})
    payload = cloudpickle.dumps((ds, ds.reader(SPARK_SCHEMA), ds.reader(SPARK_SCHEMA).partitions()))
    (tmp_path / "payload").write_bytes(payload)
    site = next(p for p in sys.path if p.endswith("site-packages"))
    code = ("import pickle, sys; sys.path.append(sys.argv[2]); "
            "pickle.loads(open(sys.argv[1], 'rb').read())")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-S", "-c", code, str(tmp_path / "payload"), site],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("ModuleNotFoundError: minipaimon is not installed in the Python that runs "
                           "this Spark worker"), done.stderr
    assert "PYSPARK_PYTHON" in last and "every node" in last and "No module named 'minipaimon_spark'" in last
    frames = [line for line in done.stderr.splitlines() if line.strip().startswith("File ")]
    assert len(frames) == 2 and "worker_guard.py" in frames[1], done.stderr  # <string>, restore
    # where the package is there, the same bytes give back working objects
    source, reader, partitions = cloudpickle.loads(payload)
    assert isinstance(source, MiniPaimonDataSource) and source.options["path"] == t.path
    rows = [r for p in partitions for b in reader.read(p) for r in b.to_pylist()]
    assert sorted(r["id"] for r in rows) == [1, 2]


def _hide_partition(t: mp.Table, dt: str) -> None:
    """Move the data files of partition ``dt`` away: a read that plans them fails."""
    spec = t.context().partition_spec()
    for e in live_files(t.manifests, t.latest_snapshot()):
        if spec.path(list(e.partition)) == f"dt={dt}":
            path = t.layout.data_file_path(spec.path(list(e.partition)), e.bucket, e.file.fileName)
            os.rename(path, path + ".away")


def test_without_register_a_partition_filter_is_pushed_when_the_setting_is_on(
        spark: Any, tmp_path: Path, pushdown: None) -> None:
    """The session never called register() (tests/spark/conftest.py): the auto-registered
    source prunes the other partition, whose files are gone, so the read succeeds."""
    if not minipaimon_spark.supports_filter_pushdown():
        pytest.skip("Python data source filter pushdown arrived in Spark 4.1")
    defaults = (SPARK_CONF_DIR / "spark-defaults.conf").read_text(encoding="utf-8").splitlines()
    assert [minipaimon_spark.FILTER_PUSHDOWN_CONF, "true"] in [line.split() for line in defaults]
    t = table(tmp_path / "t")
    _hide_partition(t, "d2")
    rows = spark.read.format("minipaimon").load(t.path).filter("dt = 'd1'").collect()
    assert [r.id for r in rows] == [1]


def test_with_the_setting_off_nothing_is_pushed_and_register_turns_it_on(
        spark: Any, tmp_path: Path, no_pushdown: None) -> None:
    if not minipaimon_spark.supports_filter_pushdown():
        pytest.skip("Python data source filter pushdown arrived in Spark 4.1")
    t = table(tmp_path / "t")
    _hide_partition(t, "d2")
    with pytest.raises(Exception, match="data file .* is missing"):
        spark.read.format("minipaimon").load(t.path).filter("dt = 'd1'").collect()
    minipaimon_spark.register(spark)  # what it adds: the setting (and the SQL procedures)
    assert spark.conf.get(minipaimon_spark.FILTER_PUSHDOWN_CONF) == "true"
    rows = spark.read.format("minipaimon").load(t.path).filter("dt = 'd1'").collect()
    assert [r.id for r in rows] == [1]
    assert spark.sql(f"SELECT * FROM minipaimon_create_tag('{t.path}', 'v1')").collect()[0].tag == "v1"


def test_register_checks_the_workers_cheaply_once_they_run(spark: Any) -> None:
    minipaimon_spark.check_workers(spark)  # the workers of this session import minipaimon


def test_health_and_history_are_system_tables_in_spark(spark: Any, tmp_path: Path) -> None:
    t = table(tmp_path / "t")
    health = {r.check: r for r in spark.read.format("minipaimon").load(t.path + "$health").collect()}
    assert {"small files", "expiration", "orphan files", "deletion vectors"} <= set(health)
    history = spark.read.format("minipaimon").load(t.path + "$history").collect()
    assert [(r.snapshot_id, r.commit_kind, r.records_added) for r in history] == [(1, "APPEND", 2)]


def test_paimon_partition_option_defines_the_partitions(spark: Any, tmp_path: Path) -> None:
    df = spark.createDataFrame([(1, "a", "d1")], "id long, v string, dt string")
    path = str(tmp_path / "t")
    (df.write.format("minipaimon").mode("append").option("primary-key", "id,dt")
     .option("partition", "dt").option("bucket", "1").save(path))
    t = mp.open_table(path)
    assert t.primary_keys() == ["id", "dt"] and t.partition_keys() == ["dt"]
    with pytest.raises(Exception) as info:
        (df.write.format("minipaimon").mode("append").option("partition", "dt")
         .option("partition-keys", "v").save(str(tmp_path / "u")))
    short(info.value, "InvalidArgumentError", "disagree")


_REGISTER_TWICE = """
import sys
from pyspark.sql import SparkSession
import minipaimon_spark
spark = SparkSession.builder.master("local[1]").appName("register-once").getOrCreate()
minipaimon_spark.register(spark)
minipaimon_spark.register(spark)  # again: still no second registration
print(spark.read.format("minipaimon").load(sys.argv[1]).count())
spark.stop()
"""


@pytest.mark.smoke
def test_register_leaves_the_installed_source_alone_and_logs_no_warning(tmp_path: Path) -> None:
    """Issue 38 item 15: every session that called register() logged "WARN DataSourceManager:
    The data source minipaimon replaced a statically registered data source" (the demo
    printed it). A session of its own (the warning is the JVM's, at the users' log level of
    spark-conf/), as the demo starts one."""
    t = table(tmp_path / "t")
    env = {**os.environ, "SPARK_CONF_DIR": str(SPARK_CONF_DIR), "PYSPARK_PYTHON": sys.executable,
           "PYSPARK_DRIVER_PYTHON": sys.executable}
    done = subprocess.run([sys.executable, "-c", _REGISTER_TWICE, t.path], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "2"
    assert "replaced a statically registered data source" not in done.stderr, done.stderr[-3000:]
