#!/usr/bin/env bash
# Sets up .venv (the package with PySpark) if needed and runs the ETL demo on local Spark,
# writing its table under ./warehouse of the directory you run it from.
set -euo pipefail
here=$(pwd)
root=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-python3}
if [ ! -x "$root/.venv/bin/python" ]; then "$PY" -m venv "$root/.venv"; fi
"$root/.venv/bin/python" -m pip install -q --disable-pip-version-check \
    --config-settings editable_mode=compat -e "$root[spark]"
export SPARK_CONF_DIR="$root/spark-conf"
cd "$here"
exec "$root/.venv/bin/python" -m minipaimon_spark.demo --warehouse "$here/warehouse" "$@"
