"""Primary-key table: 1M-row write, 100k-row upsert, merged read; peak RSS of a 10M write.

Data and correctness check: the reference ``bench_common`` (imported at run time from
``$MINIPAIMON_REF_BENCH``): 1M base rows (id bigint PK, k, v, ts), then 100k upserts of
which half update existing keys; the merged read must hold 1.05M rows with the new values.

Ours, per bucket count (1 and 4), on a fresh table:
  write   ``t.write(base)``      one commit (includes the automatic compaction check)
  upsert  ``t.write(upserts)``   one commit
  read    ``open_table(p).scan().to_arrow()``  (open + plan + merge-on-read)
Peers, side by side in the same run (reference scripts as subprocesses, peer venv):
pypaimon 2.1 with pypaimon-rust (``--native``), deltalake (``write_deltalake`` +
``DeltaTable.merge``; no buckets, so one figure serves both columns), and -- once each,
they are slow -- pure-Python pypaimon and pyiceberg (``upsert``).

Targets (issue 3): write <= 0.7x pypaimon+rust with 4 buckets (issue 28: <= 0.6x with 1
bucket); upsert <= 1.0x pypaimon+rust; (issues 13, 28) merged read <= 0.5x deltalake's read
with 1 and with 4 buckets, and 4 buckets <= 0.7x the 1-bucket read.
Peak RSS of a 10M-row write (``write-buffer-size`` 256 mb, in a child process that
streams the input in 1M-row batches; VmHWM from /proc) <= write-buffer-size + 300 MB.

usage: python bench/bench_pk.py [--reps 3] [--slow-reps 1] [--no-slow] [--no-peers]
                                [--rss-rows 10000000] [--rss-buckets 1] [--rss-buffer-mb 256] [--no-rss]
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

import minipaimon_core as mp  # noqa: E402

N, U = 1_000_000, 100_000
WRITE_BUFFER_MB = 256
RSS_SLACK_MB = 300
TARGETS = {  # (phase, buckets) -> (peer, max ratio of our time to the peer's)
    ("write", 1): ("pypaimon+rust", 0.6),
    ("write", 4): ("pypaimon+rust", 0.7),
    ("upsert", 1): ("pypaimon+rust", 1.0),
    ("upsert", 4): ("pypaimon+rust", 1.0),
    ("read", 1): ("deltalake", 0.5),
    ("read", 4): ("deltalake", 0.5),
}
READ_4_VS_1 = 0.7  # issue 13: the merged read of 4 buckets <= 0.7x that of 1 bucket (2 cores)
PHASES = ("write", "upsert", "read")


# ---------------------------------------------------------------------------- ours


def run_ours(buckets: int, rep: int) -> dict[str, Any]:
    data = common.reference_data()
    base = data.base_table(N)
    upserts, _ = data.upsert_table(N, U)
    path = os.path.join(common.scratch(f"pk-b{buckets}-{rep}"), "t")
    table = mp.create_table(path, data.SCHEMA, primary_key=["id"], options={"bucket": str(buckets)})
    _, w = common.timed(lambda: table.write(base))
    table = mp.open_table(path)
    _, u = common.timed(lambda: table.write(upserts))
    result, r = common.timed(lambda: mp.open_table(path).scan().to_arrow())
    check = data.check_pk_result(result, N, U)
    check.pop("samples", None)
    t = mp.open_table(path)
    splits = t.scan().plan()
    return {"write": w.record(), "upsert": u.record(), "read": r.record(), "check": check,
            "snapshots": [(s.id, s.commitKind) for s in t.snapshots()],
            "splits": len(splits), "files": sum(len(s.files) for s in splits),
            "raw_splits": sum(bool(s.raw_convertible) for s in splits)}


def warm_up() -> None:
    """Untimed small write/upsert/read: imports and first-call costs out of the figures."""
    data = common.reference_data()
    path = os.path.join(common.scratch("pk-warmup"), "t")
    table = mp.create_table(path, data.SCHEMA, primary_key=["id"], options={"bucket": "2"})
    table.write(data.base_table(10_000))
    table.write(data.upsert_table(10_000, 1_000)[0])
    mp.open_table(path).scan().to_arrow()


# ---------------------------------------------------------------------------- peers


def run_peer(peer: str, buckets: int, rep: int) -> dict[str, Any] | None:
    script, args = {
        "pypaimon+rust": ("bench_pypaimon.py", ["pk", "--native", "--buckets", str(buckets)]),
        "pypaimon": ("bench_pypaimon.py", ["pk", "--buckets", str(buckets)]),
        "deltalake": ("bench_deltalake.py", ["pk"]),
        "pyiceberg": ("bench_pyiceberg.py", ["pk", "--buckets", str(buckets)]),
    }[peer]
    cwd = os.path.join(common.WORK_DIR, f"ref-pk-{peer.replace('+', '-')}-b{buckets}-{rep}")
    r = common.run_reference(script, [*args, "--n", str(N), "--u", str(U)], cwd, timeout=600)
    if r is None:
        return None
    out: dict[str, Any] = {ph: {"s": r[f"{ph}_s"], "cpu_s": r[f"{ph}_cpu_s"], "others": r.get(f"{ph}_others_frac"),
                "load1": r["load_after"][0]} for ph in PHASES}
    out["check_ok"] = r["check"]["ok"]
    out["version"] = r.get("version")
    out["fallback_warnings"] = r.get("fallback_warnings", [])
    return out


# ---------------------------------------------------------------------------- peak RSS


def rss_child(rows: int, buckets: int, path: str, buffer_mb: int = WRITE_BUFFER_MB) -> None:
    """Child process: stream ``rows`` rows in 1M-row batches into a PK table, one commit."""
    data = common.reference_data()
    table = mp.create_table(path, data.SCHEMA, primary_key=["id"],
                            options={"bucket": str(buckets), "write-buffer-size": f"{buffer_mb} mb"})
    baseline = _status_kb("VmRSS")
    t0 = time.perf_counter()
    w = table.new_write("rss")
    step = 1_000_000
    for start in range(0, rows, step):
        w.write(data.base_table(min(step, rows - start), start=start))
    msgs = w.prepare_commit()
    table.new_commit("rss").commit(msgs, 1)
    elapsed = time.perf_counter() - t0
    n = mp.open_table(path).latest_snapshot().totalRecordCount  # type: ignore[union-attr]
    files = sum(len(m.newFiles) for m in msgs)
    print(json.dumps({"baseline_rss_kb": baseline, "peak_rss_kb": _status_kb("VmHWM"), "seconds": elapsed,
                      "rows": n, "files": files}))


def _status_kb(field: str, pid: int | str = "self") -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except FileNotFoundError:
        pass
    return 0


def run_rss(rows: int, buckets: int, buffer_mb: int = WRITE_BUFFER_MB) -> dict[str, Any]:
    path = os.path.join(common.scratch(f"pk-rss-b{buckets}"), "t")
    cmd = [sys.executable, os.path.abspath(__file__), "--rss-child", str(rows), "--rss-buckets", str(buckets),
           "--rss-path", path, "--rss-buffer-mb", str(buffer_mb)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    samples: list[tuple[float, int]] = []
    t0 = time.perf_counter()
    while proc.poll() is None:  # a time series of RSS (the child reports the exact peak itself)
        samples.append((round(time.perf_counter() - t0, 2), _status_kb("VmRSS", proc.pid)))
        time.sleep(0.05)
    out, err = proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"RSS child failed: {err.strip()[-500:]}")
    res: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    peak_mb = res["peak_rss_kb"] / 1024
    res.update({"buckets": buckets, "peak_rss_mb": peak_mb, "baseline_rss_mb": res["baseline_rss_kb"] / 1024,
                "buffer_mb": buffer_mb, "limit_mb": buffer_mb + RSS_SLACK_MB, "load1": common.load()[0],
                "met": peak_mb <= buffer_mb + RSS_SLACK_MB,
                "polled_max_mb": max((s[1] for s in samples), default=0) / 1024,
                "series_mb": [(t, round(kb / 1024)) for t, kb in samples[:: max(1, len(samples) // 60)]]})
    import shutil
    shutil.rmtree(os.path.dirname(path), ignore_errors=True)
    return res


# ---------------------------------------------------------------------------- main


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=3, help="repetitions of ours, pypaimon+rust, deltalake")
    ap.add_argument("--slow-reps", type=int, default=1, help="repetitions of pure pypaimon and pyiceberg")
    ap.add_argument("--no-slow", action="store_true", help="skip pure pypaimon and pyiceberg")
    ap.add_argument("--no-peers", action="store_true")
    ap.add_argument("--buckets", default="1,4")
    ap.add_argument("--rss-rows", type=int, default=10_000_000)
    ap.add_argument("--rss-buckets", type=int, default=1)
    ap.add_argument("--rss-buffer-mb", type=int, default=WRITE_BUFFER_MB,
                    help="write-buffer-size of the RSS run (spilling keeps one run per bucket)")
    ap.add_argument("--no-rss", action="store_true")
    ap.add_argument("--rss-child", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--rss-path", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.rss_child:
        rss_child(a.rss_child, a.rss_buckets, a.rss_path, a.rss_buffer_mb)
        return
    env = common.environment()
    bucket_counts = [int(b) for b in a.buckets.split(",")]
    fast = [] if a.no_peers else ["pypaimon+rust", "deltalake"]
    slow = [] if a.no_peers or a.no_slow else ["pypaimon", "pyiceberg"]
    runs: dict[str, dict[int, list[dict[str, Any]]]] = {}

    def add(engine: str, b: int, r: dict[str, Any] | None) -> None:
        if r is not None:
            runs.setdefault(engine, {}).setdefault(b, []).append(r)

    warm_up()
    for rep in range(max(a.reps, a.slow_reps)):  # interleaved, so load drifts hit all alike
        for b in bucket_counts:
            if rep < a.reps:
                print(f"run {rep + 1}: minipaimon, {b} bucket(s) ...", file=sys.stderr)
                add("minipaimon", b, run_ours(b, rep))
                for peer in fast:
                    if peer == "deltalake" and b != bucket_counts[0]:
                        continue  # no buckets in Delta: one series serves every column
                    print(f"run {rep + 1}: {peer}, {b} bucket(s) ...", file=sys.stderr)
                    add(peer, b, run_peer(peer, b, rep))
            if rep < a.slow_reps:
                for peer in slow:
                    if peer == "pypaimon" and b != bucket_counts[0] and a.slow_reps <= 1:
                        continue  # ~1 min per run; 1 bucket is enough for context
                    print(f"run {rep + 1}: {peer}, {b} bucket(s) ...", file=sys.stderr)
                    add(peer, b, run_peer(peer, b, rep))
    if "deltalake" in runs:
        for b in bucket_counts:
            runs["deltalake"].setdefault(b, runs["deltalake"][bucket_counts[0]])

    med: dict[str, dict[int, dict[str, float]]] = {}
    for engine, by_b in runs.items():
        for b, rs in by_b.items():
            med.setdefault(engine, {})[b] = {ph: common.median(r[ph]["s"] for r in rs) for ph in PHASES}
            med[engine][b].update({f"{ph}_cpu": common.median(r[ph]["cpu_s"] for r in rs) for ph in PHASES})
            med[engine][b]["n"] = len(rs)

    ours_ok = all(r["check"]["ok"] for rs in runs.get("minipaimon", {}).values() for r in rs)
    table_rows: list[list[Any]] = []
    verdicts = []
    for b in bucket_counts:
        for ph in PHASES:
            ours = med.get("minipaimon", {}).get(b, {}).get(ph)
            peer, target = TARGETS[(ph, b)]
            ref = med.get(peer, {}).get(b, {}).get(ph)
            ratio = ours / ref if ours is not None and ref else None
            ours_cpu = med.get("minipaimon", {}).get(b, {}).get(f"{ph}_cpu")
            ref_cpu = med.get(peer, {}).get(b, {}).get(f"{ph}_cpu")
            cpu_ratio = ours_cpu / ref_cpu if ours_cpu is not None and ref_cpu else None
            loads = [r[ph]["load1"] for r in runs.get("minipaimon", {}).get(b, [])]
            row: list[Any] = [f"{ph} b={b}", ours, peer, ref, ratio, f"<= {target}", common.verdict(ratio, target), cpu_ratio]
            row += [med.get(p, {}).get(b, {}).get(ph) for p in ("pypaimon+rust", "deltalake", "pypaimon", "pyiceberg")]
            row.append(loads)
            table_rows.append(row)
            verdicts.append({"phase": ph, "buckets": b, "ours_s": ours, "peer": peer, "peer_s": ref,
                             "ratio": ratio, "cpu_ratio": cpu_ratio, "target": target, "verdict": common.verdict(ratio, target)})
    print(f"\nPK table: {N:,}-row write, {U:,}-row upsert, merged read of {N + U // 2:,} rows; medians of "
          f"{a.reps} (pure pypaimon, pyiceberg: {a.slow_reps}); seconds")
    common.print_table(["phase", "ours s", "target vs", "its s", "ratio", "target", "verdict", "cpu ratio", "pypaimon+rust",
                        "deltalake", "pypaimon pure", "pyiceberg", "ours load1"], table_rows)
    r1, r4 = (med.get("minipaimon", {}).get(b, {}).get("read") for b in (1, 4))
    if r1 and r4:
        ratio = r4 / r1
        verdicts.append({"phase": "read 4 vs 1 buckets", "buckets": 4, "ours_s": r4, "peer": "minipaimon 1 bucket",
                         "peer_s": r1, "ratio": ratio, "target": READ_4_VS_1,
                         "verdict": common.verdict(ratio, READ_4_VS_1)})
        print(f"merged read, 4 buckets vs 1: {r4:.3f} / {r1:.3f} s = {ratio:.2f} (target <= {READ_4_VS_1}: "
              f"{common.verdict(ratio, READ_4_VS_1)})")
    print(f"our merged read correct in every run: {ours_ok}")
    for engine, by_b in runs.items():
        if engine != "minipaimon":
            bad = [b for b, rs in by_b.items() if not all(r["check_ok"] for r in rs)]
            warn = [w for rs in by_b.values() for r in rs for w in r.get("fallback_warnings", [])]
            if bad or warn:
                print(f"  {engine}: check failed for buckets {bad}; warnings {warn[:1]}")

    rss = None
    if not a.no_rss:
        print(f"peak RSS: {a.rss_rows:,}-row write, {a.rss_buckets} bucket(s) ...", file=sys.stderr)
        rss = run_rss(a.rss_rows, a.rss_buckets, a.rss_buffer_mb)
        print(f"\npeak RSS of a {a.rss_rows:,}-row PK write ({a.rss_buckets} bucket(s), write-buffer-size "
              f"{a.rss_buffer_mb} mb): {rss['peak_rss_mb']:.0f} MB (baseline {rss['baseline_rss_mb']:.0f} MB, "
              f"limit {rss['limit_mb']} MB: {'met' if rss['met'] else 'NOT met'}), {rss['seconds']:.1f} s, "
              f"{rss['files']} files, load1 {rss['load1']}")
    path = common.write_results("pk", {"env": env, "n": N, "u": U, "verdicts": verdicts, "medians_s": med,
                                       "ours_correct": ours_ok, "rss": rss, "runs": runs})
    print(f"results: {path}")


if __name__ == "__main__":
    main()
