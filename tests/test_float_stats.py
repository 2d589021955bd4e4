"""The stats of float columns, of a whole file and of each run of a write, against plain
Python: nulls left out, no min / max where NaN is present, and a zero bound signed as
Parquet's statistics (and Java's ``Double.compare``) order it: -0.0 as a min, +0.0 as a max."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from minipaimon_core.expressions.stats import column_stats, grouped_stats


def _oracle(values: list[Any]) -> tuple[Any, Any, int]:
    present = [v for v in values if v is not None]
    nulls = len(values) - len(present)
    if not present or any(math.isnan(v) for v in present):
        return None, None, nulls
    lo, hi = min(present), max(present)
    return (-0.0 if lo == 0 else lo), (0.0 if hi == 0 else hi), nulls


def _signed(stats: tuple[Any, Any, int]) -> tuple[Any, ...]:
    """``stats`` with each float's sign, so -0.0 and 0.0 differ."""
    return tuple((v, math.copysign(1.0, v)) if isinstance(v, float) else v for v in stats)


def _column(rng: np.random.Generator, rows: int, dtype: Any) -> pa.ChunkedArray:
    pool = np.array([0.0, -0.0, 1.5, -2.25, np.inf, -np.inf, np.nan, 3e30, -1e-30])
    kind = rng.integers(0, 4)
    if kind == 0:  # zeros of both signs and a few others
        values = rng.choice(pool[:4], rows)
    elif kind == 1:  # now and then NaN or an infinity
        values = np.where(rng.random(rows) < 0.02, rng.choice(pool[4:7], rows), rng.normal(size=rows))
    else:
        values = rng.choice(pool, rows) if kind == 2 else rng.normal(size=rows)
    mask = rng.random(rows) < rng.choice([0.0, 0.3, 1.0])
    array = pa.array(values.astype(dtype), mask=mask)
    cut = int(rng.integers(0, rows + 1))
    return pa.chunked_array([array.slice(0, cut), array.slice(cut)], type=array.type)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_stats_of_a_column_and_of_each_run_are_pythons(dtype: Any) -> None:
    rng = np.random.default_rng(7)
    for _ in range(200):
        rows = int(rng.integers(1, 60))
        column = _column(rng, rows, dtype)
        values = column.to_pylist()
        assert _signed(column_stats(column)) == _signed(_oracle(values)), values
        assert _signed(column_stats(column.combine_chunks())) == _signed(_oracle(values)), values
        cuts = sorted(set(rng.integers(1, rows, int(rng.integers(0, 5))).tolist())) if rows > 1 else []
        bounds = [0, *cuts, rows]
        runs = grouped_stats(pa.table({"f": column}), ["f"], bounds)
        assert runs is not None
        for (a, b), s in zip(zip(bounds[:-1], bounds[1:]), runs):
            got = (s.minValues[0], s.maxValues[0], s.nullCounts[0])
            assert _signed(got) == _signed(_oracle(values[a:b])), (values[a:b], got)
