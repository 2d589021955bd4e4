#!/usr/bin/env bash
# Run every minipaimon benchmark with its references side by side; results in bench/results/.
#
#   bench/run_all.sh            # full run (~8 min on the 2-core box)
#   bench/run_all.sh --quick    # fewer repetitions, no slow peers (~2 min)
#
# Environment: PYTHON (default .venv/bin/python, minipaimon installed), and see bench/common.py
# for MINIPAIMON_BENCH_PY (peers' venv), MINIPAIMON_REF_BENCH, MINIPAIMON_BENCH_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-.venv/bin/python}"
if [[ "${1:-}" == "--quick" ]]; then
  export MINIPAIMON_BENCH_TAG="${MINIPAIMON_BENCH_TAG:-quick}"   # results/<name>-quick.json
  "$PY" bench/bench_commits.py --reps 1
  "$PY" bench/bench_append.py --reps 3
  "$PY" bench/bench_pk.py --reps 1 --no-slow --rss-rows 3000000
else
  "$PY" bench/bench_commits.py
  "$PY" bench/bench_append.py
  "$PY" bench/bench_pk.py
fi
"$PY" bench/summarize.py
