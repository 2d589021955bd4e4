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


def key_places(t: object) -> dict[tuple, tuple[tuple, int]]:
    """Primary key -> (partition, bucket) of each live row of a primary-key table; fails if
    a key is read from two places."""
    import minipaimon_core as mp

    assert isinstance(t, mp.Table)
    keys = t.table_schema.primaryKeys
    out: dict[tuple, tuple[tuple, int]] = {}
    for split in t.scan().plan():
        for batch in t.read_split(split):
            for r in batch.to_pylist():
                key = tuple(r[k] for k in keys)
                where = (tuple(split.partition), split.bucket)
                assert key not in out, f"key {key} read from {out[key]} and {where}"
                out[key] = where
    return out


def check_hash_index(t: object) -> None:
    """A HASH_DYNAMIC table's index is right: every live row's key hash is in the HASH index
    file of its (partition, bucket), and no hash of a partition is in two buckets' files."""
    from collections import Counter

    import minipaimon_core as mp
    from minipaimon_core.dynamic.hash_index import HashIndexIO
    from minipaimon_core.schema.bucket import key_hashes

    assert isinstance(t, mp.Table)
    ctx = t.context()
    io = HashIndexIO(ctx.io, ctx.layout, ctx.vectors)
    index = {k: set(io.read(e).tolist()) for k, e in io.entries(ctx.snapshots.latest()).items()}
    keys = t.table_schema.primaryKeys
    places = key_places(t)
    if places:
        columns = list(zip(*places))
        arrow = t.schema()
        hashes = key_hashes(pa.table({k: pa.array(c, arrow.field(k).type) for k, c in zip(keys, columns)}),
                            t.table_schema)
        for h, where in zip(hashes.tolist(), places.values()):
            assert h in index.get(where, set()), f"hash {h} missing from the index of {where}"
    per_partition: dict[tuple, Counter] = {}
    for (partition, _), hashes_ in index.items():
        per_partition.setdefault(partition, Counter()).update(hashes_)
    for partition, counts in per_partition.items():
        assert max(counts.values()) == 1, f"a hash in two buckets of partition {partition}"
