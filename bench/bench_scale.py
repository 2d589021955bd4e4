"""Scale (issue 40): peak memory and CPU of compaction and large writes as buckets grow.

Cases (each figure measured in a fresh child process: peak RSS is the child's ``VmHWM``
minus its RSS just before the operation, CPU is the child's process time, threads included):

``compact``   one bucket holding 4 overlapping sorted runs of N rows in all (4 writes of
              N/4 random keys out of 0..2N with ``write-only``), then ``compact(full=True)``.
              Target: the rise at 16M rows within 1.5x the rise at 1M, under 300 MB.
``write``     a write of N rows (``bench_common``'s table, 1M-row batches, one ``t.write``
              of a RecordBatchReader, one bucket) into an empty table, with the automatic
              compaction (default options) and with ``write-only``: peak RSS rise, CPU,
              the files and levels it leaves, and whether a compaction rewrote the load.
              Targets: auto within 1.3x of write-only in peak RSS; a sorted load written
              once (no COMPACT snapshot, files that do not overlap).
``small-files``  an append table (``bucket`` -1, 5 partitions) after ``--commits`` commits
              of 100 rows (5 files each), and deltalake's table of the same commits (change
              data feed on, peers' venv): a full read (CPU ms a file; target <= 1 ms and
              deltalake's), a stream from the first snapshot (CPU ms a snapshot) and the
              expiration of all but the last snapshot, against deltalake's ``load_cdf``
              from version 0 (CPU ms a version).
``write-cpu`` the CPU of one primary-key write of N rows (``bench_common``'s table, in memory,
              one ``t.write``; rows ``--cpu-rows``, default 4M and 16M) into 1 bucket, 8
              buckets and dynamic buckets (``bucket`` -1, default target), against pypaimon
              2.1 with its Rust write path (``bench_pypaimon.py pk --native``; target: at or
              below) and deltalake's append of the same table (``bench_deltalake.py pk``;
              target: within 2.5x); and an append write of 1M rows into 1,000 partitions
              against deltalake's (target: within 1.5x). Fixed buckets and the partitions
              also against the same files written by pyarrow alone (the format's floor);
              ``--snappy`` adds our bucketed writes with deltalake's codec. ``--shapes "8 buckets,dynamic"``
              measures only those bucket modes (and not the partitions write); ``--repeat
              N`` runs each write (ours, codes alternating, and the peers') N times and keeps the least
              CPU (all runs are recorded): one run is at the mercy of the other sessions.

Each case runs at ``--rows`` (default 1M, 4M, 16M), one run each, for every ``--code
LABEL=DIR`` (default: this checkout as ``new``; add e.g. ``old=/tmp/base`` for a checkout
of the code before, so both are measured in the same run on the same input tables). The
machine's load is recorded beside every figure. Results: ``results/scale.json``.

    nice -n 10 .venv/bin/python bench/bench_scale.py compact write --code old=/tmp/base
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

CASES = ("compact", "write", "small-files", "write-cpu")
COMPACT_RISE_MB = 300
COMPACT_GROWTH = 1.5
AUTO_VS_WRITE_ONLY = 1.3


# ---------------------------------------------------------------------------- children


def _status_kb(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def _measure(fn: Any) -> dict[str, Any]:
    """Run ``fn`` and return its peak RSS rise (``VmHWM`` over the RSS before), the peak
    rise of anonymous memory (``RssAnon`` sampled every 10 ms: without the pages of shared
    libraries that a first use of their code maps in), CPU and wall time."""
    import threading

    import pyarrow as pa

    pa.default_memory_pool().release_unused()
    base, anon0 = _status_kb("VmRSS"), _status_kb("RssAnon")
    anon = [anon0]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.01):
            anon.append(_status_kb("RssAnon"))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    cpu0, wall0 = time.process_time(), time.perf_counter()
    out = fn()
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    done.set()
    sampler.join()
    peak = _status_kb("VmHWM")
    return {"rise_mb": (peak - base) / 1024, "anon_rise_mb": (max(anon) - anon0) / 1024,
            "peak_mb": peak / 1024, "base_mb": base / 1024, "cpu_s": cpu, "wall_s": wall, "result": out}


def _runs_table(path: str, rows: int) -> None:
    """A one-bucket table holding 4 overlapping sorted runs of ``rows`` rows in all."""
    import numpy as np

    import minipaimon_core as mp

    data = common.reference_data()
    t = mp.create_table(path, data.SCHEMA, primary_key=["id"],
                        options={"bucket": "1", "write-only": "true", "num-sorted-run.stop-trigger": "1000"})
    rng = np.random.default_rng(40)
    for run in range(4):
        ids = np.sort(rng.choice(2 * rows, rows // 4, replace=False)).astype(np.int64)
        t.write(data._mk(ids, "k", ids * 0.5, run + 1))


def _files(t: Any) -> list[dict[str, Any]]:
    return [{"level": f["level"], "rows": f["record_count"], "min": f["min_key"], "max": f["max_key"]}
            for f in t.system_table("files").to_pylist()]


def _warm_up(path: str) -> None:
    """Compact a small table first, so that lazily loaded modules, thread pools and codec
    state are in place before the measured operation (they are not its working memory)."""
    _runs_table(path, 40_000)
    import minipaimon_core as mp

    mp.open_table(path).compact(full=True)


def child_compact(path: str) -> dict[str, Any]:
    import minipaimon_core as mp

    _warm_up(path + "-warm-up")
    t = mp.open_table(path)
    before = len(t.system_table("files").to_pylist())
    m = _measure(lambda: t.compact(full=True))
    t = mp.open_table(path)
    snap = t.latest_snapshot()
    got = t.scan(columns=["id", "v"]).to_arrow()
    import pyarrow.compute as pc

    m.update({"files_before": before, "files_after": len(_files(t)), "rows": snap.totalRecordCount,
              "check": {"rows": got.num_rows, "sum_id": pc.sum(got.column("id")).as_py(),
                        "sum_v": pc.sum(got.column("v")).as_py()}})
    m.pop("result")
    return m


SMALL_SCHEMA_DOC = "id bigint, k string, v double, p int (5 partitions); 100 rows a commit"


def _small_batch(c: int) -> Any:
    import numpy as np
    import pyarrow as pa

    ids = np.arange(c * 100, c * 100 + 100)
    return pa.table({"id": ids, "k": pa.array([f"k{i}" for i in ids]), "v": ids * 0.5,
                     "p": (ids % 5).astype(np.int32)})


def child_small_files(path: str, commits: int) -> dict[str, Any]:
    import minipaimon_core as mp
    from minipaimon_core.stream.stream import StreamOffset, StreamScanner

    first = _small_batch(0)
    t = mp.create_table(path, first.schema, partition_by=["p"],
                        options={"snapshot.num-retained.min": str(commits + 1),
                                 "snapshot.num-retained.max": str(commits + 1)})
    for c in range(commits):
        t.write(_small_batch(c))
    files = len(t.system_table("files").to_pylist())

    def read() -> int:
        return mp.open_table(path).scan().to_arrow().num_rows

    def stream() -> int:
        sc = StreamScanner(mp.open_table(path), {"scan.mode": "from-snapshot", "scan.snapshot-id": "1"})
        start, n = StreamOffset(0), 0
        while (end := sc.latest_offset(start)) != start:
            for split in sc.plan(start, end):
                n += sum(b.num_rows for b in sc.read(split))
            start = end
        return n

    def expire() -> int:
        return len(mp.open_table(path).expire_snapshots(retain_max=1, retain_min=1).snapshots)

    out: dict[str, Any] = {"commits": commits, "files": files}
    for name, fn in (("read", read), ("stream", stream), ("expire", expire)):
        m = _measure(fn)
        out[name] = {"cpu_s": m["cpu_s"], "wall_s": m["wall_s"], "result": m["result"]}
    return out


_DELTA_CHILD = r"""
import json, os, shutil, sys, time
import numpy as np, pyarrow as pa
from deltalake import DeltaTable, write_deltalake
path, commits = sys.argv[1], int(sys.argv[2])
shutil.rmtree(path, ignore_errors=True)
for c in range(commits):
    ids = np.arange(c * 100, c * 100 + 100)
    t = pa.table({"id": ids, "k": pa.array([f"k{i}" for i in ids]), "v": ids * 0.5, "p": (ids % 5).astype(np.int32)})
    write_deltalake(path, t, mode="append", partition_by=["p"],
                    configuration={"delta.enableChangeDataFeed": "true"} if c == 0 else None)
def timed(fn):
    c0, w0 = time.process_time(), time.perf_counter()
    r = fn()
    return {"cpu_s": time.process_time() - c0, "wall_s": time.perf_counter() - w0, "result": r}
def read():
    return DeltaTable(path).to_pyarrow_table().num_rows
def cdf():
    reader = DeltaTable(path).load_cdf(starting_version=0)
    return sum(b.num_rows for b in pa.RecordBatchReader.from_stream(reader))
files = len(DeltaTable(path).file_uris())
print(json.dumps({"commits": commits, "files": files, "read": timed(read), "cdf": timed(cdf)}))
"""


def child_write_cpu(path: str, rows: int, buckets: str, compression: str = "zstd") -> dict[str, Any]:
    import minipaimon_core as mp

    data = common.reference_data()
    base = data.base_table(rows)
    t = mp.create_table(path, data.SCHEMA, primary_key=["id"],
                        options={"bucket": buckets, "file.compression": compression})
    m = _measure(lambda: t.write(base))
    snap = mp.open_table(path).latest_snapshot()
    return {"cpu_s": m["cpu_s"], "wall_s": m["wall_s"], "rows": snap.totalRecordCount if snap else 0}


def _fsync_with_directories(files: list[str]) -> None:
    """fsync each of ``files`` and then each directory holding them, as a commit makes them durable."""
    for name in files + sorted({os.path.dirname(f) for f in files}):
        fd = os.open(name, os.O_RDONLY)
        os.fsync(fd)
        os.close(fd)


def child_buckets_floor(path: str, rows: int, buckets: int) -> dict[str, Any]:
    """What writing the figure's files of a fixed-bucket primary-key write costs pyarrow,
    the floor under any Python writer of the format: each row's bucket by Paimon's hash of
    the key (minipaimon's NumPy hash), the rows taken into their buckets (the input is in
    key order, so each bucket is too), the key-value columns Paimon's files hold
    (``_KEY_id``, ``_SEQUENCE_NUMBER``, ``_VALUE_KIND``, then the row), one zstd (level 1)
    Parquet file a bucket with the writer's page checksums and no statistics, dictionary
    pages where minipaimon's writer makes them (the constant columns), then each file and
    directory fsynced; no file stats, manifests nor commit. ``parquet_cpu_s``: the Parquet
    writes alone."""
    import uuid

    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from minipaimon_core.file_format.parquet import dictionary_columns
    from minipaimon_core.format import bucket_hash

    base = common.reference_data().base_table(rows)
    parquet_cpu = [0.0]

    def write() -> int:
        ids = bucket_hash.buckets(bucket_hash.bucket_hashes([base.column("id")], ["BIGINT NOT NULL"]),
                                  buckets, in_place=True)
        files = []
        for b in range(buckets):
            at = np.flatnonzero(ids == b)
            rows_b = base.take(pa.array(at))
            table = pa.table({"_KEY_id": rows_b.column("id"), "_SEQUENCE_NUMBER": pa.array(at),
                              "_VALUE_KIND": pa.array(np.zeros(len(at), dtype=np.int8)),
                              **{n: rows_b.column(n) for n in rows_b.column_names}})
            directory = os.path.join(path, f"bucket-{b}")
            os.makedirs(directory)
            files.append(os.path.join(directory, f"data-{uuid.uuid4()}-0.parquet"))
            c0 = time.process_time()
            with pa.OSFile(files[-1], "wb") as raw, pa.BufferedOutputStream(raw, 1 << 18) as out:
                pq.write_table(table, out, compression="zstd", compression_level=1,
                               use_dictionary=dictionary_columns(table), write_statistics=False,
                               write_page_checksum=True)
            parquet_cpu[0] += time.process_time() - c0
        _fsync_with_directories(files)
        return len(files)

    m = _measure(write)
    return {"cpu_s": m["cpu_s"], "wall_s": m["wall_s"], "parquet_cpu_s": parquet_cpu[0]}


def _partitioned(rows: int) -> Any:
    import numpy as np
    import pyarrow as pa

    data = common.reference_data()
    t = data.base_table(rows)
    return t.append_column("p", pa.array((np.arange(rows) % 1000).astype(np.int32)))


def child_partitions(path: str, rows: int) -> dict[str, Any]:
    import minipaimon_core as mp

    t = _partitioned(rows)
    table = mp.create_table(path, t.schema, partition_by=["p"])
    m = _measure(lambda: table.write(t))
    return {"cpu_s": m["cpu_s"], "wall_s": m["wall_s"], "files": len(table.system_table("files").to_pylist())}


def child_partitions_floor(path: str, rows: int) -> dict[str, Any]:
    """What writing the 1,000-partition figure's files costs pyarrow in Paimon's layout, the
    floor under any Python writer of the format: the rows sorted by partition, one zstd
    Parquet file a partition (plain pages, no statistics) under ``p=<v>/bucket-0/``, then
    each file and directory fsynced; no stats, manifests nor commit."""
    import uuid

    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    t = _partitioned(rows)

    def write() -> int:
        ordered = t.take(pc.sort_indices(t.column("p")))
        p = ordered.column("p").to_numpy()
        cuts = [0, *(np.flatnonzero(np.diff(p)) + 1).tolist(), rows]
        files = []
        for start, end in zip(cuts[:-1], cuts[1:]):
            directory = os.path.join(path, f"p={p[start]}", "bucket-0")
            os.makedirs(directory)
            files.append(os.path.join(directory, f"data-{uuid.uuid4()}-0.parquet"))
            with pa.OSFile(files[-1], "wb") as raw, pa.BufferedOutputStream(raw, 1 << 18) as out:
                writer = pq.ParquetWriter(out, t.schema, compression="zstd", use_dictionary=False,
                                          write_statistics=False)
                writer.write_table(ordered.slice(start, end - start))
                writer.close()
        _fsync_with_directories(files)
        return len(files)

    m = _measure(write)
    return {"cpu_s": m["cpu_s"], "wall_s": m["wall_s"]}


_DELTA_PARTITIONS = r"""
import json, shutil, sys, time
import numpy as np, pyarrow as pa
sys.path.insert(0, sys.argv[3])
import bench_common as data
from deltalake import write_deltalake
path, rows = sys.argv[1], int(sys.argv[2])
t = data.base_table(rows)
t = t.append_column("p", pa.array((np.arange(rows) % 1000).astype(np.int32)))
shutil.rmtree(path, ignore_errors=True)
c0, w0 = time.process_time(), time.perf_counter()
write_deltalake(path, t, partition_by=["p"])
print(json.dumps({"cpu_s": time.process_time() - c0, "wall_s": time.perf_counter() - w0}))
"""


def child_write(path: str, rows: int, write_only: bool) -> dict[str, Any]:
    import pyarrow as pa

    import minipaimon_core as mp

    data = common.reference_data()
    options = {"bucket": "1", **({"write-only": "true"} if write_only else {})}
    _warm_up(path + "-warm-up")
    t = mp.create_table(path, data.SCHEMA, primary_key=["id"], options=options)
    step = 1_000_000
    batches = (b for s in range(0, rows, step) for b in data.base_table(min(step, rows - s), start=s).to_batches())
    reader = pa.RecordBatchReader.from_batches(data.SCHEMA, batches)
    m = _measure(lambda: t.write(reader))
    t = mp.open_table(path)
    files = _files(t)
    m.update({"snapshots": [s.commit_kind for s in t.snapshots()], "files": len(files),
              "levels": sorted({f["level"] for f in files}), "rows": t.latest_snapshot().totalRecordCount})
    m.pop("result")
    return m


# ---------------------------------------------------------------------------- parent


def run_child(code: str, args: list[str]) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": code}
    load = common.load()
    proc = subprocess.run(["nice", "-n", "10", sys.executable, os.path.abspath(__file__), "--child", *args],
                          capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"child {args} ({code}) failed: {proc.stderr.strip()[-2000:]}")
    out: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    out["load_before"] = load
    out["load_after"] = common.load()
    return out


def bench_compact(codes: dict[str, str], rows_list: list[int], builder: str) -> list[dict[str, Any]]:
    out = []
    for rows in rows_list:
        source = os.path.join(common.scratch(f"scale-compact-{rows}"), "source")
        print(f"compact: building 4 runs of {rows:,} rows ...", file=sys.stderr)
        run_child(builder, ["build", source, str(rows)])
        for label, code in codes.items():
            path = os.path.join(os.path.dirname(source), label)
            shutil.copytree(source, path)
            print(f"compact: {label}, {rows:,} rows ...", file=sys.stderr)
            r = run_child(code, ["compact", path])
            r.update({"case": "compact", "code": label, "rows_in": rows})
            out.append(r)
            print(f"  rise {r['rise_mb']:.0f} MB (anon {r['anon_rise_mb']:.0f}), cpu {r['cpu_s']:.1f} s, wall {r['wall_s']:.1f} s, "
                  f"files {r['files_before']} -> {r['files_after']}, load {r['load_before'][0]}", file=sys.stderr)
            shutil.rmtree(path, ignore_errors=True)
        shutil.rmtree(os.path.dirname(source), ignore_errors=True)
    return out


def bench_write(codes: dict[str, str], rows_list: list[int]) -> list[dict[str, Any]]:
    out = []
    for rows in rows_list:
        for label, code in codes.items():
            for write_only in (False, True):
                path = os.path.join(common.scratch(f"scale-write-{rows}-{label}-{write_only}"), "t")
                mode = "write-only" if write_only else "auto"
                print(f"write: {label}, {rows:,} rows, {mode} ...", file=sys.stderr)
                r = run_child(code, ["write", path, str(rows), "1" if write_only else "0"])
                r.update({"case": "write", "code": label, "rows_in": rows, "mode": mode})
                out.append(r)
                print(f"  rise {r['rise_mb']:.0f} MB (anon {r['anon_rise_mb']:.0f}), cpu {r['cpu_s']:.1f} s, wall {r['wall_s']:.1f} s, "
                      f"{r['snapshots']}, {r['files']} files at levels {r['levels']}, load {r['load_before'][0]}",
                      file=sys.stderr)
                shutil.rmtree(os.path.dirname(path), ignore_errors=True)
    return out


def bench_small_files(codes: dict[str, str], commits: int) -> list[dict[str, Any]]:
    out = []
    for label, code in codes.items():
        path = os.path.join(common.scratch(f"scale-small-{label}"), "t")
        print(f"small files: {label}, {commits} commits ...", file=sys.stderr)
        r = run_child(code, ["small-files", path, str(commits)])
        r.update({"case": "small-files", "code": label})
        out.append(r)
        shutil.rmtree(os.path.dirname(path), ignore_errors=True)
    if os.path.exists(common.PEER_PY):
        path = os.path.join(common.scratch("scale-small-delta"), "t")
        print(f"small files: deltalake, {commits} commits ...", file=sys.stderr)
        load = common.load()
        proc = subprocess.run(["nice", "-n", "10", common.PEER_PY, "-c", _DELTA_CHILD, path, str(commits)],
                              capture_output=True, text=True)
        if proc.returncode == 0:
            r = json.loads(proc.stdout.strip().splitlines()[-1])
            r.update({"case": "small-files", "code": "deltalake", "load_before": load, "load_after": common.load()})
            out.append(r)
        else:
            print(f"  [fail] deltalake: {proc.stderr.strip()[-500:]}", file=sys.stderr)
        shutil.rmtree(os.path.dirname(path), ignore_errors=True)
    for r in out:
        per = {k: round(r[k]["cpu_s"] / (r["files"] if k == "read" else r["commits"]) * 1000, 3)
               for k in ("read", "stream", "expire", "cdf") if k in r}
        r["ms_cpu"] = per
        print(f"  {r['code']}: {r['files']} files, ms CPU a file (read) / a snapshot: {per}, load {r['load_before'][0]}",
              file=sys.stderr)
    return out


SHAPES = {"1 bucket": "1", "8 buckets": "8", "dynamic": "-1"}


def _peer(script: str, args: list[str]) -> dict[str, Any] | None:
    cwd = common.scratch("scale-peers")
    r = common.run_reference(script, args, cwd, timeout=3600)
    shutil.rmtree(cwd, ignore_errors=True)
    return r


def peer_least(note: Any, who: str, shape: str, rows: int, repeat: int, script: str, args: list[str]) -> None:
    """A peer's write ``repeat`` times; noted: the least CPU (as for our writes), every run kept."""
    runs = []
    for _ in range(repeat):
        load = common.load()
        p = _peer(script, args)
        if p is not None:
            runs.append((p, load[0]))
    if runs:
        p, load = min(runs, key=lambda x: x[0]["write_cpu_s"])
        note({"who": who, "shape": shape, "rows": rows, "cpu_s": p["write_cpu_s"], "wall_s": p["write_s"], "load": load,
              "runs_cpu_s": [round(r["write_cpu_s"], 3) for r, _ in runs], "runs_load": [x for _, x in runs]})


def bench_write_cpu(codes: dict[str, str], rows_list: list[int], only: str = "",
                    shapes: list[str] | None = None, repeat: int = 1,
                    snappy: bool = False) -> list[dict[str, Any]]:
    """``only`` = "partitions": the 1,000-partition figure alone, ``repeat`` times.
    ``shapes``: only these of SHAPES (the 1,000-partition write is then skipped).
    ``repeat``: runs of each of our writes (codes alternating) and of each peer's; the figure
    is the least CPU, all runs are kept (the machine's other load adds system time at random).
    Fixed-bucket shapes also measure the pyarrow floor of their files
    (:func:`child_buckets_floor`); ``snappy``: each code's write also with
    ``file.compression`` = snappy (deltalake's codec), as "<label> snappy"."""
    out: list[dict[str, Any]] = []
    if only == "partitions":  # the 1,000-partition figure alone, ``repeat`` times
        written: list[str] = []
        for i in range(repeat):
            out += bench_partitions(codes, written, f"-{i}")
        _remove(written)
        return out

    def note(r: dict[str, Any]) -> None:
        out.append(r)
        print(f"  {r['who']} {r['shape']} {r['rows']:,}: cpu {r['cpu_s']:.2f} s, load {r['load']}", file=sys.stderr)

    for rows in rows_list:
        for shape, buckets in SHAPES.items():
            if shapes is not None and shape not in shapes:
                continue
            writes = [(label, code, "zstd") for label, code in codes.items()]
            writes += [(f"{label} snappy", code, "snappy") for label, code in codes.items()] if snappy else []
            if int(buckets) > 0:
                writes.append(("pyarrow floor", next(iter(codes.values())), ""))
            runs: dict[str, list[dict[str, Any]]] = {label: [] for label, _, _ in writes}
            for _ in range(repeat):
                for label, code, codec in writes:
                    path = os.path.join(common.scratch("scale-cpu-" + label.replace(" ", "-")), "t")
                    args = ["write-cpu", path, str(rows), buckets, codec] if codec else \
                        ["buckets-floor", path, str(rows), buckets]
                    runs[label].append(run_child(code, args))
                    shutil.rmtree(os.path.dirname(path), ignore_errors=True)
            for label, rs in runs.items():
                r = min(rs, key=lambda x: x["cpu_s"])
                note({"who": label, "shape": shape, "rows": rows, "cpu_s": r["cpu_s"], "wall_s": r["wall_s"],
                      "load": r["load_before"][0], "runs_cpu_s": [round(x["cpu_s"], 3) for x in rs],
                      "runs_load": [x["load_before"][0] for x in rs],
                      **({"parquet_cpu_s": r["parquet_cpu_s"]} if "parquet_cpu_s" in r else {})})
            peer_least(note, "pypaimon+rust", shape, rows, repeat, "bench_pypaimon.py",
                       ["pk", "--native", "--buckets", buckets, "--n", str(rows), "--u", "1000"])
        peer_least(note, "deltalake", "append", rows, repeat, "bench_deltalake.py", ["pk", "--n", str(rows), "--u", "1000"])
    if shapes is not None:
        return out
    written = []
    out += bench_partitions(codes, written)
    _remove(written)
    return out


def _remove(directories: list[str]) -> None:
    for directory in directories:
        shutil.rmtree(directory, ignore_errors=True)


def bench_partitions(codes: dict[str, str], written: list[str], suffix: str = "") -> list[dict[str, Any]]:
    """The append write of 1M rows into 1,000 partitions by each code, then the files alone
    written by pyarrow (:func:`child_partitions_floor`), then deltalake's. Each table's
    directory is added to ``written``, for the caller to remove once every run is done:
    ext4 passes over inodes freed in the last 30 s when it allocates new ones, so a run
    right after the removal of another's 3,000 files and directories pays system time for
    it (``recently_deleted`` in a profile of the writes)."""
    out: list[dict[str, Any]] = []

    def note(r: dict[str, Any]) -> None:
        out.append(r)
        print(f"  {r['who']} {r['shape']} {r['rows']:,}: cpu {r['cpu_s']:.2f} s, load {r['load']}", file=sys.stderr)

    rows = 1_000_000
    for label, code in codes.items():
        path = os.path.join(common.scratch(f"scale-parts-{label}{suffix}"), "t")
        r = run_child(code, ["partitions", path, str(rows)])
        note({"who": label, "shape": "1,000 partitions", "rows": rows, "cpu_s": r["cpu_s"], "wall_s": r["wall_s"],
              "load": r["load_before"][0]})
        written.append(os.path.dirname(path))
    path = os.path.join(common.scratch(f"scale-parts-floor{suffix}"), "t")
    r = run_child(next(iter(codes.values())), ["partitions-floor", path, str(rows)])
    note({"who": "pyarrow floor", "shape": "1,000 partitions", "rows": rows, "cpu_s": r["cpu_s"], "wall_s": r["wall_s"],
          "load": r["load_before"][0]})
    written.append(os.path.dirname(path))
    if os.path.exists(common.PEER_PY):
        path = os.path.join(common.scratch(f"scale-parts-delta{suffix}"), "t")
        load = common.load()
        proc = subprocess.run(["nice", "-n", "10", common.PEER_PY, "-c", _DELTA_PARTITIONS, path, str(rows),
                               common.REF_DIR], capture_output=True, text=True)
        if proc.returncode == 0:
            r = json.loads(proc.stdout.strip().splitlines()[-1])
            note({"who": "deltalake", "shape": "1,000 partitions", "rows": rows, **r, "load": load[0]})
        written.append(os.path.dirname(path))
    return out


def cpu_verdicts(cpu: list[dict[str, Any]]) -> list[dict[str, Any]]:
    by: dict[tuple[str, str, int], float] = {}
    for r in cpu:  # the least of repeated runs (``--only partitions --repeat``), as for the others
        key = (r["who"], r["shape"], r["rows"])
        by[key] = min(by.get(key, r["cpu_s"]), r["cpu_s"])
    out = []
    for (who, shape, rows), ours in by.items():
        if who in ("pypaimon+rust", "deltalake"):
            continue
        if who == "pyarrow floor" and shape != "1,000 partitions":
            delta = by.get(("deltalake", "append", rows))
            out.append({"code": who, "target": f"(the floor of the format) {shape} {rows:,} rows vs deltalake's append",
                        "ratio": ours / delta if delta else None})
            continue
        if who == "pyarrow floor":
            continue
        if shape == "1,000 partitions":
            ref = by.get(("deltalake", shape, rows))
            floor = by.get(("pyarrow floor", shape, rows))
            out.append({"code": who, "target": f"write {rows:,} rows into 1,000 partitions within 1.5x deltalake",
                        "ratio": ours / ref if ref else None,
                        "verdict": common.verdict(ours / ref if ref else None, 1.5),
                        "floor_ratio": floor / ref if floor and ref else None})
            continue
        pyp, delta = by.get(("pypaimon+rust", shape, rows)), by.get(("deltalake", "append", rows))
        out.append({"code": who, "target": f"write CPU {shape} {rows:,} rows <= pypaimon+rust",
                    "ratio": ours / pyp if pyp else None, "verdict": common.verdict(ours / pyp if pyp else None, 1.0)})
        out.append({"code": who, "target": f"write CPU {shape} {rows:,} rows within 2.5x deltalake's append",
                    "ratio": ours / delta if delta else None,
                    "verdict": common.verdict(ours / delta if delta else None, 2.5)})
    return out


def small_verdicts(small: list[dict[str, Any]]) -> list[dict[str, Any]]:
    delta = next((r for r in small if r["code"] == "deltalake"), None)
    out = []
    for r in small:
        if r["code"] == "deltalake":
            continue
        per = r["ms_cpu"]
        out.append({"code": r["code"], "target": "read <= 1 ms CPU a file", "value_ms": per["read"],
                    "verdict": "met" if per["read"] <= 1.0 else "NOT met",
                    "deltalake_ms": delta["ms_cpu"]["read"] if delta else None})
        if delta:
            for k in ("stream", "expire"):
                ratio = per[k] / delta["ms_cpu"]["cdf"]
                out.append({"code": r["code"], "target": f"{k} a snapshot vs deltalake's change feed a version",
                            "value_ms": per[k], "deltalake_ms": delta["ms_cpu"]["cdf"], "ratio": ratio})
    return out


def summarize(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Verdicts against the issue's targets, per code."""
    verdicts = []
    by = {(r["case"], r["code"], r["rows_in"], r.get("mode")): r for r in results}
    for code in sorted({r["code"] for r in results}):
        rises = {n: r["rise_mb"] for (c, k, n, _), r in by.items() if c == "compact" and k == code}
        if rises:
            lo, hi = min(rises), max(rises)
            growth = rises[hi] / rises[lo] if rises[lo] > 0 else None
            verdicts.append({"code": code, "target": f"compaction rise at {hi:,} within {COMPACT_GROWTH}x of {lo:,}",
                             "ratio": growth, "verdict": common.verdict(growth, COMPACT_GROWTH)})
            top = max(rises.values())
            verdicts.append({"code": code, "target": f"compaction rise under {COMPACT_RISE_MB} MB",
                             "value_mb": top, "verdict": "met" if top < COMPACT_RISE_MB else "NOT met"})
        for n in sorted({k[2] for k in by if k[0] == "write" and k[1] == code}):
            auto, only = by.get(("write", code, n, "auto")), by.get(("write", code, n, "write-only"))
            if auto and only:
                ratio = auto["peak_mb"] / only["peak_mb"]
                verdicts.append({"code": code, "rows": n, "target": "auto write peak within 1.3x of write-only",
                                 "ratio": ratio, "verdict": common.verdict(ratio, AUTO_VS_WRITE_ONLY)})
                once = "COMPACT" not in auto["snapshots"]
                verdicts.append({"code": code, "rows": n, "target": "a sorted load written once",
                                 "cpu_ratio_vs_write_only": auto["cpu_s"] / only["cpu_s"],
                                 "verdict": "met" if once else "NOT met"})
    return verdicts


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        kind, *rest = sys.argv[2:]
        if kind == "build":
            _runs_table(rest[0], int(rest[1]))
            print(json.dumps({}))
        elif kind == "compact":
            print(json.dumps(child_compact(rest[0]), default=str))
        elif kind == "write":
            print(json.dumps(child_write(rest[0], int(rest[1]), rest[2] == "1"), default=str))
        elif kind == "write-cpu":
            print(json.dumps(child_write_cpu(rest[0], int(rest[1]), rest[2], *rest[3:])))
        elif kind == "buckets-floor":
            print(json.dumps(child_buckets_floor(rest[0], int(rest[1]), int(rest[2]))))
        elif kind == "partitions":
            print(json.dumps(child_partitions(rest[0], int(rest[1]))))
        elif kind == "partitions-floor":
            print(json.dumps(child_partitions_floor(rest[0], int(rest[1]))))
        elif kind == "small-files":
            print(json.dumps(child_small_files(rest[0], int(rest[1])), default=str))
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cases", nargs="*", default=list(CASES), help=f"any of {', '.join(CASES)} (default: all)")
    ap.add_argument("--rows", default="1000000,4000000,16000000")
    ap.add_argument("--commits", type=int, default=1000, help="commits of the small-files case")
    ap.add_argument("--cpu-rows", default="4000000,16000000", help="rows of the write-cpu case")
    ap.add_argument("--shapes", default=None,
                    help=f"write-cpu: only these of {', '.join(SHAPES)} (comma-separated; skips the partitions write)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="write-cpu: runs of each of our writes (least CPU kept), or of the figure --only picks")
    ap.add_argument("--code", action="append", default=[], help="LABEL=DIR (repeatable); default new=<this checkout>")
    ap.add_argument("--only", choices=["partitions"], default="",
                    help="write-cpu: only the 1,000-partition figure (with --repeat)")
    ap.add_argument("--snappy", action="store_true",
                    help="write-cpu: each code's bucketed writes also with file.compression=snappy (deltalake's codec)")
    a = ap.parse_args()
    codes = dict(c.split("=", 1) for c in a.code) or {"new": common.ROOT}
    codes = {k: os.path.abspath(v) for k, v in codes.items()}
    rows_list = [int(x) for x in a.rows.split(",")]
    env = common.environment()
    results: list[dict[str, Any]] = []
    builder = codes.get("new", next(iter(codes.values())))
    if "compact" in a.cases:
        results += bench_compact(codes, rows_list, builder)
    if "write" in a.cases:
        results += bench_write(codes, rows_list)
    small = bench_small_files(codes, a.commits) if "small-files" in a.cases else []
    shapes = [x.strip() for x in a.shapes.split(",")] if a.shapes else None
    if shapes and not set(shapes) <= set(SHAPES):
        ap.error(f"--shapes: any of {', '.join(SHAPES)}")
    cpu = bench_write_cpu(codes, [int(x) for x in a.cpu_rows.split(",")], a.only, shapes, a.repeat, a.snappy) \
        if "write-cpu" in a.cases else []
    verdicts = summarize(results) + small_verdicts(small) + cpu_verdicts(cpu)
    rows = [[r["case"], r.get("mode", ""), r["code"], f"{r['rows_in']:,}", r["rise_mb"], r["anon_rise_mb"],
             r["peak_mb"], r["cpu_s"], r["wall_s"], r["load_before"][0]] for r in results]
    common.print_table(["case", "mode", "code", "rows", "rise MB", "anon rise MB", "peak MB", "cpu s", "wall s",
                        "load1"], rows)
    for v in verdicts:
        print(v)
    path = common.write_results("scale", {"env": env, "codes": codes, "results": results, "small_files": small, "write_cpu": cpu,
                                          "verdicts": verdicts})
    print(f"results: {path}")


if __name__ == "__main__":
    main()
