"""``minipaimon_spark.compact``, ``minipaimon_spark.merge``, reads and SQL procedures over
Spark Connect.

Spark Connect sessions have no SparkContext. The session is a local Spark Connect server
that pyspark starts itself (``remote("local[2]")``, bound to 127.0.0.1), in a child process:
a Connect server cannot start where the shared classic session already runs.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow as pa
import pytest

pytest.importorskip("pyspark")
pytest.importorskip("grpc")  # pyspark[connect]

import minipaimon_core as mp  # noqa: E402
from tests.spark.conftest import SPARK_CONF_DIR  # noqa: E402

CLIENT = textwrap.dedent('''
    import sys
    from pyspark.sql import SparkSession
    import minipaimon_spark
    path = sys.argv[1]
    spark = (SparkSession.builder.remote("local[2]")
             .config("spark.connect.grpc.binding.address", "127.0.0.1")
             .config("spark.ui.enabled", "false").getOrCreate())
    assert type(spark).__module__.startswith("pyspark.sql.connect"), type(spark)
    minipaimon_spark.register(spark)
    print("rows", spark.read.format("minipaimon").load(path).count())
    print("compact", minipaimon_spark.compact(spark, path, full=True))
    print("sql", spark.sql(f"SELECT * FROM minipaimon_create_tag('{path}', 'after')").collect()[0][1])
    source = spark.createDataFrame([(1, "m"), (50, "n")], "id long, v string")
    r = (minipaimon_spark.merge(spark, path, source, on="id")
         .when_matched_update_all().when_not_matched_insert_all().execute())
    print("merge", r.inserted, r.updated, r.deleted)
    spark.stop()
''')


def test_compact_merge_read_and_procedures_over_spark_connect(tmp_path: Path) -> None:
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    table = mp.create_table(str(tmp_path / "t"), schema, primary_key=["id"],
                            options={"bucket": "2", "write-only": "true"})
    for i in range(3):
        table.write(pa.table({"id": list(range(10)), "v": [str(i)] * 10}, schema=schema))
    script = tmp_path / "client.py"
    script.write_text(CLIENT)
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1",
           "PYTHONPATH": os.pathsep.join(sys.path), "SPARK_CONF_DIR": str(SPARK_CONF_DIR)}
    env.pop("SPARK_REMOTE", None)
    proc = subprocess.run([sys.executable, str(script), table.path], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = dict(line.split(" ", 1) for line in proc.stdout.splitlines() if " " in line)
    assert out == {"rows": "10", "compact": "4", "sql": "4", "merge": "1 1 0"}
    after = mp.open_table(table.path)
    assert after.snapshot(4).commitKind == "COMPACT"
    assert after.tags() == {"after": 4}
    rows = after.to_arrow().sort_by("id")
    assert rows.column("id").to_pylist() == [*range(10), 50]
    assert rows.column("v").to_pylist() == ["2", "m", *["2"] * 8, "n"]
