"""Append table: write and full read of 1M rows against plain Parquet, in the same run.

Data: id bigint (0..n-1), k string of 16 chars ("key-000000000042"), v double, ts bigint.
Ours: ``create_table`` (untimed), then ``t.write(data)`` (one commit: Parquet zstd files,
stats, manifests, snapshot) and ``open_table(path).scan().to_arrow()`` (open, plan, read).
Reference: ``pyarrow.parquet.write_table(data, path)`` / ``read_table(path)`` with
pyarrow's defaults (snappy); the same with zstd (our codec) is reported for context.

Target (issue 2): throughput >= 0.8x pyarrow's, i.e. reference time / our time >= 0.8.

usage: python bench/bench_append.py [--n 1000000] [--reps 3] [--peers]
  --peers also runs the reference deltalake / pypaimon(+rust) append scenarios (their own
  data: bench_common's 1M rows, k ~7 chars) for context.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.compute as pc  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

import minipaimon_core as mp  # noqa: E402

TARGET = 0.8
SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("k", pa.string()),
                    pa.field("v", pa.float64()), pa.field("ts", pa.int64())])


def make_data(n: int) -> pa.Table:
    ids = pa.array(np.arange(n, dtype=np.int64))
    k = pc.binary_join_element_wise(pa.scalar("key-"), pc.utf8_lpad(pc.cast(ids, pa.string()), 12, "0"), "")
    rng = np.random.default_rng(7)
    v = pa.array(rng.random(n))
    ts = pa.array(1_700_000_000_000 + np.arange(n, dtype=np.int64) * 10)
    return pa.Table.from_arrays([ids, k, v, ts], schema=SCHEMA)


def same_rows(result: pa.Table, data: pa.Table) -> bool:
    if result.num_rows != data.num_rows:
        return False
    result = result.sort_by("id")
    return all(result.column(c).equals(data.column(c)) for c in data.column_names)


def one_rep(data: pa.Table, rep: int) -> dict[str, dict[str, float]]:
    d = common.scratch(f"append-{rep}")
    out: dict[str, dict[str, float]] = {}
    # plain pyarrow (default codec), then ours, then pyarrow zstd; reads in the same order
    _, t = common.timed(lambda: pq.write_table(data, os.path.join(d, "plain.parquet")))
    out["pyarrow_write"] = t.record()
    table = mp.create_table(os.path.join(d, "mp"), SCHEMA)
    _, t = common.timed(lambda: table.write(data))
    out["ours_write"] = t.record()
    _, t = common.timed(lambda: pq.write_table(data, os.path.join(d, "zstd.parquet"), compression="zstd"))
    out["pyarrow_zstd_write"] = t.record()

    res, t = common.timed(lambda: pq.read_table(os.path.join(d, "plain.parquet")))
    out["pyarrow_read"] = t.record()
    assert res.num_rows == data.num_rows
    res, t = common.timed(lambda: mp.open_table(os.path.join(d, "mp")).scan().to_arrow())
    out["ours_read"] = t.record()
    out["ours_read"]["ok"] = same_rows(res, data)
    res, t = common.timed(lambda: pq.read_table(os.path.join(d, "zstd.parquet")))
    out["pyarrow_zstd_read"] = t.record()
    out["bytes"] = {"plain": os.path.getsize(os.path.join(d, "plain.parquet")),
                    "zstd": os.path.getsize(os.path.join(d, "zstd.parquet")),
                    "ours": sum(os.path.getsize(os.path.join(r, f))
                                for r, _, fs in os.walk(os.path.join(d, "mp")) for f in fs)}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--peers", action="store_true")
    a = ap.parse_args()
    env = common.environment()
    data = make_data(a.n)
    one_rep(make_data(10_000), -1)  # warm-up: imports, first-call costs
    reps = []
    for rep in range(a.reps):
        print(f"run {rep + 1}/{a.reps} ...", file=sys.stderr)
        reps.append(one_rep(data, rep))
    med = {k: common.median(r[k]["s"] for r in reps)
           for k in ("pyarrow_write", "ours_write", "pyarrow_zstd_write", "pyarrow_read", "ours_read",
                     "pyarrow_zstd_read")}
    ratios = {
        "write": med["pyarrow_write"] / med["ours_write"],
        "read": med["pyarrow_read"] / med["ours_read"],
        "write_vs_zstd": med["pyarrow_zstd_write"] / med["ours_write"],
        "read_vs_zstd": med["pyarrow_zstd_read"] / med["ours_read"],
    }
    loads = {k: [r[k]["load1"] for r in reps] for k in ("ours_write", "ours_read")}
    rows = []
    for op in ("write", "read"):
        ours, ref, zref = med[f"ours_{op}"], med[f"pyarrow_{op}"], med[f"pyarrow_zstd_{op}"]
        rows.append([op, ours, a.n / ours / 1e6, ref, ratios[op], common.verdict(ratios[op], TARGET, True),
                     zref, ratios[f"{op}_vs_zstd"], loads[f"ours_{op}"]])
    print(f"\n{a.n:,} rows (id, k 16 chars, v, ts), median of {a.reps}; throughput ratio = pyarrow s / ours s, "
          f"target >= {TARGET}")
    common.print_table(["op", "ours s", "ours Mrows/s", "pyarrow s", "ratio", "target", "pyarrow zstd s",
                        "ratio vs zstd", "load1 per run"], rows)
    ok = all(r["ours_read"]["ok"] for r in reps)
    print(f"read returns exactly the written rows: {ok}")

    peers: dict[str, Any] = {}
    if a.peers:
        for name, script, extra in (("deltalake", "bench_deltalake.py", []),
                                    ("pypaimon+rust", "bench_pypaimon.py", ["--native"])):
            r = common.run_reference(script, ["append", "--n", str(a.n), *extra],
                                     os.path.join(common.WORK_DIR, "ref-append"))
            if r is not None:
                peers[name] = {"write_s": r["write_s"], "read_s": r["read_s"], "load_after": r["load_after"],
                               "check": r["check"]}
                print(f"{name} (bench_common data): write {r['write_s']:.3f} s, read {r['read_s']:.3f} s")
    path = common.write_results("append", {"env": env, "n": a.n, "target": TARGET, "medians_s": med,
                                           "ratios": ratios, "correct": ok, "runs": reps, "peers": peers})
    print(f"results: {path}")


if __name__ == "__main__":
    main()
