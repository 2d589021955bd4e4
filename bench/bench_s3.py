"""Tables on S3: minipaimon on SeaweedFS over loopback against pyarrow on the same server.

Starts its own SeaweedFS (``weed mini``, every port on 127.0.0.1, telemetry off; see
tests/s3_servers.py) and measures, side by side in one run:

1. append write / read of 1M rows (bench_append's data): ``t.write(data)`` (one commit) and
   ``open_table(path).scan().to_arrow()`` against ``pyarrow.parquet.write_table`` /
   ``read_table`` of the same rows through pyarrow's S3FileSystem to the same server
   (pyarrow's defaults, snappy). Target: throughput >= 0.8x pyarrow's (reference time /
   our time).
2. commit latency: the median of 100 small commits (10 rows each, ``new_write`` ->
   ``prepare_commit`` -> ``new_commit().commit``) on S3 and on local disk; the ratio is
   reported (no target: one S3 commit is a few HTTP round trips where local disk is an
   fsync).
3. a primary-key table (4 buckets): write 1M rows, upsert 1M rows (half new keys), then the
   merged read; checked row for row against the expected key set.

usage: python bench/bench_s3.py [--n 1000000] [--reps 3] [--commits 100]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import common  # noqa: E402
import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.fs as pafs  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
from bench_append import SCHEMA, make_data, same_rows  # noqa: E402

import minipaimon_core as mp  # noqa: E402
from tests.s3_servers import start_seaweed  # noqa: E402

TARGET = 0.8


def append_rep(server: Any, bucket: str, data: pa.Table, rep: int) -> dict[str, dict[str, float]]:
    opts = server.options()
    fs = pafs.S3FileSystem(access_key=server.access_key, secret_key=server.secret_key,
                           region=server.region, endpoint_override=server.endpoint.split("://")[1],
                           scheme="http")
    out: dict[str, dict[str, float]] = {}
    key = f"{bucket}/plain-{rep}/data.parquet"
    _, t = common.timed(lambda: pq.write_table(data, key, filesystem=fs))
    out["pyarrow_write"] = t.record()
    table = mp.create_table(f"s3://{bucket}/mp-{rep}", SCHEMA, options=opts)
    _, t = common.timed(lambda: table.write(data))
    out["mp_write"] = t.record()
    got, t = common.timed(lambda: pq.read_table(key, filesystem=fs))
    out["pyarrow_read"] = t.record()
    assert same_rows(got, data)
    got, t = common.timed(lambda: mp.open_table(f"s3://{bucket}/mp-{rep}", options=opts).scan().to_arrow())
    out["mp_read"] = t.record()
    assert same_rows(got, data)
    return out


def commit_latencies(path: str, commits: int, options: dict[str, str] | None) -> list[float]:
    table = mp.create_table(path, SCHEMA, options=options)
    data = make_data(10)
    out = []
    for i in range(commits):
        w = table.new_write("bench")
        w.write(data)
        msgs = w.prepare_commit()
        t0 = time.perf_counter()
        table.new_commit("bench").commit(msgs, i)
        out.append(time.perf_counter() - t0)
    return out


def pk_run(server: Any, bucket: str, n: int) -> dict[str, Any]:
    opts = server.options()
    path = f"s3://{bucket}/pk"
    table = mp.create_table(path, SCHEMA, primary_key=["id"], options={**opts, "bucket": "4"})
    first = make_data(n)
    _, t_write = common.timed(lambda: table.write(first))
    ids = np.arange(n // 2, n // 2 + n, dtype=np.int64)  # half updates, half new keys
    upsert = make_data(n).set_column(0, "id", pa.array(ids))
    _, t_upsert = common.timed(lambda: table.write(upsert))
    got, t_read = common.timed(lambda: mp.open_table(path, options=opts).scan().to_arrow())
    assert got.num_rows == n // 2 + n
    assert got.sort_by("id").column("id").to_pylist() == list(range(n // 2 + n))
    return {"write_s": t_write.record(), "upsert_s": t_upsert.record(), "merged_read_s": t_read.record(),
            "rows_after": got.num_rows}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--commits", type=int, default=100)
    args = ap.parse_args()
    results: dict[str, Any] = {"env": common.environment(), "n": args.n, "target": TARGET}
    work = tempfile.mkdtemp(prefix="bench-s3-")
    t0 = time.perf_counter()
    server = start_seaweed(os.path.join(work, "seaweed"))
    results["seaweed_start_s"] = time.perf_counter() - t0
    try:
        bucket = server.create_bucket()
        data = make_data(args.n)
        reps = [append_rep(server, bucket, data, r) for r in range(args.reps)]
        summary = {k: common.summarize([r[k] for r in reps]) for k in reps[0]}
        results["append"] = summary
        w_ratio = summary["pyarrow_write"]["median_s"] / summary["mp_write"]["median_s"]
        r_ratio = summary["pyarrow_read"]["median_s"] / summary["mp_read"]["median_s"]
        results["append_ratios"] = {"write": w_ratio, "read": r_ratio}
        s3 = commit_latencies(f"s3://{bucket}/commits", args.commits, server.options())
        local = commit_latencies(os.path.join(work, "commits-local"), args.commits, None)
        results["commits"] = {"s3_median_ms": statistics.median(s3) * 1000,
                              "local_median_ms": statistics.median(local) * 1000,
                              "ratio": statistics.median(s3) / statistics.median(local),
                              "s3_p90_ms": sorted(s3)[int(len(s3) * 0.9)] * 1000}
        results["pk"] = pk_run(server, bucket, args.n)
    finally:
        server.stop()
    path = common.write_results("s3", results)
    a, c, p = results["append"], results["commits"], results["pk"]
    print(f"append write: mp {a['mp_write']['median_s']:.3f} s, pyarrow {a['pyarrow_write']['median_s']:.3f} s"
          f" -> {results['append_ratios']['write']:.2f} ({common.verdict(w_ratio, TARGET, True)})")
    print(f"append read:  mp {a['mp_read']['median_s']:.3f} s, pyarrow {a['pyarrow_read']['median_s']:.3f} s"
          f" -> {results['append_ratios']['read']:.2f} ({common.verdict(r_ratio, TARGET, True)})")
    print(f"commit median: s3 {c['s3_median_ms']:.1f} ms, local {c['local_median_ms']:.1f} ms -> {c['ratio']:.1f}x")
    print(f"pk 4 buckets: write {p['write_s']['s']:.2f} s, upsert {p['upsert_s']['s']:.2f} s, "
          f"merged read {p['merged_read_s']['s']:.2f} s ({p['rows_after']} rows)")
    print(f"results: {path}")


if __name__ == "__main__":
    main()
