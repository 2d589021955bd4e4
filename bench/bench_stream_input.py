"""Peak memory of writing a 10M-row stream (a DuckDB query) into a primary-key table.

The write consumes the query's Arrow C stream batch by batch; with ``write-buffer-size``
64 mb the buffer spills, so peak RSS is bounded by the buffer, not by the input (10M rows,
~240 MB as Arrow). Each case runs in a child process that reports its own peak RSS
(``VmHWM``) above its baseline after imports. ``write-only``: the automatic compaction after
the commit (which reads whole buckets) is not part of what is measured here.

* ``stream``: ``t.write(duckdb.sql(...).to_arrow_reader(100_000))`` - the query streamed
  in 100k-row batches (a bare relation's ``__arrow_c_stream__`` works too, but DuckDB then
  materialises the result itself: measured the same as the reference)
* ``materialised``: ``t.write(duckdb.sql(...).fetch_arrow_table())`` - the same rows as one
  Arrow table first (the reference: what a writer that needs the whole input would hold)

The stream runs at ``--rows`` and at twice that: bounded by the buffer means the peak does
not grow with the input.

usage: python bench/bench_stream_input.py [--rows 10000000] [--buffer-mb 64]
Results: bench/results/stream_input.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

QUERY = ("SELECT range AS id, 'k' || (range % 1000) AS k, (range * 0.5)::DOUBLE AS v "
         "FROM range(0, {rows})")


def child(case: str, rows: int, buffer_mb: int) -> None:
    import duckdb
    import pyarrow as pa

    import minipaimon_core as mp

    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("k", pa.string()), ("v", pa.float64())])
    with tempfile.TemporaryDirectory() as d:
        table = mp.create_table(os.path.join(d, "t"), schema, primary_key=["id"],
                                options={"bucket": "4", "write-buffer-size": f"{buffer_mb} mb",
                                         "write-only": "true"})
        baseline = _kb("VmRSS")
        relation = duckdb.sql(QUERY.format(rows=rows))
        table.write(relation.to_arrow_reader(100_000) if case == "stream"
                    else relation.fetch_arrow_table())
        written = table.latest_snapshot().totalRecordCount  # type: ignore[union-attr]
        print(json.dumps({"case": case, "rows": written, "baseline_mb": baseline / 1024,
                          "peak_mb": _kb("VmHWM") / 1024}))


def _kb(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--buffer-mb", type=int, default=64)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        child(a.child, a.rows, a.buffer_mb)
        return
    results = []
    for case, rows in (("stream", a.rows), ("stream", 2 * a.rows), ("materialised", a.rows)):
        out = subprocess.run([sys.executable, __file__, "--child", case, "--rows", str(rows),
                              "--buffer-mb", str(a.buffer_mb)], capture_output=True, text=True, check=True)
        r = json.loads(out.stdout.strip().splitlines()[-1])
        r["above_baseline_mb"] = r["peak_mb"] - r["baseline_mb"]
        results.append(r)
        print(f"{case:>13}: {r['rows']:,} rows, peak {r['peak_mb']:.0f} MB "
              f"({r['above_baseline_mb']:.0f} MB above the baseline), write-buffer-size {a.buffer_mb} mb")
    path = common.write_results("stream_input", {"env": common.environment(), "rows": a.rows,
                                                 "buffer_mb": a.buffer_mb, "results": results})
    print(f"results: {path}")


if __name__ == "__main__":
    main()
