"""Print the results table of bench/README.md (Markdown) from bench/results/*.json
(``<name>-<tag>.json`` with MINIPAIMON_BENCH_TAG set).

usage: python bench/summarize.py
"""

from __future__ import annotations

import json
import os
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))


def _load(name: str) -> dict[str, Any] | None:
    tag = os.environ.get("MINIPAIMON_BENCH_TAG")
    path = os.path.join(HERE, "results", f"{name}-{tag}.json" if tag else f"{name}.json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        data: dict[str, Any] = json.load(f)
    return data


def _f(x: float | None, unit: str = "") -> str:
    if x is None:
        return "n/a"
    return f"{x:.3g}{unit}" if abs(x) < 1000 else f"{x:.0f}{unit}"


def rows() -> list[list[str]]:
    out: list[list[str]] = []
    c = _load("commits")
    if c:
        s = c["summary"]
        ours, peer = s.get("minipaimon"), s.get("pypaimon")
        if ours:
            ref = (f"pypaimon {_f(peer['total_early_ms'])} -> {_f(peer['total_late_ms'])} ms "
                   f"(ratio {_f(peer['total_ratio'])}, CPU ratio {_f(peer.get('cpu_ratio'))})") \
                if peer else "pypaimon not run"
            ok = ours["total_ratio"] <= c["target_ratio"]
            out.append([f"commit latency, {c['commits']} x 1k-row appends: late/early median",
                        f"{_f(ours['total_early_ms'])} -> {_f(ours['total_late_ms'])} ms", ref,
                        f"{_f(ours['total_ratio'])} (CPU {_f(ours.get('cpu_ratio'))})", f"<= {c['target_ratio']}", "met" if ok else "NOT met",
                        str(ours["load1"])])
    a = _load("append")
    if a:
        m, r = a["medians_s"], a["ratios"]
        for op in ("write", "read"):
            ok = r[op] >= a["target"]
            out.append([f"append {op}, {a['n']:,} rows: throughput vs pyarrow", f"{_f(m[f'ours_{op}'])} s",
                        f"pyarrow {_f(m[f'pyarrow_{op}'])} s (zstd {_f(m[f'pyarrow_zstd_{op}'])} s)",
                        _f(r[op]), f">= {a['target']}", "met" if ok else "NOT met",
                        str([x[f"ours_{op}"]["load1"] for x in a["runs"]])])
    p = _load("pk")
    if p:
        for v in p["verdicts"]:
            phase = v["phase"].split()[0]  # "read 4 vs 1 buckets": the loads of the 4-bucket reads
            loads = [x[phase]["load1"] for x in p["runs"].get("minipaimon", {}).get(str(v["buckets"]), [])]
            out.append([f"PK {v['phase']}, {v['buckets']} bucket(s)", f"{_f(v['ours_s'])} s",
                        f"{v['peer']} {_f(v['peer_s'])} s", _f(v["ratio"]), f"<= {v['target']}",
                        v["verdict"], str(loads)])
        rss = p.get("rss")
        if rss:
            out.append([f"peak RSS, {rss['rows']:,}-row PK write, {rss['buckets']} bucket(s)",
                        f"{_f(rss['peak_rss_mb'])} MB", f"write-buffer-size + 300 MB = {rss['limit_mb']} MB",
                        _f(rss["peak_rss_mb"] / rss["limit_mb"]), "<= 1.0", "met" if rss["met"] else "NOT met",
                        str([rss["load1"]])])
    return out


def peers_table() -> list[list[str]]:
    p = _load("pk")
    if not p:
        return []
    out = []
    for engine, by_b in p["medians_s"].items():
        for b, m in sorted(by_b.items()):
            out.append([engine, b, _f(m["write"]), _f(m["upsert"]), _f(m["read"]), str(m["n"])])
    return out


def main() -> None:
    head = ["benchmark", "minipaimon", "reference (same run)", "ratio", "target", "verdict", "load1 (ours)"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows():
        print("| " + " | ".join(r) + " |")
    peers = peers_table()
    if peers:
        print("\nPK scenario, every engine (median seconds; n = runs):\n")
        h2 = ["engine", "buckets", "write 1M", "upsert 100k", "merged read 1.05M", "n"]
        print("| " + " | ".join(h2) + " |")
        print("|" + "---|" * len(h2))
        for r in peers:
            print("| " + " | ".join(r) + " |")


if __name__ == "__main__":
    main()
