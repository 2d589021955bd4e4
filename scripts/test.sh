#!/usr/bin/env bash
# Sets up .venv (latest PySpark 4.x), .venv-spark40 (PySpark 4.0.x), the judges of the
# interop tests (.judges/, scripts/setup_judges.sh) and Azurite, the Azure Storage emulator
# of the Azure tests (.azurite/, from npm), if needed, then runs ruff, mypy, the whole
# test suite on the latest Spark, the cluster tests (a Spark standalone cluster on 127.0.0.1
# and an S3 server, in their own pytest process), the interop tests (Apache Paimon's own
# clients read and write tables with minipaimon, in their own pytest process; a judge that
# is missing fails them here) and the Spark smoke tests on 4.0.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}

# compat editable mode: Spark finds the auto-registration shim (pyspark_minipaimon) with
# pkgutil.iter_modules, which does not see the default editable install's import hook.
setup() {  # setup VENV PYSPARK_SPEC
  if [ ! -x "$1/bin/python" ]; then "$PY" -m venv "$1"; fi
  "$1/bin/python" -m pip install -q --disable-pip-version-check \
    --config-settings editable_mode=compat -e ".[test]" "$2"
}

# Azurite from npm into .azurite/ (a pinned version; nothing to do when it is there). No
# install scripts run; the tests start it on 127.0.0.1 with telemetry off (tests/azurite.py).
AZURITE_VERSION=3.35.0
install_azurite() {
  if grep -qs "\"version\": \"$AZURITE_VERSION\"" .azurite/node_modules/azurite/package.json \
      && [ -x .azurite/node_modules/.bin/azurite-blob ]; then return; fi
  npm install --prefix .azurite --no-audit --no-fund --ignore-scripts --loglevel=error \
    "azurite@$AZURITE_VERSION"
}

# The judges and Azurite install beside the two venvs (they are downloads and unpacking into
# directories of their own; the venvs' editable installs build in this tree, one at a time).
# Each one's output is printed when it ends; a failed one stops the run.
logs=$(mktemp -d)
bash scripts/setup_judges.sh >"$logs/judges" 2>&1 & judges=$!
install_azurite >"$logs/azurite" 2>&1 & azurite=$!
trap 'kill "$judges" "$azurite" 2>/dev/null || true' EXIT  # a failed venv setup stops them
finished() {  # finished NAME PID: wait for one, print its output, stop the run if it failed
  local status=0
  wait "$2" || status=$?
  cat "$logs/$1"
  if [ "$status" -ne 0 ]; then echo "setting up the $1 failed (exit $status)" >&2; exit 1; fi
}
setup .venv "pyspark>=4.0"
setup .venv-spark40 "pyspark==4.0.*"
finished judges "$judges"
finished azurite "$azurite"
trap - EXIT
rm -rf "$logs"
export MINIPAIMON_REQUIRE_AZURITE=1  # an Azure test that finds no Azurite fails, never skips

echo "== ruff"; .venv/bin/ruff check .
echo "== mypy"; .venv/bin/mypy
echo "== pytest (PySpark $(.venv/bin/python -c 'import pyspark; print(pyspark.__version__)'))"
# Two workers (pytest-xdist), each with its own local Spark session and servers (on ports of
# their own): the suite mostly waits (on child processes, servers, Spark's JVM), so two
# workers on two cores take ~21 minutes where one took ~33.
.venv/bin/python -m pytest -q -p no:cacheprovider -n 2 "$@"
# The executors run .venv/bin/python (PYSPARK_PYTHON = the pytest interpreter): the package
# is installed there, as on a real cluster's nodes.
echo "== pytest cluster (Spark standalone on 127.0.0.1, tables on S3 and one job on Azure)"
.venv/bin/python -m pytest -q -p no:cacheprovider -m cluster tests/cluster
# The interop and smoke runs on two workers too, a test file to a worker: their module
# fixtures (tables the judges write) are made once (measured: interop 4.6 min where one
# worker took 7, smoke 2.1 where it took 3).
echo "== pytest interop (pypaimon 2.1, paimon-rust 0.4, Paimon Java 0.9 as judges)"
MINIPAIMON_REQUIRE_JUDGES=1 .venv/bin/python -m pytest -q -p no:cacheprovider -n 2 --dist loadfile \
  -m interop tests/interop
echo "== pytest smoke (PySpark $(.venv-spark40/bin/python -c 'import pyspark; print(pyspark.__version__)'))"
.venv-spark40/bin/python -m pytest -q -p no:cacheprovider -n 2 --dist loadfile -m smoke tests/spark
