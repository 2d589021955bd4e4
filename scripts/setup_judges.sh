#!/usr/bin/env bash
# Creates the venvs of the Apache Paimon clients that judge minipaimon's tables in the interop
# tests (tests/interop), one venv per judge, under .judges/ (or $MINIPAIMON_JUDGES_DIR):
#
#   pypaimon21  Apache Paimon's Python API            pypaimon==2.1.*
#   rust        paimon-rust through DataFusion SQL    pypaimon-rust==0.4.*
#   java09      Paimon's Java engine (core 0.9): the bridge jar bundled in pypaimon==0.2.0,
#               run on `java` (17) with the Hadoop/netty jars of .venv's PySpark (the tests
#               pass them as JUDGE_PYSPARK_JARS), so no second PySpark is installed here.
#
# Idempotent: a venv whose .installed stamp names the same requirements is kept as is, so a
# second run takes well under a second. A changed requirement rebuilds that venv only.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
DIR=${MINIPAIMON_JUDGES_DIR:-.judges}

judge() {  # judge NAME REQUIREMENT...
  local name=$1 venv="$DIR/$1"; shift
  local want="$*"
  if [ -x "$venv/bin/python" ] && [ "$(cat "$venv/.installed" 2>/dev/null)" = "$want" ]; then
    return
  fi
  echo "== judge $name: $want"
  rm -rf "$venv"
  "$PY" -m venv "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check "$@"
  echo "$want" > "$venv/.installed"  # written last: an interrupted install is redone
}

judge pypaimon21 "pypaimon==2.1.*"
judge rust "pypaimon-rust==0.4.*" "pyarrow"
judge java09 "pypaimon==0.2.0"

if ! command -v java >/dev/null; then
  echo "setup_judges.sh: no 'java' on PATH: the Java judge (java09) needs a JDK/JRE 17" >&2
  exit 1
fi
