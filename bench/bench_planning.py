"""Scan planning on a table with many partitions: manifests read, bytes read and time.

Table (issue 11): append table partitioned by ``p`` (int), ``--partitions`` partitions;
``--commits`` commits, each writing one row into every partition (so partitions x commits
data files). Each commit is the two-phase path (``new_write`` -> ``prepare_commit`` ->
``commit``); the ``commit()`` call is timed, early commits against late ones (a commit's
cost must not grow with the number of files in the table).

Then, before ``t.rewrite_manifests()``, after it with the table's default
``manifest.target-file-size`` (8 mb), and after a second rewrite with ``--small-target``
(64 kb), each plan runs on a fresh handle (cold manifest cache) whose FileIO counts the
manifest files and bytes read:

- ``full``: ``scan().plan()`` -- the reference every filtered plan is compared with;
- ``point``: one partition, ``p = partitions // 2``;
- ``range``: the lowest tenth of the partitions, ``p < partitions // 10``.

Ratios are filtered / full of the same phase in the same run. Targets (issue 11, 100k
files): full plan <= 1 s; one-partition plan <= 0.1 s and <= 2 % of the full plan's manifest
bytes (after the rewrite; an entry takes ~45 bytes, so 8 mb manifests hold 100k files in
one, and only a target of ~64 kb makes the 50+ manifests that 2 % needs); commit late /
early <= 1.2.

usage: python bench/bench_planning.py [--partitions 1000] [--commits 100] [--reps 3]
       python bench/bench_planning.py --partitions 1000 --commits 20   # the smaller scale
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

import minipaimon_core as mp  # noqa: E402
from minipaimon_core.fileio import LocalFileIO  # noqa: E402

SCHEMA = pa.schema([pa.field("p", pa.int32()), pa.field("v", pa.int64())])
TARGETS = {"full_s": 1.0, "point_s": 0.1, "point_bytes_ratio": 0.02, "commit_ratio": 1.2}


class CountingIO(LocalFileIO):
    """LocalFileIO that counts the manifest files (not lists) and bytes it reads."""

    def __init__(self) -> None:
        super().__init__()
        self.manifests = 0
        self.bytes = 0

    def read_bytes(self, path: str) -> bytes:
        data = super().read_bytes(path)
        name = os.path.basename(path)
        if name.startswith("manifest-") and not name.startswith("manifest-list-"):
            self.manifests += 1
            self.bytes += len(data)
        return data


def build(path: str, partitions: int, commits: int) -> dict[str, Any]:
    """The table of the module docstring; the commit() time of every commit."""
    table = mp.create_table(path, SCHEMA, partition_by=["p"])
    p = pa.array(np.arange(partitions, dtype=np.int32))
    calls: list[float] = []
    totals: list[float] = []
    for c in range(commits):
        batch = pa.table([p, pa.array(np.full(partitions, c, dtype=np.int64))], schema=SCHEMA)
        with common.Timer() as tot:
            w = table.new_write("bench-planning")
            w.write(batch)
            msgs = w.prepare_commit()
            with common.Timer() as call:
                table.new_commit("bench-planning").commit(msgs, commit_identifier=c)
        calls.append(call.wall)
        totals.append(tot.wall)
        if (c + 1) % 10 == 0:
            print(f"  {c + 1}/{commits} commits, last commit() {call.wall * 1000:.0f} ms", file=sys.stderr)
    early = calls[1:min(10, commits)]
    late = calls[-10:]
    return {"commit_call_s": calls, "commit_total_s": totals,
            "commit_early_ms": common.median(early) * 1000, "commit_late_ms": common.median(late) * 1000,
            "commit_ratio": common.median(late) / common.median(early)}


def plan_once(path: str, flt: Any) -> dict[str, Any]:
    io = CountingIO()
    table = mp.open_table(path, io=io)
    splits, t = common.timed(lambda: table.scan(filter=flt).plan())
    return {**t.record(), "manifests_read": io.manifests, "bytes_read": io.bytes,
            "files": sum(len(s.files) for s in splits), "splits": len(splits)}


def measure(path: str, partitions: int, reps: int) -> dict[str, Any]:
    """Median time and the counts of each plan; ratios against the full plan."""
    filters: dict[str, Any] = {"full": None, "point": [("p", "=", partitions // 2)],
                               "range": [("p", "<", max(1, partitions // 10))]}
    out: dict[str, Any] = {}
    for name, flt in filters.items():
        runs = [plan_once(path, flt) for _ in range(reps)]
        out[name] = {**common.summarize(runs), **{k: runs[0][k] for k in
                                                   ("manifests_read", "bytes_read", "files", "splits")}}
    snap = mp.open_table(path).latest_snapshot()
    assert snap is not None
    table = mp.open_table(path)
    out["manifests_total"] = len(table.manifests.data_manifests(snap))
    for name in ("point", "range"):
        out[name]["time_ratio"] = out[name]["median_s"] / out["full"]["median_s"]
        out[name]["bytes_ratio"] = out[name]["bytes_read"] / out["full"]["bytes_read"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--partitions", type=int, default=1000)
    ap.add_argument("--commits", type=int, default=100)
    ap.add_argument("--reps", type=int, default=3, help="repetitions of each plan (median taken)")
    ap.add_argument("--small-target", default="64 kb", help="manifest.target-file-size of the second rewrite")
    a = ap.parse_args()
    env = common.environment()
    path = os.path.join(common.scratch("planning"), "t")
    print(f"building {a.partitions} partitions x {a.commits} commits ...", file=sys.stderr)
    built, t_build = common.timed(lambda: build(path, a.partitions, a.commits))
    phases: dict[str, dict[str, Any]] = {"before rewrite": measure(path, a.partitions, a.reps)}
    rewrites: dict[str, dict[str, Any]] = {}
    for phase, target in (("after rewrite", None), (f"after rewrite, {a.small_target}", a.small_target)):
        if target is not None:
            mp.open_table(path).set_options({"manifest.target-file-size": target})
        rewrite, t_rewrite = common.timed(lambda: mp.open_table(path).rewrite_manifests())
        rewrites[phase] = {"s": t_rewrite.wall, "manifests_before": rewrite.manifests_before,
                           "manifests_after": rewrite.manifests_after}
        phases[phase] = measure(path, a.partitions, a.reps)
    files = a.partitions * a.commits
    for m in phases.values():
        assert m["full"]["files"] == files and m["point"]["files"] == a.commits

    rows: list[list[Any]] = []
    for phase, m in phases.items():
        for name in ("full", "point", "range"):
            r = m[name]
            rows.append([phase, name, r["median_s"], r.get("time_ratio"), f"{r['manifests_read']}/{m['manifests_total']}",
                         r["bytes_read"] / 1e6, r.get("bytes_ratio"), r["files"], r["splits"],
                         [x["load1"] for x in r["runs"]]])
    print(f"\n{a.partitions:,} partitions x {a.commits} commits = {files:,} files; plans on a cold handle, "
          f"median of {a.reps}; ratios = filtered / full plan of the same phase")
    common.print_table(["phase", "plan", "s", "time ratio", "manifests read", "MB read", "bytes ratio",
                        "files", "splits", "load1 per run"], rows)
    verdicts: dict[str, str] = {}
    for phase in list(phases)[1:]:
        m = phases[phase]
        verdicts[f"full plan <= 1 s ({phase})"] = common.verdict(m["full"]["median_s"], TARGETS["full_s"])
        verdicts[f"point plan <= 0.1 s ({phase})"] = common.verdict(m["point"]["median_s"], TARGETS["point_s"])
        verdicts[f"point bytes <= 2% of full ({phase})"] = common.verdict(m["point"]["bytes_ratio"],
                                                                        TARGETS["point_bytes_ratio"])
    verdicts["commit() late/early <= 1.2"] = common.verdict(built["commit_ratio"], TARGETS["commit_ratio"])
    print(f"\nbuild {t_build.wall:.1f} s; commit() median early {built['commit_early_ms']:.1f} ms, late "
          f"{built['commit_late_ms']:.1f} ms (ratio {built['commit_ratio']:.2f})")
    for phase, r in rewrites.items():
        print(f"rewrite_manifests ({phase}): {r['s']:.2f} s, {r['manifests_before']} -> {r['manifests_after']} manifests")
    for k, v in verdicts.items():
        print(f"  {k}: {v}")
    name = f"planning-{a.partitions}x{a.commits}"
    out = common.write_results(name, {
        "env": env, "partitions": a.partitions, "commits": a.commits, "files": files, "targets": TARGETS,
        "phases": phases, "rewrites": rewrites, "verdicts": verdicts,
        "build_s": t_build.wall, **{k: v for k, v in built.items() if not k.endswith("_s")},
        "commit_call_s": built["commit_call_s"]})
    print(f"results: {out}")


if __name__ == "__main__":
    main()
