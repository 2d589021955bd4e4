"""``minipaimon_spark.compact``, reads and SQL procedures over Spark Connect.

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
    spark.stop()
''')


def test_compact_read_and_procedures_over_spark_connect(tmp_path: Path) -> None:
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    table = mp.create_table(str(tmp_path / "t"), schema, primary_key=["id"],
                            options={"bucket": "2", "write-only": "true"})
    for i in range(3):
        table.write(pa.table({"id": list(range(10)), "v": [str(i)] * 10}, schema=schema))
    script = tmp_path / "client.py"
    script.write_text(CLIENT)
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1",
           "PYTHONPATH": os.pathsep.join(sys.path)}
    env.pop("SPARK_REMOTE", None)
    proc = subprocess.run([sys.executable, str(script), table.path], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = dict(line.split(" ", 1) for line in proc.stdout.splitlines() if " " in line)
    assert out == {"rows": "10", "compact": "4", "sql": "4"}
    latest = mp.open_table(table.path).latest_snapshot()
    assert latest is not None and latest.commitKind == "COMPACT"
    assert mp.open_table(table.path).tags() == {"after": 4}
