"""Commits under contention (issue 32 item 29): W writer processes each commit C small
appends (10 rows, two-phase ``new_write`` -> ``prepare_commit`` -> ``new_commit().commit``,
then ``after_commit``: compaction and expiration as every writer runs them) into one table,
on local disk and on SeaweedFS (tests/s3_servers.py), an append table and a primary-key
table with one bucket (``bucket`` 1: the default of minipaimon's primary-key tables until
dynamic buckets; a dynamic-bucket table is ``--table-options '{"bucket": "-1"}'``).
Reports per commit() call: p50, p95, p99, max, the sum of all commit() times, the most
attempts one commit needed, commits that gave up (RETRIES_EXHAUSTED), the wall time of all
writers and the 1-minute load average before the run. ``--before DIR`` (and ``--code
LABEL=DIR``, repeatable) runs the same workers on other checkouts of the code (e.g. ``git
archive`` of main) in the same run; ``--repeat N`` runs every code N times, in a rotating
order so that each sees the same share of the machine's other load.

usage: python bench/bench_contention.py [--writers 8] [--commits 200] [--s3-commits 100]
       [--before DIR] [--code LABEL=DIR ...] [--repeat 1] [--stores local,s3]
       [--kinds append,pk] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

WORKER = r"""
import json, sys, time
import pyarrow as pa
import minipaimon_core as mp
path, proc, n, options = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), json.loads(sys.argv[4])
t = mp.open_table(path, options=options)
pk = bool(t.primary_keys())
out = []
for i in range(n):
    ids = [proc * 1_000_000 + i * 10 + j for j in range(10)]
    if pk:
        ids = [k % 50 if j % 2 else k for j, k in enumerate(ids)]  # half the keys shared
    data = pa.table({"id": pa.array(ids, pa.int64()), "v": pa.array([1.0] * 10)})
    w = t.new_write(); w.write(data); msgs = w.prepare_commit()
    c = t.new_commit()
    start = time.perf_counter()
    try:
        c.commit(msgs, 0)
        gave_up = False
    except mp.CommitConflictError:
        gave_up = True
    out.append((time.perf_counter() - start, getattr(c, "attempts", None), gave_up))
    if not gave_up:
        t.after_commit(msgs)
print(json.dumps(out))
"""


def percentile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def run(code: str, path: str, kind: str, writers: int, commits: int, options: dict[str, str],
        table_options: dict[str, str]) -> dict[str, Any]:
    import pyarrow as pa

    sys.path.insert(0, code)
    import minipaimon_core as mp

    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.float64())])
    mp.create_table(path, schema, primary_key=["id"] if kind == "pk" else None,
                    options={**options, **table_options})
    env = {**os.environ, "PYTHONPATH": code}
    start = time.perf_counter()
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, path, str(p), str(commits), json.dumps(options)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=code)
             for p in range(writers)]
    rows: list[tuple[float, int | None, bool]] = []
    for p in procs:
        out, err = p.communicate()
        if p.returncode != 0:
            raise RuntimeError(err[-3000:])
        rows += [tuple(r) for r in json.loads(out.strip().splitlines()[-1])]
    wall = time.perf_counter() - start
    lat = [r[0] * 1000 for r in rows]
    attempts = [r[1] for r in rows if r[1] is not None]
    return {"commits": len(rows), "wall_s": round(wall, 1), "p50_ms": round(percentile(lat, 0.5), 1),
            "p95_ms": round(percentile(lat, 0.95), 1), "p99_ms": round(percentile(lat, 0.99), 1),
            "max_ms": round(max(lat), 1), "commit_sum_s": round(sum(lat) / 1000, 1),
            "max_attempts": max(attempts) if attempts else None,
            "mean_attempts": round(sum(attempts) / len(attempts), 2) if attempts else None,
            "gave_up": sum(1 for r in rows if r[2])}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--writers", type=int, default=8)
    ap.add_argument("--commits", type=int, default=200)
    ap.add_argument("--s3-commits", type=int, default=100)
    ap.add_argument("--before", default=None, help="another checkout to run the same workers on")
    ap.add_argument("--stores", default="local,s3")
    ap.add_argument("--kinds", default="append,pk")
    ap.add_argument("--code", action="append", default=[], help="LABEL=DIR: another checkout to run")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--table-options", default="{}", help="JSON: options of the tables")
    ap.add_argument("--out", default=None, help="also write the results (JSON) here")
    args = ap.parse_args()
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    codes = [("after", here)] + ([("before", os.path.abspath(args.before))] if args.before else [])
    codes += [(c.split("=", 1)[0], os.path.abspath(c.split("=", 1)[1])) for c in args.code]
    results: list[dict[str, Any]] = []
    scratch = tempfile.mkdtemp(prefix="bench-contention-")
    server = None
    try:
        for store in args.stores.split(","):
            options: dict[str, str] = {}
            commits = args.commits
            if store == "s3":
                from tests.s3_servers import start_seaweed
                server = start_seaweed(os.path.join(scratch, "weed"))
                options, commits = server.options(), args.s3_commits
            for rep in range(args.repeat):
                for kind in args.kinds.split(","):
                    table_options = {**({"bucket": "1"} if kind == "pk" else {}), **json.loads(args.table_options)}
                    for label, code in codes[rep % len(codes):] + codes[:rep % len(codes)]:
                        name = f"{store}-{kind}-{label}-{rep}"
                        if store == "s3":
                            assert server is not None
                            path = f"s3://{server.create_bucket()}/t"
                        else:
                            path = os.path.join(scratch, name)
                        r = {"store": store, "kind": kind, "code": label, "writers": args.writers, "repeat": rep,
                             "load1": round(os.getloadavg()[0], 1),
                             **run(code, path, kind, args.writers, commits, options, table_options)}
                        print(json.dumps(r), flush=True)
                        results.append(r)
                        if store != "s3":
                            shutil.rmtree(path, ignore_errors=True)
            if server is not None:
                server.stop()
                server = None
    finally:
        if server is not None:
            server.stop()
    print(json.dumps(results))
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"runs": results}, f, indent=1)


if __name__ == "__main__":
    main()
