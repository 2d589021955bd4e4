"""Commit latency over a long history: 1,000 successive 1,000-row appends into one table.

Target (issue 2): median latency of commits 901-1000 <= 1.2x the median of commits 2-20
(a commit's cost must not grow with the table's history). Each commit is the two-phase
path a Spark sink takes: ``new_write`` -> ``write`` -> ``prepare_commit`` ->
``new_commit(user).commit(msgs, i)`` with one stable commit user (so the dedupe check runs
too); we time the whole user-level write and the ``commit`` call alone, as the reference
``bench_pypaimon.py commits`` does for pypaimon, which runs side by side in the same run.
The verdict is on wall time; the CPU-time ratio is printed beside it because on a shared
box the fsync latency of a commit swings with other processes' disk IO (1.5 -> 16 ms
within one run has been seen), which says nothing about the table's history.

usage: python bench/bench_commits.py [--commits 1000] [--reps 3] [--peer-reps 1] [--no-peers]
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

import minipaimon_core as mp  # noqa: E402

TARGET = 1.2
EARLY = (2, 20)  # 1-based commit numbers, inclusive
LATE = (901, 1000)


def windows(n: int) -> tuple[tuple[int, int], tuple[int, int]]:
    """The early and late windows for ``n`` commits (scaled down when n < 1000)."""
    if n >= 1000:
        return EARLY, LATE
    return EARLY, (max(EARLY[1] + 1, n - n // 10 + 1), n)


def window_median(xs: list[float], w: tuple[int, int]) -> float:
    return common.median(xs[w[0] - 1 : w[1]])


def figures(totals: list[float], calls: list[float], cpus: list[float], n: int) -> dict[str, Any]:
    """Early/late medians and their ratio of wall time (write+commit, commit call) and of
    the process CPU time of write+commit (not disturbed by fsync waits on a busy disk)."""
    early, late = windows(n)
    out: dict[str, Any] = {"early_window": early, "late_window": late}
    for name, xs in (("total", totals), ("call", calls), ("cpu", cpus)):
        e, lt = window_median(xs, early), window_median(xs, late)
        out[f"{name}_early_ms"] = e * 1000
        out[f"{name}_late_ms"] = lt * 1000
        out[f"{name}_ratio"] = lt / e
    return out


def run_ours(n: int, rep: int) -> dict[str, Any]:
    data = common.reference_data()
    path = os.path.join(common.scratch(f"commits-{rep}"), "t")
    table = mp.create_table(path, data.SCHEMA)
    user = "bench-commits"
    totals: list[float] = []
    calls: list[float] = []
    cpus: list[float] = []
    others: list[float] = []
    for i in range(n):
        batch = data.base_table(1000, start=i * 1000)
        with common.Timer() as tot:
            w = table.new_write(user)
            w.write(batch)
            msgs = w.prepare_commit()
            with common.Timer() as call:
                table.new_commit(user).commit(msgs, commit_identifier=i)
        totals.append(tot.wall)
        calls.append(call.wall)
        cpus.append(tot.cpu)
        others.append(tot.others)
    result = mp.open_table(path).scan().to_arrow()
    check = data.check_append_result(result, n * 1000)
    snaps = mp.open_table(path).snapshots()
    return {"commit_total_s": totals, "commit_call_s": calls, "commit_cpu_s": cpus, "others": others,
            "load1": common.load()[0], "check": check, "snapshots": len(snaps),
            **figures(totals, calls, cpus, n)}


def run_pypaimon(n: int, rep: int) -> dict[str, Any] | None:
    cwd = os.path.join(common.WORK_DIR, f"ref-commits-{rep}")
    r = common.run_reference("bench_pypaimon.py", ["commits", "--commits", str(n)], cwd, timeout=1800)
    if r is None:
        return None
    r.update(figures(r["commit_total_s"], r["commit_call_s"], r["commit_cpu_s"], n))
    r["load1"] = r["load_after"][0]
    r.pop("disk", None)
    return r


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--commits", type=int, default=1000)
    ap.add_argument("--reps", type=int, default=3, help="repetitions of our run (median taken)")
    ap.add_argument("--peer-reps", type=int, default=1, help="repetitions of the pypaimon run")
    ap.add_argument("--no-peers", action="store_true")
    a = ap.parse_args()
    env = common.environment()
    ours: list[dict[str, Any]] = []
    peer: list[dict[str, Any]] = []
    for rep in range(max(a.reps, a.peer_reps)):
        if rep < a.reps:
            print(f"minipaimon run {rep + 1}: {a.commits} commits ...", file=sys.stderr)
            ours.append(run_ours(a.commits, rep))
        if rep < a.peer_reps and not a.no_peers:
            print(f"pypaimon run {rep + 1}: {a.commits} commits ...", file=sys.stderr)
            r = run_pypaimon(a.commits, rep)
            if r is not None:
                peer.append(r)

    def med(runs: list[dict[str, Any]], key: str) -> float | None:
        return common.median(r[key] for r in runs) if runs else None

    rows: list[list[Any]] = []
    summary: dict[str, Any] = {}
    for name, runs in (("minipaimon", ours), ("pypaimon", peer)):
        if not runs:
            rows.append([name, None, None, None, None, None, None, None, "not run", None])
            continue
        s: dict[str, Any] = {k: med(runs, k) for k in ("total_early_ms", "total_late_ms", "total_ratio",
                                                        "call_early_ms", "call_late_ms", "call_ratio",
                                                        "cpu_early_ms", "cpu_late_ms", "cpu_ratio")}
        s["load1"] = [r["load1"] for r in runs]
        s["others_median"] = common.median(x for r in runs for x in r.get("others", r.get("commit_others_frac", [0])))
        s["check_ok"] = all(r["check"]["ok"] for r in runs)
        summary[name] = s
        rows.append([name, s["total_early_ms"], s["total_late_ms"], s["total_ratio"], s["call_early_ms"],
                     s["call_late_ms"], s["call_ratio"], s["cpu_ratio"], common.verdict(s["total_ratio"], TARGET),
                     s["load1"]])
    early, late = windows(a.commits)
    print(f"\n{a.commits} commits of 1,000 rows; medians over commits {early[0]}-{early[1]} (early) and "
          f"{late[0]}-{late[1]} (late), median of {a.reps} runs (pypaimon: {a.peer_reps}); target ratio <= {TARGET}")
    common.print_table(["engine", "write+commit early ms", "late ms", "ratio", "commit() early ms",
                        "late ms", "ratio", "cpu ratio", "target", "load1 per run"], rows)
    if ours and peer:
        summary["total_late_vs_pypaimon"] = summary["minipaimon"]["total_late_ms"] / summary["pypaimon"]["total_late_ms"]
        print(f"minipaimon late / pypaimon late: {summary['total_late_vs_pypaimon']:.2f}")
    path = common.write_results("commits", {"env": env, "commits": a.commits, "target_ratio": TARGET,
                                            "summary": summary, "minipaimon_runs": ours, "pypaimon_runs": peer})
    print(f"results: {path}")


if __name__ == "__main__":
    main()
