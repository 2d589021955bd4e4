"""Apache Paimon's clients reading a 1M-row minipaimon primary-key table, vs minipaimon.

The table is the reference data (``bench_common``: 1M rows, then 100k upserts, half of them
updates), written by minipaimon into a primary-key table of 1 or 4 buckets: after the
upsert each bucket has two sorted runs, so every reader merges. Then, in the same run, each
reader reads the whole table ``--reps`` times and the median is kept:

* minipaimon: ``open_table(path).to_arrow()`` (open, plan, read);
* pypaimon 2.1 (pure Python), paimon-rust 0.4 (DataFusion SQL ``SELECT *``) and Paimon's
  Java engine 0.9 (the pypaimon 0.2.0 bridge, whose hand-over of rows to Python through
  py4j is most of its time: ``--java-reps``, default 1): the judge
  scripts of the interop tests (tests/interop/judges), one process per client, each read
  timed inside the client process from opening the catalog to the Arrow table (the process
  and JVM start are not counted).

Every client's result is checked (row count; the reference's check on minipaimon's read).
The judges are the venvs ``scripts/setup_judges.sh`` makes (``.judges/``, or
``$MINIPAIMON_JUDGES_DIR``).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import time

from common import ROOT, load, median, reference_data, scratch, timed, write_results

import minipaimon_core as mp

JUDGES_DIR = os.environ.get("MINIPAIMON_JUDGES_DIR") or os.path.join(ROOT, ".judges")
SCRIPTS = os.path.join(ROOT, "tests", "interop", "judges")
CLIENTS = ("pypaimon21", "rust", "java09")


def pyspark_jars() -> str | None:
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        return None
    return os.path.join(list(spec.submodule_search_locations)[0], "jars")


def client_reads(client: str, warehouse: str, table: str, reps: int, work: str) -> list[dict]:
    """``reps`` reads of ``table`` by ``client`` in one process: each job's result."""
    python = os.path.join(JUDGES_DIR, client, "bin", "python")
    if not os.path.exists(python):
        raise SystemExit(f"judge {client} is not set up in {JUDGES_DIR}: run scripts/setup_judges.sh")
    jobs = [{"op": "read", "warehouse": warehouse, "table": table,
             "out": os.path.join(work, f"{client}-{i}.arrow")} for i in range(reps)]
    jobs_path, results_path = os.path.join(work, f"{client}.json"), os.path.join(work, f"{client}-out.json")
    with open(jobs_path, "w") as f:
        json.dump(jobs, f)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["JUDGE_PYSPARK_JARS"] = pyspark_jars() or ""
    env.setdefault("JUDGE_JVM_ARGS", "-Xmx4g")
    subprocess.run([python, os.path.join(SCRIPTS, f"{client}.py"), jobs_path, results_path],
                   env=env, check=True, timeout=1800, stdout=subprocess.DEVNULL)
    with open(results_path) as f:
        results = json.load(f)
    for r in results:
        if not r["ok"]:
            raise SystemExit(f"{client} failed: {r['error']}\n{r.get('detail', '')}")
    for path in (j["out"] for j in jobs):
        os.remove(path)
    return results


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--upserts", type=int, default=100_000)
    p.add_argument("--buckets", type=int, nargs="+", default=[1, 4])
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--java-reps", type=int, default=1, help="the bridge takes ~45 s a read")
    args = p.parse_args()
    ref = reference_data()
    base, (upserts, _) = ref.base_table(args.rows), ref.upsert_table(args.rows, args.upserts)
    want_rows = args.rows + args.upserts // 2
    out: dict = {"rows": want_rows, "reps": args.reps, "by_buckets": {}}
    for buckets in args.buckets:
        warehouse = scratch(f"interop-read-{buckets}")
        t = mp.catalog(warehouse).create_table("bench.pk", base.schema, primary_key=["id"],
                                              options={"bucket": str(buckets), "write-only": "true"})
        t.write(base)
        t.write(upserts)
        times = []
        for _ in range(args.reps):
            got, timer = timed(lambda path=t.path: mp.open_table(path).to_arrow())
            times.append(timer.wall)
        ref.check_pk_result(got, args.rows, args.upserts)
        row = {"minipaimon_s": median(times), "load_minipaimon": load()}
        for client in CLIENTS:
            started = time.monotonic()
            reps = args.java_reps if client == "java09" else args.reps
            results = client_reads(client, warehouse, "bench.pk", reps, warehouse)
            assert all(r["rows"] == want_rows for r in results), (client, results)
            row[f"{client}_s"] = median(r["seconds"] for r in results)
            row[f"{client}_process_s"] = round(time.monotonic() - started, 2)
            row[f"load_{client}"] = load()
        for client in CLIENTS:
            row[f"{client}_vs_minipaimon"] = round(row[f"{client}_s"] / row["minipaimon_s"], 2)
        out["by_buckets"][str(buckets)] = row
        print(f"{buckets} bucket(s), {want_rows} rows: minipaimon {row['minipaimon_s']:.3f} s; "
              + ", ".join(f"{c} {row[f'{c}_s']:.3f} s ({row[f'{c}_vs_minipaimon']}x)" for c in CLIENTS),
              flush=True)
    print(write_results("interop_read", out))


if __name__ == "__main__":
    sys.exit(main())
