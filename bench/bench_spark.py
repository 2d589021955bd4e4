"""Spark connector throughput: reads and writes of 5M rows against Spark's own ceilings.

Data: the reference ``gen_data.py`` table (5,000,000 rows: id bigint, k 16-char string,
v double, ts bigint; 8 snappy Parquet files written by Spark), generated once under
``$MINIPAIMON_BENCH_DIR/spark/ref`` and reused while it has 5M rows.

One run, local[2], the repository's ``spark-conf/`` (``SPARK_CONF_DIR``), Python workers on
this interpreter (``PYSPARK_PYTHON``):

1. **tables** built with ``minipaimon_core`` (not timed): (a) append table, one
   ``t.write`` of the 5M rows; (b) PK table (id, bucket 4), one write +
   ``t.compact(full=True)``; (c) PK table (id, bucket 4, ``write-only``) of 3 writes whose
   key ranges all overlap: ``id % 3 == r`` for r = 0, 1, 2, and writes 2 and 3 also rewrite
   the rows with ``id % 30 == 0`` (same values), so every bucket holds 3 sorted runs with
   duplicate keys (5.33M stored rows, 5M merged rows); (d) PK table (id, bucket 4) with
   ``deletion-vectors.enabled``: the 5M rows, then the rows with ``id % 10 == 0`` again
   (same values), so vectors mark a tenth of the first files' rows.
2. **reference read** (subprocess, its own session): ``spark_ceiling.py read`` of the
   trivial Python data source that only yields pyarrow batches of the Parquet files.
3. **our session** (one session, ``minipaimon_spark.register``; the reference's own
   ``benchds`` source is registered beside it, imported at run time from the reference
   directory, not copied): reads with ``agg(sum(v))`` (checked against pyarrow's sum;
   ``--noop`` adds a noop write of all columns) of the ceiling DS, native
   ``spark.read.parquet``, minipaimon (a), (b), (c); then writes of the cached input:
   the reference's discard writer (the ceiling of any Python sink), ``df.write.parquet``,
   minipaimon append write and PK write (``primary-key`` id, ``bucket`` 4), fresh paths.
4. **reference write** (subprocess): ``spark_ceiling.py write`` of the discard writer.
5. if it fits in ``--budget-40`` seconds: the read part (2, 3) again on PySpark 4.0.x
   (``$MINIPAIMON_SPARK40_PY``, default the project's .venv-spark40/bin/python, which
   scripts/test.sh creates).

Ratios are throughput ratios (ceiling s / ours s). The verdict uses the ceiling measured in
our session, run round-robin with our figures (one warm-up each, then ``--reps`` rounds of
every case in turn), so both see the same load on this shared 2-core box; the reference
scripts' own figures (other session, other minutes) are shown beside it as a cross-check.
Each run records wall time, CPU of the whole process tree (driver, JVM, Python workers),
the 1-minute load average and the share of the machine other processes used. Targets
(issue 4): reads (a)(b) >= 0.9x the ceiling DS, (c) >= 0.6x; append write >= 0.8x the
discard writer, PK write >= 0.6x. Issue 28, rows "vs native" (throughput ratio to
``spark.read.parquet`` of the source files, same session): ``minipaimon_spark.table`` of
(a)(b) >= 0.9x, (c) >= 0.5x, (d) >= 0.8x.

usage: .venv/bin/python bench/bench_spark.py [--reps 3] [--part all|read|write] [--no-40]
Results: bench/results/spark.json (spark-<tag>.json with MINIPAIMON_BENCH_TAG).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

ROOT = common.ROOT
CONF_DIR = os.path.join(ROOT, "spark-conf")
PY43 = os.path.join(ROOT, ".venv", "bin", "python")
PY40 = os.environ.get("MINIPAIMON_SPARK40_PY", os.path.join(ROOT, ".venv-spark40", "bin", "python"))
SPARK_DIR = os.path.join(common.WORK_DIR, "spark")
REF_CWD = os.path.join(SPARK_DIR, "ref")  # the reference scripts write under ./bench-data/
SRC = os.path.join(REF_CWD, "bench-data", "spark", "bench_parquet")
TABLES = os.path.join(SPARK_DIR, "tables")
OUT = os.path.join(SPARK_DIR, "out")
ROWS = 5_000_000
READ_TARGETS = {"mp append": 0.9, "mp pk compacted": 0.9, "mp pk 3 runs": 0.6}
# issue 28: minipaimon_spark.table against Spark's own reader of the source Parquet files
NATIVE_TARGETS = {"mp.table append": 0.9, "mp.table pk compacted": 0.9, "mp.table pk 3 runs": 0.5,
                  "mp.table pk dv": 0.8}
WRITE_TARGETS = {"mp append": 0.8, "mp pk": 0.6}


def spark_env(python: str) -> dict[str, str]:
    """Environment of a Spark driver on ``python`` with the repository's spark-conf/."""
    env = dict(os.environ)
    env["SPARK_CONF_DIR"] = CONF_DIR
    env["PYSPARK_PYTHON"] = python
    env["PYSPARK_DRIVER_PYTHON"] = python
    env.setdefault("PYTHONWARNINGS", "ignore::FutureWarning")
    return env


# ---------------------------------------------------------------------------- timing

_TICK = os.sysconf("SC_CLK_TCK")


def _tree_cpu_s() -> float:
    """CPU seconds of this process and all its descendants (JVM, Python workers), including
    reaped children."""
    procs: dict[int, tuple[int, int]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                st = f.read()
        except OSError:
            continue
        rest = st[st.rfind(")") + 2:].split()
        procs[int(d)] = (int(rest[1]), sum(int(x) for x in rest[11:15]))
    kids: dict[int, list[int]] = {}
    for pid, (ppid, _) in procs.items():
        kids.setdefault(ppid, []).append(pid)
    total, stack = 0, [os.getpid()]
    while stack:
        p = stack.pop()
        total += procs.get(p, (0, 0))[1]
        stack += kids.get(p, [])
    return total / _TICK


def _busy_s() -> float:
    with open("/proc/stat") as f:
        vals = list(map(int, f.readline().split()[1:9]))
    return (sum(vals) - vals[3] - vals[4]) / _TICK


def timed_run(fn: Callable[[], Any]) -> tuple[Any, dict[str, float]]:
    """``fn()`` with wall time, CPU of our process tree, others' CPU share and load1."""
    cpu0, busy0, t0 = _tree_cpu_s(), _busy_s(), time.perf_counter()
    out = fn()
    wall = time.perf_counter() - t0
    cpu = _tree_cpu_s() - cpu0
    others = max(0.0, _busy_s() - busy0 - cpu) / (wall * (os.cpu_count() or 1))
    return out, {"s": round(wall, 4), "cpu_s": round(cpu, 2), "others": round(min(others, 1.0), 3),
                 "load1": round(os.getloadavg()[0], 2)}


class Case:
    """One measured operation: ``fn`` timed, ``setup`` untimed before it, ``check`` of
    its result recorded with each run."""

    def __init__(self, fn: Callable[[], Any], setup: Callable[[], None] | None = None,
                 check: Callable[[Any], Any] | None = None,
                 warm_up: Callable[[], Any] | None = None) -> None:
        self.fn, self.setup, self.check = fn, setup, check
        self.warm_up = warm_up  # a cheaper stand-in for the warm-up run (default: a full run)

    def run(self) -> dict[str, Any]:
        if self.setup:
            self.setup()
        out, rec = timed_run(self.fn)
        if self.check:
            rec["check"] = self.check(out)
        return rec


def measure(cases: dict[str, Case], reps: int) -> dict[str, Any]:
    """One warm-up of every case, then ``reps`` rounds running each case once, in order.

    Round-robin, so that the ceiling and our figures of a round see the same machine load
    (the box is shared and its load drifts within minutes). Returns the median per case.
    """
    for case in cases.values():
        if case.setup:
            case.setup()
        (case.warm_up or case.fn)()
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in cases}
    for _ in range(reps):
        for name, case in cases.items():
            runs[name].append(case.run())
    out: dict[str, Any] = {}
    for name, rs in runs.items():
        med = common.median(r["s"] for r in rs)
        out[name] = {"median_s": round(med, 4), "rows_per_s": round(ROWS / med), "runs": rs}
        print(f"  {name}: {med:.2f} s", file=sys.stderr, flush=True)
    return out


def reference_ceiling() -> Any:
    """The reference ``spark_ceiling`` module (its trivial Arrow data source and discard
    writer), imported at run time from ``REF_DIR``: the same code the reference measures
    with, in our session. Workers import it through ``PYTHONPATH`` (see start_spark)."""
    if "spark_ceiling" in sys.modules:
        return sys.modules["spark_ceiling"]
    ours = sys.modules.pop("common")  # the reference has its own top-level ``common``
    sys.path.insert(0, common.REF_DIR)
    try:
        import spark_ceiling  # type: ignore[import-not-found]
    finally:
        sys.path.remove(common.REF_DIR)
        sys.path.append(common.REF_DIR)
        sys.modules["common"] = ours
    return spark_ceiling


# ---------------------------------------------------------------------------- reference


def run_ceiling(python: str, what: str, reps: int, only: str, actions: str = "") -> dict[str, Any]:
    """``spark_ceiling.py read|write`` as a subprocess; its per-measurement records."""
    args = [python, os.path.join(common.REF_DIR, "spark_ceiling.py"), what, "--runs", str(reps),
            "--only", only]
    if actions:
        args += ["--actions", actions]
    os.makedirs(os.path.join(REF_CWD, "bench-data", "logs"), exist_ok=True)
    t0 = time.perf_counter()
    proc = subprocess.run(args, cwd=REF_CWD, env=spark_env(python), capture_output=True, text=True,
                          timeout=900)
    recs = [json.loads(ln) for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not recs:
        tail = " | ".join((proc.stderr or proc.stdout).strip().splitlines()[-3:])
        raise RuntimeError(f"spark_ceiling.py {what} failed (rc={proc.returncode}): {tail}")
    return {"script_s": round(time.perf_counter() - t0, 1),
            "records": {r["label"]: r for r in recs}}


def ensure_data(python: str) -> dict[str, Any]:
    """The reference 5M-row Parquet data (``gen_data.py``), generated if missing."""
    import pyarrow.parquet as pq

    try:
        if pq.ParquetDataset(SRC).read(columns=["id"]).num_rows == ROWS:
            return {"generated": False}
    except Exception:  # noqa: BLE001 (absent or partial: regenerate)
        pass
    os.makedirs(REF_CWD, exist_ok=True)
    t0 = time.perf_counter()
    proc = subprocess.run([python, os.path.join(common.REF_DIR, "gen_data.py")], cwd=REF_CWD,
                          env=spark_env(python), capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        raise RuntimeError(f"gen_data.py failed: {proc.stderr.strip().splitlines()[-3:]}")
    return {"generated": True, "s": round(time.perf_counter() - t0, 1)}


# ---------------------------------------------------------------------------- tables


def build_tables() -> dict[str, Any]:
    """The three minipaimon tables, written with minipaimon_core from the same rows."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    import minipaimon_core as mp

    shutil.rmtree(TABLES, ignore_errors=True)
    os.makedirs(TABLES)
    data = pq.read_table(SRC, columns=["id", "k", "v", "ts"])
    data = data.cast(pa.schema([f.remove_metadata() for f in data.schema])).replace_schema_metadata()
    info: dict[str, Any] = {"expected_sum_v": pc.sum(data.column("v")).as_py()}

    def files_of(t: mp.Table) -> list[list[int]]:
        return [[f.rowCount for f in s.files] for s in t.scan().plan()]

    t0 = time.perf_counter()
    t = mp.create_table(os.path.join(TABLES, "append"), data.schema)
    t.write(data)
    info["append"] = {"build_s": round(time.perf_counter() - t0, 2), "split_file_rows": files_of(t)}

    t0 = time.perf_counter()
    t = mp.create_table(os.path.join(TABLES, "pk_compacted"), data.schema, primary_key=["id"],
                        options={"bucket": "4"})
    t.write(data)
    t.compact(full=True)
    info["pk_compacted"] = {"build_s": round(time.perf_counter() - t0, 2),
                            "split_file_rows": files_of(mp.open_table(t.path))}

    t0 = time.perf_counter()
    # write-buffer-size big enough that each write is one sorted run (one file) per bucket
    t = mp.create_table(os.path.join(TABLES, "pk_3runs"), data.schema, primary_key=["id"],
                        options={"bucket": "4", "write-only": "true", "write-buffer-size": "2 gb"})
    ids = data.column("id")
    rewrite = data.filter(pc.equal(pc.remainder(ids, 30), 0))
    for r in range(3):
        part = data.filter(pc.equal(pc.remainder(ids, 3), r))
        t.write(pa.concat_tables([part, rewrite]) if r else part)
    info["pk_3runs"] = {"build_s": round(time.perf_counter() - t0, 2), "split_file_rows": files_of(t),
                        "stored_rows": data.num_rows + 2 * rewrite.num_rows}

    t0 = time.perf_counter()
    # deletion vectors: the rows with id % 10 == 0 written again (same values), so the
    # first files carry vectors marking a tenth of their rows
    t = mp.create_table(os.path.join(TABLES, "pk_dv"), data.schema, primary_key=["id"],
                        options={"bucket": "4", "write-only": "true", "write-buffer-size": "2 gb",
                                 "deletion-vectors.enabled": "true"})
    t.write(data)
    t.write(data.filter(pc.equal(pc.remainder(ids, 10), 0)))
    info["pk_dv"] = {"build_s": round(time.perf_counter() - t0, 2), "split_file_rows": files_of(t),
                     "stored_rows": data.num_rows + data.num_rows // 10}
    return info


# ---------------------------------------------------------------------------- our session


REGISTER_NOTES: list[str] = []


def start_spark() -> Any:
    """Our one session: local[2], spark-conf/, workers on this interpreter; minipaimon and
    the reference's ``benchds`` source registered."""
    from pyspark.sql import SparkSession

    import minipaimon_spark

    os.environ.update({k: v for k, v in spark_env(sys.executable).items()
                       if k in ("SPARK_CONF_DIR", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")})
    # Python workers unpickle the reference's classes by module name
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if common.REF_DIR not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([*paths, common.REF_DIR])
    ceiling = reference_ceiling()
    spark = SparkSession.builder.master("local[2]").appName("bench_spark").getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    try:
        minipaimon_spark.register(spark)
    except Exception as e:  # noqa: BLE001
        # PySpark 4.0 refuses to register a name its auto-registration (the installed
        # pyspark_minipaimon shim) already registered: the source is there, carry on.
        if "DATA_SOURCE_ALREADY_EXISTS" not in str(e):
            raise
        REGISTER_NOTES.append(f"minipaimon_spark.register raised DATA_SOURCE_ALREADY_EXISTS on "
                              f"pyspark {spark.version}; used the auto-registered source")
    spark.dataSource.register(ceiling.BenchDS)
    return spark


def our_reads(spark: Any, reps: int, expected_sum: float, noop: bool) -> dict[str, Any]:
    from pyspark.sql import functions as F

    import minipaimon_spark

    def mp_load(name: str) -> Callable[[], Any]:
        path = os.path.join(TABLES, name)
        return lambda: spark.read.format("minipaimon").load(path)

    # a fresh DataFrame every run: 4.1+ caches the planned partitions per DataFrame
    sources: dict[str, Callable[[], Any]] = {
        "ceiling DS": lambda: (spark.read.format("benchds").option("mode", "arrow")
                               .option("batch", "65536").load(SRC)),
        "native": lambda: spark.read.parquet(SRC),
        "mp append": mp_load("append"),
        "mp pk compacted": mp_load("pk_compacted"),
        "mp pk 3 runs": mp_load("pk_3runs"),
        # minipaimon_spark.table: Spark's Parquet reader for every split that needs no merge
        "mp.table append": lambda: minipaimon_spark.table(spark, os.path.join(TABLES, "append")),
        "mp.table pk compacted": lambda: minipaimon_spark.table(spark, os.path.join(TABLES, "pk_compacted")),
        "mp.table pk 3 runs": lambda: minipaimon_spark.table(spark, os.path.join(TABLES, "pk_3runs")),
        "mp pk dv": mp_load("pk_dv"),
        "mp.table pk dv": lambda: minipaimon_spark.table(spark, os.path.join(TABLES, "pk_dv")),
    }

    def check_sum(rows: list[Any]) -> bool:
        got = rows[0][0]
        return got is not None and abs(got - expected_sum) <= 1e-9 * abs(expected_sum)

    cases: dict[str, Case] = {}
    for name, mk in sources.items():
        cases[f"{name} sum(v)"] = Case(lambda mk=mk: mk().agg(F.sum("v")).collect(), check=check_sum)
    if noop:
        for name, mk in sources.items():
            cases[f"{name} noop"] = Case(lambda mk=mk: mk().write.format("noop").mode("overwrite").save())
    out = measure(cases, reps)
    out["partitions"] = {name: mk().rdd.getNumPartitions() for name, mk in sources.items()}
    return out


def our_writes(spark: Any, reps: int) -> dict[str, Any]:
    import minipaimon_core as mp

    df = spark.read.parquet(SRC).cache()
    df.count()
    small = df.limit(100_000)  # warm-ups: workers, imports and code paths, not 5M rows again

    def fresh(name: str) -> Callable[[], None]:
        return lambda: shutil.rmtree(os.path.join(OUT, name), ignore_errors=True)

    def mp_write(name: str, data: Any = df, **opts: str) -> Callable[[], None]:
        def run() -> None:
            w = data.write.format("minipaimon").mode("append")
            for k, v in opts.items():
                w = w.option(k, v)
            w.save(os.path.join(OUT, name))
        return run

    def discard(data: Any) -> Callable[[], None]:
        return lambda: (data.write.format("benchds").option("writer", "arrow-discard")
                        .mode("overwrite").save(os.path.join(OUT, "discard")))

    pk = {"primary-key": "id", "bucket": "4"}

    def table_check(name: str) -> Callable[[Any], dict[str, Any]]:
        def check(_: Any) -> dict[str, Any]:
            t = mp.open_table(os.path.join(OUT, name))
            splits = t.scan().plan()
            return {"rows": sum(s.row_count for s in splits),
                    "files": sum(len(s.files) for s in splits),
                    "snapshots": len(t.snapshots())}
        return check

    native = os.path.join(OUT, "native")
    cases = {
        "native parquet": Case(lambda: df.write.mode("overwrite").parquet(native),
                               warm_up=lambda: small.write.mode("overwrite").parquet(native)),
        "discard writer": Case(discard(df), warm_up=discard(small)),
        "mp append": Case(mp_write("mp_append"), fresh("mp_append"), table_check("mp_append"),
                          warm_up=mp_write("mp_append", small)),
        "mp pk": Case(mp_write("mp_pk", **pk), fresh("mp_pk"), table_check("mp_pk"),
                      warm_up=mp_write("mp_pk", small, **pk)),
    }
    out = measure(cases, reps)
    out["input_partitions"] = df.rdd.getNumPartitions()
    df.unpersist()
    return out


def session_part(part: str, reps: int, expected_sum: float, noop: bool) -> dict[str, Any]:
    """Our measurements in one Spark session of this interpreter."""
    import pyspark

    t0 = time.perf_counter()
    spark = start_spark()
    res: dict[str, Any] = {"pyspark": pyspark.__version__, "python": sys.executable,
                           "session_start_s": round(time.perf_counter() - t0, 1),
                           "notes": REGISTER_NOTES}
    try:
        if part in ("all", "read"):
            t1 = time.perf_counter()
            res["read"] = our_reads(spark, reps, expected_sum, noop)
            res["read_phase_s"] = round(time.perf_counter() - t1, 1)
        if part in ("all", "write"):
            t1 = time.perf_counter()
            res["write"] = our_writes(spark, reps)
            res["write_phase_s"] = round(time.perf_counter() - t1, 1)
    finally:
        spark.stop()
    return res


# ---------------------------------------------------------------------------- report

HEADERS = ["op", "source", "median s", "CPU s", "Mrows/s", "x ceiling", "x ceiling (ref script)", "target",
           "verdict", "load1 per run"]


def _ref(ref: dict[str, Any] | None, label: str) -> dict[str, Any] | None:
    rec: dict[str, Any] | None = (ref or {}).get("records", {}).get(label)
    return rec


def _loads(m: dict[str, Any]) -> list[float]:
    return [r["load1"] for r in m["runs"]]


def _cpu(m: dict[str, Any]) -> float:
    return round(common.median(r["cpu_s"] for r in m["runs"]), 2)


def _rows(op: str, ours: dict[str, Any], suffix: str, ceiling_name: str, ref_rec: dict[str, Any] | None,
          names: list[tuple[str, str]], targets: dict[str, float]) -> list[list[Any]]:
    """Table rows of one operation: the ceiling (ours, then the reference script's), then
    each source with its throughput ratio to both ceilings."""
    ceiling = ours[f"{ceiling_name}{suffix}"]["median_s"]
    ref_s = ref_rec["median_s"] if ref_rec else None
    rows: list[list[Any]] = [[op, f"{ceiling_name} (this session)", ceiling,
                              _cpu(ours[f"{ceiling_name}{suffix}"]), ROWS / ceiling / 1e6, 1.0,
                              ref_s / ceiling if ref_s else None, "", "",
                              _loads(ours[f"{ceiling_name}{suffix}"])]]
    if ref_rec and ref_s:
        rows.append([op, f"{ceiling_name}, spark_ceiling.py (own session)", ref_s,
                     ref_rec.get("cpu_s_median"), ROWS / ref_s / 1e6,
                     ceiling / ref_s, 1.0, "", "", [round(ref_rec["loadavg"], 2)]])
    for key, label in names:
        m = ours[f"{key}{suffix}"]
        ratio = ceiling / m["median_s"]
        target = targets.get(key)
        rows.append([op, label, m["median_s"], _cpu(m), m["rows_per_s"] / 1e6, ratio,
                     ref_s / m["median_s"] if ref_s else None, f">= {target}" if target else "",
                     common.verdict(ratio, target, True) if target else "", _loads(m)])
    return rows


def read_rows(ours: dict[str, Any], ref: dict[str, Any] | None) -> list[list[Any]]:
    names = [("native", "native parquet"), ("mp append", "mp (a) append"),
             ("mp pk compacted", "mp (b) pk compacted"), ("mp pk 3 runs", "mp (c) pk 3 runs"),
             ("mp.table append", "minipaimon_spark.table (a)"),
             ("mp.table pk compacted", "minipaimon_spark.table (b)"),
             ("mp.table pk 3 runs", "minipaimon_spark.table (c)"),
             ("mp pk dv", "mp (d) pk deletion vectors"),
             ("mp.table pk dv", "minipaimon_spark.table (d)")]
    rows = []
    for action in ("sum(v)", "noop"):
        if f"ceiling DS {action}" not in ours:
            continue
        targets = READ_TARGETS if action == "sum(v)" else {}
        rows += _rows(f"read {action}", ours, f" {action}", "ceiling DS",
                      _ref(ref, f"read pyds-arrow {action}"), names, targets)
    if "native sum(v)" in ours:  # issue 28's ratios: x native = native s / ours s
        rows += _rows("read sum(v) vs native", ours, " sum(v)", "native", None,
                      [n for n in names if n[0] != "native"], NATIVE_TARGETS)
    return rows


def write_rows(ours: dict[str, Any], ref: dict[str, Any] | None) -> list[list[Any]]:
    names = [("native parquet", "native parquet"), ("mp append", "mp append"), ("mp pk", "mp pk")]
    return _rows("write", ours, "", "discard writer", _ref(ref, "write pyds arrow-discard"), names,
                 WRITE_TARGETS)


def markdown(rows: list[list[Any]]) -> str:
    def fmt(x: Any) -> str:
        if isinstance(x, float):
            return f"{x:.3g}"
        return "" if x is None else str(x)

    lines = ["| " + " | ".join(HEADERS) + " |", "|" + "---|" * len(HEADERS)]
    lines += ["| " + " | ".join(fmt(x) for x in r) + " |" for r in rows]
    return "\n".join(lines)


# ---------------------------------------------------------------------------- main


def child_main(a: argparse.Namespace) -> None:
    """``--child``: our session only (used for the PySpark 4.0 run); JSON to a file."""
    res = session_part(a.part, a.reps, a.expected_sum, a.noop)
    with open(a.child, "w") as f:
        json.dump(res, f)


def run_40(reps: int, expected_sum: float, noop: bool) -> dict[str, Any]:
    """The read part on PySpark 4.0.x: the reference ceiling, then our session, same tables."""
    ref = run_ceiling(PY40, "read", reps, "pyds-arrow", "sum(v),noop" if noop else "sum(v)")
    out_json = os.path.join(SPARK_DIR, "child-40.json")
    cmd = [PY40, os.path.abspath(__file__), "--child", out_json, "--part", "read", "--reps", str(reps),
           "--expected-sum", repr(expected_sum), *(["--noop"] if noop else [])]
    proc = subprocess.run(cmd, env=spark_env(PY40), capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        raise RuntimeError(f"4.0 run failed: {proc.stderr.strip().splitlines()[-3:]}")
    with open(out_json) as f:
        ours = json.load(f)
    return {"reference": ref, "ours": ours}


def part_40(results: dict[str, Any], a: argparse.Namespace, read_phase_s: float,
            expected: float) -> None:
    """The 4.0 read run if it fits in the budget; merged into ``results`` and written."""
    if not os.path.exists(PY40):
        results["pyspark_40"] = {"skipped": f"{PY40} not found"}
        return
    # 4.0 is ~2x slower on the Python read path (PYSPARK_NOTES.md)
    reps40 = a.reps_40 or a.reps
    est = 2.2 * read_phase_s * (reps40 + 1) / (a.reps + 1)
    while reps40 > 1 and est > a.budget_40:
        reps40 -= 1
        est = 2.2 * read_phase_s * (reps40 + 1) / (a.reps + 1)
    if est > a.budget_40:
        print(f"4.0 run skipped: estimated {est:.0f} s > {a.budget_40:.0f} s", file=sys.stderr)
        results["pyspark_40"] = {"skipped": f"estimated {est:.0f} s"}
        return
    print(f"PySpark 4.0 read run ({reps40} reps, estimated {est:.0f} s) ...", file=sys.stderr,
          flush=True)
    t0 = time.perf_counter()
    r40 = run_40(reps40, expected, a.noop)
    r40["run_s"] = round(time.perf_counter() - t0, 1)
    r40["reps"] = reps40
    r40["table"] = read_rows(r40["ours"]["read"], r40["reference"])
    results["pyspark_40"] = r40
    print(f"\nPySpark {r40['ours']['pyspark']} (reads), median of {reps40}; run {r40['run_s']:.0f} s")
    common.print_table(HEADERS, r40["table"])
    common.write_results("spark", results)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--part", choices=["all", "read", "write"], default="all")
    ap.add_argument("--noop", action="store_true",
                    help="also time a noop write of every read source (adds ~40%% to the run)")
    ap.add_argument("--no-ref", action="store_true", help="skip the reference scripts' runs")
    ap.add_argument("--no-40", action="store_true", help="skip the PySpark 4.0 read run")
    ap.add_argument("--reps-40", type=int, default=0, help="repetitions on 4.0 (default: --reps, "
                    "fewer if the estimate exceeds --budget-40)")
    ap.add_argument("--budget-40", type=float, default=360.0, help="seconds allowed for the 4.0 run")
    ap.add_argument("--only-40", action="store_true",
                    help="only the 4.0 read run, added to the existing results (same tables)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--expected-sum", type=float, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        child_main(a)
        return
    if a.only_40:
        with open(common.results_path("spark")) as f:
            results = json.load(f)
        ref_s = (results.get("reference_read") or {}).get("script_s", 0)
        part_40(results, a, ref_s + results["ours"]["read_phase_s"], results["tables"]["expected_sum_v"])
        if "table" in results["pyspark_40"]:
            print("\n" + markdown(results["pyspark_40"]["table"]))
        return
    if os.path.realpath(sys.executable) != os.path.realpath(PY43):
        print(f"note: running on {sys.executable}, not {PY43}", file=sys.stderr)
    t_start = time.perf_counter()
    env = common.environment()
    os.makedirs(SPARK_DIR, exist_ok=True)
    results: dict[str, Any] = {"env": env, "rows": ROWS, "reps": a.reps, "master": "local[2]",
                               "spark_conf_dir": CONF_DIR, "read_targets": READ_TARGETS,
                               "native_targets": NATIVE_TARGETS,
                               "write_targets": WRITE_TARGETS}
    print("data ...", file=sys.stderr, flush=True)
    results["data"] = ensure_data(sys.executable)
    print("tables ...", file=sys.stderr, flush=True)
    results["tables"] = build_tables()
    expected = results["tables"]["expected_sum_v"]

    ref_read = ref_write = None
    if a.part in ("all", "read") and not a.no_ref:
        print("reference read (spark_ceiling.py read) ...", file=sys.stderr, flush=True)
        ref_read = run_ceiling(sys.executable, "read", a.reps, "pyds-arrow",
                               "sum(v),noop" if a.noop else "sum(v)")
    print("our session ...", file=sys.stderr, flush=True)
    ours = session_part(a.part, a.reps, expected, a.noop)
    if a.part in ("all", "write") and not a.no_ref:
        print("reference write (spark_ceiling.py write) ...", file=sys.stderr, flush=True)
        ref_write = run_ceiling(sys.executable, "write", a.reps, "pyds arrow-discard")
    results.update({"pyspark": ours["pyspark"], "reference_read": ref_read,
                    "reference_write": ref_write, "ours": ours})
    rows: list[list[Any]] = []
    if "read" in ours:
        rows += read_rows(ours["read"], ref_read)
    if "write" in ours:
        rows += write_rows(ours["write"], ref_write)
    results["table"] = rows
    results["main_run_s"] = round(time.perf_counter() - t_start, 1)
    print(f"\nPySpark {ours['pyspark']}, {ROWS:,} rows, local[2], median of {a.reps}; "
          f"x ceiling = ceiling s / ours s (same run); main run {results['main_run_s']:.0f} s")
    common.print_table(HEADERS, rows)
    if "read" in ours:
        sums = [r["check"] for k, m in ours["read"].items() if k.endswith("sum(v)") for r in m["runs"]]
        results["sum_correct"] = all(sums)
        print(f"\nsum(v) equals pyarrow's sum in every run: {all(sums)}; "
              f"Spark partitions: {ours['read']['partitions']}")
    if "write" in ours:
        for k in ("mp append", "mp pk"):
            print(f"{k} wrote: {ours['write'][k]['runs'][-1].get('check')}")
    common.write_results("spark", results)

    if a.part in ("all", "read") and not a.no_40:
        read_phase_s = (ref_read or {}).get("script_s", 0) + ours["read_phase_s"]
        part_40(results, a, read_phase_s, expected)
    print(f"results: {common.results_path('spark')}")
    print("\nMarkdown:\n" + markdown(rows))
    if "pyspark_40" in results and "table" in results["pyspark_40"]:
        print("\n" + markdown(results["pyspark_40"]["table"]))


if __name__ == "__main__":
    main()
