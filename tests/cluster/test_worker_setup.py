"""Spark sessions whose Python workers lack minipaimon (issue 30 item 1), end to end.

Each case is a driver process of its own (one SparkContext per process, as the other
cluster tests) with ``PYSPARK_PYTHON`` pointing at a wrapper of this interpreter that
cannot import minipaimon (no site-packages processing, so the install's .pth is ignored;
pyspark and pyarrow are on the path). The driver itself imports minipaimon.

- every worker lacks it: ``register()`` raises InstallationError naming PYSPARK_PYTHON;
- only the executors (task workers) lack it: the read and the write fail with the one-line
  ModuleNotFoundError of minipaimon_spark.common.worker_guard, naming PYSPARK_PYTHON, and the
  write leaves no snapshot.

Marked ``cluster``: run with ``pytest -m cluster tests/cluster`` (scripts/test.sh does).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("pyspark")

pytestmark = pytest.mark.cluster

REPO = Path(__file__).resolve().parents[2]

DRIVER = textwrap.dedent('''
    import json, os, sys
    sys.path.insert(0, sys.argv[3])  # this checkout, for the driver only (never the workers)
    import pyarrow as pa
    from pyspark.sql import SparkSession
    import minipaimon_core as mp, minipaimon_spark

    path, out = sys.argv[1], sys.argv[2]
    spark = SparkSession.builder.master("local[1]").getOrCreate()
    spark.sparkContext.setLogLevel("OFF")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    mp.create_table(path, schema).write(pa.table({"id": [1], "v": ["a"]}, schema=schema))
    found = {}
    for name, call in (
            ("register", lambda: minipaimon_spark.register(spark)),
            ("read", lambda: spark.read.format("minipaimon").load(path).collect()),
            ("write", lambda: spark.createDataFrame([(2, "b")], "id long, v string")
             .write.format("minipaimon").mode("append").save(path))):
        try:
            call()
            found[name] = None
        except Exception as e:
            found[name] = [type(e).__name__, str(e)]
    found["snapshots"] = len(mp.open_table(path).snapshots())
    spark.stop()
    open(out, "w").write(json.dumps(found))
''')


def wrapper(tmp_path: Path, executors_only: bool) -> Path:
    """A PYSPARK_PYTHON whose workers (or only its task workers) cannot import minipaimon."""
    site = next(p for p in sys.path if p.endswith("site-packages"))
    without = (f'PYTHONPATH="$PYTHONPATH:{site}" exec "{sys.executable}" -S "$@"')
    with_it = f'PYTHONPATH="$PYTHONPATH:{REPO}" exec "{sys.executable}" "$@"'
    body = (f'case " $* " in *" pyspark.worker "*) {without} ;; *) {with_it} ;; esac'
            if executors_only else without)
    script = tmp_path / ("python-executors-without" if executors_only else "python-without")
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(0o755)
    return script


def run_driver(tmp_path: Path, executors_only: bool) -> dict:
    (tmp_path / "driver.py").write_text(DRIVER)
    # PYTHONPATH would be inherited by the workers; PYSPARK_DRIVER_PYTHON (set for the whole
    # session by conftest's driver_env when the cluster tests ran first) would run the
    # driver-side Python workers with this interpreter, which imports minipaimon.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYSPARK_DRIVER_PYTHON")}
    env.update(PYSPARK_PYTHON=str(wrapper(tmp_path, executors_only)), SPARK_CONF_DIR=str(REPO / "spark-conf"))
    # cwd is not the checkout: a worker would import minipaimon from its working directory
    done = subprocess.run([sys.executable, str(tmp_path / "driver.py"), str(tmp_path / "t"),
                           str(tmp_path / "out.json"), str(REPO)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads((tmp_path / "out.json").read_text())


def test_register_names_the_interpreter_when_no_worker_has_minipaimon(tmp_path: Path) -> None:
    found = run_driver(tmp_path, executors_only=False)
    kind, message = found["register"]
    assert kind == "InstallationError" and len(message.splitlines()) == 1
    assert "Spark's Python workers cannot import minipaimon" in message and "PYSPARK_PYTHON" in message
    assert found["snapshots"] == 1


def test_executors_without_minipaimon_fail_with_one_line_naming_pyspark_python(tmp_path: Path) -> None:
    found = run_driver(tmp_path, executors_only=True)
    assert found["register"] is None  # the driver-side workers have it
    for name in ("read", "write"):
        kind, message = found[name]
        lines = message.splitlines()
        assert any(line.startswith("ModuleNotFoundError: minipaimon is not installed in the Python that "
                                   "runs this Spark worker") and "PYSPARK_PYTHON" in line for line in lines), message
        assert len(lines) <= 6, message
    assert found["snapshots"] == 1  # the failed write committed nothing
