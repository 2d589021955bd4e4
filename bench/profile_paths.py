"""cProfile of minipaimon's hot paths on the benchmark data (for finding what to speed up).

Paths: ``append-write``, ``append-read`` (1M rows, as bench_append), ``pk-write``,
``pk-upsert``, ``pk-read`` (as bench_pk, ``--buckets``), ``commit`` (commits 901-1000 of
bench_commits, the commit call only). Prints the top functions by own time and by
cumulative time; ``--out DIR`` also saves ``<path>.prof`` for snakeviz / pstats.

usage: python bench/profile_paths.py [pk-write pk-upsert ...] [--buckets 1] [--top 15] [--out DIR]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import sys
from collections.abc import Callable

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
from bench_append import SCHEMA as APPEND_SCHEMA  # noqa: E402
from bench_append import make_data  # noqa: E402

import minipaimon_core as mp  # noqa: E402

PATHS = ("append-write", "append-read", "pk-write", "pk-upsert", "pk-read", "commit")


def setups(buckets: int, tag: str) -> dict[str, Callable[[], Callable[[], object]]]:
    """Each path: a setup (untimed) returning the function to profile; tables under
    scratch directories named with ``tag``."""
    data = common.reference_data()

    def append_write() -> Callable[[], object]:
        d = make_data(1_000_000)
        t = mp.create_table(os.path.join(common.scratch(f"prof-aw-{tag}"), "t"), APPEND_SCHEMA)
        return lambda: t.write(d)

    def append_read() -> Callable[[], object]:
        path = os.path.join(common.scratch(f"prof-ar-{tag}"), "t")
        mp.create_table(path, APPEND_SCHEMA).write(make_data(1_000_000))
        return lambda: mp.open_table(path).scan().to_arrow()

    def pk_table() -> tuple[str, mp.Table]:
        path = os.path.join(common.scratch(f"prof-pk-b{buckets}-{tag}"), "t")
        return path, mp.create_table(path, data.SCHEMA, primary_key=["id"], options={"bucket": str(buckets)})

    def pk_write() -> Callable[[], object]:
        _, t = pk_table()
        base = data.base_table()
        return lambda: t.write(base)

    def pk_upsert() -> Callable[[], object]:
        _, t = pk_table()
        t.write(data.base_table())
        upserts = data.upsert_table()[0]
        return lambda: t.write(upserts)

    def pk_read() -> Callable[[], object]:
        path, t = pk_table()
        t.write(data.base_table())
        t.write(data.upsert_table()[0])
        return lambda: mp.open_table(path).scan().to_arrow()

    def commit() -> Callable[[], object]:
        t = mp.create_table(os.path.join(common.scratch(f"prof-commit-{tag}"), "t"), data.SCHEMA)
        for i in range(900):
            t.write(data.base_table(1000, start=i * 1000))
        batches = [data.base_table(1000, start=(900 + i) * 1000) for i in range(100)]
        msgs = []
        for b in batches:
            w = t.new_write("prof")
            w.write(b)
            msgs.append(w.prepare_commit())

        def run() -> None:
            for i, m in enumerate(msgs):
                t.new_commit("prof").commit(m, commit_identifier=i)
        return run

    return {"append-write": append_write, "append-read": append_read, "pk-write": pk_write,
            "pk-upsert": pk_upsert, "pk-read": pk_read, "commit": commit}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("paths", nargs="*", default=list(PATHS), choices=[[], *PATHS])
    ap.add_argument("--buckets", type=int, default=1)
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--out")
    a = ap.parse_args()
    for name in a.paths:
        setups(a.buckets, "warm")[name]()()  # a first run on its own table, untimed (imports, caches)
        fn = setups(a.buckets, "prof")[name]()
        prof = cProfile.Profile()
        with common.Timer() as t:
            prof.runcall(fn)
        print(f"\n=== {name} (buckets={a.buckets}): {t.wall:.3f} s wall, load1 {t.load1}")
        for key in ("tottime", "cumulative"):
            s = io.StringIO()
            pstats.Stats(prof, stream=s).strip_dirs().sort_stats(key).print_stats(a.top)
            lines = s.getvalue().splitlines()
            start = next(i for i, ln in enumerate(lines) if ln.strip().startswith("ncalls"))
            print(f"-- by {key}")
            print("\n".join(lines[start:start + a.top + 1]))
        if a.out:
            os.makedirs(a.out, exist_ok=True)
            prof.dump_stats(os.path.join(a.out, f"{name}.prof"))


if __name__ == "__main__":
    main()
