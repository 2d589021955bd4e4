"""Dynamic-bucket primary-key tables (``bucket`` = -1): upsert cost against fixed buckets, and
the cross-partition key map (issue 27 item 1).

Data: the reference ``bench_common`` (1M rows, id bigint key; 100k upserts, half updates of
existing keys, half new keys), as bench_pk.py.

1. **Upsert.** Per table kind, on a fresh table: ``t.write(base)`` (1M, one commit), then
   ``t.write(upserts)`` (100k, one commit: the figure), then the merged read (checked with
   ``check_pk_result``). Kinds: ``bucket`` = 4 (the reference), ``bucket`` = -1 with
   ``dynamic-bucket.target-row-num`` = 250,000 (4 buckets of the 1M keys, like the
   reference), and ``bucket`` = -1 with Paimon's default target (2M: one bucket). Target:
   the dynamic upsert <= 1.5x the 4-bucket one (round-robin, medians).
2. **Cross-partition key map.** A table keyed by ``id`` partitioned by ``p`` = id % 10 (1M
   keys), the map built from it (``minipaimon_core.dynamic.key_map.build``) in a child
   process: wall time, peak RSS above the process's baseline (VmHWM), and the map's own
   bytes per key; and the 100k upsert into that table (which builds the map first).

usage: python bench/bench_dynamic.py [--reps 3] [--rows 1000000] [--no-map]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
import pyarrow as pa  # noqa: E402

import minipaimon_core as mp  # noqa: E402

U = 100_000
KINDS = {  # name -> table options
    "fixed-4": {"bucket": "4"},
    "dynamic-4": {"bucket": "-1", "dynamic-bucket.target-row-num": "250000"},
    "dynamic-default": {"bucket": "-1"},
}
TARGET = 1.5  # dynamic upsert / fixed 4-bucket upsert


def run_kind(name: str, n: int, rep: int) -> dict[str, Any]:
    data = common.reference_data()
    base, (upserts, _) = data.base_table(n), data.upsert_table(n, U)
    path = os.path.join(common.scratch(f"dyn-{name}-{rep}"), "t")
    table = mp.create_table(path, data.SCHEMA, primary_key=["id"], options=KINDS[name])
    _, w = common.timed(lambda: table.write(base))
    table = mp.open_table(path)
    _, u = common.timed(lambda: table.write(upserts))
    result, r = common.timed(lambda: mp.open_table(path).scan().to_arrow())
    check = data.check_pk_result(result, n, U)
    check.pop("samples", None)
    buckets = sorted({s.bucket for s in mp.open_table(path).scan().plan()})
    return {"write": w.record(), "upsert": u.record(), "read": r.record(), "check": check,
            "buckets": len(buckets)}


def map_child(path: str) -> None:
    """Child process: build the key map of the table at ``path``; JSON on stdout."""
    from minipaimon_core.dynamic import key_map

    t = mp.open_table(path)
    ctx = t.context()
    snap = ctx.snapshots.latest()
    baseline = _status_kb("VmRSS")
    t0 = time.perf_counter()
    built = key_map.build(ctx, snap, None, 10)
    seconds = time.perf_counter() - t0
    base = built._base
    nbytes = base.nbytes if base is not None else 0
    print(json.dumps({"seconds": seconds, "keys": len(built), "map_bytes": nbytes,
                      "baseline_rss_kb": baseline, "peak_rss_kb": _status_kb("VmHWM")}))


def _status_kb(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def run_map(n: int, rep: int) -> dict[str, Any]:
    data = common.reference_data()
    base = data.base_table(n)
    base = base.append_column(pa.field("p", pa.int64(), nullable=False), pa.array(base.column("id").to_numpy() % 10))
    schema = base.schema
    path = os.path.join(common.scratch(f"dyn-cross-{rep}"), "t")
    table = mp.create_table(path, schema, primary_key=["id"], partition_by=["p"])
    table.write(base)
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--map-child", path],
                          capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-2000:])
    child = json.loads(proc.stdout.strip().splitlines()[-1])
    upserts, _ = data.upsert_table(n, U)
    upserts = upserts.append_column(schema.field("p"), pa.array(upserts.column("id").to_numpy() % 10))
    table = mp.open_table(path)
    _, u = common.timed(lambda: table.write(upserts))
    result = mp.open_table(path).scan().to_arrow()
    check = data.check_pk_result(result.drop_columns(["p"]), n, U)
    check.pop("samples", None)
    return {"build": child, "upsert": u.record(), "check": check}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--no-map", action="store_true")
    ap.add_argument("--map-child")
    args = ap.parse_args()
    if args.map_child:
        map_child(args.map_child)
        return
    env = common.environment()
    runs: dict[str, list[dict[str, Any]]] = {k: [] for k in KINDS}
    for rep in range(args.reps):  # round-robin: load moves all kinds alike
        for name in KINDS:
            runs[name].append(run_kind(name, args.rows, rep))
            print(f"  {name} rep {rep}: upsert {runs[name][-1]['upsert']['s']:.3f} s", file=sys.stderr)
    med = {k: {ph: common.median(r[ph]["s"] for r in rs) for ph in ("write", "upsert", "read")}
           for k, rs in runs.items()}
    cpu = {k: common.median(r["upsert"]["cpu_s"] for r in rs) for k, rs in runs.items()}
    rows = []
    for name in KINDS:
        ratio = med[name]["upsert"] / med["fixed-4"]["upsert"]
        rows.append([name, runs[name][0]["buckets"], med[name]["write"], med[name]["upsert"], med[name]["read"],
                     ratio, cpu[name] / cpu["fixed-4"], common.verdict(ratio, TARGET) if name != "fixed-4" else "-",
                     all(r["check"]["ok"] for r in runs[name]), [r["upsert"]["load1"] for r in runs[name]]])
    common.print_table(["table", "buckets", "write 1M s", "upsert 100k s", "read s", "upsert vs fixed-4",
                        "CPU vs fixed-4", f"<= {TARGET}", "check", "load1"], rows)
    results: dict[str, Any] = {"env": env, "rows": args.rows, "upsert_rows": U, "runs": runs, "medians": med,
                               "upsert_cpu_medians": cpu, "target": TARGET}
    if not args.no_map:
        maps = [run_map(args.rows, rep) for rep in range(args.reps)]
        secs = common.median(m["build"]["seconds"] for m in maps)
        peak = common.median((m["build"]["peak_rss_kb"] - m["build"]["baseline_rss_kb"]) / 1024 for m in maps)
        per_key = maps[0]["build"]["map_bytes"] / max(1, maps[0]["build"]["keys"])
        ups = common.median(m["upsert"]["s"] for m in maps)
        print()
        common.print_table(["cross-partition map", "keys", "build s", "peak RSS above baseline MB",
                            "map bytes/key", "upsert 100k s (with build)", "check"],
                           [["1 table, 10 partitions", maps[0]["build"]["keys"], secs, peak, per_key, ups,
                             all(m["check"]["ok"] for m in maps)]])
        results["map"] = {"runs": maps, "build_s": secs, "peak_rss_mb": peak, "bytes_per_key": per_key,
                          "upsert_s": ups}
    print(common.write_results("bench_dynamic", results))


if __name__ == "__main__":
    main()
