"""Row-level diff of a small change to a big primary-key table (issue 12's benchmark).

A table of ``--rows`` rows (id bigint key, k string, v double) in 16 buckets, written in
``--commits`` commits and fully compacted; then one commit upserts ``--change`` random
existing keys (half of them) and inserts new ones (the other half), and one deletes
``--change // 10`` keys. Measured, in the same run:

* ``diff``: ``t.diff(before, after)``
* ``reference``: two full reads (``t.scan(snapshot_id=...).to_arrow()``) and their set
  difference (the same vectorised multiset difference ``t.diff`` uses, on whole tables)

Both results are checked equal. Target (issue 12): diff >= 20x faster.

usage: python bench/bench_diff.py [--rows 10000000] [--change 1000] [--repeat 3]
Results: bench/results/diff.json
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np
import pyarrow as pa

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

import minipaimon_core as mp  # noqa: E402
from minipaimon_core.diff import row_diff  # noqa: E402

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("k", pa.string()), ("v", pa.float64())])


def rows(ids: np.ndarray, salt: int) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()),
                     "k": pa.array([f"k{i % 1000}" for i in range(len(ids))], pa.string()),
                     "v": pa.array(ids * 0.5 + salt, pa.float64())}, schema=SCHEMA)


def build(path: str, n: int, commits: int, change: int) -> tuple[mp.Table, int, int]:
    t = mp.create_table(path, SCHEMA, primary_key=["id"],
                        options={"bucket": "16", "write-only": "true"})
    for part in np.array_split(np.arange(n, dtype=np.int64), commits):
        t.write(rows(part, 0))
    t.compact(full=True)
    before = t.latest_snapshot().id  # type: ignore[union-attr]
    rng = np.random.default_rng(12)
    updated = rng.choice(n, change // 2, replace=False).astype(np.int64)
    inserted = np.arange(n, n + change - len(updated), dtype=np.int64)
    t.write(rows(np.concatenate([updated, inserted]), 1))
    deleted = rng.choice(n, change // 10, replace=False).astype(np.int64)
    t.write(pa.table({"id": pa.array(deleted), "k": pa.nulls(len(deleted), pa.string()),
                      "v": pa.nulls(len(deleted), pa.float64()), "_row_kind": ["-D"] * len(deleted)}))
    return t, before, t.latest_snapshot().id  # type: ignore[union-attr]


def reference(t: mp.Table, before: int, after: int) -> pa.Table:
    old = t.scan(snapshot_id=before).to_arrow()
    new = t.scan(snapshot_id=after).to_arrow()
    return row_diff(old, new, ["id"])


def canonical(d: pa.Table) -> list[tuple[object, ...]]:
    return sorted(zip(*d.select(["id", "_row_kind", "k", "v"]).to_pydict().values()), key=repr)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--commits", type=int, default=10)
    ap.add_argument("--change", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    path = os.path.join(common.scratch("diff"), "t")
    (t, before, after), build_time = common.timed(lambda: build(path, a.rows, a.commits, a.change))
    print(f"built {a.rows:,} rows in 16 buckets in {build_time.wall:.0f} s; diff of snapshots "
          f"{before} -> {after}")
    ours, theirs = [], []
    for _ in range(a.repeat):
        d, timer = common.timed(lambda: mp.open_table(path).diff(before, after))
        ours.append(timer.record())
        r, timer = common.timed(lambda: reference(mp.open_table(path), before, after))
        theirs.append(timer.record())
    assert canonical(d) == canonical(r), "diff differs from the difference of two full reads"
    ours_s, ref_s = common.median(x["s"] for x in ours), common.median(x["s"] for x in theirs)
    speedup = ref_s / ours_s
    common.print_table(["case", "median s", "rows out"], [
        ["diff", ours_s, d.num_rows], ["two full reads + set difference", ref_s, r.num_rows]])
    print(f"speed-up {speedup:.1f}x (target >= 20x: {common.verdict(speedup, 20, higher_is_better=True)})")
    out = common.write_results("diff", {"env": common.environment(), "rows": a.rows, "change": a.change,
                                        "diff": common.summarize(ours), "reference": common.summarize(theirs),
                                        "speedup": speedup})
    print(f"results: {out}")


if __name__ == "__main__":
    main()
