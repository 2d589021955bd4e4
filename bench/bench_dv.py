"""Deletion vectors: the read of a primary-key table without merging, and what commits pay.

Data: the reference ``bench_common`` (imported at run time from ``$MINIPAIMON_REF_BENCH``):
1M base rows (id bigint PK, k, v, ts), then 100k upserts of which half update existing keys;
every read must hold the 1.05M rows with the new values (the reference's check).

Per bucket count (1 and 4), side by side in one run, each a fresh table:
  dv       PK table with ``deletion-vectors.enabled``: write base, write upserts (the
           commit marks the 50k superseded rows), read (open + plan + read)
  merge    the same PK table without vectors: same writes, merge-on-read
  append   an append table holding the 1.05M rows of the merged result: its read is the
           reference (the issue's target: the vector read <= 1.1x the append read)
Reads are ``open_table(p).scan().to_arrow()``; medians of ``--reps`` rounds, each round
running every case in turn so they share the load.

usage: python bench/bench_dv.py [--reps 3] [--buckets 1,4]
Results: bench/results/dv.json (dv-<tag>.json with MINIPAIMON_BENCH_TAG).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

import minipaimon_core as mp  # noqa: E402

N, U = 1_000_000, 100_000
READ_TARGET = 1.1  # vector read time / append read time


def build(kind: str, buckets: int, rep: int, base: Any, upserts: Any, data: Any) -> dict[str, Any]:
    path = os.path.join(common.scratch(f"dv-{kind}-b{buckets}-{rep}"), "t")
    options = {"bucket": str(buckets)}
    if kind == "dv":
        options["deletion-vectors.enabled"] = "true"
    t = mp.create_table(path, data.SCHEMA, primary_key=["id"], options=options)
    _, w = common.timed(lambda: t.write(base))
    _, u = common.timed(lambda: mp.open_table(path).write(upserts))
    return {"path": path, "write": w.record(), "upsert": u.record()}


def read(path: str, data: Any, check: bool) -> dict[str, Any]:
    result, r = common.timed(lambda: mp.open_table(path).scan().to_arrow())
    out = r.record()
    if check:
        c = data.check_pk_result(result, N, U)
        out["check_ok"] = c.get("ok", c)
    out["rows"] = result.num_rows
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--buckets", default="1,4")
    a = ap.parse_args()
    data = common.reference_data()
    base = data.base_table(N)
    upserts, _ = data.upsert_table(N, U)
    results: dict[str, Any] = {"env": common.environment(), "rows": N + U // 2, "targets": {"dv_vs_append": READ_TARGET}}
    for buckets in [int(b) for b in a.buckets.split(",")]:
        tables = {kind: build(kind, buckets, 0, base, upserts, data) for kind in ("dv", "merge")}
        merged = mp.open_table(tables["merge"]["path"]).scan().to_arrow()
        append_path = os.path.join(common.scratch(f"dv-append-b{buckets}"), "t")
        mp.create_table(append_path, merged.schema).write(merged)
        tables["append"] = {"path": append_path}
        for t in tables.values():  # warm: imports, page cache
            read(t["path"], data, check=False)
        runs: dict[str, list[dict[str, Any]]] = {k: [] for k in tables}
        for _ in range(a.reps):
            for kind, t in tables.items():
                runs[kind].append(read(t["path"], data, check=kind != "append"))
        splits = mp.open_table(tables["dv"]["path"]).scan().plan()
        summary = {kind: common.summarize(rs) for kind, rs in runs.items()}
        ratio = summary["dv"]["median_s"] / summary["append"]["median_s"]
        results[f"buckets={buckets}"] = {
            "read": summary,
            "commit": {k: {"write": tables[k]["write"], "upsert": tables[k]["upsert"]} for k in ("dv", "merge")},
            "dv_splits": len(splits), "dv_files": sum(len(s.files) for s in splits),
            "dv_vs_append": round(ratio, 3), "verdict": common.verdict(ratio, READ_TARGET),
            "merge_vs_append": round(summary["merge"]["median_s"] / summary["append"]["median_s"], 3),
        }
        print(f"buckets={buckets}: read dv {summary['dv']['median_s']:.3f} s, merge "
              f"{summary['merge']['median_s']:.3f} s, append {summary['append']['median_s']:.3f} s "
              f"(dv/append {ratio:.2f}); upsert commit dv {tables['dv']['upsert']['s']:.3f} s vs "
              f"merge {tables['merge']['upsert']['s']:.3f} s", flush=True)
    print(common.write_results("dv", results))


if __name__ == "__main__":
    main()
