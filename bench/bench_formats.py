"""Data-file formats: writing and reading 1M rows as ORC and Avro through minipaimon, against
pyarrow's own ORC writer/reader on the same rows (and Parquet through minipaimon).

Data: the reference ``bench_common`` base table (id bigint, k, v, ts; imported at run time
from ``$MINIPAIMON_REF_BENCH``), 1M rows, one append table per format (bucket -1: one file).
Per round, each case in turn (so they share the load):
  write  ``create_table(... file.format)`` + ``write(rows)`` (minipaimon: stats, manifests,
         snapshot included); pyarrow: ``pyarrow.orc.write_table`` of the same rows (zstd)
  read   ``open_table(p).to_arrow()`` (open, plan, read); pyarrow: ``pyarrow.orc.read_table``
Medians of ``--reps`` rounds; ratio = minipaimon ORC / pyarrow ORC.

usage: python bench/bench_formats.py [--reps 3] [--rows 1000000]
Results: bench/results/formats.json (formats-<tag>.json with MINIPAIMON_BENCH_TAG).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
import pyarrow.orc as orc  # noqa: E402

import minipaimon_core as mp  # noqa: E402


def write_case(fmt: str, rep: int, rows: Any) -> tuple[str, dict[str, Any]]:
    path = os.path.join(common.scratch(f"formats-{fmt}-{rep}"), "t")
    if fmt == "pyarrow-orc":
        _, w = common.timed(lambda: orc.write_table(rows, path + ".orc", compression="zstd"))
        return path + ".orc", w.record()
    _, w = common.timed(lambda: mp.create_table(path, rows.schema, options={"file.format": fmt}).write(rows))
    return path, w.record()


def read_case(fmt: str, path: str) -> dict[str, Any]:
    if fmt == "pyarrow-orc":
        out, r = common.timed(lambda: orc.read_table(path))
    else:
        out, r = common.timed(lambda: mp.open_table(path).to_arrow())
    return {**r.record(), "rows": out.num_rows}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--rows", type=int, default=1_000_000)
    a = ap.parse_args()
    rows = common.reference_data().base_table(a.rows)
    cases = ["pyarrow-orc", "orc", "parquet", "avro"]
    writes: dict[str, list[dict[str, Any]]] = {c: [] for c in cases}
    reads: dict[str, list[dict[str, Any]]] = {c: [] for c in cases}
    for rep in range(a.reps):
        for c in cases:
            path, w = write_case(c, rep, rows)
            writes[c].append(w)
            read_case(c, path)  # page cache warm, as the other benchmarks read
            reads[c].append(read_case(c, path))
    summary = {c: {"write": common.summarize(writes[c]), "read": common.summarize(reads[c])} for c in cases}
    ratios = {op: summary["orc"][op]["median_s"] / summary["pyarrow-orc"][op]["median_s"] for op in ("write", "read")}
    results = {"env": common.environment(), "rows": a.rows, "summary": summary, "orc_vs_pyarrow": ratios}
    print(f"{'case':<12} {'write s':>8} {'read s':>8}")
    for c in cases:
        print(f"{c:<12} {summary[c]['write']['median_s']:8.3f} {summary[c]['read']['median_s']:8.3f}")
    print(f"minipaimon ORC / pyarrow ORC: write {ratios['write']:.2f}x, read {ratios['read']:.2f}x")
    print("results:", common.write_results("formats", results))


if __name__ == "__main__":
    main()
