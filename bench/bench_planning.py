"""Scan planning on a table with many partitions: manifests read, bytes read and time.

Table (issue 11): append table partitioned by ``p`` (int), ``--partitions`` partitions;
``--commits`` commits, each writing one row into every partition (so partitions x commits
data files), with the table's default manifest options (``manifest.target-file-size`` 64 kb,
``manifest.full-compaction-threshold-size`` 256 kb): commits cluster the base manifests by
partition on their own, rarely (``manifest_merge``). Each commit is the two-phase path
(``new_write`` -> ``prepare_commit`` -> ``commit``); the ``commit()`` call is timed, early
commits (2-10) against late ones (the last 10) -- median and p95 of each window -- and every
commit that rewrote the base is counted. After each commit, the share of manifest bytes a
one-partition plan would read is computed from the manifest lists (no manifest read).

Then, at the end with only the automatic rewrites, after an explicit ``t.rewrite_manifests()``
(64 kb), and after a rewrite with ``--compare-target`` (8 mb, Paimon's default), each plan
runs on a fresh handle (cold manifest cache) whose FileIO counts the manifest files and
bytes read:

- ``full``: ``scan().plan()`` -- the reference every filtered plan is compared with;
- ``point``: one partition, ``p = partitions // 2``;
- ``range``: the lowest tenth of the partitions, ``p < partitions // 10``;
- ``value``: one commit's files, ``v = commits // 2``: no manifest or partition can be
  skipped, every file is kept or dropped by its value stats (:mod:`minipaimon_core.expressions.stats_filter`).

Ratios are filtered / full of the same phase in the same run. Targets (issue 11, 100k
files): full plan <= 1 s; one-partition plan <= 0.1 s and <= 2 % of the full plan's manifest
bytes (an entry takes ~45 bytes: 8 mb manifests hold 100k files in one, 64 kb ones make the
50+ manifests that 2 % needs); commit late / early <= 1.2 (median).

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
from minipaimon_core.expressions import predicate  # noqa: E402
from minipaimon_core.io.fileio import LocalFileIO  # noqa: E402
from minipaimon_core.read.table_scan import planner  # noqa: E402

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


def point_share(table: mp.Table, partitions: int) -> tuple[float, bool]:
    """Share of the latest snapshot's manifest bytes a one-partition plan reads (from the
    manifest lists: the manifests its partition stats cannot skip), and whether the latest
    commit rewrote the base (then every base manifest is clustered)."""
    snap = table.latest_snapshot()
    assert snap is not None
    metas = table.manifests.data_manifests(snap)
    dnf = predicate.normalize([("p", "=", partitions // 2)], SCHEMA)
    kept = planner(table.context()).prune_manifests(metas, dnf)
    base = table.manifests.read_list(snap.baseManifestList)
    return (sum(m.fileSize for m in kept) / sum(m.fileSize for m in metas),
            bool(base) and all(m.clustered for m in base))


def p95(xs: list[float]) -> float:
    return float(np.percentile(xs, 95))


def build(path: str, partitions: int, commits: int, threshold: str | None) -> dict[str, Any]:
    """The table of the module docstring; the commit() time of every commit."""
    options = {} if threshold is None else {"manifest.full-compaction-threshold-size": threshold}
    table = mp.create_table(path, SCHEMA, partition_by=["p"], options=options)
    p = pa.array(np.arange(partitions, dtype=np.int32))
    calls: list[float] = []
    totals: list[float] = []
    shares: list[float] = []
    rewrites: list[int] = []
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
        share, rewrote = point_share(table, partitions)
        shares.append(share)
        if rewrote:
            rewrites.append(c + 1)
        if (c + 1) % 10 == 0:
            print(f"  {c + 1}/{commits} commits, last commit() {call.wall * 1000:.0f} ms, "
                  f"{len(rewrites)} rewrites", file=sys.stderr)
    early = calls[1:min(10, commits)]
    late = calls[-10:]
    normal = [t for i, t in enumerate(calls) if i + 1 not in rewrites]
    quarter = max(1, commits // 4)  # commits without a rewrite, first vs last quarter (not the first)
    normal_early = [t for i, t in enumerate(calls[1:quarter], 2) if i not in rewrites]
    normal_late = [t for i, t in enumerate(calls[-quarter:], commits - quarter + 1) if i not in rewrites]
    half = shares[len(shares) // 2:]
    return {"commit_call_s": calls, "commit_total_s": totals, "point_share_per_commit": shares,
            "rewrite_commits": rewrites,
            "commit_early_ms": common.median(early) * 1000, "commit_late_ms": common.median(late) * 1000,
            "commit_early_p95_ms": p95(early) * 1000, "commit_late_p95_ms": p95(late) * 1000,
            "commit_ratio": common.median(late) / common.median(early),
            "commit_all_median_ms": common.median(calls) * 1000, "commit_all_p95_ms": p95(calls) * 1000,
            "commit_rewrite_median_ms": common.median([calls[i - 1] for i in rewrites]) * 1000 if rewrites else None,
            "commit_normal_median_ms": common.median(normal) * 1000,
            "commit_normal_quarters_ms": [common.median(normal_early) * 1000, common.median(normal_late) * 1000],
            "commit_normal_p95_ms": p95(normal) * 1000,
            "point_share_second_half": {"median": common.median(half), "max": max(half), "min": min(half)}}


def plan_once(path: str, flt: Any) -> dict[str, Any]:
    io = CountingIO()
    table = mp.open_table(path, io=io)
    splits, t = common.timed(lambda: table.scan(filter=flt).plan())
    return {**t.record(), "manifests_read": io.manifests, "bytes_read": io.bytes,
            "files": sum(len(s.files) for s in splits), "splits": len(splits)}


def measure(path: str, partitions: int, commits: int, reps: int) -> dict[str, Any]:
    """Median time and the counts of each plan; ratios against the full plan."""
    filters: dict[str, Any] = {"full": None, "point": [("p", "=", partitions // 2)],
                               "range": [("p", "<", max(1, partitions // 10))],
                               "value": [("v", "=", commits // 2)]}
    out: dict[str, Any] = {}
    for name, flt in filters.items():
        runs = [plan_once(path, flt) for _ in range(reps)]
        out[name] = {**common.summarize(runs), **{k: runs[0][k] for k in
                                                   ("manifests_read", "bytes_read", "files", "splits")}}
    snap = mp.open_table(path).latest_snapshot()
    assert snap is not None
    table = mp.open_table(path)
    out["manifests_total"] = len(table.manifests.data_manifests(snap))
    for name in ("point", "range", "value"):
        out[name]["time_ratio"] = out[name]["median_s"] / out["full"]["median_s"]
        out[name]["bytes_ratio"] = out[name]["bytes_read"] / out["full"]["bytes_read"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--partitions", type=int, default=1000)
    ap.add_argument("--commits", type=int, default=100)
    ap.add_argument("--reps", type=int, default=3, help="repetitions of each plan (median taken)")
    ap.add_argument("--threshold", default=None,
                    help="manifest.full-compaction-threshold-size of the table (default: the default)")
    ap.add_argument("--compare-target", default="8 mb", help="manifest.target-file-size of the last rewrite")
    a = ap.parse_args()
    env = common.environment()
    path = os.path.join(common.scratch("planning"), "t")
    print(f"building {a.partitions} partitions x {a.commits} commits ...", file=sys.stderr)
    built, t_build = common.timed(lambda: build(path, a.partitions, a.commits, a.threshold))
    phases: dict[str, dict[str, Any]] = {"automatic only": measure(path, a.partitions, a.commits, a.reps)}
    rewrites: dict[str, dict[str, Any]] = {}
    for phase, target in (("after rewrite_manifests", None), (f"after rewrite, {a.compare_target}", a.compare_target)):
        if target is not None:
            mp.open_table(path).set_options({"manifest.target-file-size": target})
        rewrite, t_rewrite = common.timed(lambda: mp.open_table(path).rewrite_manifests())
        rewrites[phase] = {"s": t_rewrite.wall, "manifests_before": rewrite.manifests_before,
                           "manifests_after": rewrite.manifests_after}
        phases[phase] = measure(path, a.partitions, a.commits, a.reps)
    files = a.partitions * a.commits
    for m in phases.values():
        assert m["full"]["files"] == files and m["point"]["files"] == a.commits
        assert m["value"]["files"] == a.partitions  # the files of one commit, by their value stats

    rows: list[list[Any]] = []
    for phase, m in phases.items():
        for name in ("full", "point", "range", "value"):
            r = m[name]
            rows.append([phase, name, r["median_s"], r.get("time_ratio"), f"{r['manifests_read']}/{m['manifests_total']}",
                         r["bytes_read"] / 1e6, r.get("bytes_ratio"), r["files"], r["splits"],
                         [x["load1"] for x in r["runs"]]])
    print(f"\n{a.partitions:,} partitions x {a.commits} commits = {files:,} files; plans on a cold handle, "
          f"median of {a.reps}; ratios = filtered / full plan of the same phase")
    common.print_table(["phase", "plan", "s", "time ratio", "manifests read", "MB read", "bytes ratio",
                        "files", "splits", "load1 per run"], rows)
    verdicts: dict[str, str] = {}
    for phase in list(phases)[:2]:
        m = phases[phase]
        verdicts[f"full plan <= 1 s ({phase})"] = common.verdict(m["full"]["median_s"], TARGETS["full_s"])
        verdicts[f"point plan <= 0.1 s ({phase})"] = common.verdict(m["point"]["median_s"], TARGETS["point_s"])
        verdicts[f"point bytes <= 2% of full ({phase})"] = common.verdict(m["point"]["bytes_ratio"],
                                                                        TARGETS["point_bytes_ratio"])
    verdicts["commit() late/early <= 1.2"] = common.verdict(built["commit_ratio"], TARGETS["commit_ratio"])
    print(f"\nbuild {t_build.wall:.1f} s; commit() early (2-10) median {built['commit_early_ms']:.1f} ms "
          f"p95 {built['commit_early_p95_ms']:.1f} ms, late (last 10) median {built['commit_late_ms']:.1f} ms "
          f"p95 {built['commit_late_p95_ms']:.1f} ms (median ratio {built['commit_ratio']:.2f}); all commits "
          f"median {built['commit_all_median_ms']:.1f} ms p95 {built['commit_all_p95_ms']:.1f} ms")
    print(f"automatic rewrites at commits {built['rewrite_commits']}: commit() median "
          f"{built['commit_rewrite_median_ms']} ms vs {built['commit_normal_median_ms']:.1f} ms without (p95 "
          f"{built['commit_normal_p95_ms']:.1f} ms; median first / last quarter "
          f"{built['commit_normal_quarters_ms']}); "
          f"one-partition share of manifest bytes over the second half of the commits: "
          f"{built['point_share_second_half']}")
    for phase, r in rewrites.items():
        print(f"rewrite_manifests ({phase}): {r['s']:.2f} s, {r['manifests_before']} -> {r['manifests_after']} manifests")
    for k, v in verdicts.items():
        print(f"  {k}: {v}")
    name = f"planning-{a.partitions}x{a.commits}" + ("" if a.threshold is None else
                                                      f"-threshold-{a.threshold.replace(' ', '')}")
    out = common.write_results(name, {
        "env": env, "partitions": a.partitions, "commits": a.commits, "files": files, "targets": TARGETS,
        "threshold": a.threshold,
        "phases": phases, "rewrites": rewrites, "verdicts": verdicts,
        "build_s": t_build.wall, **{k: v for k, v in built.items() if not k.endswith("_s")},
        "commit_call_s": built["commit_call_s"], "point_share_per_commit": built["point_share_per_commit"]})
    print(f"results: {out}")


if __name__ == "__main__":
    main()
