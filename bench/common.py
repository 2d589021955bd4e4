"""Shared helpers of the minipaimon benchmarks: timing, load, peers, results.

Every benchmark runs minipaimon and its reference (plain pyarrow, or a peer library run by
the reference scripts in ``$MINIPAIMON_REF_BENCH``) side by side in the same run, takes
the median of repeated measurements, and records the machine load next to each figure
(the box is shared; ``os.getloadavg`` and the CPU other processes used during the phase).

Environment:
    MINIPAIMON_REF_BENCH   reference scripts (default ../shared/reference-bench from the
                           project root)
    MINIPAIMON_BENCH_PY    interpreter with the peers installed (default .bench-venv/bin/python
                           under the project root; bench/README.md creates it)
    MINIPAIMON_BENCH_DIR   scratch directory for tables (default <tmp>/minipaimon-bench)
    MINIPAIMON_BENCH_TAG   results go to results/<name>-<tag>.json (keeps a quick or partial
                           run from overwriting the full results)
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RESULTS_DIR = os.path.join(HERE, "results")
REF_DIR = os.environ.get("MINIPAIMON_REF_BENCH",
                         os.path.join(os.path.dirname(ROOT), "shared", "reference-bench"))
PEER_PY = os.environ.get("MINIPAIMON_BENCH_PY", os.path.join(ROOT, ".bench-venv", "bin", "python"))
WORK_DIR = os.environ.get("MINIPAIMON_BENCH_DIR",
                          os.path.join(tempfile.gettempdir(), "minipaimon-bench"))


def reference_data() -> Any:
    """The reference scripts' ``bench_common`` module (data definition and checks).

    Imported at run time from ``REF_DIR`` so that every peer and we load the same rows.
    """
    if REF_DIR not in sys.path:
        sys.path.insert(0, REF_DIR)
    import bench_common  # type: ignore[import-not-found]

    return bench_common


def scratch(name: str) -> str:
    """An empty scratch directory ``WORK_DIR/name`` (removed first if present)."""
    path = os.path.join(WORK_DIR, name)
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


# ---------------------------------------------------------------------------- timing


def _busy_ticks() -> tuple[int, int]:
    with open("/proc/stat") as f:
        vals = list(map(int, f.readline().split()[1:9]))
    return sum(vals) - vals[3] - vals[4], sum(vals)


class Timer:
    """Wall and CPU time of a block, plus the machine's load while it ran.

    ``others`` is the share of the machine's CPU that *other* processes used during the
    block (0..1); ``load1`` is the 1-minute load average at its end.
    """

    wall: float
    cpu: float
    others: float
    load1: float

    def __enter__(self) -> Timer:
        self._busy0, _ = _busy_ticks()
        self._cpu0 = time.process_time()
        self._wall0 = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self._wall0
        self.cpu = time.process_time() - self._cpu0
        busy = (_busy_ticks()[0] - self._busy0) / os.sysconf("SC_CLK_TCK")
        ncpu = os.cpu_count() or 1
        self.others = max(0.0, busy - self.cpu) / (self.wall * ncpu) if self.wall > 0 else 0.0
        self.load1 = os.getloadavg()[0]

    def record(self) -> dict[str, float]:
        return {"s": self.wall, "cpu_s": self.cpu, "others": round(self.others, 3),
                "load1": round(self.load1, 2)}


def timed(fn: Callable[[], Any]) -> tuple[Any, Timer]:
    with Timer() as t:
        out = fn()
    return out, t


def median(xs: Iterable[float]) -> float:
    return float(statistics.median(list(xs)))


def summarize(records: Sequence[dict[str, float]]) -> dict[str, Any]:
    """Median wall time of repeated measurements, with every repetition and its load."""
    return {"median_s": median(r["s"] for r in records), "runs": list(records)}


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


# ---------------------------------------------------------------------------- peers


def run_reference(script: str, args: Sequence[str], cwd: str, timeout: float = 900) -> dict[str, Any] | None:
    """Run ``REF_DIR/script args`` with the peers' interpreter in ``cwd``; its JSON result.

    The reference scripts print one JSON object as their last stdout line. Returns None
    (and prints why) when the interpreter or script is missing or the run failed, so a
    peer that did not install never stops our own benchmark.
    """
    path = os.path.join(REF_DIR, script)
    if not (os.path.exists(PEER_PY) and os.path.exists(path)):
        print(f"  [skip] {script}: {PEER_PY} or {path} missing", file=sys.stderr)
        return None
    os.makedirs(cwd, exist_ok=True)
    load_before = load()
    # through ref_shim.py: the script runs unchanged, but pypaimon gets an absolute warehouse
    cmd = [PEER_PY, os.path.join(HERE, "ref_shim.py"), path, *args]
    try:
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        print(f"  [fail] {script} {' '.join(args)}: timed out after {timeout:.0f} s", file=sys.stderr)
        return None
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    fallbacks = [ln for ln in proc.stdout.splitlines() + proc.stderr.splitlines() if "falling back" in ln]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        print(f"  [fail] {script} {' '.join(args)}: rc={proc.returncode} {' | '.join(tail)}", file=sys.stderr)
        return None
    out: dict[str, Any] = json.loads(lines[-1])
    out["load_before"] = load_before
    out["load_after"] = load()
    out["fallback_warnings"] = fallbacks[:4]
    return out


def peer_installed(module: str) -> bool:
    """Whether ``module`` imports in the peers' interpreter."""
    if not os.path.exists(PEER_PY):
        return False
    proc = subprocess.run([PEER_PY, "-c", f"import {module}"], capture_output=True)
    return proc.returncode == 0


# ---------------------------------------------------------------------------- output


def environment() -> dict[str, Any]:
    import pyarrow

    return {
        "python": platform.python_version(),
        "pyarrow": pyarrow.__version__,
        "cpus": os.cpu_count(),
        "load_at_start": load(),
        "time": time.strftime("%Y-%m-%d %H:%M:%S"),
    }


def results_path(name: str) -> str:
    """``bench/results/<name>.json``, or ``<name>-<tag>.json`` with MINIPAIMON_BENCH_TAG."""
    tag = os.environ.get("MINIPAIMON_BENCH_TAG")
    return os.path.join(RESULTS_DIR, f"{name}-{tag}.json" if tag else f"{name}.json")


def write_results(name: str, results: dict[str, Any]) -> str:
    """Write ``results`` to :func:`results_path`; return the path."""
    os.makedirs(RESULTS_DIR, exist_ok=True)
    path = results_path(name)
    with open(path, "w") as f:
        json.dump(results, f, indent=1, default=str)
        f.write("\n")
    return path


def verdict(ratio: float | None, target: float, higher_is_better: bool = False) -> str:
    if ratio is None:
        return "n/a"
    ok = ratio >= target if higher_is_better else ratio <= target
    return "met" if ok else "NOT met"


def print_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """Print a small aligned table (floats to 3 significant places)."""

    def fmt(x: Any) -> str:
        if isinstance(x, float):
            return f"{x:.3g}" if abs(x) < 1000 else f"{x:.0f}"
        return "" if x is None else str(x)

    cells = [[fmt(x) for x in r] for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)]
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths)))
    print("  ".join("-" * w for w in widths))
    for r in cells:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)))
