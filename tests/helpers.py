"""Small shared helpers for the core tests."""

from __future__ import annotations

import pyarrow as pa

SCHEMA = pa.schema([
    pa.field("id", pa.int64(), nullable=False),
    pa.field("k", pa.string()),
    pa.field("v", pa.float64()),
    pa.field("dt", pa.string()),
])


def rows(start: int, n: int, dt: str = "d1") -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "k": [f"k{i}" for i in ids],
        "v": [i * 0.5 for i in ids],
        "dt": [dt] * n,
    }, schema=SCHEMA)


def sorted_ids(t: pa.Table) -> list[int]:
    return sorted(t.column("id").to_pylist())
