"""Row-level changes: delete, update and merge by condition, minipaimon vs deltalake.

Data (generated once per run, seeded, written to Parquet so that both processes load the
same rows): ``--rows`` rows of id bigint 0..n-1, partition ``p`` = id % 10 (string), ``v``
bigint (a random permutation of 0..n-1, so the predicates below select exact counts, spread
over every file), ``s`` a random 16-character string. Operations, each on a fresh copy of
the table built once (copying is not timed, nor is opening the table):

  delete      ``v < n/1000``, 0.1 % of the rows (a predicate on a non-key column)
  update      ``v < n/100`` (1 %): ``v = v * 2``
  merge       n/100 source rows (100k at 10M), half of them existing ids (random, across
              every partition), half new: ``when_matched_update_all`` +
              ``when_not_matched_insert_all`` joined on ``id``
  delete-1p   ``p = '3' AND v < n/100``, ~0.1 % of the rows, all in one partition; the
              data files outside that partition must be the same before and after

minipaimon, three tables: ``append`` (copy-on-write: files holding a selected row are
replaced), ``append-dv`` (``deletion-vectors.enabled``: the rows are marked in deletion
vectors, changed rows written as new files, nothing rewritten) and ``pk`` (primary key ``["p", "id"]``, bucket 4: the change is written as
-D / -U +U / +I rows through the LSM; minipaimon, as Paimon, requires the partition column
in the primary key). deltalake (``DeltaTable.delete`` / ``update`` / ``merge``, partitioned
by ``p``, no primary keys) runs in the peers' venv (``MINIPAIMON_BENCH_PY``) as a
subprocess of this script (``--delta-child``, one per repetition) and is compared against
both of our tables. Every result is checked: rows changed as returned, row count and
sum(v) after the change equal the expected values, the same for both engines.

Targets (the issue): delete, update and merge <= 0.7x deltalake's time; delete-1p is timed
for context, its verdict is the file check. Medians of ``--reps``; each repetition runs
every operation on every table in turn, then deltalake's.

usage: python bench/bench_dml.py [--rows 10000000] [--reps 3] [--no-delta]
Results: bench/results/dml.json (dml-<tag>.json with MINIPAIMON_BENCH_TAG).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import shutil
import statistics
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

# minipaimon_core is imported where it is used: the deltalake child runs in the peers' venv.

OPS = ("delete", "update", "merge", "delete-1p")
KINDS = ("append", "append-dv", "pk")
TARGET = 0.7  # our time / deltalake's, for delete, update, merge
TARGETS: dict[str, float | None] = {"delete": TARGET, "update": TARGET, "merge": TARGET, "delete-1p": None}
PARTITION = "3"  # the partition delete-1p touches
WARM_ROWS = 20_000
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("p", pa.string(), nullable=False),
                    ("v", pa.int64()), ("s", pa.string())])


# ---------------------------------------------------------------------------- data


def _strings(rng: np.random.Generator, n: int) -> pa.Array:
    digits = pc.utf8_lpad(pc.cast(pa.array(rng.integers(0, 10**15, n)), pa.string()), 15, "0")
    return pc.binary_join_element_wise("k", digits, "")


def _rows(ids: np.ndarray, v: np.ndarray, rng: np.random.Generator) -> pa.Table:
    p = pc.cast(pa.array(ids % 10), pa.string())
    return pa.Table.from_arrays([pa.array(ids), p, pa.array(v), _strings(rng, len(ids))], schema=SCHEMA)


def make_data(n: int, root: str) -> dict[str, Any]:
    """Write ``data.parquet``, ``source.parquet`` and ``spec.json`` under ``root``; the spec
    (predicates' bounds, expected results per operation)."""
    rng = np.random.default_rng(20261126)
    ids = np.arange(n, dtype=np.int64)
    v = rng.permutation(n).astype(np.int64)
    m = max(2, n // 100)
    matched = np.sort(rng.choice(n, m // 2, replace=False)).astype(np.int64)
    new = np.arange(n, n + m - m // 2, dtype=np.int64)
    src_ids = np.concatenate([matched, new])
    src_v = rng.integers(0, n, len(src_ids)).astype(np.int64)
    pq.write_table(_rows(ids, v, rng), os.path.join(root, "data.parquet"))
    pq.write_table(_rows(src_ids, src_v, rng), os.path.join(root, "source.parquet"))

    total = int(v.sum())
    delete_below, update_below, part_below = max(1, n // 1000), max(1, n // 100), max(1, n // 100)
    gone = v < delete_below
    upd = v < update_below
    part = (ids % 10 == int(PARTITION)) & (v < part_below)
    spec = {
        "rows": n, "delete_below": delete_below, "update_below": update_below,
        "partition": PARTITION, "partition_below": part_below, "source_rows": len(src_ids),
        "expected": {
            "delete": {"changed": int(gone.sum()), "rows": n - int(gone.sum()), "sum_v": total - int(v[gone].sum())},
            "update": {"changed": int(upd.sum()), "rows": n, "sum_v": total + int(v[upd].sum())},
            "merge": {"changed": [len(new), len(matched), 0], "rows": n + len(new),
                      "sum_v": total - int(v[matched].sum()) + int(src_v.sum())},
            "delete-1p": {"changed": int(part.sum()), "rows": n - int(part.sum()),
                          "sum_v": total - int(v[part].sum())},
        },
    }
    with open(os.path.join(root, "spec.json"), "w") as f:
        json.dump(spec, f)
    return spec


def load_inputs(root: str) -> tuple[dict[str, Any], pa.Table, pa.Table]:
    with open(os.path.join(root, "spec.json")) as f:
        spec = json.load(f)
    return spec, pq.read_table(os.path.join(root, "data.parquet")), pq.read_table(os.path.join(root, "source.parquet"))


# ---------------------------------------------------------------------------- shared


def file_change(before: list[str], after: list[str], partition: str) -> dict[str, Any]:
    """How the data files (paths relative to the table) changed; ``outside_unchanged``:
    the files outside ``p=partition`` are the same before and after."""
    b, a = set(before), set(after)

    def outside(names: set[str]) -> set[str]:
        return {x for x in names if x.split("/", 1)[0] != f"p={partition}"}

    return {"files_before": len(b), "files_after": len(a), "removed": len(b - a), "added": len(a - b),
            "outside_unchanged": outside(b) == outside(a), "outside_files": len(outside(b)),
            "removed_outside": len(outside(b) - outside(a)), "added_outside": len(outside(a) - outside(b))}


def check(op: str, spec: dict[str, Any], changed: Any, result: pa.Table) -> dict[str, Any]:
    """The operation's return and the table after it against the expected values."""
    exp = spec["expected"][op]
    rows, sum_v = result.num_rows, pc.sum(result.column("v")).as_py()
    ok = changed == exp["changed"] and rows == exp["rows"] and sum_v == exp["sum_v"]
    return {"changed": changed, "rows": rows, "sum_v": sum_v, "ok": ok}


def measure(op: str, spec: dict[str, Any], call: Callable[[], Any], changed_of: Callable[[Any], Any],
            files_of: Callable[[], list[str]], read_v: Callable[[], pa.Table]) -> dict[str, Any]:
    """Time ``call`` alone; then check its result and the files it replaced (the read of
    column v after the change is timed apart: what the change costs later reads)."""
    before = files_of()
    out, t = common.timed(call)
    rec = t.record()
    after, read = common.timed(read_v)
    rec["read_after_s"] = read.wall
    rec.update(check(op, spec, changed_of(out), after))
    rec.update(file_change(before, files_of(), spec["partition"]))
    return rec


def fresh_copy(template: str, name: str) -> str:
    """A copy of the table directory ``template`` at a new path (a new path every time, so
    no cache keyed by path carries over)."""
    path = os.path.join(common.scratch(name), "t")
    shutil.copytree(template, path)
    return path


# ---------------------------------------------------------------------------- ours


def ours_build(kind: str, data: pa.Table, path: str) -> dict[str, Any]:
    import minipaimon_core as mp

    pk = ["p", "id"] if kind == "pk" else None
    options = {"bucket": "4"} if kind == "pk" else ({"deletion-vectors.enabled": "true"} if kind == "append-dv" else {})
    t = mp.create_table(path, data.schema, primary_key=pk, partition_by=["p"], options=options)
    _, w = common.timed(lambda: t.write(data))
    return {"write_s": w.wall, "files": mp.open_table(path).system_table("files").num_rows}


def ours_call(t: Any, op: str, spec: dict[str, Any], source: pa.Table) -> Callable[[], Any]:
    if op == "delete":
        return functools.partial(t.delete, [("v", "<", spec["delete_below"])])
    if op == "update":
        return functools.partial(t.update, [("v", "<", spec["update_below"])], set={"v": pc.field("v") * 2})
    if op == "merge":
        return lambda: t.merge(source, on=["id"]).when_matched_update_all().when_not_matched_insert_all().execute()
    return functools.partial(t.delete, [("p", "=", spec["partition"]), ("v", "<", spec["partition_below"])])


def _ours_changed(out: Any) -> Any:
    return [out.inserted, out.updated, out.deleted] if hasattr(out, "inserted") else out


def ours_run(op: str, kind: str, template: str, name: str, spec: dict[str, Any], source: pa.Table) -> dict[str, Any]:
    import minipaimon_core as mp

    path = fresh_copy(template, name)
    t = mp.open_table(path)

    def files() -> list[str]:
        names = mp.open_table(path).system_table("files").column("file_path").to_pylist()
        return [os.path.relpath(x, path) for x in names]

    rec = measure(op, spec, ours_call(t, op, spec, source), _ours_changed, files,
                  lambda: mp.open_table(path).scan(columns=["v"]).to_arrow())
    shutil.rmtree(os.path.dirname(path), ignore_errors=True)
    return rec


# ---------------------------------------------------------------------------- deltalake (child)


def delta_call(dt: Any, op: str, spec: dict[str, Any], source: pa.Table) -> Callable[[], Any]:
    if op == "delete":
        return functools.partial(dt.delete, f"v < {spec['delete_below']}")
    if op == "update":
        return functools.partial(dt.update, updates={"v": "v * 2"}, predicate=f"v < {spec['update_below']}")
    if op == "merge":
        return lambda: (dt.merge(source, predicate="t.id = s.id", source_alias="s", target_alias="t")
                        .when_matched_update_all().when_not_matched_insert_all().execute())
    return functools.partial(dt.delete, f"p = '{spec['partition']}' AND v < {spec['partition_below']}")


def _delta_changed(op: str, metrics: dict[str, Any]) -> Any:
    if op == "update":
        return metrics["num_updated_rows"]
    if op == "merge":
        return [metrics["num_target_rows_inserted"], metrics["num_target_rows_updated"],
                metrics["num_target_rows_deleted"]]
    return metrics["num_deleted_rows"]


def delta_run(op: str, template: str, name: str, spec: dict[str, Any], source: pa.Table) -> dict[str, Any]:
    from deltalake import DeltaTable

    path = fresh_copy(template, name)
    dt = DeltaTable(path)

    def files() -> list[str]:
        return [os.path.relpath(u.removeprefix("file://"), path) for u in DeltaTable(path).file_uris()]

    rec = measure(op, spec, delta_call(dt, op, spec, source), functools.partial(_delta_changed, op), files,
                  lambda: DeltaTable(path).to_pyarrow_table(columns=["v"]))
    shutil.rmtree(os.path.dirname(path), ignore_errors=True)
    return rec


def delta_child(root: str, rep: int) -> None:
    """One repetition of every operation on deltalake (in the peers' interpreter); prints
    one JSON line. Builds the template table on first use (its write time is reported)."""
    import deltalake
    from deltalake import write_deltalake

    spec, data, source = load_inputs(root)
    template = os.path.join(root, "delta-template")
    out: dict[str, Any] = {"version": deltalake.__version__, "runs": {}}
    if not os.path.exists(template):
        _, w = common.timed(lambda: write_deltalake(template, data, partition_by=["p"]))
        out["build"] = {"write_s": w.wall, "files": len(deltalake.DeltaTable(template).file_uris())}
    warm = os.path.join(root, "delta-warm")
    if not os.path.exists(warm):
        write_deltalake(warm, data.slice(0, WARM_ROWS), partition_by=["p"])
    for op in OPS:  # untimed: imports and first calls out of the figures
        path = fresh_copy(warm, f"dml/delta-warm-{op}")
        delta_call(deltalake.DeltaTable(path), op, spec, source)()
        shutil.rmtree(os.path.dirname(path), ignore_errors=True)
    for op in OPS:
        out["runs"][op] = delta_run(op, template, f"dml/delta-{op}-{rep}", spec, source)
    print(json.dumps(out, default=str))


def run_delta(root: str, rep: int) -> dict[str, Any] | None:
    """The deltalake child for repetition ``rep``; None (reported) if it cannot run."""
    if not os.path.exists(common.PEER_PY):
        print(f"  [skip] deltalake: {common.PEER_PY} missing (python3 -m venv .bench-venv && "
              ".bench-venv/bin/pip install deltalake pyarrow numpy)", file=sys.stderr)
        return None
    cmd = [common.PEER_PY, os.path.abspath(__file__), "--delta-child", root, "--rep", str(rep)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    except subprocess.TimeoutExpired:
        print("  [fail] deltalake child timed out", file=sys.stderr)
        return None
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        print(f"  [fail] deltalake child: rc={proc.returncode} {' | '.join(tail)}", file=sys.stderr)
        return None
    out: dict[str, Any] = json.loads(lines[-1])
    return out


# ---------------------------------------------------------------------------- main


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--no-delta", action="store_true", help="skip the deltalake peer")
    ap.add_argument("--delta-child", metavar="DIR", help=argparse.SUPPRESS)
    ap.add_argument("--rep", type=int, default=0, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.delta_child:
        delta_child(a.delta_child, a.rep)
        return

    env = common.environment()
    root = common.scratch("dml")
    print(f"data: {a.rows:,} rows ...", file=sys.stderr)
    spec = make_data(a.rows, root)
    _, data, source = load_inputs(root)
    build: dict[str, Any] = {}
    templates = {}
    for kind in KINDS:
        print(f"minipaimon {kind} table: write ...", file=sys.stderr)
        templates[kind] = os.path.join(root, f"mp-{kind}-template")
        build[f"minipaimon-{kind}"] = ours_build(kind, data, templates[kind])
        warm = os.path.join(root, f"mp-{kind}-warm")
        ours_build(kind, data.slice(0, WARM_ROWS), warm)
        for op in OPS:  # untimed: imports and first calls out of the figures
            ours_run(op, kind, warm, f"dml/mp-warm-{kind}-{op}", spec, source)
    del data

    runs: dict[str, dict[str, list[dict[str, Any]]]] = {}
    delta_version = None
    for rep in range(a.reps):
        for op in OPS:
            for kind in KINDS:
                print(f"run {rep + 1}: minipaimon {kind} {op} ...", file=sys.stderr)
                rec = ours_run(op, kind, templates[kind], f"dml/mp-{kind}-{op}-{rep}", spec, source)
                runs.setdefault(f"minipaimon-{kind}", {}).setdefault(op, []).append(rec)
        if not a.no_delta:
            print(f"run {rep + 1}: deltalake ...", file=sys.stderr)
            r = run_delta(root, rep)
            if r is not None:
                delta_version = r["version"]
                if "build" in r:
                    build["deltalake"] = r["build"]
                for op, rec in r["runs"].items():
                    runs.setdefault("deltalake", {}).setdefault(op, []).append(rec)

    med = {engine: {op: {"s": common.median(r["s"] for r in rs), "cpu_s": common.median(r["cpu_s"] for r in rs),
                         "n": len(rs)} for op, rs in by_op.items()} for engine, by_op in runs.items()}
    delta = med.get("deltalake", {})
    rows: list[list[Any]] = []
    verdicts = []
    for op in OPS:
        for kind in KINDS:
            ours = med[f"minipaimon-{kind}"][op]
            ref = delta.get(op)
            ratio = ours["s"] / ref["s"] if ref else None
            cpu_ratio = ours["cpu_s"] / ref["cpu_s"] if ref and ref["cpu_s"] else None
            target = TARGETS[op]
            v = common.verdict(ratio, target) if target is not None else "(reported)"
            loads = [r["load1"] for r in runs[f"minipaimon-{kind}"][op]]
            rows.append([op, kind, ours["s"], ref["s"] if ref else None, ratio,
                         f"<= {target}" if target is not None else "-", v, cpu_ratio, loads])
            verdicts.append({"op": op, "kind": kind, "ours_s": ours["s"], "deltalake_s": ref["s"] if ref else None,
                             "ratio": ratio, "cpu_ratio": cpu_ratio, "target": target, "verdict": v, "load1": loads})

    all_ok = {engine: all(r["ok"] for rs in by_op.values() for r in rs) for engine, by_op in runs.items()}
    one_partition = {engine: all(r["outside_unchanged"] for r in by_op["delete-1p"])
                     for engine, by_op in runs.items()}
    files = {engine: {op: {k: rs[0][k] for k in ("files_before", "removed", "added", "removed_outside")}
                      for op, rs in by_op.items()} for engine, by_op in runs.items()}

    n, s = spec["rows"], spec["source_rows"]
    print(f"\nrow-level changes on a {n:,}-row table (10 partitions): delete {spec['expected']['delete']['changed']:,}, "
          f"update {spec['expected']['update']['changed']:,}, merge {s:,} source rows (half matched), "
          f"delete-1p {spec['expected']['delete-1p']['changed']:,} in p={PARTITION}; medians of {a.reps}, seconds"
          + (f"; deltalake {delta_version}" if delta_version else "; deltalake not run"))
    common.print_table(["op", "table", "minipaimon s", "deltalake s", "ratio", "target", "verdict", "cpu ratio",
                        "load1 (ours)"], rows)
    print(f"\nfiles (first run), per engine and op: before/-removed/+added/-removed outside p={PARTITION}")
    for engine, by_op in files.items():
        print(f"  {engine:20s} " + "; ".join(
            f"{op} {f['files_before']}/-{f['removed']}/+{f['added']}/-{f['removed_outside']}" for op, f in by_op.items()))
    reads = {engine: {op: statistics.median(r["read_after_s"] for r in rs) for op, rs in by_op.items()}
             for engine, by_op in runs.items()}
    print("read of column v after the change (median s), per engine and op")
    for engine, by_op in reads.items():
        print(f"  {engine:20s} " + "; ".join(f"{op} {x:.3g}" for op, x in by_op.items()))
    print("build (untimed for the figures): " + ", ".join(
        f"{e} write {b['write_s']:.3g} s, {b['files']} files" for e, b in build.items()))
    print(f"results correct (changed rows, row count, sum(v)) in every run: {all_ok}")
    print(f"delete in one partition left every file outside it untouched: {one_partition}")
    path = common.write_results("dml", {
        "env": env, "rows": n, "reps": a.reps, "spec": spec, "deltalake_version": delta_version,
        "verdicts": verdicts, "medians": med, "correct": all_ok, "one_partition_untouched_outside": one_partition,
        "files": files, "reads_after": reads, "build": build, "runs": runs})
    print(f"results: {path}")


if __name__ == "__main__":
    main()
