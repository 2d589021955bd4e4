"""Tables on Azure Blob Storage: minipaimon on Azurite over loopback against pyarrow and
obstore on the same emulator.

Starts its own Azurite (tests/azurite.py: ``azurite-blob`` on 127.0.0.1, telemetry off) and
measures, side by side in one run:

1. append write / read of 1M rows (bench_append's data): ``t.write(data)`` (one commit) and
   ``open_table(path).scan().to_arrow()`` against ``pyarrow.parquet.write_table`` /
   ``read_table`` of the same rows through pyarrow's AzureFileSystem to the same emulator
   (pyarrow's defaults, snappy). Target: throughput >= 0.8x pyarrow's (reference time /
   our time).
2. the data-file path: the same Parquet bytes (zstd, as minipaimon writes them) put / got
   through pyarrow's AzureFileSystem stream and through obstore (one whole-object PUT / GET,
   bytes through Python): why data files stream through pyarrow.
3. commit latency: the median of 50 small commits on Azurite and on local disk (reported).

usage: python bench/bench_azure.py [--n 1000000] [--reps 3] [--commits 50]
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
import obstore  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
from bench_append import SCHEMA, make_data, same_rows  # noqa: E402
from bench_s3 import TARGET, commit_latencies  # noqa: E402

import minipaimon_core as mp  # noqa: E402
from minipaimon_core.io.fileio_azure import AzureSettings  # noqa: E402
from tests.azurite import AzuriteServer, start_azurite  # noqa: E402


def append_rep(server: AzuriteServer, container: str, data: pa.Table, rep: int) -> dict[str, dict[str, float]]:
    opts = server.options()
    fs = AzureSettings.resolve(opts, {}).make_arrow_fs()
    out: dict[str, dict[str, float]] = {}
    key = f"{container}/plain-{rep}/data.parquet"
    _, t = common.timed(lambda: pq.write_table(data, key, filesystem=fs))
    out["pyarrow_write"] = t.record()
    table = mp.create_table(f"az://{container}/mp-{rep}", SCHEMA, options=opts)
    _, t = common.timed(lambda: table.write(data))
    out["mp_write"] = t.record()
    got, t = common.timed(lambda: pq.read_table(key, filesystem=fs))
    out["pyarrow_read"] = t.record()
    assert same_rows(got, data)
    got, t = common.timed(lambda: mp.open_table(f"az://{container}/mp-{rep}", options=opts).scan().to_arrow())
    out["mp_read"] = t.record()
    assert same_rows(got, data)
    return out


def data_path_rep(server: AzuriteServer, container: str, data: pa.Table, rep: int) -> dict[str, dict[str, float]]:
    """The same zstd Parquet bytes through each client (encoding excluded)."""
    sink = pa.BufferOutputStream()
    pq.write_table(data, sink, compression="zstd")
    payload = sink.getvalue()
    fs = AzureSettings.resolve(server.options(), {}).make_arrow_fs()
    store = server.store(container)
    key = f"bytes-{rep}/data.parquet"
    out: dict[str, dict[str, float]] = {}

    def arrow_put() -> None:
        with fs.open_output_stream(f"{container}/arrow-{key}") as f:
            f.write(payload)

    _, t = common.timed(arrow_put)
    out["arrow_put"] = t.record()
    _, t = common.timed(lambda: obstore.put(store, f"obstore-{key}", payload.to_pybytes()))
    out["obstore_put"] = t.record()
    got, t = common.timed(lambda: pq.read_table(fs.open_input_file(f"{container}/arrow-{key}")))
    out["arrow_get_decode"] = t.record()
    assert got.num_rows == data.num_rows
    got, t = common.timed(lambda: pq.read_table(pa.BufferReader(obstore.get(store, f"obstore-{key}").bytes())))
    out["obstore_get_decode"] = t.record()
    assert got.num_rows == data.num_rows
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--commits", type=int, default=50)
    args = ap.parse_args()
    results: dict[str, Any] = {"env": common.environment(), "n": args.n, "target": TARGET}
    work = tempfile.mkdtemp(prefix="bench-azure-")
    t0 = time.perf_counter()
    server = start_azurite(os.path.join(work, "azurite"))
    results["azurite_start_s"] = time.perf_counter() - t0
    try:
        container = server.create_container()
        data = make_data(args.n)
        reps = [append_rep(server, container, data, r) for r in range(args.reps)]
        summary = {k: common.summarize([r[k] for r in reps]) for k in reps[0]}
        results["append"] = summary
        w_ratio = summary["pyarrow_write"]["median_s"] / summary["mp_write"]["median_s"]
        r_ratio = summary["pyarrow_read"]["median_s"] / summary["mp_read"]["median_s"]
        results["append_ratios"] = {"write": w_ratio, "read": r_ratio}
        paths = [data_path_rep(server, container, data, r) for r in range(args.reps)]
        results["data_path"] = {k: common.summarize([r[k] for r in paths]) for k in paths[0]}
        azure = commit_latencies(f"az://{container}/commits", args.commits, server.options())
        local = commit_latencies(os.path.join(work, "commits-local"), args.commits, None)
        results["commits"] = {"azure_median_ms": statistics.median(azure) * 1000,
                              "local_median_ms": statistics.median(local) * 1000,
                              "ratio": statistics.median(azure) / statistics.median(local)}
    finally:
        server.stop()
    path = common.write_results("azure", results)
    a, d, c = results["append"], results["data_path"], results["commits"]
    print(f"azurite start: {results['azurite_start_s']:.2f} s")
    print(f"append write: mp {a['mp_write']['median_s']:.3f} s, pyarrow {a['pyarrow_write']['median_s']:.3f} s"
          f" -> {w_ratio:.2f} ({common.verdict(w_ratio, TARGET, True)})")
    print(f"append read:  mp {a['mp_read']['median_s']:.3f} s, pyarrow {a['pyarrow_read']['median_s']:.3f} s"
          f" -> {r_ratio:.2f} ({common.verdict(r_ratio, TARGET, True)})")
    print(f"data path put: arrow stream {d['arrow_put']['median_s']:.3f} s, obstore {d['obstore_put']['median_s']:.3f} s;"
          f" get+decode: arrow {d['arrow_get_decode']['median_s']:.3f} s, obstore {d['obstore_get_decode']['median_s']:.3f} s")
    print(f"commit median: azure {c['azure_median_ms']:.1f} ms, local {c['local_median_ms']:.1f} ms -> {c['ratio']:.1f}x")
    print(f"results: {path}")


if __name__ == "__main__":
    main()
